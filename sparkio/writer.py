"""Spark's side of a write: the DataSource writers, and write_upsert / serialize / prepare.

The data source's writer() resolves and guards (options -> plan -> guard verdict), on the
driver host, before Spark starts the job: the one enforcement point of every data-source write.
write_upsert and serialize use no data source: they guard in the caller's own process (the
driver, or a Spark Connect client), so nothing they do depends on sharing a disk or a Python
with Spark's driver. Each task serializes and produces its Arrow batches
(`keyguard.sparkio.producer`) and returns its `TaskStats`: in a commit message to the data source's
commit(), or as a row that write_upsert collects; they are summed into a `WriteSummary`. A
`WriteJob` is everything a task needs, as plain picklable values (the plan the driver resolved:
every option validated once, the table's layout; the partition count; the schema ids the driver
resolved after the guard passed): the writers hold no other state, no client crosses the wire, a
task validates no option again, and a task's codecs never open a registry
(`keyguard.sparkio.schema_ids`).

Nothing half-written: rows that cannot be written (a null primary-key column, a changelog kind
that is not +I, +U, -U or -D) fail the write before its first record. write_upsert checks them
in the shuffle's map stage, which ends before any write task starts; serialize and prepare
count them on the driver; a bare `df.write.format("upsert-kafka")` checks each task's whole
partition before that task produces (`sink.validate-partition`): Spark gives a data source no
way to see the rows before its tasks run, so other tasks may already have written theirs.

Ordering: Spark's Python Data Source API cannot ask Spark to distribute or sort the input, so
`df.write.format("upsert-kafka")` produces each partition as it is. `prepare` (and so
`write_upsert` and `serialize`) repartitions by the primary key and sorts each partition by the
input order (or sink.order-by), so all changes of one key come from one task, in order.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from keyguard.formats.errors import InvalidOptionError, KeyguardError, SchemaError
from keyguard.formats.plan import PlanSpec, UpsertPlan
from keyguard.formats.registry.registration import open_plan_registries, plan_guids
from keyguard.formats.secrets import redacting_logger
from keyguard.formats.spark_schema import from_spark_schema, with_declared
from keyguard.formats.types import RowType
from keyguard.sparkio.change_encoder import KINDS, ChangeEncoder, checked_first
from keyguard.sparkio.executors import missing_in_this_process, missing_on_workers, probe_workers
from keyguard.sparkio.headers import (
    HEADERS_COLUMN,
    arrow_type,
    headers_column,
    is_headers_field,
    to_rows,
)
from keyguard.sparkio.options import (
    BUFFER_FLUSH_INTERVAL,
    BUFFER_FLUSH_MAX_ROWS,
    CHANGELOG_COLUMN,
    DELIVERY,
    EXACTLY_ONCE,
    PRODUCER_REUSE,
    SINK_PARALLELISM,
    SUMMARY_FILE,
    TRANSACTIONAL_ID_PREFIX,
    VALIDATE_PARTITION,
    ConnectorOptions,
    resolve_connector,
)
from keyguard.sparkio.parallelism import default_parallelism
from keyguard.sparkio.producer import (
    TaskStats,
    UpsertProducer,
    changelog_kind_error,
    check_properties,
    null_key_error,
    produce_batches,
    producer_config,
)
from keyguard.sparkio.producer_pool import WORKER_POOL, ProducerPool
from keyguard.sparkio.schema_ids import (
    PinnedRegistry,
    PinnedVersion,
    pinned_references,
    resolve_write_ids,
)
from keyguard.sparkio.workers import for_spark, relayed

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from keyguard.sparkio.guarding import GuardOutcome

_LOG = redacting_logger("keyguard.sparkio")

#: The input-order column `prepare` adds before the shuffle and drops after the sort.
ORDER_COLUMN = "__keyguard_input_order"


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------


@dataclass
class UpsertCommitMessage(WriterCommitMessage):
    stats: TaskStats


@dataclass(frozen=True)
class WriteSummary:
    """What a write did, summed over its tasks. Holds no option values, so no secrets."""

    topic: str
    rows: int = 0
    records: int = 0
    upserts: int = 0
    tombstones: int = 0
    dropped: int = 0
    folded: int = 0
    bytes: int = 0
    #: Kafka partitions written, and the topic's partition count.
    partitions: tuple[int, ...] = ()
    topic_partitions: int = 0
    tasks: int = 0
    elapsed_s: float = 0.0
    #: Peak resident memory over the Python workers that ran the tasks.
    peak_worker_rss_bytes: int = 0
    delivery_guarantee: str = ""
    batch_id: int | None = None
    #: Seconds per phase (see `phases_of`); write_upsert adds its driver-side phases.
    phases: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def of(topic: str, stats: list[TaskStats], *, elapsed_s: float, topic_partitions: int,
           delivery_guarantee: str, batch_id: int | None = None,
           phases: Mapping[str, float] | None = None) -> WriteSummary:
        return WriteSummary(
            topic=topic,
            rows=sum(s.rows for s in stats),
            records=sum(s.records for s in stats),
            upserts=sum(s.upserts for s in stats),
            tombstones=sum(s.tombstones for s in stats),
            dropped=sum(s.dropped for s in stats),
            folded=sum(s.folded for s in stats),
            bytes=sum(s.bytes for s in stats),
            partitions=tuple(sorted({p for s in stats for p in s.partitions})),
            topic_partitions=topic_partitions,
            tasks=len(stats),
            elapsed_s=elapsed_s,
            peak_worker_rss_bytes=max((s.peak_rss_bytes for s in stats), default=0),
            delivery_guarantee=delivery_guarantee,
            batch_id=batch_id,
            phases=dict(phases or {}),
        )

    def __str__(self) -> str:
        batch = f" (micro-batch {self.batch_id})" if self.batch_id is not None else ""
        return (
            f"upsert-kafka wrote topic {self.topic}{batch}: {self.rows} rows -> "
            f"{self.records} records ({self.upserts} upserts, {self.tombstones} tombstones; "
            f"{self.dropped} -U dropped, {self.folded} folded in the buffer), "
            f"{self.bytes / 1e6:.2f} MB to {len(self.partitions)} of {self.topic_partitions} "
            f"partitions, {self.tasks} tasks, {self.elapsed_s:.1f}s, "
            f"{self.delivery_guarantee}, peak worker RSS "
            f"{self.peak_worker_rss_bytes / 2**20:.0f} MiB")


def phases_of(stats: list[TaskStats], *, guard_s: float, started: float | None
              ) -> dict[str, float]:
    """Where a write's time went: the guard in writer(), Spark until the first write task
    starts (planning, the input and the shuffle by key), the tasks' wall time, and the tasks'
    own phases summed over tasks (input: waiting for Spark's batches)."""
    phases = {"guard": guard_s}
    begun = [s.started_at for s in stats if s.started_at]
    ended = [s.ended_at for s in stats if s.ended_at]
    if begun and ended:
        if started is not None:
            phases["spark_until_tasks"] = max(0.0, min(begun) - started - guard_s)
            phases["writer_at"] = started  # epoch seconds, to place writer() in the job
        phases["tasks_wall"] = max(ended) - min(begun)
        phases["tasks_ended_at"] = max(ended)
    for name in ("input", "encode", "send", "finish"):
        phases[f"task_{name}"] = sum(getattr(s, f"{name}_s") for s in stats)
    phases["tasks_reusing_a_producer"] = sum(s.producer_reused for s in stats)
    return {k: round(v, 4) for k, v in phases.items()}


# --------------------------------------------------------------------------------------------
# The job a task runs
# --------------------------------------------------------------------------------------------


def table_type(schema: StructType, conn: ConnectorOptions) -> RowType:
    """The table written: the DataFrame's columns without the changelog column and the
    records' headers (`keyguard.sparkio.headers`)."""
    from pyspark.sql.types import StringType, StructType  # lazy: pyspark.sql.types on use

    changelog = conn[CHANGELOG_COLUMN]
    names = [f.name for f in schema.fields]
    if changelog:
        if changelog not in names:
            raise SchemaError(f"changelog.column '{changelog}' is not a column of the DataFrame",
                              hint="the columns are: " + ", ".join(names))
        if not isinstance(schema[changelog].dataType, StringType):
            raise SchemaError(f"changelog.column '{changelog}' must be a string column of "
                              "+I, +U, -U, -D")
    missing = [c for c in conn.order_by if c not in names]
    if missing:
        raise SchemaError(f"sink.order-by column{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(missing)} not in the DataFrame",
                          hint="the columns are: " + ", ".join(names))
    frame = from_spark_schema(StructType([f for f in schema.fields
                                          if f.name != changelog and not is_headers_field(f)]))
    return frame if conn.declared is None else declared_table(frame, conn.declared)


def declared_table(frame: RowType, declared: RowType) -> RowType:
    """The table a `flink.ddl` declares, written from a DataFrame: its columns in its order,
    a declared column the DataFrame lacks written as null (as Flink's INSERT of the other
    columns writes it), the DataFrame's types with the DDL's lengths and TIME/TIMESTAMP
    precisions (`with_declared`). A column the DDL does not declare, or a NOT NULL one the
    DataFrame lacks, is an error naming it: Flink refuses both INSERTs."""
    extra = [n for n in frame.names if n not in declared.names]
    if extra:
        s = "s" if len(extra) > 1 else ""
        raise SchemaError(
            f"flink.ddl: DataFrame column{s} {', '.join(extra)} not declared in the table "
            f"(its columns: {', '.join(declared.names)})",
            hint=f"drop {'them' if s else 'it'} from the DataFrame (df.drop(...)), or declare "
                 f"{'them' if s else 'it'} in the DDL")
    lacking = [f.name for f in declared.fields
               if f.name not in frame.names and not f.type.nullable]
    if lacking:
        s = "s" if len(lacking) > 1 else ""
        raise SchemaError(
            f"flink.ddl: NOT NULL column{s} {', '.join(lacking)} of the table missing from "
            "the DataFrame",
            hint=f"add {'them' if s else 'it'} to the DataFrame (withColumn), or declare "
                 f"{'them' if s else 'it'} nullable; a column left out is written as null")
    table = RowType(fields=tuple(frame.field(f.name) if f.name in frame.names else f
                                 for f in declared.fields), nullable=False)
    return with_declared(table, declared)


@dataclass(frozen=True)
class WriteJob:
    """Everything a task needs, as plain values (pickled to the executors): the plan the driver
    resolved once (`spec`: formats, layout; `conn`: the connector settings), never validated
    again in a task."""

    spec: PlanSpec
    conn: ConnectorOptions
    partitions: int
    #: Seconds the guard took in writer() (for the summary's phases).
    guard_s: float = 0.0
    #: The avro-confluent schema ids the driver resolved (None: the format has none). A
    #: task's codecs use these and never open a registry (`keyguard.sparkio.schema_ids`).
    key_schema_id: int | None = None
    value_schema_id: int | None = None
    #: The versions the codecs' schemas reference, resolved on the driver.
    references: tuple[PinnedVersion, ...] = ()
    #: The column holding each record's headers (`keyguard.sparkio.headers`), if any.
    headers_column: str | None = None
    #: The schema GUIDs a header framing writes (`plan_guids`), resolved with the ids.
    key_guid: str | None = None
    value_guid: str | None = None

    @property
    def table(self) -> RowType:
        return self.spec.layout.table

    def plan(self) -> UpsertPlan:
        """The driver's plan, its codecs built in a task from the validated options (nothing
        validated again) and answered by the pinned ids."""
        self.conn.register_secrets()
        pinned = PinnedRegistry(references=self.references)
        plan = self.spec.build(pinned)
        pinned.pin_plan(plan, self.key_schema_id, self.value_schema_id, self.key_guid,
                        self.value_guid)
        return plan

    def encoder(self) -> ChangeEncoder:
        return ChangeEncoder(self.plan(), self.partitions, self.conn[CHANGELOG_COLUMN],
                             self.headers_column)

    def producer(self, task: int) -> UpsertProducer:
        conn = self.conn
        guarantee = conn[DELIVERY]
        txid = (f"{conn[TRANSACTIONAL_ID_PREFIX]}-{task}" if guarantee == EXACTLY_ONCE
                else None)
        return UpsertProducer(
            topic=conn.topic,
            config=producer_config(conn.producer_properties, guarantee.value, txid),
            task=task,
            max_rows=conn[BUFFER_FLUSH_MAX_ROWS],
            interval_ms=conn[BUFFER_FLUSH_INTERVAL],
            transactional=txid is not None,
            secrets=conn.secrets(),
            pool=_worker_pool() if conn[PRODUCER_REUSE] else None,
        )

    def run(self, batches: Iterator[pa.RecordBatch]) -> TaskStats:
        """One task: check its whole partition (sink.validate-partition), then produce its
        batches; raises (and Spark retries) unless all were delivered."""
        task = _partition_id()
        # The producer first: an idempotent producer needs about 0.5 s to get its producer id
        # from the brokers (librdkafka retries on a timer), which it spends while the codecs
        # are built and Spark's first batch comes.
        producer = self.producer(task)
        try:
            encoder = self.encoder()
        except BaseException:
            producer.abort()
            raise
        if self.conn[VALIDATE_PARTITION]:
            outcome = (f"; task {task} produced nothing, but other tasks may have written "
                       "their partitions")
            batches = checked_first(
                batches, lambda b: encoder.check(b, scope=f" in partition {task}",
                                                 outcome=outcome))
        return produce_batches(batches, encoder, producer)

    def produce_task(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """mapInArrow body of write_upsert: produce, then return the TaskStats as one row
        (`STATS_SCHEMA`), so the stats travel back through Spark and not through a file."""
        import pyarrow as pa

        try:
            stats = self.run(batches)
        except KeyguardError as exc:
            raise for_spark(exc)  # noqa: B904  (exc itself, printed first)
        yield pa.record_batch([pa.array([json.dumps(dataclasses.asdict(stats))])],
                              names=["stats"])

    def serialize_task(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """mapInArrow body of serialize: key, value and partition columns, nothing produced."""
        import pyarrow as pa

        try:
            encoder = self.encoder()
            for batch in batches:
                enc = encoder.encode(batch)
                columns = [pa.array(enc.keys, pa.binary()), pa.array(enc.values, pa.binary()),
                           pa.array(enc.partitions, pa.int32())]
                if enc.headers is not None:  # the row's, the framing's: Spark's sink sends them
                    columns.append(pa.array([to_rows(h or ()) for h in enc.headers],
                                            arrow_type()))
                yield pa.record_batch(columns, names=SERIALIZED[:len(columns)])
        except KeyguardError as exc:
            raise for_spark(exc)  # noqa: B904  (exc itself, printed first)


#: The columns serialize returns, headers last when the rows have them.
SERIALIZED = ["key", "value", "partition", HEADERS_COLUMN]

#: The rows write_upsert's tasks return: one JSON TaskStats per task.
STATS_SCHEMA = "stats string"


def stats_of(rows: list[Any]) -> list[TaskStats]:
    """The TaskStats of the rows `WriteJob.produce_task` returned."""
    out = []
    for row in rows:
        data = json.loads(row["stats"])
        data["partitions"] = tuple(data["partitions"])
        out.append(TaskStats(**data))
    return out


def _worker_pool() -> ProducerPool | None:
    """The Python worker's producer pool inside a Spark task (sink.producer-reuse), else
    None: outside Spark a producer is the caller's own."""
    from pyspark import TaskContext  # lazy: only inside a Spark task

    return WORKER_POOL if TaskContext.get() is not None else None


def _partition_id() -> int:
    from pyspark import TaskContext  # lazy: only inside a Spark task

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


# --------------------------------------------------------------------------------------------
# The driver step shared by every write path
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """The driver's resolved write; only `job` and `started` travel to the tasks."""

    conn: ConnectorOptions
    plan: UpsertPlan
    job: WriteJob
    started: float = field(default_factory=time.time)
    guard: GuardOutcome | None = None


def resolve_plan_only(schema: StructType, options: Mapping[str, Any], *,
                      require_bootstrap: bool = True) -> tuple[ConnectorOptions, UpsertPlan]:
    """options -> plan, every option validated once, without the network: option errors
    before Spark runs. The registries the formats name are opened here, at the edge, on
    first use (`open_plan_registries`), and handed to the codecs."""
    conn = resolve_connector(options, require_bootstrap=require_bootstrap)
    plan = conn.resolved.project(table_type(schema, conn)).build(
        registries=open_plan_registries(conn.resolved))
    check_value_columns(plan)
    check_properties(conn.producer_properties, conn[DELIVERY].value,
                     topic=conn.topic, secrets=conn.secrets())
    return conn, plan


def check_value_columns(plan: UpsertPlan) -> None:
    """A value needs a column: EXCEPT_KEY over a table of key columns only leaves none.

    Flink would write an empty value row (`{}` in json); keyguard refuses it at planning,
    since an empty value carries nothing a consumer could read, and raw/csv cannot encode it.
    """
    layout = plan.layout
    if not layout.value_columns:
        raise InvalidOptionError(
            f"topic {plan.topic}: 'value.fields-include'=EXCEPT_KEY leaves no value column: "
            f"every column ({', '.join(layout.table.names)}) is in the primary key",
            hint="add a value column to the DataFrame, or set value.fields-include=ALL to "
                 "write the key columns in the value too")


def resolve_and_guard(schema: StructType, options: Mapping[str, Any], *,
                      before_registration: Callable[[], None] | None = None) -> Prepared:
    """options -> plan -> guard verdict -> registration: everything before the first record.

    Registration is one explicit step, here on the driver after the guard passed: the
    avro-confluent schema ids (the tasks never ask the registry), and a json/csv/raw key's
    and value's JSON Schema into guard.registry, so the next write of the topic is checked
    against this one (`guarding.register_written_schemas`; its failure is logged).
    `before_registration` runs between the guard and the registration: what else can stop the
    write (the executors' probe) runs there, so a write it stops registers nothing."""
    # The guard and the registry client it uses run on the driver only; a write task
    # imports this module for its WriteJob, and a fresh Python worker spent ~0.4 s on them
    # (bench_writer.py --worker-start; Spark stops a worker idle for a minute).
    from keyguard.sparkio import guarding  # lazy: driver only, a write task's worker starts faster

    started = time.time()
    conn, plan = resolve_plan_only(schema, options)
    clock = time.perf_counter()
    outcome = guarding.run_guard(plan, conn)
    if before_registration is not None:
        before_registration()
    key_id, value_id = resolve_write_ids(plan)  # once, here: the tasks never ask the registry
    guarding.register_written_schemas(plan, conn)
    guard_s = time.perf_counter() - clock
    job = WriteJob(plan.spec, conn, outcome.partitions, guard_s, key_id, value_id,
                   pinned_references(plan), headers_column(schema), *plan_guids(plan))
    return Prepared(conn, plan, job, started, outcome)


def summarize(job: WriteJob, stats: list[TaskStats], *, started: float | None = None,
              batch_id: int | None = None) -> WriteSummary:
    """The summary of a finished write (logged at INFO, and written to sink.summary-file as
    JSON). Registers nothing: that happened before the first task (`resolve_and_guard`)."""
    conn = job.conn
    elapsed = (time.time() - started if started is not None
               else max((s.elapsed_s for s in stats), default=0.0))
    summary = WriteSummary.of(conn.topic, stats, elapsed_s=elapsed,
                              topic_partitions=job.partitions,
                              delivery_guarantee=conn[DELIVERY].value,
                              batch_id=batch_id,
                              phases=phases_of(stats, guard_s=job.guard_s, started=started))
    _LOG.info("%s", summary)
    path = conn[SUMMARY_FILE]
    if path:
        tmp = f"{path}.tmp"
        with open(tmp, "w") as f:
            json.dump(dataclasses.asdict(summary), f)
        os.replace(tmp, path)
    return summary


# --------------------------------------------------------------------------------------------
# The DataSource writers (created on the driver, pickled to the tasks)
# --------------------------------------------------------------------------------------------


def _stats(messages: list[WriterCommitMessage | None]) -> list[TaskStats]:
    return [m.stats for m in messages if isinstance(m, UpsertCommitMessage)]


class UpsertKafkaWriter(DataSourceArrowWriter):
    """Batch writes: one producer per task, stats summed in commit()."""

    def __init__(self, job: WriteJob, started: float) -> None:
        self.job = job
        self.started = started

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        try:
            return UpsertCommitMessage(self.job.run(iterator))
        except KeyguardError as exc:
            raise for_spark(exc)  # noqa: B904  (exc itself, printed first)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        worker_logging()
        summarize(self.job, _stats(messages), started=self.started)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        worker_logging()
        done = _stats(messages)
        _LOG.error("upsert-kafka write to topic %s failed: %d of %d tasks had finished (their "
                   "records are in the topic: a rerun rewrites them, the fold is unchanged)",
                   self.job.conn.topic, len(done), len(messages))


class UpsertKafkaStreamWriter(DataSourceStreamArrowWriter):
    """Structured Streaming: each micro-batch is a batch write; Spark's checkpoint replays a
    micro-batch that did not commit, so records are at-least-once (exactly-once per task with
    transactions), and the fold of the topic is the same either way."""

    def __init__(self, job: WriteJob) -> None:
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        try:
            return UpsertCommitMessage(self.job.run(iterator))
        except KeyguardError as exc:
            raise for_spark(exc)  # noqa: B904  (exc itself, printed first)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        worker_logging()
        summarize(self.job, _stats(messages), batch_id=batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        worker_logging()
        _LOG.error("upsert-kafka micro-batch %d to topic %s failed; it is replayed from the "
                   "checkpoint on restart", batchId, self.job.conn.topic)


def worker_logging() -> None:
    """Spark's driver-side Python workers have no logging set up: show keyguard's INFO lines."""
    logger = logging.getLogger("keyguard")
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def create_writer(schema: StructType, options: Mapping[str, Any], overwrite: bool,
                  *, streaming: bool) -> UpsertKafkaWriter | UpsertKafkaStreamWriter:
    """The one place every data-source write is guarded: nothing is produced before this
    returns, and it returns only when the guard let the write through."""
    worker_logging()
    if overwrite:
        raise InvalidOptionError(
            "upsert-kafka writes in append mode only: an upsert topic is overwritten key by key",
            hint="use mode('append'); delete keys with tombstones (changelog.column = -D)")
    try:
        prep = resolve_and_guard(schema, options)
    except ImportError as exc:  # e.g. jsonschema missing in PYSPARK_PYTHON on the driver host
        raise missing_in_this_process(exc, role="the upsert-kafka data source's writer()"
                                      ) from None
    if streaming:
        return UpsertKafkaStreamWriter(prep.job)
    return UpsertKafkaWriter(prep.job, prep.started)


# --------------------------------------------------------------------------------------------
# The plain functions
# --------------------------------------------------------------------------------------------


def nullable_key(df: DataFrame, plan: UpsertPlan) -> list[str]:
    """Primary-key columns Spark lets be null; a NOT NULL column is Spark's to enforce (its
    optimizer folds `IS NULL` on one to false, so counting it could never find a row)."""
    return [c for c in plan.layout.primary_key if df.schema[c].nullable]


def _null_condition(columns: list[str]) -> Any:
    from functools import reduce

    from pyspark.sql import functions as F

    return reduce(lambda a, b: a | b, [F.col(f"`{c}`").isNull() for c in columns])


def _bad_kind_condition(column: str) -> Any:
    """True where the changelog column is not exactly +I, +U, -U or -D (null included)."""
    from pyspark.sql import functions as F

    return F.coalesce(~F.col(f"`{column}`").isin(*KINDS), F.lit(True))


def check_rows(df: DataFrame, plan: UpsertPlan, changelog: str | None) -> None:
    """One Spark aggregate over the input, before anything is written: rows with a null
    primary-key column, and changelog kinds that are not +I, +U, -U, -D. Nothing to count
    when every key column is NOT NULL and there is no changelog column."""
    from pyspark.sql import functions as F

    checks = []
    columns = nullable_key(df, plan)
    if columns:
        checks.append(("null", _null_condition(columns)))
    if changelog:
        checks.append(("kind", _bad_kind_condition(changelog)))
    if not checks:
        return
    counts = df.agg(*[F.sum(F.when(cond, 1).otherwise(0)).alias(name)
                      for name, cond in checks]).collect()[0].asDict()
    outcome = "; nothing was written"
    for name, cond in checks:
        count = counts[name] or 0
        if not count:
            continue
        example = df.filter(cond).limit(1).collect()[0].asDict()
        if name == "null":
            raise null_key_error(plan.topic, plan.layout.primary_key, count, example,
                                 scope=" in the DataFrame", outcome=outcome)
        raise changelog_kind_error(plan.topic, str(changelog), count, example,
                                   scope=" in the DataFrame", outcome=outcome)


#: In the Spark error a null key raises in the shuffle's map stage (see `keyed`).
NULL_KEY_MARK = "keyguard: null primary key"
#: ... and a changelog kind that is not +I, +U, -U or -D.
BAD_KIND_MARK = "keyguard: invalid changelog kind"


def failing_on_bad_rows(df: DataFrame, plan: UpsertPlan, changelog: str | None) -> DataFrame:
    """`df`, failing its Spark job at the first row with a null primary-key column or a
    changelog kind that is not +I, +U, -U or -D.

    Placed before the shuffle by key, the check runs in the map stage, which finishes before
    any write task starts: a bad row fails the job before any record is produced, at the cost
    of one predicate per row instead of a second pass over the input (write_upsert then counts,
    on the failure path only, for the error's count and example row).
    """
    from pyspark.sql import functions as F

    columns = nullable_key(df, plan)
    if not columns and not changelog:
        return df
    check: Any = F
    if columns:
        message = (f"{NULL_KEY_MARK} in topic {plan.topic} (primary key "
                   f"{', '.join(plan.layout.primary_key)}); nothing was written")
        check = check.when(_null_condition(columns), F.raise_error(F.lit(message)))
    if changelog:
        message = (f"{BAD_KIND_MARK} in column {changelog} of topic {plan.topic}; nothing was "
                   "written")
        check = check.when(_bad_kind_condition(changelog), F.raise_error(F.lit(message)))
    return df.filter(check.otherwise(F.lit(True)))


def keyed(df: DataFrame, conn: ConnectorOptions, *, own_shuffle: bool = False) -> DataFrame:
    """Repartition by the primary key, sort each partition by input order or sink.order-by.

    Spark drops `repartition(n, pk)` when its input is already hash-partitioned that way.
    `own_shuffle` partitions by struct(pk) instead (the same grouping of keys into tasks),
    which no upstream partitioning matches: the shuffle, and with it a map stage that ends
    before any write task starts, is always there (see `failing_on_bad_rows`).
    """
    from pyspark.sql import functions as F

    n = conn[SINK_PARALLELISM] or default_parallelism(df.sparkSession)
    pk = [F.col(f"`{c}`") for c in conn.primary_key]
    if own_shuffle:
        pk = [F.struct(*pk)]

    def by_key(frame: DataFrame) -> DataFrame:
        # No count known (Spark Connect): spark.sql.shuffle.partitions, coalesced by AQE.
        return frame.repartition(n, *pk) if n else frame.repartition(*pk)

    if conn.order_by:
        return by_key(df).sortWithinPartitions(*[F.col(f"`{c}`") for c in conn.order_by])
    # The id is taken before the shuffle: it is the input order the sort restores.
    return (by_key(df.withColumn(ORDER_COLUMN, F.monotonically_increasing_id()))
            .sortWithinPartitions(ORDER_COLUMN).drop(ORDER_COLUMN))


def prepare(df: DataFrame, **options: Any) -> DataFrame:
    """The DataFrame ready for `.write.format("upsert-kafka")`: null keys rejected (one
    count, unless every key column is NOT NULL), partitioned by key, each partition in input
    order (or sink.order-by)."""
    conn, plan = resolve_plan_only(df.schema, options, require_bootstrap=False)
    check_rows(df, plan, conn[CHANGELOG_COLUMN])
    return keyed(df, conn)


def write_upsert(df: DataFrame, **options: Any) -> WriteSummary:
    """Write `df` to an upsert topic: validate, guard, check keys, produce; the summary.

    Everything before the first record happens here, in the caller's process (the driver,
    or a Spark Connect client): options are validated and the guard runs (a blocked write
    raises its GuardBlockedError here), and a probe job checks that the executors can run
    keyguard (`keyguard.sparkio.executors`). Null keys fail the shuffle's map stage, before any
    write task starts. The tasks (mapInArrow over the keyed DataFrame) produce and return their
    TaskStats as rows, which are collected here: nothing travels through a file, so the
    driver, the executors and this process need not share a disk.
    """
    clock = time.perf_counter()
    # The shuffle's map stage checks every row (below): the tasks need not hold theirs.
    prep = resolve_and_guard(df.schema, {**options, VALIDATE_PARTITION.key: "false"},
                             before_registration=lambda: probe_workers(df.sparkSession))
    checked = failing_on_bad_rows(df, prep.plan, prep.conn[CHANGELOG_COLUMN])
    produced = keyed(checked, prep.conn, own_shuffle=checked is not df).mapInArrow(
        prep.job.produce_task, STATS_SCHEMA)
    driver_s = time.perf_counter() - clock
    collect_at = time.time()
    try:
        rows = produced.collect()
    except Exception as exc:
        if NULL_KEY_MARK in str(exc) or BAD_KIND_MARK in str(exc):
            check_rows(df, prep.plan, prep.conn[CHANGELOG_COLUMN])  # the count and an example
        missing = missing_on_workers(exc)
        if missing is not None:
            raise missing from None
        error = relayed(exc)  # a task's keyguard error, as itself
        if error is not None:
            raise error from None
        raise
    stats = stats_of(rows)
    summary = summarize(prep.job, stats, started=prep.started)
    # driver: options, plan, executor probe (the guard has its own phase); then Spark's job
    # (input, the shuffle's map stage) until the first write task starts.
    phases = {"driver": round(max(0.0, driver_s - prep.job.guard_s), 4), **summary.phases,
              "total": round(time.perf_counter() - clock, 4)}
    phases.pop("writer_at", None)
    begun = [s.started_at for s in stats if s.started_at]
    if begun:
        phases["spark_until_tasks"] = round(max(0.0, min(begun) - collect_at), 4)
    if "tasks_ended_at" in phases:
        phases["after_tasks"] = round(max(0.0, time.time() - phases.pop("tasks_ended_at")), 4)
    return dataclasses.replace(summary, phases=phases)


def serialize(df: DataFrame, **options: Any) -> DataFrame:
    """`df` as Kafka records (key, value, partition, and headers when `df` has them or a
    header framing adds them) for Spark's own Kafka sink.

    The guard (once, here: no data source is involved) and the null-key count run now; rows
    are encoded when the result is computed. -U rows are dropped, -D rows have a null value.
    Write with `partition` set, so each record lands where Java and Flink producers put its key.
    """
    prep = resolve_and_guard(df.schema, options)
    check_rows(df, prep.plan, prep.conn[CHANGELOG_COLUMN])
    schema = "key binary, value binary, partition int"
    if prep.job.headers_column or prep.plan.record_headers():
        schema += f", {HEADERS_COLUMN} array<struct<key:string,value:binary>>"
    return keyed(df, prep.conn).mapInArrow(prep.job.serialize_task, schema)
