"""`sparkio.migrate`, and `keyguard migrate --spark`: the migration run by Spark, no process
holding the table.

The rounds, the model and the report are `keyguard migrate`'s (`keyguard.sparkio.migrate_topic`
`run_rounds`, `keyguard.sparkio.migrate_plan`); only where the work happens differs:

1. The driver captures each partition's end offset and cuts the log into stretches of at
   most `chunk_records` offsets, one task each. A task reads its stretch, folds it into slots
   (`Fold`) and classifies each slot's candidates under the declarations (rebuilt in the
   executor from picklable specs, the new schema ids pinned by the driver): a `SlotPart` per
   key byte string. Its memory is bounded by its stretch, not by the topic.
2. A shuffle combines the parts of each slot (`SlotPart.merge`, associative: the stretches of
   a partition in any grouping), and a second groups the candidates by the new key of their
   row. Each row is planned where it lands (`plan_row`); the driver receives a `Tally`
   (counts and a few examples), never keys. Both shuffles spill to disk as Spark's do.
3. The rewrites are produced from the executors, each task waiting until its records are
   acknowledged; the job ends only when every task has (a barrier: no tombstone is sent before
   every rewrite is acknowledged). Then the tombstones, the same way.
4. The next round reads what arrived since the ends of step 1 and combines it into the slots
   kept from the last round (persisted, memory and disk). The verification reads the target
   again from the beginning, in a fresh job, and checks it row by row (`Checked`).

A task that fails is retried by Spark: a rewrite or a retirement sent twice changes nothing
(both name what they supersede, `keyguard.guard.audit.markers`). A run killed anywhere is
repaired by running it again, as the command's: everything is decided from the topic.

The driver's memory stays flat as the topic grows: it holds the offset ranges, the tallies and
the examples. The executors hold a stretch each, and the shuffles' blocks.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keyguard.formats.errors import KeyguardError
from keyguard.formats.plan import PlanSpec, UpsertPlan
from keyguard.formats.registry import Registry
from keyguard.formats.registry.registration import needs_schema_id, open_plan_registries
from keyguard.formats.types import RowType
from keyguard.guard.offsets import KafkaRanges, OffsetRange, Record
from keyguard.sparkio.migrate_plan import (
    Checked,
    Classified,
    Declarations,
    Fold,
    MigrationPlan,
    SlotPart,
    Tally,
    Verification,
    Write,
    plan_row,
)
from keyguard.sparkio.migrate_topic import (
    ConfirmFn,
    Migration,
    MigrationReport,
    ProgressFn,
    Verifier,
    migrate_topic,
    produce_writes,
)
from keyguard.sparkio.workers import for_spark, relayed

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import SparkSession

#: Offsets a task reads and folds at most: what bounds an executor's memory for the read.
CHUNK_RECORDS = 200_000

#: The key under which a read task reports its counts (records, null keys) beside its slots
#: (None: Spark's hash of it needs no hash seed on the driver).
COUNTS = None


@dataclass(frozen=True)
class DeclarationSpecs:
    """The declarations as picklable specs: every executor builds its own codecs from them,
    with the new encoding's schema ids as the driver bound them (registered or looked up
    once, there), and `registry` (else the registries the options name, opened in the
    executor)."""

    new: PlanSpec
    new_ids: tuple[int | None, int | None]
    old: tuple[PlanSpec, ...]
    labels: tuple[str, ...]
    registry: Registry | None = None
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    @classmethod
    def of(cls, decl: Declarations, registry: Registry | None) -> DeclarationSpecs:
        ids = tuple(c.schema_id if needs_schema_id(c) and c.has_schema_id else None
                    for c in (decl.new.key_codec, decl.new.value_codec))
        return cls(decl.new.spec, (ids[0], ids[1]), tuple(p.spec for p in decl.old),
                   decl.labels, registry)

    def build(self) -> Declarations:
        """The declarations, built once per Python worker and run."""
        built = _BUILT.get(self.token)
        if built is None:
            new = self._plan(self.new)
            for codec, schema_id in zip((new.key_codec, new.value_codec), self.new_ids,
                                        strict=True):
                if schema_id is not None and needs_schema_id(codec):
                    codec.bind_schema_id(schema_id)
            built = Declarations(new, tuple(self._plan(s) for s in self.old), self.labels)
            _BUILT.clear()  # one run's at a time: a long-lived worker keeps no old codecs
            _BUILT[self.token] = built
        return built

    def _plan(self, spec: PlanSpec) -> UpsertPlan:
        if self.registry is not None:
            return spec.build(self.registry)
        return spec.build(registries=open_plan_registries(spec.options))


#: Declarations built in this Python worker, by run token.
_BUILT: dict[str, Declarations] = {}


@dataclass(frozen=True)
class Job:
    """What every task of a run needs, pickled once per job."""

    bootstrap: str
    properties: Mapping[str, Any]
    specs: DeclarationSpecs
    partitions: int
    #: The topic the run writes (the source, or a cut-over's target).
    written: str


def stretches(ranges: Iterable[OffsetRange], size: int) -> list[OffsetRange]:
    """Each range cut into consecutive stretches of at most `size` offsets."""
    out = []
    for r in ranges:
        if r.empty:
            continue
        start = max(r.start, 0)
        while start < r.end:
            out.append(OffsetRange(r.topic, r.partition, start, min(start + size, r.end)))
            start += size
    return out


def fold_stretch(decl: Declarations, topic: str, partition: int,
                 batches: Iterable[Sequence[Record]]) -> Iterator[tuple[Any, Any]]:
    """One stretch of a partition folded and classified: its counts (records, null keys),
    then a `SlotPart` per key byte string. Pure: the Spark task's body (`read_stretch`)."""
    fold = Fold(topic=topic, partition=partition)
    for batch in batches:
        fold.add(batch)
    yield COUNTS, (fold.records, fold.null_keys)
    for key, slot in fold.slots.items():
        yield (topic, partition, key), SlotPart.of(slot, decl, topic)


def read_stretch(job: Job, r: OffsetRange) -> Iterator[tuple[Any, Any]]:
    """A task: one stretch read from Kafka and folded (`fold_stretch`)."""
    try:
        batches = KafkaRanges(job.bootstrap, job.properties).read(r, headers=True)
        yield from fold_stretch(job.specs.build(), r.topic, r.partition, batches)
    except KeyguardError as exc:
        raise for_spark(exc)  # noqa: B904  (exc itself, printed first)


def combine(a: Any, b: Any) -> Any:
    """Two values of one key of `fold_stretch`'s output, combined (any order, any grouping)."""
    if isinstance(a, SlotPart):
        return a.merge(b)
    return a[0] + b[0], a[1] + b[1]  # the counts


def candidates(item: tuple[Any, Any]) -> Iterator[tuple[bytes, Classified]]:
    """A combined slot's candidates, keyed by the new key of their row."""
    key, part = item
    if key == COUNTS:
        return
    for c in part.candidates():
        if c.new_key is not None:
            yield c.new_key, c


def plan_rows(partitions: int, written: str,
              rows: Iterable[tuple[bytes, Iterable[Classified]]],
              ) -> Iterator[tuple[Tally | None, Write | None, tuple[Write, ...]]]:
    """Rows (new key, candidates) planned: each row's writes (rewrite, tombstones), then one
    tally of them all. `written`: the topic the run writes."""
    tally = Tally()
    for new_key, group in rows:
        row = plan_row(new_key, list(group), partitions, lambda c: c.entry.topic == written)
        tally.add(new_key, row)
        if row.rewrite is not None or row.tombstones:
            yield None, row.rewrite, row.tombstones
    yield tally, None, ()


def check_rows(partitions: int, rows: Iterable[tuple[bytes, Iterable[Classified]]],
               ) -> Iterator[Checked]:
    """Rows (new key, candidates) checked: one `Checked`."""
    checked = Checked()
    for new_key, group in rows:
        checked.add(new_key, list(group), partitions)
    yield checked


class SparkPlanner:
    """`keyguard.sparkio.migrate_topic.Planner` on Spark: the slots are an RDD kept between
    rounds (memory and disk), the rows are planned and written in executors."""

    def __init__(self, spark: SparkSession, job: Job, m: Migration, *, target_exists: bool,
                 chunk_records: int = CHUNK_RECORDS, progress: ProgressFn | None = None):
        self.spark, self.job, self.m = spark, job, m
        self.chunk_records = chunk_records
        self.progress = progress
        self.topics = [m.topic] + ([m.target] if m.cut_over and target_exists else [])
        self.ends: dict[tuple[str, int], int] = {}
        self.slots: RDD[Any] | None = None
        self.planned: RDD[Any] | None = None
        #: Partitions of the shuffles: the parallelism, or the first read's stretches.
        self.width = spark.sparkContext.defaultParallelism
        counts = self._read()
        self.records_read, self.null_keys = counts

    def _read(self) -> tuple[int, int]:
        """Reads what arrived since the last read (from the beginning, the first time) and
        combines it into the slots; the records and null keys it read."""
        kafka = KafkaRanges(self.m.bootstrap, self.m.properties)
        ranges = []
        for topic in self.topics:
            for r in kafka.capture(topic):
                since = self.ends.get((topic, r.partition), -1)
                ranges.append(OffsetRange(topic, r.partition, max(r.start, since), r.end))
                self.ends[(topic, r.partition)] = max(since, r.end)
        jobs = stretches(ranges, self.chunk_records)
        if not jobs and self.slots is not None:
            return 0, 0
        job = self.job
        sc = self.spark.sparkContext
        parts = sc.parallelize(jobs, max(1, len(jobs))).flatMap(lambda r: read_stretch(job, r))
        if self.slots is not None:
            parts = self.slots.union(parts)
        self.width = max(self.width, len(jobs))
        combined = parts.reduceByKey(combine, self.width)
        combined.persist(_storage())
        counts = _run(lambda: combined.filter(lambda kv: kv[0] == COUNTS).values().collect())
        old, self.slots = self.slots, combined
        self._done(old)
        got = counts[0] if counts else (0, 0)  # combined: one item
        self._tell(got[0], "records read")
        return got

    def plan(self) -> MigrationPlan:
        assert self.slots is not None
        job = self.job
        rows = self.slots.flatMap(candidates).groupByKey(self.width)
        planned = rows.mapPartitions(lambda it: plan_rows(job.partitions, job.written, it))
        planned.persist(_storage())
        tally = _run(lambda: planned.filter(lambda t: t[0] is not None).map(lambda t: t[0])
                     .fold(Tally(), lambda a, b: a.merge(b)))
        self._done(self.planned)
        self.planned = planned
        return tally.plan(held=True)

    def write(self, plan: MigrationPlan, *, tombstones: bool) -> int:
        assert self.planned is not None
        if not (plan.tombstone_count if tombstones else plan.rewrite_count):
            return 0
        m = self.m
        if tombstones:
            writes = self.planned.flatMap(lambda t: t[2])
        else:
            writes = self.planned.filter(lambda t: t[1] is not None).map(lambda t: t[1])
        # One job: it ends when every task's records are acknowledged (the barrier between
        # the rewrites and the tombstones).
        acknowledged = _run(lambda: writes.mapPartitions(
            lambda it: [_produce_task(m, it)]).sum())
        self._tell(int(acknowledged), "tombstones acknowledged" if tombstones
                   else "rewrites acknowledged")
        return int(acknowledged)

    def read_more(self) -> None:
        self._read()

    def close(self) -> None:
        self._done(self.planned)
        self._done(self.slots)
        self.planned = self.slots = None

    def _done(self, rdd: RDD[Any] | None) -> None:
        if rdd is not None:
            rdd.unpersist()

    def _tell(self, n: int, what: str) -> None:
        if self.progress is not None:
            self.progress(n, n, 0.0, what)


def _produce_task(m: Migration, writes: Iterator[Write]) -> int:
    """A task: its writes produced, streamed; returns once all are acknowledged."""
    first = next(writes, None)
    if first is None:
        return 0
    try:
        return produce_writes(m, itertools.chain((first,), writes))
    except KeyguardError as exc:
        raise for_spark(exc)  # noqa: B904  (exc itself, printed first)


def _storage() -> Any:
    from pyspark import StorageLevel  # lazy: pyspark

    return StorageLevel.MEMORY_AND_DISK


def _run(action: Any) -> Any:
    """A Spark action; a keyguard error a task raised comes back as itself."""
    try:
        return action()
    except KeyguardError:
        raise
    except Exception as exc:
        error = relayed(exc)
        if error is None:
            raise
        raise error from None


def spark_verifier(spark: SparkSession, job: Job, m: Migration,
                   chunk_records: int = CHUNK_RECORDS) -> Verifier:
    """The target read again from the beginning by a fresh job and checked row by row."""

    def verify(topic: str, decl: Declarations, partitions: int) -> Verification:
        check = Job(job.bootstrap, job.properties, job.specs, partitions, topic)
        fresh = Migration(topic=topic, bootstrap=m.bootstrap, table=m.table, old=m.old,
                          new=m.new, properties=m.properties)
        planner = SparkPlanner(spark, check, fresh, target_exists=True,
                               chunk_records=chunk_records)
        try:
            assert planner.slots is not None
            rows = planner.slots.flatMap(candidates).groupByKey(planner.width)
            checked = _run(lambda: rows.mapPartitions(lambda it: check_rows(check.partitions, it))
                           .fold(Checked(), lambda a, b: a.merge(b)))
        finally:
            planner.close()
        return checked.verification(topic)

    return verify


def migrate_with_spark(spark: SparkSession, *, topic: str, bootstrap: str,
                       table: RowType | str, old: Sequence[Mapping[str, Any]],
                       new: Mapping[str, Any], to_topic: str | None = None,
                       partitions: int | None = None,
                       properties: Mapping[str, Any] | None = None,
                       state_path: str | Path | None = None, dry_run: bool = False,
                       registry: Registry | None = None,
                       verify: Verifier | None = None,
                       chunk_records: int = CHUNK_RECORDS) -> MigrationReport:
    """`sparkio.migrate`: the migration read, planned and written by Spark tasks (see the
    module docstring); same guarantees and report as `keyguard migrate`. `table`: a RowType
    or Flink SQL columns; `chunk_records`: the offsets one task reads at most."""
    if isinstance(table, str):
        from keyguard.formats.sqltypes import parse_columns  # lazy: only for columns given as text

        table = parse_columns(table)
    m = Migration(topic=topic, bootstrap=bootstrap, table=table, old=tuple(old), new=new,
                  to_topic=to_topic, partitions=partitions, properties=dict(properties or {}),
                  state_path=Path(state_path) if state_path is not None else None,
                  dry_run=dry_run)
    return run_on_spark(spark, m, registry=registry, verify=verify,
                        chunk_records=chunk_records)


def run_on_spark(spark: SparkSession, m: Migration, *, registry: Registry | None = None,
                 verify: Verifier | None = None, chunk_records: int = CHUNK_RECORDS,
                 progress: ProgressFn | None = None,
                 confirm: ConfirmFn | None = None) -> MigrationReport:
    """`m` run by Spark (`migrate_with_spark`; `keyguard migrate --spark`)."""
    planners: list[SparkPlanner] = []

    def planner(decl: Declarations, count: int, exists: bool) -> SparkPlanner:
        job = Job(m.bootstrap, dict(m.properties), DeclarationSpecs.of(decl, registry), count,
                  m.target)
        planners.append(SparkPlanner(spark, job, m, target_exists=exists,
                                     chunk_records=chunk_records, progress=progress))
        return planners[-1]

    def verifier(topic: str, decl: Declarations, count: int) -> Verification:
        return spark_verifier(spark, planners[-1].job, m, chunk_records)(topic, decl, count)

    try:
        return migrate_topic(m, registry=registry, verify=verify or verifier,
                             planner=planner, progress=progress, confirm=confirm)
    finally:
        for p in planners:
            p.close()
