"""Kafka record headers through the upsert-kafka writer and reader (`keyguard.sparkio.headers`).

The pure parts (the fold, the buffer, the column's values) run without Spark; the rest writes to
and reads from the broker the suite starts, and checks the records' headers as a consumer sees
them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from broker import new_topic

from keyguard.formats.errors import SchemaError
from keyguard.guard.offsets import KafkaRanges, Record
from keyguard.sparkio.headers import from_arrow, to_rows
from keyguard.sparkio.producer import ChangeBuffer
from keyguard.sparkio.reader import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, changes

H = "headers array<struct<key:string,value:binary>>"
REPEATED = [("trace", b"t-1"), ("tag", None), ("trace", b"t-2")]


# --- pure: no Spark, no broker ---------------------------------------------------------------


def test_the_column_keeps_order_repeated_names_and_null_values() -> None:
    pa = pytest.importorskip("pyarrow")
    from keyguard.sparkio.headers import arrow_type

    column = pa.array([[{"key": k, "value": v} for k, v in REPEATED], None, [],
                       [{"key": None, "value": b"x"}]], arrow_type())
    assert from_arrow(column) == [REPEATED, None, None, [("", b"x")]]
    assert to_rows(REPEATED) == [{"key": "trace", "value": b"t-1"},
                                 {"key": "tag", "value": None},
                                 {"key": "trace", "value": b"t-2"}]
    assert to_rows(()) is None  # no headers: null, as Spark's Kafka source reads them


def _event(key: str, row: dict[str, Any] | None, offset: int,
           headers: tuple[tuple[str, bytes | None], ...]) -> Any:
    return key, row, Record(0, offset, 1000 + offset, key.encode(), b"v", headers)


def test_headers_are_no_part_of_a_change() -> None:
    a, a2 = {"id": 1, "v": "a"}, {"id": 1, "v": "a2"}
    events = [_event("k", a, 0, (("h", b"1"),)),
              _event("k", a, 1, (("h", b"2"),)),  # same value, other headers: no change
              _event("k", a2, 2, (("h", b"3"),)),
              _event("k", None, 3, (("why", b"gone"),))]
    assert list(changes(events, update_before=True)) == [
        (INSERT, a, (("h", b"1"),)),
        (UPDATE_BEFORE, a, (("h", b"1"),)),  # the record whose values it retracts
        (UPDATE_AFTER, a2, (("h", b"3"),)),
        (DELETE, a2, (("why", b"gone"),)),  # the tombstone's headers
    ]


def test_the_buffer_keeps_the_headers_of_each_keys_last_change() -> None:
    buf = ChangeBuffer()
    buf.put(b"a", b"1", 0, [("h", b"first")])
    buf.put(b"b", b"2", 1)
    buf.put(b"a", None, 0, REPEATED)
    assert list(buf.drain_with_headers()) == [(b"b", b"2", 1, None), (b"a", None, 0, REPEATED)]
    assert buf.folded == 1 and len(buf) == 0


# --- against the broker ----------------------------------------------------------------------


def _records(bootstrap: str, topic: str) -> list[Record]:
    kafka = KafkaRanges(bootstrap)
    return [rec for r in kafka.capture(topic) for batch in kafka.read(r, headers=True)
            for rec in batch]


def _opts(bootstrap: str, topic: str, **extra: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap, "primary-key": "id",
            "key.format": "json", "value.format": "json", **extra}


def _hs(pairs: list[tuple[str, bytes | None]] | None) -> list[dict[str, Any]] | None:
    return None if pairs is None else [{"key": k, "value": v} for k, v in pairs]


ROWS = [
    (1, "a", _hs(REPEATED)),
    (2, "b", None),
    (3, "c", []),
    (1, "a2", _hs([("trace", b"t-3")])),  # the same key again, other headers
]


@pytest.mark.parametrize("path", ["format", "write_upsert"])
def test_records_carry_their_rows_headers(spark: Any, kafka_bootstrap: str, path: str) -> None:
    from keyguard import sparkio

    topic = new_topic(kafka_bootstrap, 1)
    df = spark.createDataFrame(ROWS, f"id int, v string, {H}").coalesce(1)
    opts = _opts(kafka_bootstrap, topic)
    if path == "format":
        df.write.format("upsert-kafka").options(**opts).mode("append").save()
    else:
        sparkio.write_upsert(df, **opts)
    got: dict[int, list[Any]] = {}
    for r in _records(kafka_bootstrap, topic):  # one key's records in order
        got.setdefault(json.loads(r.key or b"")["id"], []).append(
            (json.loads(r.value or b"")["v"], list(r.headers)))
    assert got == {1: [("a", REPEATED), ("a2", [("trace", b"t-3")])], 2: [("b", [])],
                   3: [("c", [])]}


def test_the_buffer_sends_the_headers_of_the_change_it_keeps(spark: Any,
                                                             kafka_bootstrap: str) -> None:
    topic = new_topic(kafka_bootstrap, 1)
    df = spark.createDataFrame(ROWS, f"id int, v string, {H}").coalesce(1)
    (df.write.format("upsert-kafka").mode("append")
     .options(**_opts(kafka_bootstrap, topic, **{"sink.buffer-flush.max-rows": "100",
                                                 "sink.buffer-flush.interval": "10s"})).save())
    got = {json.loads(r.key or b"")["id"]: list(r.headers)
           for r in _records(kafka_bootstrap, topic)}
    assert got == {1: [("trace", b"t-3")], 2: [], 3: []}
    assert len(_records(kafka_bootstrap, topic)) == 3  # key 1 folded in the buffer


def test_the_reader_returns_the_headers_of_the_record_that_won(spark: Any,
                                                               kafka_bootstrap: str) -> None:
    from keyguard import sparkio

    topic = new_topic(kafka_bootstrap, 2)
    opts = _opts(kafka_bootstrap, topic)
    sparkio.write_upsert(spark.createDataFrame(ROWS, f"id int, v string, {H}"), **opts)
    # Without the option: the table as before, no headers column.
    plain = spark.read.format("upsert-kafka").options(**opts).schema("id int, v string").load()
    assert plain.columns == ["id", "v"]
    with_headers = {**opts, "scan.include-headers": "true"}
    reader = spark.read.format("upsert-kafka").options(**with_headers)
    ddl = (f"CREATE TABLE t (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
           f"'connector' = 'upsert-kafka', 'topic' = '{topic}', 'key.format' = 'json', "
           f"'value.format' = 'json', 'properties.bootstrap.servers' = '{kafka_bootstrap}')")
    inferred = (spark.read.format("upsert-kafka").option("flink.ddl", ddl)
                .option("scan.include-headers", "true").load())  # the column added last
    for df in (inferred, reader.schema(f"id int, v string, {H}").load()):
        assert df.columns == ["id", "v", "headers"]
        got = {r["id"]: (r["v"], None if r["headers"] is None else
                         [(h["key"], h["value"] and bytes(h["value"])) for h in r["headers"]])
               for r in df.collect()}
        assert got == {1: ("a2", [("trace", b"t-3")]), 2: ("b", None), 3: ("c", None)}
    log = (spark.read.format("upsert-kafka").options(**with_headers, **{"scan.mode": "changelog"})
           .schema(f"op string, id int, v string, {H}").load().collect())
    ones = [(r["op"], r["v"], [(h["key"], h["value"] and bytes(h["value"]))
                               for h in r["headers"] or ()]) for r in log if r["id"] == 1]
    assert ones == [("+I", "a", REPEATED), ("+U", "a2", [("trace", b"t-3")])]
    # Read back and written again, the headers go with their rows.
    again = new_topic(kafka_bootstrap, 2)
    sparkio.write_upsert(inferred, **_opts(kafka_bootstrap, again))
    assert sorted(list(r.headers) for r in _records(kafka_bootstrap, again)) == \
        [[], [], [("trace", b"t-3")]]


def test_a_schema_without_the_headers_column_is_refused(spark: Any, kafka_bootstrap: str) -> None:
    opts = _opts(kafka_bootstrap, "any-topic", **{"scan.include-headers": "true"})
    for schema in ("id int, v string", "id int, v string, headers string"):
        with pytest.raises(Exception, match=r"scan\.include-headers needs a column 'headers'"):
            spark.read.format("upsert-kafka").options(**opts).schema(schema).load().collect()
    from keyguard.sparkio.reader import UpsertKafkaReader

    with pytest.raises(SchemaError) as info:
        UpsertKafkaReader(opts, spark.createDataFrame([], "id int, v string").schema)
    assert info.value.hint and "ARRAY<STRUCT<key: STRING, value: BINARY>>" in info.value.hint


def test_serialize_returns_the_headers_for_sparks_kafka_sink(spark: Any,
                                                             kafka_bootstrap: str) -> None:
    pytest.importorskip("pandas", reason="pyspark's mapInArrow needs pandas on the driver")
    from keyguard import sparkio

    topic = new_topic(kafka_bootstrap, 1)
    out = sparkio.serialize(spark.createDataFrame(ROWS, f"id int, v string, {H}"),
                            **_opts(kafka_bootstrap, topic))
    assert out.columns == ["key", "value", "partition", "headers"]
    got: dict[int, list[Any]] = {}
    for r in out.collect():  # one key's records in input order
        got.setdefault(json.loads(r["key"])["id"], []).append(
            r["headers"] and [(h["key"], h["value"] and bytes(h["value"])) for h in r["headers"]])
    assert got == {1: [REPEATED, [("trace", b"t-3")]], 2: [None], 3: [None]}


def test_a_streaming_write_sends_the_headers(spark: Any, kafka_bootstrap: str,
                                             tmp_path: Any) -> None:
    topic = new_topic(kafka_bootstrap, 1)
    schema = f"id int, v string, {H}"
    spark.createDataFrame(ROWS, schema).coalesce(1).write.parquet(str(tmp_path / "in"))
    query = (spark.readStream.schema(schema).parquet(str(tmp_path / "in"))
             .writeStream.format("upsert-kafka").options(**_opts(kafka_bootstrap, topic))
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    got: dict[int, list[Any]] = {}
    for r in _records(kafka_bootstrap, topic):
        got.setdefault(json.loads(r.key or b"")["id"], []).append(list(r.headers))
    assert got == {1: [REPEATED, [("trace", b"t-3")]], 2: [[]], 3: [[]]}
