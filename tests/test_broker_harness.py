"""The broker harness itself, and the partitioning fact the writer relies on: librdkafka's
murmur2_random puts a key where Kafka's Java default partitioner (and so Flink) puts it."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest
from broker import (
    Broker,
    BrokerMissing,
    BrokerPool,
    BrokerStartError,
    external_bootstrap,
    new_topic,
    start_broker,
    start_process,
)
from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, Producer, TopicPartition

from keyguard.formats.partitioner import partition_for, partitions_for

PRODUCER = {"partitioner": "murmur2_random", "acks": "all", "enable.idempotence": True}


@pytest.fixture(params=["tansu", "noida"])
def broker(request: pytest.FixtureRequest, kafka_brokers: BrokerPool) -> Broker:
    try:
        return kafka_brokers.get(request.param)
    except BrokerMissing as e:
        pytest.skip(str(e))


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> list[int]:
    """Produce without choosing partitions; return the partition each record went to."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    delivered: list[Message] = []
    errors: list[str] = []

    def on_delivery(err: object, msg: Message) -> None:
        (errors.append(str(err)) if err is not None else delivered.append(msg))

    for key, value in records:
        producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(15) == 0, "records still in flight after 15 s"
    assert not errors, errors
    by_key: dict[bytes, int] = {}
    for m in delivered:
        got_key, partition = m.key(), m.partition()
        assert isinstance(got_key, bytes) and partition is not None
        by_key[got_key] = partition
    return [by_key[k] for k, _ in records]


def consume_all(bootstrap: str, topic: str, partitions: int, count: int) -> list[Message]:
    """Read `count` records from the beginning of every partition (assign: no group join)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"keyguard-test-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out: list[Message] = []
    deadline = time.monotonic() + 20
    try:
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            # A Message is falsy when its value is None: test identity, or tombstones vanish.
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            out.append(msg)
    finally:
        consumer.close()
    return out


def test_produce_and_consume_with_a_tombstone(broker: Broker) -> None:
    topic = new_topic(broker.bootstrap, 3, {"cleanup.policy": "compact"})
    records: list[tuple[bytes, bytes | None]] = [
        (b"user-1", b"v1"),
        (b"user-2", b"v2"),
        (b"user-1", b"v1b"),
        (b"user-2", None),
    ]
    produced = produce(broker.bootstrap, topic, records)
    got = consume_all(broker.bootstrap, topic, 3, len(records))
    assert len(got) == len(records)
    tombstones = [m for m in got if m.value() is None]
    assert [m.key() for m in tombstones] == [b"user-2"]
    # Per partition, order is kept; folding to the last value per key gives the table.
    table: dict[bytes, bytes] = {}
    for m in sorted(got, key=lambda m: (m.partition(), m.offset())):
        key = m.key()
        assert key is not None
        value = m.value()
        if value is None:
            table.pop(key, None)
        else:
            assert isinstance(value, bytes)
            table[key] = value
    assert table == {b"user-1": b"v1b"}
    assert produced == [partition_for(k, 3) for k, _ in records]


def test_keys_land_on_the_java_partition(broker: Broker) -> None:
    n = 6
    topic = new_topic(broker.bootstrap, n)
    keys = [f"key-{i}".encode() for i in range(200)] + [
        uuid.UUID(int=i * 7919).bytes for i in range(100)
    ]
    produced = produce(broker.bootstrap, topic, [(k, b"x") for k in keys])
    assert produced == [partition_for(k, n) for k in keys]
    assert produced == partitions_for(keys, n).tolist()
    assert len(set(produced)) == n


def test_new_topic_names_are_unique_and_partitioned(kafka_bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient

    a, b = new_topic(kafka_bootstrap, 2), new_topic(kafka_bootstrap, 5)
    assert a != b
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10).topics
    assert len(topics[a].partitions) == 2
    assert len(topics[b].partitions) == 5


def test_start_and_stop_by_pid(tmp_path: Path) -> None:
    if external_bootstrap():
        pytest.skip("KEYGUARD_TEST_BOOTSTRAP is set: the suite starts no broker")
    try:
        started = start_broker("tansu", tmp_path)
    except BrokerMissing as e:
        pytest.skip(str(e))
    assert started.process is not None and started.pid is not None
    assert started.log_path is not None and started.log_path.exists()
    started.stop()
    assert started.process.poll() is not None


def test_a_broker_that_dies_shows_its_log(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "print('port already in use, giving up'); raise SystemExit(3)"]
    with pytest.raises(BrokerStartError) as info:
        start_process("fake", cmd, "127.0.0.1:1", tmp_path / "fake.log", timeout=10)
    assert info.value.exited
    assert "exited with code 3" in str(info.value)
    assert "port already in use, giving up" in str(info.value)
