"""The writer and reader on a Spark standalone cluster: a master and two workers, each in its
own JVM, the driver in its own process (see conftest.py). Executors share nothing with the
driver but what Spark ships: their own working directories and Python workers."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import cluster_scenarios as sc
from broker import new_topic

DDL = "id int, v string, op string"


def expected(rows: list[tuple[Any, Any, str]]) -> dict[Any, Any]:
    table: dict[Any, Any] = {}
    for id_, v, op in rows:
        if op == "-D":
            table.pop(id_, None)
        else:
            table[id_] = v
    return table


def test_write_and_read_back_with_tasks_on_both_workers(
        cluster_driver: Any, standalone: Any, kafka_bootstrap: str, reader: Any) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    rows = sc.changes(4000)
    extra = {"key.format": "json", "value.format": "json", "changelog.column": "op",
             "sink.parallelism": "4"}
    summary = cluster_driver.run(sc.write, kafka_bootstrap, topic, rows, DDL, extra)
    assert not isinstance(summary, sc.Failure), summary
    want = expected(rows)
    tombstones = sum(op == "-D" for _, _, op in rows)
    assert (summary["rows"], summary["tasks"]) == (4000, 4)
    assert summary["records"] == summary["upserts"] + summary["tombstones"]
    assert summary["tombstones"] == tombstones and summary["records"] <= 4000
    # The tasks of the write ran on two executors, one per worker (each executor's working
    # directory is under its worker's work dir: <worker>/<app id>/<executor id>).
    placed = summary["executors"]
    assert placed["tasks"] == 4 and len(placed["executors"]) == 2, placed
    homes = {e: [d.parent.parent.name
                 for d in standalone.root.glob(f"worker*/{cluster_driver.app_id}/{e}")]
             for e in placed["executors"]}
    assert sorted(h for hs in homes.values() for h in hs) == ["worker0", "worker1"], homes
    # The broker's view, and the data source's read on the cluster, agree with the changes.
    got = {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}
    assert got == want
    back = cluster_driver.run(sc.read, kafka_bootstrap, topic,
                              {"key.format": "json", "value.format": "json"},
                              "id int, v string")
    assert {r["id"]: r["v"] for r in back} == want


def test_streaming_query_restarted_on_the_cluster(
        cluster_driver: Any, kafka_bootstrap: str, reader: Any, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    files = [[{"id": (f * 7 + i) % 20, "v": f * 100 + i, "op": "-D" if i % 9 == 8 else "+U"}
              for i in range(30)] for f in range(4)]
    outcome = cluster_driver.run(sc.stream, kafka_bootstrap, topic, str(tmp_path), files)
    assert outcome is None, outcome
    want = expected([(r["id"], r["v"], str(r["op"])) for f in files for r in f])
    got = {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}
    assert got == want


def test_a_blocked_write_raises_guard_blocked_error(
        cluster_driver: Any, kafka_bootstrap: str, reader: Any, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    extra = {"key.format": "json", "value.format": "json",
             "guard.registry": f"file://{tmp_path / 'schemas'}"}
    first = cluster_driver.run(sc.write, kafka_bootstrap, topic, [(1, "a")], "id int, v string",
                               extra)
    assert not isinstance(first, sc.Failure), first
    before = reader.records(topic)
    renamed = {**extra, "primary-key": "user_id"}
    blocked = cluster_driver.run(sc.write, kafka_bootstrap, topic, [(1, "a")],
                                 "user_id int, v string", renamed)
    assert isinstance(blocked, sc.Failure) and blocked.type == "GuardBlockedError", blocked
    assert "nothing was written" in blocked.message and "BREAKING" in blocked.message
    via_format = cluster_driver.run(sc.write_via_format, kafka_bootstrap, topic, [(1, "a")],
                                    "user_id int, v string", renamed)
    assert via_format is not None and "keyguard blocked the write" in via_format.message
    assert reader.records(topic) == before


def _pin(registry: Path, subject: str, schema: str, schema_id: int) -> None:
    d = registry / "subjects" / subject
    d.mkdir(parents=True)
    (d / "v1.avsc").write_text(schema)
    (d / "ids.json").write_text(json.dumps({"1": schema_id}))


def test_a_driver_only_registry_with_pinned_ids(
        cluster_driver: Any, kafka_bootstrap: str, reader: Any) -> None:
    """The registry is a relative file:// path that exists only in the driver's working
    directory: tasks that opened it themselves would each see an empty registry and mint
    ids of their own. The bytes must carry the pinned ids."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    from keyguard.formats.plan import resolve_plan
    from keyguard.formats.spark_schema import from_spark_schema
    from keyguard.sparkio.guarding import topic_check
    from keyguard.sparkio.options import CONNECTOR_OPTIONS

    topic = new_topic(kafka_bootstrap, 3)
    registry = f"reg-{topic}"
    extra = {"key.format": "avro-confluent", "value.format": "avro-confluent",
             "key.avro-confluent.url": f"file://{registry}",
             "value.avro-confluent.url": f"file://{registry}"}
    ddl = "id int, v string"
    schema = StructType([StructField("id", IntegerType()), StructField("v", StringType())])
    plan = resolve_plan(from_spark_schema(schema),
                        sc.options(kafka_bootstrap, topic, **extra), extra=CONNECTOR_OPTIONS)
    spec = topic_check(plan, None)
    assert spec.candidate_key is not None and spec.candidate_value is not None
    root = cluster_driver.cwd / registry
    _pin(root, f"{topic}-key", spec.candidate_key.text, 100017)
    _pin(root, f"{topic}-value", spec.candidate_value.text, 100023)
    rows = [(i, f"v{i}") for i in range(200)]
    summary = cluster_driver.run(sc.write, kafka_bootstrap, topic, rows, ddl,
                                 {**extra, "sink.parallelism": "4"})
    assert not isinstance(summary, sc.Failure), summary
    records = reader.records(topic)
    assert len(records) == 200
    ids = {(struct.unpack(">bI", k[:5]), struct.unpack(">bI", v[:5])) for _, _, k, v in records}
    assert ids == {((0, 100017), (0, 100023))}
    # The read resolves the ids on the driver too: the executors never see the registry.
    back = cluster_driver.run(sc.read, kafka_bootstrap, topic, extra, ddl)
    assert not isinstance(back, sc.Failure), back
    assert {r["id"]: r["v"] for r in back} == dict(rows)


def test_shipped_zip_and_the_missing_keyguard_message(
        bare_driver: Any, keyguard_zip: str, kafka_bootstrap: str, reader: Any,
        tmp_path: Path) -> None:
    """Executors whose Python lacks keyguard: one clear error before anything is produced;
    then keyguard shipped as a zip (addPyFile, as --py-files does): the write succeeds."""
    topic = new_topic(kafka_bootstrap, 3)
    extra = {"key.format": "json", "value.format": "json", "sink.parallelism": "2"}
    rows = [(i, f"v{i}", "+I") for i in range(100)]
    missing = bare_driver.run(sc.write, kafka_bootstrap, topic, rows, DDL,
                              {**extra, "changelog.column": "op"})
    assert isinstance(missing, sc.Failure) and missing.kind == "spark-workers", missing
    assert "keyguard is not installed in the Python workers of the executors" in \
        missing.message
    assert "spark.submit.pyFiles" in missing.message and "Traceback" not in missing.message
    assert reader.records(topic) == []
    # The data source's own tasks (batch write, read) on those executors: the objects Spark
    # ships load without keyguard (keyguard.sparkio.shim) and the task fails with the same message,
    # first in Spark's error, not `No module named 'keyguard'` inside a cloudpickle traceback.
    written = bare_driver.run(sc.write_via_format, kafka_bootstrap, topic, rows, DDL,
                              {**extra, "changelog.column": "op"})
    streamed = bare_driver.run(sc.stream_once, kafka_bootstrap, topic, str(tmp_path),
                               [{"id": i, "v": i, "op": "+I"} for i in range(10)])
    read = bare_driver.run(sc.read_or_failure, kafka_bootstrap, topic, extra,
                           "id int, v string")
    for outcome in (written, streamed, read):
        assert isinstance(outcome, sc.Failure), outcome
        # keyguard's message right after Spark's prefix: from a task ("Python worker:"), or
        # earlier, from the data source's planner Python on the driver host when that Python is
        # the executors' too (it then fails before any task starts).
        assert re.search(r"(Python worker:|Failed to initialize Python data source \w+:)\s*"
                         r"keyguard\.sparkio\.shim\.KeyguardMissingError: keyguard is not "
                         r"installed in the Python (workers of the executors|that Spark runs "
                         r"for the upsert-kafka data source's)", outcome.message), outcome
        assert "ModuleNotFoundError: No module named 'keyguard'" in outcome.message
        assert "spark.submit.pyFiles" in outcome.message and "spark.archives" in outcome.message
        assert "cloudpickle" not in outcome.message and "Traceback" not in outcome.message
    assert reader.records(topic) == []
    bare_driver.run(sc.add_py_file, keyguard_zip)
    summary = bare_driver.run(sc.write, kafka_bootstrap, topic, rows, DDL,
                              {**extra, "changelog.column": "op"})
    assert not isinstance(summary, sc.Failure), summary
    assert summary["records"] == 100
    got = {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}
    assert got == expected(rows)
    # format("upsert-kafka") also plans in a Python Spark starts on the driver host; here that
    # is the same bare Python, which addPyFile does not reach (README: "Running on a cluster").
