"""One contender run of bench_migrate.py, in a fresh process so that its peak memory is its own.

    python bench/migrate_run.py bare|process|spark BOOTSTRAP SOURCE TARGET

- bare: one confluent-kafka Consumer reads every partition of SOURCE from its beginning to its
  end and a Producer writes every record it read (key, value) to TARGET, same partition, all
  acknowledged: the least a Python program does to read a topic and write it again.
- process: `keyguard migrate --to-topic TARGET` in this process (`migrate_topic`).
- spark: the same on a local[2] Spark (`run_on_spark`), as `keyguard migrate --spark` runs it.

Both migrations declare the source's key json (primary key id) and write json (id, region)
into TARGET, then verify it. Prints one JSON line: the seconds (the whole run: read, plan,
write, verification), what was written, the peak RSS of this process (the Spark form's driver
or the process form's only process) and, sampled every 50 ms, of the Spark JVM and of the
largest Python worker.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

COLUMNS = "id BIGINT, region STRING, name STRING"
OLD = {"key.format": "json", "primary-key": "id", "value.format": "json"}
NEW = {"key.format": "json", "primary-key": "id,region", "value.format": "json"}


class Peaks:
    """The highest RSS of this process's descendants, by kind (the JVM, Python workers)."""

    def __init__(self) -> None:
        self.jvm = self.worker = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.05):
            parents: dict[int, int] = {}
            info: dict[int, tuple[str, int]] = {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        name, rest = f.read().rsplit(")", 1)
                    fields = rest.split()
                except (OSError, ValueError):
                    continue
                pid = int(entry)
                parents[pid] = int(fields[1])
                info[pid] = (name.split("(", 1)[-1], int(fields[21]) * os.sysconf("SC_PAGE_SIZE"))
            for pid, (name, rss) in info.items():
                up, depth = parents.get(pid), 0
                while up not in (None, 0, 1, me) and depth < 8:
                    up, depth = parents.get(up), depth + 1
                if up != me or pid == me:
                    continue
                if name == "java":
                    self.jvm = max(self.jvm, rss)
                elif name.startswith("python"):
                    self.worker = max(self.worker, rss)


def bare(bootstrap: str, source: str, target: str) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{os.getpid()}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "fetch.wait.max.ms": 10, "log_level": 0})
    parts = len(c.list_topics(source, timeout=10).topics[source].partitions)
    c.assign([TopicPartition(source, p, OFFSET_BEGINNING) for p in range(parts)])
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                  "batch.num.messages": 10_000, "queue.buffering.max.kbytes": 65536,
                  "log_level": 0})
    open_, n = set(range(parts)), 0
    while open_:
        for m in c.consume(10_000, timeout=0.5):
            err = m.error()
            if err is None:
                while True:
                    try:
                        p.produce(target, m.value(), m.key(), partition=m.partition())
                        break
                    except BufferError:
                        p.poll(0.05)
                n += 1
            elif err.code() == KafkaError._PARTITION_EOF:
                open_.discard(m.partition())
            else:
                raise SystemExit(f"reading {source}: {err}")
        p.poll(0)
    if p.flush(300):
        raise SystemExit("records not acknowledged")
    c.close()
    return n


def migrate(kind: str, bootstrap: str, source: str, target: str) -> int:
    from keyguard.formats.sqltypes import parse_columns
    from keyguard.sparkio.migrate_report import render_text
    from keyguard.sparkio.migrate_topic import Migration, migrate_topic

    state = Path(tempfile.mkdtemp()) / "state.json"
    m = Migration(topic=source, bootstrap=bootstrap, table=parse_columns(COLUMNS), old=(OLD,),
                  new=NEW, to_topic=target, state_path=state)
    if kind == "process":
        report = migrate_topic(m)
    else:
        from keyguard.sparkio.migrate_spark import run_on_spark
        from keyguard.sparkio.workers import quiet_session

        spark = quiet_session("local[2]", "bench migrate",
                              **{"spark.driver.memory": "2g",
                                 "spark.python.worker.memory": "512m"})
        try:
            report = run_on_spark(spark, m)
        finally:
            spark.stop()
    if report.verification is None or not report.verification.clean:
        raise SystemExit("the migration did not verify:\n" + render_text(report))
    return report.rewrites_acknowledged + report.tombstones_acknowledged


def main() -> None:
    kind, bootstrap, source, target = sys.argv[1:5]
    peaks = Peaks()
    start = time.perf_counter()
    written = bare(bootstrap, source, target) if kind == "bare" else \
        migrate(kind, bootstrap, source, target)
    seconds = time.perf_counter() - start
    peaks.stop()
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "written": written, "driver_rss": own,
                      "jvm_rss": peaks.jvm, "worker_rss": peaks.worker}))


if __name__ == "__main__":
    main()
