"""Arrow schemas <-> the logical type model, and rows <-> record batches.

Spark hands its Python data sources Arrow record batches, and vectorized encoders work on them,
so the model needs one Arrow spelling. Times and timestamps are microseconds (what Python values
and Spark carry), whatever the SQL precision; TIMESTAMP_LTZ is `timestamp('us', tz='UTC')`.
Arrow map keys are never null, so maps read from Arrow have NOT NULL keys.

pyarrow is imported lazily: importing this module never needs it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from keyguard.formats.errors import EncodeError, SchemaError, UnsupportedTypeError
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
    IntType,
    MapType,
    RowType,
    SmallIntType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
    TinyIntType,
    walk,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "batch_to_rows",
    "from_arrow_schema",
    "from_arrow_type",
    "rows_to_batch",
    "to_arrow_field",
    "to_arrow_schema",
    "to_arrow_type",
]

_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


# --- model -> Arrow ---------------------------------------------------------------------------


def to_arrow_schema(row: RowType) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([to_arrow_field(f.name, f.type) for f in row.fields])


def to_arrow_field(name: str, t: DataType) -> pa.Field:
    import pyarrow as pa

    return pa.field(name, to_arrow_type(t), nullable=t.nullable)


def to_arrow_type(t: DataType) -> pa.DataType:
    """One model type in Arrow (nullability goes to the enclosing field)."""
    import pyarrow as pa

    simple: dict[type[DataType], Callable[[], pa.DataType]] = {
        StringType: pa.string,
        BooleanType: pa.bool_,
        TinyIntType: pa.int8,
        SmallIntType: pa.int16,
        IntType: pa.int32,
        BigIntType: pa.int64,
        FloatType: pa.float32,
        DoubleType: pa.float64,
        DateType: pa.date32,
        BytesType: pa.binary,
    }
    make = simple.get(type(t))
    if make is not None:
        return make()
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, TimeType):
        return pa.time64("us")
    if isinstance(t, TimestampLtzType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(t, TimestampType):
        return pa.timestamp("us")
    if isinstance(t, ArrayType):
        return pa.list_(to_arrow_field("element", t.element))
    if isinstance(t, MapType):
        # Arrow requires non-null map keys; a nullable key type still gets a non-null field.
        key = pa.field("key", to_arrow_type(t.key), nullable=False)
        return pa.map_(key, to_arrow_field("value", t.value))
    if isinstance(t, RowType):
        return pa.struct([to_arrow_field(f.name, f.type) for f in t.fields])
    raise UnsupportedTypeError(f"type {t.sql()} has no Arrow mapping")


# --- Arrow -> model ---------------------------------------------------------------------------


def from_arrow_schema(schema: pa.Schema) -> RowType:
    """An Arrow schema as a table row type (NOT NULL at the top)."""
    return RowType(
        fields=tuple(Field(f.name, from_arrow_type(f.type, f.nullable, f.name)) for f in schema),
        nullable=False,
    )


def from_arrow_type(at: pa.DataType, nullable: bool = True, path: str = "") -> DataType:
    """One Arrow type; `path` names the column in errors. Precision follows the time unit."""
    import pyarrow.types as pt

    if pt.is_dictionary(at):
        return from_arrow_type(at.value_type, nullable, path)
    t = _from_arrow_scalar(at, nullable)
    if t is None:
        t = _from_arrow_nested(at, nullable, path)
    if t is not None:
        return t
    hint = "cast it to a signed integer, string, or another supported type before writing"
    if pt.is_unsigned_integer(at):
        hint = "cast it to a signed integer type wide enough for its values (e.g. int64)"
    raise UnsupportedTypeError(
        f"column '{path}' has Arrow type {at}, which keyguard cannot write", hint=hint
    )


def _from_arrow_scalar(at: pa.DataType, nullable: bool) -> DataType | None:
    """A type that holds no other type, or None."""
    import pyarrow.types as pt

    checks: list[tuple[Callable[[pa.DataType], bool], type[DataType]]] = [
        (pt.is_boolean, BooleanType),
        (pt.is_int8, TinyIntType),
        (pt.is_int16, SmallIntType),
        (pt.is_int32, IntType),
        (pt.is_int64, BigIntType),
        (pt.is_float32, FloatType),
        (pt.is_float64, DoubleType),
        (pt.is_date, DateType),
    ]
    for check, model_cls in checks:
        if check(at):
            return model_cls(nullable=nullable)
    if pt.is_string(at) or pt.is_large_string(at) or _is(at, "is_string_view"):
        return StringType(nullable=nullable)
    if (
        pt.is_binary(at)
        or pt.is_large_binary(at)
        or pt.is_fixed_size_binary(at)
        or _is(at, "is_binary_view")
    ):
        return BytesType(nullable=nullable)
    if pt.is_decimal(at) and at.precision <= 38:
        return DecimalType(precision=at.precision, scale=at.scale, nullable=nullable)
    if pt.is_time(at):
        return TimeType(precision=_UNIT_PRECISION[at.unit], nullable=nullable)
    if pt.is_timestamp(at):
        precision = _UNIT_PRECISION[at.unit]
        if at.tz is None:
            return TimestampType(precision=precision, nullable=nullable)
        return TimestampLtzType(precision=precision, nullable=nullable)
    return None


def _from_arrow_nested(at: pa.DataType, nullable: bool, path: str) -> DataType | None:
    """A map, list or struct, its parts converted in turn; None for any other type."""
    import pyarrow.types as pt

    if pt.is_map(at):
        key = from_arrow_type(at.key_type, False, f"{path}{{key}}")
        item = at.item_field
        value = from_arrow_type(item.type, item.nullable, f"{path}{{value}}")
        return MapType(key=key, value=value, nullable=nullable)
    if (
        pt.is_list(at)
        or pt.is_large_list(at)
        or pt.is_fixed_size_list(at)
        or _is(at, "is_list_view")
    ):
        vf = at.value_field
        element = from_arrow_type(vf.type, vf.nullable, f"{path}[]")
        return ArrayType(element=element, nullable=nullable)
    if pt.is_struct(at):
        fields = []
        for i in range(at.num_fields):
            f = at.field(i)
            sub = f"{path}.{f.name}" if path else f.name
            fields.append(Field(f.name, from_arrow_type(f.type, f.nullable, sub)))
        return RowType(fields=tuple(fields), nullable=nullable)
    return None


def _is(at: pa.DataType, predicate: str) -> bool:
    """Arrow type predicates that only newer pyarrow versions have."""
    import pyarrow.types as pt

    check = getattr(pt, predicate, None)
    return bool(check(at)) if check is not None else False


# --- rows <-> batches -------------------------------------------------------------------------


def rows_to_batch(rows: Iterable[Mapping[str, Any]], row_type: RowType) -> pa.RecordBatch:
    """Python rows (see keyguard.formats.types) as one record batch of `to_arrow_schema(row_type)`.

    Missing keys are nulls; extra keys are ignored. A value that does not fit its column, a
    null in a NOT NULL column, or a timestamp with the wrong tz-awareness is an EncodeError
    naming the column (and row, where known).
    """
    import pyarrow as pa

    rows = list(rows)
    schema = to_arrow_schema(row_type)
    arrays = []
    for f, af in zip(row_type.fields, schema, strict=True):
        values = [r.get(f.name) for r in rows]
        if _has_timestamps(f.type):
            for i, v in enumerate(values):
                _check_timestamps(f.type, v, f"column '{f.name}', row {i}")
        try:
            arr = pa.array(values, type=af.type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise EncodeError(
                f"column '{f.name}': a value does not fit {f.type.sql()}: {e}",
                hint="check the values' Python types against the column types "
                     "(see keyguard.formats.types)",
            ) from e
        if not f.type.nullable and arr.null_count:
            first = next(i for i, v in enumerate(values) if v is None)
            raise EncodeError(
                f"column '{f.name}', row {first}: null in a NOT NULL column",
                hint="fill or filter the nulls, or declare the column nullable",
            )
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _has_timestamps(t: DataType) -> bool:
    return any(isinstance(x, (TimestampType, TimestampLtzType)) for _, x in walk(t))


def _check_timestamps(t: DataType, v: Any, where: str) -> None:
    """Arrow silently reads a naive datetime as UTC; keyguard's values say which is which."""
    if v is None:
        return
    if isinstance(t, (TimestampType, TimestampLtzType)) and isinstance(v, dt.datetime):
        aware = v.tzinfo is not None and v.utcoffset() is not None
        if isinstance(t, TimestampLtzType) and not aware:
            raise EncodeError(
                f"{where}: TIMESTAMP_LTZ needs a tz-aware datetime, got naive {v}",
                hint="attach the zone, e.g. v.replace(tzinfo=datetime.timezone.utc)",
            )
        if isinstance(t, TimestampType) and aware:
            raise EncodeError(
                f"{where}: TIMESTAMP is a wall-clock time and needs a naive datetime, got {v}",
                hint="drop the zone (v.replace(tzinfo=None)) or declare TIMESTAMP_LTZ",
            )
    elif isinstance(t, ArrayType) and isinstance(v, (list, tuple)):
        for e in v:
            _check_timestamps(t.element, e, where)
    elif isinstance(t, MapType):
        items = v.items() if isinstance(v, Mapping) else v
        for k, e in items:
            _check_timestamps(t.key, k, where)
            _check_timestamps(t.value, e, where)
    elif isinstance(t, RowType) and isinstance(v, Mapping):
        for f in t.fields:
            _check_timestamps(f.type, v.get(f.name), where)


def batch_to_rows(batch: pa.RecordBatch, row_type: RowType | None = None) -> list[dict[str, Any]]:
    """A record batch as Python rows (see keyguard.formats.types): maps as dicts, LTZ in UTC.

    Columns are first cast to keyguard's Arrow spelling of their type (e.g. nanoseconds to
    microseconds, large_string to string), so any Arrow producer's batch reads the same.
    """
    if row_type is None:
        row_type = from_arrow_schema(batch.schema)
    names = batch.schema.names
    columns: list[list[Any]] = []
    for f in row_type.fields:
        if f.name not in names:
            raise SchemaError(
                f"the batch has no column '{f.name}'; its columns are: {', '.join(names)}"
            )
        col = batch.column(names.index(f.name))
        target = to_arrow_type(f.type)
        if not col.type.equals(target):
            col = col.cast(target, safe=False)
        convert = _converter(f.type)
        values = col.to_pylist()
        columns.append(values if convert is None else [convert(v) for v in values])
    if not columns:
        return [{} for _ in range(batch.num_rows)]
    return [dict(zip(row_type.names, vs, strict=True)) for vs in zip(*columns, strict=True)]


Converter = Callable[[Any], Any]


def _converter(t: DataType) -> Converter | None:
    """What to apply to `to_pylist()` output to get keyguard's values; None: nothing."""
    if isinstance(t, TimestampLtzType):
        return _to_utc
    if isinstance(t, ArrayType):
        elem = _converter(t.element)
        if elem is None:
            return None
        return lambda v: None if v is None else [elem(e) for e in v]
    if isinstance(t, MapType):
        kc = _converter(t.key) or _identity
        vc = _converter(t.value) or _identity
        return lambda v: None if v is None else {kc(k): vc(e) for k, e in v}
    if isinstance(t, RowType):
        subs = [(f.name, _converter(f.type)) for f in t.fields]
        if all(c is None for _, c in subs):
            return None
        return lambda v: None if v is None else {n: v[n] if c is None else c(v[n]) for n, c in subs}
    return None


def _identity(v: Any) -> Any:
    return v


def _to_utc(v: dt.datetime | None) -> dt.datetime | None:
    return None if v is None else v.astimezone(dt.timezone.utc)
