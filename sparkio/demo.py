"""`keyguard demo`: the whole point in one run, with no servers to set up.

1. Start an embedded Kafka-protocol broker (tansu) and a file schema registry (a temporary copy
   of `schemas/`), and a local Spark session.
2. Write the Flink docs' pageviews_per_region table with Spark: upserts, an update and a delete.
3. Read it back, as a table (the KTable view) and as a changelog.
4. Try a key change that Schema Registry would accept (a new record namespace: FULL
   compatible), and show the guard blocking it: every key's schema id would change.
5. Add a value column, a safe change: the guard passes and the write lands.
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from keyguard import sparkio
from keyguard.formats.errors import KeyguardError
from keyguard.sparkio.embedded import start_broker
from keyguard.sparkio.guarding import GuardBlockedError
from keyguard.sparkio.workers import quiet_session

TOPIC = "pageviews_per_region"
SAMPLE_SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"

#: The first run of the job: three regions, one updated, one deleted.
CHANGES = [
    ("+I", "EMEA", 120, 40),
    ("+I", "AMER", 98, 31),
    ("+I", "APAC", 57, 20),
    ("+U", "EMEA", 131, 44),
    ("-D", "APAC", None, None),
]


def _say(text: str = "") -> None:
    print(text, flush=True)


def _step(n: int, text: str) -> None:
    _say(f"\n== {n}. {text}")


@contextmanager
def _broker(kind: str, workdir: Path) -> Iterator[str]:
    started = time.monotonic()
    broker = start_broker(kind, workdir)
    _say(f"   {kind} broker on {broker.bootstrap} (pid {broker.pid}, "
         f"{time.monotonic() - started:.1f}s)")
    try:
        yield broker.bootstrap
    finally:
        broker.stop()
        _say(f"   stopped the {kind} broker (pid {broker.pid})")


def _create_topic(bootstrap: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    topic = NewTopic(TOPIC, num_partitions=partitions, replication_factor=-1,
                     config={"cleanup.policy": "compact"})
    admin.create_topics([topic], operation_timeout=15)[TOPIC].result(15)


def _spark() -> Any:
    spark = quiet_session("local[2]", "keyguard demo", **{"spark.sql.shuffle.partitions": "4"})
    sparkio.register(spark)
    return spark


def _options(bootstrap: str, registry: Path, **extra: str) -> dict[str, str]:
    url = f"file://{registry}"
    return {
        "topic": TOPIC,
        "primary-key": "user_region",
        "key.format": "avro-confluent",
        "key.avro-confluent.url": url,
        "value.format": "avro-confluent",
        "value.avro-confluent.url": url,
        "properties.bootstrap.servers": bootstrap,
        **extra,
    }


def _show_table(spark: Any, options: dict[str, str], mode: str) -> None:
    df = (spark.read.format("upsert-kafka").options(**options).option("scan.mode", mode).load())
    rows = [r.asDict() for r in df.collect()]
    key = "user_region"
    for r in sorted(rows, key=lambda r: (str(r.get(key)), str(r.get("op", "")))):
        _say("   " + "  ".join(f"{k}={v}" for k, v in r.items()))


def run(*, broker: str = "tansu", partitions: int = 6, keep: bool = False) -> int:
    """Run the demo; 0 when every step behaved as it should."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        _say("keyguard demo writes with Spark: pip install -e '.[demo]' (pyspark, pyarrow and "
             "the embedded broker), and Java 17 (apt-get install -y openjdk-17-jre-headless)")
        return 2
    if shutil.which("java") is None:
        _say("keyguard demo needs Java 17 for Spark: apt-get install -y "
             "openjdk-17-jre-headless")
        return 2
    logging.basicConfig(level=logging.WARNING, format="   %(levelname)s %(name)s: %(message)s")
    work = Path(tempfile.mkdtemp(prefix="keyguard-demo-"))
    registry = work / "schemas"
    if SAMPLE_SCHEMAS.is_dir():
        shutil.copytree(SAMPLE_SCHEMAS, registry)
    else:
        registry.mkdir()
    try:
        _step(1, "An embedded broker, a file schema registry, and Spark")
        with _broker(broker, work) as bootstrap:
            _create_topic(bootstrap, partitions)
            _say(f"   topic {TOPIC}: {partitions} partitions, cleanup.policy=compact")
            _say(f"   schema registry: file://{registry}")
            started = time.monotonic()
            spark = _spark()
            _say(f"   Spark {spark.version} local[2] ({time.monotonic() - started:.1f}s)")
            options = _options(bootstrap, registry)

            _step(2, "Write the table with Spark (upserts, an update, a delete)")
            df = spark.createDataFrame(
                CHANGES, "op STRING, user_region STRING, pv BIGINT, uv BIGINT")
            summary = sparkio.write_upsert(df, **options, **{"changelog.column": "op"})
            _say(f"   {summary}")

            _step(3, "Read it back: the table (last value per key) and the changelog")
            _show_table(spark, options, "table")
            _say("   changelog:")
            _show_table(spark, {**options, "changelog.column": "op"}, "changelog")

            _step(4, "A key change Schema Registry would accept: a new record namespace")
            renamed = ('{"type":"record","name":"record","namespace":"com.acme.pageviews",'
                       '"fields":[{"name":"user_region","type":"string"}]}')
            _say("   key.avro-confluent.schema: the same field, namespace com.acme.pageviews")
            blocked = _expect_blocked(
                lambda: sparkio.write_upsert(
                    df.filter("op != '-D'"), **options,
                    **{"changelog.column": "op", "key.avro-confluent.schema": renamed}),
                GuardBlockedError)

            _step(5, "A safe change: a new nullable value column")
            wider = spark.createDataFrame(
                [("EMEA", 140, 47, 812.5), ("LATAM", 12, 5, None)],
                "user_region STRING, pv BIGINT, uv BIGINT, avg_session_ms DOUBLE")
            summary = sparkio.write_upsert(wider, **options)
            _say(f"   the guard passed; {summary}")
            _show_table(spark, options, "table")
            spark.stop()
        ok = blocked
        _say("\n" + ("demo complete: the breaking key change was blocked before any record was "
                     "written, the safe change landed" if ok else "demo FAILED: see above"))
        return 0 if ok else 1
    finally:
        if keep:
            _say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _expect_blocked(write: Callable[[], Any], error: type[KeyguardError]) -> bool:
    try:
        write()
    except error as exc:
        _say("   BLOCKED by the guard before any record was written:\n")
        for line in str(exc).splitlines():
            _say("   | " + line)
        return True
    _say("   the write went through: the guard did NOT block it")
    return False


if __name__ == "__main__":
    sys.exit(run())
