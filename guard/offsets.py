"""Bounded reads of a Kafka topic: each partition's range captured once, then read to its end.

A batch read must end even while producers keep writing, so the driver captures, per
partition, the end offset (exclusive) once, and every task reads from the beginning up to it.

The end offset is the high watermark carried by a fetch response, never ListOffsets' answer:
tansu's ListOffsets (`get_watermark_offsets(cached=False)`, `list_offsets`) answers the last
batch's base offset + 1 instead of the high watermark when producers batch (1 instead of 40),
while the watermark inside its fetch responses is right. So the capture assigns every
partition at OFFSET_END, waits for the first fetch answer of each (a record, or the end of the
partition), and reads librdkafka's cached watermarks, which that answer set. On brokers whose
ListOffsets is right (Kafka, noida) the fetch starts at the end and answers at once with
PARTITION_EOF; on tansu it starts inside the last batch and answers with its records. Either
way one small fetch per partition, whatever the partition's size. The fetch starts at an
explicit offset, one below ListOffsets' answer, never at the logical OFFSET_END or
OFFSET_BEGINNING: resolving a logical offset costs librdkafka a round of ~500 ms per
consumer on tansu, and a read starts at the log start the capture saw (an offset retention
has since removed resets to the earliest).

Reading a range stops at the first record at or past its end, or at PARTITION_EOF at or past
it: a committed transaction ends with a control record that no consumer ever receives, so
the last delivered record can sit below the end. The consumer reads `read_uncommitted` by
default, as Kafka's and Flink's consumers do; with `properties.isolation.level=read_committed`
an open transaction holds the end back and the read waits for it, up to the stall timeout.

The clients, their error callbacks, secret redaction and the topic look-up come from
`keyguard.guard.topic.KafkaTopicInspector`, so the guard and the reader report a broker the same
way.
"""

from __future__ import annotations

import ctypes
import functools
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.secrets import redact
from keyguard.guard.topic import FATAL_CODES, KafkaTopicInspector

#: Consumer settings the reader needs; properties.* may override the isolation level only.
_DEFAULTS = {"isolation.level": "read_uncommitted"}
_FORCED = {"enable.partition.eof": True, "enable.auto.commit": False,
           "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
           # A bounded read knows its end: a fetch at the end answers at once instead of
           # waiting librdkafka's default 500 ms for records that would be past it anyway.
           "fetch.wait.max.ms": 10}
#: Prefetch defaults a `properties.*` option may override. librdkafka's own (100k records and
#: 64 MiB queued per partition) hold more than a folding reader's state at a million records;
#: a smaller queue then needs a short backoff, or fetching pauses 1 s each time it fills.
_PREFETCH = {"queued.min.messages": 10_000, "queued.max.messages.kbytes": 4096,
             "fetch.queue.backoff.ms": 5}


@dataclass(frozen=True)
class OffsetRange:
    """The records of one partition a read covers: offsets in [start, end).

    `start` is the log-start offset when the capture saw it (a retention run may move it on
    before the read; the read then starts at the new beginning), `end` the high watermark.
    """

    topic: str
    partition: int
    start: int
    end: int

    @property
    def empty(self) -> bool:
        return self.end <= 0 or 0 <= self.end <= self.start


@dataclass(frozen=True)
class Record:
    """One consumed record: what decoding and folding need, and where it came from."""

    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    #: The record's headers, when the read asked for them (`headers=True`).
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass
class RecordColumns:
    """Consecutive records of one partition, column-wise (index i is one record)."""

    partition: int
    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    #: Each record's headers, when the read asked for them; None otherwise.
    headers: list[tuple[tuple[str, bytes | None], ...]] | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def records(self) -> list[Record]:
        p = self.partition
        if self.headers is not None:
            return [Record(p, o, t, k, v, h) for o, t, k, v, h in
                    zip(self.offsets, self.timestamps, self.keys, self.values, self.headers,
                        strict=True)]
        return [Record(p, o, t, k, v) for o, t, k, v in
                zip(self.offsets, self.timestamps, self.keys, self.values, strict=True)]


class KafkaRanges:
    """Captures the ranges of a topic and reads them; `properties` are librdkafka settings."""

    def __init__(self, bootstrap: str, properties: Mapping[str, Any] | None = None, *,
                 timeout_s: float = 30.0, stall_timeout_s: float = 60.0) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.stall_timeout_s = stall_timeout_s
        config = {**_DEFAULTS, **dict(properties or {})}
        self._kafka = KafkaTopicInspector(bootstrap, config, timeout_s=min(timeout_s, 10.0))

    # -- the driver's half -------------------------------------------------------------------

    def partitions(self, topic: str) -> int:
        """How many partitions `topic` has; an error naming the topic when it does not exist."""
        n = self._kafka.partitions(self._kafka.admin(), topic)
        if n is None:
            raise InvalidOptionError(
                f"topic {topic!r} does not exist at {redact(self.bootstrap, self._kafka.secrets)}",
                hint="check the 'topic' option and properties.bootstrap.servers")
        return n

    def capture(self, topic: str) -> list[OffsetRange]:
        """Every partition's [log start, high watermark), from one fetch answer per partition."""
        n = self.partitions(topic)
        consumer = self._consumer({"max.partition.fetch.bytes": 65536})
        found: dict[int, OffsetRange] = {}
        deadline = time.monotonic() + self.timeout_s
        try:
            consumer.assign([TopicPartition(topic, p, self._near_end(consumer, topic, p))
                             for p in range(n)])
            while len(found) < n:
                if time.monotonic() > deadline:
                    missing = sorted(set(range(n)) - set(found))
                    raise self._kafka.unavailable(
                        f"no fetch answer for partitions {missing} of topic {topic!r} within "
                        f"{self.timeout_s:g}s", None)
                for msg in consumer.consume(500, timeout=0.2):
                    p = msg.partition()
                    if p is None or p in found:
                        continue
                    err = msg.error()
                    if err is not None and err.code() != KafkaError._PARTITION_EOF:
                        self._check(err, f"cannot read topic {topic!r}")
                        continue
                    low, high = consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                               cached=True)
                    if high < 0:
                        continue  # not from a fetch answer: wait for the next one
                    found[p] = OffsetRange(topic, p, max(low, 0) if low >= 0 else -1, high)
            consumer.unassign()
        finally:
            consumer.close()
        return [found[p] for p in range(n)]

    def _near_end(self, consumer: Consumer, topic: str, partition: int) -> int:
        """Where the capture's fetch starts: one below ListOffsets' end (inside the last batch
        on tansu, the last record elsewhere), so that its answer carries the high watermark."""
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                     timeout=self.timeout_s, cached=False)
        except KafkaException:
            return OFFSET_END
        return max(high - 1, 0) if high >= 0 else OFFSET_END

    # -- a task's half -----------------------------------------------------------------------

    def read(self, r: OffsetRange, *, batch_size: int = 1000, headers: bool = False,
             ) -> Iterator[list[Record]]:
        """The records of `r` in offset order, in lists of at most `batch_size`."""
        for cols in self.read_columns(r, batch_size=batch_size, headers=headers):
            yield cols.records()

    def read_columns(self, r: OffsetRange, *, batch_size: int = 10_000, headers: bool = False,
                     ) -> Iterator[RecordColumns]:
        """The records of `r` in offset order, column-wise, at most `batch_size` at a time:
        no object per record, for readers that fold and decode whole columns. `headers`:
        each record's headers too."""
        if r.empty:
            return
        consumer = self._consumer({})
        eof = KafkaError._PARTITION_EOF
        try:
            consumer.assign([TopicPartition(r.topic, r.partition,
                                            r.start if r.start >= 0 else OFFSET_BEGINNING)])
            last_progress = time.monotonic()
            position = -1
            end = r.end
            while True:
                msgs = consumer.consume(batch_size, timeout=0.1)
                out = RecordColumns(r.partition, [], [], [], [], [] if headers else None)
                offsets, stamps, keys, values = out.offsets, out.timestamps, out.keys, out.values
                heads = out.headers
                done = False
                for msg in msgs:
                    if msg.partition() != r.partition:
                        continue
                    err = msg.error()
                    offset = msg.offset()
                    offset = -1 if offset is None else offset
                    if err is not None:
                        if err.code() == eof:
                            if offset >= end:
                                done = True
                                break
                            continue  # below the end: an open transaction under read_committed
                        self._check(err, f"cannot read partition {r.partition} of topic "
                                         f"{r.topic!r}")
                        continue
                    if offset >= end:
                        done = True
                        break
                    # A Message's truth value is its value's: a tombstone is falsy. Never test it.
                    offsets.append(offset)
                    stamps.append(msg.timestamp()[1])
                    keys.append(msg.key())
                    values.append(msg.value())
                    if heads is not None:
                        # a consumed record's headers are [(str, bytes | None)]; the stubs
                        # type the producer's forms too
                        heads.append(tuple(msg.headers() or ()))  # type: ignore[arg-type]
                    if offset + 1 >= end:
                        done = True
                        break
                if offsets:
                    position = offsets[-1]
                    last_progress = time.monotonic()
                    yield out
                if done:
                    return
                if time.monotonic() - last_progress > self.stall_timeout_s:
                    at = "the beginning" if position < 0 else f"offset {position}"
                    raise self._kafka.unavailable(
                        f"partition {r.partition} of topic {r.topic!r} made no progress for "
                        f"{self.stall_timeout_s:g}s at {at}, before its end offset {r.end} "
                        "(an open transaction under read_committed holds reads back)", None)
        finally:
            consumer.close()
            release_freed_heap()

    # -- clients -----------------------------------------------------------------------------

    def _consumer(self, extra: Mapping[str, Any]) -> Consumer:
        given = self._kafka.properties
        prefetch = {k: v for k, v in _PREFETCH.items() if k not in given}
        conf = self._kafka.client_config({**prefetch, **extra, **_FORCED})
        # librdkafka wants a group id; the reader never joins it (assign, no commit).
        conf.setdefault("group.id", f"keyguard-read-{uuid.uuid4().hex}")
        try:
            return Consumer(conf)
        except Exception as exc:
            raise InvalidOptionError(
                f"Kafka consumer properties rejected: {self._kafka.reason(exc)}",
                hint="check the properties.* options") from None

    def _check(self, err: KafkaError, what: str) -> None:
        """Raise on errors that waiting cannot fix; keep the others for a later message."""
        if err.fatal() or err.code() in FATAL_CODES:
            raise self._kafka.unavailable(what, err)
        self._kafka.errors.append(err)


def release_freed_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc's `malloc_trim`; elsewhere
    nothing). A closed consumer's fetch buffers are freed into malloc's arenas, which keep
    them: a reader that reads ranges one after another, growing a state as it goes, would
    otherwise carry every earlier consumer's high-water mark into the next."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
