"""The Spark writer and reader for upsert Kafka topics (needs the `spark` extra).

    from keyguard import sparkio
    sparkio.register(spark)                      # once per SparkSession
    df.write.format("upsert-kafka").options(**opts).mode("append").save()
    summary = sparkio.write_upsert(df, **opts)   # repartitioned by key, in input order

Nothing here imports pyspark until it is used, so `import sparkio` is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from keyguard.guard.audit.judge import AuditResult
    from keyguard.sparkio.writer import WriteSummary

__all__ = [
    "ChangelogKindError",
    "GuardBlockedError",
    "TaskDeliveryError",
    "WorkerSetupError",
    "WriteSummary",
    "audit",
    "migrate",
    "prepare",
    "register",
    "serialize",
    "write_upsert",
]


def register(spark: SparkSession) -> None:
    """Make `format("upsert-kafka")` available in `spark` (reads, writes, streaming writes)."""
    from keyguard.sparkio.source import UpsertKafkaDataSource  # lazy: no pyspark on import

    spark.dataSource.register(UpsertKafkaDataSource)


def write_upsert(df: DataFrame, **options: Any) -> WriteSummary:
    """Validate, guard, reject null keys, repartition by key and produce; the summary."""
    from keyguard.sparkio.writer import write_upsert as run  # lazy: no pyspark on import

    return run(df, **options)


def serialize(df: DataFrame, **options: Any) -> DataFrame:
    """key (binary), value (binary, null for tombstones), partition (int) for Spark's Kafka
    sink; the guard and the null-key check run at the call."""
    from keyguard.sparkio.writer import serialize as run  # lazy: no pyspark on import

    return run(df, **options)


def prepare(df: DataFrame, **options: Any) -> DataFrame:
    """`df` repartitioned by key and ordered, for `df.write.format("upsert-kafka")`."""
    from keyguard.sparkio.writer import prepare as run  # lazy: no pyspark on import

    return run(df, **options)


def audit(spark: SparkSession, **options: Any) -> AuditResult:
    """`keyguard audit` as a Spark job: one task per Kafka partition, the same report."""
    from keyguard.sparkio.auditing import audit as run  # lazy: no pyspark on import

    return run(spark, **options)


def migrate(spark: SparkSession, **options: Any) -> Any:
    """Re-key a compacted topic in Spark tasks, no process holding the table
    (`keyguard.sparkio.migrate_spark.migrate_with_spark`)."""
    from keyguard.sparkio.migrate_spark import migrate_with_spark  # lazy: no Kafka client on import

    return migrate_with_spark(spark, **options)


def __getattr__(name: str) -> Any:
    if name == "WriteSummary":
        from keyguard.sparkio.writer import WriteSummary  # lazy: no pyspark on import

        return WriteSummary
    if name == "GuardBlockedError":
        from keyguard.sparkio.guarding import GuardBlockedError  # lazy: no pyspark on import

        return GuardBlockedError
    if name in ("TaskDeliveryError", "ChangelogKindError"):
        from keyguard.sparkio import producer  # lazy: no pyspark on import

        return getattr(producer, name)
    if name == "WorkerSetupError":
        from keyguard.sparkio.workers import WorkerSetupError  # lazy: no pyspark on import

        return WorkerSetupError
    raise AttributeError(name)
