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
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any, Protocol

from keyguard.formats.codec import format_factory
from keyguard.formats.errors import KeyguardError
from keyguard.formats.framing import NOWHERE, PLACEMENTS, Frame, Headers, SchemaId
from keyguard.formats.partitioner import partitions_for
from keyguard.formats.plan import UpsertPlan
from keyguard.formats.schemajson import paused_gc
from keyguard.formats.values import to_jsonable
from keyguard.guard.audit.markers import read_marker
from keyguard.guard.audit.slots import FINGERPRINT_BYTES, Entry, Slots

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


_TEXT = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes


def _scalar_text(v: Any) -> str | None:
    """`logical_key`'s text of one plain value (None: not plain, the row goes the long way)."""
    t = type(v)
    if t is str:
        return _TEXT(v)  # type: ignore[no-any-return]
    if t is int:
        return int.__repr__(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is float and math.isfinite(v):
        return float.__repr__(v)
    return None


def logical_keys(columns: Mapping[str, Sequence[Any]], length: int) -> list[str]:
    """`logical_key` of each row of decoded key columns, built column by column where the
    values are plain (strings, integers, finite floats, booleans, nulls)."""
    names = sorted(columns)
    texts = [_column_text(columns[n]) for n in names]
    if not names:
        return [logical_key({})] * length
    if any(t is None for t in texts):
        return [logical_key({n: columns[n][i] for n in names}) for i in range(length)]
    template = "{" + ",".join(_TEXT(n).replace("%", "%%") + ":%s" for n in names) + "}"
    return [template % row for row in zip(*texts, strict=True)]


def _column_text(column: Sequence[Any]) -> list[str] | None:
    """`_scalar_text` of every value of a column; None when one is not plain."""
    kinds = set(map(type, column))
    if kinds <= {str}:
        return list(map(_TEXT, column))
    if kinds <= {int}:
        return list(map(int.__repr__, column))
    out = [_scalar_text(v) for v in column]
    return None if None in out else out  # type: ignore[return-value]


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
    #: Records (keys; values, tombstones aside) per place their schema id is carried
    #: (`keyguard.formats.framing.PLACEMENTS`), counted for a side whose format carries one.
    key_framings: list[int] = field(default_factory=lambda: [0] * len(PLACEMENTS))
    value_framings: list[int] = field(default_factory=lambda: [0] * len(PLACEMENTS))

    def merge(self, other: PartitionStats) -> PartitionStats:
        firsts = [o for o in (self.first_offset, other.first_offset) if o >= 0]
        merged = PartitionStats(
            self.records + other.records, self.tombstones + other.tombstones,
            self.null_keys + other.null_keys, self.key_bytes + other.key_bytes,
            self.value_bytes + other.value_bytes, self.misplaced + other.misplaced,
            self.undecodable_keys + other.undecodable_keys,
            self.undecodable_values + other.undecodable_values,
            min(firsts) if firsts else -1, max(self.last_offset, other.last_offset),
            self.unframed_keys + other.unframed_keys)
        merged.key_framings = [a + b for a, b in zip(self.key_framings, other.key_framings,
                                                     strict=True)]
        merged.value_framings = [a + b for a, b in zip(self.value_framings,
                                                       other.value_framings, strict=True)]
        return merged


@dataclass(frozen=True)
class Located:
    """One record a report shows: where it is, what is wrong, its key (cut to SHOWN_BYTES)."""

    partition: int
    offset: int
    what: str
    key: bytes | None = None
    #: For a misplaced key: the partition murmur2 picks.
    expected: int | None = None


@dataclass
class AuditState:
    """The fold of some partitions of a topic with `partitions` partitions; see the module."""

    partitions: int
    limit: int = EXAMPLES
    stats: dict[int, PartitionStats] = field(default_factory=dict)
    #: Per partition, each key byte string's last record there (column-wise).
    slots: dict[int, Slots] = field(default_factory=dict)
    #: (role, schema id, partition) -> [records, first offset, last offset]; the id an
    #: integer or a schema GUID (a header framing's).
    ids: dict[tuple[str, SchemaId, int], list[int]] = field(default_factory=dict)
    undecodable: list[Located] = field(default_factory=list)
    null_keys: list[Located] = field(default_factory=list)
    misplaced: list[Located] = field(default_factory=list)

    # -- what it holds -----------------------------------------------------------------------

    @property
    def records(self) -> int:
        return sum(s.records for s in self.stats.values())

    @property
    def entries(self) -> dict[tuple[bytes, int], Entry]:
        """(key fingerprint, partition) -> the key's last record there, one object each: for
        tests and small states (the judge reads `slots` column-wise)."""
        return {(fp, p): e for p, slots in self.slots.items() for fp, e in slots.items()}

    def entry_count(self) -> int:
        return sum(len(s) for s in self.slots.values())

    def held_bytes(self) -> int:
        """An estimate of the memory the entries take (dicts, fingerprints, columns)."""
        return sum(s.nbytes() for s in self.slots.values())

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
        for p, theirs in other.slots.items():
            held = self.slots.get(p)
            if held is None:
                self.slots[p] = theirs.copy()
                continue
            for fp, row in theirs.index.items():
                had = held.index.get(fp)
                if had is None or theirs.offset[row] > held.offset[had]:
                    held.put(fp, theirs.entry(row))
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


class Columns(Protocol):
    """Consecutive records of one partition, column-wise (`keyguard.guard.offsets.RecordColumns`
    is one)."""

    partition: int
    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[tuple[str, bytes | None], ...]] | None


@dataclass
class _Columns:
    partition: int
    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[Any] | None


@dataclass
class _Keyed:
    """A batch's records that have a key: their indices in the batch and, per record, its key
    schema id, whether murmur2 places it elsewhere, its key's fingerprint and its offset;
    `last` maps each fingerprint to its latest record."""

    at: list[int]
    ids: list[SchemaId | None]
    #: Where each key carries its schema id (`PLACEMENTS`; NOWHERE for a bare format).
    places: list[int]
    misplaced: list[bool]
    fps: list[bytes]
    offsets: list[int]
    last: dict[bytes, int]


def _latest(fps: list[bytes], offsets: list[int]) -> dict[bytes, int]:
    """Each fingerprint's latest record, keyed in the order the fingerprints first appear."""
    if offsets == sorted(offsets):  # offset order (a read's): linear
        return {fp: j for j, fp in enumerate(fps)}
    order = sorted(range(len(fps)), key=offsets.__getitem__)
    won = {fps[j]: j for j in order}
    return {fp: won[fp] for fp in dict.fromkeys(fps)}


def _retired(cols: Columns, i: int) -> bool:
    """Whether record i is a tombstone a migration wrote to retire an old key encoding."""
    headers = cols.headers
    return cols.values[i] is None and headers is not None and isinstance(
        read_marker(headers[i]), int)


class Folder:
    """Folds records into an `AuditState` with the plan's codecs (decoding every key once per
    key byte string and partition, and every value) and the formats' frames.

    Batches fold column-wise: values and new keys are decoded a batch at a time
    (`Codec.decode_batch`, as Python lists: Arrow's libraries would be a third of the
    memory of a small audit), the rare record a batch cannot take (an undecodable key, a key
    without its frame) record by record, and the state is exactly the one folding each record
    in turn gives."""

    def __init__(self, plan: UpsertPlan, partitions: int, *, limit: int = EXAMPLES,
                 decode_values: bool = True) -> None:
        self.plan = plan
        self.state = AuditState(partitions, limit)
        self.decode_values = decode_values
        # Each side's own frame (its `framing` option's): where a record's id is read from.
        self.key_frame: Frame = format_factory(plan.key_format).frame_of(plan.key_options, "key")
        self.value_frame: Frame = format_factory(plan.value_format).frame_of(
            plan.value_options, "value")

    def add(self, batch: Sequence[RecordLike]) -> None:
        """One batch of records of any partitions, each partition's in offset order."""
        with paused_gc():  # a batch's parsed rows hold no cycles
            self._add(batch)

    def _add(self, batch: Sequence[RecordLike]) -> None:
        prior, first_id = self._key_ids([r.key for r in batch],
                                        [getattr(r, "headers", None) for r in batch])
        where: dict[int, list[int]] = {}
        for i, r in enumerate(batch):
            where.setdefault(r.partition, []).append(i)
        for p, at in where.items():
            rs = [batch[i] for i in at]
            self._fold(_Columns(p, [r.offset for r in rs],
                                [getattr(r, "timestamp", -1) for r in rs],
                                [r.key for r in rs], [r.value for r in rs],
                                [getattr(r, "headers", None) for r in rs]),
                       at, prior, first_id)

    def add_columns(self, cols: Columns) -> None:
        """Consecutive records of one partition, in offset order (`KafkaRanges.read_columns`)."""
        with paused_gc():  # a batch's parsed rows hold no cycles
            prior, first_id = self._key_ids(cols.keys, cols.headers)
            self._fold(cols, range(len(cols.offsets)), prior, first_id)

    def _key_ids(self, keys: Sequence[bytes | None], headers: Sequence[Headers] | None,
                 ) -> tuple[set[SchemaId], dict[SchemaId, int]]:
        """The key schema ids the state holds before a batch, and the batch's index of the
        first key carrying each id: what an unframed key is tried under (`_unframed`)."""
        if not self.key_frame.carries_schema_id:
            return set(), {}
        prior = {i for (role, i, _) in self.state.ids if role == "key"}
        first: dict[SchemaId, int] = {}
        schema_id = self.key_frame.schema_id
        heads = headers or [None] * len(keys)
        for i, (k, h) in enumerate(zip(keys, heads, strict=True)):
            sid = schema_id(k, h)
            if sid is not None and sid not in first:
                first[sid] = i
        return prior, first

    def _fold(self, cols: Columns, where: Sequence[int], prior: set[SchemaId],
              first_id: dict[SchemaId, int]) -> None:
        if not cols.offsets:
            return
        present = [i for i, v in enumerate(cols.values) if v is not None]
        s = self._count(cols, present)
        value_places = self._value_ids(cols, present, s)
        if self.decode_values and present:
            self._values(cols, present, s)
        keyed = self._with_keys(cols, s)
        if not keyed:
            return
        batch = self._keyed(cols, keyed, s)
        slots = self.state.slots.get(cols.partition)
        if slots is None:
            slots = self.state.slots[cols.partition] = Slots()
        start = len(slots)
        new = [fp for fp in batch.last if fp not in slots.index]
        if new:
            self._add_new(slots, cols, s, batch, new, (where, prior, first_id), value_places)
        if len(new) < len(batch.last):
            self._set_known(slots, cols, batch, start, value_places)

    def _value_ids(self, cols: Columns, present: list[int], s: PartitionStats) -> list[int]:
        """Where each record of the batch carries its value's schema id (`PLACEMENTS`), each
        id's span and each placement counted; all NOWHERE for a format that carries none
        (its headers are not read)."""
        places = [NOWHERE] * len(cols.offsets)
        frame = self.value_frame
        if not frame.carries_schema_id:
            return places
        locate, heads, counts = frame.locate, cols.headers, s.value_framings
        for i in present:
            sid, place = locate(cols.values[i], heads[i] if heads is not None else None)
            places[i] = place
            counts[place] += 1
            self._span("value", sid, cols.partition, cols.offsets[i])
        return places

    def _count(self, cols: Columns, present: list[int]) -> PartitionStats:
        """The partition's stats, with the batch's records, offsets, tombstones and value
        bytes counted in."""
        st, offsets = self.state, cols.offsets
        s = st.stats.get(cols.partition)
        if s is None:
            s = st.stats[cols.partition] = PartitionStats()
        s.records += len(offsets)
        low, high = min(offsets), max(offsets)
        s.first_offset = low if s.first_offset < 0 else min(s.first_offset, low)
        s.last_offset = max(s.last_offset, high)
        s.tombstones += len(offsets) - len(present)
        s.value_bytes += sum([len(cols.values[i] or b"") for i in present])
        return s

    def _with_keys(self, cols: Columns, s: PartitionStats) -> list[int]:
        """The batch's records that have a key; the null keys are counted and shown."""
        keys = cols.keys
        keyed = [i for i, k in enumerate(keys) if k is not None]
        if len(keyed) < len(keys):
            for i, k in enumerate(keys):
                if k is None:
                    s.null_keys += 1
                    self._example(self.state.null_keys,
                                  Located(cols.partition, cols.offsets[i], "null key"))
        return keyed

    def _keyed(self, cols: Columns, at: list[int], s: PartitionStats) -> _Keyed:
        kk: list[bytes] = [cols.keys[i] for i in at]  # type: ignore[misc]
        offsets = [cols.offsets[i] for i in at]
        s.key_bytes += sum(map(len, kk))
        ids: list[SchemaId | None] = [None] * len(kk)
        places = [NOWHERE] * len(kk)
        if self.key_frame.carries_schema_id:
            locate, heads, counts = self.key_frame.locate, cols.headers, s.key_framings
            for j, (k, i) in enumerate(zip(kk, at, strict=True)):
                ids[j], place = locate(k, heads[i] if heads is not None else None)
                places[j] = place
                counts[place] += 1
                self._span("key", ids[j], cols.partition, offsets[j])
        fps = [blake2b(k, digest_size=FINGERPRINT_BYTES).digest() for k in kk]
        return _Keyed(at, ids, places, self._misplaced(kk, offsets, cols.partition, s), fps,
                      offsets, _latest(fps, offsets))

    def _misplaced(self, keys: list[bytes], offsets: list[int], p: int,
                   s: PartitionStats) -> list[bool]:
        """Whether each key is on another partition than murmur2 places it (counted, shown)."""
        out = [False] * len(keys)
        if self.state.partitions <= 0:
            return out
        expected = partitions_for(keys, self.state.partitions).tolist()  # type: ignore[arg-type]
        for j, e in enumerate(expected):
            if e != p:
                out[j] = True
                s.misplaced += 1
                self._example(self.state.misplaced, Located(
                    p, offsets[j], f"on partition {p}, murmur2 picks {e}",
                    keys[j][:SHOWN_BYTES], e))
        return out

    def _add_new(self, slots: Slots, cols: Columns, s: PartitionStats, batch: _Keyed,
                 new: list[bytes],
                 seen: tuple[Sequence[int], set[SchemaId], dict[SchemaId, int]],
                 value_places: list[int]) -> None:
        """Slots for the key byte strings the partition had not seen: the logical key from
        each one's first record in the batch, the rest from its latest."""
        fps = batch.fps
        first = {fp: j for j, fp in zip(range(len(fps) - 1, -1, -1), reversed(fps),
                                        strict=True)}
        at = [first[fp] for fp in new]
        logicals = self._logicals(cols, s, [batch.at[j] for j in at],
                                  [batch.ids[j] for j in at], *seen)
        winners = [batch.last[fp] for fp in new]
        rows = [batch.at[j] for j in winners]
        slots.extend(new, logicals, [cols.values[i] is not None for i in rows],
                     [batch.offsets[j] for j in winners],
                     [_integer(batch.ids[j]) for j in winners],
                     [batch.misplaced[j] for j in winners], [_retired(cols, i) for i in rows],
                     [cols.timestamps[i] for i in rows], [batch.places[j] for j in winners],
                     [value_places[i] for i in rows])

    def _set_known(self, slots: Slots, cols: Columns, batch: _Keyed, start: int,
                   value_places: list[int]) -> None:
        """The slots of key byte strings seen before the batch, moved to their latest record
        (not back to an older one: a re-read folds records already folded)."""
        index, offset_of = slots.index, slots.offset
        for fp, j in batch.last.items():
            row = index[fp]
            if row >= start:
                continue  # new: set by `_add_new`
            i = batch.at[j]
            if offset_of[row] > cols.offsets[i]:
                continue
            slots.set(row, cols.values[i] is not None, cols.offsets[i], _integer(batch.ids[j]),
                      batch.misplaced[j], _retired(cols, i), cols.timestamps[i],
                      batch.places[j], value_places[i])

    def _logicals(self, cols: Columns, s: PartitionStats, rows: list[int],
                  ids: list[SchemaId | None], where: Sequence[int], prior: set[SchemaId],
                  first_id: dict[SchemaId, int]) -> list[bytes | None]:
        """The logical key fingerprints of new keys (records `rows` of `cols`), decoded a
        batch per schema id, with their headers where the key's format may carry the id in
        one; a key the batch does not take goes record by record."""
        out: list[bytes | None] = [None] * len(rows)
        heads = cols.headers if self.key_frame.carries_schema_id else None
        groups: dict[SchemaId | None, list[int]] = {}
        for m, sid in enumerate(ids):
            groups.setdefault(sid, []).append(m)
        one_by_one: list[int] = []
        codec = self.plan.key_codec
        for sid, members in groups.items():
            if sid is None and self.key_frame.carries_schema_id:
                one_by_one += members  # unframed: by the ids seen before each record
                continue
            # `rows` are records with a key: none is left out
            batch = [key for m in members if (key := cols.keys[rows[m]]) is not None]
            try:
                decoded = codec.decode_batch(batch, arrow=False, headers=None if heads is None
                                             else [heads[rows[m]] for m in members])
            except Exception:  # a record the codec rejects: each is told apart below
                one_by_one += members
                continue
            skipped = set(decoded.skipped)
            texts = logical_keys({n: decoded.column(n) for n in decoded.columns},
                                 decoded.length)
            for k, m in enumerate(members):
                if k in skipped:
                    one_by_one.append(m)
                else:
                    out[m] = fingerprint(texts[k].encode())
        for m in sorted(one_by_one):
            i = rows[m]
            before = where[i]
            seen = prior | {sid for sid, at in first_id.items() if at < before}
            out[m] = self._logical(cols.keys[i], None if heads is None else heads[i],  # type: ignore[arg-type]
                                   cols.partition, cols.offsets[i], s, seen)
        return out

    def _logical(self, key: bytes, headers: Headers, partition: int, offset: int,
                 s: PartitionStats, seen: set[SchemaId]) -> bytes | None:
        row = None
        why = "key skipped by the key format (ignore-parse-errors)"
        try:
            row = self.plan.key_codec.decode_record(key, headers)
        except Exception as exc:  # a codec's failure on foreign bytes
            why = _reason(exc)
        if row is None:
            row = self._unframed(key, headers, seen)
            if row is not None:
                s.unframed_keys += 1
        if row is None:
            s.undecodable_keys += 1
            self._example(self.state.undecodable, Located(
                partition, offset, f"key: {why}", key[:SHOWN_BYTES]))
            return None
        return fingerprint(logical_key(row).encode())

    def _unframed(self, key: bytes, headers: Headers, seen: set[SchemaId]
                  ) -> dict[str, Any] | None:
        """A framed format's key written without its frame: the row its bare body holds
        under a key schema id the topic carried before it (the latest first; an id the side's
        framing cannot write, a GUID in the bytes' frame, is not tried), or None."""
        frame = self.key_frame
        if not frame.carries_schema_id or frame.schema_id(key, headers) is not None:
            return None
        latest_first = sorted(seen, key=lambda i: (type(i) is int, i if type(i) is int else 0,
                                                   str(i)), reverse=True)
        for schema_id in latest_first:
            try:
                data, added = frame.wrap(schema_id, key)
                row = self.plan.key_codec.decode_record(data, added)
            except Exception:  # not this schema: the next is tried
                continue
            if row is not None:
                return row
        return None

    def _values(self, cols: Columns, present: list[int], s: PartitionStats) -> None:
        """Decode the batch's values; the undecodable ones are counted and shown."""
        values = cols.values
        codec = self.plan.value_codec
        heads = cols.headers if self.value_frame.carries_schema_id else None
        bad: list[tuple[int, str]] = []
        try:
            decoded = codec.decode_batch([values[i] for i in present],  # type: ignore[misc]
                                         arrow=False, headers=None if heads is None
                                         else [heads[i] for i in present])
            bad = [(present[k], "value skipped by the value format (ignore-parse-errors)")
                   for k in decoded.skipped]
        except Exception:  # a record the codec rejects: each is told apart
            for i in present:
                try:
                    if codec.decode_record(values[i],  # type: ignore[arg-type]
                                           None if heads is None else heads[i]) is None:
                        bad.append((i, "value skipped by the value format "
                                       "(ignore-parse-errors)"))
                except Exception as exc:  # a codec's failure on foreign bytes
                    bad.append((i, _reason(exc)))
        for i, why in bad:
            s.undecodable_values += 1
            key = cols.keys[i]
            self._example(self.state.undecodable, Located(
                cols.partition, cols.offsets[i], f"value: {why}",
                None if key is None else key[:SHOWN_BYTES]))

    def _span(self, role: str, schema_id: SchemaId | None, partition: int, offset: int
              ) -> None:
        if schema_id is not None:
            span = self.state.ids.get((role, schema_id, partition))
            if span is None:
                self.state.ids[(role, schema_id, partition)] = [1, offset, offset]
            else:
                span[0] += 1
                span[1], span[2] = min(span[1], offset), max(span[2], offset)

    def _example(self, into: list[Located], what: Located) -> None:
        """Keep the first `limit` by (partition, offset), as `merge` does."""
        if len(into) < self.state.limit or (what.partition, what.offset) < (
                into[-1].partition, into[-1].offset):
            into.append(what)
            into.sort(key=lambda x: (x.partition, x.offset))
            del into[self.state.limit:]


def _integer(schema_id: SchemaId | None) -> int | None:
    """The id a slot's column holds: an integer id; a GUID is told by the slot's framing."""
    return schema_id if type(schema_id) is int else None


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
