"""The upsert-kafka writer against two baselines, on one tansu broker this script starts.

1. bare: one confluent-kafka Producer sending the same records, serialized beforehand (the
   ceiling of what a Python producer can push to this broker; goal: writer >= 0.5x).
2. foreachPartition: the hand-written Spark job people write today, confluent-kafka's
   AvroSerializer row by row (goal: writer >= 3x).
All three use avro-confluent keys and values, acks=all, idempotence and murmur2_random, and
write the same rows: `frame()`, spark.range plus column expressions (a pipeline's computed
DataFrame, not rows shipped from Python lists, so no contender pays for re-serializing Python
objects). The bare producer gets those rows as Arrow via toArrow() and serializes them with the
same codecs before its clock starts; the two Spark contenders compute them inside their job.
The writer's number includes everything it does: the guard (in the data source's writer()),
the null-key check, the shuffle by key. `id` comes from spark.range and is NOT NULL, so no
null-key check is needed; --nullable-key makes it nullable (the check then runs in the
shuffle's map stage). The writer's phase breakdown comes back in its summary. Peak RSS of the
Python workers comes back in the commit messages: it is bounded by the producer queue and the
Arrow batch, not by the partition size, so a 10x larger write has about the same peak.

Usage: python bench/bench_writer.py [--rows 1000000] [--partitions 3] [--nullable-key]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "tests"))

from broker import new_topic, start_broker  # noqa: E402

PRODUCER = {"acks": "all", "enable.idempotence": True, "partitioner": "murmur2_random",
            "linger.ms": 20, "batch.num.messages": 10_000,
            "queue.buffering.max.kbytes": 65536}


def frame(spark: Any, rows: int, nullable_key: bool = False) -> Any:
    from pyspark.sql import functions as F

    key = F.when(F.col("id") >= 0, F.col("id")) if nullable_key else F.col("id")
    return spark.range(rows, numPartitions=2).select(
        key.alias("id"),
        F.concat(F.lit("customer-"), (F.col("id") % 100_000).cast("string")).alias("customer"),
        F.element_at(F.array(F.lit("eu"), F.lit("us"), F.lit("ap")),
                     (F.col("id") % 3 + 1).cast("int")).alias("region"),
        (F.col("id") * 1.25).alias("amount"),
        (F.col("id") % 17).cast("int").alias("qty"))


def options(bootstrap: str, topic: str, registry: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap, "primary-key": "id",
            "key.format": "avro-confluent", "value.format": "avro-confluent",
            "key.avro-confluent.url": registry, "value.avro-confluent.url": registry}


def bare_producer(spark: Any, rows: int, bootstrap: str, topic: str, registry: str,
                  partitions: int) -> float:
    """Serialize with the same codecs first (untimed), then time only the producing."""
    from confluent_kafka import Producer

    from formats.partitioner import partitions_for
    from formats.plan import resolve_plan
    from formats.spark_schema import from_spark_schema
    from sparkio.options import CONNECTOR_OPTIONS

    df = frame(spark, rows)
    plan = resolve_plan(from_spark_schema(df.schema), options(bootstrap, topic, registry),
                        extra=CONNECTOR_OPTIONS)
    table = df.toArrow()
    keys = plan.key_codec.encode_batch(table.select(["id"]))
    values = plan.value_codec.encode_batch(table)
    parts = partitions_for(keys, partitions).tolist()
    del table
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    start = time.perf_counter()
    for i, (k, v, part) in enumerate(zip(keys, values, parts, strict=True)):
        while True:
            try:
                p.produce(topic, v, k, partition=part)
                break
            except BufferError:
                p.poll(0.05)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(120) == 0
    return time.perf_counter() - start


def foreach_partition_job(bootstrap: str, topic: str) -> Any:
    """What a team writes by hand: Rows, AvroSerializer per row, a Producer per partition."""

    def run(rows: Any) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        client = SchemaRegistryClient.new_client({"url": "mock://bench"})
        key_schema = ('{"type":"record","name":"Key","fields":[{"name":"id","type":"long"}]}')
        value_schema = (
            '{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},'
            '{"name":"customer","type":["null","string"]},'
            '{"name":"region","type":["null","string"]},'
            '{"name":"amount","type":["null","double"]},{"name":"qty","type":["null","int"]}]}')
        ks, vs = AvroSerializer(client, key_schema), AvroSerializer(client, value_schema)
        kctx = SerializationContext(topic, MessageField.KEY)
        vctx = SerializationContext(topic, MessageField.VALUE)
        p = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
        for i, row in enumerate(rows):
            d = row.asDict()
            while True:
                try:
                    p.produce(topic, vs(d, vctx), ks({"id": d["id"]}, kctx))
                    break
                except BufferError:
                    p.poll(0.05)
            if i % 1000 == 0:
                p.poll(0)
        assert p.flush(120) == 0

    return run


def print_phases(phases: dict[str, float], wall_s: float, tasks: int) -> None:
    """The writer's wall time, phase by phase (see sparkio.writer.phases_of)."""
    get = phases.get
    rows = [
        ("driver: options, plan, executor probe (once per app)", get("driver", 0.0)),
        ("guard, once, in the caller (topic scan, registry)", get("guard", 0.0)),
        ("Spark: input, map stage, until the 1st write task", get("spark_until_tasks", 0.0)),
        ("write tasks (wall, first start to last end)", get("tasks_wall", 0.0)),
        ("after the last task: collect the stats, summary", get("after_tasks", 0.0)),
    ]
    rows.append(("unaccounted", max(0.0, wall_s - sum(secs for _, secs in rows))))
    print(f"writer phases ({wall_s:.2f} s wall):")
    for name, secs in rows:
        print(f"  {name:<50}{secs:>7.2f} s")
    print(f"  inside the write tasks, summed over {tasks} tasks:")
    for key, name in (("task_input", "waiting for Spark's batches (shuffle read, sort, Arrow)"),
                      ("task_encode", "encode (Arrow -> key/value bytes, murmur2 partitions)"),
                      ("task_send", "produce() calls"),
                      ("task_finish", "flush, wait for every acknowledgement")):
        print(f"    {name:<57}{get(key, 0.0):>7.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--nullable-key", action="store_true",
                    help="make id nullable, so the writer checks for null keys")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

    from pyspark.sql import SparkSession

    import sparkio

    work = Path(tempfile.mkdtemp(prefix="keyguard-bench-"))
    broker = start_broker("tansu", work)
    try:
        from sparkio.workers import point_workers_here

        spark = (point_workers_here(SparkSession.builder).master("local[2]")
                 .appName("bench-writer")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress",
                                                             "false")
                 .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        sparkio.register(spark)
        registry = f"file://{work / 'schemas'}"
        rows, parts, bs = args.rows, args.partitions, broker.bootstrap

        # Warm up (worker start, schema registration) and a small write for the memory curve.
        small = max(rows // 10, 1000)
        t_small = new_topic(bs, parts)
        s_small = sparkio.write_upsert(frame(spark, small), **options(bs, t_small, registry))

        t_writer = new_topic(bs, parts)
        start = time.perf_counter()
        summary = sparkio.write_upsert(frame(spark, rows, args.nullable_key),
                                       **options(bs, t_writer, registry))
        writer_s = time.perf_counter() - start

        bare_s = bare_producer(spark, rows, bs, new_topic(bs, parts), registry, parts)

        t_fe = new_topic(bs, parts)
        start = time.perf_counter()
        frame(spark, rows).foreachPartition(foreach_partition_job(bs, t_fe))
        fe_s = time.perf_counter() - start

        mb = summary.bytes / 1e6
        print(f"\nrows={rows} ({mb:.0f} MB of keys+values), topic partitions={parts}, "
              "local[2], avro-confluent key and value, tansu")
        print(f"{'path':<34}{'seconds':>9}{'rows/s':>12}")
        for name, secs in (("upsert-kafka writer (write_upsert)", writer_s),
                           ("bare Producer, pre-serialized", bare_s),
                           ("foreachPartition + AvroSerializer", fe_s)):
            print(f"{name:<34}{secs:>9.2f}{rows / secs:>12,.0f}")
        print(f"writer vs bare producer:     {bare_s / writer_s:.2f}x  (goal >= 0.5x)")
        print(f"writer vs foreachPartition:  {fe_s / writer_s:.2f}x  (goal >= 3x)")
        print_phases(summary.phases, writer_s, summary.tasks)
        print(f"peak Python worker RSS: {s_small.peak_worker_rss_bytes / 2**20:.0f} MiB after "
              f"{small} rows, {summary.peak_worker_rss_bytes / 2**20:.0f} MiB after {rows} rows "
              f"({mb / 2:.0f} MB per task of records)")
        print(summary)
        spark.stop()
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
