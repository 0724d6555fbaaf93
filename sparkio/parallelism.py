"""How many tasks Spark runs by default: asked by the writer (sink.parallelism unset) and by the
executors' probe (one task per slot), without either importing the other."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def is_connect(spark: SparkSession) -> bool:
    """A Spark Connect session (no SparkContext, no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: SparkSession) -> int | None:
    """How many write tasks when sink.parallelism is unset: the SparkContext's default
    parallelism (the cluster's cores); under Spark Connect, which has no SparkContext,
    spark.default.parallelism when the server sets it, else None (let Spark pick)."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    try:
        value = spark.conf.get("spark.default.parallelism", None)
    except Exception:  # an unset conf may raise on some Connect servers
        value = None
    return int(value) if value else None
