"""The column-wise fold (`keyguard.guard.audit.state.Folder`) against a straightforward fold that
takes one record at a time: the same state, phantoms, missed deletes and numbers for any
records, batches and partition order (hypothesis), json and avro-confluent keys alike, and
avro-confluent keys and values whose producers disagree on the framing (the schema id in the
bytes, in a record header, in both, or nowhere)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats.codec import format_factory
from keyguard.formats.framing import CONFLUENT, NOWHERE, SchemaId
from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import UpsertPlan, resolve_plan
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.judge import AuditFacts, framings, judge, missed_deletes, phantoms
from keyguard.guard.audit.markers import read_marker, retire_header
from keyguard.guard.audit.slots import Entry, Slots
from keyguard.guard.audit.state import (
    SHOWN_BYTES,
    AuditState,
    Folder,
    Located,
    PartitionStats,
    _reason,
    fingerprint,
    logical_key,
    logical_keys,
)
from keyguard.guard.offsets import Record as Rec
from keyguard.guard.offsets import RecordColumns

PARTITIONS = 3
COLUMNS = "a BIGINT, b STRING, v STRING"


class OneByOne:
    """The fold in its plainest form: each record in turn, one Entry object per key."""

    def __init__(self, plan: UpsertPlan, partitions: int) -> None:
        self.plan = plan
        self.partitions = partitions
        self.key_frame = format_factory(plan.key_format).frame_of(plan.key_options, "key")
        self.value_frame = format_factory(plan.value_format).frame_of(plan.value_options,
                                                                       "value")
        self.stats: dict[int, PartitionStats] = {}
        self.entries: dict[tuple[bytes, int], Entry] = {}
        self.ids: dict[tuple[str, SchemaId, int], list[int]] = {}
        self.undecodable: list[Located] = []
        self.null_keys: list[Located] = []
        self.misplaced: list[Located] = []

    def add(self, r: Rec) -> None:
        s = self.stats.setdefault(r.partition, PartitionStats())
        s.records += 1
        s.first_offset = r.offset if s.first_offset < 0 else min(s.first_offset, r.offset)
        s.last_offset = max(s.last_offset, r.offset)
        value_place = NOWHERE
        if r.value is None:
            s.tombstones += 1
        else:
            s.value_bytes += len(r.value)
            if self.value_frame.carries_schema_id:
                value_id, value_place = self.value_frame.locate(r.value, r.headers)
                s.value_framings[value_place] += 1
                self._id("value", value_id, r)
            why = None
            try:
                if self.plan.value_codec.decode_record(r.value, r.headers) is None:
                    why = "value skipped by the value format (ignore-parse-errors)"
            except Exception as exc:
                why = _reason(exc)
            if why is not None:
                s.undecodable_values += 1
                self._example(self.undecodable, Located(
                    r.partition, r.offset, f"value: {why}",
                    None if r.key is None else r.key[:SHOWN_BYTES]))
        if r.key is None:
            s.null_keys += 1
            self._example(self.null_keys, Located(r.partition, r.offset, "null key"))
            return
        s.key_bytes += len(r.key)
        key_id, key_place = self.key_frame.locate(r.key, r.headers)
        if self.key_frame.carries_schema_id:
            s.key_framings[key_place] += 1
        self._id("key", key_id, r)
        expected = partition_for(r.key, self.partitions)
        misplaced = expected != r.partition
        if misplaced:
            s.misplaced += 1
            self._example(self.misplaced, Located(
                r.partition, r.offset, f"on partition {r.partition}, murmur2 picks {expected}",
                r.key[:SHOWN_BYTES], expected))
        slot = (fingerprint(r.key), r.partition)
        before = self.entries.get(slot)
        if before is not None and before.offset > r.offset:
            return
        logical = before.logical if before is not None else self._logical(r, s)
        retired = r.value is None and isinstance(read_marker(r.headers), int)
        self.entries[slot] = Entry(logical, r.value is not None, r.offset,
                                   key_id if type(key_id) is int else None, misplaced,
                                   retired, r.timestamp, key_place, value_place)

    def _logical(self, r: Rec, s: PartitionStats) -> bytes | None:
        assert r.key is not None
        row, why = None, "key skipped by the key format (ignore-parse-errors)"
        try:
            row = self.plan.key_codec.decode_record(r.key, r.headers)
        except Exception as exc:
            why = _reason(exc)
        if row is None and self.key_frame.carries_schema_id \
                and self.key_frame.schema_id(r.key, r.headers) is None:
            seen = {i for (role, i, _) in self.ids if role == "key"}
            ints = sorted((i for i in seen if isinstance(i, int)), reverse=True)
            for schema_id in [*ints, *sorted((i for i in seen if not isinstance(i, int)),
                                             key=str, reverse=True)]:
                try:
                    data, added = self.key_frame.wrap(schema_id, r.key)
                    row = self.plan.key_codec.decode_record(data, added)
                except Exception:
                    continue
                if row is not None:
                    break
            if row is not None:
                s.unframed_keys += 1
        if row is None:
            s.undecodable_keys += 1
            self._example(self.undecodable, Located(r.partition, r.offset, f"key: {why}",
                                                    r.key[:SHOWN_BYTES]))
            return None
        return fingerprint(logical_key(row).encode())

    def _id(self, role: str, schema_id: SchemaId | None, r: Rec) -> SchemaId | None:
        if schema_id is not None:
            span = self.ids.setdefault((role, schema_id, r.partition), [0, r.offset, r.offset])
            span[0] += 1
            span[1], span[2] = min(span[1], r.offset), max(span[2], r.offset)
        return schema_id

    def _example(self, into: list[Located], what: Located) -> None:
        into.append(what)
        into.sort(key=lambda x: (x.partition, x.offset))
        del into[5:]

    def state(self) -> AuditState:
        out = AuditState(self.partitions)
        out.stats, out.ids = self.stats, self.ids
        out.undecodable, out.null_keys, out.misplaced = (self.undecodable, self.null_keys,
                                                         self.misplaced)
        for (fp, p), e in self.entries.items():
            out.slots.setdefault(p, Slots()).put(fp, e)
        return out


def _groups(state: AuditState, keep: Any) -> list[list[tuple[bytes, int, Entry]]]:
    """Entries by logical key, in the state's order: the judge's grouping done plainly."""
    by: dict[bytes, list[tuple[bytes, int, Entry]]] = {}
    for (kf, p), e in state.entries.items():
        if e.logical is not None and keep(e):
            by.setdefault(e.logical, []).append((kf, p, e))
    return list(by.values())


def _plain_phantoms(state: AuditState) -> tuple[int, int, list[list[tuple[int, int]]]]:
    keys = orphaned = 0
    found = []
    for group in _groups(state, lambda e: e.live):
        if len({kf for kf, _, _ in group}) >= 2:
            keys += 1
            orphaned += len(group) - 1
            found.append(sorted((p, e.offset) for _, p, e in group))
    return keys, orphaned, sorted(found)[:5]


def _plain_missed(state: AuditState) -> tuple[int, list[tuple[int, int, int, int]]]:
    def later(a: Entry, pa: int, b: Entry, pb: int) -> bool:
        if pa == pb:
            return a.offset > b.offset
        return a.timestamp >= 0 and b.timestamp >= 0 and a.timestamp > b.timestamp

    keys, found = 0, []
    for group in _groups(state, lambda e: e.live or not e.retired):
        live = [(p, e) for _, p, e in group if e.live]
        gone = [(p, e) for _, p, e in group if not e.live]
        pair = next(((d, x) for d in gone for x in live if later(d[1], d[0], x[1], x[0])),
                    None)
        if pair is not None:
            keys += 1
            (dp, d), (lp, x) = pair
            found.append((dp, d.offset, lp, x.offset))
    return keys, sorted(found)[:5]


def _comparable(s: AuditState) -> tuple[object, ...]:
    return (dict(sorted(s.stats.items())), s.entries, s.ids, s.undecodable, s.null_keys,
            s.misplaced)


def _json_plan() -> UpsertPlan:
    return resolve_plan(parse_columns(COLUMNS), {"topic": "orders", "primary-key": "a,b",
                                                 "key.format": "json", "value.format": "json"})


def _json_key(a: int, b: str, reverse: bool) -> bytes:
    fields = [("b", b), ("a", a)] if reverse else [("a", a), ("b", b)]
    return json.dumps(dict(fields), separators=(",", ":")).encode()


#: One change: (a, b, key encoding, value kind, misplaced, retirement marker, timestamp).
_changes = st.lists(st.tuples(
    st.integers(0, 6), st.sampled_from(["x", "y", "é"]),
    st.sampled_from(["plain", "other", "garbage", "null"]),
    st.sampled_from(["value", "tombstone", "garbage"]), st.booleans(), st.booleans(),
    st.integers(-1, 5)), max_size=60)


def _records(spec: list[tuple[Any, ...]], key_of: Any) -> list[Rec]:
    next_offset = dict.fromkeys(range(PARTITIONS), 0)
    out = []
    for a, b, kind, value, misplace, retire, ts in spec:
        key = None if kind == "null" else (b"\x00\x01{garbage" if kind == "garbage"
                                            else key_of(a, b, kind == "other"))
        body = (None if value == "tombstone" else b"{not json" if value == "garbage"
                else json.dumps({"a": a, "b": b, "v": "1"}).encode())
        p = (partition_for(key, PARTITIONS) + misplace) % PARTITIONS if key else a % PARTITIONS
        headers = (retire_header(0),) if retire and body is None else ()
        out.append(Rec(p, next_offset[p], ts, key, body, headers))
        next_offset[p] += 1
    return out


def _by_partition(records: Sequence[Rec], size: int) -> Iterator[RecordColumns]:
    for p in range(PARTITIONS):
        mine = [r for r in records if r.partition == p]
        for i in range(0, len(mine), size):
            part = mine[i:i + size]
            yield RecordColumns(p, [r.offset for r in part], [r.timestamp for r in part],
                                [r.key for r in part], [r.value for r in part],
                                [r.headers for r in part])


def _one_by_one(plan: UpsertPlan, records: Sequence[Rec]) -> AuditState:
    reference = OneByOne(plan, PARTITIONS)
    for r in records:
        reference.add(r)
    return reference.state()


def _check(plan: UpsertPlan, records: list[Rec], rnd: Any) -> None:
    # Partition after partition, as the audit reads.
    expected = _one_by_one(plan, sorted(records, key=lambda r: r.partition))
    size = rnd.randint(1, 9)
    columns = Folder(plan, PARTITIONS)
    for cols in _by_partition(records, size):
        columns.add_columns(cols)
    assert _comparable(columns.state) == _comparable(expected)
    assert phantoms(columns.state) == phantoms(expected)
    assert missed_deletes(columns.state) == missed_deletes(expected)
    found = phantoms(columns.state)
    assert (found.keys, found.orphaned, [[(x.partition, x.offset) for x in g]
                                         for g in found.examples]) == _plain_phantoms(expected)
    missed = missed_deletes(columns.state)
    assert (missed.keys, [(d.partition, d.offset, x.partition, x.offset)
                          for d, x in missed.examples]) == _plain_missed(expected)
    facts = AuditFacts("orders", PARTITIONS, plan.key_format, plan.value_format)
    totals = judge(columns.state, facts, phantoms(columns.state), {}).data["totals"]
    assert totals == judge(expected, facts, phantoms(expected), {}).data["totals"]
    entries = expected.entries
    assert totals["distinct_keys"] == len({fp for fp, _ in entries})
    assert totals["live_keys"] == sum(e.live for e in entries.values())
    assert totals["misplaced_live"] == sum(e.live and e.misplaced for e in entries.values())
    # Records in batches of any size that interleave partitions: the same state.
    interleaved = sorted(records, key=lambda r: (r.offset, rnd.random()))
    rows = Folder(plan, PARTITIONS)
    for i in range(0, len(interleaved), size):
        rows.add(interleaved[i:i + size])
    expected = _one_by_one(plan, interleaved)  # an unframed key sees the ids read before it
    assert _comparable(rows.state) == _comparable(expected)
    assert phantoms(rows.state) == phantoms(expected)


@settings(max_examples=80, deadline=None)
@given(_changes, st.randoms(use_true_random=False))
def test_the_column_wise_fold_is_the_fold_of_each_record_json(spec, rnd) -> None:  # type: ignore[no-untyped-def]
    _check(_json_plan(), _records(spec, _json_key), rnd)


@pytest.fixture(scope="module")
def avro_plan() -> Iterator[UpsertPlan]:
    scope = f"fold-reference-{uuid.uuid4().hex}"
    plan = open_plan(parse_columns(COLUMNS),
                     {"topic": "orders", "primary-key": "a,b", "key.format": "avro-confluent",
                      "value.format": "json", "key.avro-confluent.url": f"mock://{scope}"})
    bind_plan_schema_ids(plan)
    yield plan
    MockRegistry.drop_scope(scope)


@settings(max_examples=40, deadline=None)
@given(_changes, st.randoms(use_true_random=False))
def test_the_column_wise_fold_is_the_fold_of_each_record_unframed_avro(avro_plan, spec,  # type: ignore[no-untyped-def]
                                                                        rnd) -> None:
    """`other` keys are the bare Avro body: decoded under the ids seen before them."""
    def key_of(a: int, b: str, unframed: bool) -> bytes:
        framed = avro_plan.key_codec.encode({"a": a, "b": b})
        return CONFLUENT.body(framed) if unframed else framed

    _check(avro_plan, _records(spec, key_of), rnd)


@pytest.fixture(scope="module")
def framed_plans() -> Iterator[tuple[UpsertPlan, UpsertPlan]]:
    """Keys and values in Confluent's wire format, and the same schemas in its header framing
    (the schema GUID in `__key_schema_id` / `__value_schema_id`): one registry."""
    scope = f"fold-framings-{uuid.uuid4().hex}"

    def plan(framing: str) -> UpsertPlan:
        built = open_plan(parse_columns(COLUMNS), {
            "topic": "orders", "primary-key": "a,b", "key.format": "avro-confluent",
            "value.format": "avro-confluent", "key.avro-confluent.url": f"mock://{scope}",
            "value.avro-confluent.url": f"mock://{scope}",
            "key.avro-confluent.framing": framing, "value.avro-confluent.framing": framing})
        bind_plan_schema_ids(built)
        return built

    yield plan("confluent"), plan("confluent-header")
    MockRegistry.drop_scope(scope)


#: One change: (a, b, key framing, value framing or a tombstone, misplaced, timestamp).
_framed_changes = st.lists(st.tuples(
    st.integers(0, 6), st.sampled_from(["x", "y"]),
    st.sampled_from(["id", "header", "both", "none"]),
    st.sampled_from(["id", "header", "tombstone"]), st.booleans(), st.integers(-1, 5)),
    max_size=50)


def _framed_records(spec: list[tuple[Any, ...]], prefix: UpsertPlan, header: UpsertPlan
                    ) -> list[Rec]:
    """Records whose producers disagree: a key (value) in the bytes, in its header, the same
    id in both, or (keys) the bare body without its header."""
    key_id = prefix.key_codec.schema_id  # type: ignore[attr-defined]
    next_offset = dict.fromkeys(range(PARTITIONS), 0)
    out = []
    for a, b, key_framing, value_framing, misplace, ts in spec:
        row = {"a": a, "b": b, "v": "1"}
        (pk, pv), (hk, hv) = prefix.encode(row), header.encode(row)
        key, headers = {
            "id": (pk, ()), "header": (hk, header.key_codec.record_headers()),
            "both": (pk, (("__key_schema_id", b"\x00" + key_id.to_bytes(4, "big")),)),
            "none": (hk, ())}[key_framing]
        value = None if value_framing == "tombstone" else pv if value_framing == "id" else hv
        if value_framing == "header":
            headers += header.value_codec.record_headers()
        p = (partition_for(key, PARTITIONS) + misplace) % PARTITIONS
        out.append(Rec(p, next_offset[p], ts, key, value, headers))
        next_offset[p] += 1
    return out


@settings(max_examples=40, deadline=None)
@given(_framed_changes, st.randoms(use_true_random=False))
def test_the_column_wise_fold_is_the_fold_of_each_record_in_mixed_framings(  # type: ignore[no-untyped-def]
        framed_plans, spec, rnd) -> None:
    prefix, header = framed_plans
    records = _framed_records(spec, prefix, header)
    _check(prefix, records, rnd)  # Confluent's readers read every framing
    state = Folder(prefix, PARTITIONS)
    for cols in _by_partition(records, 4):
        state.add_columns(cols)
    counts = framings(state.state)
    wrote = {kind: sum(c[2] == kind for c in spec) for kind in ("none", "header", "id", "both")}
    if spec:
        assert {k: n for k, n in counts["key"]["records"].items() if n} == \
            {k: n for k, n in wrote.items() if n}
    values = {kind: sum(c[3] == kind for c in spec) for kind in ("header", "id")}
    if any(values.values()):
        assert {k: n for k, n in counts["value"]["records"].items() if n} == \
            {k: n for k, n in values.items() if n}


def test_a_plain_topic_folds_its_keys_column_wise() -> None:
    """Keys of plain values give the same logical key as the row-by-row text."""
    t = [Rec(partition_for(_json_key(i, "ü\"x", False), PARTITIONS), 0, 0,
             _json_key(i, "ü\"x", False), b'{"a":1,"b":"x","v":"1"}') for i in range(3)]
    folder = Folder(_json_plan(), PARTITIONS)
    folder.add(t)
    logicals = {e.logical for e in folder.state.entries.values()}
    assert logicals == {fingerprint(logical_key({"a": i, "b": "ü\"x"}).encode())
                        for i in range(3)}


_plain = st.one_of(st.none(), st.booleans(), st.integers(), st.text(),
                   st.floats(allow_nan=True, allow_infinity=True), st.decimals(allow_nan=False),
                   st.dates(), st.binary(max_size=4))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b%s", "ü \"q\"", "c"]), unique=True, max_size=3),
       st.data())
def test_column_wise_logical_keys_are_logical_key_of_each_row(names, data) -> None:  # type: ignore[no-untyped-def]
    length = data.draw(st.integers(0, 6))
    kind = {n: data.draw(st.sampled_from([st.text(), st.integers(), _plain])) for n in names}
    columns = {n: data.draw(st.lists(kind[n], min_size=length, max_size=length))
               for n in names}
    assert logical_keys(columns, length) == [
        logical_key({n: columns[n][i] for n in names}) for i in range(length)]
