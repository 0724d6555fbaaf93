"""The writer and reader through Spark Connect (the default of Databricks Connect and of
serverless compute): this process is only a gRPC client; the data source and the tasks run in
the server's Python workers, and nothing may pass through a shared file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from broker import new_topic

DDL = "id int, v string, op string"


def rows_of(n: int) -> list[tuple[int, str, str]]:
    return [(i % (n // 4), f"v{i}", "-D" if i % 7 == 6 else "+U") for i in range(n)]


def expected(rows: list[tuple[Any, Any, str]]) -> dict[Any, Any]:
    table: dict[Any, Any] = {}
    for id_, v, op in rows:
        if op == "-D":
            table.pop(id_, None)
        else:
            table[id_] = v
    return table


def opts(bootstrap: str, topic: str, **extra: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap, "primary-key": "id",
            "key.format": "json", "value.format": "json", **extra}


@pytest.mark.parametrize("parallelism", [None, "3"])
def test_write_upsert_and_read_back(connect_spark: Any, kafka_bootstrap: str, reader: Any,
                                    tmp_path: Path, parallelism: str | None) -> None:
    import sparkio

    assert type(connect_spark).__module__.startswith("pyspark.sql.connect")
    topic = new_topic(kafka_bootstrap, 3)
    rows = rows_of(2000)
    extra = {"changelog.column": "op"}
    if parallelism:
        extra["sink.parallelism"] = parallelism
    summary_file = tmp_path / "summary.json"
    extra["sink.summary-file"] = str(summary_file)
    summary = sparkio.write_upsert(connect_spark.createDataFrame(rows, DDL),
                                   **opts(kafka_bootstrap, topic, **extra))
    tombstones = sum(op == "-D" for *_, op in rows)
    assert summary.rows == 2000 and summary.tombstones == tombstones
    assert summary.records == summary.upserts + summary.tombstones
    if parallelism:
        assert summary.tasks == 3
    # Written by this process (the client), from the stats the tasks returned as rows.
    assert json.loads(summary_file.read_text())["records"] == summary.records
    want = expected(rows)
    got = {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}
    assert got == want
    back = (connect_spark.read.format("upsert-kafka").options(**opts(kafka_bootstrap, topic))
            .schema("id int, v string").load().collect())
    assert {r["id"]: r["v"] for r in back} == want


def test_a_blocked_write_raises_guard_blocked_error(connect_spark: Any, kafka_bootstrap: str,
                                                    reader: Any, tmp_path: Path) -> None:
    import sparkio
    from sparkio import GuardBlockedError

    topic = new_topic(kafka_bootstrap, 3)
    base = opts(kafka_bootstrap, topic, **{"guard.registry": f"file://{tmp_path / 'reg'}"})
    sparkio.write_upsert(connect_spark.createDataFrame([(1, "a")], "id int, v string"), **base)
    before = reader.records(topic)
    renamed = connect_spark.createDataFrame([(1, "a")], "user_id int, v string")
    with pytest.raises(GuardBlockedError) as err:
        sparkio.write_upsert(renamed, **{**base, "primary-key": "user_id"})
    assert "nothing was written" in str(err.value) and "BREAKING" in err.value.text
    assert reader.records(topic) == before


def test_null_keys_fail_before_any_record(connect_spark: Any, kafka_bootstrap: str,
                                          reader: Any) -> None:
    import sparkio
    from formats.errors import NullKeyError

    topic = new_topic(kafka_bootstrap, 3)
    df = connect_spark.createDataFrame([(1, "a"), (None, "b")], "id int, v string")
    with pytest.raises(NullKeyError, match="1 row in the DataFrame with a null primary-key"):
        sparkio.write_upsert(df, **opts(kafka_bootstrap, topic))
    assert reader.records(topic) == []


def test_streaming_query_restarted_from_its_checkpoint(connect_spark: Any,
                                                       kafka_bootstrap: str, reader: Any,
                                                       tmp_path: Path) -> None:
    import os
    import time

    topic = new_topic(kafka_bootstrap, 3)
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    src.mkdir()
    files = [[{"id": (f * 5 + i) % 15, "v": f * 100 + i, "op": "-D" if i % 8 == 7 else "+U"}
              for i in range(20)] for f in range(4)]

    def put(n: int) -> None:
        path = src / f"part-{n:03d}.json"
        path.write_text("\n".join(json.dumps(r) for r in files[n]))
        stamp = time.time() - 100 + n
        os.utime(path, (stamp, stamp))

    def start(trigger: dict[str, Any]) -> Any:
        stream = (connect_spark.readStream.schema("id int, v int, op string")
                  .option("maxFilesPerTrigger", 1).json(str(src)))
        return (stream.writeStream.format("upsert-kafka")
                .options(**opts(kafka_bootstrap, topic, **{"changelog.column": "op"}))
                .option("checkpointLocation", str(ckpt)).trigger(**trigger).start())

    for n in range(2):
        put(n)
    query = start({"processingTime": "200 milliseconds"})
    deadline = time.monotonic() + 90
    while not query.recentProgress and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()
    assert query.exception() is None
    for n in range(2, 4):
        put(n)
    query = start({"availableNow": True})
    query.awaitTermination(180)
    assert query.exception() is None
    want = expected([(r["id"], r["v"], str(r["op"])) for f in files for r in f])
    got = {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}
    assert got == want


def test_prepare_with_the_data_source_and_serialize(connect_spark: Any, kafka_bootstrap: str,
                                                    reader: Any) -> None:
    """The data source's writer() and commit() run on the server; prepare and serialize
    need no SparkContext."""
    import sparkio
    from formats.partitioner import partition_for

    topic = new_topic(kafka_bootstrap, 3)
    rows = rows_of(400)
    o = opts(kafka_bootstrap, topic, **{"changelog.column": "op"})
    df = connect_spark.createDataFrame(rows, DDL)
    sparkio.prepare(df, **o).write.format("upsert-kafka").options(**o).mode("append").save()
    got = {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}
    assert got == expected(rows)
    out = sparkio.serialize(df, **o).collect()
    assert len(out) == len(rows) and all(
        r["partition"] == partition_for(r["key"], 3) for r in out)
    assert sum(r["value"] is None for r in out) == sum(op == "-D" for *_, op in rows)
