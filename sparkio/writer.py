"""Spark's side of a write: the DataSource writers, and write_upsert / serialize / prepare.

The driver resolves and guards (options -> plan -> guard verdict); each task serializes and
produces its Arrow batches (`sparkio.producer`) and returns its `TaskStats` in a commit
message; the driver sums them into a `WriteSummary`. A `WriteJob` is everything a task needs,
as plain picklable values (options, the table's row type, the partition count): the writers
hold no other state, and no client crosses the wire.

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
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from formats.errors import InvalidOptionError, SchemaError
from formats.plan import UpsertPlan, resolve_plan
from formats.types import RowType
from sparkio import guarding
from sparkio.options import CONNECTOR_OPTIONS, EXACTLY_ONCE, ConnectorOptions, resolve_connector
from sparkio.producer import (
    ChangeEncoder,
    TaskStats,
    UpsertProducer,
    null_key_error,
    produce_batches,
    producer_config,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

_LOG = logging.getLogger("keyguard.sparkio")

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

    @staticmethod
    def from_json(text: str) -> WriteSummary:
        data = json.loads(text)
        data["partitions"] = tuple(data["partitions"])
        return WriteSummary(**data)

    @staticmethod
    def of(topic: str, stats: list[TaskStats], *, elapsed_s: float, topic_partitions: int,
           delivery_guarantee: str, batch_id: int | None = None) -> WriteSummary:
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


# --------------------------------------------------------------------------------------------
# The job a task runs
# --------------------------------------------------------------------------------------------


def table_type(schema: StructType, conn: ConnectorOptions) -> RowType:
    """The table written: the DataFrame's columns without the changelog column."""
    from pyspark.sql.types import StringType, StructType

    from formats.spark_schema import from_spark_schema

    changelog = conn["changelog.column"]
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
    return from_spark_schema(StructType([f for f in schema.fields if f.name != changelog]))


@dataclass(frozen=True)
class WriteJob:
    """Everything a task needs, as plain values (pickled to the executors)."""

    options: Mapping[str, str]
    table: RowType
    partitions: int

    @property
    def conn(self) -> ConnectorOptions:
        return resolve_connector(self.options, require_bootstrap=False)

    def plan(self) -> UpsertPlan:
        return resolve_plan(self.table, self.options, extra=CONNECTOR_OPTIONS)

    def encoder(self) -> ChangeEncoder:
        return ChangeEncoder(self.plan(), self.partitions, self.conn["changelog.column"])

    def producer(self, task: int) -> UpsertProducer:
        conn = self.conn
        guarantee = conn["sink.delivery-guarantee"]
        txid = (f"{conn['sink.transactional-id-prefix']}-{task}"
                if guarantee == EXACTLY_ONCE else None)
        return UpsertProducer(
            topic=conn.topic,
            config=producer_config(conn.properties, guarantee, txid),
            task=task,
            max_rows=conn["sink.buffer-flush.max-rows"],
            interval_ms=conn["sink.buffer-flush.interval"],
            transactional=txid is not None,
            secrets=conn.secrets(),
        )

    def run(self, batches: Iterator[pa.RecordBatch]) -> TaskStats:
        """One task: produce its batches; raises (and Spark retries) unless all delivered."""
        task = _partition_id()
        return produce_batches(batches, self.encoder(), self.producer(task))

    def serialize_task(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """mapInArrow body of serialize: key, value and partition columns, nothing produced."""
        import pyarrow as pa

        encoder = self.encoder()
        for batch in batches:
            enc = encoder.encode(batch)
            yield pa.record_batch(
                [pa.array(enc.keys, pa.binary()), pa.array(enc.values, pa.binary()),
                 pa.array(enc.partitions, pa.int32())],
                names=["key", "value", "partition"])


def _partition_id() -> int:
    from pyspark import TaskContext

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


def resolve_and_guard(schema: StructType, options: Mapping[str, Any]) -> Prepared:
    """options -> plan -> guard verdict -> schema ids: everything before the first record."""
    conn = resolve_connector(options)
    table = table_type(schema, conn)
    plan = resolve_plan(table, conn.raw, extra=CONNECTOR_OPTIONS)
    outcome = guarding.run_guard(plan, conn)
    guarding.prepare_schemas(plan)
    return Prepared(conn, plan, WriteJob(dict(conn.raw), table, outcome.partitions))


def summarize(job: WriteJob, stats: list[TaskStats], *, started: float | None = None,
              batch_id: int | None = None, plan: UpsertPlan | None = None) -> WriteSummary:
    """The summary of a finished write (logged at INFO); remembers a json/csv/raw key."""
    conn = job.conn
    elapsed = (time.time() - started if started is not None
               else max((s.elapsed_s for s in stats), default=0.0))
    summary = WriteSummary.of(conn.topic, stats, elapsed_s=elapsed,
                              topic_partitions=job.partitions,
                              delivery_guarantee=conn["sink.delivery-guarantee"],
                              batch_id=batch_id)
    guarding.record_success(plan or job.plan(), conn)
    _LOG.info("%s", summary)
    path = conn["sink.summary-file"]
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
        return UpsertCommitMessage(self.job.run(iterator))

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
        return UpsertCommitMessage(self.job.run(iterator))

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
    worker_logging()
    if overwrite:
        raise InvalidOptionError(
            "upsert-kafka writes in append mode only: an upsert topic is overwritten key by key",
            hint="use mode('append'); delete keys with tombstones (changelog.column = -D)")
    prep = resolve_and_guard(schema, options)
    if streaming:
        return UpsertKafkaStreamWriter(prep.job)
    return UpsertKafkaWriter(prep.job, prep.started)


# --------------------------------------------------------------------------------------------
# The plain functions
# --------------------------------------------------------------------------------------------


def check_null_keys(df: DataFrame, plan: UpsertPlan) -> None:
    """One Spark count over `pk IS NULL`, before anything is written."""
    from functools import reduce

    from pyspark.sql import functions as F

    pk = plan.layout.primary_key
    cond = reduce(lambda a, b: a | b, [F.col(f"`{c}`").isNull() for c in pk])
    bad = df.filter(cond)
    count = bad.count()
    if count:
        example = bad.limit(1).collect()[0].asDict()
        raise null_key_error(plan.topic, pk, count, example, scope=" in the DataFrame")


def keyed(df: DataFrame, conn: ConnectorOptions) -> DataFrame:
    """Repartition by the primary key, sort each partition by input order or sink.order-by."""
    from pyspark.sql import functions as F

    n = conn["sink.parallelism"] or df.sparkSession.sparkContext.defaultParallelism
    pk = [F.col(f"`{c}`") for c in conn.primary_key]
    if conn.order_by:
        return df.repartition(n, *pk).sortWithinPartitions(
            *[F.col(f"`{c}`") for c in conn.order_by])
    # The id is taken before the shuffle: it is the input order the sort restores.
    return (df.withColumn(ORDER_COLUMN, F.monotonically_increasing_id())
            .repartition(n, *pk).sortWithinPartitions(ORDER_COLUMN).drop(ORDER_COLUMN))


def prepare(df: DataFrame, **options: Any) -> DataFrame:
    """The DataFrame ready for `.write.format("upsert-kafka")`: null keys rejected (one
    count), partitioned by key, each partition in input order (or sink.order-by)."""
    conn = resolve_connector(options, require_bootstrap=False)
    plan = resolve_plan(table_type(df.schema, conn), conn.raw, extra=CONNECTOR_OPTIONS)
    check_null_keys(df, plan)
    return keyed(df, conn)


def write_upsert(df: DataFrame, **options: Any) -> WriteSummary:
    """Write `df` to an upsert topic: validate, guard, check keys, produce; the summary.

    The guard runs here first (its report goes to this process's log) and again in the data
    source's writer(); then one count rejects null keys, and the keyed DataFrame is written
    through `format("upsert-kafka")`, which needs no pandas.
    """
    from sparkio.source import UpsertKafkaDataSource

    prep = resolve_and_guard(df.schema, options)
    check_null_keys(df, prep.plan)
    df.sparkSession.dataSource.register(UpsertKafkaDataSource)
    with tempfile.TemporaryDirectory(prefix="keyguard-summary-") as tmp:
        path = os.path.join(tmp, "summary.json")
        (keyed(df, prep.conn).write.format(UpsertKafkaDataSource.name())
         .options(**{**prep.conn.raw, "sink.summary-file": path}).mode("append").save())
        with open(path) as f:
            summary = WriteSummary.from_json(f.read())
    _LOG.info("%s", summary)
    return summary


def serialize(df: DataFrame, **options: Any) -> DataFrame:
    """`df` as Kafka records (key, value, partition) for Spark's own Kafka sink.

    The guard and the null-key count run now; rows are encoded when the result is computed.
    -U rows are dropped, -D rows have a null value. Write with `partition` set, so each record
    lands where Java and Flink producers put its key.
    """
    prep = resolve_and_guard(df.schema, options)
    check_null_keys(df, prep.plan)
    return keyed(df, prep.conn).mapInArrow(
        prep.job.serialize_task, "key binary, value binary, partition int")
