"""The registry formats under `framing = confluent-header`, against confluent-kafka's serializers.

confluent-kafka's AvroSerializer / ProtobufSerializer / JSONSerializer with
`header_schema_id_serializer` are the oracle for what a writer puts in the bytes and the headers;
their deserializers (whose default is `dual_schema_id_deserializer`) read what keyguard writes,
and keyguard reads what they write, on one registry (keyguard's mock wraps confluent-kafka's).
"""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry import header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import message_factory

from keyguard.formats.codec import Codec, CodecContext, create_codec
from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.framing import CONFLUENT, CONFLUENT_PROTOBUF_HEADER
from keyguard.formats.plan import resolve_plan
from keyguard.formats.protobuf_schema import descriptor_pool, parse_proto
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_plan_schema_ids, bind_schema_id
from keyguard.formats.sqltypes import parse_type

_SCOPES = itertools.count()
ROW = parse_type("ROW<id BIGINT NOT NULL, name STRING>").not_null()
FIELDS = {"key": MessageField.KEY, "value": MessageField.VALUE}


@pytest.fixture
def registry() -> Any:
    name = f"header-framing-{next(_SCOPES)}"
    yield MockRegistry(name)
    MockRegistry.drop_scope(name)


def _codec(fmt: str, registry: MockRegistry, role: str = "value", **options: Any) -> Any:
    return create_codec(fmt, ROW, {"url": registry.name, **options},
                        CodecContext(role=role, topic="orders",  # type: ignore[arg-type]
                                     registry=registry))


def _context(role: str, headers: list[tuple[str, bytes | None]]) -> SerializationContext:
    return SerializationContext("orders", FIELDS[role], headers)


@pytest.mark.parametrize("role", ["key", "value"])
def test_avro_confluent_header_framing_is_what_avro_serializer_writes(
        registry: MockRegistry, role: str) -> None:
    ours = bind_schema_id(_codec("avro-confluent", registry, role, framing="confluent-header"),
                          registry)
    row = {"id": 7, "name": "ada"}
    data, headers = ours.encode(row), list(ours.record_headers())
    serializer = AvroSerializer(registry.client, ours.schema_text,
                                conf={"schema.id.serializer": header_schema_id_serializer})
    theirs_headers: list[tuple[str, bytes | None]] = []
    theirs = serializer(row, _context(role, theirs_headers))
    assert (data, headers) == (theirs, theirs_headers)
    assert headers == [(f"__{role}_schema_id", b"\x01" + uuid.UUID(str(ours.guid)).bytes)]
    # the bytes are the bare Avro body: the prefix framing's record without its 5 bytes
    assert data == bind_schema_id(_codec("avro-confluent", registry, role), registry) \
        .encode(row)[5:]
    # Each reads the other's record: keyguard's decode takes the headers, theirs is dual.
    assert ours.decode_record(theirs, theirs_headers) == row
    assert AvroDeserializer(registry.client)(data, _context(role, list(headers))) == row
    # A reader configured for the bytes' frame reads the header too, as Confluent's does.
    assert _codec("avro-confluent", registry, role).decode_record(data, headers) == row


def test_json_registry_header_framing_writes_the_guid_and_reads_json_serializers_records(
        registry: MockRegistry) -> None:
    ours = bind_schema_id(_codec("json-registry", registry, framing="confluent-header"),
                          registry)
    row = {"id": 3, "name": None}
    data, headers = ours.encode(row), list(ours.record_headers())
    assert data == b'{"id":3,"name":null}'  # Flink's json text, bare
    serializer = JSONSerializer(ours.schema_text, registry.client,
                                conf={"schema.id.serializer": header_schema_id_serializer})
    theirs_headers: list[tuple[str, bytes | None]] = []
    theirs = serializer(row, _context("value", theirs_headers))
    assert theirs_headers == headers  # the same schema, the same GUID, the same header
    assert json.loads(theirs) == json.loads(data)  # Python's json spaces its separators
    assert ours.decode_record(theirs, theirs_headers) == row
    assert JSONDeserializer(ours.schema_text, schema_registry_client=registry.client)(
        data, _context("value", list(headers))) == row


def test_protobuf_registry_header_framing_puts_the_message_index_in_the_header(
        registry: MockRegistry) -> None:
    ours = _codec("protobuf-registry", registry, framing="confluent-header")
    pool = descriptor_pool(parse_proto(ours.schema_text))
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(ours.message.full_name))
    serializer = ProtobufSerializer(cls, registry.client, {
        "use.deprecated.format": False, "schema.id.serializer": header_schema_id_serializer})
    theirs_headers: list[tuple[str, bytes | None]] = []
    theirs = serializer(cls(id=5, name="x"), _context("value", theirs_headers))
    registered = registry.get_version("orders-value")
    ours.bind_schema_id(registered.schema_id, registered.guid)
    row = {"id": 5, "name": "x"}
    assert (ours.encode(row), list(ours.record_headers())) == (theirs, theirs_headers)
    assert theirs_headers[0][1] == b"\x01" + uuid.UUID(registered.guid).bytes + b"\x00"
    assert ours.decode_record(theirs, theirs_headers) == row
    back = ProtobufDeserializer(cls, {"use.deprecated.format": False})(
        ours.encode(row), _context("value", theirs_headers))
    assert (back.id, back.name) == (5, "x")
    assert ours.frame == CONFLUENT_PROTOBUF_HEADER.for_role("value")
    assert ours.frame.header_name == "__value_schema_id" and ours.frame.with_index


def test_the_plan_adds_each_sides_header_and_a_tombstone_only_the_keys(
        registry: MockRegistry) -> None:
    table = parse_type("ROW<id BIGINT NOT NULL, name STRING>").not_null()
    plan = resolve_plan(table, {
        "topic": "orders", "primary-key": "id", "key.format": "avro-confluent",
        "value.format": "avro-confluent", "key.avro-confluent.url": registry.name,
        "value.avro-confluent.url": registry.name,
        "key.avro-confluent.framing": "confluent-header",
        "value.avro-confluent.framing": "confluent-header"}, registry=registry)
    bind_plan_schema_ids(plan, registry)
    headers = plan.record_headers()
    assert [n for n, _ in headers] == ["__key_schema_id", "__value_schema_id"]
    assert [n for n, _ in plan.record_headers(tombstone=True)] == ["__key_schema_id"]
    key, value = plan.encode({"id": 1, "name": "a"})
    assert plan.decode(key, value, headers) == {"id": 1, "name": "a"}
    assert plan.decode(key, None, headers[:1]) == {"id": 1, "name": None}


def test_prefix_framing_is_the_default_and_an_unknown_framing_is_refused(
        registry: MockRegistry) -> None:
    codec: Codec = _codec("avro-confluent", registry)
    assert codec.frame == CONFLUENT.for_role("value")  # type: ignore[attr-defined]
    bind_schema_id(codec, registry)
    assert codec.record_headers() == ()
    with pytest.raises(InvalidOptionError, match="framing"):
        _codec("avro-confluent", registry, framing="glue")
    with pytest.raises(InvalidOptionError, match="carries no Protobuf message index"):
        _codec("protobuf-registry", registry, framing="apicurio")
