"""The bare-producer contender of bench_writer.py, run as a fresh process so its peak memory is
its own: reads pre-serialized (key, value, partition) records from an Arrow IPC file, then
times only the producing (first produce() to the last acknowledgement) and prints the seconds
and the CPU the whole machine spent meanwhile (this process, librdkafka's threads, the broker).

    python bench/bare_producer.py RECORDS.arrow BOOTSTRAP TOPIC
"""

from __future__ import annotations

import json
import sys
import time

import pyarrow as pa
from confluent_kafka import Producer
from harness import machine_cpu_s  # bench/, this script's directory

PRODUCER = {"acks": "all", "enable.idempotence": True, "partitioner": "murmur2_random",
            "linger.ms": 20, "batch.num.messages": 10_000,
            "queue.buffering.max.kbytes": 65536}


def main() -> None:
    path, bootstrap, topic = sys.argv[1:4]
    with pa.memory_map(path) as source:
        records = pa.ipc.open_file(source).read_all()
    keys = records.column("key").to_pylist()
    values = records.column("value").to_pylist()
    parts = records.column("partition").to_pylist()
    del records
    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    cpu = machine_cpu_s()
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
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    cpu = machine_cpu_s() - cpu
    if left:
        raise SystemExit(f"{left} records not acknowledged")
    print(json.dumps({"seconds": elapsed, "cpu_s": cpu}))


if __name__ == "__main__":
    main()
