"""The guard's topic sample against a simulated consumer: which records it keeps (the newest of
each partition, fairly shared), and that it stops fetching what it does not need. Skewed,
empty and compacted partitions, and tansu's early ListOffsets answer. The real broker's side
is in test_topic.py."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException

from keyguard.guard.topic import KafkaTopicInspector, PartitionRead, split_evenly


def ckey(schema_id: int, n: int) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + n.to_bytes(4, "big")


class _Eof:
    def code(self) -> int:
        return KafkaError._PARTITION_EOF

    def fatal(self) -> bool:
        return False


@dataclass
class _Msg:
    part: int
    off: int
    k: bytes | None
    v: bytes | None
    err: object = None

    def partition(self) -> int:
        return self.part

    def offset(self) -> int:
        return self.off

    def key(self) -> bytes | None:
        return self.k

    def error(self) -> object:
        return self.err

    def __len__(self) -> int:
        return len(self.v or b"")


@dataclass
class FakeConsumer:
    """A log per partition ({offset: (key, value)}, gaps allowed); each consume() hands out up
    to `fetch` records per assigned, unpaused partition, like a prefetching librdkafka."""

    logs: dict[int, dict[int, tuple[bytes | None, bytes | None]]]
    #: What ListOffsets answers for the end; None: the truth. tansu: the last batch's base + 1.
    listed_end: dict[int, int] = field(default_factory=dict)
    fetch: int = 100
    #: ListOffsets times out (a leader moving, a slow broker).
    offsets_fail: bool = False
    delivered: int = 0
    pos: dict[int, int] = field(default_factory=dict)
    paused: set[int] = field(default_factory=set)
    fetched: set[int] = field(default_factory=set)
    eof_sent: set[int] = field(default_factory=set)

    def end(self, p: int) -> int:
        return max(self.logs[p], default=-1) + 1

    def list_topics(self, timeout: float = 0) -> None:
        return None

    def get_watermark_offsets(self, tp, timeout: float = 0, cached: bool = False):
        p = tp.partition
        if cached:
            return (0, self.end(p)) if p in self.fetched else (-1001, -1001)
        if self.offsets_fail:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        return min(self.logs[p], default=0), self.listed_end.get(p, self.end(p))

    def assign(self, tps) -> None:
        self.pos = {tp.partition: tp.offset for tp in tps}
        self.eof_sent -= set(self.pos)

    def resume(self, tps) -> None:
        self.paused -= {tp.partition for tp in tps}

    def pause(self, tps) -> None:
        self.paused |= {tp.partition for tp in tps}

    def seek(self, tp) -> None:
        self.pos[tp.partition] = tp.offset
        self.eof_sent.discard(tp.partition)

    def consume(self, n: int, timeout: float = 0) -> list[_Msg]:
        out: list[_Msg] = []
        for p, at in list(self.pos.items()):
            if p in self.paused:
                continue
            self.fetched.add(p)
            offsets = sorted(o for o in self.logs[p] if o >= at)[: self.fetch]
            for o in offsets:
                k, v = self.logs[p][o]
                out.append(_Msg(p, o, k, v))
            self.delivered += len(offsets)
            if offsets:
                self.pos[p] = offsets[-1] + 1
            elif p not in self.eof_sent:
                self.eof_sent.add(p)
                out.append(_Msg(p, at, None, None, _Eof()))
        return out

    def unassign(self) -> None:
        self.pos = {}

    def close(self) -> None:
        pass


def scan(consumer: FakeConsumer, limit: int, **kw):
    inspector = KafkaTopicInspector("fake:9092", **kw)
    inspector._consumer = lambda: consumer  # type: ignore[method-assign]
    return inspector._scan("t", len(consumer.logs), limit)


def dense(n: int, schema_id: int = 1, value: bytes = b"v") -> dict[int, tuple[bytes, bytes]]:
    return {i: (ckey(schema_id, i), value) for i in range(n)}


def test_split_evenly() -> None:
    assert split_evenly(10, 3) == [4, 3, 3]
    assert split_evenly(2, 4) == [1, 1, 0, 0]
    assert sum(split_evenly(10_000, 7)) == 10_000


def test_skewed_and_empty_partitions_share_the_budget_and_keep_the_newest() -> None:
    fake = FakeConsumer({0: dense(100_000, 1), 1: dense(10, 2), 2: {}})
    result = scan(fake, 100)
    t = result.tally
    assert (t.seen, t.ids) == (100, {1: 90, 2: 10})
    assert result.complete is False
    # the newest 90 of partition 0, all of partition 1
    kept = {k for k in t.samples}
    assert ckey(1, 99_999) in kept and ckey(1, 99_910) in kept and ckey(1, 99_909) not in kept
    # paused and read from the end: nowhere near the 100k records of partition 0
    assert fake.delivered <= 100 + 2 * fake.fetch


def test_tansu_early_end_is_corrected_by_the_first_fetch() -> None:
    # ListOffsets says the end is offset 1 (one batch); the fetch response knows better.
    fake = FakeConsumer({0: dense(50_000), 1: dense(50_000)}, listed_end={0: 1, 1: 1})
    result = scan(fake, 200)
    assert result.tally.seen == 200
    assert ckey(1, 49_999) in result.tally.samples
    assert fake.delivered <= 200 + 4 * fake.fetch


def test_unanswered_list_offsets_still_sample_the_tail() -> None:
    fake = FakeConsumer({0: dense(20_000), 1: dense(3)}, offsets_fail=True)
    result = scan(fake, 100)
    assert result.tally.seen == 100
    assert ckey(1, 19_999) in result.tally.samples and ckey(1, 19_902) not in result.tally.samples
    assert fake.delivered <= 100 + 4 * fake.fetch


def test_compacted_gaps_are_read_further_back_until_the_budget_is_met() -> None:
    # Only even offsets survive compaction: a window of 300 offsets holds 150 records.
    log = {o: (ckey(3, o), b"v") for o in range(0, 2000, 2)}
    result = scan(FakeConsumer({0: log}), 300)
    t = result.tally
    assert (t.seen, t.ids) == (300, {3: 300})
    assert t.examples[3] == (0, 1400)  # the oldest kept: offsets 1400..1998
    assert result.complete is False


def test_a_topic_within_the_limit_is_read_whole_and_complete() -> None:
    logs = {0: dense(30, 1), 1: {o: (ckey(2, o), None) for o in range(5, 25)}, 2: {}}
    logs[0][30] = (b"plain", b"v")
    logs[0][31] = (None, b"v")
    result = scan(FakeConsumer(logs, fetch=7), 10_000)
    t = result.tally
    assert (t.seen, t.ids, t.other) == (52, {1: 30, 2: 20}, 2)
    assert result.complete is True and result.notes == ()
    assert t.examples == {1: (0, 0), 2: (1, 5)}


def test_samples_come_from_every_partition() -> None:
    fake = FakeConsumer({p: {i: (ckey(p, i), b"v") for i in range(1000)} for p in range(4)})
    result = scan(fake, 2000)
    assert set(result.tally.samples.values()) == {0, 1, 2, 3}


def test_bytes_are_bounded_as_well_as_records() -> None:
    fake = FakeConsumer({0: dense(5000, value=b"x" * 1000)}, fetch=50)
    result = scan(fake, 5000, scan_bytes=100_000)
    assert result.complete is False
    assert result.tally.seen < 5000
    assert any("MiB of records" in n for n in result.notes)


def test_partition_read_keeps_a_suffix_of_the_log() -> None:
    r = PartitionRead(0, low=0, high=10)
    r.begin(3)
    assert (r.start, r.stop) == (7, None)
    for o in range(7, 10):
        r.take(o, bytes([o]))
    r.at_end()
    assert (r.frontier, r.kept, r.older, r.complete) == (7, 3, True, False)
    r.begin(10)
    assert (r.start, r.stop) == (0, 7)
    for o in range(0, 7):
        r.take(o, bytes([o]))
    assert not r.open
    assert (r.frontier, r.complete) == (0, True)
    assert [o for o, *_ in r.records()] == list(range(10))
