"""Confluent's header framing through the Spark writer and reader, against confluent-kafka.

confluent-kafka's AvroSerializer with `header_schema_id_serializer` (the schema's GUID in
`__key_schema_id` / `__value_schema_id`, the bytes the bare body) is the oracle for what the
Spark writer puts in a record; its AvroDeserializer (dual by default) reads the topic back; the
Spark reader reads what confluent-kafka's producers write, in any of Confluent's framings (for
Protobuf the oracle is `header_schema_id_serializer` over the Protobuf runtime's bytes). All
of them talk to one registry over HTTP (the suite's fake, with schema GUIDs as Confluent 8.0
has them), on the broker the suite starts.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from broker import new_topic

from keyguard.guard.offsets import KafkaRanges, Record

KEY_HEADER, VALUE_HEADER = "__key_schema_id", "__value_schema_id"
H = "headers array<struct<key:string,value:binary>>"

# confluent-kafka's AvroDeserializer refuses a record of 5 bytes or fewer even when its id is
# in a header: the keys here are longer.
K1, K2, K3, K4, K5, K6 = (f"order-{i}" for i in range(1, 7))
# (id, name, change kind): the last change of key 2 deletes it.
CHANGES = [(K1, "a", "+I"), (K2, "b", "+I"), (K1, "a2", "+U"), (K3, None, "+I"),
           (K2, "b", "-D")]


@pytest.fixture
def registry(fake_registry: Any) -> Any:
    fake_registry.state.guids = True
    return fake_registry


def _client(url: str) -> Any:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": url})


def _options(bootstrap: str, topic: str, url: str, **extra: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap, "primary-key": "id",
            "key.format": "avro-confluent", "value.format": "avro-confluent",
            "key.avro-confluent.url": url, "value.avro-confluent.url": url, **extra}


HEADER_FRAMING = {"key.avro-confluent.framing": "confluent-header",
                  "value.avro-confluent.framing": "confluent-header"}


def _records(bootstrap: str, topic: str) -> list[Record]:
    kafka = KafkaRanges(bootstrap)
    return [rec for r in kafka.capture(topic) for batch in kafka.read(r, headers=True)
            for rec in batch]


def _serializers(client: Any, topic: str, **conf: Any) -> tuple[Any, Any]:
    """confluent-kafka's key and value AvroSerializers for the topic's latest schemas, the
    GUID written in the header."""
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry.avro import AvroSerializer

    conf = {"auto.register.schemas": False, "use.latest.version": True,
            "schema.id.serializer": header_schema_id_serializer, **conf}
    return tuple(AvroSerializer(client, client.get_latest_version(f"{topic}-{role}")
                                .schema.schema_str, conf=conf)
                 for role in ("key", "value"))  # type: ignore[return-value]


def _serialized(key_ser: Any, value_ser: Any, topic: str, key: dict[str, Any],
                value: dict[str, Any] | None, headers: list[tuple[str, bytes | None]],
                ) -> tuple[bytes, bytes | None, list[tuple[str, bytes | None]]]:
    """What confluent-kafka's SerializingProducer sends: the key serializer, then the value
    serializer, each adding its header to the headers given to produce."""
    from confluent_kafka.serialization import MessageField, SerializationContext

    ctx = SerializationContext(topic, MessageField.KEY, headers)
    key_bytes = key_ser(key, ctx)
    ctx.field = MessageField.VALUE
    return key_bytes, value_ser(value, ctx), headers


def _deserialized(bootstrap: str, topic: str, client: Any) -> dict[str, Any]:
    """The topic folded to its table by confluent-kafka's DeserializingConsumer."""
    from confluent_kafka import DeserializingConsumer, TopicPartition
    from confluent_kafka.error import ConsumeError
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    parts = len(KafkaRanges(bootstrap).capture(topic))
    consumer = DeserializingConsumer({
        "bootstrap.servers": bootstrap, "group.id": "header-framing",
        "enable.auto.commit": False, "enable.partition.eof": True,
        "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10,
        "key.deserializer": AvroDeserializer(client),
        "value.deserializer": AvroDeserializer(client)})
    # Offset 0, reset to the earliest: OFFSET_BEGINNING costs a 0.5 s ListOffsets round first;
    # a fetch at a partition's end answers at once instead of after 500 ms.
    consumer.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    table: dict[str, Any] = {}
    ended: set[int] = set()
    deadline = time.monotonic() + 30
    try:
        while len(ended) < parts:
            assert time.monotonic() < deadline, f"topic {topic} not read to its end in time"
            try:
                msg = consumer.poll(0.05)
            except ConsumeError as exc:  # DeserializingConsumer raises the end of a partition
                assert exc.code == -191, exc  # _PARTITION_EOF
                ended.add(exc.kafka_message.partition())
                continue
            if msg is None:
                continue
            key = msg.key()["id"]
            if msg.value() is None:
                table.pop(key, None)
            else:
                table[key] = msg.value()["name"]
    finally:
        consumer.close()
    return table


def _spark_table(spark: Any, options: dict[str, str], **extra: str) -> dict[str, Any]:
    rows = spark.read.format("upsert-kafka").options(**options, **extra).load().collect()
    return {r["id"]: r["name"] for r in rows}


def _expected_table(changes: list[tuple[str, str | None, str]]) -> dict[str, str | None]:
    table: dict[str, str | None] = {}
    for i, name, kind in changes:
        if kind == "-D":
            table.pop(i, None)
        else:
            table[i] = name
    return table


def test_the_spark_writer_writes_what_confluent_kafkas_header_serializers_write(
        spark: Any, kafka_bootstrap: str, registry: Any) -> None:
    pytest.importorskip("pandas", reason="pyspark's mapInArrow needs pandas on the driver")
    from keyguard import sparkio

    topic = new_topic(kafka_bootstrap, 2)
    options = _options(kafka_bootstrap, topic, registry.url, **HEADER_FRAMING)
    df = spark.createDataFrame(CHANGES, "id string not null, name string, op string")
    summary = sparkio.write_upsert(df, **options, **{"changelog.column": "op"})
    assert (summary.upserts, summary.tombstones) == (4, 1)

    client = _client(registry.url)
    key_ser, value_ser = _serializers(client, topic)
    expected: dict[str, list[Any]] = {}
    for i, name, kind in CHANGES:  # the changes of one key, in order
        value = None if kind == "-D" else {"id": i, "name": name}
        expected.setdefault(i, []).append(
            _serialized(key_ser, value_ser, topic, {"id": i}, value, []))
    ids = {recs[0][0]: i for i, recs in expected.items()}  # key bytes -> id
    got: dict[str, list[Any]] = {}
    for rec in _records(kafka_bootstrap, topic):
        got.setdefault(ids[rec.key], []).append((rec.key, rec.value, list(rec.headers)))
    assert got == expected
    key_guid = client.get_latest_version(f"{topic}-key").guid
    tombstone = expected[K2][-1]
    assert tombstone[1] is None and [n for n, _ in tombstone[2]] == [KEY_HEADER]
    assert expected[K1][0][2][0][1] == _guid_header(key_guid)
    # The bytes are the bare Avro bodies: no magic byte, no id.
    assert all(not k.startswith(b"\x00") for k, *_ in expected[K1])

    # confluent-kafka's dual deserializer reads the table back; so does the Spark reader.
    table = _expected_table(CHANGES)
    assert table == {K1: "a2", K3: None}
    assert _deserialized(kafka_bootstrap, topic, client) == table
    assert _spark_table(spark, options) == table
    log = (spark.read.format("upsert-kafka").options(**options, **{"scan.mode": "changelog"})
           .load().collect())
    assert [(r["op"], r["name"]) for r in log if r["id"] == K2] == [("+I", "b"), ("-D", "b")]


def _guid_header(guid: str) -> bytes:
    import uuid

    return b"\x01" + uuid.UUID(guid).bytes


def test_a_rows_own_headers_come_first_then_the_framings(
        spark: Any, kafka_bootstrap: str, registry: Any) -> None:
    topic = new_topic(kafka_bootstrap, 1)
    options = _options(kafka_bootstrap, topic, registry.url, **HEADER_FRAMING)
    own = [{"key": "trace", "value": b"t-1"}, {"key": "tag", "value": None}]
    rows = [(K1, "a", "+I", own), (K2, "b", "+I", None), (K1, "a", "-D", own)]
    df = spark.createDataFrame(rows, f"id string not null, name string, op string, {H}")
    (df.coalesce(1).write.format("upsert-kafka").options(**options, **{"changelog.column": "op"})
     .mode("append").save())

    client = _client(registry.url)
    key_ser, value_ser = _serializers(client, topic)
    expected = [_serialized(key_ser, value_ser, topic, {"id": i},
                            None if kind == "-D" else {"id": i, "name": name},
                            [(h["key"], h["value"]) for h in heads or ()])
                for i, name, kind, heads in rows]
    got = [(r.key, r.value, list(r.headers)) for r in _records(kafka_bootstrap, topic)]
    assert got == expected
    assert [n for n, _ in got[0][2]] == ["trace", "tag", KEY_HEADER, VALUE_HEADER]
    assert [n for n, _ in got[2][2]] == ["trace", "tag", KEY_HEADER]  # the tombstone
    assert _spark_table(spark, options) == {K2: "b"}


KEY_SCHEMA = {"type": "record", "name": "OrderKey", "namespace": "shop",
              "fields": [{"name": "id", "type": "string"}]}
VALUE_SCHEMA = {"type": "record", "name": "Order", "namespace": "shop",
                "fields": [{"name": "id", "type": "string"},
                           {"name": "name", "type": ["null", "string"], "default": None}]}
#: The value schema of another producer, registered under another subject only: its GUID is
#: none the reader's driver resolved.
ELSEWHERE = {**VALUE_SCHEMA, "fields": [*VALUE_SCHEMA["fields"],  # type: ignore[misc]
                                        {"name": "note", "type": "string", "default": ""}]}


def _producers(bootstrap: str, client: Any, topic: str) -> dict[str, Any]:
    """confluent-kafka's SerializingProducers, one per framing: the id in the bytes (the
    default), the GUID in the header, and a value schema of another subject in the header."""
    from confluent_kafka import SerializingProducer
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry.avro import AvroSerializer

    header = {"schema.id.serializer": header_schema_id_serializer}
    elsewhere = {**header, "subject.name.strategy": lambda ctx, name: "elsewhere-value"}

    def producer(key_conf: dict[str, Any], value_schema: dict[str, Any],
                 value_conf: dict[str, Any]) -> Any:
        return SerializingProducer({
            "bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
            "key.serializer": AvroSerializer(client, json.dumps(KEY_SCHEMA), conf=key_conf),
            "value.serializer": AvroSerializer(client, json.dumps(value_schema),
                                               conf=value_conf)})

    return {"prefix": producer({}, VALUE_SCHEMA, {}),
            "header": producer(header, VALUE_SCHEMA, header),
            "elsewhere": producer(header, ELSEWHERE, elsewhere)}


def _guid_in_bytes(bootstrap: str, client: Any, topic: str, i: str, name: str | None) -> None:
    """A record whose key and value carry the schema GUID in their bytes (magic byte 1 and
    the 16 GUID bytes, confluent-kafka's `SchemaId.guid_to_bytes`), no header."""
    from confluent_kafka import Producer

    key_ser, value_ser = _serializers(client, topic)
    key, value, headers = _serialized(key_ser, value_ser, topic, {"id": i},
                                      {"id": i, "name": name}, [])
    found = dict(headers)
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    producer.produce(topic, found[VALUE_HEADER] + value,  # type: ignore[operator]
                     found[KEY_HEADER] + key)  # type: ignore[operator]
    assert producer.flush(10) == 0


def test_the_spark_reader_reads_every_confluent_framing_on_one_topic(
        spark: Any, kafka_bootstrap: str, registry: Any) -> None:
    topic = new_topic(kafka_bootstrap, 2)
    client = _client(registry.url)
    producers = _producers(kafka_bootstrap, client, topic)
    # (producer, id, name): a tombstone (name None) under the header framing deletes key 4
    writes = [("prefix", K1, "a"), ("header", K2, "b"), ("header", K1, "a2"),
              ("guid-bytes", K3, "c"), ("prefix", K4, "d"), ("header", K4, None),
              ("elsewhere", K5, "e"), ("guid-bytes", K2, "b2"), ("prefix", K6, "f")]
    for kind, i, name in writes:
        if kind == "guid-bytes":
            _guid_in_bytes(kafka_bootstrap, client, topic, i, name)
            continue
        value = None if name is None else {"id": i, "name": name, "note": "n"}
        if kind != "elsewhere" and value is not None:
            del value["note"]
        p = producers[kind]
        p.produce(topic, key={"id": i}, value=value, headers=[])
        assert p.flush(10) == 0
    recs = _records(kafka_bootstrap, topic)
    assert len(recs) == len(writes)
    tomb = next(r for r in recs if r.value is None)
    assert [n for n, _ in tomb.headers] == [KEY_HEADER]  # confluent-kafka's tombstone
    assert {r.value[:1] for r in recs if r.value is not None and not r.headers} == \
        {b"\x00", b"\x01"}  # an id, and a GUID, in the bytes

    table = {K1: "a2", K2: "b2", K3: "c", K5: "e", K6: "f"}
    options = _options(kafka_bootstrap, topic, registry.url)  # the default framing reads all
    assert _spark_table(spark, options) == table  # the column-wise fold of each partition
    assert _spark_table(spark, options, **{"scan.fold": "global"}) == table  # record by record
    with_headers = spark.read.format("upsert-kafka").options(
        **options, **{"scan.include-headers": "true"}).load().collect()
    assert {r["id"]: r["name"] for r in with_headers} == table
    assert [h["key"] for r in with_headers if r["id"] == K5 for h in r["headers"]] == \
        [KEY_HEADER, VALUE_HEADER]
    log = (spark.read.format("upsert-kafka").options(**options, **{"scan.mode": "changelog"})
           .load().collect())
    assert [(r["op"], r["name"]) for r in log if r["id"] == K4] == [("+I", "d"), ("-D", "d")]
    # The GUIDs of the topic's subjects were pinned on the driver; only the GUID of the other
    # subject's schema was asked of the registry, by the tasks.
    asked = {path.rsplit("/", 1)[1] for _, path, *_ in registry.state.requests
             if path.startswith("/schemas/guids/")}
    assert asked == {client.get_latest_version("elsewhere-value").guid}


def test_protobuf_registry_writes_what_header_schema_id_serializer_writes(
        spark: Any, kafka_bootstrap: str, registry: Any) -> None:
    """The bytes are the message as the Protobuf runtime serializes it, the header what
    confluent-kafka's `header_schema_id_serializer` makes of the registered GUID and the
    message index; confluent-kafka's ProtobufDeserializer reads the record back."""
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry.common.serde import SchemaId
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf import message_factory

    from keyguard.formats.protobuf_schema import descriptor_pool, parse_proto

    topic = new_topic(kafka_bootstrap, 1)
    options = {"topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
               "primary-key": "id", "key.format": "protobuf-registry",
               "value.format": "protobuf-registry", **{
                   f"{role}.protobuf-registry.{name}": value for role in ("key", "value")
                   for name, value in (("url", registry.url), ("framing", "confluent-header"))}}
    rows = [(K1, "a"), (K2, "b"), (K1, "a2")]
    (spark.createDataFrame(rows, "id string not null, name string").coalesce(1).write
     .format("upsert-kafka").options(**options).mode("append").save())

    client = _client(registry.url)
    classes, ids = {}, {}
    for role, field in (("key", MessageField.KEY), ("value", MessageField.VALUE)):
        latest = client.get_latest_version(f"{topic}-{role}")
        schema = parse_proto(latest.schema.schema_str)
        name = f"{schema.file.package}.{schema.file.message_type[0].name}"  # type: ignore[attr-defined]
        pool: Any = descriptor_pool(schema)
        classes[role] = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
        ids[role] = (field, SchemaId("PROTOBUF", latest.schema_id, latest.guid, [0]))

    def expected(i: str, name: str) -> tuple[bytes, bytes, list[tuple[str, bytes | None]]]:
        headers: list[tuple[str, bytes | None]] = []
        out = []
        for role, message in (("key", classes["key"](id=i)),
                              ("value", classes["value"](id=i, name=name))):
            field, schema_id = ids[role]
            out.append(header_schema_id_serializer(
                message.SerializeToString(), SerializationContext(topic, field, headers),
                schema_id))
        return out[0], out[1], headers

    got = [(r.key, r.value, list(r.headers)) for r in _records(kafka_bootstrap, topic)]
    assert got == [expected(i, n) for i, n in rows]
    assert [n for n, _ in got[0][2]] == [KEY_HEADER, VALUE_HEADER]
    assert got[0][2][1][1][-1:] == b"\x00"  # the message index [0], after the GUID
    back = ProtobufDeserializer(classes["value"], {"use.deprecated.format": False})(
        got[-1][1], SerializationContext(topic, MessageField.VALUE, got[-1][2]))
    assert (back.id, back.name) == (K1, "a2")
    rows_back = spark.read.format("upsert-kafka").options(**options).load().collect()
    assert {r["id"]: r["name"] for r in rows_back} == {K1: "a2", K2: "b"}


def test_apicurios_header_framing_writes_the_global_id_in_each_sides_header(
        spark: Any, kafka_bootstrap: str, registry: Any) -> None:
    topic = new_topic(kafka_bootstrap, 1)
    options = _options(kafka_bootstrap, topic, registry.url,
                       **{f"{role}.avro-confluent.framing": "apicurio-header-global-id"
                          for role in ("key", "value")})
    df = spark.createDataFrame(CHANGES, "id string not null, name string, op string")
    (df.coalesce(1).write.format("upsert-kafka").options(**options, **{"changelog.column": "op"})
     .mode("append").save())
    client = _client(registry.url)
    ids = [client.get_latest_version(f"{topic}-{role}").schema_id for role in ("key", "value")]
    heads = [("apicurio.key.globalId", ids[0].to_bytes(8, "big")),
             ("apicurio.value.globalId", ids[1].to_bytes(8, "big"))]
    recs = _records(kafka_bootstrap, topic)
    assert [list(r.headers) for r in recs] == [heads, heads, heads, heads, heads[:1]]
    assert _spark_table(spark, options) == _expected_table(CHANGES)
