"""The pure half of `keyguard migrate`: folded records -> what to rewrite and what to delete.

No broker here: `keyguard.sparkio.migrate_topic` reads the topic, hands the folded records to
`plan_migration`, and writes what it says. A compacted topic is a table keyed by exact key
bytes, one table per partition (compaction never folds across partitions), so the fold keeps
the last record of every (partition, key bytes): later offset wins, a tombstone deletes.

Each kept record's key is identified by its encoding: the NEW declaration's when its key bytes
decode and re-encode to themselves under it (already migrated), else the first OLD declaration
that decodes the record. Its logical key is the key bytes the NEW declaration gives its row, so
every encoding of one row (every phantom) falls into one group. In a group the latest record
decides: the later timestamp, then the higher offset, then the higher partition. A live winner
is written under the new key on the partition murmur2 picks (skipped when exactly that record
is already live there), and every other live record of the group gets a tombstone on its own
partition; a tombstone winner deletes the group. Tombstones whose logical key cannot be known
(an old key that lacks a new key column) decide nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from keyguard.formats.errors import DecodeError, KeyguardError
from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import UpsertPlan
from keyguard.formats.registry.registration import needs_schema_id
from keyguard.guard.offsets import Record

#: The label of a record already under the new key encoding.
NEW = "new"


@dataclass(frozen=True)
class Entry:
    """The last record of one key byte string in one partition."""

    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None

    @property
    def live(self) -> bool:
        return self.value is not None

    @property
    def order(self) -> tuple[int, int, int]:
        """Which of two records is the later: timestamp, then offset, then partition."""
        return self.timestamp, self.offset, self.partition

    @property
    def where(self) -> str:
        return f"partition {self.partition} offset {self.offset}"


@dataclass
class Fold:
    """One partition's last record per key bytes, and what the fold saw."""

    #: The end offset (exclusive) the read stopped at; -1: unknown.
    end: int = -1
    entries: dict[bytes, Entry] = field(default_factory=dict)
    records: int = 0
    null_keys: int = 0

    def add(self, records: Iterable[Record]) -> Fold:
        for rec in records:
            self.records += 1
            if rec.key is None:
                self.null_keys += 1  # no key: compaction drops it, no table row
                continue
            self.entries.pop(rec.key, None)
            self.entries[rec.key] = Entry(rec.partition, rec.offset, rec.timestamp, rec.key,
                                          rec.value)
        return self


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


def classify(entry: Entry, decl: Declarations, topic: str) -> Classified:
    """`entry` decoded under the declarations (see the module docstring)."""
    new = decl.new
    try:
        key_row = new.key_codec.decode(entry.key)
        if key_row is not None and new.key_codec.encode(key_row) == entry.key:
            if entry.value is None:
                return Classified(entry, NEW, entry.key, None)
            if new.decode(entry.key, entry.value) is not None:
                # kept as written: a value another producer wrote in equivalent bytes is no
                # reason to rewrite the row
                return Classified(entry, NEW, entry.key, entry.value)
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
                return _under_new(entry, decl.label(i), row, new, topic)
    raise DecodeError(
        f"topic {topic!r} {entry.where}: the {'key' if entry.value is None else 'record'} "
        "decodes under no declared encoding (" + "; ".join(reasons or ["none declared"]) + ")",
        hint="declare every key encoding the topic holds (--old-key-format/--old-option, once "
             "per encoding), and the value format the records carry")


def _decode(plan: UpsertPlan, entry: Entry, *, strict: bool) -> dict[str, Any] | None:
    """The table row of `entry` under `plan`, or an error saying why it is not this encoding:
    a key that does not re-encode to itself (when `strict`), or key columns that the value
    carries (value.fields-include=ALL) with other values than the key."""
    key_row = plan.key_codec.decode(entry.key)
    if key_row is None:
        raise DecodeError("skipped by ignore-parse-errors")
    codec = plan.key_codec
    if strict and not (needs_schema_id(codec) and not codec.has_schema_id) \
            and codec.encode(key_row) != entry.key:  # type: ignore[attr-defined]
        raise DecodeError("the key does not re-encode to its bytes")
    if entry.value is None:
        return plan.layout.table_row(key_row, None)
    value_row = plan.value_codec.decode(entry.value)
    if value_row is None:
        raise DecodeError("skipped by ignore-parse-errors")
    layout = plan.layout
    cut = len(layout.key_fields_prefix)
    for col in layout.primary_key:
        if col in layout.value_columns and value_row.get(col) != key_row.get(col[cut:]):
            raise DecodeError(f"key column {col!r} is {key_row.get(col[cut:])!r} in the key "
                              f"and {value_row.get(col)!r} in the value")
    return layout.table_row(key_row, value_row)


def _under_new(entry: Entry, label: str, row: dict[str, Any], new: UpsertPlan,
               topic: str) -> Classified:
    where = f"topic {topic!r} {entry.where}"
    if entry.value is None:
        try:
            return Classified(entry, label, new.key_codec.encode(new.layout.key_row(row)), None)
        except KeyguardError:
            return Classified(entry, label, None, None)  # a tombstone of an unknown new key
    try:
        key, value = new.encode(row, where=where)
    except KeyguardError as exc:
        raise type(exc)(f"{where}: the row cannot be written under the new key: "
                        f"{exc.message}", hint=exc.hint) from None
    return Classified(entry, label, key, value)


def _reason(exc: BaseException) -> str:
    return exc.message if isinstance(exc, KeyguardError) else f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Write:
    """One record to produce: a rewritten row, or a tombstone (value None)."""

    partition: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class MigrationPlan:
    """What a run writes: first every rewrite, then, once all are acknowledged, the tombstones."""

    rewrites: tuple[Write, ...]
    tombstones: tuple[Write, ...]
    #: Logical keys live after the migration, and deleted by a later tombstone.
    live_keys: int
    deleted_keys: int
    #: Live records per encoding, and logical keys live under two or more key byte strings.
    encodings: Mapping[str, int]
    phantom_keys: int
    #: Live rows already under the new key, on their partition, with the value to write.
    in_place: int
    #: Examples of phantom groups: (new key, [(encoding, partition, offset, key bytes)]).
    examples: tuple[tuple[bytes, tuple[tuple[str, int, int, bytes], ...]], ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.rewrites or self.tombstones)

    def partitions_touched(self) -> tuple[int, ...]:
        return tuple(sorted({w.partition for w in (*self.rewrites, *self.tombstones)}))


def plan_migration(source: Sequence[Classified], partitions: int, *,
                   target: Sequence[Classified] | None = None, examples: int = 3,
                   ) -> MigrationPlan:
    """What to write so that `target` (the source itself when None) holds each row of the source
    once, under the new key on the partition murmur2 picks among `partitions`.

    With a separate target (a cut-over) the source is left as it is; every live target record
    that is not a row's new key on its partition gets a tombstone, so the target ends equal to
    the re-keyed source table.
    """
    groups: dict[bytes, list[Classified]] = {}
    encodings: dict[str, int] = {}
    for c in source:
        if c.entry.live:
            encodings[c.encoding] = encodings.get(c.encoding, 0) + 1
        if c.new_key is not None:
            groups.setdefault(c.new_key, []).append(c)
    in_target = {(c.entry.partition, c.entry.key): c for c in (source if target is None
                                                               else target)}
    rewrites: list[Write] = []
    keep: set[tuple[int, bytes]] = set()
    live = deleted = in_place = phantoms = 0
    shown: list[tuple[bytes, tuple[tuple[str, int, int, bytes], ...]]] = []
    for new_key, group in groups.items():
        alive = [c for c in group if c.entry.live]
        if not alive:
            continue  # nothing live: nothing to write, nothing to delete
        if len(alive) > 1:
            phantoms += 1
            if len(shown) < examples:
                shown.append((new_key, tuple((c.encoding, c.entry.partition, c.entry.offset,
                                              c.entry.key) for c in alive)))
        winner = max(group, key=lambda c: c.entry.order)
        if not winner.entry.live:
            deleted += 1
            continue
        live += 1
        at = (partition_for(new_key, partitions), new_key)
        keep.add(at)
        there = in_target.get(at)
        if there is not None and there.entry.live and there.entry.value == winner.new_value:
            in_place += 1
            continue
        rewrites.append(Write(at[0], new_key, winner.new_value))
    doomed = (c for c in (source if target is None else target) if c.entry.live)
    tombstones = tuple(Write(c.entry.partition, c.entry.key, None) for c in doomed
                       if (c.entry.partition, c.entry.key) not in keep)
    return MigrationPlan(tuple(rewrites), tombstones, live, deleted, encodings, phantoms,
                         in_place, tuple(shown))


@dataclass(frozen=True)
class Verification:
    """The topic after a migration: a row per logical key, each under the new encoding."""

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
    #: misplaced records), when the audit ran: the same rules as the command.
    audit: tuple[int, int] | None = None

    @property
    def clean(self) -> bool:
        return not (self.phantom_keys or self.old_encoded or self.misplaced
                    or (self.audit is not None and any(self.audit)))


def verify_entries(topic: str, classified: Sequence[Classified], partitions: int
                   ) -> Verification:
    """The verification's verdict from a topic's folded, classified records."""
    alive = [c for c in classified if c.entry.live]
    groups: dict[bytes | None, list[Classified]] = {}
    for c in alive:
        groups.setdefault(c.new_key, []).append(c)
    phantoms = [(k, g) for k, g in groups.items() if k is not None and len(g) > 1]
    return Verification(
        topic=topic,
        live_keys=len(groups),
        phantom_keys=len(phantoms),
        old_encoded=sum(c.encoding != NEW for c in alive),
        misplaced=sum(c.encoding == NEW and c.entry.partition != partition_for(c.entry.key,
                                                                               partitions)
                      for c in alive),
        examples=tuple((k, tuple((c.encoding, c.entry.partition, c.entry.offset, c.entry.key)
                                 for c in g)) for k, g in phantoms[:3] if k is not None),
    )
