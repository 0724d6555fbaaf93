"""`keyguard audit` against a bare consumer loop, on one tansu broker this script starts.

A topic of N records over 4 partitions is written once per format (pre-serialized with
keyguard's own codecs and murmur2 partitions, produced by bench/bare_producer.py):
N * (1 - updates - tombstones - phantoms) distinct keys, then, shuffled, updates of earlier
keys, tombstones of earlier keys and phantoms: an earlier key written again under other key
bytes (json: the key's fields in the other order; avro-confluent: the bare Avro body without
its frame; raw has no other bytes for a key, so none), so the fold and the judge have work.
Contenders (bench/harness: equal warm-up, ABAB... runs, median [min-max], load average), each a
fresh process that reports its own peak RSS (VmHWM: wait4's rusage would count the pages of
this process, which holds the generated records, as the child's):

1. bare: one confluent-kafka Consumer (bench/bare_consumer.py --one-at-a-time) reading the
   partitions one after another, as the audit does, keeping the last value per key bytes
   (tombstones remove): the floor of what reading a compacted topic costs in Python, without
   decoding a single key. Its clock covers consumer creation to the end.
2. audit: `keyguard.guard.audit.scan.audit_topic` in one process (bench/audit_process.py), timed
   from the call to the result: capture, read, fold, judge, examples fetched again.
3. with `--before TREE`: the same audit with another keyguard checkout (e.g. the commit before
   a change), alternated with the others on the same topic.
4. with `--spark local[1],local[2]`: `keyguard.sparkio.audit` on each local master
   (bench/audit_spark.py; one task per partition, so the cores it is given are what it can
   use), timed from the call to the result in a driver whose session is already up; its
   counts (live keys, phantoms, missed deletes) must equal the one-process audit's.

Same output: each run's digest is the number of live key byte strings (per partition) it found,
which the bare loop's table and the audit's numbers must agree on. The second table shows
records/s, the ratio to the bare loop, peak RSS and the memory the audit's report says its
state holds (`held`), which peak RSS should stay near.

Usage: python bench/bench_audit.py [--records 1000000] [--formats json,avro-confluent,raw]
       [--runs 3] [--updates 0.2] [--tombstones 0.05] [--phantoms 0.01] [--before TREE]
       [--spark local[1],local[2]]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PARTITIONS = 4


def table_columns(fmt: str) -> str:
    """The table each format's topic holds (raw: one key column, one value column)."""
    if fmt == "raw":
        return "id BIGINT NOT NULL, payload STRING"
    return ("id BIGINT NOT NULL, region STRING NOT NULL, customer STRING, amount DOUBLE, "
            "qty INT")


def plan_options(topic: str, fmt: str, registry: str, *,
                 primary_key: str | None = None) -> dict[str, str]:
    opts = {"topic": topic, "key.format": fmt, "value.format": fmt,
            "primary-key": primary_key or ("id" if fmt == "raw" else "id,region")}
    if fmt == "raw":
        opts["value.fields-include"] = "EXCEPT_KEY"
    if fmt == "avro-confluent":  # the benchmark's own choice of format, not keyguard logic
        opts |= {"key.avro-confluent.url": registry, "value.avro-confluent.url": registry}
    return opts


def changes(fmt: str, records: int, updates: float, tombstones: float, phantoms: float,
            seed: int = 13) -> tuple[Any, list[str]]:
    """N changes as an Arrow table of the format's columns, and each one's kind: "put",
    "delete" or "phantom" (an earlier key under other key bytes)."""
    import pyarrow as pa

    rnd = random.Random(seed)
    n_upd, n_del = int(records * updates), int(records * tombstones)
    n_ph = 0 if fmt == "raw" else int(records * phantoms)
    distinct = records - n_upd - n_del - n_ph
    later = ["put"] * n_upd + ["delete"] * n_del + ["phantom"] * n_ph
    rnd.shuffle(later)
    kinds = ["put"] * distinct + later
    ids = list(range(distinct)) + [rnd.randrange(distinct) for _ in later]
    version = range(records)
    if fmt == "raw":
        return pa.table({"id": pa.array(ids, pa.int64()),
                         "payload": pa.array([f"customer-{v}" for v in version])}), kinds
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "region": pa.array([f"r{i % 3}" for i in ids], pa.string()),
        "customer": pa.array([f"customer-{v % 100_000}" for v in version], pa.string()),
        "amount": pa.array([v * 1.25 for v in version], pa.float64()),
        "qty": pa.array([v % 17 for v in version], pa.int32()),
    }), kinds


def write_topic(bootstrap: str, registry: str, fmt: str, records: int, updates: float,
                tombstones: float, phantoms: float, work: Path) -> str:
    """The topic, written once with keyguard's codecs and murmur2 partitions (untimed)."""
    import pyarrow as pa
    from broker import new_topic

    from keyguard.formats.framing import CONFLUENT
    from keyguard.formats.partitioner import partitions_for
    from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
    from keyguard.formats.sqltypes import parse_columns

    topic = new_topic(bootstrap, PARTITIONS, {"cleanup.policy": "compact"},
                      prefix="keyguard-bench-audit")
    columns = parse_columns(table_columns(fmt))
    plan = open_plan(columns, plan_options(topic, fmt, registry))
    bind_plan_schema_ids(plan)  # registers the schemas (the ids the records carry)
    data, kinds = changes(fmt, records, updates, tombstones, phantoms)
    keys = plan.key_codec.encode_batch(data.select(plan.key_codec.row_type.names))
    if "phantom" in kinds:
        if fmt == "json":  # the key's fields in the other order: {"region":..,"id":..}
            other = open_plan(columns, plan_options(topic, fmt, registry,
                                                    primary_key="region,id"))
            swapped = other.key_codec.encode_batch(data.select(["region", "id"]))
            keys = [s if k == "phantom" else b for b, s, k in zip(keys, swapped, kinds,
                                                                  strict=True)]
        else:  # a producer that forgot the serializer: the bare body
            keys = [CONFLUENT.body(b) if k == "phantom" else b
                    for b, k in zip(keys, kinds, strict=True)]
    bodies = plan.value_codec.encode_batch(data)
    values = [None if k == "delete" else v for v, k in zip(bodies, kinds, strict=True)]
    path = work / f"records-{fmt}.arrow"
    table = pa.table({"key": pa.array(keys, pa.binary()),
                      "value": pa.array(values, pa.binary()),
                      "partition": pa.array(partitions_for(keys, PARTITIONS), pa.int32())})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    del keys, bodies, values, table, data
    out = subprocess.run([sys.executable, str(ROOT / "bench/bare_producer.py"), str(path),
                          bootstrap, topic], check=True, stdout=subprocess.PIPE).stdout
    path.unlink()
    print(f"{fmt}: wrote {records:,} records to {topic} in "
          f"{json.loads(out)['seconds']:.1f} s", file=sys.stderr)
    return topic


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--formats", default="json,avro-confluent,raw")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--updates", type=float, default=0.2,
                    help="fraction of records that update an earlier key")
    ap.add_argument("--tombstones", type=float, default=0.05,
                    help="fraction of records that delete an earlier key")
    ap.add_argument("--phantoms", type=float, default=0.01,
                    help="fraction of records that write an earlier key under other bytes")
    ap.add_argument("--before", type=Path, default=None,
                    help="another keyguard checkout to audit with, alternated (e.g. a baseline)")
    ap.add_argument("--spark", default="",
                    help="local Spark masters to run keyguard.sparkio.audit on, alternated")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from broker import start_broker
    from harness import (
        Contender,
        Run,
        alternate,
        child_peak_rss,
        fresh_process,
        importable,
        load_average,
        table,
        text_digest,
    )

    work = Path(tempfile.mkdtemp(prefix="keyguard-bench-audit-"))
    libraries = {"audit": importable(ROOT, work / "after")}
    if args.before is not None:
        libraries[f"audit, keyguard at {args.before}"] = importable(args.before.resolve(),
                                                                    work / "before")
    broker = start_broker("tansu", work)
    try:
        registry = f"file://{work / 'schemas'}"
        (work / "schemas" / "subjects").mkdir(parents=True)
        bs, n = broker.bootstrap, args.records
        tables = []
        for fmt in args.formats.split(","):
            topic = write_topic(bs, registry, fmt, n, args.updates, args.tombstones,
                                args.phantoms, work)
            held: dict[str, list[int]] = {}
            counts: dict[str, set[tuple[int, int]]] = {}

            def bare(topic: str = topic) -> Run:
                done, peak = fresh_process(
                    [sys.executable, str(ROOT / "bench/bare_consumer.py"), bs, topic,
                     str(PARTITIONS), str(work / "live.arrow"), "--one-at-a-time"],
                    "bare consumer")
                return Run(float(done["seconds"]), text_digest(done["rows"]),  # type: ignore[arg-type]
                           int(done["peak_rss_bytes"]) or peak)  # type: ignore[call-overload]

            def audit(name: str, library: Path, topic: str = topic, fmt: str = fmt,
                      held: dict[str, list[int]] = held,
                      counts: dict[str, set[tuple[int, int]]] = counts) -> Run:
                env = {**os.environ, "PYTHONPATH": str(library)}
                proc = subprocess.Popen(
                    [sys.executable, str(ROOT / "bench/audit_process.py"), bs, topic, fmt,
                     registry], stdout=subprocess.PIPE, env=env)
                assert proc.stdout is not None
                with proc.stdout:
                    out = proc.stdout.read()
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = code = os.waitstatus_to_exitcode(status)
                if code:
                    raise SystemExit(f"{name} failed ({code})")
                done = json.loads(out)
                held.setdefault(name, []).append(int(done["held_bytes"]))
                counts.setdefault(name, set()).add((int(done["phantom_keys"]),
                                                    int(done["missed_deletes"])))
                return Run(float(done["seconds"]), text_digest(done["live_keys"]),
                           int(done["peak_rss_bytes"]) or child_peak_rss(usage))

            def spark(master: str, topic: str = topic, fmt: str = fmt,
                      counts: dict[str, set[tuple[int, int]]] = counts) -> Run:
                done, _ = fresh_process(
                    [sys.executable, str(ROOT / "bench/audit_spark.py"), bs, topic, fmt,
                     registry, master], f"sparkio.audit on {master}")
                counts.setdefault(master, set()).add(
                    (int(done["phantom_keys"]), int(done["missed_deletes"])))  # type: ignore[call-overload]
                return Run(float(done["seconds"]), text_digest(done["live_keys"]),  # type: ignore[arg-type]
                           int(done["peak_rss_bytes"]))  # type: ignore[call-overload]

            contenders = [Contender("bare Consumer loop, one partition at a time", bare)]
            contenders += [Contender(name, lambda name=name, lib=lib: audit(name, lib))
                           for name, lib in libraries.items()]
            contenders += [Contender(f"sparkio.audit, {m} (driver RSS)",
                                     lambda m=m: spark(m))
                           for m in args.spark.split(",") if m]
            before = load_average()
            alternate(contenders, runs=args.runs, warmup=1)
            after = load_average()
            title = (f"{fmt} key and value, {n:,} records ({args.updates:.0%} updates, "
                     f"{args.tombstones:.0%} tombstones, "
                     f"{0 if fmt == 'raw' else args.phantoms:.0%} phantoms), "
                     f"{PARTITIONS} partitions, tansu")
            text = table(contenders, baseline=contenders[0].name, title=title,
                         ratio_label="x bare consumer (goal >= 0.5x)", load=(before, after))
            base = statistics.median(contenders[0].seconds)
            rows = ["| contender | records/s, median | x bare | peak RSS | state the report "
                    "claims | peak RSS / claimed |", "|---|---|---|---|---|---|"]
            for c in contenders:
                secs = statistics.median(c.seconds)
                peak = max(r.peak_rss_bytes for r in c.runs)
                claimed = max(held.get(c.name, [0]))
                rows.append(f"| {c.name} | {n / secs:,.0f} | {base / secs:.2f}x | "
                            f"{peak / 2**20:.0f} MiB | "
                            + (f"{claimed / 2**20:.0f} MiB | {peak / claimed:.1f}x |"
                               if claimed else "- | - |"))
            if args.spark:
                rows.append("")
                rows.append("(phantom keys, missed deletes) each contender's reports found: "
                            + ", ".join(f"{m} {sorted(c)}" for m, c in counts.items()))
            tables.append(text + "\n\n" + "\n".join(rows))
            print(tables[-1], "\n", flush=True)
        print("\n\n".join(tables))
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
