"""`keyguard audit` and `keyguard.guard.audit.scan.audit_topic` against the suite's broker: phantom
keys after a key change, misplaced keys from librdkafka's default partitioner, a clean topic, bad
input and an unreachable broker."""

from __future__ import annotations

import json
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from broker import new_topic
from confluent_kafka import Producer
from typer.testing import CliRunner

from keyguard.formats.errors import EXIT_BREAKING, EXIT_INVALID, EXIT_OK, EXIT_UNREACHABLE
from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import UpsertPlan
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.scan import audit_topic
from keyguard.guard.cli import app

pytestmark = pytest.mark.broker
runner = CliRunner()


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]], *,
             murmur2: bool = True) -> list[int]:
    """Produce in order, every delivery checked; the partition of each record."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 20}
    if murmur2:
        conf["partitioner"] = "murmur2_random"
    p = Producer(conf)
    where: list[int] = [-1] * len(records)

    def delivered(i: int):  # type: ignore[no-untyped-def]
        def cb(err, msg) -> None:  # type: ignore[no-untyped-def]
            assert err is None, err
            where[i] = msg.partition()
        return cb

    for i, (key, value) in enumerate(records):
        p.produce(topic, key=key, value=value, on_delivery=delivered(i))
    assert p.flush(15) == 0
    return where


def _json_key(i: int, *, reverse: bool = False) -> bytes:
    return (f'{{"region":"r{i % 3}","id":{i}}}' if reverse
            else f'{{"id":{i},"region":"r{i % 3}"}}').encode()


def _json_value(i: int, n: str) -> bytes:
    return f'{{"id":{i},"region":"r{i % 3}","n":"{n}"}}'.encode()


_JSON_ARGS = ["--key-format", "json", "--value-format", "json",
              "--columns", "id BIGINT, region STRING, n STRING", "--primary-key", "id,region"]


def _audit(bootstrap: str, topic: str, *args: str, tmp_path: Path,
           fmt: str = "json") -> tuple[int, dict[str, Any], str]:
    out = tmp_path / f"audit-{uuid.uuid4().hex[:6]}.{fmt}"
    r = runner.invoke(app, ["audit", "--topic", topic, "--bootstrap", bootstrap, *args,
                            "--format", fmt, "--output", str(out)])
    text = out.read_text() if out.exists() else ""
    return r.exit_code, (json.loads(text) if fmt == "json" and text else {}), r.output


def test_clean_topic_exits_0_with_its_numbers(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    records = [(_json_key(i), _json_value(i, "a")) for i in range(30)]
    records += [(_json_key(i), _json_value(i, "b")) for i in range(10)]  # updates
    records += [(_json_key(i), None) for i in range(25, 30)]  # deletes
    _produce(kafka_bootstrap, topic, records)
    code, doc, output = _audit(kafka_bootstrap, topic, *_JSON_ARGS, tmp_path=tmp_path)
    assert code == EXIT_OK, output
    t = doc["audit"]["totals"]
    assert (t["records"], t["tombstones"], t["distinct_keys"], t["live_keys"]) == (45, 5, 30, 25)
    assert (t["phantom_keys"], t["misplaced"], t["undecodable_keys"]) == (0, 0, 0)
    assert doc["verdict"] == "safe" and doc["findings"] == []
    assert doc["audit"]["configs"]["cleanup.policy"] == "compact"
    assert sum(p["records"] for p in doc["audit"]["per_partition"]) == 45


def test_json_field_order_change_leaves_phantom_keys(kafka_bootstrap: str,
                                                     tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    v1 = [(_json_key(i), _json_value(i, "v1")) for i in range(20)]
    v2 = [(_json_key(i, reverse=True), _json_value(i, "v2")) for i in range(8)]
    _produce(kafka_bootstrap, topic, v1 + v2)
    code, doc, output = _audit(kafka_bootstrap, topic, *_JSON_ARGS, tmp_path=tmp_path)
    assert code == EXIT_BREAKING, output
    t = doc["audit"]["totals"]
    assert (t["phantom_keys"], t["orphaned_records"], t["live_keys"]) == (8, 8, 28)
    phantom = [f for f in doc["findings"] if f["rule"]["name"] == "phantom-key"]
    assert len(phantom) == 5  # examples, bounded
    w = phantom[0]["witness"]
    assert json.loads(bytes.fromhex(w["old_hex"])) == json.loads(bytes.fromhex(w["new_hex"]))
    assert w["old_hex"] != w["new_hex"]
    assert w["key"]["id"] in range(8)
    # --ignore the rule: the findings are hidden, the exit code follows.
    code, doc, _ = _audit(kafka_bootstrap, topic, *_JSON_ARGS, "--ignore", "phantom-key",
                          tmp_path=tmp_path)
    assert code == EXIT_OK and doc["ignored"][0]["count"] == 5


def test_a_flink_ddl_gives_the_same_audit_as_the_flags(kafka_bootstrap: str,
                                                        tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    v1 = [(_json_key(i), _json_value(i, "v1")) for i in range(12)]
    v2 = [(_json_key(i, reverse=True), _json_value(i, "v2")) for i in range(4)]
    _produce(kafka_bootstrap, topic, v1 + v2)
    ddl = tmp_path / "table.sql"
    ddl.write_text(f"""CREATE TABLE t (
      id BIGINT, region STRING, n STRING,
      ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
      PRIMARY KEY (id, region) NOT ENFORCED
    ) WITH ('connector' = 'upsert-kafka', 'topic' = '{topic}',
      'properties.bootstrap.servers' = '{kafka_bootstrap}',
      'key.format' = 'json', 'value.format' = 'json')""")
    by_flags = _audit(kafka_bootstrap, topic, *_JSON_ARGS, tmp_path=tmp_path)
    out = tmp_path / "ddl.json"
    r = runner.invoke(app, ["audit", "--flink-ddl", str(ddl), "--bootstrap", kafka_bootstrap,
                            "--format", "json", "--output", str(out)])
    assert r.exit_code == by_flags[0] == EXIT_BREAKING, r.output
    assert json.loads(out.read_text()) == by_flags[1]
    assert "metadata column ts" in r.output  # the ignored part is said
    # the DDL names the topic: --topic beside it is a clash, no topic at all is an error
    r = runner.invoke(app, ["audit", "--flink-ddl", str(ddl), "--topic", "other",
                            "--bootstrap", kafka_bootstrap])
    assert r.exit_code == EXIT_INVALID and "--topic" in r.output
    r = runner.invoke(app, ["audit", "--bootstrap", kafka_bootstrap, *_JSON_ARGS])
    assert r.exit_code == EXIT_INVALID and "--topic is required" in r.output


def _avro_plan(scope: str, topic: str, schema: dict[str, Any]) -> UpsertPlan:
    plan = open_plan(parse_columns("id BIGINT, n STRING"), {
        "topic": topic, "primary-key": "id", "key.format": "avro-confluent",
        "key.avro-confluent.url": f"mock://{scope}",
        "key.avro-confluent.schema": json.dumps(schema), "value.format": "json"})
    bind_plan_schema_ids(plan)
    return plan


def test_avro_confluent_key_v1_then_v2_phantoms_by_schema_id(kafka_bootstrap: str) -> None:
    scope = f"audit-{uuid.uuid4().hex[:8]}"
    topic = new_topic(kafka_bootstrap, 3)
    v1 = {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "long"}]}
    v2 = {**v1, "namespace": "com.acme.v2"}  # the same body, another schema id
    p1, p2 = _avro_plan(scope, topic, v1), _avro_plan(scope, topic, v2)
    id1, id2 = p1.key_codec.schema_id, p2.key_codec.schema_id  # type: ignore[attr-defined]
    assert id1 != id2
    records = [p1.encode({"id": i, "n": "a"}) for i in range(12)]
    records += [p2.encode({"id": i, "n": "b"}) for i in range(4)]
    records += [(p2.encode({"id": 11, "n": "x"})[0], None)]  # a v2 delete: misses v1's key
    records += [(b"\x00\x00\x0f\x42\x3f\x02", b'{"n":"?"}')]  # id 999999: no such schema
    _produce(kafka_bootstrap, topic, records)  # type: ignore[arg-type]

    reader = open_plan(parse_columns("id BIGINT, n STRING"), {
        "topic": topic, "primary-key": "id", "key.format": "avro-confluent",
        "key.avro-confluent.url": f"mock://{scope}", "value.format": "json"})
    result = audit_topic(topic, reader, bootstrap=kafka_bootstrap, registry=MockRegistry(scope))

    assert (result.phantom_keys, result.orphaned_records, result.misplaced_keys) == (4, 4, 0)
    per_id: dict[int, int] = {}
    for s in result.data["schema_ids"]["key"]:
        per_id[s["schema_id"]] = per_id.get(s["schema_id"], 0) + s["records"]
        assert s["listed"] is (s["schema_id"] != 999999)
    assert per_id == {id1: 12, id2: 5, 999999: 1}
    assert result.undecodable == 1
    (unlisted,) = [f for f in result.report.findings if f.rule.name == "audit-unlisted-schema-id"]
    assert "schema id 999999 (1 records)" in unlisted.message
    assert f"{topic}-key" in unlisted.message
    f = result.report.findings[0]
    assert f.rule.name == "phantom-key"
    assert f"schema id {id1}, {topic}-key v1" in f.message
    assert f"schema id {id2}, {topic}-key v2" in f.message
    assert f.witness is not None and f.witness.key == {"id": f.witness.key["id"]}
    assert {f.witness.old_bytes[1:5], f.witness.new_bytes[1:5]} == {  # type: ignore[index]
        id1.to_bytes(4, "big"), id2.to_bytes(4, "big")}


def test_default_librdkafka_partitioner_leaves_misplaced_keys(kafka_bootstrap: str,
                                                              tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 4, {"cleanup.policy": "compact"})
    records = [(_json_key(i), _json_value(i, "a")) for i in range(40)]
    where = _produce(kafka_bootstrap, topic, records, murmur2=False)
    wrong = [i for i, (k, _) in enumerate(records) if where[i] != partition_for(k, 4)]
    assert wrong  # consistent_random (CRC32) disagrees with murmur2 on most keys
    code, doc, output = _audit(kafka_bootstrap, topic, *_JSON_ARGS, tmp_path=tmp_path)
    assert code == EXIT_BREAKING, output
    assert doc["audit"]["totals"]["misplaced"] == len(wrong)
    per = {p["partition"]: p["misplaced"] for p in doc["audit"]["per_partition"]}
    for p in range(4):
        assert per[p] == sum(1 for i in wrong if where[i] == p)
    (f,) = [f for f in doc["findings"] if f["rule"]["name"] == "misplaced-key"]
    assert f["severity"] == "breaking"
    assert f["witness"]["old_partition"] != f["witness"]["new_partition"]


def test_sample_reads_a_bounded_share(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 2)
    _produce(kafka_bootstrap, topic, [(_json_key(i), _json_value(i, "a")) for i in range(50)])
    code, doc, output = _audit(kafka_bootstrap, topic, *_JSON_ARGS, "--sample", "10",
                               tmp_path=tmp_path)
    assert code == EXIT_OK, output
    assert doc["audit"]["totals"]["records"] == 10 and doc["audit"]["sample"] == 10
    assert doc["audit"]["captured_records"] == 50


def test_text_report_shows_the_table(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 1)
    _produce(kafka_bootstrap, topic, [(_json_key(1), _json_value(1, "a")), (None, b"x")])
    code, _, output = _audit(kafka_bootstrap, topic, *_JSON_ARGS, tmp_path=tmp_path,
                             fmt="text")
    assert code == EXIT_OK, output
    text = next(tmp_path.glob("audit-*.text")).read_text()
    assert "WARNING KG954 null-key" in text
    assert f"audit of topic {topic} (1 partitions" in text
    assert "keyguard audit:" not in output  # no progress line when stderr is no terminal


# -- bad input, unreachable broker -------------------------------------------------------------


def test_unknown_topic_is_invalid_input(kafka_bootstrap: str, tmp_path: Path) -> None:
    code, doc, output = _audit(kafka_bootstrap, "no-such-topic-" + uuid.uuid4().hex[:6],
                               *_JSON_ARGS, tmp_path=tmp_path)
    assert code == EXIT_INVALID
    assert "does not exist" in output and doc["error"]["exit_code"] == EXIT_INVALID


@pytest.mark.parametrize("args, says", [
    (["--key-format", "jsn", "--value-format", "json", "--columns", "id BIGINT",
      "--primary-key", "id"], "jsn"),
    ([*_JSON_ARGS, "--sample", "0"], "--sample must be at least 1"),
    ([*_JSON_ARGS, "--format", "yaml"], "not a format of this command"),
    (["--key-format", "json", "--value-format", "json"], "--columns"),
])
def test_bad_input_exits_2_with_a_clear_message(args: list[str], says: str) -> None:
    r = runner.invoke(app, ["audit", "--topic", "t", "--bootstrap", "127.0.0.1:1", *args])
    assert r.exit_code == EXIT_INVALID, r.output
    assert says in r.output and "Traceback" not in r.output
    assert "keyguard: error (" in r.output


def test_missing_bootstrap_exits_2() -> None:
    r = runner.invoke(app, ["audit", "--topic", "t", *_JSON_ARGS])
    assert r.exit_code == EXIT_INVALID and "--bootstrap" in r.output


def test_registry_down_exits_3(kafka_bootstrap: str) -> None:
    topic = new_topic(kafka_bootstrap, 1)
    _produce(kafka_bootstrap, topic, [(b"\x00\x00\x00\x00\x01\x02", b'{"n":"a"}')])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = runner.invoke(app, ["audit", "--topic", topic, "--bootstrap", kafka_bootstrap,
                            "--registry", f"http://127.0.0.1:{port}", "--key-format",
                            "avro-confluent", "--value-format", "json", "--columns",
                            "id BIGINT, n STRING", "--primary-key", "id",
                            "-o", "key.avro-confluent.timeout=2s",
                            "-o", "key.avro-confluent.retries=0"])
    assert r.exit_code == EXIT_UNREACHABLE, r.output
    assert "keyguard: error (registry-unavailable)" in r.output


@pytest.mark.usefixtures("dead_broker_deadline")
def test_broker_down_exits_3() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = runner.invoke(app, ["audit", "--topic", "t", "--bootstrap", f"127.0.0.1:{port}",
                            "--kafka-config", "socket.connection.setup.timeout.ms=1500",
                            *_JSON_ARGS])
    assert r.exit_code == EXIT_UNREACHABLE, r.output
    assert f"127.0.0.1:{port}" in r.output


def test_delete_retention_is_judged_against_the_consumer_groups_lag(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """A group whose oldest unread record is older than delete.retention.ms can miss deletes
    once compaction removes tombstones; a group that keeps up does not."""
    from confluent_kafka import Consumer, TopicPartition

    topic = new_topic(kafka_bootstrap, 2, {"cleanup.policy": "compact",
                                           "delete.retention.ms": "600000"})
    hour_ago = int(time.time() * 1000) - 3_600_000
    p = Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random"})
    ends = [0, 0]

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        assert err is None, err
        ends[msg.partition()] = max(ends[msg.partition()], msg.offset() + 1)

    for i in range(10):
        p.produce(topic, key=_json_key(i), value=_json_value(i, "a"), timestamp=hour_ago + i,
                  on_delivery=delivered)
    assert p.flush(15) == 0
    lagging, current = f"lagging-{uuid.uuid4().hex[:6]}", f"current-{uuid.uuid4().hex[:6]}"
    for group, offset in ((lagging, 0), (current, None)):
        c = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group,
                      "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(topic, q, ends[q] if offset is None else offset)
                          for q in range(2)], asynchronous=False)
        c.close()
    code, doc, output = _audit(kafka_bootstrap, topic, *_JSON_ARGS, tmp_path=tmp_path)
    assert code == EXIT_OK, output  # a warning, not a breaking finding
    (f,) = [f for f in doc["findings"] if f["rule"]["name"] == "compaction-config"]
    assert f["path"] == "delete.retention.ms"
    assert f"consumer group '{lagging}'" in f["message"] and current not in f["message"]
    groups = {x["group"]: x for x in doc["audit"]["consumers"] if x["group"] in (lagging, current)}
    assert groups[lagging]["behind_ms"] >= 3_600_000 - 60_000
    assert sum(x["unread"] for x in doc["audit"]["consumers"] if x["group"] == current) == 0
