"""The writer end to end on the suite's broker: every format, the guard, null keys, a large
batch, a streaming query restarted from its checkpoint, exactly-once on noida."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from broker import new_topic

from keyguard.formats.errors import NullKeyError
from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import resolve_plan
from keyguard.formats.registry.registration import open_plan
from keyguard.formats.spark_schema import from_spark_schema
from keyguard.sparkio.options import CONNECTOR_OPTIONS

Row = tuple[Any, ...]


def expected_table(rows: list[Row], columns: list[str], pk: list[str],
                   op: str | None = "op") -> dict[tuple[Any, ...], dict[str, Any]]:
    """Apply the changes in order: the table the topic must fold to."""
    table: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        row = dict(zip(columns, r, strict=True))
        kind = row.pop(op) if op else "+I"
        key = tuple(row[c] for c in pk)
        if kind == "-D":
            table.pop(key, None)
        elif kind != "-U":
            table[key] = row
    return table


def topic_table(reader: Any, spark: Any, topic: str, ddl: str, options: dict[str, str],
                pk: list[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The topic read back, folded, and decoded with the same plan."""
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(ddl)
    table_type = from_spark_schema(StructType([f for f in schema.fields if f.name != "op"]))
    plan = open_plan(table_type, options, extra=CONNECTOR_OPTIONS)  # the registry, at the edge
    records = reader.records(topic)
    parts = len({p for p, *_ in records}) and max(p for p, *_ in records) + 1
    for p, _, key, _ in records:
        assert p < 3 and partition_for(key, 3) == p, "key off its murmur2 partition"
    del parts
    out = {}
    for key, value in reader.table(topic).items():
        row = plan.decode(key, value)
        out[tuple(row[c] for c in pk)] = row
    return out


def options(bootstrap: str, topic: str, **extra: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap, **extra}


# -- every format, composite keys, updates and deletes ----------------------------------------

CHANGES: list[Row] = [
    ("eu", 1, "ann", 1.5, dt.date(2024, 1, 1), "+I"),
    ("eu", 2, "bob", 2.5, dt.date(2024, 1, 2), "+I"),
    ("us", 1, "cid", None, None, "+I"),
    ("eu", 1, "ann", 1.5, dt.date(2024, 1, 1), "-U"),
    ("eu", 1, "ann2", 3.5, dt.date(2024, 2, 1), "+U"),
    ("eu", 2, "bob", 2.5, dt.date(2024, 1, 2), "-D"),
    ("us", 3, "dan", 4.0, dt.date(2024, 3, 1), "+I"),
    ("us", 1, "cid2", 5.0, None, "+U"),
]
DDL = "region string, id int, name string, score double, day date, op string"
COLS = ["region", "id", "name", "score", "day", "op"]


@pytest.mark.parametrize(("key_format", "value_format", "path"), [
    ("json", "json", "format"),
    ("csv", "avro", "write_upsert"),
    ("avro-confluent", "avro-confluent", "write_upsert"),
    ("avro", "csv", "format"),
])
def test_formats_end_to_end(spark: Any, kafka_bootstrap: str, reader: Any, tmp_path: Path,
                            caplog: pytest.LogCaptureFixture, key_format: str,
                            value_format: str, path: str) -> None:
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    registry = f"file://{tmp_path / 'schemas'}"
    opts = options(kafka_bootstrap, topic, **{
        "primary-key": "region,id", "key.format": key_format, "value.format": value_format,
        "changelog.column": "op", "sink.parallelism": "3",
        "properties.sasl.password": "hunter2-never-shown"})
    for role, fmt in (("key", key_format), ("value", value_format)):
        if fmt == "avro-confluent":
            opts[f"{role}.avro-confluent.url"] = registry
        if fmt == "csv":  # an empty field reads back as a DATE only with a null literal
            opts[f"{role}.csv.null-literal"] = "NULL"
    df = spark.createDataFrame(CHANGES, DDL).repartition(2)  # changes of a key split apart
    caplog.set_level(logging.INFO, "keyguard")
    if path == "format":
        sparkio.prepare(df, **opts).write.format("upsert-kafka").options(**opts) \
            .mode("append").save()
    else:
        summary = sparkio.write_upsert(df, **opts)
        assert (summary.rows, summary.records, summary.tombstones, summary.dropped) == \
            (8, 7, 1, 1)
        assert set(summary.partitions) <= {0, 1, 2} and summary.topic_partitions == 3
        assert "hunter2" not in str(summary)
    assert "hunter2" not in caplog.text
    decode_opts = {k: v for k, v in opts.items() if k != "properties.sasl.password"}
    got = topic_table(reader, spark, topic, DDL, decode_opts, ["region", "id"])
    assert got == expected_table(CHANGES, COLS, ["region", "id"])


def test_raw_key_and_value_with_prefix_except_key(spark: Any, kafka_bootstrap: str,
                                                  reader: Any) -> None:
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    rows = [("a", "1"), ("b", "2"), ("a", "3")]
    opts = options(kafka_bootstrap, topic, **{
        "primary-key": "k_id", "key.format": "raw", "value.format": "raw",
        "key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"})
    summary = sparkio.write_upsert(spark.createDataFrame(rows, "k_id string, v string"), **opts)
    assert summary.records == 3
    assert reader.table(topic) == {b"a": b"3", b"b": b"2"}


def test_order_by_column_and_buffer_folding(spark: Any, kafka_bootstrap: str,
                                            reader: Any) -> None:
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    rows = [(i % 10, 1000 - i, f"v{i}") for i in range(1000)]  # seq decreasing with input
    opts = options(kafka_bootstrap, topic, **{
        "primary-key": "id", "key.format": "json", "value.format": "json",
        "sink.order-by": "seq", "sink.buffer-flush.max-rows": "100",
        "sink.buffer-flush.interval": "10s"})
    summary = sparkio.write_upsert(spark.createDataFrame(rows, "id int, seq int, v string"),
                                   **opts)
    assert summary.rows == 1000 and summary.records == 10 and summary.folded == 990
    table = {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}
    assert table == {i: f"v{i}" for i in range(10)}  # highest seq is the earliest row


def test_serialize_returns_key_value_partition(spark: Any, kafka_bootstrap: str) -> None:
    pytest.importorskip("pandas", reason="pyspark's mapInArrow needs pandas on the driver")
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    opts = options(kafka_bootstrap, topic, **{
        "primary-key": "region,id", "key.format": "json", "value.format": "json",
        "changelog.column": "op"})
    out = sparkio.serialize(spark.createDataFrame(CHANGES, DDL), **opts).collect()
    assert len(out) == 7 and sum(r["value"] is None for r in out) == 1
    assert all(r["partition"] == partition_for(r["key"], 3) for r in out)


# -- the guard ---------------------------------------------------------------------------------


def test_guard_blocks_a_breaking_key_change_and_the_override_logs_it(
        spark: Any, kafka_bootstrap: str, reader: Any, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    from keyguard import sparkio
    from keyguard.sparkio import GuardBlockedError

    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    reg = f"file://{tmp_path / 'schemas'}"
    base = options(kafka_bootstrap, topic, **{
        "primary-key": "id", "key.format": "avro-confluent", "value.format": "json",
        "key.avro-confluent.url": reg})
    sparkio.write_upsert(spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string"), **base)
    before = len(reader.records(topic))
    # The key gains a column: every existing key would get new bytes (and a new schema id).
    changed = spark.createDataFrame([(1, "x", "a")], "id int, region string, v string")
    opts = {**base, "primary-key": "id,region"}
    with pytest.raises(GuardBlockedError) as err:
        sparkio.write_upsert(changed, **opts)
    assert "BREAKING" in err.value.text and "nothing was written" in str(err.value)
    with pytest.raises(Exception, match="keyguard blocked the write"):
        changed.write.format("upsert-kafka").options(**opts).mode("append").save()
    with pytest.raises(GuardBlockedError):
        sparkio.serialize(changed, **opts)
    stream = (spark.readStream.format("rate").option("rowsPerSecond", 10).load()
              .selectExpr("cast(value as int) as id", "'x' as region", "'a' as v"))
    query = (stream.writeStream.format("upsert-kafka").options(**opts)
             .option("checkpointLocation", str(tmp_path / "blocked-checkpoint")).start())
    try:
        with pytest.raises(Exception, match="keyguard blocked the write"):
            query.awaitTermination(120)
    finally:
        query.stop()
    assert len(reader.records(topic)) == before
    caplog.set_level(logging.INFO, "keyguard")
    sparkio.write_upsert(changed, **opts, **{"guard.allow-breaking": "true"})
    loud = [r for r in caplog.records if r.levelno == logging.WARNING and "DESPITE" in r.message]
    assert loud and "BREAKING" in loud[0].message
    assert len(reader.records(topic)) == before + 1


def test_write_upsert_guards_once_in_the_callers_process(
        spark: Any, kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from keyguard import sparkio
    from keyguard.sparkio import guarding

    driver_runs: list[str] = []
    real = guarding.run_guard

    def counting(plan: Any, conn: Any, **kw: Any) -> Any:
        driver_runs.append(plan.topic)
        return real(plan, conn, **kw)

    monkeypatch.setattr(guarding, "run_guard", counting)
    caplog.set_level(logging.INFO, "keyguard")
    topic = new_topic(kafka_bootstrap, 3)
    summary_file = tmp_path / "summary.json"
    opts = options(kafka_bootstrap, topic, **{
        "primary-key": "id", "key.format": "avro-confluent", "value.format": "json",
        "key.avro-confluent.url": f"file://{tmp_path / 'schemas'}",
        "sink.summary-file": str(summary_file)})
    summary = sparkio.write_upsert(spark.createDataFrame([(1, "a")], "id int, v string"),
                                   **opts)
    # Here, in this process (no data source, no planner process, no hand-off file): once.
    assert driver_runs == [topic] and summary.records == 1 and "guard" in summary.phases
    relayed = [r for r in caplog.records if f"topic {topic} is safe to write" in r.message]
    assert len(relayed) == 1
    # The summary file the caller asked for, written by this process.
    assert json.loads(summary_file.read_text())["records"] == 1
    sparkio.serialize(spark.createDataFrame([(2, "b")], "id int, v string"), **opts).collect()
    assert driver_runs == [topic, topic]


def test_a_blocked_write_pickles_whole() -> None:
    import pickle

    from keyguard.guard.check import KEY_FIRST_VERSION
    from keyguard.guard.report import Finding, Report
    from keyguard.sparkio import GuardBlockedError

    report = Report.of([Finding(KEY_FIRST_VERSION, "$", "first", topic="t")], ["t: key"])
    blocked = GuardBlockedError("keyguard blocked the write to topic t", report=report,
                                text="BREAKING ...")
    back = pickle.loads(pickle.dumps(blocked))
    assert isinstance(back, GuardBlockedError)
    assert back.report == report and str(back) == str(blocked)


def test_guard_remembers_a_json_key_in_guard_registry(spark: Any, kafka_bootstrap: str,
                                                      tmp_path: Path) -> None:
    from keyguard import sparkio
    from keyguard.sparkio import GuardBlockedError

    topic = new_topic(kafka_bootstrap, 3)
    base = options(kafka_bootstrap, topic, **{
        "primary-key": "id", "key.format": "json", "value.format": "json",
        "guard.registry": f"file://{tmp_path / 'schemas'}"})
    sparkio.write_upsert(spark.createDataFrame([(1, "a")], "id int, v string"), **base)
    renamed = spark.createDataFrame([(1, "a")], "user_id int, v string")
    with pytest.raises(GuardBlockedError):
        sparkio.write_upsert(renamed, **{**base, "primary-key": "user_id"})


def test_null_primary_key_fails_before_any_write(spark: Any, kafka_bootstrap: str,
                                                 reader: Any) -> None:
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    df = spark.createDataFrame([(1, "a"), (None, "b"), (None, "c")], "id int, v string")
    opts = options(kafka_bootstrap, topic, **{"primary-key": "id", "key.format": "json",
                                              "value.format": "json"})
    with pytest.raises(NullKeyError, match="2 rows in the DataFrame with a null primary-key") \
            as err:
        sparkio.write_upsert(df, **opts)
    assert "'v': 'b'" in str(err.value) or "'v': 'c'" in str(err.value)
    # Already partitioned by the key: Spark would drop a repartition by the same key, so the
    # writer shuffles by its own expression and the check still ends before any write task.
    with pytest.raises(NullKeyError, match="2 rows in the DataFrame"):
        sparkio.write_upsert(df.repartition(2, "id"), **opts)
    assert reader.records(topic) == []


def test_not_null_key_columns_need_no_null_key_pass(spark: Any) -> None:
    from keyguard.sparkio.options import resolve_connector
    from keyguard.sparkio.writer import nullable_key, table_type

    df = spark.range(3).selectExpr("id", "case when id > 0 then 'x' end as v")
    conn = resolve_connector({"topic": "t", "primary-key": "id,v", "key.format": "json",
                              "value.format": "json"}, require_bootstrap=False)
    pl = resolve_plan(table_type(df.schema, conn), conn.raw, extra=CONNECTOR_OPTIONS)
    assert nullable_key(df, pl) == ["v"]  # spark.range's id is NOT NULL


# -- scale, streaming, exactly-once ----------------------------------------------------------


def test_a_100k_row_batch(spark: Any, kafka_bootstrap: str, reader: Any) -> None:
    from pyspark.sql import functions as F

    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    df = spark.range(100_000).select((F.col("id") % 50_000).alias("k"),
                                     F.col("id").alias("v"))
    opts = options(kafka_bootstrap, topic, **{"primary-key": "k", "key.format": "json",
                                              "value.format": "json"})
    summary = sparkio.write_upsert(df, **opts)
    assert summary.records == 100_000 and summary.tasks >= 2
    table = reader.table(topic)
    assert len(table) == 50_000
    assert all(json.loads(v)["v"] >= 50_000 for v in table.values())  # later row wins


def test_the_next_write_reuses_the_workers_producers_unless_told_not_to(
        spark: Any, kafka_bootstrap: str, reader: Any) -> None:
    from keyguard import sparkio
    df = spark.createDataFrame([(i % 40, i) for i in range(200)], "k INT, v INT")
    opts = {"primary-key": "k", "key.format": "json", "value.format": "json"}
    topics = [new_topic(kafka_bootstrap, 3) for _ in range(3)]
    summaries = [sparkio.write_upsert(df, **options(kafka_bootstrap, t, **opts))
                 for t in topics[:2]]
    summaries.append(sparkio.write_upsert(df, **options(
        kafka_bootstrap, topics[2], **opts, **{"sink.producer-reuse": "false"})))
    assert summaries[1].phases["tasks_reusing_a_producer"] >= 1  # a reused Python worker
    assert summaries[2].phases["tasks_reusing_a_producer"] == 0
    for topic, summary in zip(topics, summaries, strict=True):
        assert summary.records == 200
        table = reader.table(topic)
        assert len(table) == 40
        assert all(json.loads(v)["v"] >= 160 for v in table.values())  # later row wins


def test_streaming_query_restarted_from_its_checkpoint(spark: Any, kafka_bootstrap: str,
                                                       reader: Any, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    src.mkdir()
    files = [[{"id": (f * 7 + i) % 20, "v": f * 100 + i, "op": "-D" if i % 9 == 8 else "+U"}
              for i in range(30)] for f in range(6)]

    def put(n: int) -> None:
        path = src / f"part-{n:03d}.json"
        path.write_text("\n".join(json.dumps(r) for r in files[n]))
        stamp = time.time() - 100 + n  # the file source takes files in modification order
        os.utime(path, (stamp, stamp))

    opts = options(kafka_bootstrap, topic, **{"primary-key": "id", "key.format": "json",
                                              "value.format": "json",
                                              "changelog.column": "op"})

    def start(trigger: dict[str, Any]) -> Any:
        stream = (spark.readStream.schema("id int, v int, op string")
                  .option("maxFilesPerTrigger", 1).json(str(src)))
        return (stream.writeStream.format("upsert-kafka").options(**opts)
                .option("checkpointLocation", str(ckpt)).trigger(**trigger).start())

    for n in range(3):
        put(n)
    query = start({"processingTime": "200 milliseconds"})
    deadline = time.monotonic() + 60
    while not query.recentProgress and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()  # killed, possibly in the middle of a micro-batch
    assert query.exception() is None
    for n in range(3, 6):
        put(n)
    query = start({"availableNow": True})
    query.awaitTermination(120)
    assert query.exception() is None
    rows = [(r["id"], r["v"], r["op"]) for f in files for r in f]
    expected = {k: row["v"] for (k,), row in
                expected_table(rows, ["id", "v", "op"], ["id"]).items()}
    got = {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}
    assert got == expected


def test_exactly_once_on_noida(spark: Any, kafka_brokers: Any, reader_for: Any) -> None:
    from keyguard import sparkio
    try:
        bootstrap = kafka_brokers.get("noida").bootstrap
    except Exception as e:  # BrokerMissing, or an external broker set for the suite
        pytest.skip(f"noida: {e}")
    topic = new_topic(bootstrap, 3)
    opts = options(bootstrap, topic, **{
        "primary-key": "id", "key.format": "json", "value.format": "json",
        "sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": topic})
    df = spark.createDataFrame([(i % 5, i) for i in range(50)], "id int, v int")
    summary = sparkio.write_upsert(df, **opts)
    assert summary.delivery_guarantee == "exactly-once" and summary.records == 50
    records = reader_for(bootstrap).records(topic)  # read_committed
    assert len(records) == 50
    table = {json.loads(k)["id"]: json.loads(v)["v"] for _, _, k, v in records}
    assert table == {i: 45 + i for i in range(5)}
