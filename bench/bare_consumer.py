"""The bare-consumer contender of bench_reader.py, run as a fresh process so its peak memory is
its own: one confluent-kafka Consumer reads every partition of a topic from its beginning to
its end (PARTITION_EOF), keeping the last value per key bytes (a tombstone removes the key):
the least a Python program does to turn a compacted topic into its table. Only the reading
and that fold are timed; afterwards (untimed) the live (key, value) bytes are written to an
Arrow IPC file, so the benchmark can check that the Spark read returned the same table.
`--one-at-a-time` reads the partitions one after another, each from offset 0 to its end, as
`keyguard audit` reads them (bench_audit.py).

    python bench/bare_consumer.py BOOTSTRAP TOPIC PARTITIONS OUT.arrow [--one-at-a-time]
"""

from __future__ import annotations

import json
import sys
import time
import uuid

import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from harness import own_peak_rss  # bench/, this script's directory


def main() -> None:
    bootstrap, topic, partitions, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    one_at_a_time = "--one-at-a-time" in sys.argv[5:]
    start = time.perf_counter()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "fetch.wait.max.ms": 10, "log_level": 0})
    live: dict[bytes, bytes] = {}
    if one_at_a_time:
        for p in range(partitions):
            c.assign([TopicPartition(topic, p, 0)])
            read(c, topic, {p}, live)
    else:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        read(c, topic, set(range(partitions)), live)
    elapsed = time.perf_counter() - start
    peak = own_peak_rss()  # before the table is written out (untimed)
    c.close()
    table = pa.table({"key": pa.array(list(live), pa.binary()),
                      "value": pa.array(list(live.values()), pa.binary())})
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    print(json.dumps({"seconds": elapsed, "rows": len(live), "peak_rss_bytes": peak}))


def read(c: Consumer, topic: str, open_: set[int], live: dict[bytes, bytes]) -> None:
    """Consume the assigned partitions in `open_` to their ends into `live`."""
    while open_:
        for m in c.consume(10_000, timeout=0.5):
            err = m.error()
            if err is None:
                k, v = m.key(), m.value()
                if k is None:
                    continue
                if v is None:
                    live.pop(k, None)
                else:
                    live[k] = v
            elif err.code() == KafkaError._PARTITION_EOF:
                open_.discard(m.partition())
            else:
                raise SystemExit(f"reading {topic}: {err}")


if __name__ == "__main__":
    main()
