"""keyguard.guard.plan.TopicPlan: one plan of a topic from each source, and the key sides it
derives."""

from __future__ import annotations

import json

from keyguard.formats.plan import resolve_plan
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.config import TopicEntry
from keyguard.guard.plan import TopicPlan

KEY = json.dumps({"type": "record", "name": "k", "namespace": "acme",
                  "fields": [{"name": "id", "type": "long"}]})


def test_of_upsert_takes_the_schemas_the_codecs_write() -> None:
    plan = resolve_plan(parse_columns("id BIGINT NOT NULL, v STRING"), {
        "topic": "t", "primary-key": "id", "key.format": "json",
        "value.format": "avro-confluent", "value.avro-confluent.url": "mock://topic-plan",
        "key.fields-prefix": "", "value.fields-include": "ALL"},
        registry=MockRegistry("topic-plan"))
    spec = TopicPlan.of_upsert(plan, 6)
    assert spec.topic == "t" and spec.partitions == 6
    assert spec.key_format == "json" and spec.value_format == "avro-confluent"
    assert spec.candidate_key is not None and spec.candidate_key.schema_type == "JSON"
    assert spec.candidate_key.text == plan.key_codec.written_schema().text
    assert spec.candidate_key.origin == "the Spark DataFrame's key (json)"
    assert spec.candidate_value is not None and spec.candidate_value.schema_type == "AVRO"
    assert spec.subject("value", spec.candidate_value) == "t-value"


def test_of_entry_strips_the_format_prefixes() -> None:
    entry = TopicEntry("t", key_format="json", value_format=None, partitions=3,
                       partitioner="consistent",
                       options={"key.json.timestamp-format.standard": "ISO-8601"})
    spec = TopicPlan.of_entry(entry, require_subject=True)
    assert spec.key_options == {"timestamp-format.standard": "ISO-8601"}
    assert spec.value_options == {} and spec.value_format is None
    assert (spec.partitions, spec.partitioner, spec.require_subject) == (3, "consistent", True)


def test_key_sides_of_existing_keys_and_of_the_candidate() -> None:
    spec = TopicPlan("t", key_options={"url": "mock://x"}, partitioner="murmur2",
                     old_key_format="avro", old_key_options={}, old_partitioner="consistent")
    text = SchemaText("AVRO", KEY, "k")
    old = spec.key_side(text, existing=True, schema_id=None, partitions=4)
    new = spec.key_side(text, existing=False, schema_id=9)
    assert (old.format, old.partitioner, dict(old.options)) == ("avro", "consistent", {})
    assert (new.format, new.partitioner, new.schema_id) == ("avro-confluent", "murmur2", 9)
    assert old.row_type == new.row_type and old.avro_schema == new.avro_schema
    assert not old.carries_schema_id and new.carries_schema_id
    assert spec.keys_carry_schema_ids() is False
    assert spec.keys_carry_schema_ids(existing=False) is True
