"""The audit's fold: records in, an `AuditState` of counts and fingerprints out. Pure.

A state holds, per partition, the counts the report shows, and one entry per (key bytes,
partition): the key's fingerprint, its decoded logical key's fingerprint, whether its last
record is live, and where that record is. Keys are never kept, only 16-byte blake2b
fingerprints, so memory grows with distinct keys, not with the topic; the few records a
report shows as examples are kept whole (bounded by `limit`) or fetched again by offset.

States of different partitions merge into the state of all (`merge`): entries are per
partition, compaction's unit, and every count is a sum, so a Spark job that folds each
partition in its own task and merges on the driver gets the state a single reader gets.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any, Protocol

from keyguard.formats.codec import format_factory
from keyguard.formats.errors import KeyguardError
from keyguard.formats.framing import Frame
from keyguard.formats.partitioner import partitions_for
from keyguard.formats.plan import UpsertPlan
from keyguard.formats.values import to_jsonable
from keyguard.guard.audit.markers import read_marker

#: Bytes of a fingerprint: 128 bits, no collision in any topic's lifetime.
FINGERPRINT_BYTES = 16
#: Examples kept per kind (undecodable, null key, misplaced) by default.
EXAMPLES = 5
#: Bytes of a record shown in an example (longer ones are cut).
SHOWN_BYTES = 64


class RecordLike(Protocol):
    """A consumed record (`keyguard.guard.offsets.Record` is one)."""

    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


def fingerprint(data: bytes) -> bytes:
    return blake2b(data, digest_size=FINGERPRINT_BYTES).digest()


def logical_key(row: Mapping[str, Any]) -> str:
    """A decoded key in one canonical text: equal values, equal text, whatever the bytes."""
    return json.dumps(to_jsonable(dict(row)), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, default=str)


@dataclass
class PartitionStats:
    """One partition's counts; `merge` adds them (a partition's states from several reads)."""

    records: int = 0
    tombstones: int = 0
    null_keys: int = 0
    key_bytes: int = 0
    value_bytes: int = 0
    misplaced: int = 0
    undecodable_keys: int = 0
    undecodable_values: int = 0
    first_offset: int = -1
    last_offset: int = -1
    #: Keys of a framed format written without the frame (a producer that forgot the
    #: serializer, a UI that writes raw tombstones), decoded by the ids the topic carries.
    unframed_keys: int = 0

    def merge(self, other: PartitionStats) -> PartitionStats:
        firsts = [o for o in (self.first_offset, other.first_offset) if o >= 0]
        return PartitionStats(
            self.records + other.records, self.tombstones + other.tombstones,
            self.null_keys + other.null_keys, self.key_bytes + other.key_bytes,
            self.value_bytes + other.value_bytes, self.misplaced + other.misplaced,
            self.undecodable_keys + other.undecodable_keys,
            self.undecodable_values + other.undecodable_values,
            min(firsts) if firsts else -1, max(self.last_offset, other.last_offset),
            self.unframed_keys + other.unframed_keys)


@dataclass(frozen=True)
class Located:
    """One record a report shows: where it is, what is wrong, its key (cut to SHOWN_BYTES)."""

    partition: int
    offset: int
    what: str
    key: bytes | None = None
    #: For a misplaced key: the partition murmur2 picks.
    expected: int | None = None


@dataclass(frozen=True)
class Entry:
    """The last record of one key byte string on one partition."""

    #: Fingerprint of the decoded logical key; None when the key did not decode.
    logical: bytes | None
    live: bool
    offset: int
    #: The schema id the key bytes carry (a framed format), else None.
    schema_id: int | None
    #: Not on the partition murmur2 picks for the key bytes.
    misplaced: bool = False
    #: The last record is a tombstone `keyguard migrate` wrote to retire an old encoding (its
    #: row moved): not a delete.
    retired: bool = False
    #: The last record's timestamp (ms), to order records of one row across partitions.
    timestamp: int = -1


@dataclass
class AuditState:
    """The fold of some partitions of a topic with `partitions` partitions; see the module."""

    partitions: int
    limit: int = EXAMPLES
    stats: dict[int, PartitionStats] = field(default_factory=dict)
    #: (key fingerprint, partition) -> the key's last record there.
    entries: dict[tuple[bytes, int], Entry] = field(default_factory=dict)
    #: (role, schema id, partition) -> [records, first offset, last offset].
    ids: dict[tuple[str, int, int], list[int]] = field(default_factory=dict)
    undecodable: list[Located] = field(default_factory=list)
    null_keys: list[Located] = field(default_factory=list)
    misplaced: list[Located] = field(default_factory=list)

    # -- what it holds -----------------------------------------------------------------------

    @property
    def records(self) -> int:
        return sum(s.records for s in self.stats.values())

    def held_bytes(self) -> int:
        """An estimate of the memory the entries take (dict slot, key tuple, fingerprints)."""
        if not self.entries:
            return 0
        (k, e), = [next(iter(self.entries.items()))]
        one = (sys.getsizeof(k) + sys.getsizeof(k[0]) + sys.getsizeof(e)
               + (sys.getsizeof(e.logical) if e.logical is not None else 0) + 3 * 8 + 8)
        return one * len(self.entries)

    # -- merging -----------------------------------------------------------------------------

    def merge(self, other: AuditState) -> AuditState:
        """The state of both inputs' records, when they hold different partitions (the unit a
        Spark task folds); commutative and associative."""
        out = AuditState(self.partitions, self.limit)
        out.absorb(self)
        out.absorb(other)
        return out

    def absorb(self, other: AuditState) -> None:
        """`merge`, in place: `other`'s records folded into this state (`other` unchanged)."""
        if other.partitions != self.partitions:
            raise ValueError(f"states of {self.partitions} and {other.partitions} partitions "
                             "do not merge: the topic's partition count changed between reads")
        self.limit = max(self.limit, other.limit)
        for p, stats in other.stats.items():
            mine = self.stats.get(p)
            self.stats[p] = stats.merge(PartitionStats()) if mine is None else mine.merge(stats)
        for slot, e in other.entries.items():
            had = self.entries.get(slot)
            if had is None or e.offset > had.offset:
                self.entries[slot] = e
        for where, (n, first, last) in other.ids.items():
            span = self.ids.get(where)
            if span is None:
                self.ids[where] = [n, first, last]
            else:
                span[0] += n
                span[1], span[2] = min(span[1], first), max(span[2], last)
        for name in ("undecodable", "null_keys", "misplaced"):
            both = sorted([*getattr(self, name), *getattr(other, name)],
                          key=lambda x: (x.partition, x.offset))
            setattr(self, name, both[:self.limit])

    @staticmethod
    def merge_all(states: Iterable[AuditState], partitions: int,
                  limit: int = EXAMPLES) -> AuditState:
        """The merge of many states, each absorbed once (no copy per state)."""
        out = AuditState(partitions, limit)
        for s in states:
            out.absorb(s)
        return out


class Folder:
    """Folds records into an `AuditState` with the plan's codecs (decoding every key once per
    key byte string and partition, and every value) and the formats' frames."""

    def __init__(self, plan: UpsertPlan, partitions: int, *, limit: int = EXAMPLES,
                 decode_values: bool = True) -> None:
        self.plan = plan
        self.state = AuditState(partitions, limit)
        self.decode_values = decode_values
        self.key_frame: Frame = format_factory(plan.key_format).frame
        self.value_frame: Frame = format_factory(plan.value_format).frame

    def add(self, batch: Sequence[RecordLike]) -> None:
        """One batch of records of any partitions, each partition's in offset order."""
        st = self.state
        keyed = [r for r in batch if r.key is not None]
        expected = (partitions_for([r.key for r in keyed], st.partitions).tolist()  # type: ignore[misc]
                    if keyed and st.partitions > 0 else [])
        want = {id(r): e for r, e in zip(keyed, expected, strict=True)}
        for r in batch:
            self._add(r, want.get(id(r)))

    def _add(self, r: RecordLike, expected: int | None) -> None:
        st = self.state
        s = st.stats.get(r.partition)
        if s is None:
            s = st.stats[r.partition] = PartitionStats()
        s.records += 1
        s.first_offset = r.offset if s.first_offset < 0 else min(s.first_offset, r.offset)
        s.last_offset = max(s.last_offset, r.offset)
        if r.value is None:
            s.tombstones += 1
        else:
            s.value_bytes += len(r.value)
            self._value(r, s)
        if r.key is None:
            s.null_keys += 1
            self._example(st.null_keys, Located(r.partition, r.offset, "null key"))
            return
        s.key_bytes += len(r.key)
        key_id = self._id("key", self.key_frame, r.key, r)
        misplaced = expected is not None and expected != r.partition
        if misplaced:
            s.misplaced += 1
            self._example(st.misplaced, Located(
                r.partition, r.offset, f"on partition {r.partition}, murmur2 picks {expected}",
                r.key[:SHOWN_BYTES], expected))
        slot = (fingerprint(r.key), r.partition)
        before = st.entries.get(slot)
        if before is not None and before.offset > r.offset:
            return  # an older record of a key already folded (a re-read): the later one holds
        logical = before.logical if before is not None else self._logical(r, s)
        retired = r.value is None and isinstance(
            read_marker(getattr(r, "headers", None)), int)
        st.entries[slot] = Entry(logical, r.value is not None, r.offset, key_id, misplaced,
                                 retired, getattr(r, "timestamp", -1))

    def _logical(self, r: RecordLike, s: PartitionStats) -> bytes | None:
        assert r.key is not None
        row = None
        why = "key skipped by the key format (ignore-parse-errors)"
        try:
            row = self.plan.key_codec.decode(r.key)
        except Exception as exc:  # a codec's failure on foreign bytes
            why = _reason(exc)
        if row is None:
            row = self._unframed(r.key)
            if row is not None:
                s.unframed_keys += 1
        if row is None:
            s.undecodable_keys += 1
            self._example(self.state.undecodable, Located(
                r.partition, r.offset, f"key: {why}", r.key[:SHOWN_BYTES]))
            return None
        return fingerprint(logical_key(row).encode())

    def _unframed(self, key: bytes) -> dict[str, Any] | None:
        """A framed format's key written without its frame: the row its bare body holds
        under a key schema id the topic carries (the latest first), or None."""
        frame = self.key_frame
        if not frame.carries_schema_id or frame.schema_id(key) is not None:
            return None
        seen = sorted({i for (role, i, _) in self.state.ids if role == "key"}, reverse=True)
        for schema_id in seen:
            try:
                row = self.plan.key_codec.decode(frame.wrap(schema_id, key))
            except Exception:  # not this schema: the next is tried
                continue
            if row is not None:
                return row
        return None

    def _value(self, r: RecordLike, s: PartitionStats) -> None:
        assert r.value is not None
        self._id("value", self.value_frame, r.value, r)
        if not self.decode_values:
            return
        why = None
        try:
            if self.plan.value_codec.decode(r.value) is None:
                why = "value skipped by the value format (ignore-parse-errors)"
        except Exception as exc:  # a codec's failure on foreign bytes
            why = _reason(exc)
        if why is not None:
            s.undecodable_values += 1
            self._example(self.state.undecodable, Located(
                r.partition, r.offset, f"value: {why}",
                None if r.key is None else r.key[:SHOWN_BYTES]))

    def _id(self, role: str, frame: Frame, data: bytes, r: RecordLike) -> int | None:
        schema_id = frame.schema_id(data)
        if schema_id is not None:
            span = self.state.ids.get((role, schema_id, r.partition))
            if span is None:
                self.state.ids[(role, schema_id, r.partition)] = [1, r.offset, r.offset]
            else:
                span[0] += 1
                span[1], span[2] = min(span[1], r.offset), max(span[2], r.offset)
        return schema_id

    def _example(self, into: list[Located], what: Located) -> None:
        """Keep the first `limit` by (partition, offset), as `merge` does."""
        if len(into) < self.state.limit or (what.partition, what.offset) < (
                into[-1].partition, into[-1].offset):
            into.append(what)
            into.sort(key=lambda x: (x.partition, x.offset))
            del into[self.state.limit:]


def _reason(exc: Exception) -> str:
    """Why a record did not decode; an unreachable registry is no property of the record."""
    if isinstance(exc, KeyguardError):
        if exc.exit_code == 3:
            raise exc
        return exc.message
    return f"{type(exc).__name__}: {exc}"


def fold(plan: UpsertPlan, partitions: int, batches: Iterable[Sequence[RecordLike]], *,
         limit: int = EXAMPLES, decode_values: bool = True) -> AuditState:
    """The state of every record in `batches` (one partition's, or several in offset order)."""
    folder = Folder(plan, partitions, limit=limit, decode_values=decode_values)
    for batch in batches:
        folder.add(batch)
    return folder.state
