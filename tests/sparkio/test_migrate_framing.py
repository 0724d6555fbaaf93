"""`keyguard migrate` from Confluent's wire format (the schema id in the bytes) to its header
framing (the schema GUID in `__key_schema_id` / `__value_schema_id`, the bytes the bare body)
and back, on a real broker: a consumer with confluent-kafka's `DeserializingConsumer` and
`AvroDeserializer` (its default `dual_schema_id_deserializer`) reads the same table before and
after, and `keyguard audit` ends clean, every live record in one framing.

The brokers here never compact: "the topic as compaction leaves it" (once delete.retention.ms
has removed the tombstones) is its last live record per key bytes and partition, copied (bytes
and headers as they are) into a fresh topic that the consumer reads from the beginning. A
consumer that reads the whole log and folds by the deserialized key reads the same table when it
skips the migration's retirement tombstones (header `keyguard.migrate`, `retire N`): those
retire an old key's bytes, they delete no row."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker import new_topic
from confluent_kafka import DeserializingConsumer, Producer, TopicPartition
from confluent_kafka.schema_registry.avro import AvroDeserializer

from keyguard.formats.partitioner import partition_for
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.scan import audit_topic
from keyguard.guard.offsets import KafkaRanges
from keyguard.sparkio.migrate_topic import read_folds

pytestmark = pytest.mark.broker

COLUMNS = "code STRING NOT NULL, qty INT"
TABLE = parse_columns(COLUMNS)
PARTITIONS = 3


@pytest.fixture()
def scope() -> Iterator[str]:
    name = f"migrate-framing-{uuid.uuid4().hex[:8]}"
    yield name
    MockRegistry.drop_scope(name)


def _options(scope: str, key: str, value: str) -> dict[str, str]:
    url = f"mock://{scope}"
    return {"primary-key": "code", "key.format": "avro-confluent",
            "value.format": "avro-confluent", "key.avro-confluent.url": url,
            "value.avro-confluent.url": url, "key.avro-confluent.framing": key,
            "value.avro-confluent.framing": value}


def _produce(bootstrap: str, topic: str, options: dict[str, str],
             rows: list[tuple[str, int | None]]) -> None:
    """Rows as Confluent's serializers in that framing write them (keys of 10 characters or
    more: confluent-kafka 2.16's dual deserializer refuses a header-framed key shorter than
    6 bytes), murmur2-placed."""
    plan = open_plan(TABLE, {**options, "topic": topic})
    bind_plan_schema_ids(plan)
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for code, qty in rows:
        key, value = plan.encode({"code": code, "qty": qty})
        p.produce(topic, key=key, value=None if qty is None else value,
                  partition=partition_for(key, PARTITIONS),
                  headers=list(plan.record_headers(tombstone=qty is None)) or None)
    assert p.flush(15) == 0


def _compacted_copy(bootstrap: str, topic: str) -> tuple[str, int]:
    """A fresh topic holding `topic` as compaction leaves it once its tombstones are removed:
    each key bytes' last record on its partition when it is live, bytes and headers
    unchanged; and how many."""
    copy = new_topic(bootstrap, PARTITIONS, {"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    live = 0
    for fold in read_folds(KafkaRanges(bootstrap), topic):
        for key, slot in fold.slots.items():
            e = slot.tail
            if e.value is not None:
                p.produce(copy, key=key, value=e.value, partition=e.partition,
                          headers=list(e.headers) or None)
                live += 1
    assert p.flush(15) == 0
    return copy, live


def _retirement(headers: Any) -> bool:
    return any(name == "keyguard.migrate" and (value or b"").startswith(b"retire ")
               for name, value in headers or ())


def _dual_table(bootstrap: str, topic: str, scope: str, records: int, *,
                compacted: bool = True) -> dict[str, Any]:
    """What a DeserializingConsumer with AvroDeserializer (dual_schema_id_deserializer, the
    default) folds the topic into: logical key -> value, a tombstone deleting its key (a
    retirement skipped); on a `compacted` topic every live logical key is read once."""
    client = MockRegistry(scope).client
    consumer = DeserializingConsumer({
        "bootstrap.servers": bootstrap, "group.id": f"dual-{uuid.uuid4().hex}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 0,
        "fetch.wait.max.ms": 10,  # a fetch at a partition's end answers at once
        "key.deserializer": AvroDeserializer(client),
        "value.deserializer": AvroDeserializer(client)})
    # Offset 0, reset to the earliest: OFFSET_BEGINNING costs a 0.5 s ListOffsets round first.
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    table: dict[str, Any] = {}
    seen = 0
    try:
        for _ in range(600):
            if seen >= records:
                break
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            seen += 1
            code = msg.key()["code"]
            if msg.value() is None:
                if not _retirement(msg.headers()):
                    table.pop(code, None)
            else:
                assert not compacted or code not in table, \
                    f"the logical key {code!r} is live twice: a phantom"
                table[code] = msg.value()
    finally:
        consumer.close()
    assert seen == records, f"read {seen} of {records} records"
    return table


def _read_as_compacted(bootstrap: str, topic: str, scope: str) -> dict[str, Any]:
    """The table a dual consumer reads from the compacted topic; checked to be the table it
    reads from the whole log, retirements skipped."""
    copy, live = _compacted_copy(bootstrap, topic)
    table = _dual_table(bootstrap, copy, scope, live)
    records = sum(f.records for f in read_folds(KafkaRanges(bootstrap), topic))
    assert _dual_table(bootstrap, topic, scope, records, compacted=False) == table
    return table


def cli(*args: str) -> Any:
    """`keyguard migrate ARGS` through its typer command (entry points need an install)."""
    import typer
    from typer.testing import CliRunner

    from keyguard.sparkio.cli_commands import migrate

    app = typer.Typer()
    app.command("migrate")(migrate)
    app.command("other")(lambda: None)  # two commands: typer keeps `migrate` as a subcommand
    return CliRunner().invoke(app, ["migrate", *args])


def _migrate(bootstrap: str, topic: str, scope: str, tmp_path: Path, old: str, new: str,
             *extra: str) -> Any:
    return cli("--topic", topic, "--bootstrap", bootstrap, "--columns", COLUMNS,
               "--primary-key", "code", "--old-key-format", "avro-confluent",
               "--value-format", "avro-confluent", "--registry", f"mock://{scope}",
               "--old-option", f"key.avro-confluent.framing={old}",
               "--old-option", f"value.avro-confluent.framing={old}",
               "--new-option", f"key.avro-confluent.framing={new}",
               "--new-option", f"value.avro-confluent.framing={new}",
               "--state", str(tmp_path / f"{topic}.json"), "--yes", *extra)


def _audit(bootstrap: str, topic: str, scope: str, framing: str) -> Any:
    plan = open_plan(TABLE, {**_options(scope, framing, framing), "topic": topic})
    return audit_topic(topic, plan, bootstrap=bootstrap, registry=MockRegistry(scope))


def test_prefix_to_header_and_back_keeps_the_table_a_dual_deserializer_reads(
        kafka_bootstrap: str, scope: str, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, PARTITIONS, {"cleanup.policy": "compact"})
    prefix = _options(scope, "confluent", "confluent")
    _produce(kafka_bootstrap, topic, prefix, [(f"order-{i:04d}", i) for i in range(12)]
             + [("order-0003", 33), ("order-0005", None)])
    before = _read_as_compacted(kafka_bootstrap, topic, scope)
    assert len(before) == 11 and before["order-0003"] == {"code": "order-0003", "qty": 33}
    audited = _audit(kafka_bootstrap, topic, scope, "confluent")
    assert audited.clean and audited.data["framings"]["key"]["live"]["id"] == 11

    ends = [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)]
    dry = _migrate(kafka_bootstrap, topic, scope, tmp_path, "confluent", "confluent-header",
                   "--dry-run", "--format", "json")
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.output)["plan"]
    # every live row rewritten bare with its GUID in a header; every live prefix key retired
    assert (plan["rewrites"], plan["tombstones"]) == (11, 11)
    assert [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)] == ends

    run = _migrate(kafka_bootstrap, topic, scope, tmp_path, "confluent", "confluent-header")
    assert run.exit_code == 0, run.output
    assert "wrote 11 rewrites and 11 tombstones" in run.output and "verified" in run.output
    assert "0 missed deletes, 0 sides in two framings" in run.output
    assert _read_as_compacted(kafka_bootstrap, topic, scope) == before
    after = _audit(kafka_bootstrap, topic, scope, "confluent-header")
    assert after.clean and after.phantom_keys == 0
    assert not [f for f in after.report.findings
                if f.rule.name in ("mixed-framing", "audit-unlisted-schema-id")]
    framings = after.data["framings"]
    assert {k: n for k, n in framings["key"]["live"].items() if n} == {"header": 11}
    assert {k: n for k, n in framings["value"]["live"].items() if n} == {"header": 11}
    # the prefix-framed records are still read (nothing compacts here): the history shows both
    assert framings["key"]["records"]["id"] > 0

    rerun = _migrate(kafka_bootstrap, topic, scope, tmp_path, "confluent", "confluent-header")
    assert rerun.exit_code == 0 and "nothing written" in rerun.output, rerun.output

    back = _migrate(kafka_bootstrap, topic, scope, tmp_path, "confluent-header", "confluent")
    assert back.exit_code == 0, back.output
    assert _read_as_compacted(kafka_bootstrap, topic, scope) == before
    again = _audit(kafka_bootstrap, topic, scope, "confluent")
    assert again.clean
    assert {k: n for k, n in again.data["framings"]["key"]["live"].items() if n} == {"id": 11}


def test_an_audit_of_producers_that_disagree_exits_1_with_the_framing_finding(
        kafka_bootstrap: str, scope: str, tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from keyguard.guard.cli.audit_cmd import audit_cmd

    topic = new_topic(kafka_bootstrap, PARTITIONS, {"cleanup.policy": "compact"})
    _produce(kafka_bootstrap, topic, _options(scope, "confluent", "confluent"),
             [(f"order-{i:04d}", i) for i in range(4)])
    _produce(kafka_bootstrap, topic, _options(scope, "confluent-header", "confluent"),
             [(f"order-{i:04d}", 7) for i in range(2, 6)])
    app = typer.Typer()
    app.command("audit")(audit_cmd)
    app.command("other")(lambda: None)
    result = CliRunner().invoke(app, [
        "audit", "--topic", topic, "--bootstrap", kafka_bootstrap, "--columns", COLUMNS,
        "--primary-key", "code", "--key-format", "avro-confluent", "--value-format",
        "avro-confluent", "--registry", f"mock://{scope}", "--format", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.output)
    rules = {f["rule"]["id"] for f in doc["findings"]}
    assert {"KG958", "KG951"} <= rules  # the framings disagree; keys 2 and 3 are phantoms
    assert doc["audit"]["framings"]["key"]["live"] == {"none": 0, "header": 4, "id": 4,
                                                       "guid": 0, "both": 0}
    assert doc["audit"]["totals"]["phantom_keys"] == 2
