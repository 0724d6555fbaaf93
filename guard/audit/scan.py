"""The audit's edge: read a topic to the end offsets captured at start, fold it, judge it.

The records come through `keyguard.guard.offsets.KafkaRanges` (each partition's end captured once,
so the audit ends while producers keep writing); the topic's configuration through an
AdminClient as `keyguard.guard.topic` reads it; the schema ids a subject lists through the registry
the plan's framed codecs were handed. The few example records a report shows are fetched
again by offset at the end: the fold keeps fingerprints, never keys.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from typing import Any

from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import ConfigResource, ResourceType

from keyguard.formats.errors import InvalidOptionError, KeyguardError
from keyguard.formats.framing import SchemaId
from keyguard.formats.plan import UpsertPlan
from keyguard.formats.registry import Registry
from keyguard.formats.registry.registration import needs_schema_id
from keyguard.guard.audit.judge import (
    CONFIG_NAMES,
    AuditFacts,
    AuditResult,
    ConsumerLag,
    Phantoms,
    Shown,
    judge,
    missed_deletes,
    phantoms,
)
from keyguard.guard.audit.state import EXAMPLES, AuditState, Folder
from keyguard.guard.offsets import KafkaRanges, OffsetRange
from keyguard.guard.topic import FATAL_CODES, KafkaTopicInspector, split_evenly

#: progress(records read, records to read, seconds since the start).
Progress = Callable[[int, int, float], None]


def audit_topic(topic: str, plan: UpsertPlan, *, bootstrap: str,
                properties: Mapping[str, Any] | None = None, registry: Registry | None = None,
                sample: int | None = None, progress: Progress | None = None,
                limit: int = EXAMPLES, timeout_s: float = 30.0,
                stall_timeout_s: float = 60.0) -> AuditResult:
    """The audit of `topic` as `plan` declares its formats: read, folded, judged.

    `properties` are librdkafka settings (security, SASL); `registry` overrides the one the
    plan's framed codecs were handed, for the ids a subject lists; `sample` reads at most that
    many records (the first of each partition, a fair share each). `result.phantom_keys` and
    `result.misplaced_keys` are 0 on a clean topic.
    """
    check_sample(sample)
    kafka = KafkaRanges(bootstrap, properties, timeout_s=timeout_s,
                        stall_timeout_s=stall_timeout_s)
    ranges = kafka.capture(topic)
    captured = sum(_size(r) for r in ranges)
    chosen = sampled(ranges, sample)
    total = sum(_size(r) for r in chosen)
    folder = Folder(plan, len(ranges), limit=limit)
    start, read = time.monotonic(), 0
    for r in chosen:
        for cols in kafka.read_columns(r, headers=True):  # a migration's retirements
            folder.add_columns(cols)
            read += len(cols)
            if progress is not None:
                progress(read, total, time.monotonic() - start)
    return conclude(folder.state, plan, bootstrap=bootstrap, properties=properties,
                    registry=registry, sample=sample, captured=captured, timeout_s=timeout_s)


def check_sample(sample: int | None) -> None:
    """A sample reads at least one record: a sample of nothing would judge nothing clean."""
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int)
                               or sample < 1):
        raise InvalidOptionError(f"sample must be a whole number of records, at least 1; "
                                 f"got {sample!r}",
                                 hint="leave it out to read every record")


def sampled(ranges: Sequence[OffsetRange], sample: int | None) -> list[OffsetRange]:
    """The ranges a `--sample N` reads: the first share of each partition (all when None)."""
    if sample is None:
        return list(ranges)
    shares = split_evenly(sample, len(ranges)) if ranges else []
    return [replace(r, end=min(r.end, max(r.start, 0) + share))
            for r, share in zip(ranges, shares, strict=True)]


def conclude(state: AuditState, plan: UpsertPlan, *, bootstrap: str,
             properties: Mapping[str, Any] | None = None, registry: Registry | None = None,
             sample: int | None = None, captured: int = 0,
             timeout_s: float = 30.0) -> AuditResult:
    """Judge a merged state (`keyguard.guard.audit.scan.audit_topic`'s, or a Spark job's): the
    topic's configuration, the subjects' ids and the example records are read here."""
    inspector = KafkaTopicInspector(bootstrap, properties, timeout_s=min(timeout_s, 10.0))
    topic = plan.topic
    configs = topic_configs(inspector, topic)
    listed, notes = listed_ids(plan, registry)
    found = phantoms(state)
    ends = {p: s.last_offset + 1 for p, s in state.stats.items() if s.records}
    consumers = consumer_lags(inspector, plan, topic, state.partitions, ends,
                              timeout_s=timeout_s)
    if consumers is None:
        notes.append("the consumer groups could not be listed: delete.retention.ms is judged "
                     "against a fixed hour, not their lag")
    facts = AuditFacts(topic, state.partitions, plan.key_format, plan.value_format,
                       configs, listed, captured, sample, tuple(notes), consumers)
    wanted = [(e.partition, e.offset) for group in found.examples for e in group[:2]]
    missed = missed_deletes(state)
    wanted += [(e.partition, e.offset) for pair in missed.examples for e in pair]
    wanted += [(x.partition, x.offset) for x in state.misplaced[:1]]
    shown = fetch_examples(inspector, plan, topic, wanted, timeout_s=timeout_s)
    return judge(state, facts, found, shown, missed)


def topic_configs(inspector: KafkaTopicInspector, topic: str) -> dict[str, str] | None:
    """The compaction settings the broker reports for `topic`; None when it answers none."""
    admin = inspector.admin()
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        future = admin.describe_configs([resource], request_timeout=inspector.timeout_s)
        entries = future[resource].result(timeout=inspector.timeout_s + 1)
    except (KafkaException, FutureTimeout):
        return None
    return {name: str(e.value) for name, e in entries.items()
            if name in CONFIG_NAMES and e.value is not None}


#: At most this many consumer groups are asked for their offsets (one request each).
MAX_GROUPS = 200


def consumer_lags(inspector: KafkaTopicInspector, plan: UpsertPlan, topic: str,
                  partitions: int, ends: Mapping[int, int], *, timeout_s: float = 30.0
                  ) -> tuple[ConsumerLag, ...] | None:
    """Every consumer group with a committed offset on `topic`: its position per partition, the
    records it has not read (up to `ends`, the offsets the audit read to) and how long ago the
    oldest of them was written. None when the groups cannot be listed."""
    admin = inspector.admin()
    wait = inspector.timeout_s
    try:
        listed = admin.list_consumer_groups(request_timeout=wait).result(timeout=wait + 1)
    except (KafkaException, FutureTimeout):
        return None
    names = sorted(g.group_id for g in listed.valid
                   if not g.group_id.startswith("keyguard-"))[:MAX_GROUPS]
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    positions: list[tuple[str, int, int]] = []
    for name in names:
        try:
            futures = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(name, tps)], request_timeout=wait)
            answer = futures[name].result(timeout=wait + 1)
        except (KafkaException, FutureTimeout, KeyError):
            continue
        positions += [(name, tp.partition, tp.offset) for tp in answer.topic_partitions
                      if tp.error is None and tp.offset is not None and tp.offset >= 0]
    oldest = fetch_examples(inspector, plan, topic,
                            [(p, c) for _, p, c in positions if c < ends.get(p, 0)],
                            timeout_s=timeout_s)
    now = int(time.time() * 1000)
    out = []
    for name, p, committed in positions:
        shown = oldest.get((p, committed))
        behind = None if shown is None or shown.timestamp is None else \
            max(0, now - shown.timestamp)
        out.append(ConsumerLag(name, p, committed, max(0, ends.get(p, 0) - committed), behind))
    return tuple(out)


def listed_ids(plan: UpsertPlan, registry: Registry | None
               ) -> tuple[dict[str, tuple[str, Mapping[SchemaId, int]]], list[str]]:
    """Per role of a framed format, its subject and the ids (and the GUIDs, where the registry
    has them: a header framing's records carry those) it lists with their versions (needs a
    registry)."""
    out: dict[str, tuple[str, Mapping[SchemaId, int]]] = {}
    notes: list[str] = []
    for role, codec in (("key", plan.key_codec), ("value", plan.value_codec)):
        if not needs_schema_id(codec):
            continue
        reg = registry if registry is not None else codec.context.registry
        if reg is None:
            notes.append(f"no registry for the {role} format: the schema ids its records carry "
                         "are counted, not checked against the subject")
            continue
        try:
            subject = _subject(codec)
            versions = reg.all_versions(subject)
        except KeyguardError as exc:
            if exc.exit_code == 3:
                raise
            notes.append(f"the {role} subject's ids could not be listed: {exc.message}")
            continue
        ids: dict[SchemaId, int] = {v.schema_id: v.version for v in versions}
        ids.update((_guid(v.guid), v.version) for v in versions if v.guid)
        out[role] = (subject, ids)
    return out, notes


def _guid(text: str) -> SchemaId:
    return uuid.UUID(str(text))


def _subject(codec: Any) -> str:
    """A framed codec's subject (`FramedCodec.subject`; may need a record to know it)."""
    return str(codec.subject)


def fetch_examples(inspector: KafkaTopicInspector, plan: UpsertPlan, topic: str,
                   wanted: Iterable[tuple[int, int]], *, timeout_s: float = 30.0
                   ) -> dict[tuple[int, int], Shown]:
    """The records at these (partition, offset)s, their keys decoded (None where they do not)."""
    want = sorted(set(wanted))
    if not want:
        return {}
    conf = inspector.client_config({
        "group.id": f"keyguard-audit-{uuid.uuid4().hex}", "enable.auto.commit": False,
        "enable.partition.eof": True, "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 10})  # one record each: never wait for more
    consumer = Consumer(conf)
    out: dict[tuple[int, int], Shown] = {}
    try:
        for partition, offset in want:
            out[(partition, offset)] = _one(consumer, inspector, plan, topic, partition, offset,
                                            timeout_s)
    finally:
        consumer.close()
    return out


def _one(consumer: Consumer, inspector: KafkaTopicInspector, plan: UpsertPlan, topic: str,
         partition: int, offset: int, timeout_s: float) -> Shown:
    consumer.assign([TopicPartition(topic, partition, offset)])
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                break
            if err.fatal() or err.code() in FATAL_CODES:
                raise inspector.unavailable(f"cannot read partition {partition} of topic "
                                            f"{topic!r}", err)
            continue
        if msg.partition() != partition or msg.offset() is None \
                or msg.offset() < offset:  # type: ignore[operator]
            continue
        if msg.offset() != offset:
            break  # compacted away since the fold
        key = msg.key()
        row = None
        if key is not None:
            try:
                row = plan.key_codec.decode_record(key, msg.headers())  # type: ignore[arg-type]
            except Exception:  # shown without its decoded key
                row = None
        kind, ts = msg.timestamp()
        return Shown(key, row, ts if kind != TIMESTAMP_NOT_AVAILABLE and ts >= 0 else None)
    return Shown(None, None)


def _size(r: OffsetRange) -> int:
    return 0 if r.empty else r.end - max(r.start, 0)


__all__ = ["AuditResult", "Phantoms", "Progress", "audit_topic", "conclude", "sampled"]
