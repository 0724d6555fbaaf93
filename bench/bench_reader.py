"""The upsert-kafka reader against a bare consumer loop, on one tansu broker this script starts.

A topic of N records is written once per format (pre-serialized with keyguard's own codecs and
murmur2 partitions, produced by bench/bare_producer.py): N * (1 - updates - tombstones) distinct
keys, then updates of earlier keys (new values) and tombstones of earlier keys, so the fold
matters. Contenders (bench/harness: equal warm-up, ABAB... runs, median [min-max], load average):

1. bare: one confluent-kafka Consumer in a fresh Python process (bench/bare_consumer.py) reading
   every partition from its beginning to its end and keeping the last value per key bytes
   (tombstones remove): the floor of what turning a compacted topic into a table costs in
   Python, without decoding a single value. Its clock covers consumer creation to the end.
2. reader: `spark.read.format("upsert-kafka").load()` (scan.mode=table), timed from `load()`
   to the answer of a small aggregate over every column (`count(*)`, `sum(xxhash64(*cols))`):
   every row is read, decoded, folded and handed to Spark, and nothing is collected to the
   driver, whose cost would measure Spark's collect rather than the reader.

Same table: the bare process writes the live (key, value) bytes it kept (untimed); the benchmark
decodes them with the plan's codecs and runs the same aggregate on them as a Spark DataFrame;
each run's digest is that aggregate, so a reader that returned another table shows as a
mismatch. Peak memory: the bare consumer's own process (wait4); the reader's is the highest RSS
of any Python worker Spark ran (pyspark.daemon and its workers, sampled every 20 ms; each run
first resets the high-water mark of the workers Spark reuses, so it is that run's own peak).

Usage: python bench/bench_reader.py [--rows 1000000] [--formats avro-confluent,json]
       [--runs 3] [--partitions 3] [--updates 0.2] [--tombstones 0.05] [--library TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _library() -> Path:
    """The keyguard tree measured: this one, or `--library TREE` (e.g. a baseline checkout;
    the benchmark's own code stays this tree's)."""
    if "--library" in sys.argv:
        return Path(sys.argv[sys.argv.index("--library") + 1]).resolve()
    return ROOT


LIBRARY = _library()
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(LIBRARY))

from broker import new_topic, start_broker  # noqa: E402
from harness import (  # noqa: E402
    Contender,
    Run,
    alternate,
    fresh_process,
    load_average,
    local_spark,
    table,
    text_digest,
)

SCHEMA = "id BIGINT NOT NULL, customer STRING, region STRING, amount DOUBLE, qty INT"
COLUMNS = ["id", "customer", "region", "amount", "qty"]


def options(bootstrap: str, topic: str, registry: str, fmt: str) -> dict[str, str]:
    opts = {"topic": topic, "properties.bootstrap.servers": bootstrap, "primary-key": "id",
            "key.format": fmt, "value.format": fmt}
    if fmt == "avro-confluent":  # the benchmark's own choice of format, not keyguard logic
        opts |= {"key.avro-confluent.url": registry, "value.avro-confluent.url": registry}
    return opts


def changes(rows: int, updates: float, tombstones: float, seed: int = 13,
            ) -> tuple[Any, list[bool]]:
    """N changes as an Arrow table of the table's columns, and which of them are tombstones."""
    import pyarrow as pa

    rnd = random.Random(seed)
    n_upd, n_del = int(rows * updates), int(rows * tombstones)
    distinct = rows - n_upd - n_del
    ids = list(range(distinct))
    later = [rnd.randrange(distinct) for _ in range(n_upd + n_del)]
    kinds = [False] * n_upd + [True] * n_del
    order = list(range(len(later)))
    rnd.shuffle(order)
    ids += [later[i] for i in order]
    dead = [False] * distinct + [kinds[i] for i in order]
    version = list(range(rows))
    data = pa.table({
        "id": pa.array(ids, pa.int64()),
        "customer": pa.array([f"customer-{v % 100_000}" for v in version], pa.string()),
        "region": pa.array([("eu", "us", "ap")[v % 3] for v in version], pa.string()),
        "amount": pa.array([v * 1.25 for v in version], pa.float64()),
        "qty": pa.array([v % 17 for v in version], pa.int32()),
    })
    return data, dead


def write_topic(spark: Any, bs: str, registry: str, fmt: str, rows: int, parts: int,
                updates: float, tombstones: float, work: Path) -> str:
    """The topic, written once with the writer's codecs and partitioner (untimed)."""
    import pyarrow as pa

    from keyguard.formats.partitioner import partitions_for
    from keyguard.formats.plan import resolve_plan
    from keyguard.formats.registry.registration import bind_plan_schema_ids
    from keyguard.formats.spark_schema import from_spark_schema
    from keyguard.sparkio.options import CONNECTOR_OPTIONS

    topic = new_topic(bs, parts)
    opts = options(bs, topic, registry, fmt)
    # Registers the key and value schemas (the ids the records carry) with one real write.
    from keyguard import sparkio
    schema = spark.createDataFrame([], SCHEMA).schema
    sparkio.write_upsert(spark.createDataFrame([(0, "c", "eu", 1.0, 1)], SCHEMA), **opts)
    plan = resolve_plan(from_spark_schema(schema), opts, extra=CONNECTOR_OPTIONS)
    bind_plan_schema_ids(plan)  # the ids the first write registered
    data, dead = changes(rows, updates, tombstones)
    keys = plan.key_codec.encode_batch(data.select(["id"]))
    bodies = plan.value_codec.encode_batch(data)
    values = [None if d else v for v, d in zip(bodies, dead, strict=True)]
    path = work / f"records-{fmt}.arrow"
    records = pa.table({"key": pa.array(keys, pa.binary()),
                        "value": pa.array(values, pa.binary()),
                        "partition": pa.array(partitions_for(keys, parts), pa.int32())})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, records.schema) as w:
        w.write_table(records)
    out = subprocess.run([sys.executable, str(ROOT / "bench/bare_producer.py"), str(path), bs,
                          topic], check=True, stdout=subprocess.PIPE).stdout
    print(f"{fmt}: wrote {rows:,} records to {topic} in {json.loads(out)['seconds']:.1f} s",
          file=sys.stderr)
    return topic


def aggregate(df: Any) -> str:
    from pyspark.sql import functions as F

    row = df.agg(F.count(F.lit(1)).alias("n"),
                 F.sum(F.xxhash64(*COLUMNS).cast("decimal(38,0)")).alias("h")).first()
    return text_digest(row["n"], row["h"])


def expected_digest(spark: Any, opts: dict[str, str], live: Path) -> str:
    """The aggregate of the table the bare consumer kept, decoded with the plan's codecs."""
    import pyarrow as pa

    from keyguard.sparkio.reader import UpsertKafkaReader

    schema = spark.createDataFrame([], SCHEMA).schema
    plan = UpsertKafkaReader(opts, schema).task_plan()  # the row-by-row decode
    with pa.memory_map(str(live)) as source:
        kept = pa.ipc.open_file(source).read_all()
    rows = []
    for k, v in zip(kept.column("key").to_pylist(), kept.column("value").to_pylist(),
                    strict=True):
        key = plan.key_codec.decode(k)
        assert key is not None
        rows.append(plan.layout.table_row(key, plan.value_codec.decode(v)))
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema)
    data = pa.table([pa.array([r[c] for r in rows], type=arrow.field(c).type) for c in COLUMNS],
                    schema=arrow)
    return aggregate(spark.createDataFrame(data))


class WorkerPeak:
    """The highest RSS of any Python process below this one (Spark's workers), sampled."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> WorkerPeak:
        for pid in self._workers():  # a reused worker's high-water mark restarts here
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    @staticmethod
    def _workers() -> list[str]:
        """Spark's Python workers and their daemon (not the JVM, not this process)."""
        me, out = os.getpid(), []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == me:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"pyspark" in cmd and b"java" not in cmd.split(b"\0")[0]:
                out.append(pid)
        return out

    def _sample(self) -> None:
        while not self._stop.is_set():
            for pid in self._workers():
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                self.peak = max(self.peak, int(line.split()[1]) * 1024)
                except OSError:
                    continue
            self._stop.wait(0.02)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--formats", default="avro-confluent,json")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--updates", type=float, default=0.2,
                    help="fraction of records that update an earlier key")
    ap.add_argument("--tombstones", type=float, default=0.05,
                    help="fraction of records that delete an earlier key")
    ap.add_argument("--library", default=str(ROOT),
                    help="the keyguard tree to measure (default: this one), e.g. a baseline")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(LIBRARY), os.environ.get("PYTHONPATH")) if p)

    work = Path(tempfile.mkdtemp(prefix="keyguard-bench-"))
    broker = start_broker("tansu", work)
    try:
        spark: Any = local_spark("bench-reader")
        registry = f"file://{work / 'schemas'}"
        rows, parts, bs = args.rows, args.partitions, broker.bootstrap
        tables = []
        for fmt in args.formats.split(","):
            topic = write_topic(spark, bs, registry, fmt, rows, parts, args.updates,
                                args.tombstones, work)
            opts = options(bs, topic, registry, fmt)
            expected: dict[str, str] = {}

            def bare(topic: str = topic, opts: dict[str, str] = opts,
                     expected: dict[str, str] = expected) -> Run:
                live = work / "live.arrow"
                done, peak = fresh_process([sys.executable, str(ROOT / "bench/bare_consumer.py"),
                                            bs, topic, str(parts), str(live)], "bare consumer")
                secs = float(done["seconds"])  # type: ignore[arg-type]
                live_digest = text_digest(live.read_bytes())
                if live_digest not in expected:  # decoded once per distinct kept table
                    expected[live_digest] = expected_digest(spark, opts, live)
                return Run(secs, expected[live_digest], peak)

            def reader(opts: dict[str, str] = opts) -> Run:
                with WorkerPeak() as peak:
                    start = time.perf_counter()
                    digest = aggregate(spark.read.format("upsert-kafka").options(**opts)
                                       .schema(SCHEMA).load())
                    secs = time.perf_counter() - start
                return Run(secs, digest, peak.peak)

            contenders = [Contender("bare Consumer loop, no decoding", bare),
                          Contender("upsert-kafka reader (scan.mode=table)", reader)]
            before = load_average()
            alternate(contenders, runs=args.runs, warmup=1)
            after = load_average()
            tables.append(table(
                contenders, baseline="bare Consumer loop, no decoding",
                ratio_label="x bare consumer (goal >= 0.6x)", load=(before, after),
                title=f"{'' if LIBRARY == ROOT else f'keyguard at {LIBRARY}: '}"
                      f"{fmt} key and value, {rows:,} records ({args.updates:.0%} updates, "
                      f"{args.tombstones:.0%} tombstones), {parts} topic partitions, "
                      "local[2], tansu"))
        print("\n\n".join(tables))
        spark.stop()
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
