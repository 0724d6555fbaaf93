"""keyguard.guard.offsets: end offsets from fetch answers (right on tansu too), bounded range
reads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from broker import BrokerMissing, BrokerPool, new_topic
from confluent_kafka import Producer

from keyguard.formats.errors import BrokerUnavailableError, InvalidOptionError
from keyguard.formats.partitioner import partition_for
from keyguard.guard.offsets import KafkaRanges, OffsetRange


@pytest.fixture(params=["tansu", "noida"])
def bootstrap(request: pytest.FixtureRequest, kafka_brokers: BrokerPool,
              kafka_bootstrap: str) -> str:
    try:
        return kafka_brokers.get(request.param).bootstrap
    except BrokerMissing as e:
        pytest.skip(str(e))


def _producer(bootstrap: str, **extra: object) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                     "linger.ms": 50, "log_level": 0, **extra})


def _produce_batched(bootstrap: str, topic: str, n: int) -> dict[int, int]:
    """`n` records in few large batches (the case tansu's ListOffsets gets wrong)."""
    p = _producer(bootstrap)
    counts: dict[int, int] = {}
    for i in range(n):
        key = f"k{i % 10}".encode()
        p.produce(topic, key=key, value=None if i % 7 == 0 else b"v")
        part = partition_for(key, 4)
        counts[part] = counts.get(part, 0) + 1
    assert p.flush(15) == 0
    return counts


def test_capture_after_batched_produce_matches_the_records(bootstrap: str) -> None:
    topic = new_topic(bootstrap, 4)
    counts = _produce_batched(bootstrap, topic, 300)
    kafka = KafkaRanges(bootstrap)
    ranges = kafka.capture(topic)
    assert [r.partition for r in ranges] == [0, 1, 2, 3]
    assert {r.partition: r.end for r in ranges} == {p: counts.get(p, 0) for p in range(4)}
    assert all(r.start == 0 for r in ranges)
    assert any(r.empty for r in ranges)  # 10 keys over 4 partitions leave one empty here
    for r in ranges:
        records = [rec for batch in kafka.read(r) for rec in batch]
        assert [rec.offset for rec in records] == list(range(r.end))
        assert sum(rec.value is None for rec in records) == sum(
            1 for i in range(0, 300, 7) if partition_for(f"k{i % 10}".encode(), 4) == r.partition)


def test_read_ends_at_the_captured_end_while_a_producer_keeps_writing(bootstrap: str) -> None:
    topic = new_topic(bootstrap, 1)
    _produce_batched(bootstrap, topic, 50)
    stop = threading.Event()
    delivered = threading.Condition()
    last_offset = -1  # of the writer's records the broker has acknowledged

    def on_delivery(err: object, msg: Any) -> None:
        nonlocal last_offset
        if err is None:
            with delivered:
                last_offset = max(last_offset, msg.offset())
                delivered.notify_all()

    def keep_writing() -> None:
        p = _producer(bootstrap, **{"linger.ms": 5})
        while not stop.is_set():
            p.produce(topic, key=b"k1", value=b"more", on_delivery=on_delivery)
            p.poll(0)
            stop.wait(0.002)
        p.flush(10)

    def landed_at(offset: int) -> None:
        """Until the writer has a record at `offset` or after it."""
        with delivered:
            assert delivered.wait_for(lambda: last_offset >= offset, timeout=15), (
                f"no record written at offset {offset} or after")

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        landed_at(50)  # the writer's records follow the first 50
        kafka = KafkaRanges(bootstrap)
        (r,) = kafka.capture(topic)
        assert r.end >= 50
        landed_at(r.end)  # more records land after the capture
        records = [rec for batch in kafka.read(r) for rec in batch]
        assert [rec.offset for rec in records] == list(range(r.end))
    finally:
        stop.set()
        writer.join(15)


def test_committed_transaction_ends_the_read(kafka_brokers: BrokerPool,
                                             kafka_bootstrap: str) -> None:
    """The commit marker takes the last offset and is never delivered: EOF ends the read."""
    try:
        bootstrap = kafka_brokers.get("noida").bootstrap
    except BrokerMissing as e:
        pytest.skip(str(e))
    topic = new_topic(bootstrap, 1)
    p = _producer(bootstrap, **{"transactional.id": f"t-{topic}"})
    p.init_transactions(10)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, key=f"k{i}".encode(), value=b"v")
    p.commit_transaction(10)
    kafka = KafkaRanges(bootstrap, stall_timeout_s=5)
    (r,) = kafka.capture(topic)
    assert r.end >= 6  # five records and the commit marker
    records = [rec for batch in kafka.read(r) for rec in batch]
    assert [rec.key for rec in records] == [f"k{i}".encode() for i in range(5)]


def test_missing_topic_is_named(kafka_bootstrap: str) -> None:
    with pytest.raises(InvalidOptionError, match="topic 'no-such-topic-x1' does not exist"):
        KafkaRanges(kafka_bootstrap).capture("no-such-topic-x1")


def test_unreachable_broker_is_unavailable_and_secret_free() -> None:
    kafka = KafkaRanges("127.0.0.1:1", {"security.protocol": "SASL_PLAINTEXT",
                                        "sasl.mechanism": "PLAIN", "sasl.username": "u",
                                        "sasl.password": "hunter2-secret"}, timeout_s=3)
    with pytest.raises(BrokerUnavailableError) as info:
        kafka.capture("t")
    assert info.value.exit_code == 3
    assert "127.0.0.1:1" in str(info.value)
    assert "hunter2-secret" not in str(info.value)


def test_empty_range_reads_without_a_broker() -> None:
    kafka = KafkaRanges("127.0.0.1:1", timeout_s=1)
    empty: Iterator[object] = kafka.read(OffsetRange("t", 0, 0, 0))
    assert list(empty) == []
    assert OffsetRange("t", 0, 5, 5).empty and not OffsetRange("t", 0, 0, 1).empty


def test_a_read_prefetches_little_unless_the_properties_say_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """librdkafka's own prefetch (100k records, 64 MiB per partition) would outweigh a
    folding reader's state; a `properties.*` setting still wins over keyguard's smaller one."""
    import keyguard.guard.offsets as offsets

    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(offsets, "Consumer", lambda conf: seen.append(conf) or object())
    KafkaRanges("127.0.0.1:1")._consumer({})
    KafkaRanges("127.0.0.1:1", {"queued.max.messages.kbytes": 65536})._consumer({})
    default, given = seen
    assert default["queued.max.messages.kbytes"] < 65536
    assert default["queued.min.messages"] < 100_000
    assert default["fetch.queue.backoff.ms"] < 1000
    assert given["queued.max.messages.kbytes"] == 65536
    assert given["queued.min.messages"] == default["queued.min.messages"]
