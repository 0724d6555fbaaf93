"""`keyguard migrate` on Spark and in one process against a bare consume-then-produce, on one
tansu broker this script starts; peak memory of the Spark driver, its JVM and its workers as
the topic grows.

For each size N, a source topic of N records is written once (json keys `{"id":i}`, json
values; 10% of the records update an earlier key, 2% delete one), over `--partitions`
partitions by murmur2. Every run then writes into a fresh target topic, so every run does the
whole work (bench/harness: equal warm-up, ABAB... runs, median [min-max], load average):

1. bare: a fresh process reads every record of the source and produces it to the target (same
   key, value, partition), all acknowledged: the floor of reading a topic and writing it again.
2. spark: `keyguard migrate --spark local[2] --to-topic TARGET` (`run_on_spark`), re-keying to
   (id, region): read in stretches by tasks, planned in executors, rewrites produced from the
   tasks, then the target read again and verified. Peak RSS: the Python driver (its own
   rusage), the JVM and the largest Python worker (sampled every 50 ms).
3. process: the same migration in one process (`migrate_topic`), which holds the table.

The migrations must verify (else the run aborts); both write one record per live row. The
driver's RSS is the number to watch as N grows: the Spark form's must stay flat, the process
form's grows with the table.

Where the time goes (100k records, local[2], timed per Spark job): reading, folding and
classifying every record and planning every row, one job, 16 s; producing the rewrites 2.4 s;
the verification (the target read again, classified and checked row by row) 12.5 s; Spark's
start 10 to 15 s. Per record in the tasks' Python, most of it is classifying (decoding the key
under the new and the old declarations and re-encoding it to compare bytes, decoding the
value, encoding the row under the new key: about 60 us) and pickling the slots for the
shuffles (about 25 us); the bare copy decodes nothing.

With `--memory 1000000,4000000,10000000` each contender runs once per size instead (a memory
measurement, not a timing): the table shows each one's seconds and peak RSS side by side as the
topic grows.

Usage: python bench/bench_migrate.py [--records 1000000] [--runs 3] [--partitions 4]
       [--contenders bare,spark,process] [--memory SIZES]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from broker import new_topic, start_broker  # noqa: E402
from harness import Contender, Run, alternate, fresh_process, load_average, table  # noqa: E402

from keyguard.formats.partitioner import partition_for  # noqa: E402


def fill(bootstrap: str, records: int, partitions: int, seed: int = 7) -> str:
    """The source topic: N records, 10% updates and 2% deletes of earlier keys."""
    from confluent_kafka import Producer

    topic = new_topic(bootstrap, partitions, {"cleanup.policy": "compact"}, prefix="bench")
    rng = random.Random(seed)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all",
                  "batch.num.messages": 10_000, "queue.buffering.max.kbytes": 65536,
                  "log_level": 0})
    distinct = 0
    for i in range(records):
        roll = rng.random()
        if distinct and roll < 0.12:
            row_id = rng.randrange(distinct)
        else:
            row_id, distinct = distinct, distinct + 1
        key = b'{"id":%d}' % row_id
        value = None if distinct and 0.10 <= roll < 0.12 else \
            b'{"id":%d,"region":"eu","name":"customer-%d-%d"}' % (row_id, row_id, i)
        while True:
            try:
                p.produce(topic, value, key, partition=partition_for(key, partitions))
                break
            except BufferError:
                p.poll(0.05)
        if i % 10_000 == 0:
            p.poll(0)
    if p.flush(600):
        raise SystemExit("the source topic was not written")
    return topic


def contender(name: str, bootstrap: str, source: str, partitions: int) -> Contender:
    peaks: dict[str, int] = {}

    def run() -> Run:
        target = new_topic(bootstrap, partitions, {"cleanup.policy": "compact"},
                           prefix=f"bench-{name}")
        out, rss = fresh_process([sys.executable, str(ROOT / "bench" / "migrate_run.py"), name,
                                  bootstrap, source, target], name)
        for what in ("jvm_rss", "worker_rss"):
            peaks[what] = max(peaks.get(what, 0), int(out[what]))  # type: ignore[call-overload]
        peaks["driver_rss"] = max(peaks.get("driver_rss", 0), rss)
        return Run(float(out["seconds"]), "", rss)  # type: ignore[arg-type]

    c = Contender(name, run)
    c.peaks = peaks  # type: ignore[attr-defined]
    return c


def memory_table(sizes: list[tuple[int, list[Contender]]]) -> str:
    lines = ["| records | contender | seconds, median | driver (its own process) | Spark JVM "
             "| largest Python worker |", "|---|---|---|---|---|---|"]
    for n, contenders in sizes:
        for c in contenders:
            p = c.peaks  # type: ignore[attr-defined]

            def mib(v: int) -> str:
                return f"{v / 2**20:.0f} MiB" if v else "-"

            lines.append(f"| {n:,} | {c.name} | {statistics.median(c.seconds):.1f} | "
                         f"{mib(p.get('driver_rss', 0))} | {mib(p.get('jvm_rss', 0))} | "
                         f"{mib(p.get('worker_rss', 0))} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", default="1000000",
                    help="comma-separated sizes, e.g. 1000000,10000000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--contenders", default="bare,spark,process")
    ap.add_argument("--memory", default="",
                    help="comma-separated sizes: one run of each contender per size")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="keyguard-bench-"))
    broker = start_broker("tansu", work)
    sizes = []
    try:
        for n in (int(x) for x in (args.memory or args.records).split(",")):
            started = time.perf_counter()
            source = fill(broker.bootstrap, n, args.partitions)
            print(f"{n:,} records written in {time.perf_counter() - started:.0f} s",
                  file=sys.stderr)
            contenders = [contender(name, broker.bootstrap, source, args.partitions)
                          for name in args.contenders.split(",")]
            sizes.append((n, contenders))
            if args.memory:
                for c in contenders:
                    c.runs.append(c.run())
                print(memory_table(sizes[-1:]), file=sys.stderr)
                continue
            before = load_average()
            alternate(contenders, runs=args.runs, warmup=args.warmup)
            print(table(contenders, baseline=contenders[0].name,
                        title=f"{n:,} records, {args.partitions} partitions",
                        load=(before, load_average()), ratio_label="throughput ratio"))
            print()
        print(memory_table(sizes))
        print(f"load average after: {' '.join(f'{x:.2f}' for x in load_average())}")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
