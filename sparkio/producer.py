"""The Kafka-producing core of a write task, testable without Spark.

A task turns Arrow batches of table rows into Kafka records (`ChangeEncoder`, in
`keyguard.sparkio.change_encoder`: changelog kinds, key and value bytes, the murmur2
partition), optionally folds them in a `ChangeBuffer` (last
change per key, Flink's `sink.buffer-flush.*`), and hands them to an `UpsertProducer`, which
sends each record to an explicit partition, keeps librdkafka's queue bounded, checks every
delivery and raises `TaskDeliveryError` with delivered and undelivered counts when any record
is not acknowledged. Spark then retries the task whole: at-least-once, no acknowledged record
lost. With a transactional.id the task's records are one Kafka transaction. A reused Python
worker keeps its producer for the next task (`keyguard.sparkio.producer_pool`).

Memory stays bounded by the flush buffer and the producer queue: batches are processed as
they come and never collected (`checked_first`, which checks a whole partition before its first
record, holds at most SPOOL_MEMORY_BYTES and spills the rest to local disk). A dead broker fails
a task after `properties.message.timeout.ms` (30 s by default, not librdkafka's 5 minutes).
"""

from __future__ import annotations

import resource
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from operator import length_hint
from typing import TYPE_CHECKING, Any

from keyguard.formats.errors import DeliveryError, EncodeError, InvalidOptionError, NullKeyError
from keyguard.formats.secrets import redact, redacting_logger
from keyguard.sparkio.producer_pool import CallbackRouter, ProducerPool, pool_key

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from keyguard.sparkio.change_encoder import ChangeEncoder

#: One record's headers, in order (name, value or None); None: none.
RecordHeaders = Sequence[tuple[str, bytes | None]] | None

_LOG = redacting_logger("keyguard.sparkio")

#: Records handed to librdkafka between two poll(0) calls (which serve error callbacks).
POLL_EVERY = 5000
#: How long to let deliveries drain a full librdkafka queue before trying again.
ROOM_WAIT_S = 0.005
#: Runs an iterator to its end, keeping nothing (the produce loop's driver, in C).
_drain = deque[object](maxlen=0).extend

#: Producer settings the connector sets; properties.* may override the tuning ones.
DEFAULT_PRODUCER_CONFIG: dict[str, Any] = {
    "linger.ms": 20,
    "batch.num.messages": 10_000,
    # librdkafka's default queue is 1 GB; a Spark worker must stay small.
    "queue.buffering.max.messages": 100_000,
    "queue.buffering.max.kbytes": 64 * 1024,
    # Successful deliveries need no Python callback: failures are reported, the rest is
    # counted from what flush() leaves outstanding.
    "delivery.report.only.error": True,
}


class ChangelogKindError(EncodeError):
    """A changelog column value that is not +I, +U, -U or -D (or null): nothing was written
    for it, since a wrong kind would put or delete the wrong rows."""

    kind = "changelog-kind"


class TaskDeliveryError(DeliveryError):
    """A task could not deliver every record; Spark retries the task (at-least-once)."""

    def __init__(self, message: str, *, delivered: int, undelivered: int,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.delivered = delivered
        self.undelivered = undelivered


@dataclass
class TaskStats:
    """What one task wrote; summed on the driver into a WriteSummary."""

    task: int = 0
    #: Input rows seen, -U rows included.
    rows: int = 0
    upserts: int = 0
    tombstones: int = 0
    #: -U rows (UPDATE_BEFORE), never written.
    dropped: int = 0
    #: Changes replaced by a later change of the same key inside the flush buffer.
    folded: int = 0
    #: Records acknowledged by the broker (== upserts + tombstones on success).
    records: int = 0
    #: Key and value bytes of the acknowledged records.
    bytes: int = 0
    #: Kafka partitions written to.
    partitions: tuple[int, ...] = ()
    elapsed_s: float = 0.0
    #: Peak resident memory of the Python worker process during this task (its high-water
    #: mark is reset when the task's producer starts, where the platform allows).
    peak_rss_bytes: int = 0
    #: Where the task's time went: waiting for Spark's batches (shuffle read, sort, Arrow),
    #: encoding them, handing records to librdkafka, and the final flush and acknowledgements.
    input_s: float = 0.0
    encode_s: float = 0.0
    send_s: float = 0.0
    finish_s: float = 0.0
    #: Wall-clock start and end of the task (epoch seconds), to place it in the job.
    started_at: float = 0.0
    ended_at: float = 0.0
    #: The task used a producer an earlier task of its Python worker finished with
    #: (`ProducerPool`): no connection, no wait for a producer id.
    producer_reused: bool = False


def reset_peak_rss() -> None:
    """Start a new high-water mark of this process's memory (Linux: /proc/self/clear_refs),
    so a reused Python worker reports the peak of the task at hand, not of its lifetime."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass  # not Linux, or not allowed: peak_rss_bytes falls back to the lifetime peak


def peak_rss_bytes() -> int:
    """The process's peak resident memory since the last `reset_peak_rss` (or its start)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


# --------------------------------------------------------------------------------------------
# The errors of a write task's rows
# --------------------------------------------------------------------------------------------


def _shown(example: Mapping[str, Any]) -> dict[str, Any]:
    return {k: example.get(k) for k in list(example)[:8]}


def null_key_error(topic: str, pk: Sequence[str], count: int, example: Mapping[str, Any],
                   *, scope: str = "", outcome: str = "") -> NullKeyError:
    return NullKeyError(
        f"topic {topic}: {count} row{'s' if count != 1 else ''}{scope} with a null primary-key "
        f"column ({', '.join(pk)}), e.g. {_shown(example)}{outcome}",
        hint="every primary-key column needs a value: filter or fill the nulls before writing")


def changelog_kind_error(topic: str, column: str, count: int, example: Mapping[str, Any],
                         *, scope: str = "", outcome: str = "") -> ChangelogKindError:
    return ChangelogKindError(
        f"topic {topic}: {count} row{'s' if count != 1 else ''}{scope} whose changelog column "
        f"'{column}' is not +I, +U, -U or -D, e.g. {example.get(column)!r} in "
        f"{_shown(example)}{outcome}",
        hint="use Flink's RowKind short strings exactly (no spaces, upper case); null is not "
             "allowed")


# --------------------------------------------------------------------------------------------
# The flush buffer
# --------------------------------------------------------------------------------------------


class ChangeBuffer:
    """The last change of each key since the last flush (Flink's reducing upsert buffer).

    A re-put key moves to the end, so a drain sends keys in the order of their last change,
    with the headers of that change.
    """

    def __init__(self) -> None:
        self._changes: dict[bytes, tuple[bytes | None, int, RecordHeaders]] = {}
        self.folded = 0

    def __len__(self) -> int:
        return len(self._changes)

    def put(self, key: bytes, value: bytes | None, partition: int,
            headers: RecordHeaders = None) -> None:
        if key in self._changes:
            del self._changes[key]
            self.folded += 1
        self._changes[key] = (value, partition, headers)

    def drain(self) -> Iterator[tuple[bytes, bytes | None, int]]:
        for key, value, partition, _ in self.drain_with_headers():
            yield key, value, partition

    def drain_with_headers(self) -> Iterator[tuple[bytes, bytes | None, int, RecordHeaders]]:
        changes, self._changes = self._changes, {}
        for key, (value, partition, headers) in changes.items():
            yield key, value, partition, headers


# --------------------------------------------------------------------------------------------
# The producer
# --------------------------------------------------------------------------------------------


def _by_partition(parts: Sequence[int] | np.ndarray) -> list[tuple[int, np.ndarray | None]]:
    """(partition, positions in input order) per partition; None: all of them (the common
    case: the writer hands each task its records grouped by partition)."""
    import numpy as np

    arr = np.asarray(parts)
    if len(arr) == 0:
        return []
    first = int(arr[0])
    if (arr == first).all():
        return [(first, None)]
    order = np.argsort(arr, kind="stable")
    cuts = np.flatnonzero(np.diff(arr[order])) + 1
    return [(int(arr[idx[0]]), idx) for idx in np.split(order, cuts)]


def _distinct(parts: Sequence[int] | np.ndarray) -> set[int]:
    if hasattr(parts, "tolist") and hasattr(parts, "dtype"):
        import numpy as np

        return {int(p) for p in np.unique(parts)}
    return set(parts)


ProducerFactory = Callable[[dict[str, Any]], Any]


def _confluent_producer(config: dict[str, Any]) -> Any:
    from confluent_kafka import Producer

    return Producer(config)


@dataclass
class UpsertProducer:
    """Sends one task's records to explicit partitions and proves every one was acknowledged.

    `config` is librdkafka's (bootstrap.servers, security, tuning); the connector's
    guarantees (acks, idempotence, partitioner) are set by `producer_config`.
    """

    topic: str
    config: Mapping[str, Any]
    task: int = 0
    max_rows: int = 0
    interval_ms: int = 0
    transactional: bool = False
    #: How long init/commit of a transaction may take.
    transaction_timeout_s: float = 60.0
    secrets: Sequence[str] = ()
    #: Hand records over with produce_batch, one call per partition and chunk, instead of one
    #: produce() per record. Off: it needs a dict per record, and costs more CPU than the
    #: per-record loop, which runs in C (bench/bench_producer.py, 300k records: 0.38 s against
    #: 0.31 s; wall time equal within the noise of tansu on 2 shared cores).
    batched: bool = False
    factory: ProducerFactory = _confluent_producer
    clock: Callable[[], float] = time.monotonic
    stats: TaskStats = field(default_factory=TaskStats)
    #: Take the producer from, and give it back to, this pool (`ProducerPool`; never for a
    #: transactional producer). None: a producer of its own, dropped at the end.
    pool: ProducerPool | None = None
    #: Who sends, as a failure names it (None: `task N`, a Spark write task).
    sender: str | None = None
    #: What to do when records are not acknowledged (None: the Spark writer's advice).
    delivery_advice: str | None = None

    def __post_init__(self) -> None:
        reset_peak_rss()
        self.stats.task = self.task
        self._buffer = ChangeBuffer() if self.max_rows > 0 and self.interval_ms > 0 else None
        self._buffer_since: float | None = None
        self._errors: list[str] = []
        self._failed = 0
        #: Records librdkafka would not take at all (never produced, never delivered).
        self._refused = 0
        self._produced = 0
        #: librdkafka's queue limit (records), to hand produce_batch no more than fits.
        self._queue_max = int(self.config.get("queue.buffering.max.messages", 100_000))
        self._bytes = 0
        self._parts: set[int] = set()
        self._started = self.clock()
        config = dict(self.config)
        config.setdefault("logger", _LOG)
        self._router: CallbackRouter | None = None
        self._pool_key: Any = None
        self._given_back = False
        if self.pool is not None and not self.transactional:
            self._pool_key = (self.factory, pool_key(config))
            pooled = self.pool.take(self._pool_key)
            self.stats.producer_reused = pooled is not None
            if pooled is None:
                router = CallbackRouter()
                config.setdefault("error_cb", router.error)
                config["on_delivery"] = router.delivery
                pooled = self.factory(config), router
            self._producer, self._router = pooled
            self._router.owner = self
            return
        config.setdefault("error_cb", self._on_error)
        config["on_delivery"] = self._on_delivery
        self._producer = self.factory(config)
        if self.transactional:
            self._call(lambda: self._producer.init_transactions(self.transaction_timeout_s),
                       "initializing the transactional producer")
            self._call(self._producer.begin_transaction, "beginning a transaction")

    # -- callbacks (served inside poll/flush) ------------------------------------------------

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self._failed += 1
            if len(self._errors) < 3:
                self._errors.append(self._reason(err))

    def _on_error(self, err: Any) -> None:
        if len(self._errors) < 3 and (getattr(err, "fatal", lambda: False)() or not self._errors):
            self._errors.append(self._reason(err))

    def _reason(self, err: Any) -> str:
        text = f"{err.name()}: {err.str()}" if hasattr(err, "name") else str(err)
        return redact(text, list(self.secrets))

    # -- sending ---------------------------------------------------------------------------

    @contextmanager
    def _refusals(self) -> Iterator[None]:
        """librdkafka refusing a record (a fatal error: after a broker restart, an idempotent
        producer's session is gone) fails the task with the counts, as an unacknowledged
        record does, and the producer is never handed to another task."""
        try:
            yield
        except (BufferError, TaskDeliveryError):
            raise
        except Exception as exc:
            if type(exc).__name__ != "KafkaException":
                raise
            err = exc.args[0] if exc.args else exc
            self._errors.append(self._reason(err))
            if self._router is not None:
                self._router.fatal = True
            self._fail("librdkafka refused a record")

    def send(self, keys: Sequence[bytes], values: Sequence[bytes | None],
             partitions: Sequence[int] | np.ndarray, nbytes: int | None = None,
             headers: Sequence[RecordHeaders] | None = None) -> None:
        """Records in order (value None: a tombstone), buffered or straight to the producer.

        `nbytes`: their key and value bytes when the caller knows them (Arrow columns).
        `headers`: each record's headers (None: none), for rows that carry them.
        """
        with self._refusals():
            self._send(keys, values, partitions, nbytes, headers)

    def _send(self, keys: Sequence[bytes], values: Sequence[bytes | None],
              partitions: Sequence[int] | np.ndarray, nbytes: int | None = None,
              headers: Sequence[RecordHeaders] | None = None) -> None:
        if self._buffer is None:
            self._produce_all(keys, values, partitions, nbytes, _as_lists(headers))
            return
        parts = partitions.tolist() if hasattr(partitions, "tolist") else list(partitions)
        buf = self._buffer
        if self._buffer_since is None and len(keys):
            self._buffer_since = self.clock()
        for k, v, p, h in zip(keys, values, parts, headers or repeat(None), strict=False):
            buf.put(k, v, p, h)
            if len(buf) >= self.max_rows:
                self.flush_buffer()
                self._buffer_since = self.clock()
        if self._buffer_since is not None and \
                (self.clock() - self._buffer_since) * 1000 >= self.interval_ms:
            self.flush_buffer()

    def send_with_headers(self, keys: Sequence[bytes], values: Sequence[bytes | None],
                          partitions: Sequence[int], headers: Sequence[RecordHeaders]) -> None:
        """Records that carry their own headers each (a migration's marker, a header framing's
        schema ids), straight to the producer, one produce() per record, in order."""
        with self._refusals():
            self._produce_with_headers(keys, values, partitions, headers)

    def _produce_with_headers(self, keys: Sequence[bytes], values: Sequence[bytes | None],
                              partitions: Sequence[int],
                              headers: Sequence[RecordHeaders]) -> None:
        """Records in order, each with its headers."""
        self._produce_all(keys, values, partitions, headers=_as_lists(headers))

    def flush_buffer(self) -> None:
        """Hand every buffered change to the producer (no wait for acknowledgements)."""
        with self._refusals():
            self._flush_buffer()

    def _flush_buffer(self) -> None:
        if self._buffer is not None and len(self._buffer):
            keys, values, parts, heads = zip(*self._buffer.drain_with_headers(), strict=True)
            self._produce_all(keys, values, parts, headers=_as_lists(heads))
            self.stats.folded = self._buffer.folded
        self._buffer_since = None

    def _produce_all(self, keys: Sequence[bytes], values: Sequence[bytes | None],
                     parts: Sequence[int] | np.ndarray, nbytes: int | None = None,
                     headers: Sequence[list[tuple[str, bytes | None]] | None] | None = None,
                     ) -> None:
        """Hand records to librdkafka, each to its explicit partition (and with its headers,
        when given: lists, as confluent-kafka's produce takes them), and count them.

        `batched` and a producer with `produce_batch` (confluent-kafka >= 2.12): one call per
        partition and chunk; otherwise (and for records with headers) one produce() per
        record. poll(0) runs every POLL_EVERY records to serve error callbacks (successes
        have none: delivery.report.only.error).
        """
        n = len(keys)
        if not n:
            return
        batch = getattr(self._producer, "produce_batch", None) \
            if self.batched and headers is None else None
        if batch is None:
            self._produce_each(keys, values, parts.tolist() if hasattr(parts, "tolist")
                               else list(parts), headers)
        else:
            self._produce_by_partition(batch, keys, values, parts)
        s = self.stats
        tombstones = values.count(None) if hasattr(values, "count") else \
            sum(v is None for v in values)
        s.tombstones += tombstones
        s.upserts += n - tombstones
        if nbytes is None:
            nbytes = sum(map(len, keys)) + (
                sum(len(v) for v in values if v is not None) if tombstones
                else sum(map(len, values)))  # type: ignore[arg-type]
        self._bytes += nbytes
        self._parts.update(_distinct(parts))

    def _produce_each(self, keys: Sequence[bytes], values: Sequence[bytes | None],
                      parts: Sequence[int],
                      headers: Sequence[list[tuple[str, bytes | None]] | None] | None = None,
                      ) -> None:
        """One produce() per record (a producer without produce_batch), called from C: `map`
        over the chunk's records, drained by a zero-length deque, so no Python bytecode runs
        per record; headers go positionally (produce's eighth argument, after on_delivery,
        callback and timestamp, whose None, None, 0 are its defaults). A full queue raises
        BufferError out of `map` after it took the refused record from each iterator: that
        record is the one before what the key iterator still holds (`length_hint`); it waits
        for room, and the rest of the chunk goes on as before.
        """
        n = len(keys)
        produce, topic, done = self._producer.produce, self.topic, self._produced
        for start in range(0, n, POLL_EVERY):
            end = min(start + POLL_EVERY, n)
            ks, vs, ps = iter(keys[start:end]), iter(values[start:end]), iter(parts[start:end])
            hs = None if headers is None else iter(headers[start:end])
            while True:
                try:
                    if hs is None:
                        _drain(map(produce, repeat(topic), vs, ks, ps))
                    else:
                        _drain(map(produce, repeat(topic), vs, ks, ps, repeat(None),
                                   repeat(None), repeat(0), hs))
                    break
                except BufferError:
                    i = end - length_hint(ks) - 1  # the refused record
                    self._produced = done + i  # for the counts, should the wait fail
                    self._produce_when_room(keys[i], values[i], parts[i],
                                            None if headers is None else headers[i])
            self._produced = done + end
            self._producer.poll(0)
            self._check_failures()

    def _produce_by_partition(self, batch: Callable[..., int], keys: Sequence[bytes],
                              values: Sequence[bytes | None],
                              parts: Sequence[int] | np.ndarray) -> None:
        """Records grouped by partition, input order kept inside each (the order that
        matters: a key lives in one partition), then handed over in chunks."""
        for partition, idx in _by_partition(parts):
            if idx is None:
                ks, vs = keys, values
            else:
                take = idx.tolist()
                ks = [keys[i] for i in take]
                vs = [values[i] for i in take]
            for start in range(0, len(ks), POLL_EVERY):
                end = start + POLL_EVERY
                self._produce_chunk(batch, [{"key": k, "value": v} for k, v in
                                            zip(ks[start:end], vs[start:end], strict=True)],
                                    partition)
                self._producer.poll(0)
                self._check_failures()

    def _produce_chunk(self, batch: Callable[..., int], messages: list[dict[str, Any]],
                       partition: int) -> None:
        """One produce_batch call, repeated for what a full queue refused.

        librdkafka stops at the first record the full queue refuses and refuses every later
        one too (rd_kafka_produce_batch), so what is left is a suffix, sent again in order
        once deliveries made room. Any other refusal (a record too large, an unknown
        partition) fails the task, as produce() would by raising.
        """
        from confluent_kafka import KafkaError

        pending = messages
        while pending:
            # Hand over no more than the queue has room for: every refused record costs a
            # parse on the next try, so refusals should be the exception.
            room = self._queue_max - len(self._producer)
            if room <= 0:
                self._producer.poll(ROOM_WAIT_S)
                self._check_failures()
                continue
            part, later = (pending, []) if room >= len(pending) else \
                (pending[:room], pending[room:])
            queued = batch(self.topic, part, partition=partition)
            self._produced += queued
            if queued == len(part):
                pending = later
                continue
            refused = [m for m in part if "_error" in m]
            rest = part[queued:]
            if len(refused) != len(rest) or any(
                    "_error" not in m or m["_error"].code() != KafkaError._QUEUE_FULL
                    for m in rest):
                self._refused += len(refused)
                for m in refused:
                    if len(self._errors) < 3 and m["_error"].code() != KafkaError._QUEUE_FULL:
                        self._errors.append(self._reason(m["_error"]))
                self._fail("librdkafka refused records")
            for m in rest:
                del m["_error"]
            pending = rest + later
            self._producer.poll(ROOM_WAIT_S)
            self._check_failures()

    def _produce_when_room(self, key: bytes, value: bytes | None, partition: int,
                           headers: list[tuple[str, bytes | None]] | None = None) -> None:
        """librdkafka's queue is full: let deliveries drain it, then send the record."""
        extra = {} if headers is None else {"headers": headers}
        while True:
            self._producer.poll(ROOM_WAIT_S)
            self._check_failures()
            try:
                self._producer.produce(self.topic, value, key, partition, **extra)
                return
            except BufferError:
                continue

    def _check_failures(self) -> None:
        if self._failed:
            self._fail("records were not acknowledged")

    # -- ending ----------------------------------------------------------------------------

    def finish(self, *, timeout_s: float | None = None) -> TaskStats:
        """Flush everything, wait for every acknowledgement, commit; the task's stats."""
        self.flush_buffer()
        if not self._wait(timeout_s) or self._failed:
            self._fail("records were not acknowledged")
        if self.transactional:
            self._call(lambda: self._producer.commit_transaction(self.transaction_timeout_s),
                       "committing the transaction")
        s = self.stats
        s.records = self._produced
        s.bytes = self._bytes
        s.partitions = tuple(sorted(self._parts))
        s.elapsed_s = self.clock() - self._started
        s.peak_rss_bytes = peak_rss_bytes()
        if self.pool is not None and self._router is not None:
            # Every record acknowledged, none failed: the next task may use it.
            self.pool.give(self._pool_key, self._producer, self._router)
            self._given_back = True
        return s

    def abort(self) -> None:
        """Best effort after a failure: abort the open transaction, drop what is queued."""
        if self._given_back:
            return  # finished: the producer is the pool's now, with nothing of this task
        try:
            if self.transactional:
                self._producer.abort_transaction(10)
            else:
                self._producer.purge()
                self._producer.flush(0)
        except Exception:
            pass

    def _wait(self, timeout_s: float | None) -> bool:
        """Serve callbacks until librdkafka's out-queue is empty (True: every record was
        acknowledged or failed), a delivery failed, or `timeout_s` passed (False). An empty
        queue is checked once: an event queued after it (a log line, a broker error) does
        not make delivered records unacknowledged again."""
        deadline = None if timeout_s is None else self.clock() + timeout_s
        while self._producer.flush(1.0):
            if self._failed:
                # Let what is in flight settle briefly, so the counts are right.
                self._producer.flush(min(5.0, timeout_s or 5.0))
                return True
            if deadline is not None and self.clock() > deadline:
                return False
        return True

    def _call(self, call: Callable[[], Any], what: str) -> Any:
        try:
            return call()
        except Exception as exc:  # KafkaException, with a KafkaError inside
            err = exc.args[0] if exc.args else exc
            self._errors.append(self._reason(err))
            self._fail(f"{what} failed")

    def _fail(self, what: str) -> None:
        """Raise TaskDeliveryError with the counts: delivered + undelivered is every record
        the task was given. len(producer) is librdkafka's out-queue, which holds events
        (an error, a log line) besides the records in flight, so callbacks are served first
        and what is left is counted as records only up to the number not yet failed."""
        try:
            self._producer.poll(0)
        except Exception:
            pass
        failed = self._failed
        in_flight = max(0, self._produced - failed)
        outstanding = min(len(self._producer), in_flight)
        undelivered = failed + outstanding + self._refused + (
            len(self._buffer) if self._buffer else 0)
        delivered = in_flight - outstanding
        if self.transactional:
            delivered = 0  # an aborted transaction delivers nothing visible to read_committed
            undelivered = self._produced + (len(self._buffer) if self._buffer else 0)
        why = "; ".join(dict.fromkeys(self._errors)) or "no acknowledgement in time"
        raise TaskDeliveryError(
            f"{self.sender or f'task {self.task}'} writing topic {self.topic}: {what}: "
            f"{delivered} records delivered, {undelivered} undelivered ({failed} failed, "
            f"{outstanding} unacknowledged): {why}",
            delivered=delivered, undelivered=undelivered,
            hint=self.delivery_advice or self._delivery_hint())

    def _delivery_hint(self) -> str:
        """What to do: the brokers, the security settings, or a longer delivery timeout."""
        timeout = self.config.get("message.timeout.ms", self.config.get("delivery.timeout.ms"))
        try:
            longer = f"{max(2 * int(timeout), 60_000)}" if timeout is not None else "60000"
        except (TypeError, ValueError):
            longer = "60000"
        now = f" (now {timeout} ms)" if timeout is not None else ""
        return ("Spark retries the task; check that properties.bootstrap.servers is reachable "
                "from the executors and the security settings (properties.*); if the brokers "
                "are up but slow to acknowledge, raise the delivery timeout"
                f"{now}: properties.message.timeout.ms={longer}")


def _as_lists(headers: Sequence[RecordHeaders] | None,
              ) -> list[list[tuple[str, bytes | None]] | None] | None:
    """Each record's headers as the list confluent-kafka's produce takes (None: none); None
    when no record has any, so the records go the way of records without headers."""
    if headers is None:
        return None
    out = [h if type(h) is list else list(h) if h else None for h in headers]
    return out if any(out) else None


def check_properties(properties: Mapping[str, Any], guarantee: str, *, topic: str,
                     secrets: Sequence[str] = ()) -> None:
    """librdkafka's verdict on the producer settings, on the driver before anything runs: a
    producer handle without brokers is built and dropped (it connects to nothing)."""
    from confluent_kafka import KafkaException, Producer

    config = {k: v for k, v in producer_config(properties, guarantee).items()
              if k != "bootstrap.servers"}
    config["log_level"] = 0
    try:
        Producer(config)
    except (KafkaException, ValueError, TypeError) as exc:
        err = exc.args[0] if exc.args else exc
        reason = err.str() if hasattr(err, "str") else str(err)
        raise InvalidOptionError(
            f"upsert-kafka options of topic {topic}: librdkafka rejects the properties.* "
            f"settings: {redact(reason, list(secrets))}",
            hint="properties.* go to librdkafka, not to the Java client: instead of "
                 "sasl.jaas.config set properties.sasl.mechanism, properties.sasl.username and "
                 "properties.sasl.password; the settings are listed in librdkafka's "
                 "CONFIGURATION.md") from None


def producer_config(properties: Mapping[str, Any], guarantee: str,
                    transactional_id: str | None = None) -> dict[str, Any]:
    """librdkafka settings: the defaults, the user's properties.*, then the guarantees."""
    config: dict[str, Any] = {**DEFAULT_PRODUCER_CONFIG, **properties}
    config["partitioner"] = "murmur2_random"
    if guarantee == "none":
        config.setdefault("acks", "1")
        config.setdefault("enable.idempotence", False)
    else:
        config["acks"] = "all"
        config["enable.idempotence"] = True
    if transactional_id:
        config["transactional.id"] = transactional_id
    return config


def produce_batches(batches: Iterable[pa.RecordBatch], encoder: ChangeEncoder,
                    producer: UpsertProducer) -> TaskStats:
    """The body of a write task: encode each batch as it comes, send it, then finish.

    Each phase is timed into the task's stats (the benchmark's breakdown).
    """
    clock = time.perf_counter
    s = producer.stats
    s.started_at = time.time()
    try:
        it = iter(batches)
        while True:
            t0 = clock()
            batch = next(it, None)
            t1 = clock()
            s.input_s += t1 - t0
            if batch is None:
                break
            enc = encoder.encode(batch)
            t2 = clock()
            s.encode_s += t2 - t1
            s.rows += enc.rows
            s.dropped += enc.dropped
            producer.send(enc.keys, enc.values, enc.partitions, enc.nbytes, enc.headers)
            s.send_s += clock() - t2
        t3 = clock()
        stats = producer.finish()
        stats.finish_s = clock() - t3
        stats.ended_at = time.time()
        return stats
    except BaseException:
        producer.abort()
        raise
