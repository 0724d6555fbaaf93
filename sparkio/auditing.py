"""`sparkio.audit(spark, ...)`: `keyguard audit` as a Spark job, for topics too large for one
machine (named like `guarding.py`: `sparkio.audit` is the function).

The driver validates the options as the reader does (`keyguard.sparkio.reader.UpsertKafkaReader`:
the same plan, writer schemas pinned once), captures each partition's end offset once, and
hands one Kafka partition to each task (a small RDD of `OffsetRange`s). A task folds its
partition with the pure per-partition accumulator (`keyguard.guard.audit.state.Folder`) and returns
the state: counts and key fingerprints, never keys. The driver merges the states and judges
them exactly as the command does (`keyguard.guard.audit.scan.conclude`), so the report is the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from keyguard.formats.errors import InvalidOptionError, KeyguardError
from keyguard.formats.registry.registration import open_plan_registries
from keyguard.guard.audit.judge import AuditResult
from keyguard.guard.audit.scan import check_sample, conclude, sampled
from keyguard.guard.audit.state import EXAMPLES, AuditState, Folder
from keyguard.guard.offsets import OffsetRange
from keyguard.sparkio.reader import UpsertKafkaReader, infer_schema
from keyguard.sparkio.workers import for_spark, relayed

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType


def audit(spark: SparkSession, *, topic: str | None = None,
          schema: StructType | str | None = None, sample: int | None = None,
          limit: int = EXAMPLES, **options: Any) -> AuditResult:
    """The audit of `topic` with the reader's options (`properties.bootstrap.servers`,
    `key.format`, `value.format`, `primary-key`, format options...); `schema` is the table's
    (a Spark DDL string or StructType; inferred from the registry for avro-confluent), as for
    `spark.read.format("upsert-kafka")`. One task per Kafka partition."""
    from pyspark.sql.types import StructType  # lazy: pyspark

    check_sample(sample)
    opts = {str(k): v for k, v in options.items()}
    if topic is not None:
        opts["topic"] = topic
    if schema is None:
        struct = infer_schema(opts)
    elif isinstance(schema, str):
        parsed = StructType.fromDDL(schema)
        if not isinstance(parsed, StructType):
            raise InvalidOptionError(f"schema {schema!r} is not a list of columns",
                                     hint="give columns: 'id BIGINT, name STRING'")
        struct = parsed
    else:
        struct = schema
    reader = UpsertKafkaReader(opts, struct)
    settings = reader.settings
    ranges = settings.kafka().capture(settings.topic)
    partitions = len(ranges)
    chosen = [r for r in sampled(ranges, sample) if not r.empty]
    captured = sum(0 if r.empty else r.end - max(r.start, 0) for r in ranges)

    def fold_partition(items: Iterable[OffsetRange]) -> Iterator[AuditState]:
        try:
            folder = Folder(reader.task_plan(), partitions, limit=limit)
            kafka = settings.kafka()
            for r in items:
                for cols in kafka.read_columns(r, headers=True):
                    folder.add_columns(cols)
            yield folder.state
        except KeyguardError as exc:
            raise for_spark(exc)  # noqa: B904  (exc itself, printed first)

    states: list[AuditState] = []
    if chosen:
        rdd = spark.sparkContext.parallelize(chosen, len(chosen))
        try:
            states = rdd.mapPartitions(fold_partition).collect()
        except Exception as exc:
            error = relayed(exc)  # a task's keyguard error, as keyguard raised it
            if error is None:
                raise
            raise error from None
    state = AuditState.merge_all(states, partitions, limit)
    plan = reader.spec.build(registries=open_plan_registries(settings.plan_options))
    return conclude(state, plan, bootstrap=settings.bootstrap, properties=settings.properties,
                    sample=sample, captured=captured, timeout_s=settings.capture_timeout_s)
