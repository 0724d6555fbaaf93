"""The audit's verdict: a folded `AuditState` and the topic's facts in, findings and numbers out.

Pure. Phantom keys are found on the merged state (`phantoms`): logical keys live under two or
more key byte strings. Their examples need the key bytes, which the state never keeps: the
edge fetches the few example records again by offset and hands them in (`Shown`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from keyguard.formats.framing import (
    IN_BOTH,
    IN_BYTES_GUID,
    IN_BYTES_ID,
    IN_HEADER,
    NOWHERE,
    PLACEMENTS,
    SchemaId,
)
from keyguard.guard.audit.slots import Entry, Slots, shared
from keyguard.guard.audit.state import (
    SHOWN_BYTES,
    AuditState,
    Located,
    PartitionStats,
    logical_key,
)
from keyguard.guard.report import Finding, Report, Section, Witness
from keyguard.guard.rules import (
    AUDIT_UNLISTED_ID,
    COMPACTION_DEFEATED,
    MISPLACED_KEY,
    MISSED_DELETE,
    MIXED_FRAMING,
    NULL_KEY,
    PHANTOM_KEY,
    UNDECODABLE_RECORD,
)

#: Settings that keep compaction from folding a topic, judged by `config_findings`.
MIN_COMPACTION_LAG_MS = "min.compaction.lag.ms"
DELETE_RETENTION_MS = "delete.retention.ms"
SEGMENT_MS = "segment.ms"
SEGMENT_BYTES = "segment.bytes"
CLEANUP_POLICY = "cleanup.policy"
CONFIG_NAMES = (CLEANUP_POLICY, MIN_COMPACTION_LAG_MS, DELETE_RETENTION_MS, SEGMENT_MS,
                SEGMENT_BYTES)
_DAY_MS = 86_400_000
#: Above these, superseded records stay uncompacted for longer than Kafka's defaults allow.
LONG_LAG_MS = 7 * _DAY_MS
LONG_SEGMENT_MS = 7 * _DAY_MS
LARGE_SEGMENT_BYTES = 2**30
#: Below this, a consumer an hour behind misses tombstones (Kafka's default is one day); used
#: when the consumer groups' lag could not be read.
SHORT_DELETE_RETENTION_MS = 3_600_000


@dataclass(frozen=True)
class ConsumerLag:
    """A consumer group's position on one partition of the topic: its committed offset, the
    records it has not read, and how long ago the oldest of them was written (None: unknown)."""

    group: str
    partition: int
    committed: int
    unread: int
    behind_ms: int | None = None


@dataclass(frozen=True)
class AuditFacts:
    """What the edge learned besides the records: plain data."""

    topic: str
    partitions: int
    key_format: str
    value_format: str
    #: The topic's configs as the broker reported them (None: DescribeConfigs failed).
    configs: Mapping[str, str] | None = None
    #: Per role of a framed format: (subject, {schema id or GUID: version} it lists);
    #: absent: no registry to ask.
    listed: Mapping[str, tuple[str, Mapping[SchemaId, int]]] = field(default_factory=dict)
    #: Records each partition held when the read started (end - start offsets).
    captured: int = 0
    #: `--sample N`: at most N records were read, from the start of each partition.
    sample: int | None = None
    notes: tuple[str, ...] = ()
    #: The consumer groups' positions on the topic (None: the groups could not be listed).
    consumers: tuple[ConsumerLag, ...] | None = None


@dataclass(frozen=True)
class Encoding:
    """One live key byte string of a phantom key: where its last record is, its schema id."""

    partition: int
    offset: int
    schema_id: int | None
    #: Where the key carries its schema id (`keyguard.formats.framing.PLACEMENTS`).
    framing: int = NOWHERE


@dataclass(frozen=True)
class Phantoms:
    """Logical keys live under >= 2 key byte strings: how many, the records they orphan (every
    encoding but one per key), and the first `limit` as examples."""

    keys: int = 0
    orphaned: int = 0
    examples: tuple[tuple[Encoding, ...], ...] = ()


@dataclass(frozen=True)
class Shown:
    """An example record fetched again by the edge: its key bytes and the decoded key."""

    key: bytes | None
    row: Mapping[str, Any] | None = None
    #: The record's timestamp (ms since the epoch), when it was read.
    timestamp: int | None = None


@dataclass(frozen=True)
class AuditResult:
    """The audit of one topic: the report (findings and the numbers section) and its counts."""

    report: Report
    topic: str
    phantom_keys: int
    orphaned_records: int
    #: Keys live on a partition murmur2 does not pick for them (a misplaced record whose key
    #: was deleted beside it does not count: compaction removes both).
    misplaced_keys: int
    undecodable: int
    null_keys: int
    records: int
    data: Mapping[str, Any]
    #: Logical keys deleted under one encoding and still live under another.
    missed_deletes: int = 0
    #: Sides (key, value) whose live records carry their schema id in two framings or more.
    mixed_framings: int = 0

    @property
    def clean(self) -> bool:
        return self.phantom_keys == 0 and self.misplaced_keys == 0 and \
            self.missed_deletes == 0 and self.mixed_framings == 0


def grouped(state: AuditState, *, deleted: bool) -> list[list[tuple[bytes, int, Entry]]]:
    """Entries of one logical key, for the logical keys held by two or more: (key fingerprint,
    partition, entry) in the state's order. `deleted`: tombstones too, but not a migration's
    retirements (missed deletes); else live entries only (phantom keys). The candidates are
    found by the first 64 bits of the logical fingerprints (numpy), the groups by all 128."""
    where: list[tuple[int, Slots, np.ndarray]] = []
    for p, slots in state.slots.items():
        keep = slots.flags("decoded")
        live = slots.flags("live")
        keep &= (live | ~slots.flags("retired")) if deleted else live
        where.append((p, slots, np.flatnonzero(keep)))
    if not where:
        return []
    heads = np.empty(sum(len(rows) for _, _, rows in where), dtype="<u8")
    start = 0
    for _, slots, rows in where:  # filled in place: no second copy of them all
        np.take(slots.logical_heads(), rows, out=heads[start:start + len(rows)])
        start += len(rows)
    many = shared(heads)
    del heads
    groups: dict[bytes, list[tuple[bytes, int, Entry]]] = {}
    start = 0
    for p, slots, rows in where:
        chosen = rows[many[start:start + len(rows)]]
        start += len(rows)
        if not len(chosen):
            continue
        fps = list(slots.index)
        for row in chosen.tolist():
            e = slots.entry(row)
            assert e.logical is not None
            groups.setdefault(e.logical, []).append((fps[row], p, e))
    return [g for g in groups.values() if len(g) > 1]


def phantoms(state: AuditState, limit: int | None = None) -> Phantoms:
    """The phantom keys of a (merged) state; examples ordered by partition and offset."""
    keys = orphaned = 0
    found: list[tuple[Encoding, ...]] = []
    for group in grouped(state, deleted=False):
        if len({kf for kf, _, _ in group}) < 2:
            continue  # one byte string (on one or more partitions: a misplaced key, not this)
        keys += 1
        orphaned += len(group) - 1
        found.append(tuple(sorted((Encoding(p, e.offset, e.schema_id, e.key_framing)
                                   for _, p, e in group),
                                  key=lambda x: (x.partition, x.offset))))
    found.sort(key=lambda g: (g[0].partition, g[0].offset))
    n = state.limit if limit is None else limit
    return Phantoms(keys, orphaned, tuple(found[:n]))


@dataclass(frozen=True)
class MissedDeletes:
    """Logical keys deleted under one key byte string and live under another, the tombstone
    being the later record: how many, and the first as (the delete, the live record)."""

    keys: int = 0
    examples: tuple[tuple[Encoding, Encoding], ...] = ()


def _later(a: Entry, pa: int, b: Entry, pb: int) -> bool:
    """Whether record `a` (on partition `pa`) was written after `b`: log order within a
    partition, timestamps across partitions."""
    if pa == pb:
        return a.offset > b.offset
    return a.timestamp >= 0 and b.timestamp >= 0 and a.timestamp > b.timestamp


def missed_deletes(state: AuditState, limit: int | None = None) -> MissedDeletes:
    """The missed deletes of a (merged) state; a migration's retirements are not deletes."""
    keys = 0
    found: list[tuple[Encoding, Encoding]] = []
    for entries in grouped(state, deleted=True):
        group = [(p, e) for _, p, e in entries]
        live = [(p, e) for p, e in group if e.live]
        gone = [(p, e) for p, e in group if not e.live]
        pair = next(((d, x) for d in gone for x in live if _later(d[1], d[0], x[1], x[0])),
                    None)
        if pair is None:
            continue
        keys += 1
        (dp, d), (lp, le) = pair
        found.append((Encoding(dp, d.offset, d.schema_id, d.key_framing),
                      Encoding(lp, le.offset, le.schema_id, le.key_framing)))
    found.sort(key=lambda g: (g[0].partition, g[0].offset))
    n = state.limit if limit is None else limit
    return MissedDeletes(keys, tuple(found[:n]))


def missed_delete_findings(facts: AuditFacts, missed: MissedDeletes,
                           shown: Mapping[tuple[int, int], Shown]) -> list[Finding]:
    """One finding per example missed delete, the tombstone's and the live key as witness."""
    out = []
    for i, (gone, live) in enumerate(missed.examples):
        sg, sl = shown.get((gone.partition, gone.offset)), shown.get((live.partition,
                                                                     live.offset))
        row = next((s.row for s in (sl, sg) if s is not None and s.row is not None), None)
        out.append(Finding(
            MISSED_DELETE, "$",
            f"missed delete {i + 1} of {missed.keys}: the logical key {_row_text(row)} was "
            f"deleted at {_encoding(gone, facts)} but stays live at {_encoding(live, facts)}, "
            "an older record under other key bytes: consumers still see the row",
            witness=_witness(row, sg, sl, gone.partition, live.partition), topic=facts.topic))
    return out


def phantom_findings(facts: AuditFacts, found: Phantoms,
                     shown: Mapping[tuple[int, int], Shown]) -> list[Finding]:
    """One finding per example phantom key, each with its two first encodings as a witness."""
    out = []
    for i, group in enumerate(found.examples):
        a, b = group[0], group[1]
        sa, sb = shown.get((a.partition, a.offset)), shown.get((b.partition, b.offset))
        row = next((s.row for s in (sa, sb) if s is not None and s.row is not None), None)
        more = f" (and {len(group) - 2} more)" if len(group) > 2 else ""
        out.append(Finding(
            PHANTOM_KEY, "$",
            f"phantom key {i + 1} of {found.keys} ({found.orphaned} orphaned record"
            f"{_s(found.orphaned)} in all): the logical key "
            f"{_row_text(row)} is live under {len(group)} key byte strings: "
            f"{_encoding(a, facts)} and {_encoding(b, facts)}{more}",
            witness=_witness(row, sa, sb, a.partition, b.partition), topic=facts.topic))
    return out


def _witness(row: Mapping[str, Any] | None, old: Shown | None, new: Shown | None,
             old_partition: int, new_partition: int) -> Witness | None:
    """Two fetched records of one logical key as a finding's witness (None if one is gone)."""
    if old is None or new is None or old.key is None or new.key is None:
        return None
    return Witness(dict(row or {}), old.key, new.key, old_partition=old_partition,
                   new_partition=new_partition)


def live_misplaced(state: AuditState) -> dict[int, int]:
    """Per partition, the keys live there although murmur2 puts their bytes elsewhere: the
    ones that matter (a misplaced key deleted by a tombstone beside it goes with compaction)."""
    per = {p: int(np.count_nonzero(s.flags("live") & s.flags("misplaced")))
           for p, s in state.slots.items()}
    return {p: n for p, n in sorted(per.items()) if n}


def misplaced_findings(state: AuditState, facts: AuditFacts,
                       shown: Mapping[tuple[int, int], Shown]) -> list[Finding]:
    live = live_misplaced(state)
    if not live:
        return []
    per = {p: s.misplaced for p, s in sorted(state.stats.items()) if s.misplaced}
    total = sum(per.values())
    keys = sum(live.values())
    first = state.misplaced[0] if state.misplaced else None
    witness = None
    if first is not None and first.key is not None:
        s = shown.get((first.partition, first.offset))
        witness = Witness(dict(s.row) if s and s.row else {}, first.key, first.key,
                          old_partition=first.partition, new_partition=first.expected)
    examples = "; ".join(f"partition {x.partition} offset {x.offset} (murmur2: {x.expected})"
                         for x in state.misplaced[:3])
    return [Finding(
        MISPLACED_KEY, "partitioner",
        f"{keys} live key{_s(keys)} {'sits' if keys == 1 else 'sit'} where murmur2 does not "
        f"put {'its' if keys == 1 else 'their'} key bytes among {facts.partitions} partitions "
        "(per partition: " + ", ".join(f"{p}: {n}" for p, n in live.items())
        + f"; {total} misplaced record{_s(total)} in all); e.g. {examples}",
        witness=witness, topic=facts.topic)]


def record_findings(state: AuditState, facts: AuditFacts) -> list[Finding]:
    """Undecodable keys and values, null keys: counts and the first records, by offset."""
    out = []
    keys = sum(s.undecodable_keys for s in state.stats.values())
    values = sum(s.undecodable_values for s in state.stats.values())
    if keys or values:
        parts = [f"{n} {what}{_s(n)}" for n, what in ((keys, "key"), (values, "value")) if n]
        out.append(Finding(
            UNDECODABLE_RECORD, "records",
            f"{' and '.join(parts)} do not decode under key.format={facts.key_format}, "
            f"value.format={facts.value_format}: "
            + "; ".join(f"partition {x.partition} offset {x.offset}: {x.what}"
                        for x in state.undecodable),
            topic=facts.topic))
    nulls = sum(s.null_keys for s in state.stats.values())
    if nulls:
        out.append(Finding(
            NULL_KEY, "key",
            f"{nulls} record{_s(nulls)} without a key, first at "
            + ", ".join(f"partition {x.partition} offset {x.offset}" for x in state.null_keys),
            topic=facts.topic))
    return out


def config_findings(facts: AuditFacts) -> list[Finding]:
    """Settings that defeat compaction; a setting the broker did not report is not judged."""
    c = facts.configs or {}
    warnings = [*_policy_warnings(c.get(CLEANUP_POLICY)),
                *_lag_warnings(_int(c.get(MIN_COMPACTION_LAG_MS))),
                *_retention_warnings(_int(c.get(DELETE_RETENTION_MS)), facts.consumers),
                *_segment_warnings(_int(c.get(SEGMENT_MS)), _int(c.get(SEGMENT_BYTES)))]
    return [Finding(COMPACTION_DEFEATED, path, message, topic=facts.topic)
            for path, message in warnings]


def _policy_warnings(policy: str | None) -> list[tuple[str, str]]:
    if policy is None:
        return []
    kinds = {p.strip() for p in policy.split(",")}
    if "compact" not in kinds:
        return [(CLEANUP_POLICY, f"cleanup.policy={policy}: the topic is never compacted; "
                 "superseded records and phantom keys stay, and retention drops live keys")]
    if "delete" in kinds:
        return [(CLEANUP_POLICY, f"cleanup.policy={policy}: retention deletes live keys that "
                 "were not rewritten within retention.ms")]
    return []


def _lag_warnings(lag: int | None) -> list[tuple[str, str]]:
    if lag is None or lag <= LONG_LAG_MS:
        return []
    return [(MIN_COMPACTION_LAG_MS, f"min.compaction.lag.ms={lag} ({_days(lag)}): superseded "
             "records stay uncompacted at least that long")]


def _retention_warnings(retention: int | None, consumers: Sequence[ConsumerLag] | None
                        ) -> list[tuple[str, str]]:
    """Tombstones compacted away before a consumer group reads them; without the groups'
    lag, a retention short enough to be suspect."""
    if retention is None:
        return []
    if consumers is None:
        if retention >= SHORT_DELETE_RETENTION_MS:
            return []
        return [(DELETE_RETENTION_MS, f"delete.retention.ms={retention}: compaction removes "
                 "tombstones after that, so a consumer further behind never sees the delete "
                 "(the consumer groups' lag could not be read to compare)")]
    behind = sorted((x for x in consumers if x.behind_ms is not None and x.behind_ms > retention),
                    key=lambda x: -(x.behind_ms or 0))
    if not behind:
        return []
    worst = behind[0]
    others = len({(x.group, x.partition) for x in behind}) - 1
    return [(DELETE_RETENTION_MS,
             f"delete.retention.ms={retention} ({_duration(retention)}), but consumer group "
             f"{worst.group!r} is {_duration(worst.behind_ms or 0)} behind on partition "
             f"{worst.partition} ({worst.unread} records unread from offset "
             f"{worst.committed})" + (f", and {others} more group partition"
             f"{_s(others)} further behind than the retention" if others else "")
             + ": once compaction runs it can remove tombstones the group has not read, "
             "and the group keeps rows that were deleted")]


def _segment_warnings(seg_ms: int | None, seg_bytes: int | None) -> list[tuple[str, str]]:
    out = []
    if seg_ms is not None and seg_ms > LONG_SEGMENT_MS:
        out.append((SEGMENT_MS, f"segment.ms={seg_ms} ({_days(seg_ms)}): the active segment is "
                    "never compacted, so its records stay until it rolls"))
    if seg_bytes is not None and seg_bytes > LARGE_SEGMENT_BYTES:
        out.append((SEGMENT_BYTES, f"segment.bytes={seg_bytes}: the active segment is never "
                    "compacted, and a large one rolls late"))
    return out


def id_findings(state: AuditState, facts: AuditFacts) -> list[Finding]:
    """Schema ids records carry that their subject does not list (a registry was given)."""
    out = []
    for role, (subject, listed) in sorted(facts.listed.items()):
        carried = _id_counts(state, role)
        unlisted = {i: n for i, n in carried.items() if i not in listed}
        if unlisted:
            out.append(Finding(
                AUDIT_UNLISTED_ID, f"{role} schema id",
                f"{sum(unlisted.values())} {role}{_s(sum(unlisted.values()))} carry schema id"
                f"{_s(len(unlisted))} " + ", ".join(f"{i} ({n} records)" for i, n in
                                                    sorted(unlisted.items(), key=_by_id))
                + f", which subject {subject} does not list (it lists "
                + (", ".join(f"v{v}={i}" for i, v in sorted(listed.items(),
                                                            key=lambda x: x[1])
                             if type(i) is int) or "none")
                + ")",
                subject=subject, topic=facts.topic))
    return out


def judge(state: AuditState, facts: AuditFacts, found: Phantoms,
          shown: Mapping[tuple[int, int], Shown],
          missed: MissedDeletes | None = None) -> AuditResult:
    """Findings and the numbers section of one topic's audit (`missed`: `missed_deletes` of
    the state, when the caller has it already)."""
    missed = missed if missed is not None else missed_deletes(state)
    mixed = framing_findings(state, facts)
    findings = [*phantom_findings(facts, found, shown),
                *missed_delete_findings(facts, missed, shown),
                *misplaced_findings(state, facts, shown),
                *mixed, *record_findings(state, facts),
                *id_findings(state, facts), *config_findings(facts)]
    data = summary(state, facts, found, missed)
    read = (f"the first {facts.sample} records" if facts.sample is not None
            else "every record up to the end offsets captured at start")
    checked = (f"topic {facts.topic}: {read}; key.format={facts.key_format}, "
               f"value.format={facts.value_format}",)
    notes = list(facts.notes)
    if facts.configs is None:
        notes.append(f"topic {facts.topic!r}: its configuration could not be read; "
                     "compaction settings were not judged")
    report = Report(tuple(findings), checked, tuple(notes),
                    sections=(Section("audit", tuple(summary_lines(data)), data),))
    totals = data["totals"]
    return AuditResult(report, facts.topic, found.keys, found.orphaned, totals["misplaced_live"],
                       totals["undecodable_keys"] + totals["undecodable_values"],
                       totals["null_keys"], totals["records"], data, missed.keys, len(mixed))


#: The placements that are a framing (NOWHERE is an unframed record, KG953's and the
#: unframed count's), and how a finding names each.
_FRAMED = {IN_HEADER: "in a record header (the bytes bare: a header framing)",
           IN_BYTES_ID: "in the bytes (magic byte 0 and a 4-byte id)",
           IN_BYTES_GUID: "in the bytes (magic byte 1 and a 16-byte GUID)",
           IN_BOTH: "both in a header and in the bytes"}


def framings(state: AuditState) -> dict[str, dict[str, dict[str, int]]]:
    """Per side whose format carries a schema id: how many records carry it where
    (`PLACEMENTS`), among every record read and among the live ones (each key's last record:
    the table compaction keeps); a side that carries none is left out."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for role in ("key", "value"):
        read = [0] * len(PLACEMENTS)
        for stats in state.stats.values():
            for i, n in enumerate(getattr(stats, f"{role}_framings")):
                read[i] += n
        if not any(read):
            continue
        live = np.zeros(len(PLACEMENTS), dtype=np.int64)
        for slots in state.slots.values():
            live += slots.live_framings(f"{role}_framing", len(PLACEMENTS))
        out[role] = {"records": dict(zip(PLACEMENTS, read, strict=True)),
                     "live": dict(zip(PLACEMENTS, live.tolist(), strict=True))}
    return out


def framing_findings(state: AuditState, facts: AuditFacts) -> list[Finding]:
    """A side whose live records carry their schema id in two framings or more: producers
    that disagree (the table compaction keeps is judged, not records already superseded)."""
    out = []
    for role, counts in framings(state).items():
        live = counts["live"]
        used = {p: live[PLACEMENTS[p]] for p in _FRAMED if live[PLACEMENTS[p]]}
        if len(used) < 2:
            continue
        total = sum(used.values())
        parts = "; ".join(f"{n} {_FRAMED[p]}" for p, n in sorted(used.items(),
                                                                  key=lambda x: -x[1]))
        breaks = ["a prefix-only reader (Flink's avro-confluent format, a deserializer "
                  "without dual_schema_id_deserializer) cannot read the header-framed ones"
                  ] if IN_HEADER in used else []
        if IN_BOTH in used:
            breaks.append("a reader that takes the header first (dual_schema_id_deserializer) "
                          "reads the id in the bytes of the ones with both as their body")
        if IN_BYTES_GUID in used:
            breaks.append("a reader that knows only magic byte 0 (Flink's formats) cannot "
                          "read the GUID-framed ones")
        if role == "key":
            breaks.append("a key written in one framing and the same logical key written in "
                          "another are two keys to compaction: phantom rows, and updates and "
                          "deletes under one framing miss the other")
        out.append(Finding(
            MIXED_FRAMING, f"{role} framing",
            f"the {total} live {role}{_s(total)} of topic {facts.topic} carry their schema id "
            f"in {len(used)} framings ({parts}): their producers disagree; "
            + "; ".join(breaks),
            topic=facts.topic))
    return out


# -- the numbers ---------------------------------------------------------------------------


def summary(state: AuditState, facts: AuditFacts, found: Phantoms,
            missed: MissedDeletes) -> dict[str, Any]:
    """The audit's numbers as JSON values: per partition, totals, schema ids, memory held."""
    live = {p: int(np.count_nonzero(s.flags("live"))) for p, s in state.slots.items()}
    distinct = {p: len(s) for p, s in state.slots.items()}
    rows = [_partition_row(p, state.stats.get(p), distinct.get(p, 0), live.get(p, 0))
            for p in range(facts.partitions)]
    numeric = ("records", "tombstones", "null_keys", "live_keys", "bytes", "misplaced",
               "undecodable_keys", "undecodable_values", "unframed_keys")
    totals: dict[str, Any] = {k: sum(r[k] for r in rows) for k in numeric}
    totals["distinct_keys"] = distinct_keys(state)
    totals["misplaced_live"] = sum(live_misplaced(state).values())
    totals["phantom_keys"] = found.keys
    totals["orphaned_records"] = found.orphaned
    totals["missed_deletes"] = missed.keys
    return {
        "topic": facts.topic,
        "partitions": facts.partitions,
        "sample": facts.sample,
        "captured_records": facts.captured,
        "per_partition": rows,
        "totals": totals,
        "schema_ids": _schema_id_spans(state, facts),
        "framings": framings(state),
        "configs": dict(facts.configs) if facts.configs is not None else None,
        "consumers": None if facts.consumers is None else [
            {"group": x.group, "partition": x.partition, "committed": x.committed,
             "unread": x.unread, "behind_ms": x.behind_ms} for x in facts.consumers],
        "held": {"entries": state.entry_count(), "bytes": state.held_bytes()},
    }


def _partition_row(p: int, s: PartitionStats | None, distinct: int, live: int
                   ) -> dict[str, Any]:
    """One partition's numbers (zeros for a partition no record was read from)."""
    row: dict[str, Any] = {"partition": p, "records": 0, "tombstones": 0, "null_keys": 0,
                           "distinct_keys": distinct, "live_keys": live, "bytes": 0,
                           "misplaced": 0, "undecodable_keys": 0, "undecodable_values": 0,
                           "unframed_keys": 0, "first_offset": None, "last_offset": None}
    if not s:
        return row
    row.update(records=s.records, tombstones=s.tombstones, null_keys=s.null_keys,
               bytes=s.key_bytes + s.value_bytes, misplaced=s.misplaced,
               undecodable_keys=s.undecodable_keys, undecodable_values=s.undecodable_values,
               unframed_keys=s.unframed_keys)
    if s.records:
        row.update(first_offset=s.first_offset, last_offset=s.last_offset)
    return row


def _schema_id_spans(state: AuditState, facts: AuditFacts) -> dict[str, list[dict[str, Any]]]:
    """Each role's schema ids per partition: records, offsets, listed by the subject."""
    ids: dict[str, list[dict[str, Any]]] = {}
    spans = sorted(state.ids.items(), key=lambda x: (x[0][0], *_by_id((x[0][1],)), x[0][2]))
    for (role, schema_id, p), (n, first, last) in spans:
        listed = facts.listed.get(role)
        ids.setdefault(role, []).append({
            "schema_id": schema_id if type(schema_id) is int else str(schema_id),
            "partition": p, "records": n, "first_offset": first, "last_offset": last,
            "listed": None if listed is None else schema_id in listed[1]})
    return ids


def distinct_keys(state: AuditState) -> int:
    """Key byte strings across partitions (a misplaced key on two partitions is one). Only a
    misplaced entry can share its key with another partition's (murmur2 picks one partition
    for the bytes), so only those are looked up."""
    if state.partitions <= 0:
        return len({fp for s in state.slots.values() for fp in s.index})
    placed = 0
    strays: set[bytes] = set()
    for slots in state.slots.values():
        misplaced = slots.flags("misplaced")
        placed += len(slots) - int(np.count_nonzero(misplaced))
        if misplaced.any():
            fps = list(slots.index)
            strays.update(fps[row] for row in np.flatnonzero(misplaced).tolist())
    for fp in list(strays):
        for slots in state.slots.values():
            row = slots.index.get(fp)
            if row is not None and not slots.misplaced[row]:
                strays.discard(fp)  # also on the partition murmur2 picks: counted there
                break
    return placed + len(strays)


def summary_lines(data: Mapping[str, Any]) -> list[str]:
    """The numbers as the text report's table."""
    t = data["totals"]
    read = (f"sample of the first {data['sample']} records" if data["sample"] is not None
            else "read to the end offsets captured at start")
    lines = [f"audit of topic {data['topic']} ({data['partitions']} partitions, {read}):"]
    head = ("partition", "records", "tombstones", "keys", "live", "bytes", "misplaced",
            "undecodable", "null keys")
    table = [head, *(_table_row(str(r["partition"]), r) for r in data["per_partition"]),
             _table_row("total", t)]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
              for row in table]
    lines.append(f"  phantom keys: {t['phantom_keys']} ({t['orphaned_records']} orphaned "
                 f"record{_s(t['orphaned_records'])}); misplaced records: {t['misplaced']} "
                 f"({t['misplaced_live']} live); missed deletes: {t['missed_deletes']}")
    lines += _schema_id_lines(data["schema_ids"])
    lines += _framing_lines(data.get("framings") or {})
    lines += _consumer_lines(data.get("consumers"))
    held = data["held"]
    lines.append(f"  held: {held['entries']} key fingerprint entries, ~{_size(held['bytes'])}")
    return lines


def _table_row(label: str, r: Mapping[str, Any]) -> tuple[str, ...]:
    return (label, str(r["records"]), str(r["tombstones"]), str(r["distinct_keys"]),
            str(r["live_keys"]), _size(r["bytes"]), str(r["misplaced"]),
            str(r["undecodable_keys"] + r["undecodable_values"]), str(r["null_keys"]))


def _schema_id_lines(schema_ids: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """Each schema id records carry: listed or not, records, offsets per partition."""
    lines = []
    for role, spans in schema_ids.items():
        per_id: dict[int, list[dict[str, Any]]] = {}
        for s in spans:
            per_id.setdefault(s["schema_id"], []).append(s)
        for schema_id, rows in per_id.items():
            listed = rows[0]["listed"]
            mark = "" if listed is None else (" (listed)" if listed else " (NOT listed)")
            name = "schema id" if isinstance(schema_id, int) else "schema GUID"
            lines.append(
                f"  {role} {name} {schema_id}{mark}: {sum(r['records'] for r in rows)} records"
                " (" + ", ".join(f"p{r['partition']} offsets {r['first_offset']}.."
                                 f"{r['last_offset']}" for r in rows) + ")")
    return lines


def _framing_lines(found: Mapping[str, Mapping[str, Mapping[str, int]]]) -> list[str]:
    """Where each side's records carry their schema id: live, and among every record read."""
    def shown(counts: Mapping[str, int]) -> str:
        return ", ".join(f"{name} {n}" for name, n in counts.items() if n) or "none"

    return [f"  {role} framings: live {shown(c['live'])}; all records {shown(c['records'])}"
            for role, c in found.items()]


def _consumer_lines(consumers: list[Mapping[str, Any]] | None) -> list[str]:
    """Each consumer group: records unread, how old the oldest of them is."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for x in consumers or ():
        groups.setdefault(x["group"], []).append(x)
    lines = []
    for group, at in sorted(groups.items()):
        unread = sum(x["unread"] for x in at)
        behind = [x["behind_ms"] for x in at if x["behind_ms"] is not None]
        lines.append(f"  consumer group {group}: {unread} record{_s(unread)} unread"
                     + (f", oldest written {_duration(max(behind))} ago" if behind else ""))
    return lines


# -- text helpers --------------------------------------------------------------------------


def _encoding(e: Encoding, facts: AuditFacts) -> str:
    wrote = facts.key_format
    if e.framing in (IN_HEADER, IN_BYTES_GUID) and e.schema_id is None:
        wrote = "schema GUID in a header" if e.framing == IN_HEADER else \
            "schema GUID in the bytes"
    elif e.schema_id is not None:
        subject, listed = facts.listed.get("key", ("", {}))
        version = listed.get(e.schema_id)
        wrote = f"schema id {e.schema_id}" + (f", {subject} v{version}" if version else
                                              ", not in the subject" if subject else "")
    return f"partition {e.partition} offset {e.offset} ({wrote})"


def _row_text(row: Mapping[str, Any] | None) -> str:
    if row is None:
        return "(not fetched)"
    text = logical_key(row)
    return text if len(text) <= 2 * SHOWN_BYTES else text[:2 * SHOWN_BYTES] + "..."


def _by_id(item: tuple[Any, ...]) -> tuple[int, int, str]:
    """A sort key of (schema id, ...) pairs: integer ids in order, then GUIDs by text."""
    schema_id = item[0]
    if type(schema_id) is int:
        return 0, schema_id, ""
    return 1, 0, str(schema_id)


def _id_counts(state: AuditState, role: str) -> dict[SchemaId, int]:
    out: dict[SchemaId, int] = {}
    for (r, schema_id, _), (n, _, _) in state.ids.items():
        if r == role:
            out[schema_id] = out.get(schema_id, 0) + n
    return out


def _int(v: str | None) -> int | None:
    try:
        return None if v is None else int(str(v).strip())
    except ValueError:
        return None


def _days(ms: int) -> str:
    return f"{ms / _DAY_MS:g} days"


def _duration(ms: int) -> str:
    for unit, size in (("d", _DAY_MS), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size:
            return f"{ms / size:.3g} {unit}"
    return f"{ms} ms"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


__all__ = ["AuditFacts", "AuditResult", "Encoding", "Located", "MissedDeletes", "Phantoms",
           "Shown", "framing_findings", "framings", "judge", "missed_deletes", "phantoms"]
