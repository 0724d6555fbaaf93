"""`keyguard diff --key` reaches every key rule from the command line.

Each key rule (categories key-bytes and key-placement) is triggered by a case of the key corpus
(tests/guard/key_evolutions.json) turned into schema files and flags: --key-format and
--new-key-format, -o and --new-option, --fields-prefix and --new-fields-prefix, --partitioner
and --new-partitioner, --partitions and --new-partitions, --keys-written-by. A rule no flag can
reach is listed in UNREACHABLE with why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keyguard.formats.avro_schema import to_avro_json, to_avro_schema
from keyguard.formats.errors import UnsupportedTypeError
from keyguard.formats.json_schema import to_json_schema
from keyguard.formats.schemafile import read_schema_file
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.cli import app
from keyguard.guard.rules import RULES

CORPUS = {c["name"]: c for c in json.loads(
    (Path(__file__).parent / "key_evolutions.json").read_text())}
runner = CliRunner()

#: rule ID -> the corpus case that shows it.
CASES = {
    "KG101": "json-field-added",
    "KG102": "json-field-removed",
    "KG103": "json-primary-key-reordered",
    "KG104": "json-field-renamed",
    "KG106": "json-field-became-not-null",
    "KG201": "json-int-to-double",
    "KG202": "json-bigint-narrowed-to-int",
    "KG203": "json-decimal-scale-up-plain-number",
    "KG204": "json-decimal-precision-down",
    "KG205": "json-timestamp-precision-down",
    "KG206": "json-float-to-double",
    "KG301": "json-timestamp-standard-changed",
    "KG302": "json-decimal-plain-number-toggled",
    "KG303": "json-ignore-null-fields-toggled-nullable",
    "KG304": "csv-field-delimiter-composite",
    "KG305": "csv-quote-character-string",
    "KG306": "csv-null-literal-nullable",
    "KG307": "raw-endianness-int",
    "KG308": "raw-charset-latin1",
    "KG309": "json-key-prefix-changed-names",
    "KG310": "csv-decimal-scientific-notation-scale-8",
    "KG401": "avro-enum-symbols-reordered",
    "KG421": "protobuf-field-renumbered",
    "KG422": "protobuf-int32-to-sint32",
    "KG423": "protobuf-int32-to-uint32",
    "KG424": "protobuf-implicit-to-optional",
    "KG425": "protobuf-packed-to-unpacked",
    "KG426": "protobuf-field-removed",
    "KG427": "protobuf-required-field-added",
    "KG428": "protobuf-enum-renumbered",
    "KG429": "protobuf-oneof-merged",
    "KG430": "protobuf-registry-message-moved",
    "KG402": "avro-field-became-nullable",
    "KG403": "avro-fixed-size-changed",
    "KG405": "avro-timestamp-millis-to-micros",
    "KG501": "confluent-doc-added",
    "KG502": "confluent-keys-carry-several-ids",
    "KG503": "confluent-to-confluent-header",
    "KG601": "json-to-csv-format-change",
    "KG602": "csv-partition-count-changed",
    "KG603": "raw-librdkafka-default-partitioner",
    "KG901": "json-int-widened-to-bigint",
    "KG902": "json-decimal-scale-up-stripped",
    "KG903": "json-timestamp-precision-up",
    "KG904": "csv-field-renamed",
    "KG905": "json-field-became-nullable",
    "KG906": "avro-doc-alias-default-only",
    "KG907": "avro-enum-symbol-appended",
    "KG908": "json-int-to-decimal-plain-number",
    "KG909": "json-timestamp-standard-no-timestamps",
    "KG910": "json-decimal-precision-up",
    "KG911": "confluent-same-schema-same-id",
    "KG912": "json-nullable-field-added-ignore-nulls",
    "KG913": "confluent-header-doc-added",
    "KG941": "protobuf-field-renamed",
    "KG942": "protobuf-int32-to-int64",
    "KG943": "protobuf-field-added",
    "KG944": "protobuf-proto2-default-changed",
    "KG945": "protobuf-enum-value-added",
    "KG946": "protobuf-optional-into-oneof",
    "KG947": "protobuf-package-renamed",
}

#: Key rules no flag can reach, and why.
UNREACHABLE = {
    "KG000": "the safety net: it fires only when example keys differ although no structural "
             "rule named a reason, i.e. on a keyguard bug; no input is meant to reach it",
    "KG207": "CHAR/VARCHAR/BINARY/VARBINARY lengths are declared in Flink DDLs only, which no "
             "schema file keeps: `diff --key --old-flink-ddl --flink-ddl` reaches it "
             "(test_flink_ddl_guard.py)",
}

KEY_RULES = sorted(r.id for r in RULES.values()
                   if r.category.value in ("key-bytes", "key-placement"))


def _schema_file(tmp: Path, name: str, schema: Any) -> Path:
    """The corpus's key (a Flink column list or an Avro schema) as a schema file: Avro when it
    keeps the row type, else JSON Schema."""
    if isinstance(schema, str) and not schema.lstrip().startswith(("{", "[")):
        row = parse_columns(schema)
        for ext, text in ((".avsc", lambda: to_avro_json(to_avro_schema(row))),
                          (".json", lambda: json.dumps(to_json_schema(row)))):
            path = tmp / f"{name}{ext}"
            try:
                path.write_text(text())
            except UnsupportedTypeError:  # e.g. TIMESTAMP(6) in Flink's legacy Avro mapping
                continue
            if read_schema_file(path).row_type(avro_only=True) == row:
                return path
        raise AssertionError(f"no schema file keeps {schema!r}")
    path = tmp / f"{name}.avsc"
    path.write_text(schema if isinstance(schema, str) else json.dumps(schema))
    return path


def diff_args(case: dict[str, Any], tmp: Path) -> list[str]:
    """The command line of a corpus case (a Protobuf case's .proto texts as .proto files)."""
    if "schema" in case.get("old_side", {}):
        old, new = tmp / "old.proto", tmp / "new.proto"
        old.write_text(case["old_side"]["schema"])
        new.write_text(case["new_side"]["schema"])
    else:
        old, new = (_schema_file(tmp, side, case[side]) for side in ("old", "new"))
    args = ["diff", "--key", str(old), str(new), "--key-format", case["format"], "-f", "json"]
    if "format_new" in case:
        args += ["--new-key-format", case["format_new"]]
    for k, v in case["options_old"].items():
        args += ["-o", f"{k}={v}"]
    for k, v in case["options_new"].items():
        args += ["--new-option", f"{k}={v}"]
    old_side, new_side = case.get("old_side", {}), case.get("new_side", {})
    for key, flag in (("fields_prefix", "fields-prefix"), ("partitioner", "partitioner"),
                      ("partitions", "partitions")):
        if key in old_side:
            args += [f"--{flag}", str(old_side[key])]
        if key in new_side:
            args += [f"--new-{flag}", str(new_side[key])]
    if len(old_side.get("key_schema_ids", ())) > 1:
        # The topic holds keys of an older schema too: give it first, and say all wrote keys.
        if old.suffix == ".proto":
            older = tmp / "older.proto"
            older.write_text(old.read_text() + "\n// an older version\nmessage Older {}\n")
        else:
            older = tmp / "older.avsc"
            older.write_text(json.dumps(dict(json.loads(old.read_text()), doc="an older version")))
        args[2:2] = [str(older)]
        args += ["--keys-written-by", "all"]
    return args


def test_every_key_rule_is_reachable_or_explained() -> None:
    assert sorted({*CASES, *UNREACHABLE}) == KEY_RULES
    assert not set(CASES) & set(UNREACHABLE)
    for rule, name in CASES.items():
        assert rule in CORPUS[name]["rules"], (rule, name)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_diff_key_triggers_rule(rule: str, tmp_path: Path) -> None:
    case = CORPUS[CASES[rule]]
    r = runner.invoke(app, diff_args(case, tmp_path), catch_exceptions=False)
    doc = json.loads(r.output)
    got = sorted({f["rule"]["id"] for f in doc["findings"]})
    assert got == case["rules"], r.output
    assert r.exit_code == (1 if case["expected"] == "breaking" else 0), r.output


def test_new_options_start_from_the_old_ones_while_the_format_stays(tmp_path: Path) -> None:
    """-o applies to both sides; with another key format, only to the old side."""
    case = CORPUS["json-timestamp-standard-changed"]
    old = _schema_file(tmp_path, "k", case["old"])
    same = ["diff", "--key", str(old), str(old), "--key-format", "json", "-f", "json",
            "-o", "timestamp-format.standard=ISO-8601"]
    assert runner.invoke(app, same).exit_code == 0
    moved = runner.invoke(app, [*same, "--new-key-format", "csv"])
    assert moved.exit_code == 1, moved.output
    assert {f["rule"]["id"] for f in json.loads(moved.output)["findings"]} == {"KG601"}


def test_unknown_partitioner_is_invalid_input(tmp_path: Path) -> None:
    old = _schema_file(tmp_path, "k", "id BIGINT NOT NULL")
    r = runner.invoke(app, ["diff", "--key", str(old), str(old), "--key-format", "json",
                            "--new-partitioner", "crc33"])
    assert r.exit_code == 2
    assert "unknown partitioner 'crc33'" in r.output


def test_key_flags_mean_nothing_for_values(tmp_path: Path) -> None:
    old = _schema_file(tmp_path, "k", "id BIGINT NOT NULL")
    r = runner.invoke(app, ["diff", "--level", "BACKWARD", str(old), str(old),
                            "--new-partitioner", "murmur2"])
    assert r.exit_code == 2
    assert "--new-partitioner judges keys" in r.output
