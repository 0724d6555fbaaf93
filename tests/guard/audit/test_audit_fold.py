"""keyguard.guard.audit.state and keyguard.guard.audit.judge: the fold, the merge of partition
states, phantom and misplaced keys, the findings and the numbers, without a broker."""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import UpsertPlan, resolve_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.judge import (
    LONG_LAG_MS,
    AuditFacts,
    Shown,
    config_findings,
    judge,
    missed_deletes,
    phantoms,
)
from keyguard.guard.audit.state import AuditState, fingerprint, fold
from keyguard.guard.render import render
from keyguard.guard.report import Verdict
from keyguard.guard.rules import (
    AUDIT_UNLISTED_ID,
    COMPACTION_DEFEATED,
    MISPLACED_KEY,
    MISSED_DELETE,
    NULL_KEY,
    PHANTOM_KEY,
    UNDECODABLE_RECORD,
)

PARTITIONS = 3


@dataclass(frozen=True)
class Rec:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int = 0
    headers: tuple[tuple[str, bytes], ...] = ()


def _plan() -> UpsertPlan:
    return resolve_plan(parse_columns("a BIGINT, b STRING, v STRING"),
                        {"topic": "orders", "primary-key": "a,b", "key.format": "json",
                         "value.format": "json"})


class Topic:
    """Records appended per partition in offset order; murmur2's partition unless told."""

    def __init__(self) -> None:
        self.records: list[Rec] = []
        self.next = dict.fromkeys(range(PARTITIONS), 0)

    def add(self, key: bytes | None, value: bytes | None, partition: int | None = None, *,
            timestamp: int = 0, headers: tuple[tuple[str, bytes], ...] = ()) -> Rec:
        p = partition if partition is not None else (
            partition_for(key, PARTITIONS) if key is not None else 0)
        r = Rec(p, self.next[p], key, value, timestamp, headers)
        self.next[p] += 1
        self.records.append(r)
        return r


def _facts(**kw: object) -> AuditFacts:
    return AuditFacts("orders", PARTITIONS, "json", "json", **kw)  # type: ignore[arg-type]


def _key(a: int, b: str, *, reverse: bool = False) -> bytes:
    fields = [("b", b), ("a", a)] if reverse else [("a", a), ("b", b)]
    return json.dumps(dict(fields), separators=(",", ":")).encode()


def _value(a: int, b: str, v: str) -> bytes:
    return json.dumps({"a": a, "b": b, "v": v}, separators=(",", ":")).encode()


def test_clean_topic_counts_records_tombstones_keys_and_live_keys() -> None:
    t = Topic()
    for i in range(10):
        t.add(_key(i, "x"), _value(i, "x", "1"))
    t.add(_key(1, "x"), _value(1, "x", "2"))  # an update: one key, two records
    t.add(_key(2, "x"), None)  # a delete
    state = fold(_plan(), PARTITIONS, [t.records])
    result = judge(state, _facts(configs={"cleanup.policy": "compact"}), phantoms(state), {})
    totals = result.data["totals"]
    assert (totals["records"], totals["tombstones"], totals["distinct_keys"],
            totals["live_keys"]) == (12, 1, 10, 9)
    assert totals["bytes"] == sum(len(r.key or b"") + len(r.value or b"") for r in t.records)
    assert result.clean and result.report.findings == ()
    assert result.report.verdict is Verdict.SAFE
    assert result.data["held"]["entries"] == 10 and result.data["held"]["bytes"] > 0
    assert sum(r["records"] for r in result.data["per_partition"]) == 12


def test_field_order_change_leaves_phantom_keys_with_both_encodings() -> None:
    t = Topic()
    old = [t.add(_key(i, "x"), _value(i, "x", "v1")) for i in range(4)]
    new = [t.add(_key(i, "x", reverse=True), _value(i, "x", "v2")) for i in range(3)]
    t.add(_key(3, "x", reverse=True), None)  # deleted under v2: misses the v1 record
    state = fold(_plan(), PARTITIONS, [t.records])
    found = phantoms(state)
    assert (found.keys, found.orphaned) == (3, 3)
    shown = {(r.partition, r.offset): Shown(r.key, {"a": json.loads(r.key)["a"], "b": "x"})
             for r in old + new if r.key is not None}
    result = judge(state, _facts(), found, shown)
    assert result.phantom_keys == 3 and not result.clean
    phantom = [f for f in result.report.findings if f.rule is PHANTOM_KEY]
    assert len(phantom) == 3
    w = phantom[0].witness
    assert w is not None and {w.old_bytes, w.new_bytes} <= {r.key for r in old + new}
    assert w.old_bytes != w.new_bytes
    assert json.loads(w.old_bytes or b"") == json.loads(w.new_bytes or b"")
    assert "live under 2 key byte strings" in phantom[0].message
    assert result.report.verdict is Verdict.BREAKING


def test_tombstoned_old_encoding_is_no_phantom() -> None:
    t = Topic()
    t.add(_key(1, "x"), _value(1, "x", "v1"))
    t.add(_key(1, "x"), None)  # the migration's tombstone for the old bytes
    t.add(_key(1, "x", reverse=True), _value(1, "x", "v2"))
    state = fold(_plan(), PARTITIONS, [t.records])
    assert phantoms(state).keys == 0


def test_misplaced_keys_are_counted_per_partition_with_an_example() -> None:
    t = Topic()
    key = _key(7, "y")
    right = partition_for(key, PARTITIONS)
    wrong = (right + 1) % PARTITIONS
    t.add(key, _value(7, "y", "1"), partition=wrong)
    t.add(key, _value(7, "y", "2"), partition=wrong)
    t.add(_key(8, "y"), _value(8, "y", "1"))
    state = fold(_plan(), PARTITIONS, [t.records])
    result = judge(state, _facts(), phantoms(state), {})
    assert result.misplaced_keys == 1  # one live key, in two records
    (f,) = [f for f in result.report.findings if f.rule is MISPLACED_KEY]
    assert f"per partition: {wrong}: 1; 2 misplaced records in all" in f.message
    assert f.witness is not None and f.witness.old_bytes == key
    assert (f.witness.old_partition, f.witness.new_partition) == (wrong, right)
    assert result.data["per_partition"][wrong]["misplaced"] == 2


def test_a_misplaced_key_deleted_beside_it_is_no_finding() -> None:
    """A partition count change: the old records and their tombstones stay on the partition
    they were written to; compaction removes them, so only live misplaced keys break."""
    t = Topic()
    key = _key(7, "y")
    wrong = (partition_for(key, PARTITIONS) + 1) % PARTITIONS
    t.add(key, _value(7, "y", "1"), partition=wrong)
    t.add(key, None, partition=wrong)
    t.add(key, _value(7, "y", "2"))  # rewritten where murmur2 puts it
    state = fold(_plan(), PARTITIONS, [t.records])
    result = judge(state, _facts(), phantoms(state), {})
    assert result.misplaced_keys == 0 and result.clean
    assert not [f for f in result.report.findings if f.rule is MISPLACED_KEY]
    assert result.data["totals"]["misplaced"] == 2  # the records are still counted
    assert result.data["totals"]["misplaced_live"] == 0


def test_undecodable_records_and_null_keys_by_offset() -> None:
    t = Topic()
    t.add(_key(1, "x"), _value(1, "x", "1"))
    bad = t.add(b"\x00\x00\x00\x00\x07\x02", _value(2, "x", "1"))
    nul = t.add(None, _value(3, "x", "1"))
    state = fold(_plan(), PARTITIONS, [t.records])
    result = judge(state, _facts(), phantoms(state), {})
    (u,) = [f for f in result.report.findings if f.rule is UNDECODABLE_RECORD]
    assert f"partition {bad.partition} offset {bad.offset}: key:" in u.message
    (n,) = [f for f in result.report.findings if f.rule is NULL_KEY]
    assert f"partition {nul.partition} offset {nul.offset}" in n.message
    assert result.clean  # warnings only: exit 0
    assert result.report.verdict is Verdict.WARN


def test_schema_ids_of_framed_records_and_unlisted_ids() -> None:
    state = AuditState(PARTITIONS)
    state.ids = {("key", 1, 0): [3, 0, 5], ("key", 2, 0): [2, 6, 9], ("key", 2, 1): [1, 4, 4]}
    facts = _facts(listed={"key": ("orders-key", {1: 1})})
    result = judge(state, facts, phantoms(state), {})
    (f,) = [f for f in result.report.findings if f.rule is AUDIT_UNLISTED_ID]
    assert "3 keys carry schema id 2 (3 records)" in f.message and f.subject == "orders-key"
    assert "(it lists v1=1)" in f.message
    spans = result.data["schema_ids"]["key"]
    assert {(s["schema_id"], s["partition"], s["records"], s["first_offset"], s["last_offset"],
             s["listed"]) for s in spans} == {(1, 0, 3, 0, 5, True), (2, 0, 2, 6, 9, False),
                                              (2, 1, 1, 4, 4, False)}
    text = render(result.report, "text")
    assert "key schema id 2 (NOT listed): 3 records (p0 offsets 6..9, p1 offsets 4..4)" in text


def test_compaction_settings_as_warnings() -> None:
    found = config_findings(_facts(configs={
        "cleanup.policy": "delete", "min.compaction.lag.ms": str(LONG_LAG_MS + 1),
        "delete.retention.ms": "1000", "segment.ms": "86400000", "segment.bytes": "1073741824"}))
    assert [f.path for f in found] == ["cleanup.policy", "min.compaction.lag.ms",
                                       "delete.retention.ms"]
    assert all(f.rule is COMPACTION_DEFEATED for f in found)
    assert config_findings(_facts(configs={"cleanup.policy": "compact"})) == []
    assert config_findings(_facts(configs=None)) == []


def test_renderers_carry_the_numbers_section() -> None:
    t = Topic()
    t.add(_key(1, "x"), _value(1, "x", "1"))
    state = fold(_plan(), PARTITIONS, [t.records])
    report = judge(state, _facts(), phantoms(state), {}).report
    doc = json.loads(render(report, "json"))
    assert doc["audit"]["totals"]["records"] == 1 and doc["verdict"] == "safe"
    sarif = json.loads(render(report, "sarif"))
    assert sarif["runs"][0]["properties"]["audit"]["totals"]["live_keys"] == 1
    assert "audit of topic orders (3 partitions" in render(report, "text")


# -- merge: the state of all == the merge of the partitions' states -------------------------

_records = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from(["x", "y"]), st.booleans(),
              st.one_of(st.none(), st.sampled_from(["1", "2"])), st.booleans()),
    max_size=40)


def _topic(spec: list[tuple[int, str, bool, str | None, bool]]) -> Topic:
    t = Topic()
    for a, b, reverse, v, misplace in spec:
        key = _key(a, b, reverse=reverse)
        p = (partition_for(key, PARTITIONS) + misplace) % PARTITIONS
        t.add(key, None if v is None else _value(a, b, v), partition=p)
    return t


def _comparable(s: AuditState) -> tuple[object, ...]:
    return (s.partitions, dict(sorted(s.stats.items())), s.entries, s.ids, s.undecodable,
            s.null_keys, s.misplaced)


@settings(max_examples=60, deadline=None)
@given(_records, st.randoms(use_true_random=False))
def test_merge_of_partition_states_is_the_state_of_all(spec, rnd) -> None:  # type: ignore[no-untyped-def]
    t = _topic(spec)
    plan = _plan()
    whole = fold(plan, PARTITIONS, [t.records])
    parts = [fold(plan, PARTITIONS, [[r for r in t.records if r.partition == p]])
             for p in range(PARTITIONS)]
    rnd.shuffle(parts)
    merged = AuditState.merge_all(parts, PARTITIONS)
    assert _comparable(merged) == _comparable(whole)
    assert phantoms(merged) == phantoms(whole)
    # Batches of any size, interleaving partitions, fold to the same state.
    interleaved = sorted(t.records, key=lambda r: (r.offset, rnd.random()))
    size = rnd.randint(1, 7)
    batched = fold(plan, PARTITIONS, [interleaved[i:i + size]
                                      for i in range(0, len(interleaved), size)])
    assert _comparable(batched) == _comparable(whole)


def test_the_state_keeps_fingerprints_not_keys() -> None:
    t = Topic()
    secret = _key(123456789, "very-identifying-customer-name")
    t.add(secret, _value(123456789, "very-identifying-customer-name", "1"))
    state = fold(_plan(), PARTITIONS, [t.records])
    assert list(state.entries) == [(fingerprint(secret), t.records[0].partition)]
    assert all(len(kf) == 16 for kf, _ in state.entries)
    assert secret not in repr(state).encode()


def test_a_delete_under_other_key_bytes_that_misses_a_live_row_is_breaking() -> None:
    t = Topic()
    live = t.add(_key(1, "x"), _value(1, "x", "v1"), partition=0)
    gone = t.add(_key(1, "x", reverse=True), None, partition=0)  # {"b":"x","a":1}, later
    state = fold(_plan(), PARTITIONS, [t.records])
    missed = missed_deletes(state)
    assert missed.keys == 1
    (d, x), = missed.examples
    assert (d.partition, d.offset, x.partition, x.offset) == (0, gone.offset, 0, live.offset)
    shown = {(0, live.offset): Shown(live.key, {"a": 1, "b": "x"}),
             (0, gone.offset): Shown(gone.key, {"a": 1, "b": "x"})}
    result = judge(state, _facts(), phantoms(state), shown)
    found = [f for f in result.report.findings if f.rule is MISSED_DELETE]
    assert len(found) == 1 and "stays live" in found[0].message
    assert found[0].witness is not None and found[0].witness.old_bytes == gone.key
    assert result.missed_deletes == 1 and not result.clean
    assert result.report.verdict is Verdict.BREAKING
    assert result.data["totals"]["missed_deletes"] == 1


def test_a_row_written_again_after_its_delete_is_no_missed_delete() -> None:
    t = Topic()
    t.add(_key(1, "x", reverse=True), None, partition=0)
    t.add(_key(1, "x"), _value(1, "x", "again"), partition=0)
    assert missed_deletes(fold(_plan(), PARTITIONS, [t.records])).keys == 0


def test_across_partitions_the_later_timestamp_decides() -> None:
    t = Topic()
    t.add(_key(1, "x"), _value(1, "x", "v1"), partition=1, timestamp=100)
    t.add(_key(1, "x", reverse=True), None, partition=2, timestamp=200)
    t.add(_key(2, "x"), _value(2, "x", "v1"), partition=1, timestamp=300)
    t.add(_key(2, "x", reverse=True), None, partition=2, timestamp=200)
    assert missed_deletes(fold(_plan(), PARTITIONS, [t.records])).keys == 1


def test_a_migrations_retirement_is_not_a_delete() -> None:
    """keyguard migrate retires the old bytes after it rewrote the row: marked, not a delete."""
    t = Topic()
    old = t.add(_key(1, "x"), _value(1, "x", "v1"), partition=0)
    t.add(_key(1, "x", reverse=True), _value(1, "x", "v1"), partition=0)
    t.add(_key(1, "x"), None, partition=0,
          headers=(("keyguard.migrate", b"retire %d" % old.offset),))
    state = fold(_plan(), PARTITIONS, [t.records])
    assert missed_deletes(state).keys == 0 and phantoms(state).keys == 0
    unmarked = Topic()
    unmarked.add(_key(1, "x", reverse=True), _value(1, "x", "v1"), partition=0)
    unmarked.add(_key(1, "x"), None, partition=0)
    assert missed_deletes(fold(_plan(), PARTITIONS, [unmarked.records])).keys == 1


def test_a_tombstone_written_without_the_frame_is_a_missed_delete() -> None:
    """An avro-confluent key deleted by a tool that wrote the bare Avro body (no magic byte,
    no schema id): the same row, deleted under the wrong bytes while the framed key stays."""
    import uuid

    from keyguard.formats.framing import CONFLUENT
    from keyguard.formats.registry.mock import MockRegistry
    from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan

    scope = f"unframed-{uuid.uuid4().hex}"
    plan = open_plan(parse_columns("a BIGINT, b STRING, v STRING"),
                        {"topic": "orders", "primary-key": "a,b",
                         "key.format": "avro-confluent", "value.format": "json",
                         "key.avro-confluent.url": f"mock://{scope}"})
    try:
        bind_plan_schema_ids(plan)
        framed = plan.key_codec.encode({"a": 1, "b": "x"})
        bare = CONFLUENT.body(framed)
        t = Topic()
        live = t.add(framed, _value(1, "x", "v1"), partition=0)
        gone = t.add(bare, None, partition=0)
        state = fold(plan, PARTITIONS, [t.records])
        missed = missed_deletes(state)
        assert missed.keys == 1
        (d, x), = missed.examples
        assert (d.offset, x.offset) == (gone.offset, live.offset)
        assert state.stats[0].unframed_keys == 1 and state.stats[0].undecodable_keys == 0
    finally:
        MockRegistry.drop_scope(scope)
