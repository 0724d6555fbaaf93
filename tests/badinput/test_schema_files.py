"""Invalid schemas are rejected before anything judges them; legal but hard ones are judged.

Every invalid Avro and JSON Schema kind goes through `check` (a file registry in tmp_path),
`diff --key`, `diff --level`, `encode` and `decode`: exit 2, kind invalid-schema (or
unsupported-type), the message naming the file. Legal schemas that are hard to handle
(recursive, inline named types, unions of named types, aliases) must get a verdict: exit 0 or 1,
never 2 or 4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from badinput import assert_rejected, run_cli

from keyguard.formats.schemajson import MAX_SCHEMA_DEPTH

KEY = {"type": "record", "name": "k", "fields": [{"name": "id", "type": "long"}]}
VALUE = {"type": "record", "name": "v", "fields": [{"name": "id", "type": "long"},
                                                   {"name": "a", "type": "string"}]}
JSON_KEY = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
JSON_VALUE = {"type": "object", "properties": {"id": {"type": "integer"},
                                               "a": {"type": "string"}}}


def _rec(*fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": "k", **extra,
            "fields": [{"name": "id", "type": "long"}, *fields]}


def _field(t: Any, **extra: Any) -> dict[str, Any]:
    return {"name": "x", "type": t, **extra}


def _nested(depth: int) -> str:
    """A key record whose field x is `depth` arrays deep (text: json.dumps would recurse)."""
    t = '{"type": "array", "items": ' * depth + '"long"' + "}" * depth
    return ('{"type": "record", "name": "k", "fields": [{"name": "id", "type": "long"}, '
            f'{{"name": "x", "type": {t}}}]}}')


# (case id, schema text or data, what the message says)
INVALID_AVRO: list[tuple[str, Any, str]] = [
    ("name-starts-with-digit", {**KEY, "name": "1bad"}, "'1bad' is not a valid Avro name"),
    ("name-with-dash", {**KEY, "name": "a-b"}, "not a valid Avro name"),
    ("name-empty", {**KEY, "name": ""}, "not a valid Avro name"),
    ("name-not-string", {**KEY, "name": 5}, "must be a string"),
    ("name-missing", {"type": "record", "fields": []}, "needs a 'name'"),
    ("namespace-bad-part", {**KEY, "namespace": "a..b"}, "not a valid Avro namespace"),
    ("namespace-digit", {**KEY, "namespace": "com.1x"}, "not a valid Avro namespace"),
    ("fullname-bad-part", {**KEY, "name": "com.9k"}, "not a valid Avro name"),
    ("primitive-as-name", {**KEY, "name": "int"}, "primitive type name"),
    ("record-without-fields", {"type": "record", "name": "k"}, "needs 'fields'"),
    ("fields-not-a-list", {"type": "record", "name": "k", "fields": {"id": "long"}},
     "must be a list"),
    ("field-not-object", _rec("long"), "a field must be an object"),
    ("field-without-name", _rec({"type": "int"}), "needs a 'name'"),
    ("field-bad-name", _rec({"name": "1x", "type": "int"}), "not a valid Avro field name"),
    ("field-without-type", _rec({"name": "x"}), "needs a 'type'"),
    ("duplicate-field", _rec({"name": "id", "type": "int"}), "two fields named 'id'"),
    ("unknown-type", _rec(_field("integer")), "unknown type 'integer'"),
    ("unknown-complex-type", _rec(_field({"type": "tuple"})), "unknown type 'tuple'"),
    ("type-not-string", _rec(_field({"type": 5})), "must be a string"),
    ("no-type-key", _rec(_field({"items": "int"})), "needs a 'type'"),
    ("array-without-items", _rec(_field({"type": "array"})), "needs 'items'"),
    ("map-without-values", _rec(_field({"type": "map"})), "needs 'values'"),
    ("enum-no-symbols", _rec(_field({"type": "enum", "name": "E", "symbols": []})),
     "has no symbols"),
    ("enum-symbols-missing", _rec(_field({"type": "enum", "name": "E"})), "needs 'symbols'"),
    ("enum-symbols-not-list", _rec(_field({"type": "enum", "name": "E", "symbols": "A"})),
     "must be a list"),
    ("enum-bad-symbol", _rec(_field({"type": "enum", "name": "E", "symbols": ["A", "1B"]})),
     "not a valid Avro enum symbol"),
    ("enum-duplicate-symbol", _rec(_field({"type": "enum", "name": "E", "symbols": ["A", "A"]})),
     "twice"),
    ("enum-default-not-symbol",
     _rec(_field({"type": "enum", "name": "E", "symbols": ["A"], "default": "B"})),
     "not one of its symbols"),
    ("fixed-negative-size", _rec(_field({"type": "fixed", "name": "F", "size": -1})),
     "integer >= 0"),
    ("fixed-string-size", _rec(_field({"type": "fixed", "name": "F", "size": "4"})),
     "integer >= 0"),
    ("fixed-float-size", _rec(_field({"type": "fixed", "name": "F", "size": 1.5})),
     "integer >= 0"),
    ("fixed-without-size", _rec(_field({"type": "fixed", "name": "F"})), "needs a 'size'"),
    ("redefined-name", _rec(_field({"type": "enum", "name": "E", "symbols": ["A"]}),
                            {"name": "y", "type": {"type": "enum", "name": "E",
                                                   "symbols": ["B"]}}), "defined twice"),
    ("redefined-root", _rec(_field({"type": "record", "name": "k", "fields": []})),
     "defined twice"),
    ("default-string-for-int", _rec(_field("int", default="x")), "does not match its type"),
    ("default-out-of-int-range", _rec(_field("int", default=2**40)), "out of range"),
    ("default-int-for-boolean", _rec(_field("boolean", default=1)), "not a boolean"),
    ("default-null-for-string", _rec(_field("string", default=None)), "not a string"),
    ("union-default-not-first-branch", _rec(_field(["null", "int"], default=1)),
     "first branch"),
    ("record-default-missing-field",
     _rec(_field({"type": "record", "name": "N", "fields": [{"name": "a", "type": "int"}]},
                 default={})), "missing and has no default"),
    ("fixed-default-wrong-length",
     _rec(_field({"type": "fixed", "name": "F", "size": 2}, default="abc")), "2 bytes long"),
    ("enum-field-default-unknown",
     _rec(_field({"type": "enum", "name": "E", "symbols": ["A"]}, default="Z")),
     "not a symbol"),
    ("union-duplicate-branch", _rec(_field(["int", "int"])), "two branches of type int"),
    ("union-nested-union", _rec(_field(["null", ["int"]])), "immediately contain"),
    ("field-order-invalid", _rec(_field("int", order="up")), "order 'up'"),
    ("aliases-not-list", {**KEY, "aliases": "x"}, "aliases must be a list"),
    ("field-alias-bad", _rec(_field("int", aliases=["9a"])), "not a valid Avro alias"),
    ("not-json", "{\"type\": \"record\",", "not valid JSON"),
    ("number", "5", "not an Avro schema"),
    ("empty-file", "", "empty"),
    ("absurd-nesting", _nested(10_000), "nested more than"),
]

INVALID_JSON_SCHEMA: list[tuple[str, Any, str]] = [
    ("properties-not-object", {"type": "object", "properties": 5}, "/properties"),
    ("type-unknown", {"type": "object", "properties": {"id": {"type": "int"}}},
     "/properties/id/type"),
    ("required-not-list", {**JSON_KEY, "required": "id"}, "/required"),
    ("min-length-negative", {"type": "object", "properties": {"id": {"type": "string",
                                                                     "minLength": -1}}},
     "/properties/id/minLength"),
    ("draft07-boolean-exclusive-maximum",
     {"type": "object", "properties": {"id": {"type": "integer", "maximum": 3,
                                              "exclusiveMaximum": True}}}, "exclusiveMaximum"),
    ("draft2020-boolean-exclusive-maximum",
     {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
      "properties": {"id": {"type": "integer", "exclusiveMaximum": True}}}, "exclusiveMaximum"),
    ("unknown-draft", {**JSON_KEY, "$schema": "http://example.com/my-draft"}, "/$schema"),
    ("schema-keyword-not-string", {**JSON_KEY, "$schema": 7}, "/$schema"),
    ("array-root", [JSON_KEY], "expected an object or a boolean"),
    ("string-root-declared-json", "\"id\"", "expected an object or a boolean"),
    ("empty-file", "", "empty"),
    ("absurd-nesting", "[" * 10_000 + "]" * 10_000, "nested more than"),
]


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    """A file registry: topic t with Avro key and value, topic j with JSON Schemas."""
    root = tmp_path / "registry"
    (root / "subjects").mkdir(parents=True)
    (root / "config.json").write_text('{"compatibility": "BACKWARD"}')
    for subject, text in (("t-key/v1.avsc", KEY), ("t-value/v1.avsc", VALUE),
                          ("j-key/v1.json", JSON_KEY), ("j-value/v1.json", JSON_VALUE)):
        path = root / "subjects" / subject
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(text))
    return root


def _write(tmp_path: Path, name: str, schema: Any) -> Path:
    path = tmp_path / name
    path.write_text(schema if isinstance(schema, str) else json.dumps(schema))
    return path


def _avro_commands(reg: Path, good_key: Path, good_value: Path, bad: Path) -> dict[str, list]:
    return {
        "check-key": ["check", "--topic", "t", "--registry", f"file://{reg}", "--key-schema",
                      str(bad), "--value-schema", str(good_value)],
        "check-value": ["check", "--topic", "t", "--registry", f"file://{reg}", "--key-schema",
                        str(good_key), "--value-schema", str(bad)],
        "diff-key": ["diff", "--key", str(good_key), str(bad)],
        "diff-level": ["diff", "--level", "BACKWARD", str(good_value), str(bad)],
        "encode": ["encode", "--key-format", "json", "--value-format", "json",
                   "--key-schema", str(bad), "--value-schema", str(good_value),
                   "--row", '{"id": 1, "a": "x"}'],
        "decode": ["decode", "--key-format", "json", "--value-format", "json",
                   "--key-schema", str(good_key), "--value-schema", str(bad),
                   "--key", "02"],
    }


# Every Avro case through check (key and value), diff --key, diff --level, encode and decode.
_AVRO_COMMANDS = ("check-key", "check-value", "diff-key", "diff-level", "encode", "decode")


@pytest.mark.parametrize("command", _AVRO_COMMANDS)
@pytest.mark.parametrize(("case", "schema", "says"), INVALID_AVRO,
                         ids=[c[0] for c in INVALID_AVRO])
def test_invalid_avro_schema_is_rejected(tmp_path: Path, registry: Path, command: str,
                                         case: str, schema: Any, says: str) -> None:
    good_key = _write(tmp_path, "key.avsc", KEY)
    good_value = _write(tmp_path, "value.avsc", VALUE)
    bad = _write(tmp_path, f"bad-{case}.avsc", schema)
    args = _avro_commands(registry, good_key, good_value, bad)[command]
    out = assert_rejected(args, 2, "invalid-schema", says=says)
    assert str(bad) in out.stderr, out.stderr


def _json_commands(reg: Path, good_key: Path, good_value: Path, bad: Path) -> dict[str, list]:
    return {
        "check-value": ["check", "--topic", "j", "--registry", f"file://{reg}",
                        "--key-format", "json", "--value-format", "json", "--key-schema",
                        str(good_key), "--value-schema", str(bad), "--schema-type", "json"],
        "diff-key": ["diff", "--key", "--key-format", "json", "--schema-type", "json",
                     str(good_key), str(bad)],
        "diff-level": ["diff", "--level", "BACKWARD", "--schema-type", "json", str(good_value),
                       str(bad)],
        "encode": ["encode", "--key-format", "json", "--value-format", "json",
                   "--key-schema", str(good_key), "--value-schema", str(bad),
                   "--schema-type", "json", "--row", '{"id": 1, "a": "x"}'],
        "decode": ["decode", "--key-format", "json", "--value-format", "json",
                   "--key-schema", str(bad), "--value-schema", str(good_value),
                   "--schema-type", "json", "--key", "7b7d"],
    }


@pytest.mark.parametrize("command", ("check-value", "diff-key", "diff-level", "encode", "decode"))
@pytest.mark.parametrize(("case", "schema", "says"), INVALID_JSON_SCHEMA,
                         ids=[c[0] for c in INVALID_JSON_SCHEMA])
def test_invalid_json_schema_is_rejected(tmp_path: Path, registry: Path, command: str,
                                         case: str, schema: Any, says: str) -> None:
    good_key = _write(tmp_path, "key.json", JSON_KEY)
    good_value = _write(tmp_path, "value.json", JSON_VALUE)
    bad = _write(tmp_path, f"bad-{case}.json", schema)
    args = _json_commands(registry, good_key, good_value, bad)[command]
    out = assert_rejected(args, 2, "invalid-schema", says=says)
    assert str(bad) in out.stderr, out.stderr


@pytest.mark.parametrize(("subject", "schema", "says"), [
    ("t-value/v2.avsc", {**VALUE, "name": "1bad"}, "t-value v2"),
    ("t-value/v2.avsc", {"type": "enum", "name": "E", "symbols": []}, "t-value v2"),
    ("t-key/v2.avsc", {"type": "record", "name": "k"}, "t-key v2"),
    ("j-value/v2.json", {"type": "object", "properties": 5}, "j-value v2"),
    ("t-value/v2.avsc", _nested(10_000), "nested more than"),
], ids=["value-bad-name", "value-enum-no-symbols", "key-no-fields", "json-properties-5",
        "value-absurd-nesting"])
def test_invalid_registered_version_names_subject_and_version(
        tmp_path: Path, registry: Path, subject: str, schema: Any, says: str) -> None:
    """A registry text is validated too; the message names the subject and version."""
    _write(registry / "subjects", subject, schema)
    topic = subject[0]
    fmt = "json" if subject.endswith(".json") else "avro-confluent"
    candidate = _write(tmp_path, "cand.json" if fmt == "json" else "cand.avsc",
                       JSON_VALUE if fmt == "json" else VALUE)
    args = ["check", "--topic", topic, "--registry", f"file://{registry}",
            "--key-format", fmt, "--value-format", fmt, "--value-schema", str(candidate)]
    assert_rejected(args, 2, "invalid-schema", says=says)


@pytest.mark.parametrize(("source", "says"), [
    ("subject:t-value:abc", "not a subject reference"),
    ("subject::1", "not a subject reference"),
], ids=["version-not-number", "no-name"])
def test_bad_subject_reference(registry: Path, source: str, says: str) -> None:
    assert_rejected(["encode", "--key-format", "json", "--value-format", "json",
                     "--registry", f"file://{registry}", "--key-schema", source,
                     "--value-schema", source, "--row", "{}"], 2, "invalid-schema", says=says)


def test_encode_of_an_invalid_registered_subject_names_it(registry: Path) -> None:
    _write(registry / "subjects", "t-value/v2.avsc", {**VALUE, "fields": VALUE["fields"] * 2})
    assert_rejected(["encode", "--key-format", "json", "--value-format", "json",
                     "--registry", f"file://{registry}", "--key-schema",
                     "subject:t-key", "--value-schema", "subject:t-value", "--row", "{}"],
                    2, "invalid-schema", says="t-value v2")


def test_nesting_at_the_limit_is_judged(tmp_path: Path) -> None:
    """The depth limit rejects only what is deeper than documented."""
    # _nested(d) is d arrays inside a field object inside the field list inside the record.
    ok = _write(tmp_path, "ok.avsc", _nested(MAX_SCHEMA_DEPTH - 3))
    too_deep = _write(tmp_path, "deep.avsc", _nested(MAX_SCHEMA_DEPTH - 2))
    for command in (["diff", "--key"], ["diff", "--level", "FULL"]):
        out = run_cli([*command, str(ok), str(ok)])
        assert out.code == 0, out.output
        assert_rejected([*command, str(ok), str(too_deep)], 2, "invalid-schema",
                        says=f"more than {MAX_SCHEMA_DEPTH} levels")


# --- legal but hard: judged, never rejected ---------------------------------------------------

RECURSIVE = {"type": "record", "name": "r", "fields": [
    {"name": "id", "type": "long"}, {"name": "next", "type": ["null", "r"], "default": None}]}
RECURSIVE_V2 = {**RECURSIVE, "fields": [*RECURSIVE["fields"],
                                        {"name": "tag", "type": "string", "default": ""}]}
MUTUAL = {"type": "record", "name": "a", "fields": [
    {"name": "id", "type": "long"},
    {"name": "b", "type": ["null", {"type": "record", "name": "b", "fields": [
        {"name": "back", "type": ["null", "a"], "default": None}]}], "default": None}]}
INLINE_RECORD = _rec({"name": "n", "type": {"type": "record", "name": "N", "fields": [
    {"name": "x", "type": "int"}]}})
INLINE_ENUM = _rec({"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}})
INLINE_FIXED = _rec({"name": "f", "type": {"type": "fixed", "name": "F", "size": 4}})
NAMED_UNION = _rec({"name": "u", "type": [
    "null", {"type": "record", "name": "P", "fields": [{"name": "x", "type": "int"}]},
    {"type": "enum", "name": "S", "symbols": ["A"]}], "default": None})
ALIASED = {"type": "record", "name": "k2", "aliases": ["k"], "fields": [
    {"name": "ident", "type": "long", "aliases": ["id"]}]}

# (id, old, new, command, expected exit code); diff --key uses avro-confluent unless -avro.
HARD: list[tuple[str, Any, Any, str, int]] = [
    ("recursive-same-key", RECURSIVE, RECURSIVE, "diff-key", 0),
    ("recursive-same-level", RECURSIVE, RECURSIVE, "diff-level", 0),
    ("recursive-field-added-level", RECURSIVE, RECURSIVE_V2, "diff-level", 0),
    ("recursive-field-added-key", RECURSIVE, RECURSIVE_V2, "diff-key", 1),
    ("recursive-from-flat-key", KEY, RECURSIVE, "diff-key", 1),
    ("mutual-recursion-key", MUTUAL, MUTUAL, "diff-key", 0),
    ("mutual-recursion-level", MUTUAL, MUTUAL, "diff-level", 0),
    ("inline-record-added-level", KEY, INLINE_RECORD, "diff-level", 1),
    ("inline-enum-added-level", KEY, INLINE_ENUM, "diff-level", 1),
    ("inline-fixed-added-level", KEY, INLINE_FIXED, "diff-level", 1),
    ("inline-record-added-key", KEY, INLINE_RECORD, "diff-key", 1),
    ("inline-enum-added-key", KEY, INLINE_ENUM, "diff-key", 1),
    ("inline-fixed-added-key", KEY, INLINE_FIXED, "diff-key", 1),
    ("inline-record-removed-forward", INLINE_RECORD, KEY, "diff-level-forward", 1),
    ("named-union-level", KEY, NAMED_UNION, "diff-level", 0),
    ("named-union-same-key", NAMED_UNION, NAMED_UNION, "diff-key", 0),
    ("named-union-added-key", KEY, NAMED_UNION, "diff-key-avro", 1),
    ("named-union-branch-added-key", _rec({"name": "u", "type": ["null", "int"]}), NAMED_UNION,
     "diff-key-avro", 1),
    ("aliases-level", KEY, ALIASED, "diff-level", 0),
    ("aliases-key-avro", KEY, ALIASED, "diff-key-avro", 0),
    ("aliases-key-confluent", KEY, ALIASED, "diff-key", 1),
]


@pytest.mark.parametrize(("case", "old", "new", "command", "code"), HARD,
                         ids=[h[0] for h in HARD])
def test_legal_but_hard_schemas_are_judged(tmp_path: Path, case: str, old: Any, new: Any,
                                           command: str, code: int) -> None:
    a, b = _write(tmp_path, "old.avsc", old), _write(tmp_path, "new.avsc", new)
    args = {"diff-key": ["diff", "--key"], "diff-level": ["diff", "--level", "BACKWARD"],
            "diff-key-avro": ["diff", "--key", "--key-format", "avro"],
            "diff-level-forward": ["diff", "--level", "FORWARD"]}[command]
    out = run_cli([*args, str(a), str(b)])
    assert "Traceback" not in out.output
    assert out.code == code, out.output


@pytest.mark.parametrize(("case", "value"), [
    ("recursive", RECURSIVE), ("inline-record", INLINE_RECORD), ("inline-enum", INLINE_ENUM),
    ("named-union", NAMED_UNION), ("mutual-recursion", MUTUAL)],
    ids=lambda v: v if isinstance(v, str) else "")
def test_check_judges_hard_value_schemas(tmp_path: Path, registry: Path, case: str,
                                         value: Any) -> None:
    """check: the registered v1 against a hard candidate; a verdict, not an error."""
    cand = _write(tmp_path, "cand.avsc", value)
    key = _write(tmp_path, "key.avsc", KEY)
    out = run_cli(["check", "--topic", "t", "--registry", f"file://{registry}",
                   "--key-schema", str(key), "--value-schema", str(cand)])
    assert "Traceback" not in out.output
    assert out.code in (0, 1), out.output


def test_check_judges_a_recursive_key(tmp_path: Path, registry: Path) -> None:
    _write(registry / "subjects", "t-key/v1.avsc", RECURSIVE)
    same = _write(tmp_path, "same.avsc", RECURSIVE)
    grown = _write(tmp_path, "grown.avsc", RECURSIVE_V2)
    base = ["check", "--topic", "t", "--registry", f"file://{registry}", "--value-format", ""]
    assert run_cli([*base, "--key-schema", str(same)]).code == 0
    out = run_cli([*base, "--key-schema", str(grown)])
    assert out.code == 1, out.output
    assert "KG101" in out.stdout and "tag" in out.stdout


@pytest.mark.parametrize("schema", [RECURSIVE, MUTUAL], ids=["self", "mutual"])
def test_encode_of_a_recursive_schema_is_unsupported(tmp_path: Path, schema: Any) -> None:
    rec = _write(tmp_path, "rec.avsc", schema)
    value = _write(tmp_path, "value.avsc", VALUE)
    out = assert_rejected(["encode", "--key-format", "json", "--value-format", "json",
                           "--key-schema", str(rec), "--value-schema", str(value),
                           "--row", '{"id": 1}'], 2, "unsupported-type", says="recursive")
    assert str(rec) in out.stderr
