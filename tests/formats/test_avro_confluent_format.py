"""The `avro-confluent` format against confluent-kafka's AvroSerializer, subjects, registry use."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyguard.formats.avro_confluent_format import AVRO_CONFLUENT_FORMAT, AvroConfluentCodec
from keyguard.formats.avro_schema import canonical_form, to_avro_json, to_avro_schema
from keyguard.formats.codec import CodecContext
from keyguard.formats.errors import (
    DecodeError,
    EncodeError,
    InvalidOptionError,
    RegistryError,
    SchemaError,
)
from keyguard.formats.registry import CompatibilityAnswer, Registry, SchemaVersion
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_schema_id
from keyguard.formats.subjects import parse_strategy
from keyguard.formats.types import (
    BigIntType,
    BooleanType,
    DecimalType,
    DoubleType,
    IntType,
    RowType,
    StringType,
    TimestampType,
    row,
)

_scopes = itertools.count()


class MemoryRegistry:
    """The Registry protocol in a few lines, counting calls: no network, no library mock."""

    def __init__(self) -> None:
        self.name = "memory"
        self.schemas: list[str] = []
        self.subject_versions: dict[str, list[int]] = {}
        self.calls: list[str] = []

    def subjects(self) -> list[str]:
        return sorted(self.subject_versions)

    def versions(self, subject: str) -> list[int]:
        return list(range(1, len(self.subject_versions.get(subject, [])) + 1))

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        ids = self.subject_versions[subject]
        v = len(ids) if version == "latest" else int(version)
        return SchemaVersion(subject, v, ids[v - 1], self.schemas[ids[v - 1] - 1])

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        return [self.get_version(subject, v) for v in self.versions(subject)]

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        self.calls.append(f"get_by_id {schema_id}")
        if not 0 < schema_id <= len(self.schemas):
            raise RegistryError(f"memory: schema id {schema_id} not found")
        return "AVRO", self.schemas[schema_id - 1]

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO") -> SchemaVersion | None:
        self.calls.append(f"lookup {subject}")
        return next((sv for sv in self.all_versions(subject)
                     if canonical_form(sv.schema) == canonical_form(schema)), None)

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        self.calls.append(f"register {subject}")
        found = self.lookup(subject, schema)
        if found:
            return found.schema_id
        known = [i for i, s in enumerate(self.schemas, 1) if canonical_form(s) ==
                 canonical_form(schema)]
        if known:
            schema_id = known[0]
        else:
            self.schemas.append(schema)
            schema_id = len(self.schemas)
        self.subject_versions.setdefault(subject, []).append(schema_id)
        return schema_id

    def compatibility(self, subject: str) -> str:
        return "BACKWARD"

    def check_compatibility(self, subject: str, schema: str,
                            schema_type: str = "AVRO") -> CompatibilityAnswer | None:
        return None


def codec(t: RowType, registry: Registry | None = None, *, role: str = "value",
          topic: str | None = "orders", **options: Any) -> AvroConfluentCodec:
    resolved = AVRO_CONFLUENT_FORMAT.options.validate({"url": "mock://unused", **options})
    ctx = CodecContext(role=role, topic=topic, registry=registry)  # type: ignore[arg-type]
    return AVRO_CONFLUENT_FORMAT.build(t, resolved, ctx)  # type: ignore[return-value]


KEY = row(("region", StringType().not_null()), ("id", BigIntType().not_null()))
VALUE = row(
    ("region", StringType().not_null()), ("id", BigIntType().not_null()),
    ("name", StringType()), ("qty", IntType()), ("price", DecimalType(precision=12, scale=2)),
    ("at", TimestampType(precision=3)), ("paid", BooleanType()), ("score", DoubleType()),
)

ROWS = st.fixed_dictionaries({
    "region": st.sampled_from(["eu", "us", "ap"]),
    "id": st.integers(-(1 << 63), (1 << 63) - 1),
    "name": st.none() | st.text(max_size=10),
    "qty": st.none() | st.integers(-(1 << 31), (1 << 31) - 1),
    # Away from -2^(8k-1) unscaled, where fastavro (so AvroSerializer) and Java differ.
    "price": st.none() | st.integers(-(10**10), 10**12 - 1).filter(
        lambda n: n >= 0 or (-n) & (-n - 1) != 0).map(lambda n: decimal.Decimal(n).scaleb(-2)),
    "at": st.none() | st.datetimes(min_value=dt.datetime(1900, 1, 1)).map(
        lambda x: x.replace(microsecond=x.microsecond // 1000 * 1000)),
    "paid": st.none() | st.booleans(),
    "score": st.none() | st.floats(allow_nan=False),
})


@pytest.fixture
def mock() -> MockRegistry:
    return MockRegistry(f"avro-confluent-{next(_scopes)}")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(ROWS, min_size=1, max_size=5))
def test_same_id_and_bytes_as_confluent_serializer(mock: MockRegistry,
                                                   rows: list[dict[str, Any]]) -> None:
    c = bind_schema_id(codec(VALUE, mock))
    k = bind_schema_id(codec(KEY, mock, role="key"))
    ser = AvroSerializer(mock.client, c.schema_text)
    key_ser = AvroSerializer(mock.client, k.schema_text)
    value_ctx = SerializationContext("orders", MessageField.VALUE)
    key_ctx = SerializationContext("orders", MessageField.KEY)
    theirs = [ser(r, value_ctx) for r in rows]
    ours = [c.encode(r) for r in rows]
    assert ours == theirs
    assert c.encode_batch(pa.Table.from_pylist(rows)) == theirs
    keys = [{"region": r["region"], "id": r["id"]} for r in rows]
    assert [k.encode(r) for r in keys] == [key_ser(r, key_ctx) for r in keys]
    assert sorted(mock.subjects()) == ["orders-key", "orders-value"]
    assert [c.decode(b) for b in ours] == rows
    deser = AvroDeserializer(mock.client)
    theirs_read = [deser(b, value_ctx) for b in ours]
    for r in theirs_read:  # fastavro reads timestamp-millis as aware UTC
        r["at"] = r["at"] and r["at"].replace(tzinfo=None)
    assert theirs_read == rows


def test_wire_format(mock: MockRegistry) -> None:
    c = bind_schema_id(codec(KEY, mock, role="key"))
    data = c.encode({"region": "eu", "id": 1})
    assert data[:1] == b"\x00" and int.from_bytes(data[1:5], "big") == c.schema_id
    assert data[5:] == b"\x04eu\x02"
    sv = mock.get_version("orders-key")
    assert json.loads(sv.schema) == to_avro_schema(KEY)  # Flink's derived schema, registered


def test_registers_once_and_caches_writer_schemas() -> None:
    reg = MemoryRegistry()
    c = codec(KEY, reg, role="key")
    assert reg.calls == []  # building a codec touches no registry
    bind_schema_id(c)  # registration: the explicit step before the first record
    rows = [{"region": "eu", "id": i} for i in range(3)]
    encoded = [c.encode(r) for r in rows] + c.encode_batch(pa.Table.from_pylist(rows))
    assert reg.calls == ["register orders-key", "lookup orders-key"]
    fresh = codec(KEY, reg, role="key")
    assert [fresh.decode(b) for b in encoded] == rows + rows
    assert reg.calls.count("get_by_id 1") == 1


def test_rows_are_checked_before_registering() -> None:
    reg = MemoryRegistry()
    with pytest.raises(EncodeError, match="column 'id' is null"):
        codec(KEY, reg, role="key").encode({"region": "eu"})
    with pytest.raises(EncodeError, match="row 0: column 'id' is null"):
        codec(KEY, reg, role="key").encode_batch(
            pa.record_batch({"region": ["eu"], "id": pa.array([None], pa.int64())}))
    assert reg.subjects() == []


@pytest.mark.parametrize(
    ("options", "topic", "subject"),
    [
        ({}, "orders", "orders-value"),
        ({"subject": "custom"}, "orders", "custom"),
        ({"schema-registry.subject": "legacy-key"}, None, "legacy-key"),
        ({"subject.name.strategy": "RecordNameStrategy"}, None,
         "org.apache.flink.avro.generated.record"),
        ({"subject.name.strategy": "io.confluent.kafka.serializers.subject."
                                   "TopicRecordNameStrategy"}, "orders",
         "orders-org.apache.flink.avro.generated.record"),
        ({"subject.name.strategy": "record_subject_name_strategy",
          "schema": json.dumps({"type": "record", "name": "Key", "namespace": "shop",
                                "fields": [{"name": "region", "type": "string"},
                                           {"name": "id", "type": "long"}]})}, None, "shop.Key"),
    ],
)
def test_subjects(options: dict[str, str], topic: str | None, subject: str) -> None:
    reg = MemoryRegistry()
    c = codec(KEY, reg, topic=topic, **options)
    assert c.subject == subject
    bind_schema_id(c).encode({"region": "eu", "id": 1})
    assert reg.subjects() == [subject]


def test_subject_needs_a_topic() -> None:
    with pytest.raises(InvalidOptionError, match="needs the topic name") as info:
        bind_schema_id(codec(KEY, MemoryRegistry(), topic=None)).encode(
            {"region": "eu", "id": 1})
    assert info.value.hint and "'subject'" in info.value.hint
    with pytest.raises(InvalidOptionError, match="expected one of TopicNameStrategy"):
        codec(KEY, MemoryRegistry(), **{"subject.name.strategy": "Nope"})
    assert parse_strategy("TOPICNAMESTRATEGY") == "TopicNameStrategy"


def test_auto_register_off() -> None:
    reg = MemoryRegistry()
    c = codec(KEY, reg, role="key", **{"auto.register.schemas": "false"})
    with pytest.raises(RegistryError, match="not registered under subject 'orders-key'") as info:
        bind_schema_id(c).encode({"region": "eu", "id": 1})
    assert info.value.hint and "auto.register.schemas=true" in info.value.hint
    # Registered by someone else, with other formatting: found by canonical form.
    schema_id = reg.register("orders-key", json.dumps(to_avro_schema(KEY), indent=2))
    data = bind_schema_id(codec(KEY, reg, role="key", **{"auto.register.schemas": "false"})
                          ).encode({"region": "eu", "id": 1})
    assert int.from_bytes(data[1:5], "big") == schema_id
    assert reg.calls[-1] == "lookup orders-key"


def test_reads_older_writer_schemas_by_resolution() -> None:
    """A value written before a nullable column was added reads with that column null."""
    reg = MemoryRegistry()
    old_t = row(("region", StringType().not_null()), ("id", BigIntType().not_null()))
    new_t = row(("region", StringType().not_null()), ("id", BigIntType().not_null()),
                ("note", StringType()))
    old = bind_schema_id(codec(old_t, reg)).encode({"region": "eu", "id": 7})
    new = bind_schema_id(codec(new_t, reg))
    assert new.decode(old) == {"region": "eu", "id": 7, "note": None}
    assert new.decode(new.encode({"region": "us", "id": 8, "note": "x"}))["note"] == "x"
    assert reg.versions("orders-value") == [1, 2]
    # And a writer schema the reader cannot resolve is a DecodeError, not a crash.
    incompatible = bind_schema_id(codec(row(("region", IntType().not_null())), reg,
                                        subject="other"))
    with pytest.raises(DecodeError, match="not a valid Avro record"):
        new.decode(incompatible.encode({"region": 1}))


def test_fields_of_a_newer_writer_schema_are_named_as_undeclared() -> None:
    """Resolution skips a writer field the reader lacks; a record rewritten from the decoded
    row would lose it, so the codec names it (migrate refuses such a rewrite)."""
    reg = MemoryRegistry()
    wide = row(("region", StringType().not_null()), ("id", BigIntType().not_null()),
               ("note", StringType()))
    narrow = row(("region", StringType().not_null()), ("id", BigIntType().not_null()))
    data = bind_schema_id(codec(wide, reg)).encode({"region": "eu", "id": 7, "note": "x"})
    reader = bind_schema_id(codec(narrow, reg, subject="narrow"))
    assert reader.decode(data) == {"region": "eu", "id": 7}
    assert reader.undeclared_fields(data) == ("note",)
    assert bind_schema_id(codec(wide, reg)).undeclared_fields(data) == ()


def test_explicit_schema() -> None:
    reg = MemoryRegistry()
    schema = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [
        {"name": "region", "type": "string"}, {"name": "id", "type": "long"}]}
    c = bind_schema_id(codec(KEY, reg, role="key", schema=json.dumps(schema)))
    c.encode({"region": "eu", "id": 1})
    assert json.loads(reg.get_version("orders-key").schema) == schema
    with pytest.raises(SchemaError, match="cannot be written as Avro"):
        codec(KEY, reg, schema=json.dumps({**schema, "fields": [
            {"name": "region", "type": "string"}, {"name": "id", "type": "int"}]}))
    with pytest.raises(SchemaError, match="not a valid Avro schema"):
        codec(KEY, reg, schema="{nope")


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"", "shorter than the 5-byte header"), (b"\x02\x00\x00\x00\x01\x02", "magic byte is 2"),
     (b"\x00\x00\x00\x00\x09\x02", "schema id 9 not found")],
)
def test_bad_records(data: bytes, message: str) -> None:
    with pytest.raises((DecodeError, RegistryError), match=message):
        codec(KEY, MemoryRegistry(), role="key").decode(data)


def test_opens_registry_from_url_and_hides_credentials() -> None:
    scope = f"from-url-{next(_scopes)}"
    resolved = AVRO_CONFLUENT_FORMAT.options.validate({
        "schema-registry.url": f"mock://{scope}",
        "basic-auth.user-info": "alice:s3cret-pw",
        "properties.bearer.auth.token": "tok-123",
    })
    c = AVRO_CONFLUENT_FORMAT.build(KEY, resolved, CodecContext(role="key", topic="t"))
    assert "s3cret" not in repr(c) and "tok-123" not in repr(c)
    bind_schema_id(c).encode({"region": "eu", "id": 1})
    assert MockRegistry(scope).subjects() == ["t-key"]
    with pytest.raises(InvalidOptionError, match="required option 'url'") as info:
        AVRO_CONFLUENT_FORMAT.build(KEY, AVRO_CONFLUENT_FORMAT.options.validate(
            {"basic-auth.user-info": "alice:s3cret-pw"}), CodecContext())
    assert "s3cret" not in str(info.value)


def test_derived_schema_text_is_flinks() -> None:
    c = codec(VALUE, MemoryRegistry())
    assert c.schema_text == to_avro_json(to_avro_schema(VALUE))
    with pytest.raises(SchemaError, match="TIMESTAMP precision up to 3"):
        codec(row(("t", TimestampType(precision=6))), MemoryRegistry())
