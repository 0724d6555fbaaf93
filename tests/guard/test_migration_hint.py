"""The guard's BREAKING report on a key change names the command that makes it safely."""

from __future__ import annotations

import json
import shlex

from keyguard.formats.registry import SchemaVersion
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.facts import Facts, Registered, SubjectFacts
from keyguard.guard.judge import judge, migration_hint
from keyguard.guard.plan import KeyEncoding, TopicPlan, migration_command
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


def test_the_hint_fills_in_the_key_columns_and_keeps_placeholders_for_the_unknown() -> None:
    report = _report([REGION, {"name": "n", "type": "int", "default": 0}])
    hint = next(n for n in report.notes if "keyguard migrate" in n)
    assert "--old-option primary-key=user_region " in hint  # the registered key schema's
    assert "--new-option primary-key=user_region,n" in hint  # the candidate's
    # neither a DDL nor the command line said the columns or the brokers
    assert "--columns '<table columns>'" in hint and "--bootstrap <servers>" in hint
    assert "<topic>" not in hint and "<old key columns>" not in hint


def test_the_hint_quotes_what_it_fills_in_for_a_shell() -> None:
    old = KeyEncoding("json", ("id",), {"timestamp-format.standard": "ISO 8601"}, "k$")
    new = KeyEncoding("json", ("id", "region"))
    hint = migration_command("orders; rm -rf /", old, new, columns="id BIGINT, it's STRING",
                             bootstrap="b1:9092,b2:9092")
    args = shlex.split(hint.split("keyguard migrate ", 1)[1])
    assert args == ["--topic", "orders; rm -rf /", "--columns", "id BIGINT, it's STRING",
                    "--bootstrap", "b1:9092,b2:9092",
                    "--old-key-format", "json", "--old-option", "primary-key=id",
                    "--old-option", "key.fields-prefix=k$",
                    "--old-option", "key.json.timestamp-format.standard=ISO 8601",
                    "--new-key-format", "json", "--new-option", "primary-key=id,region"]


def test_the_hint_names_ddl_files_and_never_a_registry_credential() -> None:
    old = KeyEncoding("avro-confluent", ("id",),
                      {"url": "https://u:secret@sr:8081", "basic-auth.user-info": "u:secret"})
    new = KeyEncoding("avro-confluent", flink_ddl="flink/new orders.sql")
    hint = migration_command(None, old, new, registry="https://u:secret@sr:8081")
    assert "--flink-ddl 'flink/new orders.sql'" in hint
    assert "--topic" not in hint and "--columns" not in hint  # the DDL says them
    assert "secret" not in hint and "basic-auth" not in hint
    assert "--registry 'https://***@sr:8081'" in hint
