"""The json format: golden bytes for every rule in ENVIRONMENT.md, Jackson's escaping, round
trips, encode_batch == encode, and errors."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyguard.formats.codec import create_codec
from keyguard.formats.errors import (
    DecodeError,
    EncodeError,
    InvalidOptionError,
    UnsupportedTypeError,
)
from keyguard.formats.json_format import OPTIONS, json_string
from keyguard.formats.projection import project
from keyguard.formats.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
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
    row,
)

UTC = dt.timezone.utc


def enc(t: DataType, value: Any, **options: Any) -> bytes:
    return create_codec("json", row(("f", t)), options).encode({"f": value})


def body(t: DataType, value: Any, **options: Any) -> str:
    """The JSON text of one value: the bytes between `{"f":` and `}`."""
    out = enc(t, value, **options).decode("utf-8")
    assert out.startswith('{"f":') and out.endswith("}")
    return out[5:-1]


# --- golden bytes: ENVIRONMENT.md ------------------------------------------------------------


def test_key_in_primary_key_declaration_order() -> None:
    table = row(("a", IntType()), ("b", StringType()), ("v", DoubleType()))
    layout = project(table, "b, a")
    key = create_codec("json", layout.key_type)
    assert key.encode(layout.key_row({"a": 1, "b": "B1", "v": 2.0})) == b'{"b":"B1","a":1}'
    value = create_codec("json", layout.value_type)
    assert value.encode({"a": 1, "b": "B1", "v": None}) == b'{"a":1,"b":"B1","v":null}'


def test_ignore_null_fields() -> None:
    t = row(("a", IntType()), ("b", StringType()), ("r", row(("x", IntType()), nullable=True)))
    c = create_codec("json", t, {"encode.ignore-null-fields": "true"})
    assert c.encode({"a": None, "b": "x", "r": {"x": None}}) == b'{"b":"x","r":{}}'
    assert c.encode({"a": None, "b": None, "r": None}) == b"{}"


@pytest.mark.parametrize(("x", "text"), [
    (1e20, "1.0E20"), (1e-5, "1.0E-5"), (100.0, "100.0"), (1234567.0, "1234567.0"),
    (1e7, "1.0E7"), (-0.0, "-0.0"), (0.1, "0.1"), (float("nan"), '"NaN"'),
    (float("inf"), '"Infinity"'), (float("-inf"), '"-Infinity"'), (3, "3.0"),
])
def test_double(x: float, text: str) -> None:
    assert body(DoubleType(), x) == text


def test_float_is_java_float_to_string() -> None:
    assert body(FloatType(), 0.1) == "0.1"
    assert body(FloatType(), 16777217.0) == "1.6777216E7"
    assert body(FloatType(), 1e-5) == "1.0E-5"


@pytest.mark.parametrize(("d", "default", "plain"), [
    ("12345678.90", "12345678.9", "12345678.90"), ("1000.00", "1E+3", "1000.00"),
    ("0.00", "0", "0.00"), ("1000", "1E+3", "1000.00"), ("-0.10", "-0.1", "-0.10"),
    ("0.005", "0.01", "0.01"),  # HALF_UP to the column scale, as Flink's cast
])
def test_decimal(d: str, default: str, plain: str) -> None:
    t = DecimalType(precision=10, scale=2)
    assert body(t, Decimal(d)) == default
    assert body(t, Decimal(d), **{"encode.decimal-as-plain-number": "true"}) == plain


def test_tiny_decimal_uses_exponent() -> None:
    assert body(DecimalType(precision=10, scale=9), Decimal("0.000000027")) == "2.7E-8"


def test_timestamps() -> None:
    ts = dt.datetime(2024, 1, 1, 0, 0, 0, 120000)
    assert body(TimestampType(precision=6), ts) == '"2024-01-01 00:00:00.12"'
    assert body(TimestampType(precision=3), ts.replace(microsecond=0)) == '"2024-01-01 00:00:00"'
    assert body(TimestampType(precision=1), ts.replace(microsecond=987654)) == \
        '"2024-01-01 00:00:00.9"'
    iso = {"timestamp-format.standard": "ISO-8601"}
    assert body(TimestampType(), ts, **iso) == '"2024-01-01T00:00:00.12"'
    ltz = dt.datetime(2024, 1, 1, 2, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert body(TimestampLtzType(), ltz) == '"2024-01-01 00:00:00Z"'
    assert body(TimestampLtzType(), ltz, **iso) == '"2024-01-01T00:00:00Z"'


def test_date_time_bytes() -> None:
    assert body(DateType(), dt.date(2024, 2, 29)) == '"2024-02-29"'
    assert body(BytesType(), b"\x00\xff\xfe") == '"AP/+"'


@pytest.mark.parametrize(
    ("precision", "value", "expected"),
    [  # Flink 2.3 keeps TIME's milliseconds (SQL_TIME_FORMAT trims trailing zeros)
        (3, dt.time(12, 34, 56, 789000), '"12:34:56.789"'),
        (3, dt.time(12, 34, 56, 780000), '"12:34:56.78"'),
        (3, dt.time(12, 34, 56, 789999), '"12:34:56.789"'),  # Flink holds milliseconds
        (3, dt.time(12, 34, 56), '"12:34:56"'),
        (1, dt.time(12, 34, 56, 789000), '"12:34:56.7"'),
        (0, dt.time(12, 34, 56, 789000), '"12:34:56"'),
        (6, dt.time(1, 2, 3, 456789), '"01:02:03.456"'),
    ],
)
def test_time_keeps_its_milliseconds(precision: int, value: dt.time, expected: str) -> None:
    t = TimeType(precision=precision)
    assert body(t, value) == expected
    c = create_codec("json", row(("f", t)))
    # decoding reads back what was written: the fraction the text carries
    assert c.decode(enc(t, value)) == {"f": dt.time.fromisoformat(expected.strip('"'))}


def test_full_width_decimal_round_trips_and_never_decodes_to_null() -> None:
    t = DecimalType(precision=38, scale=18).not_null()
    c = create_codec("json", row(("k", t)))
    for text in ("99999999999999999999.999999999999999999",
                 "-99999999999999999999.999999999999999999"):
        assert c.encode({"k": Decimal(text)}) == b'{"k":' + text.encode() + b"}"
        assert c.decode(b'{"k":' + text.encode() + b"}") == {"k": Decimal(text)}
    for wider in (b"100000000000000000000", b"99999999999999999999.9999999999999999995"):
        with pytest.raises(DecodeError, match=r"field 'k'.*needs more than 38 digits"):
            c.decode(b'{"k":' + wider + b"}")


def test_integers_booleans() -> None:
    assert body(TinyIntType(), -128) == "-128"
    assert body(BigIntType(), 2**63 - 1) == "9223372036854775807"
    assert body(BooleanType(), True) == "true"


def test_nested() -> None:
    t = row(("a", ArrayType(element=StringType())),
            ("m", MapType(key=StringType(), value=IntType())),
            ("r", row(("x", DoubleType()), ("y", ArrayType(element=IntType())), nullable=True)))
    c = create_codec("json", t)
    out = c.encode({"a": ["x", None], "m": {"k": 1, "n": None}, "r": {"x": 1.0, "y": []}})
    assert out == b'{"a":["x",null],"m":{"k":1,"n":null},"r":{"x":1.0,"y":[]}}'


def test_map_null_keys() -> None:
    t = MapType(key=StringType(), value=IntType())
    with pytest.raises(EncodeError, match="null keys"):
        enc(t, {None: 1})
    assert body(t, {None: 1, "a": 2}, **{"map-null-key.mode": "DROP"}) == '{"a":2}'
    assert body(t, {None: 1}, **{"map-null-key.mode": "LITERAL",
                                 "map-null-key.literal": "N/A"}) == '{"N/A":1}'


# --- strings: Jackson's UTF8JsonGenerator -----------------------------------------------------


@pytest.mark.parametrize(("s", "text"), [
    ("a\nb\tc\bd\fe\rf", '"a\\nb\\tc\\bd\\fe\\rf"'),
    ("\x00\x01\x1f", '"\\u0000\\u0001\\u001F"'),
    ('q"b\\s/', '"q\\"b\\\\s/"'),
    ("\x7f\u2028\u2029", '"\x7f\u2028\u2029"'),  # DEL, U+2028/9: raw
    ("é€中", '"é€中"'),  # BMP: raw UTF-8
    ("😀", '"\\uD83D\\uDE00"'),  # beyond U+FFFF: escaped surrogate pair, as Jackson does
])
def test_string_escaping(s: str, text: str) -> None:
    assert json_string(s) == text
    assert body(StringType(), s) == text


def test_non_ascii_is_raw_utf8() -> None:
    assert enc(StringType(), "é") == '{"f":"é"}'.encode()


# --- decoding ----------------------------------------------------------------------------------


def dec(t: DataType, text: str, **options: Any) -> Any:
    out = create_codec("json", row(("f", t)), options).decode(('{"f":' + text + "}").encode())
    return None if out is None else out["f"]


def test_decode_accepts_strings_for_numbers() -> None:
    assert dec(IntType(), '" 42 "') == 42
    assert dec(BigIntType(), "12.9") == 12  # Jackson truncates a float for INT/BIGINT
    assert dec(DoubleType(), '"1.5"') == 1.5
    assert math.isnan(dec(DoubleType(), '"NaN"'))
    assert dec(DecimalType(precision=5, scale=2), '"1.005"') == Decimal("1.01")
    assert dec(BooleanType(), '"TRUE"') is True
    assert dec(StringType(), "12.50") == "12.50"
    assert dec(StringType(), '{"a": [1, true]}') == '{"a":[1,true]}'


@pytest.mark.parametrize(("t", "text"), [
    (DecimalType(precision=3, scale=2), "123.4"),  # Flink reads a null: never silently
    (DecimalType(precision=10, scale=2), '"1e400"'),
    (DecimalType(precision=10, scale=2), "1e999999999"),
    (DoubleType(), "1e999"),  # overflow is not infinity ("Infinity" is)
    (DoubleType(), '"-1e999"'),
    (FloatType(), "1e39"),
    (BooleanType(), "1"),  # Flink's Boolean.parseBoolean says false: keyguard refuses to guess
    (BooleanType(), '"yes"'),
    (IntType(), "1e300"),
])
def test_decode_rejects_values_outside_the_type(t: DataType, text: str) -> None:
    with pytest.raises(DecodeError, match="field 'f'"):
        dec(t, text)


def test_decode_missing_and_errors() -> None:
    t = row(("a", IntType()), ("b", StringType()))
    assert create_codec("json", t).decode(b'{"a":1}') == {"a": 1, "b": None}
    with pytest.raises(DecodeError, match="missing"):
        create_codec("json", t, {"fail-on-missing-field": "true"}).decode(b'{"a":1}')
    with pytest.raises(DecodeError):
        create_codec("json", t).decode(b'{"a":"x"}')
    with pytest.raises(DecodeError):
        create_codec("json", t).decode(b"not json")
    with pytest.raises(DecodeError):
        create_codec("json", t).decode(b"[1]")
    lenient = create_codec("json", t, {"ignore-parse-errors": "true"})
    assert lenient.decode(b'{"a":"x","b":"y"}') == {"a": None, "b": "y"}
    assert lenient.decode(b"not json") is None
    with pytest.raises(DecodeError):
        dec(TinyIntType(), "128")


# --- options and plan-time errors -------------------------------------------------------------


def test_options() -> None:
    assert OPTIONS.keys() == [
        "fail-on-missing-field", "ignore-parse-errors", "timestamp-format.standard",
        "map-null-key.mode", "map-null-key.literal", "encode.decimal-as-plain-number",
        "encode.ignore-null-fields", "decode.json-parser.enabled"]
    assert all(o.description for o in OPTIONS)
    with pytest.raises(InvalidOptionError, match="both"):
        create_codec("json", row(("a", IntType())),
                     {"fail-on-missing-field": "true", "ignore-parse-errors": "true"})
    with pytest.raises(InvalidOptionError):
        create_codec("json", row(("a", IntType())), {"json.fail-on-missing-field": "true"})
    with pytest.raises(UnsupportedTypeError):
        create_codec("json", row(("m", MapType(key=IntType(), value=IntType()))))


@pytest.mark.parametrize(("t", "value", "why"), [
    (IntType(), 2**31, "out of range"), (TinyIntType(), -129, "out of range"),
    (BigIntType(), "12", "not an integer"), (IntType(), True, "not an integer"),
    (IntType(), 1.5, "not an integer"), (DecimalType(precision=4, scale=2), Decimal("100"),
                                          "more than 4 digits"),
    (DecimalType(precision=4, scale=2), Decimal("NaN"), "not a finite"),
    (StringType(), 1, "not a string"), (FloatType(), 1e39, "out of range"),
    (TimestampType(), dt.datetime(2024, 1, 1, tzinfo=UTC), "time zone"),
    (DateType(), dt.datetime(2024, 1, 1), "not a datetime.date"),
])
def test_encode_errors_name_the_column(t: DataType, value: Any, why: str) -> None:
    with pytest.raises(EncodeError, match=why) as info:
        create_codec("json", row(("outer", row(("col", t), nullable=True))),
                     context=None).encode({"outer": {"col": value}})
    assert "'outer.col'" in info.value.message and "json" in info.value.message
    assert info.value.hint


# --- round trips and encode_batch == encode ---------------------------------------------------

_NAMES = st.text(alphabet="abcxyz_é", min_size=1, max_size=5)
_TEXT = st.text(max_size=12)
_F32 = st.floats(width=32, allow_nan=False)


def _values(t: DataType) -> st.SearchStrategy[Any]:
    if isinstance(t, StringType):
        return _TEXT
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, (TinyIntType, SmallIntType, IntType, BigIntType)):
        return st.integers(t.min_value, t.max_value)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, FloatType):
        return _F32
    if isinstance(t, DecimalType):
        return st.decimals(min_value=-(10 ** (t.precision - t.scale)) + 1,
                           max_value=10 ** (t.precision - t.scale) - 1, places=t.scale,
                           allow_nan=False, allow_infinity=False)
    if isinstance(t, DateType):
        return st.dates()
    if isinstance(t, TimeType):
        return st.times().map(lambda v: v.replace(microsecond=0))
    if isinstance(t, (TimestampType, TimestampLtzType)):
        unit = 10 ** (6 - t.precision)
        s = st.datetimes().map(lambda v: v.replace(microsecond=v.microsecond // unit * unit))
        return s.map(lambda v: v.replace(tzinfo=UTC)) if isinstance(t, TimestampLtzType) else s
    if isinstance(t, BytesType):
        return st.binary(max_size=8)
    if isinstance(t, ArrayType):
        return st.lists(_nullable(t.element), max_size=3)
    if isinstance(t, MapType):
        return st.dictionaries(_TEXT, _nullable(t.value), max_size=3)
    assert isinstance(t, RowType)
    return st.fixed_dictionaries({f.name: _nullable(f.type) for f in t.fields})


def _nullable(t: DataType) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), _values(t)) if t.nullable else _values(t)


_ATOMS = st.sampled_from([
    StringType(), BooleanType(), TinyIntType(), SmallIntType(), IntType(), BigIntType(),
    DoubleType(), FloatType(), DecimalType(precision=10, scale=2),
    DecimalType(precision=38, scale=10), DecimalType(precision=5, scale=0), DateType(),
    TimeType(), TimestampType(precision=3), TimestampType(precision=6),
    TimestampLtzType(precision=6), BytesType()])
_TYPES = st.recursive(_ATOMS, lambda inner: st.one_of(
    inner.map(lambda e: ArrayType(element=e)),
    inner.map(lambda v: MapType(key=StringType(), value=v)),
    st.lists(st.tuples(_NAMES, inner), min_size=1, max_size=3, unique_by=lambda p: p[0]).map(
        lambda fs: row(*fs, nullable=True))), max_leaves=4)
_ROW_TYPES = st.lists(st.tuples(_NAMES, _TYPES), min_size=1, max_size=4,
                      unique_by=lambda p: p[0]).map(lambda fs: row(*fs))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_round_trip(data: st.DataObject) -> None:
    t = data.draw(_ROW_TYPES)
    iso = data.draw(st.booleans())
    c = create_codec("json", t, {"timestamp-format.standard": "ISO-8601" if iso else "SQL"})
    value = data.draw(_values(t))
    assert c.decode(c.encode(value)) == value


_ARROW_ATOMS = [
    (StringType(), "string"), (BooleanType(), "bool"), (IntType(), "int32"),
    (BigIntType(), "int64"), (DoubleType(), "float64"), (FloatType(), "float32"),
    (DecimalType(precision=10, scale=2), "decimal"), (DecimalType(precision=12, scale=0), "dec0"),
    (TimestampType(precision=6), "ts_us"), (TimestampType(precision=3), "ts_us"),
    (TimestampLtzType(precision=6), "ts_utc"), (DateType(), "date32"),
    (ArrayType(element=IntType()), "list"), (BytesType(), "binary"),
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_encode_batch_equals_encode(data: st.DataObject) -> None:
    pa = pytest.importorskip("pyarrow")
    arrow = {"string": pa.string(), "bool": pa.bool_(), "int32": pa.int32(), "int64": pa.int64(),
             "float64": pa.float64(), "float32": pa.float32(), "decimal": pa.decimal128(10, 2),
             "dec0": pa.decimal128(12, 0), "ts_us": pa.timestamp("us"),
             "ts_utc": pa.timestamp("us", tz="UTC"), "date32": pa.date32(),
             "list": pa.list_(pa.int32()), "binary": pa.binary()}
    picks = data.draw(st.lists(st.sampled_from(range(len(_ARROW_ATOMS))), min_size=1,
                               max_size=6))
    fields = [(f"c{i}", _ARROW_ATOMS[p][0]) for i, p in enumerate(picks)]
    t = row(*fields)
    schema = pa.schema([(n, arrow[_ARROW_ATOMS[p][1]])
                        for (n, _), p in zip(fields, picks, strict=True)])
    rows = data.draw(st.lists(_values(t), min_size=1, max_size=6))
    options = {"encode.ignore-null-fields": data.draw(st.booleans()),
               "encode.decimal-as-plain-number": data.draw(st.booleans()),
               "timestamp-format.standard": data.draw(st.sampled_from(["SQL", "ISO-8601"]))}
    c = create_codec("json", t, options)
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    assert c.encode_batch(batch) == [c.encode(r) for r in batch.to_pylist()]


def test_encode_batch_special_strings_and_decimals() -> None:
    pa = pytest.importorskip("pyarrow")
    t = row(("s", StringType()), ("d", DecimalType(precision=20, scale=10)))
    rows = [{"s": "a\x01😀\"\\", "d": Decimal("1000")}, {"s": "plain", "d": Decimal("0.00000001")},
            {"s": None, "d": Decimal("0")}, {"s": "é", "d": Decimal("-12.5")}]
    batch = pa.RecordBatch.from_pylist(rows, schema=pa.schema(
        [("s", pa.string()), ("d", pa.decimal128(20, 10))]))
    for plain in (False, True):
        c = create_codec("json", t, {"encode.decimal-as-plain-number": plain})
        assert c.encode_batch(batch) == [c.encode(r) for r in rows]


def test_encode_batch_doubles() -> None:
    pa = pytest.importorskip("pyarrow")
    t = row(("x", DoubleType()))
    xs = [float("nan"), float("inf"), -float("inf"), 0.5, -0.25, 1e-4, 1e-3, 1e7, 9999999.5,
          4739.33, 0.1, 2.82879384806159e17, 5e-324, -0.0, 0.0, 1.5, 12.5, None, 8.41e21]
    batch = pa.RecordBatch.from_pylist([{"x": x} for x in xs], schema=pa.schema(
        [("x", pa.float64())]))
    c = create_codec("json", t)
    assert c.encode_batch(batch) == [c.encode({"x": x}) for x in xs]


def test_a_batch_encode_error_names_the_row_and_column() -> None:
    import pyarrow as pa

    c = create_codec("json", row(("k", StringType()), ("c", TinyIntType())))
    batch = pa.RecordBatch.from_pylist([{"k": "a", "c": 1}, {"k": "b", "c": 300}])
    with pytest.raises(EncodeError, match=r"row 1: .*column 'c'.*out of range"):
        c.encode_batch(batch)


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("iso", [False, True])
def test_encode_batch_timestamps(unit: str, iso: bool) -> None:
    """The batch encoder's timestamp text (trailing zeros cut in numpy): years 1 and 9999,
    leap days, before 1970, every precision and unit, nulls, LTZ."""
    pa = pytest.importorskip("pyarrow")
    values = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
              dt.datetime(2000, 2, 29, 12, 0, 0, 120000), dt.datetime(1900, 3, 1, 0, 0, 1, 5),
              dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(1970, 1, 1),
              dt.datetime(2024, 12, 31, 1, 2, 3, 400), None, dt.datetime(2100, 2, 28, 9, 8, 7)]
    if unit == "ns":  # 64-bit nanoseconds span 1677..2262
        values = [v for v in values if v is None or 1678 <= v.year <= 2261]
    opts = {"timestamp-format.standard": "ISO-8601" if iso else "SQL"}
    for p in range(10):
        t = row(("ts", TimestampType(precision=p)), ("ltz", TimestampLtzType(precision=p)))
        batch = pa.RecordBatch.from_arrays(
            [pa.array(values, pa.timestamp("us")).cast(pa.timestamp(unit), safe=False),
             pa.array(values, pa.timestamp("us", tz="UTC")).cast(pa.timestamp(unit, tz="UTC"),
                                                                 safe=False)],
            names=["ts", "ltz"])
        c = create_codec("json", t, opts)
        rows = [{"ts": r["ts"], "ltz": r["ltz"]} for r in batch.to_pylist()] \
            if unit != "ns" else [{"ts": v, "ltz": v and v.replace(tzinfo=UTC)} for v in values]
        assert c.encode_batch(batch) == [c.encode(r) for r in rows], (unit, p)


@pytest.mark.parametrize(("precision", "scale"), [(1, 0), (5, 0), (12, 2), (9, 6), (10, 8),
                                                  (18, 0), (18, 9), (18, 17), (18, 18), (20, 4)])
def test_encode_batch_decimals_digit_by_digit(precision: int, scale: int) -> None:
    """Decimals of precision <= 18 are written digit by digit: zeros, signs, trailing zeros,
    integers ending in 0 (`1E+3`) and tiny values (`1E-7`) as the row encoder writes them."""
    pa = pytest.importorskip("pyarrow")
    rng = __import__("random").Random(precision * 100 + scale)
    top = 10**precision - 1
    unscaled = [0, 1, -1, top, -top, 10, -100, 10**scale, 7 * 10 ** max(0, precision - 1),
                *(rng.randrange(-top, top + 1) for _ in range(60)),
                *(rng.randrange(1, 10**min(precision, 3)) * 10 ** rng.randrange(0, precision)
                  for _ in range(30))]
    values = [None if i % 17 == 5 else Decimal(u if abs(u) <= top else top).scaleb(-scale)
              for i, u in enumerate(unscaled)]
    t = row(("d", DecimalType(precision=precision, scale=scale)))
    batch = pa.RecordBatch.from_arrays([pa.array(values, pa.decimal128(precision, scale))],
                                       names=["d"])
    for plain in (False, True):
        c = create_codec("json", t, {"encode.decimal-as-plain-number": plain})
        assert c.encode_batch(batch) == [c.encode({"d": v}) for v in values]
        assert c.encode_batch(batch.slice(7, 20)) == [c.encode({"d": v}) for v in values[7:27]]


def test_fields_the_row_type_lacks_are_named_as_undeclared() -> None:
    codec = create_codec("json", row(("id", BigIntType()), ("name", StringType())), {})
    data = b'{"id":1,"name":"a","subject":"s","version":2}'
    assert codec.decode(data) == {"id": 1, "name": "a"}  # Flink ignores them on read
    assert codec.undeclared_fields(data) == ("subject", "version")
    assert codec.undeclared_fields(b'{"id":1}') == ()
    assert codec.undeclared_fields(b"not json") == ()  # decode says what is wrong
