"""The Spark option guard.ignore: declared and validated with the connector's options, applied
by the driver's guard step (run_guard) before anything is written. No Spark, no broker."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.plan import resolve_plan
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.report import Verdict
from keyguard.guard.topic import StaticTopicInspector, TopicFacts
from keyguard.sparkio.guarding import GuardBlockedError, run_guard, topic_check
from keyguard.sparkio.options import CONNECTOR_OPTIONS, resolve_connector

BASE = {"topic": "t", "key.format": "json", "value.format": "json",
        "properties.bootstrap.servers": "localhost:9092"}


def _run(pk: str, registry: MockRegistry, cleanup: str = "compact", **extra: str) -> Any:
    options = {**BASE, "primary-key": pk, **extra}
    plan = resolve_plan(parse_columns("id INT, region STRING, v STRING"), options,
                        extra=CONNECTOR_OPTIONS)
    facts = TopicFacts("t", partitions=3, cleanup_policy=cleanup)
    return run_guard(plan, resolve_connector(options), registry=registry,
                     inspector=StaticTopicInspector({"t": facts}))


@pytest.fixture
def registry() -> MockRegistry:
    """A registry holding the JSON Schema of the key (id) as t-key v1."""
    reg = MockRegistry(f"guard-ignore-{uuid.uuid4().hex}")
    plan = resolve_plan(parse_columns("id INT, region STRING, v STRING"),
                        {**BASE, "primary-key": "id"}, extra=CONNECTOR_OPTIONS)
    key = topic_check(plan, 3).candidate_key
    assert key is not None
    reg.register("t-key", key.text, key.schema_type)
    return reg


def test_guard_ignore_lets_an_ignored_breaking_change_through(
        registry: MockRegistry, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(GuardBlockedError):
        _run("id,region", registry)
    caplog.set_level(logging.INFO, "keyguard")
    outcome = _run("id,region", registry, **{"guard.ignore": "KG101, key-placement"})
    assert outcome.report.verdict is not Verdict.BREAKING
    (ignored, _placement) = outcome.report.ignored
    assert (ignored.selector, ignored.source, len(ignored.findings)) == (
        "KG101", "guard.ignore", 1)
    assert "ignored: KG101 key-field-added (guard.ignore): 1 finding hidden" in outcome.message


def test_guard_ignore_silences_a_warning(registry: MockRegistry) -> None:
    assert _run("id", registry, cleanup="delete").report.verdict is Verdict.WARN
    quiet = _run("id", registry, cleanup="delete", **{"guard.ignore": "topic-not-compacted"})
    assert quiet.report.verdict is Verdict.SAFE and quiet.level == logging.INFO


@pytest.mark.parametrize(("value", "says"), [
    ("KG7O1", "did you mean KG701?"),
    ("KG701,key-byts", "did you mean key-bytes?"),
])
def test_guard_ignore_rejects_unknown_names(value: str, says: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        resolve_connector({**BASE, "primary-key": "id", "guard.ignore": value})
    assert err.value.exit_code == 2
    assert "option 'guard.ignore'" in str(err.value) and says in str(err.value)


def test_guard_ignore_is_canonical_after_resolution() -> None:
    conn = resolve_connector({**BASE, "primary-key": "id", "guard.ignore": "kg701, TOPIC"})
    assert conn["guard.ignore"] == "KG701,topic"
    assert resolve_connector({**BASE, "primary-key": "id"})["guard.ignore"] is None


def test_a_blocked_write_pickles_with_what_was_ignored(registry: MockRegistry) -> None:
    import pickle

    with pytest.raises(GuardBlockedError) as err:
        _run("id,region", registry, cleanup="delete", **{"guard.ignore": "KG701"})
    back = pickle.loads(pickle.dumps(err.value))
    assert back.report == err.value.report
    assert [i.selector for i in back.report.ignored] == ["KG701"]
    assert "ignored: KG701 topic-not-compacted (guard.ignore): 1 finding hidden" in back.text
