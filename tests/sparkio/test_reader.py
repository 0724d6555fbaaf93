"""keyguard.sparkio.reader: upsert topics read back as a table and as Flink's normalized changelog.

Records are produced here with the project's codecs and a murmur2 producer (what the writer
does), then read with `spark.read.format("upsert-kafka")`.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from broker import BrokerMissing, BrokerPool, new_topic
from confluent_kafka import Producer

from keyguard.formats.errors import DecodeError, InvalidOptionError, SchemaError
from keyguard.formats.plan import resolve_plan
from keyguard.formats.registry.registration import bind_plan_schema_ids
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.offsets import KafkaRanges, Record
from keyguard.sparkio.reader import (
    UpsertKafkaReader,
    changelog,
    check_partitioning,
    connector_options,
    decode_events,
    merge_events,
    merge_tables,
    table,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Change = tuple[dict[str, Any], bool]  # (row, is a delete)

# --- the pure core: no Spark, no broker --------------------------------------------------------

JSON_OPTS = {"topic": "t", "primary-key": "region,id", "key.format": "json",
             "value.format": "json", "properties.bootstrap.servers": "127.0.0.1:1"}
COLS = "region STRING, id BIGINT, name STRING"


def _plan(options: Mapping[str, str] = JSON_OPTS, cols: str = COLS, *, spark: bool = False,
          ) -> Any:
    """The writer's plan; `spark`: `cols` is Spark DDL, typed as the reader will type it."""
    from keyguard.formats.spark_schema import from_spark_ddl

    table_type = from_spark_ddl(cols) if spark else parse_columns(cols)
    return resolve_plan(table_type, options, extra=connector_options())


def _records(changes: Sequence[Change], *, partition: int = 0, ts0: int = 1000,
             options: Mapping[str, str] = JSON_OPTS, cols: str = COLS) -> list[Record]:
    plan = _plan(options, cols)
    out = []
    for i, (row, delete) in enumerate(changes):
        key = plan.key_codec.encode(plan.layout.key_row(row))
        value = None if delete else plan.value_codec.encode(plan.layout.value_row(row))
        out.append(Record(partition, i, ts0 + i, key, value))
    return out


def _row(region: str, id_: int, name: str | None) -> dict[str, Any]:
    return {"region": region, "id": id_, "name": name}


def test_changelog_is_flinks_normalized_upsert_stream() -> None:
    a1, a2, b1 = _row("eu", 1, "a1"), _row("eu", 1, "a2"), _row("us", 1, "b1")
    changes = [
        (_row("eu", 9, None), True),  # delete of a key never seen: dropped
        (a1, False),                  # first value: +I
        (a1, False),                  # identical: dropped
        (b1, False),
        (a2, False),                  # changed: +U
        (_row("eu", 1, None), True),  # tombstone: -D with the last full row
        (a1, False),                  # back again: +I
    ]
    events = list(decode_events(_plan(), _records(changes)))
    assert list(changelog(events)) == [
        ("+I", a1), ("+I", b1), ("+U", a2), ("-D", a2), ("+I", a1)]
    assert list(changelog(events, update_before=True)) == [
        ("+I", a1), ("+I", b1), ("-U", a1), ("+U", a2), ("-D", a2), ("+I", a1)]
    assert [row for _, row in table(events).values() if row is not None] == [b1, a1]


def test_global_fold_takes_the_later_timestamp_across_partitions() -> None:
    old, new = _row("eu", 1, "old"), _row("eu", 1, "new")
    p0 = table(decode_events(_plan(), _records([(new, False)], partition=0, ts0=2000)))
    p1 = table(decode_events(_plan(), _records([(old, False)], partition=1, ts0=1000)))
    assert list(merge_tables([p0, p1])) == [new]
    gone = table(decode_events(_plan(), _records([(old, True)], partition=1, ts0=3000)))
    assert list(merge_tables([p0, gone])) == []


def test_global_changelog_interleaves_partitions_by_timestamp() -> None:
    a, b, c = _row("eu", 1, "a"), _row("eu", 1, "b"), _row("eu", 1, "c")
    p0 = list(decode_events(_plan(), _records([(a, False), (c, False)], partition=0, ts0=10)))
    p1 = list(decode_events(_plan(), _records([(b, False)], partition=1, ts0=10)))
    # p0 at 10 and 11, p1 at 10: a (p0, 10), b (p1, 10), c (p0, 11)
    assert list(changelog(merge_events([p0, p1]))) == [("+I", a), ("+U", b), ("+U", c)]


def test_decode_errors_name_topic_partition_offset() -> None:
    bad = [Record(2, 41, 0, b'{"region":"eu","id":1}', b"{not json")]
    with pytest.raises(DecodeError, match=r"topic 't' partition 2 offset 41"):
        list(decode_events(_plan(), bad))


def test_records_without_a_key_are_dropped_as_flink_does() -> None:
    assert list(decode_events(_plan(), [Record(0, 0, 0, None, b'{"name":"x"}')])) == []


def test_a_key_off_its_murmur2_partition_is_reported() -> None:
    (rec,) = _records([(_row("eu", 1, "a"), False)])
    from keyguard.formats.partitioner import partition_for

    wrong = (partition_for(rec.key or b"", 4) + 1) % 4
    check_partitioning([Record(wrong, 7, 0, rec.key, rec.value)][:0], 4, "t")  # empty is fine
    with pytest.raises(DecodeError, match=f"partition {wrong} offset 7.*scan.fold=global"):
        check_partitioning([Record(wrong, 7, 0, rec.key, rec.value)], 4, "t")


def test_options_are_checked_before_spark_runs_anything() -> None:
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("region", T.StringType()),
                           T.StructField("id", T.LongType()),
                           T.StructField("name", T.StringType())])
    with pytest.raises(InvalidOptionError, match=r"scan\.mod"):
        UpsertKafkaReader({**JSON_OPTS, "scan.mod": "table"}, schema)
    with pytest.raises(InvalidOptionError, match=r"bootstrap\.servers"):
        UpsertKafkaReader({k: v for k, v in JSON_OPTS.items() if "bootstrap" not in k}, schema)
    with pytest.raises(SchemaError, match="change-kind column 'op'"):
        UpsertKafkaReader({**JSON_OPTS, "scan.mode": "changelog"}, schema)


# --- Spark against a broker ----------------------------------------------------------------------


def produce(bootstrap: str, topic: str, options: Mapping[str, str], cols: str,
            changes: Sequence[Change], **producer: Any) -> None:
    """What the writer does: the plan's bytes, murmur2 partitions, batched sends."""
    plan = _plan(options, cols, spark=True)
    bind_plan_schema_ids(plan)  # registration, as the writer's driver does before any task
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                  "linger.ms": 20, "log_level": 0, **producer})
    for row, delete in changes:
        key = plan.key_codec.encode(plan.layout.key_row(row))
        value = None if delete else plan.value_codec.encode(plan.layout.value_row(row))
        p.produce(topic, key=key, value=value)
    assert p.flush(15) == 0


def fold(changes: Sequence[Change], pk: Sequence[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The expected table: last value per key, deletes applied."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row, delete in changes:
        k = tuple(row[c] for c in pk)
        if delete:
            out.pop(k, None)
        else:
            out[k] = row
    return out


def read(spark: SparkSession, options: Mapping[str, str], schema: str | None = None,
         ) -> list[dict[str, Any]]:
    reader = spark.read.format("upsert-kafka").options(**options)
    if schema is not None:
        reader = reader.schema(schema)
    return [r.asDict(recursive=True) for r in reader.load().collect()]


def by_key(rows: Sequence[dict[str, Any]], pk: Sequence[str]) -> dict[tuple[Any, ...], Any]:
    return {tuple(r[c] for c in pk): r for r in rows}


JSON_COLS = ("region STRING, id BIGINT, name STRING, amount DECIMAL(10,2), "
             "ts TIMESTAMP_NTZ, tags ARRAY<STRING>, attrs MAP<STRING,INT>")


def _json_changes() -> list[Change]:
    def r(region: str, id_: int, name: str, amount: str) -> dict[str, Any]:
        return {"region": region, "id": id_, "name": name, "amount": Decimal(amount),
                "ts": dt.datetime(2024, 1, 1, 12, 0, id_), "tags": [name, region],
                "attrs": {"n": id_}}

    changes: list[Change] = [(r(reg, i, f"{reg}{i}", f"{i}.50"), False)
                             for reg in ("eu", "us") for i in range(1, 9)]
    changes += [(r("eu", 1, "eu1-v2", "1.75"), False),   # update
                (r("us", 2, "", "0.00"), True),          # delete
                (r("us", 3, "us3", "3.50"), False),      # identical re-write
                (r("eu", 4, "", "0.00"), True),
                (r("eu", 4, "eu4-back", "4.00"), False)]  # deleted, then back
    return changes


@pytest.fixture(params=["tansu", "noida"])
def bootstrap(request: pytest.FixtureRequest, kafka_brokers: BrokerPool,
              kafka_bootstrap: str) -> str:
    if request.param == "tansu":
        return kafka_bootstrap
    try:
        return kafka_brokers.get(request.param).bootstrap
    except BrokerMissing as e:
        pytest.skip(str(e))


def test_json_table_and_changelog(spark: SparkSession, bootstrap: str) -> None:
    topic = new_topic(bootstrap, 4)
    opts = {**JSON_OPTS, "topic": topic, "properties.bootstrap.servers": bootstrap}
    changes = _json_changes()
    # Batched sends: tansu's ListOffsets would say 1 past the last batch's base offset; the
    # capture must still see every record.
    produce(bootstrap, topic, opts, JSON_COLS, changes)
    pk = ("region", "id")

    rows = read(spark, opts, JSON_COLS)
    assert by_key(rows, pk) == fold(changes, pk)
    assert len(rows) == 15

    log = read(spark, {**opts, "scan.mode": "changelog"}, "op STRING, " + JSON_COLS)
    ops = [(r["region"], r["id"], r["op"], r["name"]) for r in log]
    assert [o for o in ops if o[:2] == ("eu", 1)] == [
        ("eu", 1, "+I", "eu1"), ("eu", 1, "+U", "eu1-v2")]
    assert [o for o in ops if o[:2] == ("us", 2)] == [
        ("us", 2, "+I", "us2"), ("us", 2, "-D", "us2")]
    assert [o for o in ops if o[:2] == ("us", 3)] == [("us", 3, "+I", "us3")]
    assert [o for o in ops if o[:2] == ("eu", 4)] == [
        ("eu", 4, "+I", "eu4"), ("eu", 4, "-D", "eu4"), ("eu", 4, "+I", "eu4-back")]
    assert len(ops) == 16 + 1 + 2 + 1


CSV_OPTS = {"primary-key": "k_region,k_id", "key.format": "csv", "value.format": "csv",
            "key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"}
CSV_COLS = "k_region STRING, k_id INT, label STRING, score DOUBLE, day DATE"
AVRO_OPTS = {"primary-key": "id", "key.format": "avro", "value.format": "avro"}
AVRO_COLS = "id BIGINT, name STRING, price DECIMAL(8,3), ok BOOLEAN"


def _csv_changes() -> list[Change]:
    rows = [{"k_region": f"r{i % 3}", "k_id": i, "label": f"x,{i}\"q", "score": i * 1.5e20,
             "day": dt.date(2024, 1, 1 + i)} for i in range(12)]
    return [(r, False) for r in rows] + [(rows[0], True), ({**rows[1], "label": "new"}, False)]


def _avro_changes() -> list[Change]:
    rows = [{"id": i, "name": f"n{i}", "price": Decimal(f"{i}.125"), "ok": i % 2 == 0}
            for i in range(10)]
    return [(r, False) for r in rows] + [(rows[3], True), ({**rows[4], "name": None}, False)]


@pytest.mark.parametrize("fmt", ["csv", "avro"])
def test_other_formats_read_back_as_the_folded_table(spark: SparkSession, kafka_bootstrap: str,
                                                      fmt: str) -> None:
    base, cols, changes, pk = {
        "csv": (CSV_OPTS, CSV_COLS, _csv_changes(), ("k_region", "k_id")),
        "avro": (AVRO_OPTS, AVRO_COLS, _avro_changes(), ("id",)),
    }[fmt]
    topic = new_topic(kafka_bootstrap, 16)
    opts = {**base, "topic": topic, "properties.bootstrap.servers": kafka_bootstrap}
    produce(kafka_bootstrap, topic, opts, cols, changes)
    assert any(r.empty for r in KafkaRanges(kafka_bootstrap).capture(topic))  # 12 keys at most
    assert by_key(read(spark, opts, cols), pk) == fold(changes, pk)


def test_avro_confluent_schema_is_inferred_from_the_registry(
        spark: SparkSession, kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    url = f"file://{tmp_path / 'registry'}"
    opts = {"topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
            "primary-key": "region,id", "key.format": "avro-confluent",
            "value.format": "avro-confluent", "value.fields-include": "EXCEPT_KEY",
            "key.avro-confluent.url": url, "value.avro-confluent.url": url}
    cols = "region STRING, id INT, name STRING, qty BIGINT"
    changes: list[Change] = [({"region": f"r{i % 2}", "id": i, "name": f"n{i}", "qty": i * 10},
                              False) for i in range(8)]
    changes += [({"region": "r1", "id": 1, "name": None, "qty": None}, True),
                ({"region": "r0", "id": 2, "name": "two", "qty": 22}, False)]
    produce(kafka_bootstrap, topic, opts, cols, changes)

    df = spark.read.format("upsert-kafka").options(**opts).load()
    assert df.schema.simpleString() == "struct<name:string,qty:bigint,region:string,id:int>"
    assert [f.nullable for f in df.schema.fields] == [True, True, False, False]
    pk = ("region", "id")
    assert by_key([r.asDict() for r in df.collect()], pk) == fold(changes, pk)

    log = spark.read.format("upsert-kafka").options(
        **opts, **{"scan.mode": "changelog", "changelog.column": "kind"}).load()
    assert log.schema.fieldNames()[0] == "kind"
    kinds = sorted((r["id"], r["kind"]) for r in log.collect() if r["id"] in (1, 2))
    assert kinds == [(1, "+I"), (1, "-D"), (2, "+I"), (2, "+U")]


def test_a_format_without_a_schema_needs_one(spark: SparkSession, kafka_bootstrap: str) -> None:
    opts = {**JSON_OPTS, "topic": "any", "properties.bootstrap.servers": kafka_bootstrap}
    with pytest.raises(Exception, match=r"format 'json'.*carries no schema.*\.schema\("):
        spark.read.format("upsert-kafka").options(**opts).load()


def test_bad_bytes_fail_naming_partition_and_offset(spark: SparkSession,
                                                    kafka_bootstrap: str) -> None:
    topic = new_topic(kafka_bootstrap, 1)
    opts = {**JSON_OPTS, "topic": topic, "properties.bootstrap.servers": kafka_bootstrap}
    produce(kafka_bootstrap, topic, opts, COLS, [(_row("eu", 1, "a"), False)])
    p = Producer({"bootstrap.servers": kafka_bootstrap, "log_level": 0})
    p.produce(topic, partition=0, key=b'{"region":"eu","id":2}', value=b"\xff not json")
    p.flush(10)
    with pytest.raises(Exception, match=rf"topic '{topic}' partition 0 offset 1"):
        read(spark, opts, COLS)


def test_keys_from_another_partitioner_need_the_global_fold(spark: SparkSession,
                                                             kafka_bootstrap: str) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    opts = {**JSON_OPTS, "topic": topic, "properties.bootstrap.servers": kafka_bootstrap}
    changes = [(_row("eu", i, f"v{i}"), False) for i in range(6)]
    later = [(_row("eu", i, f"w{i}"), False) for i in range(6)]
    produce(kafka_bootstrap, topic, opts, COLS, changes)
    time.sleep(0.05)  # later record timestamps
    produce(kafka_bootstrap, topic, opts, COLS, later, partitioner="consistent")
    with pytest.raises(Exception, match=r"scan\.fold=global"):
        read(spark, opts, COLS)
    rows = read(spark, {**opts, "scan.fold": "global"}, COLS)
    assert sorted(r["name"] for r in rows) == [f"w{i}" for i in range(6)]


def test_read_ends_while_a_producer_keeps_writing(spark: SparkSession,
                                                  kafka_bootstrap: str) -> None:
    topic = new_topic(kafka_bootstrap, 2)
    opts = {**JSON_OPTS, "topic": topic, "properties.bootstrap.servers": kafka_bootstrap}
    produce(kafka_bootstrap, topic, opts, COLS, [(_row("eu", i, "first"), False)
                                                 for i in range(20)])
    plan = _plan(opts, COLS, spark=True)
    stop = threading.Event()

    def keep_writing() -> None:
        p = Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random",
                      "linger.ms": 5, "log_level": 0})
        n = 0
        while not stop.is_set():
            row = _row("us", n, "later")
            p.produce(topic, key=plan.key_codec.encode(plan.layout.key_row(row)),
                      value=plan.value_codec.encode(row))
            p.poll(0)
            n += 1
            time.sleep(0.001)
        p.flush(10)

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        rows = read(spark, opts, COLS)
    finally:
        stop.set()
        writer.join(15)
    assert {r["id"] for r in rows if r["region"] == "eu"} == set(range(20))
