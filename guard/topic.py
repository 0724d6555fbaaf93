"""The broker edge of the guard: what a topic looks like today (partitions, cleanup.policy, and
which schema ids its keys already carry).

The analysis never talks to Kafka; it takes a `TopicFacts`. `KafkaTopicInspector` gathers one
with an AdminClient and a group-less Consumer (assign, never subscribe: no rebalance, no commit).

The key scan samples the newest records of each partition (where a compacted topic keeps its
live keys), a fair share each, pausing a partition once it has its share (`PartitionRead`
holds the pure bookkeeping). It trusts only what the broker says inside fetch responses for
the end: a partition is read until librdkafka reports PARTITION_EOF, and ListOffsets
(`get_watermark_offsets(cached=False)`) only places the first read, because tansu answers the
last batch's base offset + 1 instead of the high watermark; the first fetch's high watermark
corrects it. A compacted or transactional partition has offset gaps and control records, so
reads further back widen their window by the gaps seen.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, cast

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from keyguard.formats.errors import BrokerUnavailableError, InvalidOptionError
from keyguard.formats.framing import CONFLUENT, Frame, Headers
from keyguard.formats.secrets import is_secret_key, redact, redacting_logger, register_secrets

#: Distinct keys kept from a scan for re-encoding under the candidate.
SAMPLE_KEYS = 200
#: Key and value bytes a scan reads at most (the record budget is the scan limit).
SCAN_BYTES = 64 * 2**20

# Errors after which waiting longer cannot help: the credentials or the ACLs are wrong.
FATAL_CODES = frozenset({
    KafkaError._AUTHENTICATION,
    KafkaError._SSL,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
})
# librdkafka logs every failed reconnect to stderr; route it to Python logging instead.
_LOG = redacting_logger("keyguard.kafka")
_LOG.addHandler(logging.NullHandler())
_CONFIG_HINT = ("check the Kafka properties (--kafka-config, the config file's [kafka], "
                "KEYGUARD_KAFKA_*, or properties.* in Spark) against librdkafka's "
                "CONFIGURATION.md")
_HINT = ("check bootstrap.servers, that the broker is up and reachable from here, and the "
         "security settings (security.protocol, sasl.*, ssl.*)")


@dataclass(frozen=True)
class TopicFacts:
    """What the guard needs to know about a live topic."""

    topic: str
    partitions: int
    #: `compact`, `delete`, `compact,delete`; None when the broker would not say.
    cleanup_policy: str | None
    #: Confluent schema id -> number of scanned keys framed with it.
    key_schema_ids: dict[int, int] = field(default_factory=dict)
    #: Keys read, tombstones and non-Confluent keys included.
    keys_scanned: int = 0
    #: True when every partition was read to its end (no scan limit, no timeout hit).
    scan_complete: bool = False
    #: Keys that are null, shorter than 5 bytes, or not starting with magic byte 0.
    non_confluent_keys: int = 0
    #: Why something is unknown (no credentials), for the notes of a Report.
    notes: tuple[str, ...] = ()
    #: Distinct keys seen, with the partition each was read from (at most SAMPLE_KEYS): the
    #: guard re-encodes real keys under the candidate, and checks how they were placed.
    sample_keys: tuple[tuple[bytes, int], ...] = ()
    #: Schema id -> (partition, offset) of the first scanned key framed with it: where to look.
    key_id_examples: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: A sampled key -> the headers of its first record, kept when the keys' frame puts the
    #: schema id in a header (the key's bytes are then the bare body): where its id is read.
    sample_headers: Mapping[bytes, Headers] = field(default_factory=dict)


class TopicInspector(Protocol):
    """Where topic facts come from: a broker, or a fixed table in tests and dry runs."""

    def facts(self, topic: str, *, scan_limit: int = 10_000,
              scan_schema_ids: bool = True, key_frame: Frame = CONFLUENT) -> TopicFacts | None:
        """The facts of `topic`, or None when it does not exist; the scanned keys' schema ids
        as `key_frame` (the frame of the format the keys were written with) reads them."""
        ...


@dataclass(frozen=True)
class StaticTopicInspector:
    """Facts known in advance (tests, `--topic-facts` files): no broker involved."""

    known: Mapping[str, TopicFacts]

    def facts(self, topic: str, *, scan_limit: int = 10_000,
              scan_schema_ids: bool = True, key_frame: Frame = CONFLUENT) -> TopicFacts | None:
        return self.known.get(topic)


def confluent_schema_id(key: bytes | None) -> int | None:
    """The schema id framed into a Confluent wire-format key, or None for any other key."""
    return CONFLUENT.registry_id(key)


@dataclass
class KeyTally:
    """Running counts of a key scan, and a bounded sample of distinct keys: its pure half."""

    ids: dict[int, int] = field(default_factory=dict)
    other: int = 0
    seen: int = 0
    samples: dict[bytes, int] = field(default_factory=dict)
    sample_limit: int = SAMPLE_KEYS
    #: Schema id -> (partition, offset) of its first key.
    examples: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: The frame the keys were written in: where their schema ids are read.
    frame: Frame = CONFLUENT
    #: Each sampled key's headers, when the frame reads the id from a header.
    headers: dict[bytes, Headers] = field(default_factory=dict)

    def add(self, key: bytes | None, partition: int = -1, offset: int = -1,
            headers: Headers = None) -> None:
        self.seen += 1
        if key is not None and len(self.samples) < self.sample_limit \
                and bytes(key) not in self.samples:
            self.samples[bytes(key)] = partition
            if headers:
                self.headers[bytes(key)] = tuple(headers)
        sid = self.frame.registry_id(key, headers)
        if sid is None:
            self.other += 1
        else:
            self.ids[sid] = self.ids.get(sid, 0) + 1
            self.examples.setdefault(sid, (partition, offset))

    @staticmethod
    def of(keys: Iterable[bytes | None]) -> KeyTally:
        tally = KeyTally()
        for key in keys:
            tally.add(key)
        return tally


class KafkaTopicInspector:
    """Topic facts read from a Kafka-protocol broker.

    `config` holds librdkafka properties (security.protocol, sasl.*, ssl.*, ...); they are
    passed to both clients and never appear in an error message.
    """

    def __init__(self, bootstrap: str, config: Mapping[str, Any] | None = None, *,
                 timeout_s: float = 10.0, scan_timeout_s: float = 60.0,
                 scan_bytes: int = SCAN_BYTES) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.scan_timeout_s = scan_timeout_s
        self.scan_bytes = scan_bytes
        self._config = dict(config or {})
        self._config.pop("bootstrap.servers", None)
        self.secrets = [str(v) for k, v in self._config.items() if is_secret_key(k) and v]
        register_secrets(self.secrets)
        self.errors: list[KafkaError] = []
        self._topics: list[str] = []
        #: Records and bytes the last scan fetched (kept or not): what the sample cost.
        self.last_scan_read: tuple[int, int] = (0, 0)

    @property
    def properties(self) -> Mapping[str, Any]:
        """The client properties the user gave (read-only view)."""
        return MappingProxyType(self._config)

    def topic_names(self) -> list[str]:
        """The topics the last metadata request listed ("did you mean" for a typo)."""
        return list(self._topics)

    # -- the interface ---------------------------------------------------------------------

    def facts(self, topic: str, *, scan_limit: int = 10_000,
              scan_schema_ids: bool = True, key_frame: Frame = CONFLUENT) -> TopicFacts | None:
        self.errors.clear()
        admin = self._client(AdminClient, self.client_config({}))
        if not scan_schema_ids or scan_limit <= 0:
            partitions = self.partitions(admin, topic)
            if partitions is None:
                return None
            policy, notes = self._cleanup_policy(self._ask_config(admin, topic), topic)
            return TopicFacts(topic, partitions, policy, notes=notes)
        # A new client's first request costs a connection (~50 ms on tansu and noida): the
        # topic's config is asked for first, and answered while the scan's consumer connects
        # and reads the metadata (the partitions), which the scan then needs no more.
        config = self._ask_config(admin, topic)
        scanner = self._consumer()
        consumer: Consumer | None = scanner  # None once the scan has it (it closes it)
        try:
            partitions = self.partitions(scanner, topic)
            if partitions is None:
                return None
            policy, notes = self._cleanup_policy(config, topic)
            scan = self._scan(topic, partitions, scan_limit, scanner, key_frame=key_frame)
            consumer = None  # closed by the scan
        finally:
            if consumer is not None:
                consumer.close()
        t = scan.tally
        return TopicFacts(topic, partitions, policy, dict(t.ids), t.seen, scan.complete,
                          t.other, notes + scan.notes, tuple(t.samples.items()),
                          dict(t.examples), dict(t.headers))

    # -- look-ups --------------------------------------------------------------------------

    def partitions(self, client: AdminClient | Consumer, topic: str) -> int | None:
        # All topics, not list_topics(topic): asking for one topic by name makes tansu and
        # noida (and brokers with auto.create.topics.enable) create it.
        try:
            md = client.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            for _ in range(10_000):  # serve the queued error callbacks (and log lines)
                if not client.poll(0):
                    break
            raise self.unavailable(f"cannot read the metadata of topic {topic!r}", exc) from None
        self._topics = sorted(t for t in md.topics if not t.startswith("__"))
        tm = md.topics.get(topic)
        if tm is None:
            return None
        if tm.error is not None:
            if tm.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            raise self.unavailable(f"the broker refused the metadata of topic {topic!r}",
                                    tm.error)
        return len(tm.partitions)

    def _ask_config(self, admin: AdminClient, topic: str) -> Any:
        """The topic's DescribeConfigs, sent: its future, or the KafkaException that refused
        it (`_cleanup_policy` reads either). Asking for a topic that does not exist creates
        nothing (tansu answers {}, noida and Kafka UNKNOWN_TOPIC_OR_PART)."""
        resource = ConfigResource(ResourceType.TOPIC, topic)
        try:
            return admin.describe_configs([resource], request_timeout=self.timeout_s)[resource]
        except KafkaException as exc:
            return exc

    def _cleanup_policy(self, config: Any, topic: str) -> tuple[str | None, tuple[str, ...]]:
        try:
            if isinstance(config, KafkaException):
                raise config
            entries = config.result(timeout=self.timeout_s + 1)
        except (KafkaException, FutureTimeout) as exc:
            why = self.reason(exc)
            return None, (f"topic {topic!r}: cleanup.policy unknown, DescribeConfigs failed: "
                          f"{why}",)
        entry = entries.get("cleanup.policy")
        if entry is None or entry.value is None:
            # tansu answers only the configs set when the topic was created.
            return None, (f"topic {topic!r}: the broker did not report cleanup.policy "
                          "(the broker default applies, usually delete)",)
        return str(entry.value), ()

    def _scan(self, topic: str, partitions: int, scan_limit: int,
              consumer: Consumer | None = None, *, key_frame: Frame = CONFLUENT) -> _Scan:
        """The newest keys of every partition, at most `scan_limit` in all, spread fairly.

        A compacted topic keeps its live keys at the end, so each partition is read from
        (end - share) to its end; a partition with fewer records than its share leaves the
        rest to the others, which then read further back, round after round, until the budget
        is spent or every partition was read from its start. A partition that has what it
        needs is paused, so librdkafka fetches nothing more for it, and the consumer
        prefetches little; `scan_bytes` bounds the keys and values read in all.

        Only fetch responses are trusted for the end: tansu's ListOffsets may answer an end
        too early (the last batch's base offset + 1), so a partition is read to
        PARTITION_EOF, and a start estimated from a stale end is corrected by the high
        watermark of the first fetch response. `consumer`: one made beforehand with
        `_consumer` (already connecting), closed here like one made here. `key_frame` reads
        the keys' schema ids.
        """
        leaders_known = consumer is not None  # it read the metadata (`partitions`)
        consumer = consumer or self._consumer()
        progress = _Progress()
        try:
            reads = self._read_tails(consumer, topic, partitions, scan_limit, progress,
                                     leaders_known=leaders_known,
                                     headers=key_frame.id_in_header)
            consumer.unassign()
        finally:
            consumer.close()
        self.last_scan_read = (progress.records, progress.bytes)
        if progress.timed_out and not progress.progressed:
            raise self.unavailable(
                f"no records and no end of partition from topic {topic!r} within "
                f"{self.scan_timeout_s:g}s", None)
        tally = KeyTally(frame=key_frame)
        for partition, offset, key, headers in interleaved(reads.values()):
            tally.add(key, partition, offset, headers)
        unfinished = sorted(p for p, r in reads.items() if not r.complete)
        return _Scan(tally, not unfinished,
                     self._scan_notes(topic, unfinished, progress, scan_limit))

    def _read_tails(self, consumer: Consumer, topic: str, partitions: int, scan_limit: int,
                    progress: _Progress, *, leaders_known: bool,
                    headers: bool = False) -> dict[int, PartitionRead]:
        """Every partition read from its end back, in rounds, until `scan_limit` keys are
        kept, every partition was read from its start, or the scan stopped (`progress`);
        each record's headers kept too when the keys' schema ids are in them (`headers`)."""
        deadline = time.monotonic() + self.scan_timeout_s
        # Learn the leaders first: an offset query for a partition without a known leader
        # waits for a retry timer (~0.5 s per round); all topics, never one by name.
        try:
            if not leaders_known:
                consumer.list_topics(timeout=self.timeout_s)
        except KafkaException:
            pass  # the offsets query below reports what is wrong
        reads: dict[int, PartitionRead] = {}
        for p in range(partitions):
            low, high = self._watermarks(consumer, topic, p)
            reads[p] = PartitionRead(p, low, high)
        budget = scan_limit
        while budget > 0 and not progress.stopped:
            wanting = [r for r in reads.values() if r.unread or r.older]
            if not wanting:
                break
            for r, share in zip(wanting, split_evenly(budget, len(wanting)), strict=True):
                r.begin(share)
            self._read_round(consumer, topic, [r for r in wanting if r.open], progress,
                             deadline, headers)
            budget = scan_limit - sum(r.kept for r in reads.values())
        return reads

    def _scan_notes(self, topic: str, unfinished: list[int], progress: _Progress,
                    scan_limit: int) -> tuple[str, ...]:
        """Why the scan stopped before every partition was read from its start."""
        if progress.timed_out:
            return (f"topic {topic!r}: key scan stopped after {self.scan_timeout_s:g}s with "
                    f"partitions {unfinished} unfinished",)
        if progress.bytes_out:
            return (f"topic {topic!r}: key scan stopped after reading "
                    f"{self.scan_bytes / 2**20:g} MiB of records (keys and values), with "
                    f"partitions {unfinished} unfinished",)
        if unfinished:
            return (f"topic {topic!r}: key scan stopped at the limit of {scan_limit} keys",)
        return ()

    def _watermarks(self, consumer: Consumer, topic: str, partition: int) -> tuple[int, int]:
        """(log start, end) as ListOffsets answers them; the end may be early (tansu).

        Unanswered: (0, 0), so the read starts at the beginning and the first fetch response
        moves it to the tail; if nothing answers at all, the read's deadline reports it.
        """
        try:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=self.timeout_s, cached=False)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and (err.fatal() or err.code() in FATAL_CODES):
                raise self.unavailable(f"cannot read the offsets of topic {topic!r}",
                                       exc) from None
            if isinstance(err, KafkaError):
                self.errors.append(err)
            return 0, 0
        return max(0, low), max(0, low, high)

    def _read_round(self, consumer: Consumer, topic: str, reads: list[PartitionRead],
                    progress: _Progress, deadline: float, headers: bool = False) -> None:
        """Read each partition's window: paused once it has it, or at its end."""
        if not reads:
            return
        by_part = {r.partition: r for r in reads}
        assignment = [TopicPartition(topic, r.partition, r.start) for r in reads]
        consumer.assign(assignment)
        consumer.resume(assignment)  # paused when an earlier read ended
        waiting = set(by_part)
        while waiting:
            if time.monotonic() > deadline:
                progress.timed_out = True
                return
            for msg in consumer.consume(500, timeout=0.02):
                p = msg.partition()
                if p not in waiting:
                    continue
                r = by_part[p]
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        progress.progressed = True
                        r.at_end()
                    elif err.fatal() or err.code() in FATAL_CODES:
                        raise self.unavailable(f"cannot read topic {topic!r}", err)
                    else:
                        self.errors.append(err)
                else:
                    key = msg.key()
                    progress.bytes += len(key or b"") + len(msg)
                    progress.records += 1
                    offset = msg.offset() or 0  # never None on a record
                    if offset < r.position:
                        continue  # fetched before a seek
                    progress.progressed = True
                    if r.take(offset, key, _headers(msg, headers)) and r.tail \
                            and not r.corrected:
                        self._correct_start(consumer, topic, r)
                if not r.open:
                    waiting.discard(p)
                    consumer.pause([TopicPartition(topic, p)])
                if progress.bytes >= self.scan_bytes:
                    progress.bytes_out = True
                    return

    @staticmethod
    def _correct_start(consumer: Consumer, topic: str, read: PartitionRead) -> None:
        """After the first fetch, its high watermark is the real end: skip ahead to
        (end - share) when the ListOffsets answer put the start too early."""
        read.corrected = True
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, read.partition),
                                                     cached=True)
        except KafkaException:
            return
        target = read.skip_to(high)
        if target is not None:
            try:
                consumer.seek(TopicPartition(topic, read.partition, target))
            except KafkaException:
                pass  # records before the target are skipped as they come instead

    # -- clients and errors ----------------------------------------------------------------

    def client_config(self, extra: Mapping[str, Any]) -> dict[str, Any]:
        timeout_ms = max(1000, int(self.timeout_s * 1000))
        conf: dict[str, Any] = {
            "socket.connection.setup.timeout.ms": timeout_ms,
            "socket.timeout.ms": timeout_ms,
            "logger": _LOG,
            **self._config,
            **extra,
            "bootstrap.servers": self.bootstrap,
            "error_cb": self.errors.append,
        }
        return conf

    def admin(self) -> Any:
        """An AdminClient with these settings; a refused property is exit 2 (`_client`)."""
        return self._client(AdminClient, self.client_config({}))

    def _client(self, factory: Any, conf: dict[str, Any]) -> Any:
        """An AdminClient or Consumer; librdkafka's refusal of a property is an invalid option
        (exit 2) naming the property, never its value."""
        try:
            return factory(conf)
        except KafkaException as exc:
            raise self.invalid_config(exc) from None
        except (TypeError, ValueError) as exc:
            raise InvalidOptionError(f"Kafka client properties rejected: {self.reason(exc)}",
                                     hint=_CONFIG_HINT) from None

    def invalid_config(self, exc: KafkaException) -> InvalidOptionError:
        text = self.reason(exc)
        # librdkafka quotes the value it refuses: drop it, whatever it is.
        text = re.sub(r'Invalid value "[^"]*"', "Invalid value", text)
        named = re.search(r'property:? "([^"]+)"', text)
        prop = named.group(1) if named else None
        if prop is None and "JAAS" in text and "sasl.jaas.config" in self._config:
            prop = "sasl.jaas.config"
        where = f"Kafka client property '{prop}'" if prop else "Kafka client properties"
        hint = _CONFIG_HINT
        if prop == "sasl.jaas.config":
            hint = ("sasl.jaas.config is the Java client's; librdkafka takes sasl.mechanism, "
                    "sasl.username and sasl.password (KEYGUARD_KAFKA_SASL_PASSWORD)")
        return InvalidOptionError(f"{where} rejected by librdkafka: {text}", hint=hint)

    def _consumer(self) -> Consumer:
        return self._client(Consumer, self.client_config({
            "group.id": self._config.get("group.id", f"keyguard-inspect-{uuid.uuid4().hex}"),
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            # A scan reads what is there: an empty or caught-up fetch should answer at
            # once, not after the default 500 ms wait for new data.
            "fetch.wait.max.ms": self._config.get("fetch.wait.max.ms", 10),
            # Prefetch little: a scan wants thousands of records, not librdkafka's default
            # of 100k records (and 64 MB) per partition queued ahead.
            "queued.min.messages": self._config.get("queued.min.messages", 2000),
            "queued.max.messages.kbytes": self._config.get("queued.max.messages.kbytes",
                                                           4096),
            # ...and, once over those thresholds, fetch again soon (the default waits 1 s).
            "fetch.queue.backoff.ms": self._config.get("fetch.queue.backoff.ms", 5),
        }))

    def reason(self, exc: BaseException | KafkaError | None) -> str:
        if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
            exc = exc.args[0]
        if isinstance(exc, KafkaError):
            text = f"{exc.name()}: {exc.str()}"
        elif isinstance(exc, FutureTimeout):
            text = f"no answer within {self.timeout_s:g}s"
        else:
            text = str(exc) if exc is not None else ""
        return redact(text, self.secrets)

    def unavailable(self, what: str, cause: BaseException | KafkaError | None,
                     ) -> BrokerUnavailableError:
        reasons = [self.reason(cause)] if cause is not None else []
        # The error callback often knows more (refused connection, failed SASL handshake).
        for err in self.errors[-3:]:
            r = self.reason(err)
            if r not in reasons:
                reasons.append(r)
        detail = "; ".join(r for r in reasons if r)
        where = redact(self.bootstrap, self.secrets)
        msg = f"{what} at {where}" + (f": {detail}" if detail else "")
        return BrokerUnavailableError(msg, hint=_HINT)


def split_evenly(budget: int, parts: int) -> list[int]:
    """`budget` in `parts` shares that differ by at most one and sum to `budget`."""
    base, extra = divmod(budget, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@dataclass
class PartitionRead:
    """What a scan read of one partition: the pure half of a scan.

    The first read is the tail, (end - share) to the partition's end; later reads take
    windows further back, [frontier - span, frontier). Each read keeps its newest `share`
    records, so what is kept is always the suffix [frontier, end) of the partition's log.
    """

    partition: int
    low: int
    high: int
    #: (offset, key, headers) per read, in the order of the reads (the newest records first
    #: read); headers None unless the scan keeps them.
    chunks: list[deque[tuple[int, bytes | None, Headers]]] = field(default_factory=list)
    #: The oldest offset of what was kept: None until the tail was read.
    frontier: int | None = None
    #: The current read: where it starts, where it stops (None: at the end), how far it got.
    start: int = 0
    stop: int | None = None
    position: int = 0
    share: int = 0
    taken: int = 0
    tail: bool = False
    corrected: bool = False
    open: bool = False
    ended: bool = False
    #: Offsets spanned and records seen so far: a compacted log has gaps, so a window read
    #: further back spans more offsets than the records it should find.
    spanned: int = 0
    seen: int = 0

    @property
    def unread(self) -> bool:
        return self.frontier is None

    @property
    def older(self) -> bool:
        """Records may exist before what was kept."""
        return self.frontier is not None and self.frontier > self.low

    @property
    def complete(self) -> bool:
        return self.ended and not self.older

    @property
    def kept(self) -> int:
        return sum(len(c) for c in self.chunks)

    def begin(self, share: int) -> None:
        """Start the next read, for at most `share` records (0: no read this round)."""
        self.open = False
        if share <= 0:
            return
        self.share, self.taken, self.corrected = share, 0, False
        self.tail = self.frontier is None
        if self.frontier is None:
            self.start, self.stop = max(self.low, self.high - share), None
        else:
            gaps = min(16, max(1, -(-self.spanned // max(self.seen, 1))))
            self.start, self.stop = max(self.low, self.frontier - share * gaps), self.frontier
        self.position = self.start
        self.chunks.append(deque(maxlen=share))
        self.open = True

    def take(self, offset: int, key: bytes | None, headers: Headers = None) -> bool:
        """Keep a record of the current read; True for the read's first record."""
        if self.stop is not None and offset >= self.stop:
            self._close()
            return False
        first = self.taken == 0
        self.chunks[-1].append((offset, key, headers))
        self.taken += 1
        self.position = offset + 1
        if self.stop is not None and self.position >= self.stop:
            self._close()
        return first

    def at_end(self) -> None:
        """PARTITION_EOF: everything from the read's start to the end was read."""
        if self.tail:
            self.ended = True
        self._close()

    def skip_to(self, high: int) -> int | None:
        """Where to seek once the real end `high` is known, if it leaves more than a share
        between here and there (the tail read then starts over from there)."""
        target = high - self.share
        if not self.tail or high < 0 or target <= self.position:
            return None
        self.high = high
        self.chunks[-1].clear()
        self.taken = 0
        self.start = self.position = target
        return target

    def _close(self) -> None:
        self.open = False
        chunk = self.chunks[-1]
        self.frontier = chunk[0][0] if self.taken > len(chunk) else self.start
        self.spanned += (self.stop if self.stop is not None else self.position) - self.start
        self.seen += self.taken

    def records(self) -> list[tuple[int, bytes | None, Headers]]:
        """Oldest first: the windows further back were read later."""
        out: list[tuple[int, bytes | None, Headers]] = []
        for chunk in reversed(self.chunks):
            out.extend(chunk)
        return out


def interleaved(reads: Iterable[PartitionRead],
                ) -> Iterator[tuple[int, int, bytes | None, Headers]]:
    """(partition, offset, key, headers) of every kept record, partitions taking turns (so a
    bounded sample of keys comes from all of them), each partition oldest first."""
    lists = [(r.partition, r.records()) for r in reads]
    longest = max((len(recs) for _, recs in lists), default=0)
    for i in range(longest):
        for partition, recs in lists:
            if i < len(recs):
                offset, key, headers = recs[i]
                yield partition, offset, key, headers


def _headers(msg: Any, kept: bool) -> Headers:
    """A record's headers when the scan keeps them (a consumer's values are bytes)."""
    return cast(Headers, msg.headers()) if kept else None


@dataclass
class _Progress:
    progressed: bool = False
    timed_out: bool = False
    bytes: int = 0
    records: int = 0
    bytes_out: bool = False

    @property
    def stopped(self) -> bool:
        return self.timed_out or self.bytes_out


@dataclass(frozen=True)
class _Scan:
    tally: KeyTally
    complete: bool
    notes: tuple[str, ...]
