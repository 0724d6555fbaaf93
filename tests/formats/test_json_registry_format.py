"""The `json-registry` format against confluent-kafka's JSONSerializer, its frame and registry use.

Byte for byte: the same records through keyguard's codec and through confluent-kafka's
`JSONSerializer` (with the library's mock registry) give the same frame and the same body,
except where Flink's json text (Jackson) and the Python serializer (`json.dumps`, compact,
`ensure_ascii=False`) write a value differently. Flink is the system the topic is shared
with, so keyguard writes Flink's text; each difference is listed in `DIFFERENCES` with its
reason (and in the README), and keyguard reads both texts back to the same row.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, reject, settings
from jsonschema import Draft7Validator
from strategies import rows_of

from keyguard.formats.catalog import FORMAT_ALIASES
from keyguard.formats.codec import (
    CodecContext,
    aliases_of,
    canonical_format,
    create_codec,
    format_factory,
    format_names,
)
from keyguard.formats.errors import (
    DecodeError,
    EncodeError,
    InvalidOptionError,
    RegistryError,
    UnsupportedTypeError,
)
from keyguard.formats.framing import CONFLUENT
from keyguard.formats.json_registry_format import JsonRegistryCodec
from keyguard.formats.plan import resolve_plan
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_plan_schema_ids, bind_schema_id
from keyguard.formats.registry_framed import SchemaIdNotBound
from keyguard.formats.sqltypes import parse_type
from keyguard.formats.types import RowType

_scopes = itertools.count()


@pytest.fixture
def registry() -> Any:
    scope = f"jsonreg-{next(_scopes)}"
    yield MockRegistry(scope)
    MockRegistry.drop_scope(scope)


def row_type(sql: str) -> RowType:
    t = parse_type(f"ROW<{sql}>")
    assert isinstance(t, RowType)
    return t.not_null()


def codec(registry: MockRegistry, sql: str, role: str = "value", **options: Any
          ) -> JsonRegistryCodec:
    c = create_codec("json-registry", row_type(sql), options,
                     CodecContext(role=role, topic="orders", registry=registry))
    assert isinstance(c, JsonRegistryCodec)
    return bind_schema_id(c)


def confluent(c: JsonRegistryCodec, registry: MockRegistry, record: dict[str, Any]) -> bytes:
    """confluent-kafka's JSONSerializer on the same record, same schema, same subject."""
    role = MessageField.KEY if c.context.role == "key" else MessageField.VALUE
    out = JSONSerializer(c.schema_text, registry.client)(
        record, SerializationContext("orders", role))
    assert out is not None
    return out


# (column, keyguard's value, the record value given to JSONSerializer): the same bytes.
SAME: list[tuple[str, Any, Any]] = [
    ("i INT", 42, 42),
    ("i BIGINT", -9223372036854775808, -9223372036854775808),
    ("t TINYINT", -128, -128),
    ("b BOOLEAN", True, True),
    ("s STRING", "plain", "plain"),
    ("s STRING", 'quotes " and \\ backslash', 'quotes " and \\ backslash'),
    ("s STRING", "non-ASCII: grüße, 東京, ñ", "non-ASCII: grüße, 東京, ñ"),
    ("s STRING", "tab\tnewline\n", "tab\tnewline\n"),
    ("s STRING", None, None),
    ("d DOUBLE", 1.5, 1.5),
    ("d DOUBLE", 4739.33, 4739.33),
    ("d DOUBLE", -0.001234, -0.001234),
    ("d DOUBLE", 100.0, 100.0),
    ("d DECIMAL(10, 2)", Decimal("12.50"), 12.5),
    ("d DECIMAL(10, 3)", Decimal("-0.125"), -0.125),
    ("ts TIMESTAMP(3)", dt.datetime(2024, 1, 1, 12, 0, 0, 500000), "2024-01-01 12:00:00.5"),
    ("ts TIMESTAMP(6)", dt.datetime(2024, 2, 29, 23, 59, 59, 123456),
     "2024-02-29 23:59:59.123456"),
    ("ts TIMESTAMP_LTZ(3)", dt.datetime(2024, 1, 1, 0, 0, tzinfo=dt.timezone.utc),
     "2024-01-01 00:00:00Z"),
    ("dd DATE", dt.date(2024, 1, 31), "2024-01-31"),
    ("tm TIME(3)", dt.time(12, 34, 56, 789000), "12:34:56.789"),
    ("by BYTES", b"\x00\xffkey", "AP9rZXk="),
    ("a ARRAY<STRING>", ["a", None, "c"], ["a", None, "c"]),
    ("a ARRAY<BIGINT>", [], []),
    ("m MAP<STRING, INT>", {"x": 1, "y": None}, {"x": 1, "y": None}),
    ("r ROW<a INT, b ROW<c STRING>>", {"a": 1, "b": {"c": "deep"}}, {"a": 1, "b": {"c": "deep"}}),
    ("r ROW<a INT, b STRING>", None, None),
]


@pytest.mark.parametrize(("column", "value", "record"), SAME, ids=[c for c, _, _ in SAME])
def test_same_bytes_as_confluent_kafka_json_serializer(
        registry: MockRegistry, column: str, value: Any, record: Any) -> None:
    c = codec(registry, f"id BIGINT NOT NULL, {column}")
    name = column.split()[0]
    mine = c.encode({"id": 7, name: value})
    theirs = confluent(c, registry, {"id": 7, name: record})
    assert mine == theirs
    assert mine[:5] == CONFLUENT.header_bytes(c.schema_id)
    assert c.decode(theirs) == c.decode(mine)


def test_several_columns_and_the_key_role(registry: MockRegistry) -> None:
    c = codec(registry, "region STRING NOT NULL, id BIGINT NOT NULL", role="key")
    mine = c.encode({"region": "EU", "id": 1})
    assert mine == confluent(c, registry, {"region": "EU", "id": 1})
    assert mine == b"\x00" + c.schema_id.to_bytes(4, "big") + b'{"region":"EU","id":1}'
    assert c.subject == "orders-key"
    assert registry.get_version("orders-key").schema_type == "JSON"


# (column, keyguard's value, the record given to JSONSerializer, Flink's body text, the
# serializer's body text, why they differ).
DIFFERENCES: list[tuple[str, Any, Any, str, str, str]] = [
    ("d DOUBLE", 1e20, 1e20, "1.0E20", "1e+20",
     "Flink writes DOUBLE as Java's Double.toString; Python's repr differs for large values"),
    ("d DOUBLE", 1e7, 1e7, "1.0E7", "10000000.0",
     "Double.toString switches to E notation from 10^7, Python's repr from 10^16"),
    ("d DOUBLE", 1e-5, 1e-5, "1.0E-5", "1e-05",
     "Double.toString writes E notation below 10^-3 with a mantissa '1.0'; Python pads the "
     "exponent to two digits"),
    ("f FLOAT", 0.1, 0.1, "0.1", "0.1",  # equal text: FLOAT is written as Float.toString
     ""),
    ("d DOUBLE", math.nan, math.nan, '"NaN"', "NaN",
     "Jackson quotes non-finite numbers (QUOTE_NON_NUMERIC_NUMBERS); json.dumps writes the "
     "bare token NaN, which is not JSON"),
    ("d DECIMAL(10, 2)", Decimal("1000.00"), 1000.0, "1E+3", "1000.0",
     "Flink writes DECIMAL as BigDecimal.stripTrailingZeros().toString(); JSONSerializer "
     "cannot take a Decimal (json.dumps rejects it), so the record holds a float"),
    ("s STRING", "emoji \U0001F600", "emoji \U0001F600", '"emoji \\uD83D\\uDE00"',
     '"emoji \U0001F600"',
     "Jackson escapes characters beyond U+FFFF as a surrogate pair; json.dumps(ensure_ascii="
     "False) writes their UTF-8 bytes"),
    ("s STRING", "unit\x1fsep", "unit\x1fsep", '"unit\\u001Fsep"', '"unit\\u001fsep"',
     "Jackson writes \\u escapes with upper-case hex digits, json.dumps with lower-case"),
]


def _serializer_uses_orjson() -> bool:
    """Whether the installed JSONSerializer writes with orjson (confluent-kafka 2.16.1 and later
    prefer it when it is installed) rather than `json.dumps`, whose text `DIFFERENCES` lists.

    orjson's text differs again from both (`1e20` or `1e+20` by version, `0.00001`, NaN as
    `null`), so with orjson the test checks what holds for any encoder: the text differs from
    Flink's and means the same value.
    """
    from confluent_kafka.schema_registry.common import json_schema
    return bool(getattr(json_schema, "_HAS_ORJSON", False))


@pytest.mark.parametrize(("column", "value", "record", "flink", "python", "why"), DIFFERENCES,
                         ids=[f"{c}={f}" for c, _, _, f, _, _ in DIFFERENCES])
def test_where_flink_and_the_python_serializer_differ(
        registry: MockRegistry, column: str, value: Any, record: Any, flink: str, python: str,
        why: str) -> None:
    c = codec(registry, column)
    name = column.split()[0]
    mine = c.encode({name: value})
    header = CONFLUENT.header_bytes(c.schema_id)
    assert mine == header + f'{{"{name}":{flink}}}'.encode()
    serializer = JSONSerializer(c.schema_text, registry.client, conf={"validate": False})
    theirs = serializer({name: record}, SerializationContext("orders", MessageField.VALUE))
    assert theirs[:len(header)] == header
    if not _serializer_uses_orjson():
        assert theirs == header + f'{{"{name}":{python}}}'.encode()
    assert (mine == theirs) == (not why), why
    their_value = json.loads(theirs[len(header):])[name]  # json.loads takes the NaN token too
    back = c.decode(mine)
    assert back is not None
    if isinstance(record, float) and math.isnan(record):
        assert math.isnan(back[name])
        if their_value is None:  # orjson writes NaN as null: a different value, read as null
            assert c.decode(theirs) == {name: None}
            return
        assert math.isnan(their_value)
        # The bare token NaN is not JSON: Flink's reader (Jackson) refuses it, and so does keyguard
        with pytest.raises(DecodeError, match="NaN is not valid JSON"):
            c.decode(theirs)
        return
    assert their_value == record, "the serializer's text means the record's value"
    assert c.decode(theirs) == back, "keyguard reads the serializer's text to the same row"


def test_confluent_deserializer_reads_keyguard_bytes(registry: MockRegistry) -> None:
    c = codec(registry, "id BIGINT NOT NULL, name STRING, ts TIMESTAMP(3), "
                        "tags ARRAY<STRING>, amount DECIMAL(10, 2)")
    data = c.encode({"id": 1, "name": "Zoë", "ts": dt.datetime(2024, 5, 1, 8, 30),
                     "tags": ["a"], "amount": Decimal("19.99")})
    read = JSONDeserializer(None, schema_registry_client=registry.client)(
        data, SerializationContext("orders", MessageField.VALUE))
    assert read == {"id": 1, "name": "Zoë", "ts": "2024-05-01 08:30:00", "tags": ["a"],
                    "amount": 19.99}


def test_written_schema_is_the_registered_json_schema(registry: MockRegistry) -> None:
    c = codec(registry, "id BIGINT NOT NULL, ts TIMESTAMP(3)")
    written = c.written_schema()
    assert written.schema_type == "JSON"
    assert written.text == c.schema_text
    assert registry.get_by_id(c.schema_id) == ("JSON", c.schema_text)
    schema = json.loads(written.text)
    assert list(schema["properties"]) == ["id", "ts"] and schema["required"] == ["id"]


def test_timestamp_standard_option_reaches_body_and_schema(registry: MockRegistry) -> None:
    sql = codec(registry, "ts TIMESTAMP(0)")
    iso = create_codec("json-registry", row_type("ts TIMESTAMP(0)"),
                       {"timestamp-format.standard": "ISO-8601", "subject": "iso"},
                       CodecContext(topic="orders", registry=registry))
    bind_schema_id(iso)
    assert iso.schema_id != sql.schema_id  # another schema (the timestamp pattern differs)
    when = {"ts": dt.datetime(2024, 1, 1, 10, 0)}
    assert iso.encode(when)[5:] == b'{"ts":"2024-01-01T10:00:00"}'
    assert sql.encode(when)[5:] == b'{"ts":"2024-01-01 10:00:00"}'


def test_batches_encode_like_rows(registry: MockRegistry) -> None:
    c = codec(registry, "id BIGINT NOT NULL, name STRING")
    rows = [{"id": 1, "name": "a"}, {"id": 2, "name": None}]
    batch = pa.RecordBatch.from_pylist(rows, schema=pa.schema(
        [pa.field("id", pa.int64(), False), pa.field("name", pa.string())]))
    assert c.encode_batch(batch) == [c.encode(r) for r in rows]
    assert c.encode_arrow(batch).to_pylist() == [c.encode(r) for r in rows]


# --- the frame, read back ------------------------------------------------------------------


def test_wrong_magic_byte_is_a_decode_error(registry: MockRegistry) -> None:
    c = codec(registry, "id BIGINT NOT NULL")
    with pytest.raises(DecodeError, match="magic byte is 123, not 0") as err:
        c.decode(b'{"id":1}')
    assert "json format" in (err.value.hint or "")
    with pytest.raises(DecodeError, match="shorter than the 5-byte header"):
        c.decode(b"\x00\x00")


def test_ignore_parse_errors_skips_an_unframed_record(registry: MockRegistry) -> None:
    c = codec(registry, "id BIGINT NOT NULL", **{"ignore-parse-errors": "true"})
    assert c.decode(b'{"id":1}') is None
    assert c.decode(c.encode({"id": 1})) == {"id": 1}


def test_unknown_schema_id_is_a_decode_error(registry: MockRegistry) -> None:
    c = codec(registry, "id BIGINT NOT NULL")
    with pytest.raises(DecodeError, match=r"schema id 999, which mock://\S+ does not hold") as e:
        c.decode(CONFLUENT.header_bytes(999) + b'{"id":1}')
    assert "registry the writer used" in (e.value.hint or "")


def test_an_avro_schema_id_is_a_decode_error(registry: MockRegistry) -> None:
    avro = create_codec("avro-confluent", row_type("id BIGINT NOT NULL"), {},
                        CodecContext(topic="other", registry=registry))
    bind_schema_id(avro)
    c = codec(registry, "id BIGINT NOT NULL")
    with pytest.raises(DecodeError, match=r"schema type is AVRO, not JSON"):
        c.decode(avro.encode({"id": 1}))


def test_encoding_before_the_id_is_bound_is_a_bug(registry: MockRegistry) -> None:
    c = create_codec("json-registry", row_type("id BIGINT NOT NULL"), {},
                     CodecContext(topic="orders", registry=registry))
    with pytest.raises(SchemaIdNotBound):
        c.encode({"id": 1})


# --- options, subjects, registration -------------------------------------------------------


def test_url_is_required_without_a_registry() -> None:
    with pytest.raises(InvalidOptionError, match="required option 'url' is missing"):
        create_codec("json-registry", row_type("id BIGINT"), {}, CodecContext(topic="t"))


def test_unknown_option_names_the_format() -> None:
    with pytest.raises(InvalidOptionError, match=r"'timestamp-format\.standart' \(did you mean"):
        create_codec("json-registry", row_type("id BIGINT"),
                     {"url": "mock://x", "timestamp-format.standart": "SQL"})


def test_given_schema_is_registered_as_is(registry: MockRegistry) -> None:
    text = json.dumps({"title": "com.acme.OrderKey", "type": "object",
                       "properties": {"id": {"type": "integer", "connect.type": "int64"}},
                       "required": ["id"]})
    c = codec(registry, "id BIGINT NOT NULL", role="key", schema=text,
              **{"subject.name.strategy": "RecordNameStrategy"})
    assert c.subject == "com.acme.OrderKey"  # the record name of a JSON Schema: its title
    assert registry.get_version("com.acme.OrderKey").schema == text
    assert c.encode({"id": 3})[5:] == b'{"id":3}'


def test_given_schema_must_describe_the_row(registry: MockRegistry) -> None:
    text = json.dumps({"type": "object", "properties": {"other": {"type": "string"}}})
    with pytest.raises(InvalidOptionError, match=r"describes fields \['other'\]"):
        codec(registry, "id BIGINT NOT NULL", schema=text)


def test_lookup_without_auto_register(registry: MockRegistry) -> None:
    c = create_codec("json-registry", row_type("id BIGINT NOT NULL"),
                     {"auto.register.schemas": "false"},
                     CodecContext(role="key", topic="orders", registry=registry))
    with pytest.raises(RegistryError, match="not registered under subject 'orders-key'"):
        bind_schema_id(c)
    registered = registry.register("orders-key", c.schema_text, "JSON")
    assert bind_schema_id(c).schema_id == registered


def test_reregistering_the_same_schema_keeps_its_id(registry: MockRegistry) -> None:
    first = codec(registry, "id BIGINT NOT NULL", role="key")
    again = codec(registry, "id BIGINT NOT NULL", role="key")
    assert first.schema_id == again.schema_id
    changed = codec(registry, "id BIGINT NOT NULL, region STRING", role="key")
    assert changed.schema_id != first.schema_id
    assert registry.versions("orders-key") == [1, 2]


# --- aliases -------------------------------------------------------------------------------


def test_aliases_resolve_to_their_format() -> None:
    assert format_factory("avro-registry") is format_factory("avro-confluent")
    assert canonical_format("avro-registry") == "avro-confluent"
    assert canonical_format("proto-registry") == "protobuf-registry"
    assert aliases_of("avro-confluent") == ["avro-registry"]
    assert set(FORMAT_ALIASES).isdisjoint(format_names())  # an alias is never a format itself


def test_an_alias_of_a_missing_format_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    assert format_factory("proto-registry") is format_factory("protobuf-registry")
    monkeypatch.setitem(FORMAT_ALIASES, "thrift-registry", "thrift")
    with pytest.raises(InvalidOptionError, match="'thrift-registry' \\(an alias of "
                                                 "'thrift'"):
        format_factory("thrift-registry")


def test_alias_option_prefix_works_like_the_format_s(registry: MockRegistry) -> None:
    table = row_type("id BIGINT NOT NULL, name STRING")
    options = {"topic": "orders", "primary-key": "id",
               "key.format": "avro-registry", "key.avro-registry.subject": "k",
               "value.format": "json-registry", "value.json-registry.subject": "v"}
    plan = resolve_plan(table, options, registry=registry)
    assert (plan.key_format, plan.value_format) == ("avro-confluent", "json-registry")
    key_id, value_id = bind_plan_schema_ids(plan)
    assert registry.get_version("k").schema_type == "AVRO"
    assert registry.get_version("v").schema_type == "JSON"
    key, value = plan.encode({"id": 1, "name": "a"})
    assert CONFLUENT.schema_id(key) == key_id and CONFLUENT.schema_id(value) == value_id
    assert plan.decode(key, value) == {"id": 1, "name": "a"}
    with pytest.raises(InvalidOptionError, match=r"key\.avro-confluent\.subject"):
        resolve_plan(table, {**options, "key.avro-confluent.subject": "k"}, registry=registry)


def test_schema_context_qualifies_the_subject(registry: MockRegistry) -> None:
    # Confluent Cloud Flink DDL: 'value.json-registry.schema-context' = '.flink-dev'
    c = codec(registry, "id BIGINT NOT NULL", **{"schema-context": ".flink-dev"})
    assert c.subject == ":.flink-dev:orders-value"
    assert registry.get_version(":.flink-dev:orders-value").schema_id == c.schema_id
    named = codec(registry, "id BIGINT NOT NULL", subject="s",
                  **{"schema-context": ".flink-dev"})
    assert named.subject == ":.flink-dev:s"


def test_schema_context_must_be_a_context_name() -> None:
    with pytest.raises(InvalidOptionError, match="schema-context"):
        create_codec("json-registry", row_type("id BIGINT"),
                     {"url": "mock://x", "schema-context": "flink-dev"})


def test_avro_registry_takes_the_schema_context_too(registry: MockRegistry) -> None:
    avro = create_codec("avro-registry", row_type("id BIGINT NOT NULL"),
                        {"schema-context": ".flink-dev"},
                        CodecContext(role="key", topic="orders", registry=registry))
    assert avro.subject == ":.flink-dev:orders-key"  # type: ignore[attr-defined]


# --- properties: the json format's body, in the frame; the registered schema accepts it ------


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(rows_of(max_rows=3))
def test_body_is_the_json_format_s_and_reads_back(case: tuple[RowType, list[dict[str, Any]]]
                                                  ) -> None:
    table, rows = case
    registry = MockRegistry("jsonreg-property")
    try:
        plain = create_codec("json", table, {}, CodecContext(topic="orders"))
        framed = create_codec("json-registry", table, {},
                              CodecContext(topic="orders", registry=registry))
    except (UnsupportedTypeError, InvalidOptionError):
        reject()  # a type the json format cannot write (a non-string map key)
    assert isinstance(framed, JsonRegistryCodec)
    bind_schema_id(framed)
    validator = Draft7Validator(json.loads(framed.schema_text))
    for row in rows:
        try:
            body = plain.encode(row)
        except EncodeError:
            reject()
        data = framed.encode(row)
        assert data == CONFLUENT.header_bytes(framed.schema_id) + body
        assert framed.decode(data) == plain.decode(body)
        errors = [e.message for e in validator.iter_errors(json.loads(body))]
        assert not errors, f"the registered schema rejects Flink's text {body!r}: {errors}"
