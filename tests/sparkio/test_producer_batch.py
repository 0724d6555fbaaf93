"""The producer's produce_batch path (`batched=True`, confluent-kafka >= 2.12): records grouped
by partition in input order, a full queue's refused suffix sent again, other refusals failing
the task with counts, and byte counts read off Arrow columns. The per-record path is in
test_producer.py."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError

from keyguard.formats.plan import resolve_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.sparkio.change_encoder import ChangeEncoder, binary_nbytes
from keyguard.sparkio.options import CONNECTOR_OPTIONS
from keyguard.sparkio.producer import POLL_EVERY, TaskDeliveryError, UpsertProducer


class BatchProducer:
    """librdkafka's batch contract: a queue of `room` records; once it is full, the record
    refused and every later one in the call carry `_error` (QUEUE_FULL); poll() drains it."""

    def __init__(self, config: dict[str, Any], room: int = 10**9,
                 refuse: bytes | None = None) -> None:
        self.config = config
        self.room = self.capacity = room
        self.refuse = refuse
        self.sent: list[tuple[bytes, bytes | None, int]] = []
        self.calls: list[int] = []
        self.polls: list[float] = []

    def produce_batch(self, topic: str, messages: list[dict[str, Any]],
                      partition: int = -1) -> int:
        self.calls.append(len(messages))
        good = 0
        full = False
        for m in messages:
            assert "_error" not in m, "a refused record came back still marked"
            if full or self.room == 0:
                full = True
                m["_error"] = KafkaError(KafkaError._QUEUE_FULL)
                continue
            if self.refuse is not None and m["key"] == self.refuse:
                m["_error"] = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
                continue
            self.sent.append((m["key"], m["value"], partition))
            self.room -= 1
            good += 1
        return good

    def poll(self, timeout: float = 0) -> int:
        self.polls.append(timeout)
        self.room = self.capacity
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return 0

    def purge(self) -> None:
        pass


def made(**kw: Any) -> tuple[UpsertProducer, BatchProducer]:
    box: list[BatchProducer] = []

    def factory(config: dict[str, Any]) -> BatchProducer:
        box.append(BatchProducer(config, **kw))
        return box[0]

    return UpsertProducer(topic="t", config={}, factory=factory, batched=True), box[0]


def records(n: int) -> tuple[list[bytes], list[bytes | None], list[int]]:
    keys = [b"k%d" % i for i in range(n)]
    values: list[bytes | None] = [b"v%d" % i if i % 5 else None for i in range(n)]
    return keys, values, [i % 3 for i in range(n)]


def test_records_go_one_call_per_partition_and_chunk_in_order() -> None:
    p, raw = made()
    keys, values, parts = records(2 * POLL_EVERY + 7)
    p.send(keys, values, parts)
    stats = p.finish()
    for part in range(3):
        expected = [(k, v, q) for k, v, q in zip(keys, values, parts, strict=True) if q == part]
        assert [r for r in raw.sent if r[2] == part] == expected
    assert len(raw.sent) == len(keys)
    assert len(raw.calls) == 3  # 3 partitions of ~3.3k records: one call each
    n = len(keys)
    assert (stats.records, stats.tombstones, stats.upserts) == (n, n // 5 + 1, n - n // 5 - 1)
    assert stats.bytes == sum(map(len, keys)) + sum(len(v) for v in values if v is not None)
    assert stats.partitions == (0, 1, 2)


def test_a_full_queue_sends_the_refused_suffix_again_once_in_order() -> None:
    p, raw = made(room=700)
    keys, values, _ = records(5000)
    p.send(keys, values, [0] * len(keys))
    stats = p.finish()
    assert raw.sent == [(k, v, 0) for k, v in zip(keys, values, strict=True)]
    assert stats.records == 5000
    assert raw.polls.count(0) == 1 and len(raw.polls) > 5  # waited for room


def test_a_refused_record_fails_the_task_with_counts_and_the_reason() -> None:
    p, _ = made(refuse=b"k3")
    keys, values, _ = records(10)
    with pytest.raises(TaskDeliveryError) as err:
        p.send(keys, values, [0] * 10)
    assert (err.value.delivered, err.value.undelivered) == (9, 1)
    assert "MSG_SIZE_TOO_LARGE" in str(err.value)


def test_caller_counted_bytes_are_used_as_given() -> None:
    p, _ = made()
    p.send([b"a", b"b"], [b"1", b"22"], [0, 1], nbytes=5)
    assert p.finish().bytes == 5


def test_encoder_counts_bytes_from_its_arrow_columns() -> None:
    pl = resolve_plan(parse_columns("region STRING, id INT, name STRING"), {
        "topic": "t", "primary-key": "region,id", "key.format": "avro",
        "value.format": "avro"}, extra=CONNECTOR_OPTIONS)
    batch = pa.record_batch({"region": ["eu", "us", "eu"], "id": pa.array([1, 2, 300],
                                                                            pa.int32()),
                             "name": ["a", None, "ccc"]})
    out = ChangeEncoder(pl, 5).encode(batch)
    assert out.nbytes == sum(map(len, out.keys)) + sum(len(v) for v in out.values if v)
    arr = pa.array([b"ab", None, b"cde", b""], pa.binary())
    assert binary_nbytes(arr) == 5 and binary_nbytes(arr.slice(2)) == 3
    assert binary_nbytes(pa.array([b"xy"], pa.large_binary())) == 2


def test_batching_is_off_unless_asked_for() -> None:
    box: list[BatchProducer] = []
    p = UpsertProducer(topic="t", config={},
                       factory=lambda c: box.append(BatchProducer(c)) or box[0])
    box[0].produce = lambda topic, value, key, partition: box[0].sent.append(  # type: ignore
        (key, value, partition))
    p.send([b"a", b"b"], [b"1", None], [1, 0])
    p.finish()
    assert box[0].calls == [] and box[0].sent == [(b"a", b"1", 1), (b"b", None, 0)]
