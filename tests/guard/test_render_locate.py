"""Findings land on the line where their field or option is declared, in every schema type, and
on no line at all when the path is not there once; end to end through `keyguard check -f sarif`,
the git gate and `diff --key`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from keyguard.guard import rules
from keyguard.guard.cli import app
from keyguard.guard.render import render
from keyguard.guard.render.common import SchemaFiles
from keyguard.guard.render.locate import AVRO, JSON, PROTOBUF, SQL, Place, SchemaLines, kind_of
from keyguard.guard.report import Finding, Report

REPO = Path(__file__).resolve().parents[2]
KEY_V1 = REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc"


def line_of(text: str, place: Place | None) -> str:
    assert place is not None
    return text.splitlines()[place.line - 1]


def at(text: str, place: Place | None) -> str:
    """The text from the place on, to the end of its line."""
    line = line_of(text, place)
    assert place is not None
    return line[place.column - 1:]


# -- Avro ------------------------------------------------------------------------------------

AVSC = """{
  "type": "record",
  "name": "Key",
  "namespace": "shop",
  "fields": [
    {"name": "user_region", "type": "string"},
    {
      "name": "home",
      "type": ["null", {
        "type": "record",
        "name": "Address",
        "fields": [
          {"type": "int",
           "name": "zip"}
        ]
      }]
    },
    {"name": "work", "type": ["null", "shop.Address"]},
    {"name": "tags", "type": {"type": "array", "items": {
      "type": "record", "name": "Tag", "fields": [{"name": "label", "type": "string"}]}}},
    {"name": "either", "type": [
      {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]},
      {"type": "record", "name": "B", "fields": [{"name": "x", "type": "long"}]}]}
  ]
}
"""


def test_avro_nested_fields_land_on_their_name() -> None:
    lines = SchemaLines.of(AVSC, AVRO)
    assert at(AVSC, lines.field("user_region")).startswith('"user_region"')
    # Through a union into an inline record, the field's "name" on its own line.
    assert at(AVSC, lines.field("home.zip")) == '"zip"}'
    # A named type referred to by its full name is followed to where it is declared.
    assert lines.field("work.zip") == lines.field("home.zip")
    assert at(AVSC, lines.field("tags[].label")).startswith('"label"')
    assert '"items"' in line_of(AVSC, lines.field("tags[]"))
    assert lines.field("$") == Place(1, 1)


def test_avro_paths_not_declared_once_get_no_line() -> None:
    lines = SchemaLines.of(AVSC, AVRO)
    assert lines.field("zip") is None  # only nested
    assert lines.field("home.street") is None
    assert lines.field("user_region.zip") is None  # a string has no fields
    assert lines.field("either.x") is None  # two branches declare x: no guess
    assert lines.field("/fields/1/type") is None  # a value check's pointer is no field path


def test_avro_column_counts_utf16_code_units() -> None:
    text = ('{"type": "record", "name": "K", "doc": "\U0001F511", '
            '"fields": [{"name": "id", "type": "int"}]}')
    place = SchemaLines.of(text, AVRO).field("id")
    assert place is not None and place.line == 1
    # The key emoji is two UTF-16 code units (SARIF's default column kind), one character.
    assert place.column == text.index('"id"') + 2


# -- JSON Schema -----------------------------------------------------------------------------

JSON_SCHEMA = """{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "id": {"type": "integer"},
    "address": {
      "oneOf": [{"type": "null"}, {"$ref": "#/definitions/Address"}]
    },
    "lines": {
      "type": "array",
      "items": {"type": "object", "properties": {"sku": {"type": "string"}}}
    }
  },
  "definitions": {
    "Address": {
      "type": "object",
      "properties": {
        "zip": {"type": "string"}
      }
    }
  }
}
"""


def test_json_schema_nested_properties_through_refs_and_oneof() -> None:
    lines = SchemaLines.of(JSON_SCHEMA, JSON)
    assert at(JSON_SCHEMA, lines.field("id")).startswith('"id"')
    assert at(JSON_SCHEMA, lines.field("address.zip")).startswith('"zip"')
    assert at(JSON_SCHEMA, lines.field("lines[].sku")).startswith('"sku"')
    assert lines.field("zip") is None
    assert lines.field("address.city") is None


# -- Protobuf --------------------------------------------------------------------------------

PROTO = """syntax = "proto3";
package shop;

// message Decoy { string region = 1; } is a comment
message Key {
  string region = 1;
  Address address = 2;
  message Inner {
    int64 deep = 1;
  }
  Inner inner = 3;
  map<string, Address> by_name = 4;
  oneof choice {
    string code = 5;
  }
  repeated int32 nums = 6 [packed = true];
}

message Address {
  string zip = 1;
}
"""


def test_proto_fields_in_the_first_message_and_nested_ones() -> None:
    lines = SchemaLines.of(PROTO, PROTOBUF)
    assert at(PROTO, lines.field("region")) == "region = 1;"
    assert at(PROTO, lines.field("address.zip")) == "zip = 1;"
    assert at(PROTO, lines.field("inner.deep")) == "deep = 1;"
    assert at(PROTO, lines.field("by_name{value}.zip")) == "zip = 1;"
    assert at(PROTO, lines.field("code")) == "code = 5;"
    assert "nums" in line_of(PROTO, lines.field("nums"))
    assert line_of(PROTO, lines.field("$")) == "message Key {"
    assert lines.field("zip") is None  # Address's, not the key message's
    assert lines.field("Decoy") is None


def test_proto_whose_first_message_is_another_ones_field_type_locates_nothing() -> None:
    """The key message is then named by the `message` option, which the file does not say."""
    text = "syntax = \"proto3\";\nmessage Address { string zip = 1; }\n" \
           "message Key { Address address = 1; string zip = 2; }\n"
    lines = SchemaLines.of(text, PROTOBUF)
    assert lines.field("zip") is None
    assert lines.field("$") is None


# -- Flink DDL -------------------------------------------------------------------------------

DDL = """-- the orders sink
CREATE TABLE orders (
  `k_id` BIGINT NOT NULL,
  k_address ROW<zip STRING, `street` ROW<no INT>> NOT NULL COMMENT 'where',
  amount DECIMAL(10, 2),
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  doubled AS amount * 2,
  PRIMARY KEY (k_id, k_address) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'orders',
  'key.format' = 'json',
  'key.fields-prefix' = 'k_',
  'key.json.timestamp-format.standard' = 'ISO-8601',
  'value.format' = 'json',
  'value.fields-include' = 'EXCEPT_KEY',
  'sink.partitioner' = 'fixed'
);
"""


def test_ddl_key_columns_nested_row_fields_and_the_prefix() -> None:
    lines = SchemaLines.of(DDL, SQL)
    # Key fields are named without key.fields-prefix; the DDL's columns carry it.
    assert at(DDL, lines.field("id")).startswith("`k_id` BIGINT")
    assert at(DDL, lines.field("address.zip")).startswith("zip STRING")
    assert at(DDL, lines.field("address.street.no")).startswith("no INT")
    assert line_of(DDL, lines.field("$")).startswith("CREATE TABLE orders")
    # Not key columns, or not written: no line.
    assert lines.field("amount") is None
    assert lines.field("ts") is None
    assert lines.field("doubled") is None


def test_ddl_options_land_on_their_with_line() -> None:
    lines = SchemaLines.of(DDL, SQL)
    assert at(DDL, lines.option("key.format")).startswith("'key.format'")
    assert at(DDL, lines.option("key.fields-prefix")).startswith("'key.fields-prefix'")
    # A key format option by keyguard's name, and the partitioner by the sink's.
    assert at(DDL, lines.option("timestamp-format.standard")).startswith(
        "'key.json.timestamp-format.standard'")
    assert at(DDL, lines.option("partitioner")).startswith("'sink.partitioner'")
    assert lines.option("partitions") is None
    assert lines.option("encode.ignore-null-fields") is None  # not set in this DDL
    assert SchemaLines.of(AVSC, AVRO).option("key.format") is None  # only a DDL has options


def test_text_that_does_not_read_as_its_type_locates_nothing() -> None:
    for text, kind in (('{"type": "record", "fields": [', AVRO), ("{]", JSON),
                       ("CREATE TABLE t (a INT", SQL), ("message K { string a = 1;", PROTOBUF)):
        lines = SchemaLines.of(text, kind)
        assert not lines.readable
        assert lines.field("a") is None and lines.field("$") is None


def test_kind_of_a_file() -> None:
    assert kind_of("t.sql", DDL) == SQL
    assert kind_of("k.proto", PROTO) == PROTOBUF
    assert kind_of("k.avsc", AVSC) == AVRO
    assert kind_of("k.json", JSON_SCHEMA) == JSON
    assert kind_of("k.json", AVSC) == AVRO


# -- findings and their files ----------------------------------------------------------------

def _finding(rule, path: str) -> Finding:  # type: ignore[no-untyped-def]
    return Finding(rule, path, "m", topic="orders", subject="orders-key")


def test_a_field_finding_points_at_its_line_an_option_finding_never_at_a_field(
        tmp_path: Path) -> None:
    text = AVSC.replace('"user_region"', '"encoding"')
    schema = tmp_path / "key.avsc"
    schema.write_text(text)
    files = SchemaFiles({"orders-key": str(schema)})
    field = files.locate(_finding(rules.KEY_TYPE_CHANGED, "encoding"))
    assert field.file == str(schema) and at(text, field.place).startswith('"encoding"')
    # The Avro format's `encoding` option is no field of the schema, whatever its fields' names.
    option = files.locate(_finding(rules.FORMAT_OPTION_CHANGED, "encoding"))
    assert option.file == str(schema) and option.place is None
    assert "option encoding is not declared in" in (option.missing or "")
    # A topic setting is in no schema file.
    topic = files.locate(_finding(rules.TOPIC_NOT_COMPACTED, "cleanup.policy"))
    assert topic.place is None and "setting of the topic" in (topic.missing or "")


def test_each_file_is_read_once(tmp_path: Path) -> None:
    schema = tmp_path / "key.avsc"
    schema.write_text(AVSC)
    files = SchemaFiles({"orders-key": str(schema)})
    first = files.locate(_finding(rules.KEY_TYPE_CHANGED, "home.zip"))
    schema.unlink()  # what was read stays read
    again = files.locate(_finding(rules.KEY_FIELD_ADDED, "tags[].label"))
    assert first.place is not None and again.place is not None
    gone = SchemaFiles({"orders-key": str(schema)}).locate(
        _finding(rules.KEY_TYPE_CHANGED, "home.zip"))
    assert gone.place is None and "cannot read" in (gone.missing or "")


def test_github_annotations_carry_the_line(tmp_path: Path) -> None:
    schema = tmp_path / "key.avsc"
    schema.write_text(AVSC)
    report = Report.of([_finding(rules.KEY_TYPE_CHANGED, "home.zip"),
                        _finding(rules.KEY_FIELD_REMOVED, "gone")])
    found, missing = render(report, "github", files={"orders-key": str(schema)}).splitlines()
    place = SchemaLines.of(AVSC, AVRO).field("home.zip")
    assert place is not None
    assert f",line={place.line},col={place.column},title=KG201 " in found
    assert "line=" not in missing and f"file={schema}" in missing


# -- end to end ------------------------------------------------------------------------------

runner = CliRunner()


def _run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), catch_exceptions=False)


def _pretty_key(changed_type: str) -> str:
    """The sample key schema over several lines, its user_region of another type."""
    doc = json.loads(KEY_V1.read_text())
    doc["doc"] = "the pageviews key"
    doc["fields"][0]["type"] = changed_type
    return json.dumps(doc, indent=2) + "\n"


def _region(result: dict) -> dict:  # type: ignore[type-arg]
    return result["locations"][0]["physicalLocation"]["region"]


@pytest.fixture
def schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "schemas"


def test_check_sarif_points_at_the_changed_fields_line(schemas: Path) -> None:
    text = _pretty_key("int")
    Path("key_v2.avsc").write_text(text)
    r = _run("check", "--topic", "pageviews_per_region", "--key-schema", "key_v2.avsc",
             "-f", "sarif")
    assert r.exit_code == 1, r.output
    results = json.loads(r.output)["runs"][0]["results"]
    (changed,) = [x for x in results if x["properties"]["path"] == "user_region"]
    line = next(i for i, t in enumerate(text.splitlines(), 1) if '"user_region"' in t)
    assert line > 1
    assert _region(changed)["startLine"] == line
    assert changed["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "key_v2.avsc"
    assert changed["properties"]["location"] == {"found": True}


def test_the_git_gate_points_at_the_line_in_the_new_version(schemas: Path) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=schemas.parent, check=True, capture_output=True,
                       env=env)
    text = _pretty_key("bytes")
    (schemas / "subjects/pageviews_per_region-key/v2.avsc").write_text(text)
    r = _run("check", "--against", "git:main", "-f", "sarif")
    assert r.exit_code == 1, r.output
    results = json.loads(r.output)["runs"][0]["results"]
    (changed,) = [x for x in results if x["properties"]["path"] == "user_region"]
    assert '"user_region"' in text.splitlines()[_region(changed)["startLine"] - 1]
    annotations = _run("check", "--against", "git:main", "-f", "github").output
    assert (f"file=schemas/subjects/pageviews_per_region-key/v2.avsc,"
            f"line={_region(changed)['startLine']},") in annotations


def test_diff_key_sarif_points_at_the_candidate(tmp_path: Path) -> None:
    old, new = tmp_path / "v1.avsc", tmp_path / "v2.avsc"
    old.write_text(_pretty_key("string"))
    text = _pretty_key("long")
    new.write_text(text)
    r = _run("diff", str(old), str(new), "--key", "-f", "sarif")
    assert r.exit_code == 1, r.output
    results = json.loads(r.output)["runs"][0]["results"]
    (changed,) = [x for x in results if x["properties"]["path"] == "user_region"]
    assert changed["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == new.as_uri()
    assert '"user_region"' in text.splitlines()[_region(changed)["startLine"] - 1]
    # The text report is unchanged: no file line for findings that name no subject.
    assert "file:" not in _run("diff", str(old), str(new), "--key").output
