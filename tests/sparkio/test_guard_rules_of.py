"""The Spark option guard.rules-of: whose compatibility rules the driver's guard step follows
for the value schema where the registries differ, as `keyguard check --rules-of`. No Spark,
no broker."""

from __future__ import annotations

import uuid

import pytest

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.plan import resolve_plan
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.topic import StaticTopicInspector, TopicFacts
from keyguard.sparkio.guarding import run_guard, topic_check
from keyguard.sparkio.options import CONNECTOR_OPTIONS, resolve_connector

BASE = {"topic": "t", "key.format": "json", "value.format": "json", "primary-key": "id",
        "properties.bootstrap.servers": "localhost:9092"}
COLUMNS = "id INT, region STRING, v STRING"


def _registry() -> MockRegistry:
    """A registry holding this table's key and value JSON Schemas as version 1."""
    reg = MockRegistry(f"guard-rules-of-{uuid.uuid4().hex}")
    plan = resolve_plan(parse_columns(COLUMNS), BASE, extra=CONNECTOR_OPTIONS)
    spec = topic_check(plan, 3)
    for subject, schema in (("t-key", spec.candidate_key), ("t-value", spec.candidate_value)):
        assert schema is not None
        reg.register(subject, schema.text, schema.schema_type)
    return reg


@pytest.mark.parametrize(("choice", "title"), [(None, "Confluent"), ("karapace", "Karapace"),
                                              ("APICURIO", "Apicurio")])
def test_the_guard_judges_the_value_by_the_chosen_rules(choice: str | None, title: str) -> None:
    options = {**BASE, **({"guard.rules-of": choice} if choice else {})}
    plan = resolve_plan(parse_columns(COLUMNS), options, extra=CONNECTOR_OPTIONS)
    facts = TopicFacts("t", partitions=3, cleanup_policy="compact")
    outcome = run_guard(plan, resolve_connector(options), registry=_registry(),
                        inspector=StaticTopicInspector({"t": facts}))
    assert f"by {title}'s rules" in outcome.message
    assert not any(f"by {other}'s rules" in outcome.message
                   for other in ("Confluent", "Karapace", "Apicurio", "Redpanda")
                   if other != title)


def test_an_unknown_choice_is_refused_naming_the_accepted_ones() -> None:
    with pytest.raises(InvalidOptionError) as err:
        resolve_connector({**BASE, "guard.rules-of": "schemaregistry"})
    assert err.value.exit_code == 2
    assert "guard.rules-of" in str(err.value)
    assert all(name in str(err.value) + (err.value.hint or "")
               for name in ("confluent", "karapace", "apicurio", "redpanda"))
