"""One SparkSession for the whole sparkio suite (a session takes ~30 s to start).

local[2], few shuffle partitions, no UI, the upsert-kafka data source registered. Java must be
present: a missing `java` fails with the command that installs it rather than skipping, so
a CI machine without Java cannot pass silently.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("the Spark tests need Java 17 and `java` is not on PATH: install it with "
                    "`apt-get install -y openjdk-17-jre-headless` (.ci/run does this)",
                    pytrace=False)
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from keyguard import sparkio
    # Workers must run this interpreter: keyguard is installed in it (`pip install -e .`).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("keyguard-sparkio-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    sparkio.register(session)
    try:
        yield session
    finally:
        session.stop()


Record = tuple[int, int, bytes, "bytes | None"]


def read_topic(bootstrap: str, topic: str, *, timeout: float = 30.0) -> list[Record]:
    """Every record of `topic` as (partition, offset, key, value), read to the end of each
    partition (PARTITION_EOF from fetch responses, right even on tansu)."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    admin_md = Consumer({"bootstrap.servers": bootstrap, "group.id": "keyguard-read"})
    parts = len(admin_md.list_topics(topic, timeout=10).topics[topic].partitions)
    admin_md.close()
    # From offset 0 (below a log start that retention moved, the reset goes to the earliest):
    # OFFSET_BEGINNING costs a ListOffsets round of 0.5 s first. A fetch at the end answers
    # at once instead of after librdkafka's 500 ms fetch wait.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "keyguard-read",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10,
                  "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    out: list[Record] = []
    ended: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(ended) < parts:
            assert time.monotonic() < deadline, f"topic {topic} not read to its end in time"
            for msg in c.consume(10_000, timeout=0.05):
                if msg.error() is not None:
                    if msg.error().code() == -191:  # _PARTITION_EOF
                        ended.add(msg.partition())
                        continue
                    raise AssertionError(msg.error())
                out.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        c.close()
    return out


def fold(records: list[Record]) -> dict[bytes, bytes]:
    """The table a compacted topic stands for: last value per key, tombstones delete."""
    table: dict[bytes, bytes] = {}
    for _, _, key, value in sorted(records, key=lambda r: (r[0], r[1])):
        if value is not None:
            table[key] = value
        else:
            table.pop(key, None)
    return table


class TopicReader:
    """Reads topics of one broker back: records, and the folded table."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def records(self, topic: str) -> list[Record]:
        return read_topic(self.bootstrap, topic)

    def table(self, topic: str) -> dict[bytes, bytes]:
        return fold(self.records(topic))


def _start_fake_registry() -> Any:
    """The suite's fake HTTP registry (tests/formats/registry/conftest.py), started here."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "formats" / "registry" / "conftest.py"
    spec = importlib.util.spec_from_file_location("keyguard_fake_registry", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name) or importlib.util.module_from_spec(spec)
    if spec.name not in sys.modules:
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return module._start()


@pytest.fixture
def fake_registry() -> Iterator[Any]:
    """A Confluent-REST registry on 127.0.0.1 that the driver, the Spark workers and
    confluent-kafka's SchemaRegistryClient all reach (`.url`, `.state`)."""
    fake = _start_fake_registry()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


@pytest.fixture(scope="session")
def reader(kafka_bootstrap: str) -> TopicReader:
    return TopicReader(kafka_bootstrap)


@pytest.fixture(scope="session")
def reader_for() -> type[TopicReader]:
    """TopicReader itself, for another broker (`reader_for(bootstrap)`)."""
    return TopicReader
