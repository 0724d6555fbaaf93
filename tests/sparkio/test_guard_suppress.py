"""The Spark writer's guard step follows what the key schema accepts in its own text: an Avro
key schema given as `key.avro-confluent.schema` with `keyguard.ignore`. No Spark, no broker."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from keyguard.formats.plan import resolve_plan
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.report import Verdict
from keyguard.guard.topic import StaticTopicInspector, TopicFacts
from keyguard.sparkio.guarding import GuardBlockedError, run_guard
from keyguard.sparkio.options import CONNECTOR_OPTIONS, resolve_connector

OLD = {"type": "record", "name": "record", "namespace": "org.apache.flink.avro.generated",
       "fields": [{"name": "id", "type": "int"}]}


def _run(key_schema: dict[str, Any]) -> Any:
    name = f"guard-suppress-{uuid.uuid4().hex}"
    registry = MockRegistry(name)
    registry.register("t-key", json.dumps(OLD), "AVRO")
    options = {"topic": "t", "primary-key": "id,region", "key.format": "avro-confluent",
               "key.avro-confluent.url": f"mock://{name}",
               "key.avro-confluent.schema": json.dumps(key_schema), "value.format": "json",
               "properties.bootstrap.servers": "localhost:9092"}
    plan = resolve_plan(parse_columns("id INT, region STRING, v STRING"), options,
                        extra=CONNECTOR_OPTIONS)
    facts = TopicFacts("t", partitions=3, cleanup_policy="compact")
    return run_guard(plan, resolve_connector(options), registry=registry,
                     inspector=StaticTopicInspector({"t": facts}))


def test_the_key_schemas_own_suppressions_let_the_write_through() -> None:
    region = {"name": "region", "type": "string"}
    with pytest.raises(GuardBlockedError):
        _run({**OLD, "fields": [*OLD["fields"], region]})
    outcome = _run({**OLD, "fields": [*OLD["fields"], {
        **region, "keyguard.ignore": {"KG101": "region is fixed per tenant"}}],
        "keyguard.ignore": {"KG501": "the producers move to the new id together"}})
    assert outcome.report.verdict is Verdict.SAFE
    assert {(i.selector, i.path, i.reason) for i in outcome.report.ignored} == {
        ("KG101", "region", "region is fixed per tenant"),
        ("KG501", None, "the producers move to the new id together")}
    assert "at region for topic t (the Spark DataFrame's key (avro-confluent) line 1: region " \
        "is fixed per tenant): 1 finding hidden" in outcome.message
