"""Schema ids are resolved once on the driver; a task's codecs use them and open no registry."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pyarrow as pa
import pytest

from keyguard.formats.errors import RegistryUnavailableError
from keyguard.formats.registry.mock import MockRegistry
from keyguard.sparkio.change_encoder import ChangeEncoder
from keyguard.sparkio.schema_ids import NotResolvedOnDriver, PinnedRegistry, PinnedSchema

DUMMY = '{"type":"record","name":"dummy%d","fields":[{"name":"x","type":"int"}]}'


@pytest.fixture
def scope() -> Any:
    """A mock registry where the key's and value's ids are not the first ones."""
    name = f"pinned-{uuid.uuid4().hex}"
    registry = MockRegistry(name)
    for i in range(4):
        registry.register(f"other-{i}", DUMMY % i)
    yield name
    MockRegistry.drop_scope(name)


@pytest.fixture
def no_registry_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, opening any registry fails: as on an executor that cannot reach it."""
    opened: list[str] = []

    def refuse(url: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(url)
        raise RegistryUnavailableError(f"{url} is not reachable from this task")

    monkeypatch.setattr("keyguard.formats.registry.connect.open_registry", refuse)
    return opened


def _options(scope: str, **extra: str) -> dict[str, str]:
    return {"topic": "orders", "primary-key": "id", "key.format": "avro-confluent",
            "value.format": "avro-confluent", "key.avro-confluent.url": f"mock://{scope}",
            "value.avro-confluent.url": f"mock://{scope}",
            "properties.bootstrap.servers": "127.0.0.1:9", **extra}


def _schema() -> Any:
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    return StructType([StructField("id", IntegerType()), StructField("v", StringType())])


def _driver_job(options: dict[str, str]) -> Any:
    from keyguard.formats.registry.registration import plan_guids
    from keyguard.sparkio.schema_ids import resolve_write_ids
    from keyguard.sparkio.writer import WriteJob, resolve_plan_only

    conn, plan = resolve_plan_only(_schema(), options)
    key_id, value_id = resolve_write_ids(plan)
    key_guid, value_guid = plan_guids(plan)
    return WriteJob(plan.spec, conn, 3, 0.0, key_id, value_id, key_guid=key_guid,
                    value_guid=value_guid)


def _ids(encoded: list[bytes]) -> set[int]:
    return {struct.unpack(">bI", e[:5])[1] for e in encoded}


def test_tasks_encode_with_the_driver_ids_and_open_no_registry(
        scope: str, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _driver_job(_options(scope))
    registry = MockRegistry(scope)
    key_id = registry.get_version("orders-key").schema_id
    value_id = registry.get_version("orders-value").schema_id
    assert (job.key_schema_id, job.value_schema_id) == (key_id, value_id)
    assert key_id > 4 and value_id > 4  # not ids an empty registry of its own would give

    opened: list[str] = []
    monkeypatch.setattr("keyguard.formats.registry.connect.open_registry",  # the one opener
                        lambda url, *a, **k: opened.append(url))  # type: ignore[func-returns-value]
    batch = pa.record_batch({"id": pa.array([1, 2], pa.int32()), "v": ["a", None]})
    enc = job.encoder().encode(batch)  # what a task does
    assert _ids(enc.keys) == {key_id} and _ids(enc.values) == {value_id}  # type: ignore[arg-type]
    assert opened == []


def test_a_task_plan_answers_only_what_the_driver_resolved(scope: str) -> None:
    job = _driver_job(_options(scope))
    plan = job.plan()
    pinned = plan.key_codec.registry  # type: ignore[attr-defined]
    assert isinstance(pinned, PinnedRegistry)
    with pytest.raises(NotResolvedOnDriver, match="only the driver asks the registry"):
        pinned.versions("orders-key")
    with pytest.raises(NotResolvedOnDriver, match="did not resolve"):
        pinned.register("orders-key", DUMMY % 9)


def test_a_missing_driver_id_fails_the_task_before_a_record(scope: str) -> None:
    job = _driver_job(_options(scope))
    from dataclasses import replace

    broken = replace(job, value_schema_id=None)
    batch = pa.record_batch({"id": pa.array([1], pa.int32()), "v": ["a"]})
    with pytest.raises(NotResolvedOnDriver, match="orders-value"):
        broken.encoder().encode(batch)


def test_registry_down_on_the_driver_stops_the_write_before_any_task(
        no_registry_here: list[str]) -> None:
    with pytest.raises(RegistryUnavailableError, match="not reachable"):
        _driver_job(_options("never-opened"))
    assert no_registry_here  # the driver tried, once, and stopped


def test_the_reader_resolves_every_version_on_the_driver(
        scope: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from keyguard.sparkio.reader import UpsertKafkaReader

    registry = MockRegistry(scope)
    v1 = '{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated",' \
         '"fields":[{"name":"id","type":"int"},{"name":"v","type":["null","string"],' \
         '"default":null}]}'
    value_id = registry.register("orders-value", v1)
    options = {k: v for k, v in _options(scope).items()}
    reader = UpsertKafkaReader(options, _schema())
    assert value_id in {p.schema_id for p in reader.schemas}

    opened: list[str] = []

    def refuse(url: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(url)
        raise RegistryUnavailableError(f"{url} is not reachable from this task")

    monkeypatch.setattr("keyguard.formats.registry.connect.open_registry", refuse)
    plan = reader.task_plan()
    body = plan.value_codec.writer.encode({"id": 7, "v": "x"})  # type: ignore[attr-defined]
    row = plan.value_codec.decode(struct.pack(">bI", 0, value_id) + body)
    assert row == {"id": 7, "v": "x"} and opened == []
    with pytest.raises(NotResolvedOnDriver, match="schema id 4242") as err:
        plan.value_codec.decode(struct.pack(">bI", 0, 4242) + body)
    assert "not reachable from this task" in str(err.value)  # tried, and said so
    assert opened  # the one case a task fetches: an id outside the resolved subjects


def test_pinned_ids_from_two_registries_never_mix() -> None:
    a = PinnedSchema("t-key", 1, '"int"')
    b = PinnedSchema("t-value", 1, '"string"')
    pinned = PinnedRegistry([a, b])
    assert pinned.register("t-key", '"int"') == 1 and pinned.register("t-value", '"string"') == 1
    with pytest.raises(NotResolvedOnDriver):
        pinned.get_by_id(1)  # ambiguous: only its own registry can tell


def test_spark_tasks_write_the_ids_only_the_driver_knows(spark: Any, kafka_bootstrap: str,
                                                         scope: str) -> None:
    """A mock:// registry lives in one process: the driver's. A task that asked its own would
    find it empty and register the schemas as ids 1 and 2."""
    pytest.importorskip("pandas", reason="pyspark's mapInArrow needs pandas on the driver")
    from broker import new_topic

    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    options = {**_options(scope), "topic": topic, "properties.bootstrap.servers": kafka_bootstrap}
    df = spark.createDataFrame([(i, f"v{i}") for i in range(40)], "id int, v string")
    out = sparkio.serialize(df.repartition(4), **options).collect()
    registry = MockRegistry(scope)
    key_id = registry.get_version(f"{topic}-key").schema_id
    value_id = registry.get_version(f"{topic}-value").schema_id
    assert key_id > 4 and value_id > 4
    assert _ids([r["key"] for r in out]) == {key_id}
    assert _ids([r["value"] for r in out]) == {value_id}


def test_a_data_source_write_registers_once_not_once_per_task(
        spark: Any, kafka_bootstrap: str, reader: Any, fake_registry: Any) -> None:
    from broker import new_topic

    from keyguard import sparkio
    fake = fake_registry
    topic = new_topic(kafka_bootstrap, 3)
    options = {"topic": topic, "primary-key": "id", "key.format": "avro-confluent",
               "value.format": "json", "key.avro-confluent.url": fake.url,
               "properties.bootstrap.servers": kafka_bootstrap}
    df = spark.createDataFrame([(i, f"v{i}") for i in range(40)], "id int, v string")
    sparkio.prepare(df, **{**options, "sink.parallelism": "4"}).write \
        .format("upsert-kafka").options(**options).mode("append").save()
    registers = [path for method, path, *_ in fake.state.requests
                 if method == "POST" and path.endswith(f"/subjects/{topic}-key/versions")]
    assert registers == [f"/subjects/{topic}-key/versions"]  # the driver's, in writer()
    assert len(reader.records(topic)) == 40


def test_a_value_schema_with_references_is_written_and_read_back(
        spark: Any, kafka_bootstrap: str, tmp_path: Any) -> None:
    """Confluent `references` through the Spark writer and reader: the value schema uses a
    record registered under another subject. The driver resolves it; the tasks decode the
    writer schema in its standalone form, without asking the registry."""
    import json

    from broker import new_topic

    from keyguard import sparkio
    from keyguard.formats.registry.file import FileRegistry

    address = {"type": "record", "name": "Address", "namespace": "com.acme",
               "fields": [{"name": "street", "type": "string"}]}
    order = {"type": "record", "name": "Order", "namespace": "com.acme",
             "fields": [{"name": "id", "type": "long"}, {"name": "ship", "type": "Address"}]}
    ref = [{"name": "com.acme.Address", "subject": "address-value", "version": 1}]
    root = tmp_path / "schemas"
    FileRegistry(root).register("address-value", json.dumps(address))
    topic = new_topic(kafka_bootstrap, 2)
    options = {"topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
               "primary-key": "id", "key.format": "json",
               "value.format": "avro-confluent",
               "value.avro-confluent.url": f"file://{root}",
               "value.avro-confluent.subject": f"{topic}-value",
               "value.avro-confluent.schema": json.dumps(order),
               "value.avro-confluent.references": json.dumps(ref)}
    rows = [(i, (f"street {i}",)) for i in range(20)]
    df = spark.createDataFrame(rows, "id bigint not null, ship struct<street: string not null>")
    summary = sparkio.write_upsert(df, **options)
    assert summary.records == 20
    registered = FileRegistry(root).get_version(f"{topic}-value")
    assert [dict(r) for r in registered.references] == ref
    # The reader reads the writer schemas, references and all, by id; its own (reader) schema
    # is the same Order, its reference resolved on the driver too.
    back = spark.read.format("upsert-kafka").options(**options).load().collect()
    assert {r["id"]: r["ship"]["street"] for r in back} == {i: s for i, (s,) in rows}
    # Without the schema options the reader reads with the schema Flink derives from the
    # inferred table (org.apache.flink.avro.generated.record, nested record_ship): the writer's
    # com.acme.Order and com.acme.Address resolve to it by structure, as Avro Java resolves them.
    derived = {k: v for k, v in options.items()
               if k not in ("value.avro-confluent.schema", "value.avro-confluent.references")}
    back = spark.read.format("upsert-kafka").options(**derived).load().collect()
    assert {r["id"]: r["ship"]["street"] for r in back} == {i: s for i, (s,) in rows}


def test_a_write_the_executors_cannot_run_registers_nothing(
        spark: Any, kafka_bootstrap: str, scope: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe of the executors runs after the guard and before the registration: a write
    it stops leaves no schema registered and no record written."""
    from broker import new_topic

    from keyguard import sparkio
    from keyguard.sparkio import writer
    from keyguard.sparkio.workers import WorkerSetupError

    def no_workers(session: Any) -> None:
        raise WorkerSetupError("keyguard is not installed in the Python workers (test)")

    monkeypatch.setattr(writer, "probe_workers", no_workers)
    topic = new_topic(kafka_bootstrap, 1)
    options = {**_options(scope), "topic": topic, "properties.bootstrap.servers": kafka_bootstrap}
    df = spark.createDataFrame([(1, "v1")], "id int, v string")
    with pytest.raises(WorkerSetupError):
        sparkio.write_upsert(df, **options)
    assert [s for s in MockRegistry(scope).subjects() if s.startswith(topic)] == []


def test_pinned_guids_answer_in_the_task_and_an_unknown_one_is_fetched(scope: str) -> None:
    registry = MockRegistry(scope)
    elsewhere = registry.register_guid("elsewhere-value", DUMMY % 7)
    pinned = PinnedRegistry([PinnedSchema("t-value", 1, DUMMY % 1, "AVRO", guid=str(GUID))],
                            fallbacks=[lambda: MockRegistry(scope)])
    assert pinned.get_by_guid(str(GUID).upper()) == ("AVRO", DUMMY % 1)
    assert pinned.get_by_guid(elsewhere.guid)[1] == DUMMY % 7  # from the registry, in the task
    with pytest.raises(NotResolvedOnDriver, match=f"schema GUID {uuid.UUID(int=9)}"):
        PinnedRegistry([]).get_by_guid(str(uuid.UUID(int=9)))


GUID = uuid.UUID("3f2b5c8e-0d1a-4e7b-9c6f-2a4d8e1b7c90")


def test_a_header_framing_writes_the_driver_guids_in_every_records_headers(
        scope: str) -> None:
    job = _driver_job(_options(scope, **{"key.avro-confluent.framing": "confluent-header",
                                         "value.avro-confluent.framing": "confluent-header"}))
    registry = MockRegistry(scope)
    key, value = (registry.get_version(f"orders-{role}") for role in ("key", "value"))
    assert (job.key_guid, job.value_guid) == (key.guid, value.guid)
    batch = pa.record_batch({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", None, "c"],
                             "op": ["+I", "-D", "+U"]})
    enc = ChangeEncoder(job.plan(), 3, "op").encode(batch)  # what a task does
    upsert = [("__key_schema_id", b"\x01" + uuid.UUID(key.guid).bytes),
              ("__value_schema_id", b"\x01" + uuid.UUID(value.guid).bytes)]
    assert enc.headers == [upsert, upsert[:1], upsert]  # a tombstone: the key's only
    assert enc.headers[0] is enc.headers[2]  # one list for every record of a kind
    assert enc.values[1] is None and not enc.keys[0].startswith(b"\x00")  # bare bodies
    # The prefix framing adds no header: the records carry none.
    assert _driver_job(_options(scope)).encoder().encode(batch.drop_columns(["op"])) \
        .headers is None


def test_serialize_returns_the_header_framings_headers(spark: Any, kafka_bootstrap: str,
                                                       scope: str) -> None:
    pytest.importorskip("pandas", reason="pyspark's mapInArrow needs pandas on the driver")
    from broker import new_topic

    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 2)
    options = {**_options(scope, **{"value.avro-confluent.framing": "confluent-header"}),
               "topic": topic, "properties.bootstrap.servers": kafka_bootstrap}
    df = spark.createDataFrame([(i, f"v{i}") for i in range(6)], "id int, v string")
    out = sparkio.serialize(df, **options).collect()
    guid = MockRegistry(scope).get_version(f"{topic}-value").guid
    assert {tuple((h["key"], bytes(h["value"])) for h in r["headers"]) for r in out} == \
        {(("__value_schema_id", b"\x01" + uuid.UUID(guid).bytes),)}
    assert _ids([r["key"] for r in out]) == {MockRegistry(scope).get_version(f"{topic}-key")
                                             .schema_id}  # the key keeps its prefix
