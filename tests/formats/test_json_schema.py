"""Row type <-> JSON Schema: Confluent's shape, round trips, validation of Flink json rows."""

import base64
import datetime as dt
import importlib.util
import json
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats import javatext
from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.json_schema import DRAFT_07, from_json_schema, to_json_schema
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
    row,
)

ATOMIC: list[DataType] = [
    StringType(), BooleanType(), TinyIntType(), SmallIntType(), IntType(), BigIntType(),
    FloatType(), DoubleType(), DecimalType(precision=10, scale=2), DateType(),
    TimeType(precision=3), TimestampType(precision=3), TimestampLtzType(precision=6), BytesType(),
]


def test_confluent_connect_shape():
    s = to_json_schema(row(("id", IntType().not_null()), ("name", StringType())), title="User")
    assert s == {
        "$schema": DRAFT_07,
        "title": "User",
        "type": "object",
        "properties": {
            "id": {"type": "integer", "connect.type": "int32", "connect.index": 0},
            "name": {"oneOf": [{"type": "null"}, {"type": "string"}], "connect.index": 1},
        },
        "required": ["id"],
    }


def test_type_keywords():
    props = to_json_schema(row(*[(f"c{i}", t.not_null()) for i, t in enumerate(ATOMIC)]))[
        "properties"]
    assert props["c2"]["connect.type"] == "int8"
    assert props["c5"]["connect.type"] == "int64"
    assert props["c6"] == {"type": "number", "connect.type": "float32", "connect.index": 6}
    assert props["c8"]["title"] == "org.apache.kafka.connect.data.Decimal"
    assert props["c8"]["connect.parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert props["c9"]["format"] == "date"
    assert props["c13"]["contentEncoding"] == "base64"
    assert props["c13"]["connect.type"] == "bytes"
    m = to_json_schema(row(("m", MapType(key=StringType(), value=IntType()).not_null())))
    assert m["properties"]["m"]["additionalProperties"] == {
        "oneOf": [{"type": "null"}, {"type": "integer", "connect.type": "int32"}]}
    iso = to_json_schema(row(("t", TimestampLtzType(precision=3).not_null())),
                         timestamp_format="ISO-8601")
    assert iso["properties"]["t"]["format"] == "date-time"


def test_generated_schemas_are_valid_draft_07():
    s = to_json_schema(row(*[(f"c{i}", t) for i, t in enumerate(ATOMIC)]))
    jsonschema.Draft7Validator.check_schema(s)


# --- round trip model -> schema -> model --------------------------------------------------------

def _types(depth: int = 2) -> st.SearchStrategy[DataType]:
    atomic = st.sampled_from(ATOMIC).flatmap(
        lambda t: st.booleans().map(t.with_nullable))
    if depth == 0:
        return atomic
    inner = _types(depth - 1)
    return st.one_of(
        atomic,
        st.builds(lambda e, n: ArrayType(element=e, nullable=n), inner, st.booleans()),
        st.builds(lambda v, n: MapType(key=StringType(), value=v, nullable=n), inner,
                  st.booleans()),
        st.builds(lambda fs, n: RowType(fields=fs, nullable=n), _fields(inner), st.booleans()),
    )


def _fields(types: st.SearchStrategy[DataType]) -> st.SearchStrategy[tuple[Field, ...]]:
    return st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True), types),
                    min_size=1, max_size=4, unique_by=lambda p: p[0]).map(
        lambda ps: tuple(Field(n, t) for n, t in ps))


@settings(max_examples=80, deadline=None)
@given(_fields(_types()))
def test_round_trip(fields):
    t = RowType(fields=fields, nullable=False)
    s = to_json_schema(t, title="T")
    jsonschema.Draft7Validator.check_schema(s)
    assert from_json_schema(json.loads(json.dumps(s))) == t


# --- validating Flink json rows -----------------------------------------------------------------

def flink_json(t: DataType, v: Any) -> Any:
    """The JSON value Flink's json format writes (ENVIRONMENT.md's rules)."""
    if v is None:
        return None
    if isinstance(t, DecimalType):
        return json.loads(javatext.bigdecimal_to_string(
            javatext.bigdecimal_strip_trailing_zeros(v)))
    if isinstance(t, DateType):
        return javatext.format_date(v)
    if isinstance(t, TimeType):
        return javatext.format_sql_time(v)
    if isinstance(t, TimestampType):
        return javatext.format_sql_timestamp(v)
    if isinstance(t, TimestampLtzType):
        return javatext.format_sql_timestamp(v.astimezone(dt.timezone.utc)) + "Z"
    if isinstance(t, BytesType):
        return base64.b64encode(v).decode()
    if isinstance(t, ArrayType):
        return [flink_json(t.element, e) for e in v]
    if isinstance(t, MapType):
        return {k: flink_json(t.value, e) for k, e in v.items()}
    if isinstance(t, RowType):
        return {f.name: flink_json(f.type, v.get(f.name)) for f in t.fields}
    return v


def _value(t: DataType) -> st.SearchStrategy[Any]:
    base: st.SearchStrategy[Any]
    if isinstance(t, StringType):
        base = st.text(max_size=5)
    elif isinstance(t, BooleanType):
        base = st.booleans()
    elif isinstance(t, (TinyIntType, SmallIntType, IntType, BigIntType)):
        base = st.integers(t.min_value, t.max_value)
    elif isinstance(t, (FloatType, DoubleType)):
        base = st.floats(allow_nan=False, allow_infinity=False, width=32)
    elif isinstance(t, DecimalType):
        base = st.decimals(-(10**7), 10**7, places=2)
    elif isinstance(t, DateType):
        base = st.dates(min_value=dt.date(1000, 1, 1))
    elif isinstance(t, TimeType):
        base = st.times()
    elif isinstance(t, TimestampType):
        base = st.datetimes(min_value=dt.datetime(1000, 1, 1))
    elif isinstance(t, TimestampLtzType):
        base = st.datetimes(min_value=dt.datetime(1000, 1, 2), timezones=st.just(dt.timezone.utc))
    elif isinstance(t, BytesType):
        base = st.binary(max_size=5)
    elif isinstance(t, ArrayType):
        base = st.lists(_value(t.element), max_size=3)
    elif isinstance(t, MapType):
        base = st.dictionaries(st.text(max_size=3), _value(t.value), max_size=3)
    else:
        assert isinstance(t, RowType)
        base = st.fixed_dictionaries({f.name: _value(f.type) for f in t.fields})
    return st.one_of(st.none(), base) if t.nullable else base


@settings(max_examples=40, deadline=None)
@given(_fields(_types()).flatmap(
    lambda fs: st.tuples(st.just(RowType(fields=fs, nullable=False)),
                         _value(RowType(fields=fs, nullable=False)))))
def test_flink_json_rows_validate_against_the_generated_schema(case):
    t, v = case
    validator = jsonschema.Draft7Validator(to_json_schema(t),
                                           format_checker=jsonschema.FormatChecker())
    validator.validate(json.loads(json.dumps(flink_json(t, v))))


def test_environment_json_row_validates_and_wrong_rows_do_not():
    t = row(("b", StringType().not_null()), ("a", IntType().not_null()),
            ("d", DecimalType(precision=6, scale=2)), ("ts", TimestampType(precision=3)))
    v = jsonschema.Draft7Validator(to_json_schema(t))
    v.validate(json.loads('{"b":"B1","a":1,"d":1E+3,"ts":"2024-01-01 00:00:00.12"}'))
    v.validate(json.loads('{"b":"B1","a":1,"d":null,"ts":null}'))
    v.validate(json.loads('{"b":"B1","a":1}'))  # json.encode.ignore-null-fields
    for bad in ['{"a":1}', '{"b":"B1","a":"1"}', '{"b":"B1","a":1,"ts":"2024-01-01T00:00:00"}']:
        assert not v.is_valid(json.loads(bad))


@pytest.mark.skipif(importlib.util.find_spec("keyguard.formats.json_format") is None,
                    reason="keyguard.formats.json_format not written yet")
def test_rows_of_the_json_codec_validate():
    from keyguard.formats.codec import create_codec

    t = row(("k", StringType().not_null()), ("d", DecimalType(precision=6, scale=2)),
            ("ts", TimestampType(precision=3)), ("x", ArrayType(element=DoubleType())))
    c = create_codec("json", t)
    data = c.encode({"k": "a", "d": Decimal("1000.00"),
                     "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 120000), "x": [1e20]})
    jsonschema.Draft7Validator(to_json_schema(t)).validate(json.loads(data))


# --- JSON Schema -> model, best effort ------------------------------------------------------------

def test_reads_confluent_connect_schemas_without_required():
    s = {"type": "object", "title": "x", "properties": {
        "a": {"type": "integer", "connect.index": 1},
        "b": {"type": "string", "connect.index": 0},
        "c": {"oneOf": [{"type": "null"}, {"type": "number", "connect.type": "float32"}],
              "connect.index": 2},
        "d": {"type": "string", "connect.type": "bytes", "connect.index": 3}}}
    assert from_json_schema(s) == row(("b", StringType().not_null()),
                                      ("a", BigIntType().not_null()), ("c", FloatType()),
                                      ("d", BytesType().not_null()))


def test_reads_type_lists_refs_and_required():
    s = {"type": "object", "required": ["id"],
         "definitions": {"Addr": {"type": "object", "properties": {"city": {"type": "string"}}}},
         "properties": {"id": {"type": "integer"}, "tags": {"type": ["null", "array"],
                                                             "items": {"type": "string"}},
                        "addr": {"$ref": "#/definitions/Addr"},
                        "when": {"type": "string", "format": "date-time"},
                        "kind": {"enum": ["a", "b"]}}}
    assert from_json_schema(s) == row(
        ("id", BigIntType().not_null()), ("tags", ArrayType(element=StringType().not_null())),
        ("addr", row(("city", StringType().not_null()), nullable=True)),
        ("when", TimestampLtzType()), ("kind", StringType()))


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"},
                                                           {"type": "integer"}]}}},
         r"\$\.a: oneOf of 2 non-null schemas"),
        ({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}},
         r"\$\.a: type .* union of 2"),
        ({"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}},
         r"\$\.a: \$ref 'other.json#/x' points outside"),
        ({"type": "object", "properties": {"a": {}}}, r"\$\.a: the schema accepts any value"),
        ({"type": "array", "items": {"type": "string"}}, "not an object"),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "without a single 'items'"),
    ],
)
def test_constructs_without_a_row_type_are_schema_errors(schema, message):
    with pytest.raises(SchemaError, match=message):
        from_json_schema(schema)


def test_non_string_map_keys_are_unsupported():
    with pytest.raises(UnsupportedTypeError, match="column 'm'"):
        to_json_schema(row(("m", MapType(key=IntType(), value=IntType()))))
