"""The pure half of `keyguard migrate`: records read -> the logical table -> what to write.

No broker here: `keyguard.sparkio.migrate_topic` reads the topic, folds the records here and
writes what `plan_migration` says. The model (docs/concepts/table-model.md):

- A *slot* is one key byte string on one partition: what compaction keeps, its last record
  (its *tail*). A *logical key* is the key bytes the NEW declaration gives a row, so every
  encoding of one row (every phantom) falls into one group, across slots and partitions.
- Which record of a group is the row's current state is decided by what Kafka guarantees:
  within a partition, log order (a later offset supersedes an earlier one; timestamps never
  override it). A rewrite a migration produced carries a header (`MARKER`) naming every record
  of its row it superseded, so it supersedes those wherever they live, and the logical time of
  the record it copies. Records that supersede none of each other (on different partitions,
  written concurrently) are ordered by their logical timestamps; when those tie with different
  outcomes the row is undecidable and the migration stops before writing anything.
- A tombstone a migration writes to retire an old encoding carries the header too, with the
  offset it retires through: it is not a delete of the row. Records of its slot up to that
  offset moved; a record written there later stays a candidate (it is a write the migration
  has not copied yet). So a rerun, a round trip (A -> B -> A) or a chain of migrations killed
  anywhere never reads its own retirements as deletes.
- A record's schema-id framing is part of its encoding: a key written with its id in the bytes
  and the same key written with the id in a header (Confluent's header framing: the bytes the
  bare body) are two key byte strings, and a record is under the new encoding only when its
  ids sit where the new declaration writes them. So changing a side's `framing` is a
  migration like any other: rewrites under the new framing (its headers written), the old
  key byte strings retired (a retirement repeats the key's id header, so that a reader that
  takes the header first reads its key).
- A row whose latest record is a delete has nowhere to move to: its live slots get the delete
  carried over (a tombstone with the copy header), which supersedes what the plan saw and is
  never retired itself.
- A rewrite never claims to supersede a write it did not see: a producer's update that lands
  between the migration's read and its rewrite stays a candidate, and wins by its later time,
  so the next round writes it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from keyguard.formats.errors import DecodeError, KeyguardError
from keyguard.formats.framing import BARE, Frame
from keyguard.formats.lengths import fit_row
from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import UpsertPlan
from keyguard.formats.registry.registration import needs_schema_id
from keyguard.guard.audit.markers import Copy, Position, read_marker, retire_header
from keyguard.guard.offsets import Record

#: The label of a record already under the new key encoding.
NEW = "new"

@dataclass(frozen=True)
class Entry:
    """One record of a slot, as the model needs it."""

    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None
    topic: str = ""
    #: Set on a rewrite a migration produced.
    copy: Copy | None = None
    #: The record's headers (a header framing's schema ids, the migration's marker).
    headers: tuple[tuple[str, bytes | None], ...] = ()

    @property
    def live(self) -> bool:
        return self.value is not None

    @property
    def logical_timestamp(self) -> int:
        """When the state this record holds was written: a rewrite's is its source's."""
        return self.copy.timestamp if self.copy is not None else self.timestamp

    @property
    def position(self) -> Position:
        return self.topic, self.partition, self.offset

    def supersedes(self, other: Entry) -> bool:
        """Whether this record is known to be later than `other` (same logical key): later in
        the same partition's log, or a rewrite that saw it."""
        if other is self:
            return False
        if (other.topic, other.partition) == (self.topic, self.partition) \
                and other.offset < self.offset and self.copy is None:
            return True
        return self.copy is not None and any(
            (t, p) == (other.topic, other.partition) and o >= other.offset
            for t, p, o in self.copy.seen)

    @property
    def where(self) -> str:
        return f"partition {self.partition} offset {self.offset}"


@dataclass
class Slot:
    """One key byte string on one partition: its last record, and its candidates (its
    records no later record of the slot superseded or retired).

    Every record of a slot supersedes or retires the slot's records up to an offset below its
    own (its reach): a producer's, all before it; a rewrite, those it saw; a retirement, those
    through its offset. So a record is a candidate exactly when its offset is above the
    highest reach of the slot (`reach`), wherever the records that reach it were read: what
    lets `SlotPart`s of any stretches of the log merge in any order."""

    tail: Entry
    open: list[Entry]
    reach: int = -1


@dataclass
class Fold:
    """One partition's slots, and what the fold saw. Records are added in offset order; a
    fold goes on where it stopped (`end`) when more records are read."""

    topic: str = ""
    #: The end offset (exclusive) the read stopped at; -1: unknown.
    end: int = -1
    partition: int = -1
    slots: dict[bytes, Slot] = field(default_factory=dict)
    records: int = 0
    null_keys: int = 0

    def add(self, records: Iterable[Record]) -> Fold:
        for rec in records:
            self.records += 1
            if rec.offset >= self.end:
                self.end = rec.offset + 1
            if rec.key is None:
                self.null_keys += 1  # no key: compaction drops it, no table row
                continue
            headers = tuple(getattr(rec, "headers", None) or ())
            marker = read_marker(headers)
            entry = Entry(rec.partition, rec.offset, rec.timestamp, rec.key, rec.value,
                          self.topic, marker if isinstance(marker, Copy) else None, headers)
            #: A tombstone with a marker retires its key's records up to that offset.
            retired_upto = marker if isinstance(marker, int) and rec.value is None else None
            retirement = retired_upto is not None
            reach = min(retired_upto, rec.offset - 1) if retired_upto is not None else _reach(entry)
            slot = self.slots.get(rec.key)
            if slot is None:  # a retirement first (compaction took what it retired) holds none
                self.slots[rec.key] = Slot(entry, [] if retirement else [entry], reach)
                continue
            slot.tail = entry
            slot.reach = max(slot.reach, reach)
            if retired_upto is not None:
                slot.open = [e for e in slot.open if e.offset > retired_upto]
            else:
                slot.open = [e for e in slot.open if not entry.supersedes(e)] + [entry]
        return self

    @property
    def entries(self) -> dict[bytes, Entry]:
        """The last record of every key byte string: the partition as compaction keeps it."""
        return {k: s.tail for k, s in self.slots.items()}


def _reach(entry: Entry) -> int:
    """The highest offset of its own slot that a (non-retirement) record supersedes."""
    if entry.copy is None:
        return entry.offset - 1
    return min(entry.offset - 1, max(
        (o for t, p, o in entry.copy.seen if (t, p) == (entry.topic, entry.partition)),
        default=-1))


@dataclass
class SlotPart:
    """A slot over some stretches of its partition's log: its candidates there, classified,
    the offset of its last record there (`tail`) and the highest reach of its records there
    (see `Slot`). Parts of any stretches `merge`, in any grouping and order, into the part of
    the whole log (the candidates are those above the highest reach of all): what the Spark
    form's tasks fold, each one stretch, and its shuffle combines."""

    tail: int
    open: list[Classified]
    reach: int

    @classmethod
    def of(cls, slot: Slot, decl: Declarations, topic: str) -> SlotPart:
        return cls(slot.tail.offset, [classify(e, decl, topic) for e in slot.open], slot.reach)

    def merge(self, other: SlotPart) -> SlotPart:
        reach = max(self.reach, other.reach)
        return SlotPart(max(self.tail, other.tail),
                        [c for c in (*self.open, *other.open) if c.entry.offset > reach], reach)

    def candidates(self) -> list[Classified]:
        """The candidates, each marked when it is the slot's last record."""
        return [replace(c, tail=c.entry.offset == self.tail) for c in self.open]


@dataclass(frozen=True)
class Declarations:
    """The NEW plan (the key to migrate to) and the OLD plans (the encodings in the topic), in
    the order they are tried; labels name them in reports (`old[0]`, or what the caller says)."""

    new: UpsertPlan
    old: tuple[UpsertPlan, ...]
    labels: tuple[str, ...] = ()

    def label(self, i: int) -> str:
        return self.labels[i] if i < len(self.labels) else f"old[{i}]"


@dataclass(frozen=True)
class Classified:
    """A folded record, decoded: its encoding and the new key bytes of its row (None when a
    tombstone's key lacks a new key column), and for a live record its new value bytes."""

    entry: Entry
    encoding: str
    new_key: bytes | None
    new_value: bytes | None
    #: The record is its slot's last (what compaction keeps), not only a candidate.
    tail: bool = True
    #: Value fields it carries that the table does not declare: rewriting it would drop them.
    lost: tuple[str, ...] = ()
    #: The record's own key schema-id headers (a header framing's), repeated on a tombstone
    #: that retires its key; and the headers a rewrite under the new encoding carries.
    key_headers: tuple[tuple[str, bytes | None], ...] = ()
    new_headers: tuple[tuple[str, bytes], ...] = ()

    @property
    def live_tail(self) -> bool:
        return self.tail and self.entry.live


def classify(entry: Entry, decl: Declarations, topic: str) -> Classified:
    """`entry` decoded under the declarations (see the module docstring)."""
    new = decl.new
    try:
        key_row = new.key_codec.decode_record(entry.key, entry.headers)
        # already the new encoding: the bytes the new table writes for this key (a CHAR key
        # Flink pads), not only bytes it reads, its schema ids where the new framing puts them
        if key_row is not None and _framed_as(new, entry) and \
                new.key_codec.encode(fit_row(new.key_codec.row_type, key_row)) == entry.key:
            own = _key_id_headers(decl, entry)
            if entry.value is None:
                return Classified(entry, NEW, entry.key, None, key_headers=own,
                                  new_headers=new.record_headers(tombstone=True))
            if _decode(new, entry, strict=True) is not None:
                # the key columns the value carries agree with the key; kept as written: a
                # value another producer wrote in equivalent bytes is no reason to rewrite it
                return Classified(entry, NEW, entry.key, entry.value, key_headers=own,
                                  new_headers=new.record_headers())
    except Exception:  # not this encoding; the old declarations are tried next
        pass
    reasons: list[str] = []
    # First an encoding whose key bytes re-encode to themselves, then any that decodes: a
    # producer other than Flink or keyguard may have written equivalent bytes.
    for strict in (True, False):
        for i, old in enumerate(decl.old):
            try:
                row = _decode(old, entry, strict=strict)
            except Exception as exc:  # not this encoding; the next is tried
                if strict:
                    reasons.append(f"{decl.label(i)}: {_reason(exc)}")
                continue
            if row is not None:
                return replace(_under_new(entry, decl.label(i), row, new, topic),
                               lost=_undeclared(old, entry),
                               key_headers=_key_id_headers(decl, entry))
    raise DecodeError(
        f"topic {topic!r} {entry.where}: the {'key' if entry.value is None else 'record'} "
        "decodes under no declared encoding (" + "; ".join(reasons or ["none declared"]) + ")",
        hint="declare every key encoding the topic holds (--old-key-format/--old-option, once "
             "per encoding), and the value format the records carry")


def _decode(plan: UpsertPlan, entry: Entry, *, strict: bool) -> dict[str, Any] | None:
    """The table row of `entry` under `plan`, or an error saying why it is not this encoding:
    a key that does not re-encode to itself (when `strict`), or key columns that the value
    carries (value.fields-include=ALL) with other values than the key."""
    key_row = plan.key_codec.decode_record(entry.key, entry.headers)
    if key_row is None:
        raise DecodeError("skipped by ignore-parse-errors")
    codec = plan.key_codec
    if strict and not _framed_like(plan, entry):
        raise DecodeError("its schema ids are not where this framing puts them")
    # A framing that writes the id in the bytes needs it to re-encode; a header framing's
    # bytes are the bare body
    if strict and not (needs_schema_id(codec) and not codec.has_schema_id
                       and not _frame(codec).id_in_header) \
            and codec.encode(key_row) != entry.key:
        raise DecodeError("the key does not re-encode to its bytes")
    if entry.value is None:
        return plan.layout.table_row(key_row, None)
    value_row = plan.value_codec.decode_record(entry.value, entry.headers)
    if value_row is None:
        raise DecodeError("skipped by ignore-parse-errors")
    layout = plan.layout
    cut = len(layout.key_fields_prefix)
    for col in layout.primary_key:
        if col in layout.value_columns and value_row.get(col) != key_row.get(col[cut:]):
            raise DecodeError(f"key column {col!r} is {key_row.get(col[cut:])!r} in the key "
                              f"and {value_row.get(col)!r} in the value")
    return layout.table_row(key_row, value_row)


def _undeclared(plan: UpsertPlan, entry: Entry) -> tuple[str, ...]:
    """Value fields of `entry` that the table does not declare (a rewrite would drop them)."""
    if entry.value is None:
        return ()
    table = set(plan.layout.table.names)
    return tuple(f for f in plan.value_codec.undeclared_fields(entry.value, entry.headers)
                 if f not in table)


def _frame(codec: Any) -> Frame:
    """A codec's frame for its side: a registry format's own (its `framing` option's), else
    BARE (a format whose bytes carry no schema id)."""
    frame = getattr(codec, "frame", BARE)
    return frame if isinstance(frame, Frame) else BARE


def _key_id_headers(decl: Declarations, entry: Entry) -> tuple[tuple[str, bytes | None], ...]:
    """The record's key schema-id headers, as any declared key framing reads them (the
    encoding that claims a record may be a bare one whose bytes are the same)."""
    found: list[tuple[str, bytes | None]] = []
    for plan in (decl.new, *decl.old):
        found += [h for h in _frame(plan.key_codec).id_headers(entry.headers) if h not in found]
    return tuple(found)


def _sides(plan: UpsertPlan, entry: Entry) -> list[tuple[Any, Frame, bool]]:
    """(codec, frame, present) of the key and the value: a tombstone has no value side."""
    return [(plan.key_codec, _frame(plan.key_codec), True),
            (plan.value_codec, _frame(plan.value_codec), entry.value is not None)]


def _framed_as(plan: UpsertPlan, entry: Entry) -> bool:
    """Whether the record carries exactly the schema-id headers `plan` writes (its bound ids:
    none where the id goes in the bytes), side by side."""
    return all(tuple(frame.id_headers(entry.headers)) == (codec.record_headers() if present
                                                          else ())
               for codec, frame, present in _sides(plan, entry))


def _framed_like(plan: UpsertPlan, entry: Entry) -> bool:
    """Whether the record carries its schema ids in headers exactly on the sides where
    `plan`'s framing puts them there (whatever ids: an old declaration binds none)."""
    return all(bool(frame.id_headers(entry.headers)) == (frame.id_in_header and present)
               for _, frame, present in _sides(plan, entry))


def _under_new(entry: Entry, label: str, row: dict[str, Any], new: UpsertPlan,
               topic: str) -> Classified:
    where = f"topic {topic!r} {entry.where}"
    if entry.value is None:
        try:
            key_row = new.layout.key_row(fit_row(new.layout.table, row))  # as encode() does
            return Classified(entry, label, new.key_codec.encode(key_row), None,
                              new_headers=new.record_headers(tombstone=True))
        except KeyguardError:
            return Classified(entry, label, None, None)  # a tombstone of an unknown new key
    try:
        key, value = new.encode(row, where=where)
    except KeyguardError as exc:
        raise type(exc)(f"{where}: the row cannot be written under the new key: "
                        f"{exc.message}", hint=exc.hint) from None
    return Classified(entry, label, key, value, new_headers=new.record_headers())


def _reason(exc: BaseException) -> str:
    return exc.message if isinstance(exc, KeyguardError) else f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Write:
    """One record to produce: a rewritten row, or a retirement tombstone (value None)."""

    partition: int
    key: bytes
    value: bytes | None
    #: The header that marks it (`Copy.header()` or `retire_header`).
    header: tuple[str, bytes] | None = None
    #: The schema-id headers of its framing: a rewrite's, the new encoding's (none where the
    #: ids go in the bytes); a retirement's, the retired key's own.
    framing: tuple[tuple[str, bytes | None], ...] = ()

    @property
    def headers(self) -> tuple[tuple[str, bytes | None], ...]:
        """Every header the record is written with: its framing's, then its marker."""
        return (*self.framing, self.header) if self.header is not None else self.framing


#: Records of one row as reports show them: (encoding, partition, offset, key bytes).
Shown = tuple[tuple[str, int, int, bytes], ...]


@dataclass(frozen=True)
class RowPlan:
    """What one logical key (a group of candidates with the same new key) needs."""

    rewrite: Write | None = None
    tombstones: tuple[Write, ...] = ()
    live: bool = False
    deleted: bool = False
    in_place: bool = False
    #: Encodings of the row's live slots in the written topic.
    encodings: tuple[str, ...] = ()
    #: The live slots when there are two or more (a phantom).
    phantom: Shown | None = None
    #: The group when its latest state cannot be decided.
    undecided: Shown | None = None
    #: (where, fields) when the rewrite would drop value fields the table does not declare.
    dropping: tuple[str, tuple[str, ...]] | None = None


def plan_row(new_key: bytes, group: Sequence[Classified], partitions: int,
             written: Callable[[Classified], bool] = lambda _c: True) -> RowPlan:
    """What to write for one row so that the written topic holds it once, under `new_key` on
    the partition murmur2 picks among `partitions`; `written(c)`: whether `c` is a record of
    the topic written (not of a cut-over's source)."""
    tails = [c for c in group if c.live_tail and written(c)]
    encodings = tuple(c.encoding for c in tails)
    phantom = _shown(tails) if len(tails) > 1 else None
    top = leaders(group)
    if top is None:
        return RowPlan(encodings=encodings, phantom=phantom, undecided=_shown(group))
    winner = top[0]
    keep: tuple[int, bytes] | None = None
    rewrite: Write | None = None
    in_place = False
    dropping: tuple[str, tuple[str, ...]] | None = None
    if winner.entry.live:
        keep = (partition_for(new_key, partitions), new_key)
        kept = _kept_in_place(tails, keep, top)
        if kept is not None:
            winner, in_place = kept, True
        elif winner.lost:
            dropping = (f"partition {winner.entry.partition} offset {winner.entry.offset}",
                        winner.lost)
        elif winner.new_value is not None:
            copy = Copy(winner.entry.logical_timestamp, _seen(group))
            rewrite = Write(keep[0], new_key, winner.new_value, copy.header(),
                            winner.new_headers)
    # A live row's other slots are retired: their records moved to the rewrite (or to the
    # winner in place), which supersedes them. A deleted row has no record to move them to:
    # its live slots get the delete itself, carried over (a tombstone with the copy header:
    # it supersedes every record of the row the plan saw), never a retirement, which would
    # retire the delete with them and let an older write of the row come back.
    gone = None if winner.entry.live else \
        Copy(winner.entry.logical_timestamp, _seen(group)).header()
    tombstones = tuple(Write(c.entry.partition, c.entry.key, None,
                             gone or retire_header(c.entry.offset), c.key_headers)
                       for c in tails if (c.entry.partition, c.entry.key) != keep)
    return RowPlan(rewrite, tombstones, live=winner.entry.live,
                   deleted=not winner.entry.live and bool(tails), in_place=in_place,
                   encodings=encodings, phantom=phantom, dropping=dropping)


def _kept_in_place(tails: Sequence[Classified], keep: tuple[int, bytes],
                   top: Sequence[Classified]) -> Classified | None:
    """The live record of the new slot `keep` that stays as it is, if any.

    In place only when the new slot's last record is one of the latest itself (the same
    rewrite twice, from a retried task, is two of them): an equal value there is not enough,
    since the other slots are retired next and what stays must be a record that is known to
    be the latest. And only under the new encoding: the same key bytes in another framing (a
    header framing's bare body, the value's id moved) are rewritten."""
    there = [c for c in tails if (c.entry.partition, c.entry.key) == keep]
    if there and there[0].encoding == NEW and any(there[0].entry is c.entry for c in top):
        return there[0]
    return None


@dataclass
class Tally:
    """The counts of a plan, row by row; tallies of disjoint sets of rows `merge` (the Spark
    form adds its executors' tallies up on the driver). Examples are capped at `examples`, the
    smallest kept."""

    examples: int = 3
    live_keys: int = 0
    deleted_keys: int = 0
    in_place: int = 0
    phantom_keys: int = 0
    undecided_keys: int = 0
    dropping_keys: int = 0
    rewrites: int = 0
    tombstones: int = 0
    #: Records the plan was made from, and those among them without a key (the Spark form
    #: counts its read here).
    records: int = 0
    null_keys: int = 0
    encodings: dict[str, int] = field(default_factory=dict)
    touched: set[int] = field(default_factory=set)
    phantoms_shown: list[tuple[bytes, Shown]] = field(default_factory=list)
    undecided_shown: list[tuple[bytes, Shown]] = field(default_factory=list)
    dropping_shown: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def add(self, new_key: bytes, row: RowPlan) -> Tally:
        for name in row.encodings:
            self.encodings[name] = self.encodings.get(name, 0) + 1
        self.live_keys += row.live
        self.deleted_keys += row.deleted
        self.in_place += row.in_place
        if row.phantom is not None:
            self.phantom_keys += 1
            self._show(self.phantoms_shown, (new_key, row.phantom))
        if row.undecided is not None:
            self.undecided_keys += 1
            self._show(self.undecided_shown, (new_key, row.undecided))
        if row.dropping is not None:
            self.dropping_keys += 1
            self._show(self.dropping_shown, row.dropping)
        writes = (*((row.rewrite,) if row.rewrite is not None else ()), *row.tombstones)
        self.rewrites += row.rewrite is not None
        self.tombstones += len(row.tombstones)
        self.touched.update(w.partition for w in writes)
        return self

    def merge(self, other: Tally) -> Tally:
        for name, n in other.encodings.items():
            self.encodings[name] = self.encodings.get(name, 0) + n
        for name in ("live_keys", "deleted_keys", "in_place", "phantom_keys", "undecided_keys",
                     "dropping_keys", "rewrites", "tombstones", "records", "null_keys"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.touched |= other.touched
        for mine, theirs in ((self.phantoms_shown, other.phantoms_shown),
                             (self.undecided_shown, other.undecided_shown),
                             (self.dropping_shown, other.dropping_shown)):
            for item in theirs:
                self._show(mine, item)  # type: ignore[arg-type]
        return self

    def _show(self, shown: list[Any], item: Any) -> None:
        """Keeps the `examples` smallest (by new key, or place): the same examples whatever
        the order the rows were tallied in."""
        shown.append(item)
        shown.sort(key=lambda x: x[0])
        del shown[self.examples:]

    def plan(self, rewrites: tuple[Write, ...] = (), tombstones: tuple[Write, ...] = (), *,
             held: bool = False) -> MigrationPlan:
        """The plan these counts describe; `held`: its writes stay where they were planned
        (the Spark form's executors), only counted here."""
        return MigrationPlan(rewrites, tombstones, self.live_keys, self.deleted_keys,
                             dict(self.encodings), self.phantom_keys, self.in_place,
                             tuple(self.phantoms_shown), tuple(self.undecided_shown),
                             self.undecided_keys, tuple(self.dropping_shown),
                             dropping_keys=self.dropping_keys, rewrite_count=self.rewrites,
                             tombstone_count=self.tombstones, touched=tuple(sorted(self.touched)),
                             held=held)


@dataclass(frozen=True)
class MigrationPlan:
    """What a round writes: first every rewrite, then, once all are acknowledged, the
    retirement tombstones. In the Spark form the writes are `held` in the executors that
    planned them: `rewrites` and `tombstones` are empty there, and the counts say how many."""

    rewrites: tuple[Write, ...]
    tombstones: tuple[Write, ...]
    #: Logical keys live after the migration, and deleted by their latest record.
    live_keys: int
    deleted_keys: int
    #: Live records per encoding, and logical keys live under two or more key byte strings.
    encodings: Mapping[str, int]
    phantom_keys: int
    #: Live rows already under the new key, on their partition, with the value to write.
    in_place: int
    #: Examples of phantom groups: (new key, [(encoding, partition, offset, key bytes)]).
    examples: tuple[tuple[bytes, Shown], ...] = ()
    #: Rows whose latest state cannot be decided (concurrent records, equal times, different
    #: outcomes): a migration writes nothing while there is one. Examples as above.
    undecided: tuple[tuple[bytes, Shown], ...] = ()
    undecided_keys: int = 0
    #: Rows whose rewrite would drop value fields the table does not declare: (where, fields)
    #: examples, and how many rows; a migration writes nothing while there is one.
    dropping: tuple[tuple[str, tuple[str, ...]], ...] = ()
    dropping_keys: int = 0
    rewrite_count: int = 0
    tombstone_count: int = 0
    touched: tuple[int, ...] = ()
    held: bool = False

    @property
    def empty(self) -> bool:
        return not (self.rewrite_count or self.tombstone_count)

    def partitions_touched(self) -> tuple[int, ...]:
        return self.touched


def leaders(group: Sequence[Classified]) -> list[Classified] | None:
    """The records of a group that hold the row's current state (see the module docstring):
    those no other record supersedes, with the newest logical time, all with the same outcome
    (several when the same state was written twice); None when it cannot be decided."""
    top = [c for c in group if not any(d.entry.supersedes(c.entry) for d in group)]
    if len(top) > 1:
        newest = max(c.entry.logical_timestamp for c in top)
        top = [c for c in top if c.entry.logical_timestamp == newest]
        if len({(c.entry.live, c.new_value) for c in top}) > 1:
            return None
    return top or None



def _seen(group: Sequence[Classified]) -> tuple[Position, ...]:
    """The last offset of the group on each (topic, partition)."""
    last: dict[tuple[str, int], int] = {}
    for c in group:
        at = (c.entry.topic, c.entry.partition)
        last[at] = max(last.get(at, -1), c.entry.offset)
    return tuple((t, p, o) for (t, p), o in sorted(last.items()))


def _shown(group: Sequence[Classified]) -> Shown:
    """The records of a group as a report shows them, by partition and offset."""
    return tuple(sorted(((c.encoding, c.entry.partition, c.entry.offset, c.entry.key)
                         for c in group), key=lambda r: (r[1], r[2])))


def group_by_new_key(candidates: Iterable[Classified]) -> dict[bytes, list[Classified]]:
    """Candidates by the new key of their row (a tombstone without one belongs to none)."""
    groups: dict[bytes, list[Classified]] = {}
    for c in candidates:
        if c.new_key is not None:
            groups.setdefault(c.new_key, []).append(c)
    return groups


def plan_migration(source: Sequence[Classified], partitions: int, *,
                   target: Sequence[Classified] | None = None, examples: int = 3,
                   ) -> MigrationPlan:
    """What to write so that the target topic (the source itself when `target` is None) holds
    each row once, under the new key on the partition murmur2 picks among `partitions`
    (`plan_row`, row by row).

    `source` (and `target`) are the candidates of the topic's slots, classified. With a
    separate target (a cut-over) the source is never written: every live target slot that is
    not a row's new key on its partition is retired, so the target ends equal to the re-keyed
    source table.
    """
    written = source if target is None else target
    in_written = {id(c) for c in written}
    tally = Tally(examples)
    rewrites: list[Write] = []
    tombstones: list[Write] = []
    for new_key, group in group_by_new_key([*source, *(target or ())]).items():
        row = plan_row(new_key, group, partitions, lambda c: id(c) in in_written)
        tally.add(new_key, row)
        if row.rewrite is not None:
            rewrites.append(row.rewrite)
        tombstones += row.tombstones
    return tally.plan(tuple(rewrites), tuple(tombstones))


@dataclass(frozen=True)
class Verification:
    """The topic after a migration: a row per logical key, each under the new encoding, and
    nothing the model would still write."""

    topic: str
    live_keys: int
    #: Logical keys still live under two or more key byte strings.
    phantom_keys: int
    #: Live records under an old encoding, or under the new one on another partition than
    #: murmur2's.
    old_encoded: int
    misplaced: int
    examples: tuple[tuple[bytes, tuple[tuple[str, int, int, bytes], ...]], ...] = ()
    #: `keyguard audit`'s counts on the target under the new declaration (phantom keys,
    #: misplaced records, missed deletes, sides whose live records carry their schema ids in
    #: two framings), when the audit ran: the same rules as the command.
    audit: tuple[int, int, int, int] | None = None
    #: Records the model of the table would still write (a write that arrived and is not
    #: copied yet), and rows it cannot decide.
    pending: int = 0
    undecided_keys: int = 0

    @property
    def clean(self) -> bool:
        return not (self.phantom_keys or self.old_encoded or self.misplaced or self.pending
                    or self.undecided_keys
                    or (self.audit is not None and any(self.audit)))


@dataclass
class Checked:
    """The verification's counts, row by row; tallies of disjoint rows `merge`."""

    live_keys: int = 0
    phantom_keys: int = 0
    old_encoded: int = 0
    misplaced: int = 0
    pending: int = 0
    undecided_keys: int = 0
    examples: list[tuple[bytes, Shown]] = field(default_factory=list)

    def add(self, new_key: bytes, group: Sequence[Classified], partitions: int) -> Checked:
        """One row: its live slots (the compacted view) and what the model would still
        write for it."""
        alive = [c for c in group if c.live_tail]
        self.live_keys += bool(alive)
        if len(alive) > 1:
            self.phantom_keys += 1
            self.examples = sorted([*self.examples, (new_key, _shown(alive))],
                                   key=lambda x: x[0])[:3]
        self.old_encoded += sum(c.encoding != NEW for c in alive)
        self.misplaced += sum(c.encoding == NEW and c.entry.partition
                              != partition_for(c.entry.key, partitions) for c in alive)
        row = plan_row(new_key, group, partitions)
        self.pending += (row.rewrite is not None) + len(row.tombstones)
        self.undecided_keys += row.undecided is not None
        return self

    def merge(self, other: Checked) -> Checked:
        for name in ("live_keys", "phantom_keys", "old_encoded", "misplaced", "pending",
                     "undecided_keys"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.examples = sorted(self.examples + other.examples, key=lambda x: x[0])[:3]
        return self

    def verification(self, topic: str) -> Verification:
        return Verification(topic, self.live_keys, self.phantom_keys, self.old_encoded,
                            self.misplaced, tuple(self.examples), pending=self.pending,
                            undecided_keys=self.undecided_keys)


def verify_entries(topic: str, classified: Sequence[Classified], partitions: int
                   ) -> Verification:
    """The verification's verdict from a topic's classified candidates: the compacted view
    (live tails) holds every row once, under the new key, on its partition, and the model has
    nothing left to write."""
    checked = Checked()
    for new_key, group in group_by_new_key(classified).items():
        checked.add(new_key, group, partitions)
    return checked.verification(topic)
