"""The producing core without Spark: encoding Arrow batches, folding, ordering, delivery."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from broker import free_port, new_topic

from keyguard.formats.errors import EncodeError, NullKeyError
from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import resolve_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.sparkio.change_encoder import ChangeEncoder, arrow_partitions
from keyguard.sparkio.options import CONNECTOR_OPTIONS
from keyguard.sparkio.producer import (
    POLL_EVERY,
    ChangeBuffer,
    TaskDeliveryError,
    UpsertProducer,
    produce_batches,
    producer_config,
)


class FakeProducer:
    """Records what would be sent; every record is acknowledged at once."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.sent: list[tuple[bytes, bytes | None, int]] = []
        self.transactions: list[str] = []

    def produce(self, topic: str, value: bytes | None, key: bytes, partition: int) -> None:
        self.sent.append((key, value, partition))

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return 0

    def purge(self) -> None:
        pass

    def init_transactions(self, timeout: float) -> None:
        self.transactions.append("init")

    def begin_transaction(self) -> None:
        self.transactions.append("begin")

    def commit_transaction(self, timeout: float) -> None:
        self.transactions.append("commit")

    def abort_transaction(self, timeout: float) -> None:
        self.transactions.append("abort")


def fake(**kw: Any) -> tuple[UpsertProducer, FakeProducer]:
    made: list[FakeProducer] = []

    def factory(config: dict[str, Any]) -> FakeProducer:
        made.append(FakeProducer(config))
        return made[0]

    p = UpsertProducer(topic="t", config={"bootstrap.servers": "x"}, factory=factory, **kw)
    return p, made[0]


def plan(columns: str = "region STRING, id INT, name STRING", pk: str = "region,id",
         **options: str) -> Any:
    return resolve_plan(parse_columns(columns), {
        "topic": "t", "primary-key": pk, "key.format": "json", "value.format": "json",
        **options}, extra=CONNECTOR_OPTIONS)


def test_buffer_keeps_the_last_change_per_key_in_order_of_last_change() -> None:
    buf = ChangeBuffer()
    buf.put(b"a", b"1", 0)
    buf.put(b"b", b"1", 1)
    buf.put(b"a", None, 0)
    assert list(buf.drain()) == [(b"b", b"1", 1), (b"a", None, 0)]
    assert buf.folded == 1 and len(buf) == 0


def test_unbuffered_producer_sends_every_change_in_order() -> None:
    p, raw = fake()
    p.send([b"a", b"b", b"a"], [b"1", b"2", None], [0, 1, 0])
    stats = p.finish()
    assert raw.sent == [(b"a", b"1", 0), (b"b", b"2", 1), (b"a", None, 0)]
    assert (stats.records, stats.upserts, stats.tombstones, stats.folded) == (3, 2, 1, 0)
    assert stats.partitions == (0, 1)


def test_buffer_folds_changes_and_flushes_at_max_rows() -> None:
    p, raw = fake(max_rows=2, interval_ms=60_000)
    p.send([b"a", b"a", b"a"], [b"1", b"2", b"3"], [0, 0, 0])
    assert raw.sent == []  # one distinct key: below max-rows
    p.send([b"b"], [b"1"], [1])
    assert raw.sent == [(b"a", b"3", 0), (b"b", b"1", 1)]  # two keys: flushed
    p.send([b"a"], [None], [0])
    stats = p.finish()
    assert raw.sent[-1] == (b"a", None, 0)
    assert (stats.records, stats.folded, stats.tombstones) == (3, 2, 1)


def test_buffer_flushes_on_the_interval() -> None:
    now = [0.0]
    made: list[FakeProducer] = []
    p = UpsertProducer(topic="t", config={}, max_rows=1000, interval_ms=500,
                       factory=lambda c: made.append(FakeProducer(c)) or made[0],
                       clock=lambda: now[0])
    p.send([b"a"], [b"1"], [0])
    assert made[0].sent == []
    now[0] = 0.6
    p.send([b"b"], [b"1"], [0])
    assert made[0].sent == [(b"a", b"1", 0), (b"b", b"1", 0)]


def test_transactional_producer_begins_and_commits_one_transaction() -> None:
    p, raw = fake(transactional=True)
    p.send([b"a"], [b"1"], [0])
    p.finish()
    assert raw.transactions == ["init", "begin", "commit"]


def test_producer_config_owns_the_guarantees() -> None:
    conf = producer_config({"bootstrap.servers": "b", "linger.ms": "5", "acks": "1"},
                           "at-least-once", "pre-3")
    assert conf["acks"] == "all" and conf["enable.idempotence"] is True
    assert conf["partitioner"] == "murmur2_random" and conf["transactional.id"] == "pre-3"
    assert conf["linger.ms"] == "5"
    assert producer_config({}, "none")["enable.idempotence"] is False


def test_encoder_applies_changelog_kinds_and_murmur2_partitions() -> None:
    pl = plan()
    enc = ChangeEncoder(pl, 5, "op")
    batch = pa.record_batch({
        "region": ["eu", "eu", "us", "eu"], "id": pa.array([1, 1, 2, 1], pa.int32()),
        "name": ["a", "a", "b", None], "op": ["+I", "-U", "+U", "-D"]})
    out = enc.encode(batch)
    assert out.rows == 4 and out.dropped == 1
    assert [json.loads(k) for k in out.keys] == [
        {"region": "eu", "id": 1}, {"region": "us", "id": 2}, {"region": "eu", "id": 1}]
    assert out.values[0] == b'{"region":"eu","id":1,"name":"a"}' and out.values[2] is None
    assert out.partitions.tolist() == [partition_for(k, 5) for k in out.keys]


class FullQueueProducer(FakeProducer):
    """Raises BufferError (librdkafka's queue is full) on every third produce() call."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.calls = 0
        self.polls: list[float] = []

    def produce(self, topic: str, value: bytes | None, key: bytes, partition: int) -> None:
        self.calls += 1
        if self.calls % 3 == 0:
            raise BufferError("Local: Queue full")
        super().produce(topic, value, key, partition)

    def poll(self, timeout: float = 0) -> int:
        self.polls.append(timeout)
        return 0


def test_a_full_queue_delays_records_but_sends_each_once_in_order() -> None:
    made: list[FullQueueProducer] = []
    p = UpsertProducer(topic="t", config={},
                       factory=lambda c: made.append(FullQueueProducer(c)) or made[0])
    n = 2 * POLL_EVERY + 7
    keys = [b"k%d" % i for i in range(n)]
    values: list[bytes | None] = [b"v%d" % i if i % 5 else None for i in range(n)]
    p.send(keys, values, [i % 3 for i in range(n)])
    stats = p.finish()
    assert made[0].sent == list(zip(keys, values, [i % 3 for i in range(n)], strict=True))
    assert (stats.records, stats.tombstones, stats.upserts) == (n, n // 5 + 1, n - n // 5 - 1)
    assert stats.bytes == sum(map(len, keys)) + sum(len(v) for v in values if v is not None)
    # poll(0) once per POLL_EVERY records, not per record; waits only when the queue is full.
    assert made[0].polls.count(0) == 3 and len(made[0].polls) < n


class FullQueueHeadersProducer(FullQueueProducer):
    """FullQueueProducer that takes headers as confluent-kafka's produce does (positionally
    after on_delivery, callback and timestamp, or by name), and records them."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.headers: list[Any] = []

    def produce(self, topic: str, value: bytes | None, key: bytes, partition: int,  # type: ignore[override]
                on_delivery: Any = None, callback: Any = None, timestamp: int = 0,
                headers: Any = None) -> None:
        super().produce(topic, value, key, partition)
        self.headers.append(headers)


def test_a_full_queue_keeps_each_records_headers() -> None:
    made: list[FullQueueHeadersProducer] = []
    p = UpsertProducer(topic="t", config={},
                       factory=lambda c: made.append(FullQueueHeadersProducer(c)) or made[0])
    n = POLL_EVERY + 7
    upsert, tombstone = [("k", b"1"), ("v", b"2")], [("k", b"1")]
    values: list[bytes | None] = [b"v" if i % 4 else None for i in range(n)]
    headers = [tombstone if v is None else upsert for v in values]
    p.send([b"k%d" % i for i in range(n)], values, [0] * n, headers=headers)
    stats = p.finish()
    assert made[0].headers == headers and stats.records == n
    assert [k for k, *_ in made[0].sent] == [b"k%d" % i for i in range(n)]


def test_arrow_partitions_equal_murmur2_of_each_key() -> None:
    keys = [b"", b"a", b"ab", b"abc", b"abcd", b"\x00\x00\x00\x01" * 9, bytes(range(200))]
    arr = pa.array(keys * 3, pa.binary())
    for sliced in (arr, arr.slice(4, 10)):
        assert arrow_partitions(sliced, 7).tolist() == [partition_for(k, 7)
                                                        for k in sliced.to_pylist()]
    assert arrow_partitions(pa.array(keys, pa.large_binary()), 3).tolist() == [
        partition_for(k, 3) for k in keys]
    assert arrow_partitions(pa.array([], pa.binary()), 3).tolist() == []


def test_encoder_partitions_avro_keys_from_their_arrow_column() -> None:
    pl = plan(**{"key.format": "avro", "value.format": "avro"})
    batch = pa.record_batch({"region": ["eu", "us", "eu"], "id": pa.array([1, 2, 300], pa.int32()),
                             "name": ["a", None, "c"]})
    out = ChangeEncoder(pl, 5).encode(batch)
    assert out.keys == pl.key_codec.encode_batch(batch.select(["region", "id"]))
    assert out.partitions.tolist() == [partition_for(k, 5) for k in out.keys]


def test_encoder_rejects_null_keys_with_the_count() -> None:
    batch = pa.record_batch({"region": ["eu", None, None], "id": pa.array([1, 2, 3], pa.int32()),
                             "name": ["a", "b", "c"]})
    with pytest.raises(NullKeyError, match="2 rows with a null primary-key"):
        ChangeEncoder(plan(), 3).encode(batch)


def test_encoder_rejects_unknown_changelog_kinds() -> None:
    batch = pa.record_batch({"region": ["eu"], "id": pa.array([1], pa.int32()),
                             "name": ["a"], "op": ["UPSERT"]})
    with pytest.raises(EncodeError, match="'UPSERT'"):
        ChangeEncoder(plan(), 3, "op").encode(batch)


def test_unreachable_broker_fails_the_task_with_counts() -> None:
    config = producer_config({"bootstrap.servers": f"127.0.0.1:{free_port()}",
                              "message.timeout.ms": "1500", "log_level": "0"}, "at-least-once")
    p = UpsertProducer(topic="t", config=config)
    p.send([b"a", b"b", b"c"], [b"1", b"2", None], [0, 1, 2])
    with pytest.raises(TaskDeliveryError) as err:
        p.finish(timeout_s=20)
    assert (err.value.delivered, err.value.undelivered) == (0, 3)
    assert "0 records delivered, 3 undelivered" in str(err.value)


class TimedOutProducer(FakeProducer):
    """Every record fails delivery when flushed; its out-queue then still holds one event
    (librdkafka counts a pending error or log event in len(), as in CI once: -1 delivered)."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.events = 0

    def flush(self, timeout: float = 0) -> int:
        for _ in self.sent:
            self.config["on_delivery"](RuntimeError("Local: Message timed out"), None)
        self.sent.clear()
        self.events = 1
        return self.events

    def __len__(self) -> int:
        return len(self.sent) + self.events


@pytest.mark.parametrize("served", [False, True])
def test_an_event_in_the_out_queue_is_not_counted_as_a_record(served: bool) -> None:
    made: list[TimedOutProducer] = []

    def factory(config: dict[str, Any]) -> TimedOutProducer:
        made.append(TimedOutProducer(config))
        if served:  # poll serves the pending event, as librdkafka's would
            made[0].poll = lambda timeout=0: setattr(made[0], "events", 0) or 0  # type: ignore
        return made[0]

    p = UpsertProducer(topic="t", config={}, factory=factory)
    p.send([b"a", b"b", b"c"], [b"1", b"2", None], [0, 1, 2])
    with pytest.raises(TaskDeliveryError) as err:
        p.finish(timeout_s=5)
    assert (err.value.delivered, err.value.undelivered) == (0, 3)
    assert "0 records delivered, 3 undelivered (3 failed, 0 unacknowledged)" in str(err.value)


class LateEventProducer(FakeProducer):
    """Every record is acknowledged by the first flush; an event (a log line, a broker
    error) lands in the out-queue afterwards, as librdkafka's can at any time."""

    def flush(self, timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return 1


def test_an_event_after_every_acknowledgement_does_not_fail_the_task() -> None:
    p = UpsertProducer(topic="t", config={}, factory=LateEventProducer)
    p.send([b"a", b"b"], [b"1", None], [0, 1])
    assert p.finish(timeout_s=5).records == 2


class SilentProducer(FakeProducer):
    """Nothing is ever acknowledged: flush always leaves every record in flight."""

    def flush(self, timeout: float = 0) -> int:
        return len(self.sent)

    def __len__(self) -> int:
        return len(self.sent)


def test_records_unacknowledged_at_the_deadline_fail_the_task_with_counts() -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    p = UpsertProducer(topic="t", config={}, factory=SilentProducer, clock=clock)
    p.send([b"a", b"b", b"c"], [b"1", b"2", None], [0, 1, 2])
    with pytest.raises(TaskDeliveryError) as err:
        p.finish(timeout_s=3)
    assert (err.value.delivered, err.value.undelivered) == (0, 3)
    assert "(0 failed, 3 unacknowledged)" in str(err.value)


def test_secrets_never_reach_the_delivery_error() -> None:
    config = producer_config({"bootstrap.servers": f"127.0.0.1:{free_port()}",
                              "message.timeout.ms": "1000", "log_level": "0",
                              "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                              "sasl.username": "u", "sasl.password": "hunter2-secret"},
                             "at-least-once")
    p = UpsertProducer(topic="t", config=config, secrets=["hunter2-secret"])
    p.send([b"a"], [b"1"], [0])
    with pytest.raises(TaskDeliveryError) as err:
        p.finish(timeout_s=20)
    assert "hunter2-secret" not in str(err.value)


def test_real_broker_keeps_per_key_order_on_the_murmur2_partition(
        kafka_bootstrap: str, reader: Any) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    pl = plan("id INT, v INT", "id", **{"value.format": "json"})
    batches = [pa.record_batch({"id": pa.array([i % 7 for i in range(j, j + 50)], pa.int32()),
                                "v": pa.array(list(range(j, j + 50)), pa.int32())})
               for j in range(0, 500, 50)]
    config = producer_config({"bootstrap.servers": kafka_bootstrap}, "at-least-once")
    stats = produce_batches(batches, ChangeEncoder(pl, 3), UpsertProducer(topic, config))
    assert stats.records == 500
    records = reader.records(topic)
    assert len(records) == 500
    for part, _, key, _ in records:
        assert part == partition_for(key, 3)
    by_key: dict[bytes, list[int]] = {}
    for _, _, key, value in sorted(records, key=lambda r: (r[0], r[1])):
        by_key.setdefault(key, []).append(json.loads(value)["v"])
    for key, vs in by_key.items():
        assert vs == sorted(vs), key
        assert vs[-1] == max(v for v in range(500) if v % 7 == json.loads(key)["id"])


def test_a_dead_broker_fails_within_the_declared_delivery_timeout() -> None:
    from keyguard.sparkio.options import resolve_connector

    conn = resolve_connector({"topic": "t", "primary-key": "id", "key.format": "json",
                              "value.format": "json",
                              "properties.bootstrap.servers": f"127.0.0.1:{free_port()}"})
    defaults = producer_config(conn.producer_properties, "at-least-once")
    assert defaults["message.timeout.ms"] == 30_000  # librdkafka's own default is 300000
    assert defaults["socket.connection.setup.timeout.ms"] == 10_000
    # The test shortens the timeout the way a user would: properties.message.timeout.ms.
    short = resolve_connector({**conn.raw, "properties.message.timeout.ms": "800",
                               "properties.log_level": "0"})
    p = UpsertProducer(topic="t", config=producer_config(short.producer_properties,
                                                         "at-least-once"))
    p.send([b"a", b"b", b"c", b"d"], [b"1", None, b"3", b"4"], [0, 1, 2, 0])
    with pytest.raises(TaskDeliveryError) as err:
        p.finish(timeout_s=60)
    assert (err.value.delivered, err.value.undelivered) == (0, 4)
    assert err.value.kind == "delivery" and err.value.exit_code == 3
    assert "properties.message.timeout.ms=60000" in str(err.value)
    assert "(now 800 ms)" in str(err.value)


def test_the_whole_partition_is_checked_before_the_first_batch_is_handed_on() -> None:
    from keyguard.sparkio.change_encoder import checked_first
    from keyguard.sparkio.producer import ChangelogKindError

    pl = plan()
    good = [pa.record_batch({"region": ["eu"] * 50, "id": pa.array(range(50), pa.int32()),
                             "name": ["a"] * 50, "op": ["+I"] * 50}) for _ in range(6)]
    bad = pa.record_batch({"region": ["eu"], "id": pa.array([1], pa.int32()),
                           "name": ["a"], "op": ["-d"]})
    encoder = ChangeEncoder(pl, 3, "op")
    handed: list[int] = []

    it = checked_first(iter([*good, bad]), encoder.check, memory_bytes=good[0].nbytes * 2)
    with pytest.raises(ChangelogKindError, match="'-d'"):
        for b in it:
            handed.append(b.num_rows)
    assert handed == []  # nothing reached the producer
    # A clean partition comes back whole and in order, part of it from the spill file.
    back = list(checked_first(iter(good), encoder.check, memory_bytes=good[0].nbytes * 2))
    assert [b.equals(g) for b, g in zip(back, good, strict=True)] == [True] * 6


class RefusingProducer(FakeProducer):
    """Raises BufferError on the produce() calls numbered in `refuse` (1-based), once each."""

    refuse: frozenset[int] = frozenset()

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.calls = 0

    def produce(self, topic: str, value: bytes | None, key: bytes, partition: int) -> None:
        self.calls += 1
        if self.calls in self.refuse:
            raise BufferError("Local: Queue full")
        super().produce(topic, value, key, partition)


@pytest.mark.parametrize("buffered", [False, True])
def test_a_refusal_at_either_end_of_a_chunk_resends_exactly_that_record(buffered: bool) -> None:
    # Call k sends record k-1-(refusals so far): refused are the first record (twice), the last
    # of the first chunk (twice), the first of the third chunk and the very last record. Each
    # is sent once, in its place, and the counts are those of the records.
    n = 2 * POLL_EVERY + 3
    refuse = {1, 2, POLL_EVERY + 2, POLL_EVERY + 3, 2 * POLL_EVERY + 5, n + 5}
    made: list[RefusingProducer] = []

    def factory(config: dict[str, Any]) -> RefusingProducer:
        made.append(type("R", (RefusingProducer,), {"refuse": frozenset(refuse)})(config))
        return made[0]

    kw: dict[str, Any] = {"max_rows": 10 * n, "interval_ms": 10**9} if buffered else {}
    p = UpsertProducer(topic="t", config={}, factory=factory, **kw)
    keys = [b"k%d" % i for i in range(n)]
    values: list[bytes | None] = [b"v%d" % i if i % 4 else None for i in range(n)]
    parts = [i % 3 for i in range(n)]
    p.send(keys, values, parts)
    stats = p.finish()
    assert made[0].sent == list(zip(keys, values, parts, strict=True))
    assert made[0].calls == n + len(refuse)
    assert (stats.records, stats.tombstones) == (n, len(range(0, n, 4)))
    assert stats.bytes == sum(map(len, keys)) + sum(len(v) for v in values if v is not None)
