"""The writer and reader through Spark Connect (the default of Databricks Connect and of
serverless compute): the client process only speaks gRPC; the data source and the tasks run
in the server's Python workers, and nothing may pass through a shared file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cluster_scenarios as sc
import pytest
from broker import new_topic

DDL = "id int, v string, op string"
JSON = {"key.format": "json", "value.format": "json"}


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


def table_of(reader: Any, topic: str) -> dict[Any, Any]:
    return {json.loads(k)["id"]: json.loads(v)["v"] for k, v in reader.table(topic).items()}


def test_the_client_is_a_connect_session(connect_spark: Any) -> None:
    assert connect_spark.app_id.startswith("pyspark.sql.connect")


@pytest.mark.parametrize("parallelism", [None, "3"])
def test_write_upsert_and_read_back(connect_spark: Any, kafka_bootstrap: str, reader: Any,
                                    tmp_path: Path, parallelism: str | None) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    rows = rows_of(2000)
    summary_file = tmp_path / "summary.json"
    extra = {**JSON, "changelog.column": "op", "sink.summary-file": str(summary_file)}
    if parallelism:
        extra["sink.parallelism"] = parallelism
    summary = connect_spark.run(sc.write, kafka_bootstrap, topic, rows, DDL, extra, False)
    assert not isinstance(summary, sc.Failure), summary
    assert summary["rows"] == 2000
    assert summary["tombstones"] == sum(op == "-D" for *_, op in rows)
    assert summary["records"] == summary["upserts"] + summary["tombstones"]
    if parallelism:
        assert summary["tasks"] == 3
    # Written by the client, from the stats the tasks returned as rows.
    assert json.loads(summary_file.read_text())["records"] == summary["records"]
    want = expected(rows)
    assert table_of(reader, topic) == want
    back = connect_spark.run(sc.read, kafka_bootstrap, topic, JSON, "id int, v string")
    assert {r["id"]: r["v"] for r in back} == want


def test_a_blocked_write_raises_guard_blocked_error(connect_spark: Any, kafka_bootstrap: str,
                                                    reader: Any, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    extra = {**JSON, "guard.registry": f"file://{tmp_path / 'reg'}"}
    first = connect_spark.run(sc.write, kafka_bootstrap, topic, [(1, "a")], "id int, v string",
                              extra, False)
    assert not isinstance(first, sc.Failure), first
    before = reader.records(topic)
    blocked = connect_spark.run(sc.write, kafka_bootstrap, topic, [(1, "a")],
                                "user_id int, v string", {**extra, "primary-key": "user_id"},
                                False)
    assert isinstance(blocked, sc.Failure) and blocked.type == "GuardBlockedError", blocked
    assert "nothing was written" in blocked.message and "BREAKING" in blocked.message
    assert reader.records(topic) == before


def test_null_keys_fail_before_any_record(connect_spark: Any, kafka_bootstrap: str,
                                          reader: Any) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    failed = connect_spark.run(sc.write, kafka_bootstrap, topic, [(1, "a"), (None, "b")],
                               "id int, v string", JSON, False)
    assert isinstance(failed, sc.Failure) and failed.kind == "null-key", failed
    assert "1 row in the DataFrame with a null primary-key" in failed.message
    assert reader.records(topic) == []


def test_streaming_query_restarted_from_its_checkpoint(connect_spark: Any,
                                                       kafka_bootstrap: str, reader: Any,
                                                       tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    files = [[{"id": (f * 5 + i) % 15, "v": f * 100 + i, "op": "-D" if i % 8 == 7 else "+U"}
              for i in range(20)] for f in range(4)]
    outcome = connect_spark.run(sc.stream, kafka_bootstrap, topic, str(tmp_path), files)
    assert outcome is None, outcome
    want = expected([(r["id"], r["v"], str(r["op"])) for f in files for r in f])
    assert table_of(reader, topic) == want


def test_prepare_with_the_data_source_and_serialize(connect_spark: Any, kafka_bootstrap: str,
                                                    reader: Any) -> None:
    """The data source's writer() and commit() run on the server; prepare and serialize
    need no SparkContext."""
    from keyguard.formats.partitioner import partition_for

    topic = new_topic(kafka_bootstrap, 3)
    rows = rows_of(400)
    out = connect_spark.run(sc.prepare_then_format_and_serialize, kafka_bootstrap, topic, rows,
                            DDL, {**JSON, "changelog.column": "op"})
    assert table_of(reader, topic) == expected(rows)
    assert len(out) == len(rows) and all(
        r["partition"] == partition_for(r["key"], 3) for r in out)
    assert sum(r["value"] is None for r in out) == sum(op == "-D" for *_, op in rows)


def test_headers_written_and_read_back(connect_spark: Any, kafka_bootstrap: str) -> None:
    """A headers column is sent with each record, and scan.include-headers reads back the
    headers of the record each row comes from, repeated names and null values kept."""
    topic = new_topic(kafka_bootstrap, 3)
    ddl = "id int, v string, headers array<struct<key:string,value:binary>>"
    repeated = [{"key": "trace", "value": b"t-1"}, {"key": "tag", "value": None},
                {"key": "trace", "value": b"t-2"}]
    rows = [(1, "a", repeated), (2, "b", None), (1, "a2", [{"key": "trace", "value": b"t-3"}])]
    summary = connect_spark.run(sc.write, kafka_bootstrap, topic, rows, ddl, JSON, False)
    assert not isinstance(summary, sc.Failure), summary
    assert summary["records"] == 3
    got = connect_spark.run(sc.read, kafka_bootstrap, topic,
                            {**JSON, "scan.include-headers": "true"}, ddl)
    assert {r["id"]: (r["v"], r["headers"] and [(h["key"], h["value"] and bytes(h["value"]))
                                                for h in r["headers"]]) for r in got} == \
        {1: ("a2", [("trace", b"t-3")]), 2: ("b", None)}
