"""Hypothesis strategies for the logical type model and its Python values
(keyguard.formats.types)."""

from __future__ import annotations

import datetime as dt
from decimal import Context, Decimal
from typing import Any

from hypothesis import strategies as st

from keyguard.formats.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    Field,
    FloatType,
    IntegralType,
    IntType,
    MapType,
    RowType,
    SmallIntType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
    TinyIntType,
)

names = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="`"),
    min_size=1,
    max_size=8,
)
nullable = st.booleans()


def _decimal(precision: int, scale: int, nullable: bool) -> DecimalType:
    return DecimalType(precision=precision, scale=scale, nullable=nullable)


atomic_types: st.SearchStrategy[DataType] = st.one_of(
    st.builds(StringType, nullable=nullable),
    st.builds(BooleanType, nullable=nullable),
    st.builds(TinyIntType, nullable=nullable),
    st.builds(SmallIntType, nullable=nullable),
    st.builds(IntType, nullable=nullable),
    st.builds(BigIntType, nullable=nullable),
    st.builds(FloatType, nullable=nullable),
    st.builds(DoubleType, nullable=nullable),
    st.integers(1, 38).flatmap(
        lambda p: st.builds(_decimal, st.just(p), st.integers(0, p), nullable)
    ),
    st.builds(DateType, nullable=nullable),
    st.builds(TimeType, precision=st.integers(0, 9), nullable=nullable),
    st.builds(TimestampType, precision=st.integers(0, 9), nullable=nullable),
    st.builds(TimestampLtzType, precision=st.integers(0, 9), nullable=nullable),
    st.builds(BytesType, nullable=nullable),
)


@st.composite
def data_types(
    draw: st.DrawFn, depth: int = 3, atomic: st.SearchStrategy[DataType] = atomic_types
) -> DataType:
    """Any type of the model, nested up to `depth` levels (map keys: any type)."""
    kind = draw(st.sampled_from(["atomic", "array", "map", "row"])) if depth else "atomic"
    if kind == "array":
        element = draw(data_types(depth - 1, atomic))
        return ArrayType(element=element, nullable=draw(nullable))
    if kind == "map":
        key, value = draw(data_types(depth - 1, atomic)), draw(data_types(depth - 1, atomic))
        return MapType(key=key, value=value, nullable=draw(nullable))
    if kind == "row":
        return draw(row_types(depth - 1, atomic))
    return draw(atomic)


@st.composite
def row_types(
    draw: st.DrawFn, depth: int = 2, atomic: st.SearchStrategy[DataType] = atomic_types
) -> RowType:
    fields = draw(
        st.lists(st.tuples(names, data_types(depth, atomic)), max_size=4, unique_by=lambda f: f[0])
    )
    return RowType(fields=tuple(Field(n, t) for n, t in fields), nullable=draw(nullable))


@st.composite
def value_types(draw: st.DrawFn, depth: int = 3) -> DataType:
    """Types whose values fit every format's Python contract: map keys atomic and NOT NULL."""
    kind = draw(st.sampled_from(["atomic", "array", "map", "row"])) if depth else "atomic"
    if kind == "array":
        return ArrayType(element=draw(value_types(depth - 1)), nullable=draw(nullable))
    if kind == "map":
        key = draw(atomic_types).not_null()
        return MapType(key=key, value=draw(value_types(depth - 1)), nullable=draw(nullable))
    if kind == "row":
        fields = draw(
            st.lists(st.tuples(names, value_types(depth - 1)), max_size=4, unique_by=lambda f: f[0])
        )
        return RowType(fields=tuple(Field(n, t) for n, t in fields), nullable=draw(nullable))
    return draw(atomic_types)


def values(t: DataType) -> st.SearchStrategy[Any]:
    """Python values of `t` (None included when nullable); NaN excluded so rows compare equal."""
    v = _non_null_values(t)
    return st.one_of(st.none(), v) if t.nullable else v


def _non_null_values(t: DataType) -> st.SearchStrategy[Any]:
    if isinstance(t, StringType):
        return st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=10)
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, IntegralType):
        return st.integers(t.min_value, t.max_value)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, DecimalType):
        bound, scale = 10**t.precision - 1, t.scale
        # scaleb rounds to the context's precision (28 digits by default): give it room.
        exact = Context(prec=80)
        return st.integers(-bound, bound).map(lambda i: Decimal(i).scaleb(-scale, exact))
    if isinstance(t, DateType):
        return st.dates()
    if isinstance(t, TimeType):
        return st.times()
    if isinstance(t, TimestampLtzType):
        zones = st.sampled_from(
            [dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone.min]
        )
        return st.datetimes(
            min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=zones
        )
    if isinstance(t, TimestampType):
        return st.datetimes()
    if isinstance(t, BytesType):
        return st.binary(max_size=10)
    if isinstance(t, ArrayType):
        return st.lists(values(t.element), max_size=3)
    if isinstance(t, MapType):
        return st.dictionaries(_non_null_values(t.key), values(t.value), max_size=3)
    if isinstance(t, RowType):
        return st.fixed_dictionaries({f.name: values(f.type) for f in t.fields})
    raise AssertionError(f"no values for {t}")


@st.composite
def rows_of(draw: st.DrawFn, max_rows: int = 5) -> tuple[RowType, list[dict[str, Any]]]:
    """A table row type and a few rows of it."""
    fields = draw(
        st.lists(st.tuples(names, value_types(2)), min_size=1, max_size=5, unique_by=lambda f: f[0])
    )
    row = RowType(fields=tuple(Field(n, t) for n, t in fields), nullable=False)
    rows = draw(st.lists(values(row), max_size=max_rows))
    return row, rows
