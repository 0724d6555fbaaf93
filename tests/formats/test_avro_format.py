"""The `avro` format: bytes against fastavro and Java's rules, round trips, batch == row."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyguard.formats.avro_format import AVRO_FORMAT, AvroCodec, AvroWriter
from keyguard.formats.avro_schema import to_avro_schema
from keyguard.formats.codec import CodecContext
from keyguard.formats.errors import DecodeError, EncodeError, InvalidOptionError, SchemaError
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
    row,
)

UTC = dt.timezone.utc


def codec(t: RowType, **options: Any) -> AvroCodec:
    resolved = AVRO_FORMAT.options.validate(options)
    return AVRO_FORMAT.build(t, resolved, CodecContext(role="value", topic="t"))  # type: ignore[return-value]


def fastavro_bytes(schema: Any, value: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema, named_schemas={}), value)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# Arrow types for the batch path
# --------------------------------------------------------------------------------------------


def arrow_type(t: DataType) -> pa.DataType:
    simple = {StringType: pa.string(), BooleanType: pa.bool_(), TinyIntType: pa.int8(),
              SmallIntType: pa.int16(), IntType: pa.int32(), BigIntType: pa.int64(),
              FloatType: pa.float32(), DoubleType: pa.float64(), DateType: pa.date32(),
              TimeType: pa.time64("us"), TimestampType: pa.timestamp("us"),
              TimestampLtzType: pa.timestamp("us", tz="UTC"), BytesType: pa.binary()}
    if type(t) in simple:
        return simple[type(t)]
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, ArrayType):
        return pa.list_(arrow_type(t.element))
    if isinstance(t, MapType):
        return pa.map_(arrow_type(t.key), arrow_type(t.value))
    assert isinstance(t, RowType)
    return pa.struct([(f.name, arrow_type(f.type)) for f in t.fields])


def to_batch(t: RowType, rows: list[dict[str, Any]]) -> pa.RecordBatch:
    schema = pa.schema([(f.name, arrow_type(f.type)) for f in t.fields])
    return pa.RecordBatch.from_pylist(rows, schema=schema)


# --------------------------------------------------------------------------------------------
# Strategies: row types (legacy-mappable) and values of them
# --------------------------------------------------------------------------------------------

ATOMIC = st.one_of(
    st.sampled_from([StringType(), BooleanType(), TinyIntType(), SmallIntType(), IntType(),
                     BigIntType(), FloatType(), DoubleType(), DateType(), BytesType(),
                     TimeType(precision=3), TimestampType(precision=3),
                     TimestampType(precision=0)]),
    st.builds(lambda p, s: DecimalType(precision=p, scale=min(s, p)),
              st.integers(1, 38), st.integers(0, 10)),
)


def nullability(s: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
    return st.tuples(s, st.booleans()).map(lambda ts: ts[0].with_nullable(ts[1]))


def field_lists(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[tuple[Field, ...]]:
    return st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), children),
                    min_size=1, max_size=6, unique_by=lambda p: p[0]).map(
        lambda ps: tuple(Field(n, t) for n, t in ps))


TYPES = st.recursive(
    nullability(ATOMIC),
    lambda children: nullability(st.one_of(
        st.builds(lambda e: ArrayType(element=e), children),
        st.builds(lambda v: MapType(key=StringType().not_null(), value=v), children),
        st.builds(lambda fs: RowType(fields=fs), field_lists(children)),
    )),
    max_leaves=6,
)
ROW_TYPES = field_lists(TYPES).map(lambda fs: RowType(fields=fs, nullable=False))

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)


def values(t: DataType) -> st.SearchStrategy[Any]:
    v = _values(t)
    return st.one_of(st.none(), v) if t.nullable else v


def _values(t: DataType) -> st.SearchStrategy[Any]:
    if isinstance(t, StringType):
        return TEXT
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, IntegralType):
        return st.integers(t.min_value, t.max_value)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, DecimalType):
        big, scale = decimal.Context(prec=100), t.scale
        return st.integers(1 - 10**t.precision, 10**t.precision - 1).map(
            lambda n: decimal.Decimal(n).scaleb(-scale, big))
    if isinstance(t, DateType):
        return st.dates()
    if isinstance(t, TimeType):
        return st.times().map(lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000))
    if isinstance(t, TimestampType):
        unit = 10 ** (6 - min(t.precision, 6))
        return st.datetimes(min_value=dt.datetime(1677, 9, 22), max_value=dt.datetime(2262, 4, 10)
                            ).map(lambda x: x.replace(microsecond=x.microsecond // unit * unit))
    if isinstance(t, TimestampLtzType):
        unit = 10 ** (6 - min(t.precision, 6))
        offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
        return st.datetimes(min_value=dt.datetime(1678, 1, 1), max_value=dt.datetime(2262, 1, 1),
                            timezones=offsets).map(
            lambda x: x.replace(microsecond=x.microsecond // unit * unit))
    if isinstance(t, BytesType):
        return st.binary(max_size=20)
    if isinstance(t, ArrayType):
        return st.lists(values(t.element), max_size=4)
    if isinstance(t, MapType):
        return st.dictionaries(TEXT, values(t.value), max_size=3)
    assert isinstance(t, RowType)
    return st.fixed_dictionaries({f.name: values(f.type) for f in t.fields})


@st.composite
def typed_rows(draw: Any, types: st.SearchStrategy[RowType] = ROW_TYPES) -> tuple[RowType, list]:
    t = draw(types)
    return t, draw(st.lists(values(t), min_size=1, max_size=5))


def java_decimal_boundary(v: Any) -> bool:
    """Unscaled values -2^(8k-1), where fastavro's bytes are one longer than Java's."""
    if isinstance(v, decimal.Decimal):
        n = int(v.scaleb(-v.as_tuple().exponent))  # type: ignore[operator]
        return n < 0 and (-n) & (-n - 1) == 0 and (-n).bit_length() % 8 == 0
    if isinstance(v, dict):
        return any(java_decimal_boundary(x) for x in v.values())
    if isinstance(v, list):
        return any(java_decimal_boundary(x) for x in v)
    return False


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(typed_rows())
def test_round_trip_and_batch_equal_rows(case: tuple[RowType, list[dict[str, Any]]]) -> None:
    t, rows = case
    c = codec(t)
    encoded = [c.encode(r) for r in rows]
    assert [c.decode(b) for b in encoded] == rows
    assert c.encode_batch(to_batch(t, rows)) == encoded
    for r, b in zip(rows, encoded, strict=True):
        if not java_decimal_boundary(r):
            assert b == fastavro_bytes(c.avro_schema, r)


NON_LEGACY = field_lists(nullability(st.sampled_from([
    TimestampType(precision=3), TimestampType(precision=6), TimestampType(precision=9),
    TimestampLtzType(precision=3), TimestampLtzType(precision=6), TimestampLtzType(precision=9),
    BigIntType(), StringType()]))).map(lambda fs: RowType(fields=fs, nullable=False))


@FAST
@given(typed_rows(NON_LEGACY))
def test_non_legacy_timestamps(case: tuple[RowType, list[dict[str, Any]]]) -> None:
    t, rows = case
    c = codec(t, **{"timestamp_mapping.legacy": "false"})
    encoded = [c.encode(r) for r in rows]
    assert [c.decode(b) for b in encoded] == rows
    assert c.encode_batch(to_batch(t, rows)) == encoded
    if not any(getattr(f.type, "precision", 0) > 6 for f in t.fields):  # fastavro has no nanos
        assert encoded == [fastavro_bytes(c.avro_schema, r) for r in rows]


# --------------------------------------------------------------------------------------------
# Golden bytes
# --------------------------------------------------------------------------------------------

ORDER = row(
    ("id", BigIntType().not_null()), ("name", StringType()), ("qty", IntType()),
    ("price", DecimalType(precision=10, scale=2)), ("at", TimestampType(precision=3)),
    ("day", DateType()), ("ok", BooleanType().not_null()), ("score", DoubleType()),
)


def test_golden_bytes() -> None:
    r = {"id": 42, "name": "ab", "qty": -1, "price": decimal.Decimal("12.34"),
         "at": dt.datetime(2024, 1, 1, 0, 0, 0, 5000), "day": dt.date(1970, 1, 2),
         "ok": True, "score": None}
    expected = bytes.fromhex(
        "54"                     # id 42 -> zig-zag 84
        "02" "04" "6162"         # union branch 1, length 2, "ab"
        "02" "01"                # qty -1 -> zig-zag 1
        "02" "04" "04d2"         # price 1234 as 2 bytes
        "02" "8ad08fa59863"      # at 1704067200005 ms
        "02" "02"                # day 1
        "01"                     # ok
        "00"                     # score null: branch 0
    )
    assert codec(ORDER).encode(r) == expected == fastavro_bytes(to_avro_schema(ORDER), r)


@pytest.mark.parametrize(
    ("value", "java_hex"),
    [("0", "00"), ("1", "01"), ("-1", "ff"), ("127", "7f"), ("128", "0080"), ("-128", "80"),
     ("-129", "ff7f"), ("-32768", "8000"), ("255", "00ff"), ("-256", "ff00")],
)
def test_decimal_bytes_are_javas_big_integer(value: str, java_hex: str) -> None:
    """Flink writes DecimalData.toUnscaledBytes() = BigInteger.toByteArray()."""
    t = row(("d", DecimalType(precision=10, scale=0).not_null()))
    raw = bytes.fromhex(java_hex)
    expected = bytes([len(raw) * 2]) + raw
    assert codec(t).encode({"d": decimal.Decimal(value)}) == expected
    assert codec(t).encode_batch(to_batch(t, [{"d": decimal.Decimal(value)}])) == [expected]


def test_decimals_round_half_up_to_the_scale() -> None:
    t = row(("d", DecimalType(precision=5, scale=2).not_null()))
    c = codec(t)
    assert c.decode(c.encode({"d": decimal.Decimal("1.005")})) == {"d": decimal.Decimal("1.01")}
    assert c.decode(c.encode({"d": 7})) == {"d": decimal.Decimal("7.00")}


def test_timestamps_truncate_to_their_precision() -> None:
    """As Flink 2.3's cast does at run time: below precision 3 the epoch milliseconds are cut
    toward zero (golden_declared.jsonl shows it for json and csv)."""
    t = row(("ts", TimestampType(precision=0).not_null()), ("tm", TimeType(precision=3)))
    c = codec(t)
    r = {"ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "tm": dt.time(1, 2, 3, 456789)}
    assert c.decode(c.encode(r)) == {"ts": dt.datetime(1970, 1, 1),
                                     "tm": dt.time(1, 2, 3, 456000)}
    assert c.encode_batch(to_batch(t, [r])) == [c.encode(r)]
    later = {"ts": dt.datetime(2024, 2, 29, 12, 0, 0, 999999), "tm": None}
    assert c.decode(c.encode(later))["ts"] == dt.datetime(2024, 2, 29, 12)
    assert c.encode_batch(to_batch(t, [later])) == [c.encode(later)]


def test_nullable_top_level_row() -> None:
    t = row(("a", IntType().not_null()), nullable=True)
    c = codec(t)
    assert c.encode({"a": 1}) == b"\x02\x02"
    assert c.decode(b"\x02\x02") == {"a": 1}
    assert c.encode_batch(to_batch(t, [{"a": 1}])) == [b"\x02\x02"]


def test_sliced_and_chunked_batches() -> None:
    t = row(("d", DecimalType(precision=8, scale=2)), ("s", StringType()))
    rows = [{"d": decimal.Decimal(i) / 4, "s": str(i) * i} for i in range(6)]
    c = codec(t)
    batch = to_batch(t, rows)
    assert c.encode_batch(batch.slice(2, 3)) == [c.encode(r) for r in rows[2:5]]
    table = pa.Table.from_batches([batch.slice(0, 2), batch.slice(2)])
    assert c.encode_batch(table) == [c.encode(r) for r in rows]



@pytest.mark.parametrize("longest", [0, 1, 64, 65, 300])
def test_batches_with_short_long_and_empty_strings(longest: int) -> None:
    """Strings up to 64 bytes go through the one-buffer matrix, longer ones make the record a
    join of parts: the bytes are the row writer's either way, sliced batches included."""
    t = row(("k", BigIntType().not_null()), ("s", StringType()), ("b", BytesType()),
            ("n", StringType().not_null()), ("x", DoubleType()))
    rows = [{"k": i, "s": None if i % 4 == 1 else "é" * (i * 7 % (longest + 1)) + "z" * (i % 3),
             "b": None if i % 5 == 2 else bytes(range(i % 7)) * (longest // 7 + 1),
             "n": "" if i % 2 else "x" * min(longest, 64 + i % 3), "x": i / 3 if i % 6 else None}
            for i in range(40)]
    c = codec(t)
    batch = to_batch(t, rows)
    assert c.encode_batch(batch) == [c.encode(r) for r in rows]
    assert c.encode_batch(batch.slice(3, 30)) == [c.encode(r) for r in rows[3:33]]
    assert c.encode_batch(batch.slice(0, 0)) == []

def test_json_encoding_round_trip() -> None:
    c = codec(ORDER, encoding="json")
    r = {"id": 1, "name": "x", "qty": None, "price": decimal.Decimal("1.50"),
         "at": dt.datetime(2024, 5, 6, 7, 8, 9), "day": dt.date(2024, 1, 1), "ok": False,
         "score": 2.5}
    data = c.encode(r)
    assert json.loads(data)["name"] == {"string": "x"}
    assert c.decode(data) == r
    assert c.encode_batch(to_batch(ORDER, [r])) == [data]


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "value", "message"),
    [
        (IntType(), 1 << 31, r"2147483648 is out of range for INT"),
        (TinyIntType(), 200, r"out of range for TINYINT \(-128..127\)"),
        (BigIntType(), 1 << 63, "out of range for BIGINT"),
        (DecimalType(precision=4, scale=2), decimal.Decimal("123.4"), "too many for DECIMAL"),
        (FloatType(), 1e39, "does not fit FLOAT"),
        (StringType(), b"x", "is not a str"),
        (IntType(), True, "is not an integer"),
        (DecimalType(precision=4, scale=2), 1.5, "is not a Decimal"),
        (TimestampType(precision=3), dt.datetime(2024, 1, 1, tzinfo=UTC), "naive"),
        (DateType(), dt.datetime(2024, 1, 1), "is not a date"),
    ],
)
def test_values_that_do_not_fit(t: DataType, value: Any, message: str) -> None:
    c = codec(row(("col", t)))
    with pytest.raises(EncodeError, match=message) as info:
        c.encode({"col": value})
    assert "column 'col'" in str(info.value) and "avro value format" in str(info.value)


def test_ltz_needs_aware_datetimes() -> None:
    c = codec(row(("t", TimestampLtzType(precision=3))), **{"timestamp_mapping.legacy": False})
    with pytest.raises(EncodeError, match="TIMESTAMP_LTZ takes timezone-aware"):
        c.encode({"t": dt.datetime(2024, 1, 1)})


def test_batch_errors_name_row_and_column() -> None:
    t = row(("a", IntType().not_null()), ("d", DecimalType(precision=3, scale=1)))
    c = codec(t)
    with pytest.raises(EncodeError, match=r"row 1: column 'a' is null"):
        c.encode_batch(pa.record_batch({"a": pa.array([1, None], pa.int32()),
                                        "d": pa.array([None, None], pa.decimal128(3, 1))}))
    with pytest.raises(EncodeError, match=r"row 2: column 'a': 3000000000 is out of range"):
        c.encode_batch(pa.record_batch({"a": pa.array([1, 2, 3_000_000_000], pa.int64()),
                                        "d": pa.array([None] * 3, pa.decimal128(3, 1))}))
    with pytest.raises(EncodeError, match=r"row 0: column 'd': 123.0 has more than 2"):
        c.encode_batch(pa.record_batch({"a": pa.array([1], pa.int32()),
                                        "d": pa.array([decimal.Decimal("123.0")],
                                                      pa.decimal128(4, 1))}))
    with pytest.raises(EncodeError, match="the batch has no column 'd'"):
        c.encode_batch(pa.record_batch({"a": pa.array([1], pa.int32())}))


def test_not_null_columns_reject_null() -> None:
    with pytest.raises(EncodeError, match="column 'id' is null, but its type is NOT NULL"):
        codec(ORDER).encode({"ok": True})


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"", "not a valid Avro record"), (b"\x54\x02\x04a", "not a valid Avro record"),
     (b"\x54\x09", "not a valid Avro record"),
     (codec(ORDER).encode({"id": 1, "ok": True}) + b"\x00", "1 bytes left")],
)
def test_bad_bytes(data: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        codec(ORDER).decode(data)


def test_options() -> None:
    with pytest.raises(InvalidOptionError, match="did you mean 'encoding'"):
        codec(ORDER, encodng="json")
    with pytest.raises(InvalidOptionError, match="must be one of binary, json"):
        codec(ORDER, encoding="xml")
    codec(ORDER, codec="null", **{"open.fastread": "true"})  # Flink's options are accepted
    with pytest.raises(SchemaError, match="TIMESTAMP precision up to 3"):
        codec(row(("t", TimestampType(precision=6))))


def test_explicit_schema_pairing() -> None:
    t = row(("s", StringType().not_null()), ("n", IntType()))
    enum_schema = {"type": "record", "name": "R", "fields": [
        {"name": "s", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "n", "type": ["int", "null"]}]}
    w = AvroWriter(t, enum_schema)
    assert w.encode({"s": "B", "n": None}) == b"\x02\x02"
    assert w.decode(b"\x02\x02") == {"s": "B", "n": None}
    with pytest.raises(EncodeError, match="is not a symbol"):
        w.encode({"s": "C", "n": 1})
    with pytest.raises(SchemaError, match="are not the row's"):
        AvroWriter(t, {"type": "record", "name": "R", "fields": [
            {"name": "n", "type": "int"}, {"name": "s", "type": "string"}]})
    with pytest.raises(SchemaError, match="cannot be written as Avro"):
        AvroWriter(t, {"type": "record", "name": "R", "fields": [
            {"name": "s", "type": "long"}, {"name": "n", "type": "int"}]})


@pytest.mark.parametrize(("t", "datum", "says"), [
    (IntType(), 2**31, "out of range"),
    (TinyIntType(), 128, "out of range"),
    (DecimalType(precision=10, scale=2), decimal.Decimal("8.8E+69"), "more than 10 digits"),
    (DecimalType(precision=10, scale=2), decimal.Decimal("99999999.995"), "more than 10 digits"),
])
def test_decoded_values_outside_the_column_type_are_decode_errors(t, datum, says):
    c = codec(row(("c", t.not_null())))
    schema = c.writer.schema
    wide = {**schema, "fields": [{"name": "c", "type": "long"}]} if not isinstance(
        t, DecimalType) else {**schema, "fields": [{"name": "c", "type": {
            "type": "bytes", "logicalType": "decimal", "precision": 80, "scale": 3}}]}
    data = fastavro_bytes(wide, {"c": datum})  # a long's varint reads as an Avro int too
    with pytest.raises(DecodeError, match=f"column 'c'.*{says}"):
        c.writer.decode(data, wide if isinstance(t, DecimalType) else None)


def test_a_decimal_too_wide_to_round_is_an_encode_error():
    with pytest.raises(EncodeError, match="too many for DECIMAL"):
        codec(row(("c", DecimalType(precision=10, scale=2)))).encode(
            {"c": decimal.Decimal("1e400")})
