"""The driver's registration step (`resolve_and_guard`): after the guard passed and before the
first task, a json key's JSON Schema goes into guard.registry; a failure is logged, not raised.
No Spark session, no broker (the topic facts are given)."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from keyguard.formats.errors import RegistryError
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.registry.mock import MockRegistry
from keyguard.guard.topic import StaticTopicInspector, TopicFacts


def _schema() -> Any:
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    return StructType([StructField("id", IntegerType()), StructField("v", StringType())])


@pytest.fixture
def topic_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = TopicFacts("orders", partitions=3, cleanup_policy="compact")
    monkeypatch.setattr("keyguard.sparkio.guarding.inspector_for",
                        lambda conn: StaticTopicInspector({"orders": facts}))


def _options(registry: str) -> dict[str, str]:
    return {"topic": "orders", "primary-key": "id", "key.format": "json",
            "value.format": "json", "guard.registry": registry,
            "properties.bootstrap.servers": "127.0.0.1:9"}


def test_the_key_is_registered_before_the_first_task(topic_exists: None,
                                                      tmp_path: Path) -> None:
    from keyguard.sparkio.writer import resolve_and_guard

    prep = resolve_and_guard(_schema(), _options(f"file://{tmp_path / 'reg'}"))
    registry = FileRegistry(tmp_path / "reg")
    assert registry.subjects() == ["orders-key", "orders-value"]  # no task ran
    assert '"id"' in registry.get_version("orders-key").schema
    assert prep.job.partitions == 3


def test_a_registration_failure_is_logged_and_the_write_goes_on(
        topic_exists: None, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from keyguard.sparkio import guarding
    from keyguard.sparkio.writer import resolve_and_guard

    class Refusing(MockRegistry):
        def register(self, subject: str, schema: str, *args: Any, **kwargs: Any) -> int:
            raise RegistryError(f"{subject}: read-only")

    refusing = Refusing(f"refusing-{uuid.uuid4().hex}")
    monkeypatch.setattr(guarding, "guard_registry", lambda plan, conn: (refusing, True))
    caplog.set_level(logging.WARNING, "keyguard")
    prep = resolve_and_guard(_schema(), _options("mock://refusing"))
    assert prep.job.partitions == 3
    assert "could not register the key schema of topic orders under orders-key: " \
           "orders-key: read-only" in caplog.text
