"""Suppressions read from schema texts, Flink DDLs and config entries, and `suppress` applied to
a report: what each covers, where it says it was written, and the mistakes that exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.flink_ddl import read_flink_ddl
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.check import check
from keyguard.guard.config import load_config
from keyguard.guard.plan import TopicPlan
from keyguard.guard.report import Finding, Ignored, Report, Verdict
from keyguard.guard.rules import ALL_RULES
from keyguard.guard.selection import RuleSelection
from keyguard.guard.suppress import in_flink_ddl, in_schema, of_config, suppress

KG101, KG201, KG501 = ALL_RULES["KG101"], ALL_RULES["KG201"], ALL_RULES["KG501"]


def placed(text: SchemaText) -> list[tuple[str, tuple[str, ...], str, str]]:
    """(rule, paths, source, reason) of each suppression the text carries."""
    return [(s.selector.token, s.paths, s.source, s.reason) for s in in_schema(text)]


AVRO = """{
  "type": "record", "name": "Key",
  "fields": [
    {"name": "region", "type": "string"},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
      {"name": "zip", "type": "string", "keyguard.ignore": {"KG201": "zip codes are text"}}
    ]}, "keyguard.ignore": {"key-field-added": "address is new"}}
  ],
  "keyguard.ignore": {"KG501": "the producers move to the new id together"}
}"""


def test_avro_attribute_on_fields_and_the_top_record() -> None:
    assert placed(SchemaText("AVRO", AVRO, "k.avsc")) == [
        ("KG501", (), "k.avsc line 9", "the producers move to the new id together"),
        ("KG101", ("address",), "k.avsc line 7", "address is new"),
        ("KG201", ("address.zip",), "k.avsc line 6", "zip codes are text")]


JSON_SCHEMA = """{
  "$comment": "keyguard: ignore KG501 -- ids move together",
  "type": "object",
  "properties": {
    "region": {"type": "integer",
               "$comment": "keyguard: ignore key-type-changed -- region ids replace names"},
    "address": {"type": "object", "properties": {
      "zip": {"type": "integer", "$comment": "keyguard: ignore KG201, KG101 -- zip is a number"}
    }},
    "note": {"type": "string", "$comment": "a plain comment, not keyguard's"}
  }
}"""


def test_json_schema_comment_in_a_property_and_at_the_root() -> None:
    assert placed(SchemaText("JSON", JSON_SCHEMA, "k.json")) == [
        ("KG501", (), "k.json line 2", "ids move together"),
        ("KG201", ("region",), "k.json line 6", "region ids replace names"),
        ("KG201", ("address.zip",), "k.json line 8", "zip is a number"),
        ("KG101", ("address.zip",), "k.json line 8", "zip is a number")]


PROTO = """syntax = "proto3";
// keyguard: ignore KG501 -- ids move together
package shop;

message Key {
  string region = 1;
  // keyguard: ignore KG423 -- ids stay below 2^31
  int32 id = 2;
  int64 at = 4;  // keyguard: ignore KG423 KG201 -- both accepted
  Address address = 3;  /* keyguard: ignore KG101 -- address is new */
  message Address {
    string zip = 1;  // keyguard: ignore key-bytes -- zip is text
  }
}
"""


def test_proto_comments_on_the_line_or_above_and_at_the_top() -> None:
    assert placed(SchemaText("PROTOBUF", PROTO, "k.proto")) == [
        ("KG501", (), "k.proto line 2", "ids move together"),
        ("KG423", ("id",), "k.proto line 7", "ids stay below 2^31"),
        ("KG423", ("at",), "k.proto line 9", "both accepted"),
        ("KG201", ("at",), "k.proto line 9", "both accepted"),
        ("KG101", ("address",), "k.proto line 10", "address is new"),
        ("key-bytes", ("address.zip",), "k.proto line 12", "zip is text")]


DDL = """-- keyguard: ignore KG801 -- the value grows a column
CREATE TABLE orders (
  k_region STRING,  -- keyguard: ignore KG101 -- region is fixed per tenant
  /* keyguard: ignore KG201 -- widened on purpose */
  `k_id` BIGINT,
  total DOUBLE,
  shipping ROW<city STRING, zip STRING>,  -- keyguard: ignore KG801 -- shipping is new
  PRIMARY KEY (k_region, k_id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'kafka:9092',
  'key.format' = 'json',
  'key.fields-prefix' = 'k_',
  'value.format' = 'json',
  'value.fields-include' = 'EXCEPT_KEY'
);
"""


def test_flink_ddl_comments_cover_a_column_by_its_name_and_its_key_field() -> None:
    found = in_flink_ddl(read_flink_ddl(DDL, "orders.sql"), topic="orders")
    assert [(s.selector.token, s.paths, s.source, s.topic) for s in found] == [
        ("KG801", (), "orders.sql line 1", "orders"),
        ("KG101", ("k_region", "region"), "orders.sql line 3", "orders"),
        ("KG201", ("k_id", "id"), "orders.sql line 4", "orders"),
        ("KG801", ("shipping",), "orders.sql line 7", "orders")]


@pytest.mark.parametrize(("schema_type", "text", "says"), [
    ("AVRO", AVRO.replace('"KG501"', '"KG5O1"'), "k line 9: unknown rule or category 'KG5O1'"),
    ("AVRO", AVRO.replace('"address is new"', '""'), "k line 7: keyguard.ignore "
     "key-field-added needs a reason"),
    ("AVRO", AVRO.replace('{"KG201": "zip codes are text"}', '"KG201"'),
     "k line 6: keyguard.ignore must be an object"),
    ("JSON", JSON_SCHEMA.replace("KG201, KG101", "KG201, KG1O1"),
     "k line 8: unknown rule or category 'KG1O1'"),
    ("PROTOBUF", PROTO.replace("KG423", "KG999"), "k line 7: unknown rule or category 'KG999'"),
    ("PROTOBUF", PROTO.replace(" -- ids stay below 2^31", ""),
     "k line 7: `keyguard: ignore KG423` needs a reason"),
    ("PROTOBUF", PROTO.replace("keyguard: ignore KG423", "keyguard: ignroe KG423"),
     "k line 7: not a keyguard comment keyguard reads"),
])
def test_mistakes_exit_2_naming_the_file_and_line(schema_type: str, text: str,
                                                  says: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        in_schema(SchemaText(schema_type, text, "k"))
    assert err.value.exit_code == 2
    assert err.value.message.startswith(says), err.value.message


def test_a_schema_that_only_mentions_keyguard_has_none() -> None:
    doc = {"type": "record", "name": "R", "doc": "checked by keyguard", "fields": [
        {"name": "a", "type": "string", "doc": "keyguard: see the README"}]}
    assert in_schema(SchemaText("AVRO", json.dumps(doc), "k")) == ()
    assert in_schema(SchemaText("JSON", '{"$comment": "no keyguard: ignore here"}', "k")) == ()
    assert in_schema(SchemaText("PROTOBUF", "// written for keyguard\nmessage K {}", "k")) == ()


def _report() -> Report:
    return Report.of([
        Finding(KG101, "address", "added", topic="orders", subject="orders-key"),
        Finding(KG201, "address.zip", "changed", topic="orders", subject="orders-key"),
        Finding(KG201, "region", "changed", topic="orders", subject="orders-key"),
        Finding(KG501, "$", "id", topic="orders", subject="orders-value")])


def test_suppress_moves_what_it_covers_and_notes_what_it_does_not() -> None:
    found = in_schema(SchemaText("AVRO", AVRO, "k.avsc"), topic="orders", subject="orders-key")
    out = suppress(_report(), found)
    # KG501 is the value subject's: the key schema's suppression does not reach it.
    assert [(f.rule.id, f.path) for f in out.findings] == [("KG201", "region"), ("KG501", "$")]
    assert out.verdict is Verdict.BREAKING
    assert [(i.selector, i.path, i.reason, i.source, i.in_source, len(i.findings))
            for i in out.ignored] == [
        ("KG101", "address", "address is new", "k.avsc line 7", True, 1),
        ("KG201", "address.zip", "zip codes are text", "k.avsc line 6", True, 1)]
    assert out.notes == ("unused suppression: KG501 for topic orders (k.avsc line 9) matched no "
                         "finding; remove it, or check its rule and place",)
    assert suppress(_report(), ()) == _report()


def test_a_suppression_without_a_path_covers_the_whole_scope() -> None:
    accepted = of_config({"rule": "key-type-changed", "reason": "widened"}, "kg.toml: ignore[0]")
    out = suppress(_report(), (accepted,))
    assert [f.rule.id for f in out.findings] == ["KG101", "KG501"]
    (ignored,) = out.ignored
    assert (ignored.source, ignored.in_source, len(ignored.findings)) == (
        "kg.toml: ignore[0]", False, 2)
    assert out.notes == ()


@pytest.mark.parametrize(("entry", "says"), [
    ({"rule": "KG101"}, "kg.toml: ignore[1]: ignoring KG101 needs a reason"),
    ({"rule": "KG101", "reason": "  "}, "kg.toml: ignore[1]: ignoring KG101 needs a reason"),
    ({"reason": "why"}, "kg.toml: ignore[1]: needs rule"),
    ({"rule": "KG101", "reason": "why", "paths": "x"}, "kg.toml: ignore[1]: unknown key paths"),
    ({"rule": "KG1O1", "reason": "why"}, "kg.toml: ignore[1]: unknown rule or category"),
])
def test_config_entry_mistakes(entry: dict[str, str], says: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        of_config(entry, "kg.toml: ignore[1]")
    assert err.value.message.startswith(says), err.value.message


def test_config_file_tables_global_and_per_topic(tmp_path: Path) -> None:
    cfg = tmp_path / "kg.toml"
    cfg.write_text('registry = "file://schemas"\n'
                   'ignore = ["KG701", {rule = "KG501", reason = "ids move together"}]\n'
                   '[[topics]]\nname = "orders"\n'
                   'ignore = ["KG906", {rule = "KG101", reason = "fixed", path = "region"}]\n')
    loaded = load_config(cfg)
    assert loaded.ignore == ("KG701",)
    assert [(s.selector.token, s.source) for s in loaded.suppressions] == [
        ("KG501", f"{cfg}: ignore[1]")]
    (topic,) = loaded.topics
    assert topic.ignore == ("KG906",)
    assert [(s.selector.token, s.paths, s.source) for s in topic.suppressions] == [
        ("KG101", ("region",), f"{cfg}: topics[0]: ignore[1]")]
    cfg.write_text('registry = "file://schemas"\nignore = [{rule = "KG501"}]\n')
    with pytest.raises(InvalidOptionError, match=r"kg.toml: ignore\[0\]: ignoring KG501 needs "
                                                 "a reason"):
        load_config(cfg)


def test_a_rule_selection_applies_its_suppressions_first() -> None:
    accepted = of_config({"rule": "KG201", "reason": "widened", "path": "region"}, "kg.toml")
    selection = RuleSelection.of(ignore=["KG201"]).accepting([accepted])
    out = selection.apply(_report())
    assert [(i.selector, i.source, i.reason, len(i.findings)) for i in out.ignored] == [
        ("KG201", "kg.toml", "widened", 1), ("KG201", "--ignore", None, 1)]


def test_the_library_check_follows_the_candidate_schema() -> None:
    """`keyguard.guard.check` (the call before every Spark write) reads the candidate's own
    suppressions: a breaking key change accepted in the schema passes."""
    registry = MockRegistry("suppress-library")
    old = {"type": "record", "name": "Key", "fields": [{"name": "region", "type": "string"}]}
    registry.register("orders-key", json.dumps(old), "AVRO")
    new = {**old, "fields": [*old["fields"], {
        "name": "tenant", "type": "string", "default": "",
        "keyguard.ignore": {"KG101": "tenant is empty in every existing key"}}],
        "keyguard.ignore": {"KG501": "the producers move to the new id together"}}
    plain = {**new, "fields": [{k: v for k, v in f.items() if k != "keyguard.ignore"}
                               for f in new["fields"]]}
    del plain["keyguard.ignore"]

    def judged(doc: object) -> Report:
        plan = TopicPlan(topic="orders", value_format=None,
                         candidate_key=SchemaText("AVRO", json.dumps(doc), "orders-key.avsc"))
        return check(plan, registry=registry)

    assert judged(plain).verdict is Verdict.BREAKING
    report = judged(new)
    assert report.verdict is not Verdict.BREAKING
    assert {(i.selector, i.reason) for i in report.ignored} == {
        ("KG101", "tenant is empty in every existing key"),
        ("KG501", "the producers move to the new id together")}
    assert all(isinstance(i, Ignored) and i.in_source and i.findings for i in report.ignored)
