"""The upsert-kafka writer against a bare producer, on one tansu broker this script starts.

Contenders (bench/harness: equal warm-up, ABAB... runs, median [min-max], the load average):
1. bare: one confluent-kafka Producer, in a fresh Python process (bench/bare_producer.py),
   sending the same records serialized beforehand with the same codecs (the ceiling of what a
   Python producer can push to this broker; goal: writer >= 0.8x). Its clock covers only the
   producing, from the first produce() to the last acknowledgement.
2. writer: `write_upsert` of a computed DataFrame, everything included: the guard, the
   null-key check, computing the rows, the shuffle by key, encoding, producing. Only building
   the DataFrame object (the caller's code: a lazy plan, ~0.1 s of Py4J calls) is before the
   clock, as reading its records is before the bare producer's.
3. (--foreach) the hand-written Spark job people write today: confluent-kafka's
   AvroSerializer row by row in foreachPartition (avro-confluent only; slow).
4. (--reuse-off) the writer again with sink.producer-reuse=false:
   every write task makes its own producer (connection, 0.5 s idempotent producer id) instead
   of taking the one its Python worker kept; what that pool saves, measured in the same JVM.
All use acks=all, idempotence and murmur2_random and write the same rows: `frame()`,
spark.range plus column expressions. After every run the topic is read back and digested per
partition (order-independent: the writer shuffles by key); every contender must write the
same key and value bytes to the same partitions, or the table says so.

CPU: each run's machine-wide CPU (core-seconds, /proc/stat) over its clock, in the table; on 2
cores shared with the broker the writer is CPU-bound, so its wall time follows its CPU. With
--phases, each writer run's CPU split: Spark's JVM, its Python workers, the broker.

Peak memory: the bare producer's is its own process's (wait4); the writer's is the highest
per-task peak of its Python workers (each task resets the worker's high-water mark first, so a
reused worker reports that task's peak, not its lifetime's).

--memory ROWS,ROWS,...: instead of the race, the writer's memory per fresh Python worker as
the rows grow. Its own Spark application with spark.python.worker.reuse=false, so every write
task runs in a worker forked for it (its peak RSS is that process's whole life); one write per
row count (after a 1,000-row one, which is in the table as the floor), its counts checked.

Besides the tables, one line per format and contender, `NAME  MEDIAN_SECONDS  ROWS_PER_S`, which
bench/bench_before_after.py collects: the writer of two trees, alternated, each against the same
bare producer (`--script $PWD/bench/bench_writer.py`, so both sides run this benchmark).

--spark-stages: instead of the race, what Spark's own part of a write costs, stage by stage:
the same rows through Spark jobs that each add one step of the writer's plan (computing the
rows, the input-order column, the shuffle by key, the sort back to input order, Arrow to a
Python worker that only counts), alternated, each on a quiet machine; wall time, machine CPU
and the JVM's CPU.

Usage: python bench/bench_writer.py [--rows 1000000] [--formats avro-confluent,json]
       [--runs 3] [--partitions 3] [--nullable-key] [--foreach] [--phases] [--reuse-off]
       python bench/bench_writer.py --memory 1000000,4000000,10000000 [--formats ...]
       python bench/bench_writer.py --worker-start BASELINE_TREE --worker-start .
       python bench/bench_writer.py --spark-stages [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.append(str(ROOT / "tests"))

from broker import new_topic, start_broker  # noqa: E402
from harness import (  # noqa: E402
    Contender,
    Run,
    alternate,
    child_named,
    fresh_process,
    load_average,
    local_spark,
    machine_cpu_s,
    process_cpu_s,
    records_digest,
    settle,
    table,
)

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


def _touch(batches: Any) -> Any:
    import keyguard.sparkio.writer  # noqa: F401  (what a write task imports first)

    time.sleep(0.2)  # both tasks at once, so both workers start
    yield from batches


def start_workers(spark: Any) -> None:
    """Untimed, before every writer run: two Python workers alive, with the write path
    imported. Spark stops a Python worker idle for a minute, so at 4M rows (rounds longer
    than that) the writer run after the bare producer would start its workers and the one
    after it would not: unequal runs. The bare producer's clock leaves out its process start
    and imports as well; what starting a worker costs is `bench_writer.py --worker-start`."""
    spark.range(2, numPartitions=2).mapInArrow(_touch, "id long").collect()


#: What a Python worker imports before its first write task: Spark's worker, then the task.
WORKER_BASE = "import pyspark.worker, pyarrow, numpy, confluent_kafka"
WORKER_TASK = WORKER_BASE + "; import keyguard.sparkio.writer, keyguard.sparkio.producer"


def worker_start_table(trees: list[Path], runs: int) -> str:
    """--worker-start: a fresh Python worker's imports before its first write task (what a
    writer run pays when Spark has to start its workers), fresh processes alternated."""
    from harness import child_peak_rss, timed_process

    def imports(code: str, tree: Path | None) -> Any:
        # cwd "/": `python -c` puts the working directory first on sys.path.
        env = {**os.environ, "PYTHONPATH": str(tree) if tree else ""}

        def run() -> Run:
            secs, status, _, errors, usage = timed_process([sys.executable, "-c", code],
                                                           cwd="/", env=env)
            if status:
                raise SystemExit(f"{code!r} failed in {tree}: {errors.decode()}")
            return Run(secs, "", child_peak_rss(usage))
        return run

    contenders = [Contender("pyspark's worker, pyarrow, numpy, confluent_kafka",
                            imports(WORKER_BASE, None))]
    contenders += [Contender(f"+ a write task's modules @ {tree}", imports(WORKER_TASK, tree))
                   for tree in trees]
    before = load_average()
    alternate(contenders, runs=runs, warmup=1)
    return table(contenders, baseline=contenders[0].name, higher_is_better=False,
                 ratio_label="x the worker alone", load=(before, load_average()),
                 title="a Python worker's imports before its first write task")


def spark_jvm_pid() -> int:
    """The JVM pyspark started for this process (its child named java); 0 if none is found."""
    return child_named("java", os.getpid())


def cpu_split(jvm: int, broker: int) -> dict[str, float]:
    """CPU seconds so far of Spark's JVM, of its Python workers (the JVM's descendants), and
    of the broker: take the difference around a run."""
    with_workers = process_cpu_s(jvm, descendants=True)
    alone = process_cpu_s(jvm)
    return {"jvm": alone, "python_workers": with_workers - alone,
            "broker": process_cpu_s(broker)}


def _count(batches: Any) -> Any:
    import pyarrow as pa

    n = sum(b.num_rows for b in batches)
    yield pa.record_batch([pa.array([n])], names=["n"])


def spark_stages_table(spark: Any, rows: int, runs: int) -> str:
    """--spark-stages: Spark's part of a write (what `keyguard.sparkio.writer.keyed` and mapInArrow
    ask of it), one step more per contender, on the writer's rows; nothing is produced."""
    from pyspark.sql import functions as F

    from keyguard.sparkio.writer import ORDER_COLUMN

    jvm = spark_jvm_pid()
    jvm_cpu: dict[str, list[float]] = {}

    def noop(df: Any) -> None:
        df.write.format("noop").mode("overwrite").save()

    def ordered() -> Any:
        return frame(spark, rows).withColumn(ORDER_COLUMN, F.monotonically_increasing_id())

    def keyed() -> Any:
        return ordered().repartition(2, F.col("id"))

    def sorted_() -> Any:
        return keyed().sortWithinPartitions(ORDER_COLUMN).drop(ORDER_COLUMN)

    steps = [("compute the rows", lambda: noop(frame(spark, rows))),
             ("+ the input-order column", lambda: noop(ordered())),
             ("+ the shuffle by key", lambda: noop(keyed())),
             ("+ the sort back to input order", lambda: noop(sorted_())),
             ("+ Arrow to a Python worker (the writer's Spark part)",
              lambda: sorted_().mapInArrow(_count, "n long").collect()),
             ("compute the rows, Arrow to a Python worker (no shuffle, no sort)",
              lambda: frame(spark, rows).mapInArrow(_count, "n long").collect())]

    def measured(name: str, job: Any) -> Any:
        def run() -> Run:
            jvm0, cpu0, start = process_cpu_s(jvm), machine_cpu_s(), time.perf_counter()
            job()
            secs = time.perf_counter() - start
            jvm_cpu.setdefault(name, []).append(process_cpu_s(jvm) - jvm0)
            return Run(secs, "", 0, machine_cpu_s() - cpu0)
        return run

    contenders = [Contender(name, measured(name, job)) for name, job in steps]
    before = load_average()
    # The JVM compiles Spark's code in the first runs; each run starts on a quiet machine.
    alternate(contenders, runs=runs, warmup=2, between=settle)
    text = table(contenders, baseline=steps[0][0], higher_is_better=False,
                 ratio_label="x computing the rows", load=(before, load_average()),
                 title=f"Spark's part of a write, {rows:,} rows, local[2] (no broker)")
    jvm_line = "; ".join(f"{name} {statistics.median(xs[2:]):.2f}"
                         for name, xs in jvm_cpu.items())  # the warm-ups come first
    return f"{text}\nthe JVM's CPU, core-s, median: {jvm_line}"


def options(bootstrap: str, topic: str, registry: str, fmt: str) -> dict[str, str]:
    opts = {"topic": topic, "properties.bootstrap.servers": bootstrap, "primary-key": "id",
            "key.format": fmt, "value.format": fmt}
    if fmt == "avro-confluent":  # the benchmark's own choice of format, not keyguard logic
        opts |= {"key.avro-confluent.url": registry, "value.avro-confluent.url": registry}
    return opts


def serialized(spark: Any, rows: int, opts: dict[str, str], partitions: int, into: Path) -> Path:
    """The rows encoded with the writer's own codecs and partitioner, to an Arrow IPC file for
    the bare producer (untimed)."""
    import pyarrow as pa

    from keyguard.formats.partitioner import partitions_for
    from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
    from keyguard.formats.spark_schema import from_spark_schema
    from keyguard.sparkio.options import CONNECTOR_OPTIONS

    df = frame(spark, rows)
    plan = open_plan(from_spark_schema(df.schema), opts, extra=CONNECTOR_OPTIONS)
    bind_plan_schema_ids(plan)  # the ids the warm-up write registered
    data = df.toArrow()
    keys = plan.key_codec.encode_batch(data.select(["id"]))
    values = plan.value_codec.encode_batch(data)
    parts = partitions_for(keys, partitions)
    del data
    records = pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
                        "partition": pa.array(parts, pa.int32())})
    with pa.OSFile(str(into), "wb") as sink, pa.ipc.new_file(sink, records.schema) as w:
        w.write_table(records)
    return into


def topic_digest(bootstrap: str, topic: str, partitions: int) -> str:
    """Every record of `topic`, read to the end of each partition, digested (harness)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-digest",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "fetch.wait.max.ms": 10, "log_level": 0})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    open_ = set(range(partitions))
    records: list[tuple[int, bytes | None, bytes | None]] = []
    deadline = time.monotonic() + 300
    try:
        while open_ and time.monotonic() < deadline:
            for m in c.consume(10_000, timeout=0.5):
                err = m.error()
                if err is None:
                    records.append((m.partition(), m.key(), m.value()))
                elif err.code() == KafkaError._PARTITION_EOF:
                    open_.discard(m.partition())
                else:
                    raise SystemExit(f"reading back {topic}: {err}")
    finally:
        c.close()
    if open_:
        raise SystemExit(f"reading back {topic}: partitions {sorted(open_)} never ended")
    return records_digest(records)


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
    """The writer's wall time, phase by phase (see keyguard.sparkio.writer.phases_of)."""
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
    print(f"  inside the write tasks, summed over {tasks} tasks "
          f"({get('tasks_reusing_a_producer', 0):.0f} of them with a kept producer):")
    for key, name in (("task_input", "waiting for Spark's batches (shuffle read, sort, Arrow)"),
                      ("task_encode", "encode (Arrow -> key/value bytes, murmur2 partitions)"),
                      ("task_send", "produce() calls"),
                      ("task_finish", "flush, wait for every acknowledgement")):
        print(f"    {name:<57}{get(key, 0.0):>7.2f} s")


def memory_table(spark: Any, bs: str, registry: str, formats: list[str], parts: int,
                 counts: list[int]) -> str:
    """One write per row count and format; the peak RSS of its fresh Python workers."""
    from keyguard import sparkio
    lines = ["| format | rows | seconds | MB written | tasks | peak RSS per fresh worker |",
             "|---|---|---|---|---|---|"]
    before = load_average()
    for fmt in formats:
        for rows in [1000, *counts]:
            start = time.perf_counter()
            s = sparkio.write_upsert(frame(spark, rows),
                                     **options(bs, new_topic(bs, parts), registry, fmt))
            secs = time.perf_counter() - start
            if (s.rows, s.records, s.upserts) != (rows, rows, rows):
                raise SystemExit(f"{fmt} at {rows:,} rows: wrote {s}")
            lines.append(f"| {fmt} | {rows:,} | {secs:.1f} | {s.bytes / 1e6:,.0f} | {s.tasks} | "
                         f"{s.peak_worker_rss_bytes / 2**20:.0f} MiB |")
            print(lines[-1], file=sys.stderr, flush=True)
    after = load_average()
    lines += ["", "spark.python.worker.reuse=false: every write task in a fresh Python worker; "
              "the 1,000-row write is the floor (imports, codecs, producer)",
              "load average (1, 5, 15 min): before " + " ".join(f"{x:.2f}" for x in before)
              + ", after " + " ".join(f"{x:.2f}" for x in after)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--formats", default="avro-confluent,json")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--nullable-key", action="store_true",
                    help="make id nullable, so the writer checks for null keys")
    ap.add_argument("--foreach", action="store_true",
                    help="also the foreachPartition + AvroSerializer job (avro-confluent)")
    ap.add_argument("--phases", action="store_true", help="print the writer's phases per run")
    ap.add_argument("--reuse-off", action="store_true",
                    help="also the writer with sink.producer-reuse=false: every task makes "
                         "its producer (what the worker's producer pool saves, same JVM)")
    ap.add_argument("--memory", metavar="ROWS,ROWS,...",
                    help="the writer's peak RSS per fresh Python worker at these row counts")
    ap.add_argument("--worker-start", action="append", type=Path, metavar="TREE",
                    help="instead of the race, a fresh Python worker's imports before its "
                         "first write task, with this keyguard tree (repeatable: "
                         "--worker-start BASELINE --worker-start .)")
    ap.add_argument("--spark-stages", action="store_true",
                    help="instead of the race, Spark's part of a write stage by stage: wall "
                         "time, machine and JVM CPU (no broker)")
    args = ap.parse_args()
    if args.worker_start:
        print(worker_start_table([t.resolve() for t in args.worker_start], max(args.runs, 10)))
        return
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

    from keyguard import sparkio
    if args.spark_stages:
        spark_ = local_spark("bench-spark-stages", **{"spark.sql.shuffle.partitions": "2"})
        print(spark_stages_table(spark_, args.rows, args.runs))
        spark_.stop()  # type: ignore[attr-defined]
        return
    work = Path(tempfile.mkdtemp(prefix="keyguard-bench-"))
    broker = start_broker("tansu", work)
    try:
        spark: Any = local_spark(
            "bench-writer", **{
                # --memory: a fresh Python worker per task, so its peak is that task's alone.
                "spark.python.worker.reuse": "false" if args.memory else "true",
                "spark.sql.shuffle.partitions": "2"})
        registry = f"file://{work / 'schemas'}"
        rows, parts, bs = args.rows, args.partitions, broker.bootstrap
        jvm = spark_jvm_pid()
        if args.memory:
            print(memory_table(spark, bs, registry, args.formats.split(","), parts,
                               [int(r) for r in args.memory.split(",")]))
            spark.stop()
            return
        tables = []
        for fmt in args.formats.split(","):
            # Registers the schemas (ids the bare producer's bytes must carry too).
            sparkio.write_upsert(frame(spark, 1000), **options(bs, new_topic(bs, parts),
                                                               registry, fmt))
            records = serialized(spark, rows, options(bs, "bench", registry, fmt), parts,
                                 work / f"records-{fmt}.arrow")
            summaries: list[Any] = []
            fresh_summaries: list[Any] = []

            def writer(fmt: str = fmt, summaries: list[Any] = summaries,
                       reuse: bool = True) -> Run:
                topic = new_topic(bs, parts)
                start_workers(spark)
                df = frame(spark, rows, args.nullable_key)  # a lazy plan: nothing computed
                split = cpu_split(jvm, broker.pid or 0)
                cpu = machine_cpu_s()
                start = time.perf_counter()
                summary = sparkio.write_upsert(
                    df, **options(bs, topic, registry, fmt),
                    **({} if reuse else {"sink.producer-reuse": "false"}))
                secs = time.perf_counter() - start
                cpu = machine_cpu_s() - cpu
                spent = {k: v - split[k] for k, v in cpu_split(jvm, broker.pid or 0).items()}
                summaries.append((summary, secs, cpu, spent))
                return Run(secs, topic_digest(bs, topic, parts), summary.peak_worker_rss_bytes,
                           cpu)

            def bare(records: Path = records) -> Run:
                topic = new_topic(bs, parts)
                done, peak = fresh_process([sys.executable, str(ROOT / "bench/bare_producer.py"),
                                            str(records), bs, topic], "bare producer")
                secs = float(done["seconds"])  # type: ignore[arg-type]
                return Run(secs, topic_digest(bs, topic, parts), peak,
                           float(done["cpu_s"]))  # type: ignore[arg-type]

            contenders = [Contender("bare Producer, pre-serialized", bare),
                          Contender("upsert-kafka writer (write_upsert)", writer)]
            if args.reuse_off:
                def fresh_producers(writer: Any = writer,
                                    fresh_summaries: list[Any] = fresh_summaries) -> Run:
                    return writer(summaries=fresh_summaries,  # type: ignore[no-any-return]
                                  reuse=False)
                contenders.append(Contender("writer, a new producer per task", fresh_producers))
            if args.foreach and fmt == "avro-confluent":
                def foreach() -> Run:
                    topic = new_topic(bs, parts)
                    start = time.perf_counter()
                    frame(spark, rows).foreachPartition(foreach_partition_job(bs, topic))
                    return Run(time.perf_counter() - start)
                contenders.append(Contender("foreachPartition + AvroSerializer", foreach))
            before = load_average()
            # Every run starts on a quiet machine: the JVM compiles and collects for a while
            # after a writer run, which would slow the bare producer run after it.
            waits: list[float] = []
            alternate(contenders, runs=args.runs, warmup=1,
                      between=lambda waits=waits: waits.append(settle()))
            after = load_average()
            summary = summaries[-1][0]
            tables.append(table(
                contenders, baseline="bare Producer, pre-serialized",
                ratio_label="x bare producer (goal >= 0.8x)", load=(before, after),
                title=f"{fmt} key and value, {rows:,} rows ({summary.bytes / 1e6:.0f} MB of "
                      f"keys+values), {parts} topic partitions, local[2], tansu"))
            tables[-1] += (f"\nbefore each run, waited for a quiet machine (under 0.25 cores busy):"
                           f" median {statistics.median(waits):.1f} s, at most "
                           f"{max(waits):.1f} s")
            for c in contenders:  # `name  secs  rows/s`, what bench_before_after.py collects
                median = statistics.median(c.seconds)
                print(f"{fmt} {c.name}  {median:.3f}  {rows / median:,.0f}", flush=True)
            if args.phases:
                for label, runs in (("producer kept", summaries),
                                    ("a new producer per task", fresh_summaries)):
                    for s, secs, cpu, spent in runs[1:]:  # measured runs (after the warm-up)
                        print(f"{fmt}, {label}:")
                        print_phases(s.phases, secs, s.tasks)
                        print(f"  CPU, core-s: machine {cpu:.2f} = Spark's JVM "
                              f"{spent['jvm']:.2f} + its Python workers "
                              f"{spent['python_workers']:.2f} + the broker "
                              f"{spent['broker']:.2f} + the rest "
                              f"{max(0.0, cpu - sum(spent.values())):.2f}")
        print("\n\n".join(tables))
        spark.stop()
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
