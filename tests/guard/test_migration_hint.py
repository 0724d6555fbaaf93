"""The guard's BREAKING report on a key change names the command that makes it safely."""

from __future__ import annotations

import json

from keyguard.formats.registry import SchemaVersion
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.facts import Facts, Registered, SubjectFacts
from keyguard.guard.judge import judge, migration_hint
from keyguard.guard.plan import TopicPlan
from keyguard.guard.report import Report, Verdict
from keyguard.guard.sides import key_sides

REGION: dict[str, object] = {"name": "user_region", "type": "string"}
KEY_V1 = {"type": "record", "name": "record", "namespace": "acme", "fields": [REGION]}


def verdict(plan: TopicPlan, registered: Registered, facts: Facts) -> Report:
    """`judge` with the key sides built from the same inputs, as `check` builds them."""
    return judge(plan, registered, facts, key_sides(plan, registered, facts))


def _report(fields: list[dict[str, object]]) -> Report:
    v1 = SchemaVersion("pv-key", 1, 7, json.dumps(KEY_V1))
    doc = {**KEY_V1, "fields": fields}
    plan = TopicPlan("pv", value_format=None,
                     candidate_key=SchemaText("AVRO", json.dumps(doc), "new key"))
    return verdict(plan, Registered("plain data", SubjectFacts("pv-key", (v1,))), Facts())


def test_a_breaking_key_change_notes_keyguard_migrate() -> None:
    report = _report([REGION, {"name": "n", "type": "int", "default": 0}])
    assert report.verdict is Verdict.BREAKING
    hints = [n for n in report.notes if "keyguard migrate" in n]
    assert len(hints) == 1
    assert "--topic pv" in hints[0] and "--old-key-format avro-confluent" in hints[0]


def test_an_unchanged_key_names_no_migration() -> None:
    report = _report([REGION])
    assert report.verdict is not Verdict.BREAKING
    assert not any("keyguard migrate" in n for n in report.notes)


def test_the_hint_carries_the_plan_formats_and_partitions() -> None:
    hint = migration_hint(TopicPlan(topic="orders", key_format="avro-confluent",
                                    old_key_format="json", partitions=12))
    assert "keyguard migrate --topic orders" in hint
    assert "--old-key-format json" in hint and "--new-key-format avro-confluent" in hint
    assert "--new-partitions 12" in hint and "--dry-run" in hint
