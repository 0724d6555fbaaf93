"""`keyguard migrate`: re-key a compacted topic without orphaning a record; the rounds both
forms run (`run_rounds`), in this process here and on Spark in `keyguard.sparkio.migrate_spark`.

(The module is not `sparkio/migrate.py`: a submodule of that name would replace the function
`sparkio.migrate` on the package as soon as it is imported.)

A key change (new key fields, another key format or namespace, a partition count) gives every
row new key bytes. Written naively, the old records stay live beside the new ones: phantom
keys, deletes that miss. A migration, in rounds:

1. reads the topic: each partition up to the end captured now (`keyguard.guard.offsets`),
   folded into slots (`keyguard.sparkio.migrate_plan.Fold`), with the records' headers;
2. decodes each candidate record under the declared encodings (the new one, then each old
   one) and plans with the model of `keyguard.sparkio.migrate_plan`: per row, the record that
   holds its current state (log order within a partition, the markers of earlier runs, then
   time), a rewrite under its new key on the partition murmur2 picks, marked with what it saw;
3. writes the rewrites and waits until every one is acknowledged (`keyguard.sparkio.producer`);
4. only then retires every other live key byte string of those rows with a marked tombstone;
5. reads what arrived since step 1 (its own records, and any producer's) and plans again, until
   the plan is empty (or `MAX_ROUNDS`: `TopicBusyError`, after a completed round);
6. reads the topic again and fails (exit 1, with counts) when a row is still live under two
   encodings, or under an old one, or the model would still write something, or when
   `keyguard audit` of the target under the new key (`keyguard.guard.audit.scan.audit_topic`)
   finds phantom or live misplaced keys (`verify` replaces both).

Between 3 and 4 consumers see both keys of a row live: a migration never leaves a moment
where a row is missing. Every step is decided from the topic itself, so a run killed anywhere
and run again converges to the same table: what was written is already there and is skipped.
The state file (`--state`, JSON, replaced atomically) records the phase and the counts, so a
rerun says what the last run did; losing it loses nothing. A cut-over (`to_topic`) writes the
target only and leaves the source as it is; rows of both are decided together.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from keyguard.formats.errors import EXIT_BREAKING, InvalidOptionError, KeyguardError, RegistryError
from keyguard.formats.plan import TOPIC, UpsertPlan
from keyguard.formats.registry import Registry
from keyguard.formats.registry.registration import (
    bind_plan_schema_ids,
    needs_schema_id,
    open_plan,
    resolve_binding,
)
from keyguard.formats.secrets import is_secret_key, register_options
from keyguard.formats.types import RowType
from keyguard.guard.audit.scan import audit_topic
from keyguard.guard.offsets import KafkaRanges, OffsetRange
from keyguard.guard.topic import KafkaTopicInspector
from keyguard.sparkio.migrate_plan import (
    Classified,
    Declarations,
    Fold,
    MigrationPlan,
    Verification,
    Write,
    classify,
    plan_migration,
    verify_entries,
)
from keyguard.sparkio.migrate_report import MigrationReport, show_bytes
from keyguard.sparkio.options import PRODUCER_TIMEOUTS, PROPERTIES
from keyguard.sparkio.producer import (
    ProducerFactory,
    UpsertProducer,
    producer_config,
)

if TYPE_CHECKING:
    from uuid import UUID

#: The writer's librdkafka timeouts (`sparkio.options.PRODUCER_TIMEOUTS`), for migrate's
#: producer too: a dead broker fails a run in well under a minute, not librdkafka's 300 s.
MIGRATE_PRODUCER_TIMEOUTS: dict[str, Any] = {
    o.key.removeprefix(PROPERTIES): o.default for o in PRODUCER_TIMEOUTS}

#: How many rounds a run makes (write, read what arrived meanwhile, plan again) before it stops
#: because producers keep writing.
MAX_ROUNDS = 8

#: The phases a run goes through, in order, as the state file records them.
PHASES = ("planned", "rewriting", "rewritten", "tombstoning", "written", "verified")

#: Progress of a step: (done, total, elapsed seconds, what).
ProgressFn = Callable[[int, int, float, str], None]
#: Asked once before the first write, with the plan: False stops the run, nothing written.
ConfirmFn = Callable[["MigrationPlan"], bool]

#: Reads a topic: one Fold per partition, in partition order.
Reader = Callable[[str], list[Fold]]
#: The final check of the target topic (the seam a topic audit plugs into).
Verifier = Callable[[str, Declarations, int], Verification]
#: Makes a run's planner: (declarations, target partitions, whether the target exists).
PlannerFactory = Callable[[Declarations, int, bool], "Planner"]


class TopicBusyError(KeyguardError):
    """Producers kept writing rows under an old key while the migration ran, round after
    round: it stopped after a completed round (nothing half-done); phantoms remain."""

    kind = "topic-busy"
    exit_code = EXIT_BREAKING


class MigrationDeclinedError(KeyguardError):
    """The user answered no before the first write: nothing was written."""

    kind = "declined"
    exit_code = EXIT_BREAKING


class UndecidedRowsError(KeyguardError):
    """Rows whose latest state the topic does not decide: records on different partitions that
    supersede none of each other, with equal times and different values."""

    kind = "undecided-rows"
    exit_code = EXIT_BREAKING


class ValueFieldsDroppedError(KeyguardError):
    """Rows to rewrite carry value fields the table does not declare: the rewrite, made from
    the declared columns, would drop them."""

    kind = "value-fields-dropped"


class TopicLog(Protocol):
    """The topic as a migration reads and writes it (Kafka; or memory, in the model test)."""

    def read(self, topic: str, folds: Sequence[Fold] | None = None) -> list[Fold]:
        """Every partition up to its end now, folded: from the beginning (`folds` None), or
        going on from where each of `folds` stopped."""
        ...

    def produce(self, topic: str, writes: Sequence[Write]) -> int:
        """Every write, each to its partition, with its header; returns once all are
        acknowledged (the count), raises otherwise."""
        ...


@dataclass(frozen=True)
class Migration:
    """What to migrate: the table's columns, the encodings in the topic (`old`: full
    upsert-kafka table options, one set per encoding) and the one to write (`new`)."""

    topic: str
    bootstrap: str
    table: RowType
    old: tuple[Mapping[str, Any], ...]
    new: Mapping[str, Any]
    #: A cut-over writes here (created when missing); None: the topic itself.
    to_topic: str | None = None
    #: The target's partition count; None: the target's own (the source's for a new target).
    partitions: int | None = None
    #: librdkafka settings (security, timeouts) for the consumers and the producer.
    properties: Mapping[str, Any] = field(default_factory=dict)
    #: Where progress is recorded; None: `default_state_path`.
    state_path: Path | None = None
    dry_run: bool = False

    @property
    def target(self) -> str:
        return self.to_topic or self.topic

    @property
    def cut_over(self) -> bool:
        return self.to_topic is not None and self.to_topic != self.topic

    def fingerprint(self) -> str:
        """Identifies the migration in its state file: same declarations, same migration."""
        text = json.dumps({"topic": self.topic, "target": self.target, "table": self.table.sql(),
                           "old": [dict(sorted(o.items())) for o in self.old],
                           "new": dict(sorted(self.new.items())), "partitions": self.partitions},
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def state_dir() -> Path:
    """Where migrations record their progress: `$XDG_STATE_HOME/keyguard/migrate`, by default
    `~/.local/state/keyguard/migrate` (never the working directory)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "keyguard" / "migrate"


def default_state_path(topic: str, to_topic: str | None = None, bootstrap: str = "") -> Path:
    """`<topic>[-to-<target>]-<cluster>.json` in `state_dir()`; <cluster> tells clusters with
    a topic of the same name apart (a hash of the bootstrap servers)."""
    name = topic if not to_topic or to_topic == topic else f"{topic}-to-{to_topic}"
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:150]
    cluster = hashlib.sha256(bootstrap.encode()).hexdigest()[:8]
    return state_dir() / f"{safe}-{cluster}.json"


# --------------------------------------------------------------------------------------------
# The state file
# --------------------------------------------------------------------------------------------


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InvalidOptionError(f"migration state file {path} cannot be read: {exc}",
                                 hint="delete it (the topic itself says what is done) or "
                                      "give another --state") from None
    return data if isinstance(data, dict) else None


def write_state(path: Path, state: Mapping[str, Any]) -> None:
    """Atomically: a temporary file beside it, then os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(dict(state), f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


def migrate_topic(m: Migration, *, registry: Registry | None = None,
                  reader: Reader | None = None, verify: Verifier | None = None,
                  producer_factory: ProducerFactory | None = None,
                  progress: ProgressFn | None = None,
                  confirm: ConfirmFn | None = None,
                  planner: PlannerFactory | None = None) -> MigrationReport:
    """Run (or, with `dry_run`, plan) a migration; see the module docstring.

    `registry` is handed to every codec (else the formats' url options name theirs);
    `reader` reads a topic's folds (default: this process, `read_folds`); `planner` makes the
    rounds' planner (default: `FoldPlanner`, in this process; the Spark form plans in
    executors); `verify` checks the target at the end (default: `verify_topic`, then the
    audit, `audited`);
    `producer_factory` builds the librdkafka producer (tests inject failures with it);
    `progress` hears about records read and written; `confirm` is asked before the first write.
    """
    for options in (*m.old, m.new, m.properties):
        register_options(options)  # their secrets never reach a message or the report
    if m.partitions is not None and (isinstance(m.partitions, bool)
                                     or not isinstance(m.partitions, int) or m.partitions < 1):
        raise InvalidOptionError(f"partitions must be a whole number, at least 1; got "
                                 f"{m.partitions!r}",
                                 hint="leave it out to keep the target's partition count")
    kafka = KafkaRanges(m.bootstrap, m.properties)
    admin = KafkaTopicInspector(m.bootstrap, dict(m.properties), timeout_s=10.0)
    log = KafkaTopicLog(m, kafka, reader, producer_factory, progress)
    report = MigrationReport(m.topic, m.target, m.dry_run)
    # Every option checked first (exit 2 before any broker), then the broker: a topic that is
    # not there, or a broker that does not answer, stops the run before any schema is registered.
    decl = declarations(m, registry, report, bind=False)
    partitions = target_partitions(m, admin, report)
    bind_new_ids(decl, m, registry, report)
    state_path = m.state_path or default_state_path(m.topic, m.to_topic, m.bootstrap)
    report.state_path = str(state_path)
    state = _resume(state_path, m, report)

    def on_phase(phase: str, plan: MigrationPlan) -> None:
        if phase == "planned":
            state.pop("verification", None)
            state.update(fingerprint=m.fingerprint(), topic=m.topic, target=m.target,
                         rewrites=plan.rewrite_count, tombstones=plan.tombstone_count,
                         runs=_count(state.get("runs")) + 1)
        state["rewrites_acknowledged"] = report.rewrites_acknowledged
        state["tombstones_acknowledged"] = report.tombstones_acknowledged
        _phase(state_path, state, phase)

    make = planner or (lambda d, n, exists: FoldPlanner(log, d, n, m.topic, m.target, exists))
    run_rounds(make(decl, partitions.count, partitions.exists), report, source=m.topic,
               target=m.target, dry_run=m.dry_run, on_phase=on_phase,
               prepare=lambda: partitions.create(admin, m), confirm=confirm)
    if m.dry_run:
        report.notes.append("dry run: nothing was written")
        return report
    read = reader or (lambda topic: log.read(topic))
    check = verify or (lambda topic, d, n: audited(
        verify_topic(read, topic, d, n), m, d, registry))
    report.verification = check(m.target, decl, partitions.count)
    state["verification"] = {"live_keys": report.verification.live_keys,
                             "phantom_keys": report.verification.phantom_keys,
                             "old_encoded": report.verification.old_encoded,
                             "misplaced": report.verification.misplaced,
                             "pending": report.verification.pending}
    _phase(state_path, state, "verified" if report.verification.clean else "written")
    return report


class Planner(Protocol):
    """A migration's rounds over a topic: `plan` what the records read so far need, `write`
    a plan's rewrites or its tombstones (returns once all are acknowledged), `read_more`
    what arrived since. `FoldPlanner` does it in this process; the Spark form
    (`keyguard.sparkio.migrate_spark`) in executors, the driver holding counts only."""

    records_read: int
    null_keys: int

    def plan(self) -> MigrationPlan: ...

    def write(self, plan: MigrationPlan, *, tombstones: bool) -> int: ...

    def read_more(self) -> None: ...


@dataclass
class FoldPlanner:
    """The rounds in this process: the topic's slots folded in memory (`Fold`), every
    candidate classified once (cached by position) and planned by `plan_migration`."""

    log: TopicLog
    decl: Declarations
    partitions: int
    source: str
    target: str
    target_exists: bool = True
    records_read: int = 0
    null_keys: int = 0

    def __post_init__(self) -> None:
        self.cache: dict[tuple[str, int, int], Classified] = {}
        self.folds = self.log.read(self.source)
        self.targets = self.log.read(self.target) if self.cut_over and self.target_exists \
            else None
        self.records_read = sum(f.records for f in self.folds)
        self.null_keys = sum(f.null_keys for f in self.folds)

    @property
    def cut_over(self) -> bool:
        return self.target != self.source

    def plan(self) -> MigrationPlan:
        source = classify_all(self.folds, self.decl, self.source, self.cache)
        target = classify_all(self.targets or [], self.decl, self.target, self.cache) \
            if self.cut_over else None
        return plan_migration(source, self.partitions, target=target)

    def write(self, plan: MigrationPlan, *, tombstones: bool) -> int:
        return self.log.produce(self.target, plan.tombstones if tombstones else plan.rewrites)

    def read_more(self) -> None:
        self.folds = self.log.read(self.source, self.folds)
        if self.cut_over:
            self.targets = self.log.read(self.target, self.targets)


def migrate_rounds(log: TopicLog, decl: Declarations, partitions: int,
                   report: MigrationReport, *, source: str, target: str,
                   target_exists: bool = True, dry_run: bool = False,
                   on_phase: Callable[[str, MigrationPlan], None] | None = None,
                   prepare: Callable[[], None] | None = None,
                   confirm: ConfirmFn | None = None,
                   max_rounds: int = MAX_ROUNDS) -> None:
    """`run_rounds` in this process (`FoldPlanner`)."""
    run_rounds(FoldPlanner(log, decl, partitions, source, target, target_exists), report,
               source=source, target=target, dry_run=dry_run, on_phase=on_phase,
               prepare=prepare, confirm=confirm, max_rounds=max_rounds)


def run_rounds(planner: Planner, report: MigrationReport, *, source: str, target: str,
               dry_run: bool = False,
               on_phase: Callable[[str, MigrationPlan], None] | None = None,
               prepare: Callable[[], None] | None = None,
               confirm: ConfirmFn | None = None,
               max_rounds: int = MAX_ROUNDS) -> None:
    """Plan and write in rounds until the plan is empty: each round writes its rewrites,
    waits until all are acknowledged, then writes its retirement tombstones, then reads what
    arrived meanwhile (its own records and any producer's) and plans again. `report.plan` is
    the first round's; the written counts add up over the rounds."""
    phase = on_phase or (lambda _phase, _plan: None)
    for round_ in range(1, max_rounds + 1):
        plan = planner.plan()
        if round_ == 1:
            report.plan = plan
            report.records_read, report.null_keys = planner.records_read, planner.null_keys
        if plan.undecided_keys:
            raise _undecided(plan, source, round_)
        if plan.dropping_keys:
            raise _dropping(plan, source, round_)
        if dry_run or plan.empty:
            return
        if round_ == 1:
            if confirm is not None and not confirm(plan):
                raise MigrationDeclinedError(
                    f"topic {target!r}: not confirmed; nothing was written",
                    hint="run again and answer y, or pass --yes (scripts); --dry-run shows "
                         "the plan")
            phase("planned", plan)
            if prepare is not None:
                prepare()
        else:
            report.notes.append(
                f"round {round_}: {plan.rewrite_count} rewrites and {plan.tombstone_count} "
                "tombstones for records that arrived while the migration wrote")
        phase("rewriting", plan)
        report.rewrites_acknowledged += planner.write(plan, tombstones=False)
        phase("rewritten", plan)
        phase("tombstoning", plan)
        report.tombstones_acknowledged += planner.write(plan, tombstones=True)
        phase("written", plan)
        planner.read_more()
    raise TopicBusyError(
        f"topic {source!r}: producers kept writing rows under an old key while the migration "
        f"ran: after {max_rounds} rounds there is still something to move; every round "
        "completed (each rewrite acknowledged before its tombstones), so no row is lost, but "
        "rows written meanwhile under an old key are still phantoms for plain consumers",
        hint="switch the producers to the new key (or pause them), then run again")


def _undecided(plan: MigrationPlan, topic: str, round_: int) -> UndecidedRowsError:
    shown = "; ".join(
        f"new key {show_bytes(k)}: " + ", ".join(f"{e} p{p}@{o}" for e, p, o, _ in g)
        for k, g in plan.undecided)
    written = "nothing was written" if round_ == 1 else \
        f"rounds 1 to {round_ - 1} completed; nothing of round {round_} was written"
    return UndecidedRowsError(
        f"topic {topic!r}: {plan.undecided_keys} row(s) whose latest state cannot be decided: "
        f"records on different partitions, written concurrently with equal timestamps and "
        f"different values ({shown}); {written}",
        hint="write the right value of each such row once more (under any key), then run "
             "again")


def _dropping(plan: MigrationPlan, topic: str, round_: int) -> ValueFieldsDroppedError:
    fields = sorted({f for _, lost in plan.dropping for f in lost})
    where = "; ".join(f"{w}: {', '.join(lost)}" for w, lost in plan.dropping[:3])
    written = "nothing was written" if round_ == 1 else \
        f"rounds 1 to {round_ - 1} completed; nothing of round {round_} was written"
    return ValueFieldsDroppedError(
        f"topic {topic!r}: {plan.dropping_keys} row(s) to rewrite carry value field(s) "
        f"{', '.join(map(repr, fields))} that the table does not declare ({where}): "
        f"rewritten from the declared columns they would lose them; {written}",
        hint="declare every value field in the table (--columns, or the Flink DDL), nullable "
             "when some records lack it, then run again")


@dataclass
class KafkaTopicLog:
    """The topic on the brokers: read in this process (or the first full read by `full`,
    the Spark form's tasks), written by one producer per call."""

    m: Migration
    kafka: KafkaRanges
    full: Reader | None = None
    factory: ProducerFactory | None = None
    progress: ProgressFn | None = None

    def read(self, topic: str, folds: Sequence[Fold] | None = None) -> list[Fold]:
        if folds is None and self.full is not None:
            return self.full(topic)
        return read_folds(self.kafka, topic, since=folds, progress=self.progress)

    def produce(self, topic: str, writes: Sequence[Write]) -> int:
        if not writes:
            return 0
        return produce_writes(self.m, writes, self.factory, self.progress, len(writes))


def declarations(m: Migration, registry: Registry | None,
                 report: MigrationReport | None = None, *, bind: bool = True) -> Declarations:
    """The plans of the new and the old encodings (every option checked), and, with `bind`,
    the new one's schema ids bound (`bind_new_ids`)."""
    if not m.old:
        raise InvalidOptionError("no old key encoding declared",
                                 hint="give the key format the topic holds now (--old-key-format)")

    def plan(options: Mapping[str, Any]) -> UpsertPlan:
        return open_plan(m.table, {**options, TOPIC.key: m.topic}, registry=registry)

    new = open_plan(m.table, {**m.new, TOPIC.key: m.target}, registry=registry)
    decl = Declarations(new, tuple(plan(o) for o in m.old), tuple(_label(o) for o in m.old))
    if bind:
        bind_new_ids(decl, m, registry, report)
    return decl


def bind_new_ids(decl: Declarations, m: Migration, registry: Registry | None,
                 report: MigrationReport | None = None) -> None:
    """The new encoding's schema ids, bound before the first record: registered, unless a dry
    run, which only looks them up."""
    new = decl.new
    if not m.dry_run:
        bind_plan_schema_ids(new, registry)
        return
    for codec in (new.key_codec, new.value_codec):
        if not needs_schema_id(codec):
            continue
        guid: str | UUID | None
        try:
            schema_id, guid = resolve_binding(codec, registry, register=False)
        except RegistryError:
            from uuid import UUID  # lazy: only a dry run's placeholder GUID

            # placeholders: a dry run registers nothing
            schema_id, guid = 0, UUID(int=0) if codec.frame.needs_guid else None
            if report is not None:
                report.notes.append(
                    f"the new {codec.context.role} schema is not registered yet: the run "
                    "registers it; the partitions shown assume a placeholder id")
        codec.bind_schema_id(schema_id, guid)


def _label(options: Mapping[str, Any]) -> str:
    fmt = options.get("key.format", "?")
    given = ", ".join(f"{k}={v}" for k, v in sorted(options.items())
                      if k.startswith(f"key.{fmt}.") and not k.endswith(".url")
                      and not is_secret_key(k))
    pk = options.get("primary-key", "?")
    return f"{fmt}({pk}{'; ' + given if given else ''})"


@dataclass
class TargetPartitions:
    """The target's partition count, and whether the target must be created or grown first."""

    count: int
    exists: bool
    current: int | None

    def create(self, kafka: KafkaTopicInspector, m: Migration) -> None:
        """Before the first record: create a missing cut-over target (compacted), or add
        partitions to one that has fewer."""
        from confluent_kafka.admin import NewPartitions, NewTopic

        admin = kafka.admin()
        try:
            if not self.exists:
                fut = admin.create_topics([NewTopic(m.target, self.count, config={
                    "cleanup.policy": "compact"})])[m.target]
                fut.result(30)
                self.exists, self.current = True, self.count
            elif self.current is not None and self.current < self.count:
                admin.create_partitions([NewPartitions(m.target, self.count)])[m.target].result(30)
                self.current = self.count
        except Exception as exc:
            raise kafka.unavailable(
                f"cannot prepare topic {m.target!r} with {self.count} partitions", exc) from None


def target_partitions(m: Migration, kafka: KafkaTopicInspector,
                      report: MigrationReport | None = None) -> TargetPartitions:
    source = _partitions(kafka, m.topic)
    if source is None:
        raise InvalidOptionError(f"topic {m.topic!r} does not exist at {m.bootstrap}",
                                 hint="check --topic and --bootstrap")
    current = source if not m.cut_over else _partitions(kafka, m.target)
    want = m.partitions or current or source
    if current is not None and want < current:
        raise InvalidOptionError(
            f"topic {m.target!r} has {current} partitions; Kafka cannot reduce them to {want}",
            hint="migrate to a new topic with --to-topic and --new-partitions")
    if report is not None:
        if current is None:
            report.notes.append(f"topic {m.target!r} does not exist: it is created compacted "
                                f"with {want} partitions")
        elif want > current:
            report.notes.append(f"topic {m.target!r} grows from {current} to {want} partitions")
    return TargetPartitions(want, current is not None, current)


def _partitions(kafka: KafkaTopicInspector, topic: str) -> int | None:

    return kafka.partitions(kafka.admin(), topic)


def read_folds(kafka: KafkaRanges, topic: str, *, threads: int = 8,
               since: Sequence[Fold] | None = None,
               progress: ProgressFn | None = None) -> list[Fold]:
    """Every partition up to its end captured now, folded by key bytes, in this process; up to
    `threads` partitions at a time (each read is mostly waiting for the broker). `since`: the
    folds of an earlier read, continued from where each stopped."""
    ranges = kafka.capture(topic)
    before = list(since or ())
    jobs = [(r, before[r.partition] if r.partition < len(before) else None) for r in ranges]
    total = sum(max(0, r.end - max(r.start, f.end if f is not None else 0)) for r, f in jobs)
    tick = _Ticker(total, progress, f"records read from {topic}")
    if len(jobs) <= 1 or threads <= 1:
        return [_fold(kafka, r, f, tick) for r, f in jobs]
    with ThreadPoolExecutor(max_workers=min(threads, len(jobs))) as pool:
        return list(pool.map(lambda job: _fold(kafka, job[0], job[1], tick), jobs))


class _Ticker:
    """Counts records read by several threads for one progress line."""

    def __init__(self, total: int, progress: ProgressFn | None, what: str) -> None:
        self.total, self.progress, self.what = total, progress, what
        self.done, self.started = 0, time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, n: int) -> None:
        if self.progress is None:
            return
        with self._lock:
            self.done += n
            done = self.done
        self.progress(done, self.total, time.monotonic() - self.started, self.what)


def _fold(kafka: KafkaRanges, r: OffsetRange, fold: Fold | None = None,
          tick: Callable[[int], None] | None = None) -> Fold:
    fold = fold if fold is not None else Fold(topic=r.topic, partition=r.partition)
    start = max(r.start, fold.end)
    if start < r.end:
        for batch in kafka.read(replace(r, start=start), headers=True):
            fold.add(batch)
            if tick is not None:
                tick(len(batch))
    fold.end = max(fold.end, r.end)
    return fold


def classify_all(folds: Sequence[Fold], decl: Declarations, topic: str,
                 cache: dict[tuple[str, int, int], Classified] | None = None,
                 ) -> list[Classified]:
    """Every candidate record of every slot, classified (`cache`: by position, across the
    rounds of one run), marked when it is its slot's last record."""
    out = []
    for fold in folds:
        for slot in fold.slots.values():
            for e in slot.open:
                c = cache.get(e.position) if cache is not None else None
                if c is None:
                    c = classify(e, decl, topic)
                    if cache is not None:
                        cache[e.position] = c
                out.append(replace(c, tail=e is slot.tail))
    return out


def verify_topic(read: Reader, topic: str, decl: Declarations, partitions: int) -> Verification:
    """The default verification: the topic read again, every live row under the new key,
    once, on its murmur2 partition."""
    return verify_entries(topic, classify_all(read(topic), decl, topic), partitions)


def audited(own: Verification, m: Migration, decl: Declarations,
            registry: Registry | None) -> Verification:
    """`own` with `keyguard audit`'s counts of the target under the new declaration: the
    migration ends with the audit the command runs (phantom keys, misplaced records), besides
    its own check, which also knows the old encodings."""
    result = audit_topic(m.target, decl.new, bootstrap=m.bootstrap, properties=m.properties,
                         registry=registry)
    return replace(own, audit=(result.phantom_keys, result.misplaced_keys,
                               result.missed_deletes, result.mixed_framings))


#: Records handed to the producer between two progress reports.
PROGRESS_CHUNK = 10_000


def produce_writes(m: Migration, writes: Iterable[Write],
                   factory: ProducerFactory | None = None,
                   progress: ProgressFn | None = None, total: int | None = None) -> int:
    """Every record sent to its explicit partition, `PROGRESS_CHUNK` at a time (`writes` may
    be a stream); returns when all are acknowledged, raises `TaskDeliveryError` (with counts)
    otherwise."""
    config = producer_config({**MIGRATE_PRODUCER_TIMEOUTS, **m.properties,
                              "bootstrap.servers": m.bootstrap}, "at-least-once")
    kwargs: dict[str, Any] = {"factory": factory} if factory is not None else {}
    advice = (f"check that {m.bootstrap} is reachable and the security settings "
              "(--kafka-config); if the brokers are up but slow to acknowledge, raise the "
              f"delivery timeout (now {config.get('message.timeout.ms')} ms): --kafka-config "
              "message.timeout.ms=120000. Run again: what was acknowledged is read back from "
              "the topic, nothing is lost")
    producer = UpsertProducer(topic=m.target, config=config, sender="keyguard migrate",
                              delivery_advice=advice, **kwargs)
    try:
        started, sent, what = time.monotonic(), 0, ""
        stream = iter(writes)
        while chunk := list(itertools.islice(stream, PROGRESS_CHUNK)):
            what = what or ("tombstones sent" if chunk[0].value is None else "rewrites sent")
            producer.send_with_headers([w.key for w in chunk], [w.value for w in chunk],
                                       [w.partition for w in chunk], [w.headers for w in chunk])
            sent += len(chunk)
            if progress is not None:
                progress(sent, total if total is not None else sent,
                         time.monotonic() - started, what)
        return producer.finish().records
    except BaseException:
        producer.abort()
        raise


def _resume(path: Path, m: Migration, report: MigrationReport) -> dict[str, Any]:
    previous = read_state(path)
    if previous is None:
        return {"started_at": _now()}
    if previous.get("fingerprint") != m.fingerprint():
        report.notes.append(f"state file {path} is from another migration (other declarations): "
                            "it is replaced")
        return {"started_at": _now()}
    report.resumed_from = str(previous.get("phase"))
    return {**previous, "resumed_at": _now()}


def _count(value: Any) -> int:
    """A count from the state file, which is the user's to edit: anything else counts 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _phase(path: Path, state: dict[str, Any], phase: str) -> None:
    state["phase"] = phase
    state["updated_at"] = _now()
    write_state(path, state)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
