"""`keyguard migrate` against a reference model of a compacted topic, in memory.

A topic here is a list of logs, one per partition, as Kafka keeps them (compaction folds a key
byte string to its last record; reading from the beginning and folding gives the same table,
so nothing is compacted). Producers write rows under any key encoding, deletes included;
partitions are added (a migration then re-partitions the rows onto the new count), and
producers that still partition by the old count keep writing; migrations run in any direction
and chain, killed after any record they write, with producers writing between any two of their
records, and run again. The migration under test is the real one (`migrate_rounds`, with the
topic in memory), in both its forms: in one process (`FoldPlanner`), and as the Spark form does
it (`StretchPlanner` below: the steps of `keyguard.sparkio.migrate_spark` without Spark, the
log cut into stretches folded apart, their parts combined in a shuffled order, the rows planned
in shards). After every finished run, the logical table the topic holds must be the table the
producers wrote (the reference: the last write of each row, in the order they happened), every
row live once, under the last migration's key, on its murmur2 partition.

Among the encodings are Confluent's framings of one Avro key and value: the schema id in the
bytes, or the schema GUID in the record header (`__key_schema_id`, `__value_schema_id`) with
the bytes the bare body, which is the plain `avro` key's bytes. A migration between them moves
rows from one framing to the other: every live record must end with exactly the headers the
last migration's framing writes.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import UpsertPlan, resolve_plan
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.markers import Copy
from keyguard.guard.offsets import Record
from keyguard.sparkio.migrate_plan import (
    Classified,
    Declarations,
    Fold,
    MigrationPlan,
    SlotPart,
    Tally,
    Write,
    plan_migration,
    verify_entries,
)
from keyguard.sparkio.migrate_report import MigrationReport
from keyguard.sparkio.migrate_spark import COUNTS, candidates, combine, fold_stretch, plan_rows
from keyguard.sparkio.migrate_topic import (
    FoldPlanner,
    MigrationDeclinedError,
    Planner,
    TopicBusyError,
    UndecidedRowsError,
    ValueFieldsDroppedError,
    classify_all,
    migrate_rounds,
    run_rounds,
)

TABLE = parse_columns("id BIGINT, tenant STRING, name STRING")
VALUE = {"topic": "t", "value.format": "json", "primary-key": "id"}
#: Key encodings of one table whose new key can be computed from an old one: the cases where
#: a rerun used to read the first run's tombstones as deletes. Row ids start at 10: the csv key
#: of a one-digit id (`1`) is also a valid Avro long, so its tombstone could not be told apart.
ENCODINGS: dict[str, UpsertPlan] = {
    "json": resolve_plan(TABLE, {**VALUE, "key.format": "json"}),
    "csv": resolve_plan(TABLE, {**VALUE, "key.format": "csv"}),
    "avro": resolve_plan(TABLE, {**VALUE, "key.format": "avro"}),
}
TOPIC = "t"
REGISTRY = "mock://migrate-model-framings"


def _framed(key: str, value: str | None) -> UpsertPlan:
    """An avro-confluent key in framing `key`; an avro-confluent value in framing `value`
    (None: the json value of the other encodings). Ids (and GUIDs) bound, as a run binds the
    new encoding's."""
    options = {**VALUE, "key.format": "avro-confluent", "key.avro-confluent.url": REGISTRY,
               "key.avro-confluent.framing": key}
    if value is not None:
        options.update({"value.format": "avro-confluent", "value.avro-confluent.url": REGISTRY,
                        "value.avro-confluent.framing": value})
    plan = open_plan(TABLE, options)
    bind_plan_schema_ids(plan)
    return plan


#: Confluent's framings: the key's id in the bytes, or its GUID in a header (the bytes those
#: of `avro`); and the value's id in the bytes or in a header, under one key.
FRAMINGS: dict[str, UpsertPlan] = {
    "prefix": _framed("confluent", None),
    "header": _framed("confluent-header", None),
    "prefix-values": _framed("confluent", "confluent"),
    "header-values": _framed("confluent", "confluent-header"),
}
ENCODINGS.update(FRAMINGS)


class Killed(Exception):
    """The migration process died here."""


@dataclass
class MemoryTopic:
    """Partition logs, a clock, and the reference table the producers' writes define."""

    partitions: int
    logs: list[list[Record]] = field(default_factory=list)
    clock: int = 0
    truth: dict[int, str] = field(default_factory=dict)
    #: Called before each record a migration writes (a producer may write in between).
    between: Callable[[], None] = lambda: None
    #: Records a migration may still write before it is killed; None: no kill.
    budget: int | None = None

    def __post_init__(self) -> None:
        self.logs = self.logs or [[] for _ in range(self.partitions)]
        self.before_growth = 0

    def grow(self, more: int) -> None:
        """Partitions added, as Kafka adds them (the keys already written stay where they
        are): a migration re-partitions the rows onto the new count."""
        self.before_growth = self.partitions
        self.partitions += more
        self.logs += [[] for _ in range(more)]

    def append(self, partition: int, key: bytes, value: bytes | None,
               headers: tuple[tuple[str, bytes], ...] = ()) -> None:
        self.clock += 1
        log = self.logs[partition]
        log.append(Record(partition, len(log), self.clock, key, value, headers))

    def write(self, encoding: str, row_id: int, name: str | None, stale: bool = False) -> None:
        """A producer's write of row `row_id` under `encoding` (name None: a delete); `stale`:
        a producer that still partitions by the count before the last growth."""
        row_id += 10
        row = {"id": row_id, "tenant": None, "name": name}
        plan = ENCODINGS[encoding]
        key, value = plan.encode(row)
        count = self.before_growth if stale and self.before_growth else self.partitions
        self.append(partition_for(key, count), key, None if name is None else value,
                    plan.record_headers(tombstone=name is None))
        if name is None:
            self.truth.pop(row_id - 10, None)
        else:
            self.truth[row_id - 10] = name

    # -- the migration's view: the TopicLog protocol ------------------------------------------

    def read(self, topic: str, folds: Sequence[Fold] | None = None) -> list[Fold]:
        out = []
        for p, log in enumerate(self.logs):
            fold = folds[p] if folds is not None and p < len(folds) else \
                Fold(topic=topic, end=0, partition=p)
            fold.add(log[max(fold.end, 0):])
            fold.end = len(log)
            out.append(fold)
        return out

    def produce(self, topic: str, writes: Sequence[Write]) -> int:
        for w in writes:
            self.between()
            if self.budget is not None:
                if self.budget == 0:
                    raise Killed
                self.budget -= 1
            self.append(w.partition, w.key, w.value, w.headers)
        return len(writes)

    # -- what a consumer sees -----------------------------------------------------------------

    def compacted(self) -> dict[tuple[int, bytes], tuple[bytes, Any]]:
        """Every live (partition, key bytes) -> (value, headers), as compaction keeps them."""
        out: dict[tuple[int, bytes], Record] = {}
        for log in self.logs:
            for r in log:
                out[(r.partition, r.key)] = r  # type: ignore[index]
        return {k: (r.value, r.headers) for k, r in out.items() if r.value is not None}

    def table(self, under: str) -> dict[int, str]:
        """The table a consumer of the topic reads, checked to be under one key encoding, in
        its framing: a live record carries exactly the schema-id headers it writes (a bare
        format's reader reads no header)."""
        plan = ENCODINGS[under]
        rows: dict[int, str] = {}
        for (partition, key), (value, headers) in self.compacted().items():
            assert plan.key_codec.encode(plan.key_codec.decode_record(key, headers)) == key, \
                f"a live record under another key than {under}: {key!r}"
            assert partition == partition_for(key, self.partitions), "a misplaced record"
            for codec in (plan.key_codec, plan.value_codec):  # a registry format's side
                frame = getattr(codec, "frame", None)
                if frame is not None:
                    framing = frame.id_headers(headers)
                    assert framing == codec.record_headers(), \
                        f"a live record in another framing than {under}'s: {framing!r}"
            row = plan.decode(key, value, headers)
            assert row is not None and row["id"] not in rows, f"a phantom row: {row}"
            rows[row["id"]] = row["name"]
        return {i - 10: name for i, name in rows.items()}


def declarations(new: str, old: Sequence[str]) -> Declarations:
    return Declarations(ENCODINGS[new], tuple(ENCODINGS[o] for o in old), tuple(old))


@dataclass
class StretchPlanner:
    """The Spark form's planner without Spark: each partition's log cut into stretches of
    `size` records, each folded and classified alone (`fold_stretch`, a read task); the parts
    combined in a shuffled order (`combine`, the first shuffle); the rows grouped by new key
    and planned in `shards` shuffled shards (`plan_rows`, the second); the tallies merged (the
    driver); the writes produced shard after shard (the write tasks), the first shard's twice
    (a task that failed after its sends and ran again)."""

    topic: MemoryTopic
    decl: Declarations
    size: int = 2
    shards: int = 3
    seed: int = 0
    #: The first shard's writes are sent twice, as a write task Spark retries sends them.
    retried: bool = True
    records_read: int = 0
    null_keys: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.slots: dict[Any, Any] = {}
        self.ends: dict[int, int] = {}
        self.planned: list[list[Any]] = []
        self.records_read, self.null_keys = self._read()

    def _read(self) -> tuple[int, int]:
        parts: list[tuple[Any, Any]] = []
        for p, log in enumerate(self.topic.logs):
            for start in range(self.ends.get(p, 0), len(log), self.size):
                parts += fold_stretch(self.decl, TOPIC, p, [log[start:start + self.size]])
            self.ends[p] = len(log)
        self.rng.shuffle(parts)
        counts = (0, 0)
        for key, part in parts:
            if key == COUNTS:
                counts = combine(counts, part)
            else:
                self.slots[key] = combine(self.slots[key], part) if key in self.slots else part
        return counts

    def plan(self) -> MigrationPlan:
        groups: dict[bytes, list[Classified]] = {}
        for item in self.slots.items():
            for new_key, c in candidates(item):
                groups.setdefault(new_key, []).append(c)
        keys = list(groups)
        self.rng.shuffle(keys)
        self.planned = [list(plan_rows(self.topic.partitions, TOPIC,
                                       [(k, groups[k]) for k in keys[i::self.shards]]))
                        for i in range(self.shards)]
        tally = Tally()
        for shard in self.planned:
            tally.merge(shard[-1][0])
        return tally.plan(held=True)

    def write(self, plan: MigrationPlan, *, tombstones: bool) -> int:
        written = 0
        for i, shard in enumerate(self.planned):
            writes = [w for _, rewrite, retired in shard[:-1]
                      for w in (retired if tombstones else (rewrite,) if rewrite else ())]
            written += self.topic.produce(TOPIC, writes)
            if i == 0 and self.retried:  # the task failed after its sends, Spark ran it again
                self.topic.produce(TOPIC, writes)
        return written

    def read_more(self) -> None:
        self._read()


#: The migration's two forms: in one process, and the Spark form's steps.
FORMS = ("in-process", "stretches")


def planner(form: str, topic: MemoryTopic, decl: Declarations) -> Planner:
    if form == "stretches":
        return StretchPlanner(topic, decl, seed=len(topic.logs[0]))
    return FoldPlanner(topic, decl, topic.partitions, TOPIC, TOPIC)


def migrate(topic: MemoryTopic, new: str, old: Sequence[str],
            form: str = "in-process") -> MigrationReport:
    """One run of the real migration loop against the topic in memory."""
    report = MigrationReport(TOPIC, TOPIC, dry_run=False)
    run_rounds(planner(form, topic, declarations(new, old)), report, source=TOPIC,
               target=TOPIC)
    return report


def verified(topic: MemoryTopic, new: str, old: Sequence[str]) -> bool:
    decl = declarations(new, old)
    folds = topic.read(TOPIC)
    return verify_entries(TOPIC, classify_all(folds, decl, TOPIC), topic.partitions).clean


# --- the defects a migration must never have -------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_a_rerun_keeps_every_row_the_first_run_rewrote(form: str) -> None:
    topic = MemoryTopic(3)
    for i in range(23):
        topic.write("json", i, f"n{i}")
    for _ in range(3):
        migrate(topic, "csv", ["json", "csv"], form)
        assert topic.table("csv") == topic.truth
        assert verified(topic, "csv", ["json", "csv"])
    assert len(topic.truth) == 23


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("chain", [["json", "csv", "json"], ["json", "csv", "avro", "json"],
                                   ["json", "avro", "json", "avro"]])
def test_a_round_trip_and_a_chain_keep_every_row(chain: list[str], form: str) -> None:
    topic = MemoryTopic(4)
    for i in range(200):
        topic.write(chain[0], i, f"n{i}")
    for new in chain[1:]:
        migrate(topic, new, list(ENCODINGS), form)
        assert topic.table(new) == topic.truth
    assert len(topic.truth) == 200


@pytest.mark.parametrize("form", FORMS)
def test_a_run_killed_during_its_tombstones_then_rerun_twice_keeps_every_row(form: str) -> None:
    topic = MemoryTopic(3)
    for i in range(60):
        topic.write("json", i, f"n{i}")
    topic.budget = 60 + 25  # every rewrite, then 25 of 60 tombstones
    with pytest.raises(Killed):
        migrate(topic, "csv", ["json"], form)
    topic.budget = None
    for _ in range(2):
        migrate(topic, "csv", ["json", "csv"], form)
        assert topic.table("csv") == topic.truth
    assert len(topic.truth) == 60


@pytest.mark.parametrize("form", FORMS)
def test_writers_on_the_new_key_during_the_run_are_never_reverted(form: str) -> None:
    topic = MemoryTopic(3)
    for i in range(50):
        topic.write("json", i, "v1")
    n = iter(range(10_000))

    def update() -> None:  # before every record the migration writes: a new-key update
        i = next(n)
        topic.write("csv", i % 50, f"v2-{i}")

    topic.between = update
    migrate(topic, "csv", ["json"], form)
    topic.between = lambda: None
    assert topic.table("csv") == topic.truth
    assert verified(topic, "csv", ["json"])


@pytest.mark.parametrize("form", FORMS)
def test_writers_on_the_old_key_during_the_run_are_carried_over(form: str) -> None:
    topic = MemoryTopic(3)
    for i in range(50):
        topic.write("json", i, "v1")
    n = iter(range(10_000))

    def old_writer() -> None:
        i = next(n)
        if i < 120:  # the writers stop: the migration must then converge
            topic.write("json", i % 50, f"late-{i}" if i % 7 else None)

    topic.between = old_writer
    migrate(topic, "csv", ["json"], form)
    topic.between = lambda: None
    assert topic.table("csv") == topic.truth


@pytest.mark.parametrize("form", FORMS)
def test_writers_that_never_stop_stop_the_migration_with_a_consistent_table(form: str) -> None:
    topic = MemoryTopic(2)
    for i in range(20):
        topic.write("json", i, "v1")
    n = iter(range(100_000))
    topic.between = lambda: topic.write("json", next(n) % 20, "again")
    with pytest.raises(TopicBusyError, match="kept writing"):
        migrate(topic, "csv", ["json"], form)
    topic.between = lambda: None
    migrate(topic, "csv", ["json"], form)  # once they stop, a rerun finishes the table
    assert topic.table("csv") == topic.truth


def test_log_order_beats_timestamps_within_a_partition() -> None:
    """A record written later with an earlier timestamp is still the later record."""
    decl = declarations("csv", ["json"])
    old_key, old_value = ENCODINGS["json"].encode({"id": 11, "tenant": None, "name": "first"})
    new_key, new_value = ENCODINGS["csv"].encode({"id": 11, "tenant": None, "name": "second"})
    fold = Fold(topic=TOPIC, end=0, partition=0).add([
        Record(0, 0, 2_000, old_key, old_value), Record(0, 1, 1_000, new_key, new_value)])
    plan = plan_migration(classify_all([fold], decl, TOPIC), 1)
    assert plan.rewrites == () and plan.in_place == 1  # the later record, under the new key
    assert [w.key for w in plan.tombstones] == [old_key]


@pytest.mark.parametrize("form", FORMS)
def test_concurrent_records_with_equal_times_and_different_values_stop_the_run(form: str) -> None:
    decl = declarations("csv", ["json"])
    a_key, a_value = ENCODINGS["json"].encode({"id": 1, "tenant": None, "name": "a"})
    b_key, b_value = ENCODINGS["csv"].encode({"id": 1, "tenant": None, "name": "b"})
    folds = [Fold(topic=TOPIC, end=0, partition=0).add([Record(0, 0, 5, a_key, a_value)]),
             Fold(topic=TOPIC, end=0, partition=1).add([Record(1, 0, 5, b_key, b_value)])]
    plan = plan_migration(classify_all(folds, decl, TOPIC), 2)
    assert plan.undecided_keys == 1 and plan.empty
    topic = MemoryTopic(2, logs=[[Record(0, 0, 5, a_key, a_value)],
                                 [Record(1, 0, 5, b_key, b_value)]])
    with pytest.raises(UndecidedRowsError, match="1 row"):
        migrate(topic, "csv", ["json"], form)
    assert sum(map(len, topic.logs)) == 2  # nothing written


# --- the model-based test ----------------------------------------------------------------------

Step = tuple[str, Any]

steps = st.lists(st.one_of(
    st.tuples(st.just("write"), st.tuples(st.sampled_from(list(ENCODINGS)),
                                          st.integers(0, 7),
                                          st.one_of(st.none(), st.sampled_from("abcd")),
                                          st.booleans())),
    st.tuples(st.just("grow"), st.integers(1, 2)),
    st.tuples(st.just("migrate"), st.tuples(st.sampled_from(list(ENCODINGS)),
                                            st.one_of(st.none(), st.integers(0, 12)),
                                            st.lists(st.tuples(st.sampled_from(list(ENCODINGS)),
                                                               st.integers(0, 7),
                                                               st.one_of(st.none(),
                                                                         st.sampled_from("xy"))),
                                                     max_size=4))),
), min_size=1, max_size=25)


@pytest.mark.parametrize("form", FORMS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitions=st.integers(1, 3), script=steps)
def test_any_interleaving_of_writes_growth_migrations_kills_and_reruns_keeps_the_table(
        partitions: int, script: list[Step], form: str) -> None:
    topic = MemoryTopic(partitions)
    current = "json"
    for kind, args in script:
        if kind == "write":
            topic.write(*args)  # stale: partitioned by the count before the last growth
            continue
        if kind == "grow":
            if topic.partitions + args <= 5:
                topic.grow(args)
            continue
        new, kill_after, during = args
        pending = list(during)

        def between(pending: list[Any] = pending) -> None:  # producers meanwhile
            if pending:
                topic.write(*pending.pop(0))

        topic.between, topic.budget = between, kill_after
        try:
            migrate(topic, new, list(ENCODINGS), form)
        except Killed:
            pass
        topic.between, topic.budget = (lambda: None), None
        for args_ in pending:  # what the producers had left to write, after the kill
            topic.write(*args_)
        migrate(topic, new, list(ENCODINGS), form)  # the rerun: quiet, never killed
        current = new
        assert topic.table(current) == topic.truth
        assert verified(topic, current, list(ENCODINGS))


@pytest.mark.parametrize("form", FORMS)
def test_value_fields_the_table_does_not_declare_stop_the_run_before_any_write(form: str) -> None:
    topic = MemoryTopic(2)
    topic.write("json", 1, "a")
    key, _ = ENCODINGS["json"].encode({"id": 12, "tenant": None, "name": "b"})
    topic.append(partition_for(key, 2), key,
                 b'{"id":12,"tenant":null,"name":"b","subject":"s-value","version":3}')
    before = sum(map(len, topic.logs))
    with pytest.raises(ValueFieldsDroppedError, match=r"'subject', 'version'.*nothing was "
                                                      r"written") as err:
        migrate(topic, "csv", ["json"], form)
    assert "--columns" in (err.value.hint or "")
    assert sum(map(len, topic.logs)) == before


def test_a_declined_confirmation_writes_nothing() -> None:
    topic = MemoryTopic(2)
    for i in range(5):
        topic.write("json", i, "a")
    before = sum(map(len, topic.logs))
    asked: list[int] = []

    def no(plan: Any) -> bool:
        asked.append(len(plan.rewrites))
        return False

    with pytest.raises(MigrationDeclinedError, match="nothing was written"):
        migrate_rounds(topic, declarations("csv", ["json"]), 2,
                       MigrationReport(TOPIC, TOPIC, dry_run=False), source=TOPIC,
                       target=TOPIC, confirm=no)
    assert asked == [5] and sum(map(len, topic.logs)) == before
    migrate_rounds(topic, declarations("csv", ["json"]), 2,
                   MigrationReport(TOPIC, TOPIC, dry_run=False), source=TOPIC, target=TOPIC,
                   confirm=lambda plan: True)
    assert topic.table("csv") == topic.truth


def test_the_state_file_lives_in_the_state_directory_not_the_working_one(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from keyguard.sparkio.migrate_topic import default_state_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    a = default_state_path("orders", None, "broker-a:9092")
    b = default_state_path("orders", None, "broker-b:9092")
    assert a.parent == tmp_path / "keyguard" / "migrate" and a != b
    assert a.name.startswith("orders-") and a.suffix == ".json"
    assert default_state_path("x" * 300, None, "b").name.startswith("x" * 150 + "-")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_state_path("orders").parent == \
        tmp_path / "home" / ".local" / "state" / "keyguard" / "migrate"


def test_a_retirement_whose_records_compaction_removed_is_no_delete() -> None:
    """Compaction may keep only the retirement tombstone of an old slot: it is still no
    delete of the row the slot held."""
    decl = declarations("csv", ["json"])
    old_key, _ = ENCODINGS["json"].encode({"id": 11, "tenant": None, "name": "a"})
    new_key, new_value = ENCODINGS["csv"].encode({"id": 11, "tenant": None, "name": "a"})
    fold = Fold(topic=TOPIC, end=0, partition=0).add([
        Record(0, 5, 1, new_key, new_value),
        Record(0, 9, 2, old_key, None, (("keyguard.migrate", b"retire 4"),))])
    plan = plan_migration(classify_all([fold], decl, TOPIC), 1)
    assert plan.empty and plan.live_keys == 1 and plan.deleted_keys == 0


# --- the Spark form's slots: stretches folded apart, merged in any order -----------------------

slot_records = st.lists(st.tuples(
    st.sampled_from(["upsert", "delete", "copy", "retire"]),
    st.integers(1, 3),  # the gap to the previous offset
    st.integers(-1, 40),  # what a copy saw, or what a retirement retires through
), min_size=1, max_size=30)


@settings(max_examples=400, deadline=None)
@given(records=slot_records, cuts=st.lists(st.integers(1, 30), max_size=8),
       seed=st.integers(0, 2**16))
def test_slot_parts_of_any_stretches_merged_in_any_order_equal_the_whole_fold(
        records: list[tuple[str, int, int]], cuts: list[int], seed: int) -> None:
    """`SlotPart.merge` is what lets Spark's shuffle combine the stretches of a partition in
    whatever order its tasks finish: the result is the slot the whole log folds into."""
    decl = declarations("csv", ["json"])
    key, value = ENCODINGS["json"].encode({"id": 11, "tenant": None, "name": "a"})
    log, offset = [], -1
    for kind, gap, reach in records:
        offset += gap
        seen = (("keyguard.migrate", Copy(7, ((TOPIC, 0, reach),)).header()[1]),)
        headers = {"copy": seen, "retire": (("keyguard.migrate", b"retire %d" % reach),)}
        log.append(Record(0, offset, offset, key, None if kind in ("delete", "retire") else value,
                          headers.get(kind, ())))
    whole = Fold(topic=TOPIC, partition=0).add(log).slots[key]
    bounds = sorted({c % len(log) for c in cuts} | {0, len(log)})
    parts = []
    for a, b in itertools.pairwise(bounds):
        fold = Fold(topic=TOPIC, partition=0).add(log[a:b])
        parts.append(SlotPart.of(fold.slots[key], decl, TOPIC))
    rng = random.Random(seed)
    while len(parts) > 1:  # any two, in any order
        a = parts.pop(rng.randrange(len(parts)))
        b = parts.pop(rng.randrange(len(parts)))
        parts.append(a.merge(b))
    merged = parts[0]
    assert merged.tail == whole.tail.offset
    assert sorted(c.entry.offset for c in merged.open) == [e.offset for e in whole.open]
    assert sorted(c.tail for c in merged.candidates()) == \
        sorted(e is whole.tail for e in whole.open)


@pytest.mark.parametrize("form", FORMS)
def test_a_delete_that_wins_is_carried_over_not_retired(form: str) -> None:
    """A row deleted under the old key while its rewrite was on its way: the rewrite lands
    after the delete, so the next round must tombstone it. That tombstone carries the delete
    (a copy), not a retirement: a retirement would retire the delete too, and an earlier
    write of the row still in another slot would come back on the next run."""
    topic = MemoryTopic(1)
    topic.write("json", 1, "a")
    topic.write("json", 0, "x")
    migrate(topic, "csv", list(ENCODINGS), form)
    writes = [("csv", 0, "x"), ("json", 0, None)]  # before the migration's first two writes
    topic.between = lambda: writes and topic.write(*writes.pop(0))  # type: ignore[func-returns-value]
    migrate(topic, "json", list(ENCODINGS), form)
    topic.between = lambda: None
    for _ in range(2):
        migrate(topic, "json", list(ENCODINGS), form)
        assert topic.table("json") == topic.truth == {1: "a"}


# --- Confluent's framings: the schema id in the bytes or in a header ---------------------------


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("chain", [["prefix", "header", "prefix"],
                                   ["prefix-values", "header-values", "prefix-values"],
                                   ["avro", "header", "json"]])
def test_a_framing_change_moves_every_row_there_and_back(chain: list[str], form: str) -> None:
    topic = MemoryTopic(3)
    for i in range(40):
        topic.write(chain[0], i, f"n{i}")
    topic.write(chain[0], 3, None)
    for new in chain[1:]:
        report = migrate(topic, new, list(ENCODINGS), form)
        assert topic.table(new) == topic.truth
        assert verified(topic, new, list(ENCODINGS))
        assert report.plan is not None and report.plan.rewrite_count == 39
    assert len(topic.truth) == 39
    if chain[0] == "prefix":  # a retirement repeats its key's own framing
        retired = [r for log in topic.logs for r in log
                   if r.value is None and r.headers and r.headers[-1][1].startswith(b"retire")]
        with_header = [any(h[0] == "__key_schema_id" for h in r.headers) for r in retired]
        assert with_header.count(False) >= 39 and with_header.count(True) >= 39
        assert all(h == (r.key[0] != 0) for h, r in zip(with_header, retired, strict=True))


@pytest.mark.parametrize("form", FORMS)
def test_a_framing_change_killed_with_writers_on_the_old_framing_then_rerun(form: str) -> None:
    topic = MemoryTopic(2)
    for i in range(30):
        topic.write("prefix", i, "v1")
    n = iter(range(10_000))

    def old_writer() -> None:  # a producer still on the prefix framing, and one on the new
        i = next(n)
        if i < 40:
            topic.write("prefix" if i % 2 else "header", i % 30, f"late-{i}" if i % 7 else None)

    topic.between, topic.budget = old_writer, 45
    with pytest.raises(Killed):
        migrate(topic, "header", ["prefix"], form)
    topic.budget = None
    migrate(topic, "header", ["prefix"], form)
    topic.between = lambda: None
    migrate(topic, "header", ["prefix"], form)
    assert topic.table("header") == topic.truth
    assert verified(topic, "header", ["prefix"])
    # the retirements repeat their key's framing: each old key's tombstone carries no header,
    # a header-framed key's would carry its own
    retired = [r for log in topic.logs for r in log if r.value is None and any(
        h[0] == "keyguard.migrate" and (h[1] or b"").startswith(b"retire") for h in r.headers)]
    assert retired and all(not any(h[0] == "__key_schema_id" for h in r.headers)
                           for r in retired)
