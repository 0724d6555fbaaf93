from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import data_types, rows_of

pa = pytest.importorskip("pyarrow")

from keyguard.formats.arrow_schema import (  # noqa: E402
    batch_to_rows,
    from_arrow_schema,
    from_arrow_type,
    rows_to_batch,
    to_arrow_schema,
    to_arrow_type,
)
from keyguard.formats.errors import EncodeError, UnsupportedTypeError  # noqa: E402
from keyguard.formats.sqltypes import parse_columns, parse_type  # noqa: E402
from keyguard.formats.types import (  # noqa: E402
    ArrayType,
    DataType,
    Field,
    MapType,
    RowType,
    TimestampLtzType,
    TimestampType,
    TimeType,
)

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("sql", "arrow"),
    [
        ("STRING", pa.string()),
        ("BOOLEAN", pa.bool_()),
        ("TINYINT", pa.int8()),
        ("SMALLINT", pa.int16()),
        ("INT", pa.int32()),
        ("BIGINT", pa.int64()),
        ("FLOAT", pa.float32()),
        ("DOUBLE", pa.float64()),
        ("DECIMAL(10, 2)", pa.decimal128(10, 2)),
        ("DATE", pa.date32()),
        ("TIME(3)", pa.time64("us")),
        ("TIMESTAMP(3)", pa.timestamp("us")),
        ("TIMESTAMP_LTZ(9)", pa.timestamp("us", tz="UTC")),
        ("BYTES", pa.binary()),
        ("ARRAY<INT>", pa.list_(pa.field("element", pa.int32()))),
        (
            "MAP<STRING, BIGINT NOT NULL>",
            pa.map_(
                pa.field("key", pa.string(), nullable=False),
                pa.field("value", pa.int64(), nullable=False),
            ),
        ),
        (
            "ROW<a INT NOT NULL, b STRING>",
            pa.struct([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string())]),
        ),
    ],
)
def test_to_arrow_type(sql: str, arrow: pa.DataType) -> None:
    got = to_arrow_type(parse_type(sql))
    assert got == arrow
    # Field nullability is part of a nested type's identity in Arrow: compare it too.
    assert str(got) == str(arrow)


def test_to_arrow_schema_carries_nullability() -> None:
    schema = to_arrow_schema(parse_columns("id BIGINT NOT NULL, tags ARRAY<STRING NOT NULL>"))
    assert schema.field("id").nullable is False
    assert schema.field("tags").nullable is True
    assert schema.field("tags").type.value_field.nullable is False


@pytest.mark.parametrize(
    ("arrow", "sql"),
    [
        (pa.large_string(), "STRING"),
        (pa.string_view(), "STRING"),
        (pa.large_binary(), "BYTES"),
        (pa.binary(16), "BYTES"),
        (pa.date64(), "DATE"),
        (pa.time32("ms"), "TIME(3)"),
        (pa.time64("ns"), "TIME(9)"),
        (pa.timestamp("s"), "TIMESTAMP(0)"),
        (pa.timestamp("ms", tz="Europe/Berlin"), "TIMESTAMP_LTZ(3)"),
        (pa.timestamp("ns", tz="UTC"), "TIMESTAMP_LTZ(9)"),
        (pa.large_list(pa.int64()), "ARRAY<BIGINT>"),
        (pa.list_(pa.int8(), 3), "ARRAY<TINYINT>"),
        (pa.dictionary(pa.int32(), pa.string()), "STRING"),
        (pa.decimal256(38, 4), "DECIMAL(38, 4)"),
        (pa.map_(pa.string(), pa.int32()), "MAP<STRING NOT NULL, INT>"),
    ],
)
def test_from_arrow_type_accepts_other_producers_spellings(arrow: pa.DataType, sql: str) -> None:
    assert from_arrow_type(arrow) == parse_type(sql)


@pytest.mark.parametrize(
    "arrow",
    [pa.uint32(), pa.float16(), pa.null(), pa.duration("us"), pa.decimal256(40, 2)],
)
def test_from_arrow_type_unsupported_names_the_column(arrow: pa.DataType) -> None:
    schema = pa.schema([pa.field("s", pa.struct([pa.field("x", arrow)]))])
    with pytest.raises(UnsupportedTypeError, match=r"column 's\.x'"):
        from_arrow_schema(schema)


def _arrow_normal_form(t: DataType) -> DataType:
    """What survives model -> Arrow -> model: microsecond precision, NOT NULL map keys."""
    if isinstance(t, (TimeType, TimestampType, TimestampLtzType)):
        return type(t)(precision=6, nullable=t.nullable)
    if isinstance(t, ArrayType):
        return ArrayType(element=_arrow_normal_form(t.element), nullable=t.nullable)
    if isinstance(t, MapType):
        key = _arrow_normal_form(t.key).not_null()
        return MapType(key=key, value=_arrow_normal_form(t.value), nullable=t.nullable)
    if isinstance(t, RowType):
        fields = tuple(Field(f.name, _arrow_normal_form(f.type)) for f in t.fields)
        return RowType(fields=fields, nullable=t.nullable)
    return t


@settings(max_examples=100, deadline=None)
@given(data_types())
def test_type_round_trip(t: DataType) -> None:
    assert from_arrow_type(to_arrow_type(t), t.nullable) == _arrow_normal_form(t)


# --- rows <-> batches ---------------------------------------------------------------------------

TABLE = parse_columns(
    "id BIGINT NOT NULL, name STRING, amount DECIMAL(12, 2), day DATE, at TIME(3), "
    "ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3), raw BYTES, ok BOOLEAN, f FLOAT, d DOUBLE, "
    "tags ARRAY<STRING>, attrs MAP<STRING, INT>, addr ROW<city STRING, seen TIMESTAMP_LTZ(6)>"
)


def _sample_row() -> dict[str, Any]:
    return {
        "id": 1,
        "name": "Zoë",
        "amount": Decimal("12345.60"),
        "day": dt.date(2024, 1, 31),
        "at": dt.time(12, 30, 1, 500000),
        "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 120000),
        "ltz": dt.datetime(2024, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        "raw": b"\x00\xff",
        "ok": True,
        "f": 1.5,
        "d": 1e20,
        "tags": ["a", None],
        "attrs": {"x": 1, "y": None},
        "addr": {"city": "Köln", "seen": dt.datetime(2024, 5, 1, tzinfo=UTC)},
    }


def test_rows_to_batch_and_back() -> None:
    row = _sample_row()
    batch = rows_to_batch([row, {"id": 2}], TABLE)
    assert batch.schema == to_arrow_schema(TABLE)
    assert batch.num_rows == 2
    back = batch_to_rows(batch)
    assert back[0] == row
    assert back[1] == {name: (2 if name == "id" else None) for name in TABLE.names}
    # Maps come back as dicts, LTZ as UTC, decimals at the column's scale.
    assert isinstance(back[0]["attrs"], dict)
    assert back[0]["ltz"].tzinfo is UTC
    assert back[0]["ltz"] == dt.datetime(2024, 1, 1, 0, 0, tzinfo=UTC)
    assert back[0]["addr"]["seen"].tzinfo is UTC
    assert back[0]["amount"].as_tuple().exponent == -2


def test_batch_to_rows_from_foreign_spellings() -> None:
    """Batches from other producers (ns timestamps, large strings, Berlin tz) read the same."""
    batch = pa.RecordBatch.from_pydict(
        {
            "s": pa.array(["a"], pa.large_string()),
            "ts": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns")),
            "ltz": pa.array([0], pa.timestamp("ms", tz="Europe/Berlin")),
            "m": pa.array([[("k", [1])]], pa.map_(pa.string(), pa.large_list(pa.int64()))),
        }
    )
    (got,) = batch_to_rows(batch)
    assert got == {
        "s": "a",
        "ts": dt.datetime(2023, 11, 14, 22, 13, 20, 123456),
        "ltz": dt.datetime(1970, 1, 1, tzinfo=UTC),
        "m": {"k": [1]},
    }
    assert got["ltz"].tzinfo is UTC


def test_batch_to_rows_with_row_type_selects_and_orders() -> None:
    batch = rows_to_batch([_sample_row()], TABLE)
    got = batch_to_rows(batch, parse_columns("name STRING, id BIGINT NOT NULL"))
    assert got == [{"name": "Zoë", "id": 1}]
    assert list(got[0]) == ["name", "id"]


def test_empty_batch() -> None:
    batch = rows_to_batch([], TABLE)
    assert batch.num_rows == 0
    assert batch.schema == to_arrow_schema(TABLE)
    assert batch_to_rows(batch) == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"id": None}, "row 0: null in a NOT NULL column"),
        ({"id": "x"}, "column 'id'"),
        ({"id": 1, "amount": Decimal("1.234")}, "column 'amount'"),
        ({"id": 1, "amount": Decimal("12345678901.00")}, "column 'amount'"),
        ({"id": 2**63}, "column 'id'"),
        ({"id": 1, "ltz": dt.datetime(2024, 1, 1)}, "TIMESTAMP_LTZ needs a tz-aware"),
        ({"id": 1, "ts": dt.datetime(2024, 1, 1, tzinfo=UTC)}, "TIMESTAMP is a wall-clock"),
        (
            {"id": 1, "addr": {"seen": dt.datetime(2024, 1, 1)}},
            "column 'addr', row 0: TIMESTAMP_LTZ",
        ),
    ],
)
def test_rows_to_batch_errors_name_the_column(value: dict[str, Any], fragment: str) -> None:
    with pytest.raises(EncodeError) as info:
        rows_to_batch([value], TABLE)
    assert fragment in info.value.message
    assert info.value.hint


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_of())
def test_rows_round_trip(case: tuple[RowType, list[dict[str, Any]]]) -> None:
    row_type, rows = case
    back = batch_to_rows(rows_to_batch(rows, row_type), row_type)
    assert back == [_expected(row_type, r) for r in rows]


def _expected(t: DataType, v: Any) -> Any:
    """The value as it reads back: LTZ in UTC; everything else unchanged."""
    if v is None:
        return None
    if isinstance(t, TimestampLtzType):
        return v.astimezone(UTC)
    if isinstance(t, ArrayType):
        return [_expected(t.element, e) for e in v]
    if isinstance(t, MapType):
        return {k: _expected(t.value, e) for k, e in v.items()}
    if isinstance(t, RowType):
        return {f.name: _expected(f.type, v.get(f.name)) for f in t.fields}
    return v


def test_deeply_nested_naive_ltz_is_rejected() -> None:
    t = parse_type("ARRAY<MAP<STRING, ROW<x TIMESTAMP_LTZ(3)>>>")
    table = RowType(fields=(Field("c", t),), nullable=False)
    with pytest.raises(EncodeError, match="column 'c'"):
        rows_to_batch([{"c": [{"k": {"x": dt.datetime(2024, 1, 1)}}]}], table)
