"""The guard's topic sample (`KafkaTopicInspector.facts`) on a 1M-record topic, against the
same call without the key scan, on one tansu broker this script starts.

The sample runs before every write to a non-empty topic, so it must stay cheap: goal at most
0.3 s for the 10k-key sample of a 1M-record topic. Contenders alternate after the same warm-up
(bench/harness); every run must report the same facts. Prints a markdown table and what the
last scan fetched (records and bytes, kept or not).

--before PATH adds a contender: the KafkaTopicInspector of another guard/topic.py (e.g. an
older checkout's), on the same topic in the same run. Its facts may differ (an older scan read
from the beginning), so its runs carry no digest.

Usage: python bench/bench_guard_sample.py [--records 1000000] [--partitions 3] [--runs 5]
       [--scan-limit 10000] [--before OLD/guard/topic.py]
"""

from __future__ import annotations

import argparse
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.append(str(ROOT / "tests"))

from broker import new_topic, start_broker  # noqa: E402
from harness import Contender, Run, alternate, load_average, table, text_digest  # noqa: E402

from keyguard.guard.topic import KafkaTopicInspector  # noqa: E402


def fill(bootstrap: str, topic: str, records: int) -> None:
    """Confluent-framed keys (two schema ids, the newer on the last tenth), ~60-byte values."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000,
                  "partitioner": "murmur2_random", "log_level": 0})
    value = b"{" + b"x" * 58 + b"}"
    newer = records - records // 10
    for i in range(records):
        key = b"\x00" + struct.pack(">I", 2 if i >= newer else 1) + i.to_bytes(8, "big")
        while True:
            try:
                p.produce(topic, value, key)
                break
            except BufferError:
                p.poll(0.05)
        if i % 10_000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scan-limit", type=int, default=10_000)
    ap.add_argument("--before", type=Path, help="another guard/topic.py to compare with")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="keyguard-bench-"))
    broker = start_broker("tansu", work)
    try:
        bs = broker.bootstrap
        topic = new_topic(bs, args.partitions)
        start = time.perf_counter()
        fill(bs, topic, args.records)
        print(f"produced {args.records:,} records in {time.perf_counter() - start:.1f} s")
        inspector = KafkaTopicInspector(bs)

        def facts(scan: bool, who: object = inspector) -> Run:
            start = time.perf_counter()
            f = who.facts(topic, scan_limit=args.scan_limit,  # type: ignore[attr-defined]
                          scan_schema_ids=scan)
            secs = time.perf_counter() - start
            assert f is not None
            digest = text_digest(sorted(f.key_schema_ids.items()), f.keys_scanned,
                                 f.scan_complete) if scan and who is inspector else ""
            return Run(secs, digest)

        contenders = [Contender("facts, no key scan (metadata, configs)", lambda: facts(False)),
                      Contender(f"facts with the {args.scan_limit:,}-key sample",
                                lambda: facts(True))]
        if args.before:
            import importlib.util

            spec = importlib.util.spec_from_file_location("topic_before", args.before)
            assert spec is not None and spec.loader is not None
            old = importlib.util.module_from_spec(spec)
            sys.modules["topic_before"] = old  # its dataclasses look themselves up there
            spec.loader.exec_module(old)
            before_inspector = old.KafkaTopicInspector(bs)
            contenders.append(Contender(f"the same, {args.before}",
                                        lambda: facts(True, before_inspector)))
        before = load_average()
        alternate(contenders, runs=args.runs, warmup=1)
        f = inspector.facts(topic, scan_limit=args.scan_limit)
        assert f is not None
        read, nbytes = inspector.last_scan_read
        print(table(contenders, baseline=contenders[0].name, higher_is_better=False,
                    ratio_label="x no scan", load=(before, load_average()),
                    title=f"guard topic sample, {args.records:,} records, {args.partitions} "
                          "partitions, tansu (goal: at most 0.3 s)"))
        print(f"\nkeys kept {f.keys_scanned:,} ({dict(f.key_schema_ids)}), records fetched "
              f"{read:,} ({nbytes / 1e6:.1f} MB), complete: {f.scan_complete}")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
