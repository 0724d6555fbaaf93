"""EmptyRegistry: the guard's registry when a write names none. It must answer exactly as an
empty registry does (every schema a first version), so the verdicts are those of an empty mock
scope, without opening a client. No Spark, no broker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from keyguard.formats.errors import RegistryError
from keyguard.formats.plan import resolve_plan
from keyguard.formats.registry import DEFAULT_COMPATIBILITY, EmptyRegistry, Registry
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.topic import StaticTopicInspector, TopicFacts
from keyguard.sparkio.guarding import GuardBlockedError, guard_registry, run_guard
from keyguard.sparkio.options import CONNECTOR_OPTIONS, resolve_connector

COLUMNS = "id INT, region STRING, v STRING"


@pytest.fixture
def empty_mock() -> Iterator[MockRegistry]:
    scope = f"empty-{uuid.uuid4().hex}"
    yield MockRegistry(scope)
    MockRegistry.drop_scope(scope)


def test_it_is_a_registry_with_nothing_in_it(empty_mock: MockRegistry) -> None:
    reg = EmptyRegistry()
    assert isinstance(reg, Registry)
    schema = '{"type":"string"}'
    for registry in (reg, empty_mock):
        assert registry.subjects() == []
        assert registry.versions("t-key") == []
        assert registry.all_versions("t-key") == []
        assert registry.lookup("t-key", schema) is None
        assert registry.compatibility("t-key") == DEFAULT_COMPATIBILITY
        assert registry.check_compatibility("t-key", schema) is None
        with pytest.raises(RegistryError):
            registry.get_version("t-key")
        with pytest.raises(RegistryError):
            registry.get_by_id(1)


def test_it_takes_nothing() -> None:
    with pytest.raises(RegistryError, match="no registry was named"):
        EmptyRegistry().register("t-key", '{"type":"string"}')
    assert EmptyRegistry().subjects() == []


def _outcome(options: dict[str, str], registry: object | None, facts: TopicFacts):
    plan = resolve_plan(parse_columns(COLUMNS), options, extra=CONNECTOR_OPTIONS)
    try:
        return run_guard(plan, resolve_connector(options),
                         registry=registry,  # type: ignore[arg-type]
                         inspector=StaticTopicInspector({"t": facts})).report
    except GuardBlockedError as blocked:
        return blocked.report


@pytest.mark.parametrize("fmt", ["json", "csv", "raw"])
@pytest.mark.parametrize("facts", [
    TopicFacts("t", partitions=3, cleanup_policy="compact"),
    TopicFacts("t", partitions=3, cleanup_policy="delete"),
    TopicFacts("t", partitions=3, cleanup_policy="compact", keys_scanned=2,
               scan_complete=True, non_confluent_keys=2,
               sample_keys=((b'{"id":1}', 0), (b'{"id":2}', 1))),
], ids=["empty-compact", "empty-delete", "two-keys"])
def test_the_guard_judges_as_with_an_empty_registry(
        fmt: str, facts: TopicFacts, empty_mock: MockRegistry) -> None:
    pk = "region" if fmt == "raw" else "id"
    options = {"topic": "t", "key.format": fmt, "value.format": "json", "primary-key": pk,
               "properties.bootstrap.servers": "localhost:9092"}
    plan = resolve_plan(parse_columns(COLUMNS), options, extra=CONNECTOR_OPTIONS)
    chosen, explicit = guard_registry(plan, resolve_connector(options))
    assert isinstance(chosen, EmptyRegistry) and not explicit
    ours = _outcome(options, None, facts)
    theirs = _outcome(options, empty_mock, facts)
    assert ours.verdict is theirs.verdict
    assert sorted((f.rule.id, f.message) for f in ours.findings) == sorted(
        (f.rule.id, f.message) for f in theirs.findings)
    assert ours.findings, "the guard said nothing: the comparison would prove nothing"
