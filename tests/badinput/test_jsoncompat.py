"""JSON Schema compatibility through `diff --level`: bad $refs exit 2, verdicts name the kind.

Each bad case asserts exit 2, kind invalid-schema, the file and the location inside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from badinput import assert_rejected, run_cli

OLD = {"type": "object", "properties": {"a": {"type": "string"}}}
D2020 = "https://json-schema.org/draft/2020-12/schema"

BAD_REFERENCES: list[tuple[str, Any, str]] = [
    ("remote-ref", {"type": "object", "properties": {"a": {"$ref": "https://example.com/x"}}},
     "at /properties/a/$ref"),
    ("missing-pointer", {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}},
     "'#/$defs/nope'"),
    ("missing-definition-in-items",
     {"type": "array", "items": {"$ref": "#/definitions/item"}}, "at /items/$ref"),
    ("missing-bundled-resource",
     {"$schema": D2020, "$defs": {"a": {"$id": "https://example.com/a", "type": "string"}},
      "$ref": "https://example.com/b"}, "'https://example.com/b'"),
    ("root-ref-to-nothing", {"$ref": "#/definitions/root"}, "at /$ref"),
    ("ref-into-tuple-item", {"type": "array", "items": [{"$ref": "#/items/5"}]},
     "at /items/0/$ref"),
    ("relative-file-ref", {"type": "object", "properties": {"a": {"$ref": "other.json"}}},
     "'other.json'"),
]

# Valid against the root's draft 7, but a subschema declares 2020-12 and is not valid under it.
EMBEDDED_DIALECT = {"type": "object", "properties": {"a": {
    "$schema": D2020, "type": "array", "items": [{"type": "string"}]}}}


def _write(tmp_path: Path, name: str, schema: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(schema))
    return path


@pytest.mark.parametrize(("case", "schema", "says"), BAD_REFERENCES,
                         ids=[c[0] for c in BAD_REFERENCES])
def test_unresolvable_reference_is_invalid_schema(tmp_path: Path, case: str, schema: Any,
                                                  says: str) -> None:
    old = _write(tmp_path, "old.json", OLD)
    bad = _write(tmp_path, f"{case}.json", schema)
    out = assert_rejected(["diff", "--level", "BACKWARD", "--schema-type", "json", str(old),
                           str(bad)], 2, "invalid-schema", says=says)
    assert str(bad) in out.stderr and "cannot resolve $ref" in out.stderr


def test_breaking_verdict_names_confluents_kind(tmp_path: Path) -> None:
    old = _write(tmp_path, "old.json",
                 {"type": "object", "additionalProperties": {"type": "string"}})
    new = _write(tmp_path, "new.json", {"type": "object", "additionalProperties": False})
    out = run_cli(["diff", "--level", "BACKWARD", "--schema-type", "json", str(old), str(new)])
    assert out.code == 1, out.output
    assert "ADDITIONAL_PROPERTIES_REMOVED" in out.stdout and "/additionalProperties" in out.stdout


def test_bundled_resource_resolves_through_the_cli(tmp_path: Path) -> None:
    def bundled(zip_type: str) -> dict[str, Any]:
        return {"$schema": D2020, "type": "object",
                "properties": {"home": {"$ref": "https://example.com/address"}},
                "$defs": {"address": {"$id": "https://example.com/address", "type": "object",
                                      "properties": {"zip": {"type": zip_type}}}}}

    old = _write(tmp_path, "old.json", bundled("integer"))
    same = run_cli(["diff", "--level", "BACKWARD", "--schema-type", "json", str(old), str(old)])
    assert same.code == 0, same.output
    new = _write(tmp_path, "new.json", bundled("number"))
    widened = run_cli(["diff", "--level", "BACKWARD", "--schema-type", "json", str(old),
                       str(new)])
    assert widened.code == 0, widened.output
    narrowed = run_cli(["diff", "--level", "FORWARD", "--schema-type", "json", str(old),
                        str(new)])
    assert narrowed.code == 1 and "TYPE_NARROWED" in narrowed.stdout, narrowed.output


def test_subschema_invalid_under_its_own_dialect_is_invalid_schema(tmp_path: Path) -> None:
    old = _write(tmp_path, "old.json", OLD)
    bad = _write(tmp_path, "embedded.json", EMBEDDED_DIALECT)
    out = assert_rejected(["diff", "--level", "BACKWARD", "--schema-type", "json", str(old),
                           str(bad)], 2, "invalid-schema", says="embedded resources")
    assert str(bad) in out.stderr
