"""`sparkio.migrate`, and `keyguard migrate --spark`: the migration run by Spark, no process
holding the table.

The rounds, the model and the report are `keyguard migrate`'s (`keyguard.sparkio.migrate_topic`
`run_rounds`, `keyguard.sparkio.migrate_plan`); only where the work happens differs:

1. The driver captures each partition's end offset and cuts the log into stretches of at
   most `chunk_records` offsets, one task each. A task reads its stretch, folds it into slots
   (`Fold`) and classifies each slot's candidates under the declarations (rebuilt in the
   executor from picklable specs, the new schema ids pinned by the driver): a `SlotPart` per
   key byte string. Its memory is bounded by its stretch, not by the topic.
2. A shuffle combines the parts of each slot (`SlotPart.merge`: any stretches, in any order),
   and a second groups the candidates by the new key of their row. Each row is planned where
   it lands (`plan_row`); the plan stays there (memory and disk) and the driver receives a
   `Tally` (counts and a few examples), never keys. Both shuffles spill to disk as Spark's do.
3. The rewrites are produced from the executors, each task waiting until its records are
   acknowledged; the job ends only when every task has (a barrier: no tombstone is sent before
   every rewrite is acknowledged). Then the tombstones, the same way.
4. The next round: when every end offset is where the read stopped plus what the run wrote
   there, nothing but the run's own writes arrived, and the model plans nothing more (its
   rewrites supersede what they saw, its retirements retire it). Anything else (another
   producer, a send that landed twice) and the round reads the topic again from the
   beginning and plans again. The verification reads the target again from the beginning, in
   a fresh job, and checks it row by row (`Checked`): it is what says "verified".

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
from keyguard.formats.registry.registration import (
    needs_schema_id,
    open_plan_registries,
    plan_guids,
)
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
from keyguard.sparkio.migrate_report import MigrationReport
from keyguard.sparkio.migrate_topic import (
    ConfirmFn,
    Migration,
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

#: The key under which a read task reports its counts (records, null keys) beside its slots;
#: no slot key (a (topic, partition, key bytes) tuple) or new key (bytes) is None.
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
    #: The new encoding's schema GUIDs, where a header framing writes them.
    new_guids: tuple[str | None, str | None] = (None, None)

    @classmethod
    def of(cls, decl: Declarations, registry: Registry | None) -> DeclarationSpecs:
        ids = tuple(c.schema_id if needs_schema_id(c) and c.has_schema_id else None
                    for c in (decl.new.key_codec, decl.new.value_codec))
        return cls(decl.new.spec, (ids[0], ids[1]), tuple(p.spec for p in decl.old),
                   decl.labels, registry, new_guids=plan_guids(decl.new))

    def build(self) -> Declarations:
        """The declarations, built once per Python worker and run."""
        built = _BUILT.get(self.token)
        if built is None:
            new = self._plan(self.new)
            for codec, schema_id, guid in zip((new.key_codec, new.value_codec), self.new_ids,
                                              self.new_guids, strict=True):
                if schema_id is not None and needs_schema_id(codec):
                    codec.bind_schema_id(schema_id, guid)
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


def combine_all(counts: Iterable[tuple[int, int]]) -> tuple[int, int]:
    total = (0, 0)
    for c in counts:
        total = combine(total, c)
    return total


def candidates(item: tuple[Any, Any]) -> Iterator[tuple[Any, Any]]:
    """A combined slot's candidates, keyed by the new key of their row (the read's counts go
    on under their own key, to the tally)."""
    key, part = item
    if key == COUNTS:
        yield COUNTS, part
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
        if new_key == COUNTS:
            tally.records, tally.null_keys = combine_all(group)
            continue
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
        if new_key != COUNTS:
            checked.add(new_key, list(group), partitions)
    yield checked


class SparkPlanner:
    """`keyguard.sparkio.migrate_topic.Planner` on Spark: each round one job reads the topic
    from the beginning, combines the slots and plans the rows (the plan, with its writes, kept
    on the executors, memory and disk); the writes are jobs of their own."""

    def __init__(self, spark: SparkSession, job: Job, m: Migration, *, target_exists: bool,
                 chunk_records: int = CHUNK_RECORDS, progress: ProgressFn | None = None):
        self.spark, self.job, self.m = spark, job, m
        self.chunk_records = chunk_records
        self.progress = progress
        self.target_exists = target_exists
        #: The end offsets the last read stopped at, and what the run wrote since, by
        #: (topic, partition): a round that finds nothing else arrived plans nothing.
        self.ends: dict[tuple[str, int], int] = {}
        self.wrote: dict[tuple[str, int], int] = {}
        self.quiet = False
        self.planned: RDD[Any] | None = None
        self.records_read = self.null_keys = 0

    @property
    def topics(self) -> list[str]:
        """What a round reads: the source, and a cut-over's target once it exists (the run
        creates it before its first write)."""
        m = self.m
        return [m.topic] + ([m.target] if m.cut_over and self.target_exists else [])

    def rows(self) -> RDD[Any]:
        """The topic read from the beginning (up to ends captured now), its slots combined,
        its candidates grouped by new key (with the read's counts under `COUNTS`)."""
        kafka = KafkaRanges(self.m.bootstrap, self.m.properties)
        ranges = [r for topic in self.topics for r in kafka.capture(topic)]
        self.ends = {(r.topic, r.partition): r.end for r in ranges}
        self.wrote = {}
        jobs = stretches(ranges, self.chunk_records)
        width = max(self.spark.sparkContext.defaultParallelism, len(jobs))
        job = self.job
        parts = self.spark.sparkContext.parallelize(jobs, max(1, len(jobs))) \
            .flatMap(lambda r: read_stretch(job, r))
        return parts.reduceByKey(combine, width).flatMap(candidates).groupByKey(width)

    def plan(self) -> MigrationPlan:
        if self.quiet:  # only the run's own writes arrived: the model plans nothing more
            return Tally().plan(held=True)
        job = self.job
        planned = self.rows().mapPartitions(
            lambda it: plan_rows(job.partitions, job.written, it))
        planned.persist(_storage())
        tally = _run(lambda: planned.filter(lambda t: t[0] is not None).map(lambda t: t[0])
                     .fold(Tally(), Tally.merge))  # type: ignore[arg-type]  # the filter keeps tallies
        self._done(self.planned)
        self.planned = planned
        if self.records_read == 0:
            self.records_read, self.null_keys = tally.records, tally.null_keys
        self._tell(tally.records, "records read and planned")
        return tally.plan(held=True)

    def write(self, plan: MigrationPlan, *, tombstones: bool) -> int:
        assert self.planned is not None or plan.empty
        if self.planned is None or not (plan.tombstone_count if tombstones
                                        else plan.rewrite_count):
            return 0
        m = self.m
        if tombstones:
            writes = self.planned.flatMap(lambda t: t[2])
        else:
            writes = self.planned.filter(lambda t: t[1] is not None).map(lambda t: t[1])
        # One job: it ends when every task's records are acknowledged (the barrier between
        # the rewrites and the tombstones).
        per_partition = _run(lambda: writes.mapPartitions(
            lambda it: [_produce_task(m, it)]).fold({}, _add_counts))
        self.target_exists = True
        for partition, n in per_partition.items():
            at = (m.target, partition)
            self.wrote[at] = self.wrote.get(at, 0) + n
        acknowledged = sum(per_partition.values())
        self._tell(acknowledged, "tombstones acknowledged" if tombstones
                   else "rewrites acknowledged")
        return acknowledged

    def read_more(self) -> None:
        """Whether anything but the run's own acknowledged writes arrived: every end offset
        is where the last read stopped plus what the run wrote there. Otherwise (another
        producer, a retried send that landed twice) the next round reads and plans again."""
        kafka = KafkaRanges(self.m.bootstrap, self.m.properties)
        now = {(r.topic, r.partition): r.end for t in self.topics for r in kafka.capture(t)}
        # A target the run created was empty when it was not read (its offsets start at 0).
        expected = {at: self.ends.get(at, 0) + self.wrote.get(at, 0) for at in now}
        self.quiet = now == expected and set(self.ends) | set(self.wrote) <= set(now)
        self._tell(sum(now.values()) - sum(self.ends.values()), "records arrived")

    def close(self) -> None:
        self._done(self.planned)
        self.planned = None

    def _done(self, rdd: RDD[Any] | None) -> None:
        if rdd is not None:
            rdd.unpersist()

    def _tell(self, n: int, what: str) -> None:
        if self.progress is not None:
            self.progress(n, n, 0.0, what)


def _add_counts(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def _produce_task(m: Migration, writes: Iterable[Write]) -> dict[int, int]:
    """A task: its writes produced, streamed; once all are acknowledged, how many went to
    each partition."""
    counted: dict[int, int] = {}
    stream = iter(writes)
    first = next(stream, None)
    if first is None:  # nothing planned here: no producer, no connection
        return counted

    def counting() -> Iterator[Write]:
        for w in itertools.chain((first,), stream):
            counted[w.partition] = counted.get(w.partition, 0) + 1
            yield w

    try:
        acknowledged = produce_writes(m, counting())
    except KeyguardError as exc:
        raise for_spark(exc)  # noqa: B904  (exc itself, printed first)
    if acknowledged != sum(counted.values()):  # finish() raises first; never silently short
        raise for_spark(KeyguardError(f"{acknowledged} of {sum(counted.values())} writes "
                                      "acknowledged"))
    return counted


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
        rows = SparkPlanner(spark, check, fresh, target_exists=True,
                            chunk_records=chunk_records).rows()
        checked = _run(lambda: rows.mapPartitions(lambda it: check_rows(partitions, it))
                       .fold(Checked(), Checked.merge))
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
