"""The broker edge of the guard: what a topic looks like today (partitions, cleanup.policy, and
which schema ids its keys already carry).

The analysis never talks to Kafka; it takes a `TopicFacts`. `KafkaTopicInspector` gathers one
with an AdminClient and a group-less Consumer (assign, never subscribe: no rebalance, no commit).

The scan trusts only what the broker says inside fetch responses: a partition is read until
librdkafka reports PARTITION_EOF, never up to `get_watermark_offsets(cached=False)`, because
tansu's ListOffsets answers the last batch's base offset + 1 instead of the high watermark, and
a compacted or transactional partition has offset gaps and control records anyway.
"""

from __future__ import annotations

import logging
import math
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from formats.errors import BrokerUnavailableError, InvalidOptionError
from formats.framing import CONFLUENT
from formats.secrets import is_secret_key, redact, register_secrets

#: Distinct keys kept from a scan for re-encoding under the candidate.
SAMPLE_KEYS = 200

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
_LOG = logging.getLogger("keyguard.kafka")
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

    @property
    def compacted(self) -> bool | None:
        if self.cleanup_policy is None:
            return None
        return "compact" in {p.strip() for p in self.cleanup_policy.split(",")}


class TopicInspector(Protocol):
    """Where topic facts come from: a broker, or a fixed table in tests and dry runs."""

    def facts(self, topic: str, *, scan_limit: int = 10_000,
              scan_schema_ids: bool = True) -> TopicFacts | None:
        """The facts of `topic`, or None when it does not exist."""
        ...


@dataclass(frozen=True)
class StaticTopicInspector:
    """Facts known in advance (tests, `--topic-facts` files): no broker involved."""

    known: Mapping[str, TopicFacts]

    def facts(self, topic: str, *, scan_limit: int = 10_000,
              scan_schema_ids: bool = True) -> TopicFacts | None:
        return self.known.get(topic)


def confluent_schema_id(key: bytes | None) -> int | None:
    """The schema id framed into a Confluent wire-format key, or None for any other key."""
    return CONFLUENT.schema_id(key)


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

    def add(self, key: bytes | None, partition: int = -1, offset: int = -1) -> None:
        self.seen += 1
        if key is not None and len(self.samples) < self.sample_limit:
            self.samples.setdefault(bytes(key), partition)
        sid = confluent_schema_id(key)
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
                 timeout_s: float = 10.0, scan_timeout_s: float = 60.0) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.scan_timeout_s = scan_timeout_s
        self._config = dict(config or {})
        self._config.pop("bootstrap.servers", None)
        self.secrets = [str(v) for k, v in self._config.items() if is_secret_key(k) and v]
        register_secrets(self.secrets)
        self.errors: list[KafkaError] = []
        self._topics: list[str] = []

    def topic_names(self) -> list[str]:
        """The topics the last metadata request listed ("did you mean" for a typo)."""
        return list(self._topics)

    # -- the interface ---------------------------------------------------------------------

    def facts(self, topic: str, *, scan_limit: int = 10_000,
              scan_schema_ids: bool = True) -> TopicFacts | None:
        self.errors.clear()
        admin = self._client(AdminClient, self.client_config({}))
        partitions = self.partitions(admin, topic)
        if partitions is None:
            return None
        policy, notes = self._cleanup_policy(admin, topic)
        if not scan_schema_ids or scan_limit <= 0:
            return TopicFacts(topic, partitions, policy, notes=notes)
        scan = self._scan(topic, partitions, scan_limit)
        t = scan.tally
        return TopicFacts(topic, partitions, policy, dict(t.ids), t.seen, scan.complete,
                          t.other, notes + scan.notes, tuple(t.samples.items()),
                          dict(t.examples))

    # -- look-ups --------------------------------------------------------------------------

    def partitions(self, admin: AdminClient, topic: str) -> int | None:
        # All topics, not list_topics(topic): asking for one topic by name makes tansu and
        # noida (and brokers with auto.create.topics.enable) create it.
        try:
            md = admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            for _ in range(10_000):  # serve the queued error callbacks (and log lines)
                if not admin.poll(0):
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

    def _cleanup_policy(self, admin: AdminClient, topic: str) -> tuple[str | None, tuple[str, ...]]:
        resource = ConfigResource(ResourceType.TOPIC, topic)
        try:
            future = admin.describe_configs([resource], request_timeout=self.timeout_s)[resource]
            entries = future.result(timeout=self.timeout_s + 1)
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

    def _scan(self, topic: str, partitions: int, scan_limit: int) -> _Scan:
        """Read keys from the beginning, at most `scan_limit` in all, spread fairly.

        Rounds: each open partition may take an equal share of what is left of the budget;
        a partition that ends early leaves its unused share to the others in the next round.
        """
        consumer = self._consumer()
        # Learn the leaders first: an offset query for a partition without a known leader
        # waits for a retry timer (~0.5 s per round); all topics, never one by name.
        try:
            consumer.list_topics(timeout=self.timeout_s)
        except KafkaException:
            pass  # the scan below reports what is wrong
        position = dict.fromkeys(range(partitions), OFFSET_BEGINNING)
        ended: set[int] = set()
        tally = KeyTally()
        deadline = time.monotonic() + self.scan_timeout_s
        progressed = timed_out = False
        try:
            while len(ended) < partitions and tally.seen < scan_limit and not timed_out:
                open_ = [p for p in range(partitions) if p not in ended]
                share = math.ceil((scan_limit - tally.seen) / len(open_))
                consumer.assign([TopicPartition(topic, p, position[p]) for p in open_])
                taken = dict.fromkeys(open_, 0)
                waiting = set(open_)
                while waiting and tally.seen < scan_limit:
                    if time.monotonic() > deadline:
                        timed_out = True
                        break
                    for msg in consumer.consume(500, timeout=0.02):
                        p = msg.partition()
                        if p not in waiting:
                            continue
                        err = msg.error()
                        if err is not None:
                            if err.code() == KafkaError._PARTITION_EOF:
                                progressed = True
                                ended.add(p)
                                waiting.discard(p)
                            elif err.fatal() or err.code() in FATAL_CODES:
                                raise self.unavailable(f"cannot read topic {topic!r}", err)
                            else:
                                self.errors.append(err)
                            continue
                        offset = msg.offset() or 0  # never None on a record
                        if position[p] >= 0 and offset < position[p]:
                            continue  # re-fetched after a re-assign
                        progressed = True
                        tally.add(msg.key(), p, offset)
                        taken[p] += 1
                        position[p] = offset + 1
                        if taken[p] >= share:
                            waiting.discard(p)
                        if tally.seen >= scan_limit:
                            break
            # A partition stopped by the budget may have been read to its end anyway.
            ended.update(p for p in range(partitions) if p not in ended and position[p] >= 0
                         and self._at_end(consumer, topic, p, position[p] - 1))
            consumer.unassign()
        finally:
            consumer.close()
        if timed_out and not progressed:
            raise self.unavailable(
                f"no records and no end of partition from topic {topic!r} within "
                f"{self.scan_timeout_s:g}s", None)
        notes: tuple[str, ...] = ()
        unfinished = sorted(set(range(partitions)) - ended)
        if timed_out:
            notes = (f"topic {topic!r}: key scan stopped after {self.scan_timeout_s:g}s with "
                     f"partitions {unfinished} unfinished",)
        elif unfinished:
            notes = (f"topic {topic!r}: key scan stopped at the limit of {scan_limit} keys",)
        return _Scan(tally, not unfinished, notes)

    @staticmethod
    def _at_end(consumer: Consumer, topic: str, partition: int, offset: int) -> bool:
        """Whether `offset` is the last record, by the high watermark of the last fetch
        response (right on tansu, unlike its ListOffsets)."""
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                     cached=True)
        except KafkaException:
            return False
        return high >= 0 and offset + 1 >= high

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


@dataclass(frozen=True)
class _Scan:
    tally: KeyTally
    complete: bool
    notes: tuple[str, ...]
