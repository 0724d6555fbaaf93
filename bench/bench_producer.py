"""The write task's producing core alone (`UpsertProducer.send` + `finish`, no Spark, no
encoding): produce_batch per partition (`batched=True`) vs one produce() per record (the
default), on one tansu broker this script starts, with the same pre-serialized records.

Contenders alternate after the same warm-up (bench/harness); each run writes a new topic,
which is read back and digested: both must write the same bytes to the same partitions.
Peak memory is not comparable here (one process for all runs) and is not reported; the CPU
time of this process is (wall time is bound by the broker, which shares the machine).

Usage: python bench/bench_producer.py [--records 1000000] [--partitions 3] [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.append(str(ROOT / "tests"))

from bench_writer import topic_digest  # noqa: E402
from broker import new_topic, start_broker  # noqa: E402
from harness import Contender, Run, alternate, load_average, table  # noqa: E402

from keyguard.sparkio.producer import UpsertProducer, producer_config  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=10_000, help="records per send() call")
    args = ap.parse_args()
    import numpy as np

    from keyguard.formats.partitioner import partitions_for

    keys = [b"\x00\x00\x00\x00\x01" + i.to_bytes(8, "big") for i in range(args.records)]
    values = [b"\x00\x00\x00\x00\x02" + b"x" * 40 for _ in range(args.records)]
    parts = np.asarray(partitions_for(keys, args.partitions), dtype=np.int32)
    order = np.argsort(parts, kind="stable")  # a write task gets its records by partition
    keys = [keys[i] for i in order.tolist()]
    values = [values[i] for i in order.tolist()]
    parts = parts[order]
    work = Path(tempfile.mkdtemp(prefix="keyguard-bench-"))
    broker = start_broker("tansu", work)
    try:
        bs = broker.bootstrap
        config = producer_config({"bootstrap.servers": bs, "log_level": 0}, "at-least-once")

        cpu: dict[str, list[float]] = {}

        def run(batched: bool) -> Run:
            topic = new_topic(bs, args.partitions)
            cpu0 = time.process_time()
            start = time.perf_counter()
            p = UpsertProducer(topic, config, batched=batched)
            for s in range(0, args.records, args.chunk):
                p.send(keys[s:s + args.chunk], values[s:s + args.chunk],
                       parts[s:s + args.chunk])
            stats = p.finish()
            secs = time.perf_counter() - start
            cpu.setdefault("produce_batch" if batched else "per record", []).append(
                time.process_time() - cpu0)
            assert stats.records == args.records
            return Run(secs, topic_digest(bs, topic, args.partitions))

        contenders = [Contender("one produce() per record", lambda: run(False)),
                      Contender("produce_batch per partition (batched=True)",
                                lambda: run(True))]
        before = load_average()
        alternate(contenders, runs=args.runs, warmup=1)
        print(table(contenders, baseline=contenders[0].name, load=(before, load_average()),
                    ratio_label="x per-record (throughput)",
                    title=f"UpsertProducer, {args.records:,} records of {len(keys[0])}+"
                          f"{len(values[0])} bytes, {args.partitions} partitions, tansu"))
        import statistics

        print("CPU seconds of this process (Python and librdkafka threads), median [min-max]: "
              + ", ".join(f"{k} {statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]"
                          for k, v in cpu.items()))
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
