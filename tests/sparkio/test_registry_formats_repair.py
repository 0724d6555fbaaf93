"""Every registry format in `keyguard audit` and `keyguard migrate`: keys written under a first
key schema, then under a second one that writes the same body with another schema id, are
phantoms to the audit (told apart by their ids), and the migration repairs them: one encoding
left, the audit clean. json-registry and protobuf-registry (and the avro-registry alias) go
through the same frame-generic code as avro-confluent."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from broker import new_topic
from confluent_kafka import Producer

from keyguard.formats.partitioner import partition_for
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.scan import audit_topic
from keyguard.sparkio.migrate_topic import Migration, migrate_topic

pytestmark = pytest.mark.broker

TABLE = parse_columns("id BIGINT NOT NULL, name STRING")
PROTO_KEY = 'syntax = "proto3";\npackage shop;\nmessage Key { int64 id = 1; }\n'


def _schemas(fmt: str) -> tuple[str | None, str]:
    """(first key schema, second key schema): the same key body, two registered schemas."""
    if fmt == "json-registry":
        plan = open_plan(TABLE, {"topic": "t", "primary-key": "id", "key.format": fmt,
                                 "key.json-registry.url": "mock://unused", "value.format": "json"})
        derived = json.loads(plan.key_codec.written_schema().text)
        return None, json.dumps({**derived, "description": "the order key, v2"})
    if fmt == "protobuf-registry":
        return PROTO_KEY, PROTO_KEY + "message Audit { string by = 1; }\n"
    return None, json.dumps({"type": "record", "name": "Key", "namespace": "com.acme.v2",
                             "fields": [{"name": "id", "type": "long"}]})


def _options(fmt: str, scope: str, schema: str | None) -> dict[str, str]:
    options = {"primary-key": "id", "key.format": fmt, f"key.{fmt}.url": f"mock://{scope}",
               "value.format": "json"}
    if schema is not None:
        options[f"key.{fmt}.schema"] = schema
    return options


def _produce(bootstrap: str, topic: str, options: dict[str, str], rows: list[dict[str, Any]]
             ) -> int:
    plan = open_plan(TABLE, {**options, "topic": topic})
    bind_plan_schema_ids(plan)
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                  "linger.ms": 5, "log_level": 0})
    for row in rows:
        key, value = plan.encode(row)
        p.produce(topic, key=key, value=value, partition=partition_for(key, 3))
    assert p.flush(15) == 0
    return int(plan.key_codec.schema_id)  # type: ignore[attr-defined]


@pytest.mark.parametrize("fmt", ["json-registry", "protobuf-registry", "avro-registry"])
def test_audit_finds_and_migrate_repairs_phantoms_of_a_registry_format(
        fmt: str, kafka_bootstrap: str, tmp_path: Path) -> None:
    scope = f"formats-{uuid.uuid4().hex[:8]}"
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    first, second = _schemas(fmt)
    v1, v2 = _options(fmt, scope, first), _options(fmt, scope, second)
    id1 = _produce(kafka_bootstrap, topic, v1, [{"id": i, "name": "v1"} for i in range(8)])
    id2 = _produce(kafka_bootstrap, topic, v2, [{"id": i, "name": "v2"} for i in range(3)])
    assert id1 != id2

    reader = open_plan(TABLE, {**v1, "topic": topic})
    before = audit_topic(topic, reader, bootstrap=kafka_bootstrap, registry=MockRegistry(scope))
    assert (before.phantom_keys, before.misplaced_keys, before.undecodable) == (3, 0, 0)
    ids = {s["schema_id"] for s in before.data["schema_ids"]["key"]}
    assert ids == {id1, id2}
    phantom = before.report.findings[0]
    assert phantom.rule.name == "phantom-key" and phantom.witness is not None
    assert {phantom.witness.old_bytes[1:5], phantom.witness.new_bytes[1:5]} == {
        id1.to_bytes(4, "big"), id2.to_bytes(4, "big")}

    report = migrate_topic(Migration(topic=topic, bootstrap=kafka_bootstrap, table=TABLE,
                                     old=(v1,), new=v2, state_path=tmp_path / "state.json"))
    assert report.plan is not None
    assert (len(report.plan.rewrites), len(report.plan.tombstones)) == (5, 8)
    assert report.verification is not None and report.verification.clean
    assert report.verification.audit == (0, 0, 0, 0)

    after = audit_topic(topic, open_plan(TABLE, {**v2, "topic": topic}),
                        bootstrap=kafka_bootstrap, registry=MockRegistry(scope))
    assert (after.phantom_keys, after.misplaced_keys, after.missed_deletes) == (0, 0, 0)
    live = [e for e in after.data["per_partition"]]
    assert sum(p["live_keys"] for p in live) == 8
