"""Schema identity: one schema, one canonical form, one derived id; pure, no registry."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import keyguard.formats.registry.file as file_registry
from keyguard.formats.avro_schema import canonical_form as avro_parsing_canonical_form
from keyguard.formats.avro_schema import fingerprint as avro_fingerprint
from keyguard.formats.avro_schema import parse_avro
from keyguard.formats.errors import SchemaError
from keyguard.formats.registry import SchemaVersion
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schema_identity import (
    avro_canonical,
    canonical_form,
    derived_schema_id,
    fingerprint,
    parsing_canonical_form,
    same_schema,
)

KEY = {"type": "record", "name": "Key", "namespace": "shop", "fields": [
    {"name": "id", "type": {"type": "long"}},
    {"name": "at", "type": {"type": "record", "name": "At", "fields": [
        {"name": "day", "type": {"type": "int", "logicalType": "date"}}]}},
    {"name": "again", "type": "At"},
]}
REF = {"name": "shop.Address", "subject": "address-value", "version": 1}


def test_canonical_form_drops_only_what_a_registry_drops() -> None:
    spaced = json.dumps(KEY, indent=4)
    reordered = json.dumps(dict(reversed(list(KEY.items()))))
    assert canonical_form(spaced) == canonical_form(reordered) == canonical_form(json.dumps(KEY))
    doc = json.loads(canonical_form(json.dumps(KEY)))
    assert doc["name"] == "shop.Key" and "namespace" not in doc
    assert doc["fields"][0]["type"] == "long"  # {"type": "long"} is "long"
    assert doc["fields"][1]["type"]["name"] == "shop.At"  # names become full names
    assert doc["fields"][2]["type"] == "shop.At"
    # Unlike Avro's Parsing Canonical Form, docs and logical types stay part of the identity.
    with_doc = {**KEY, "doc": "the key"}
    assert canonical_form(json.dumps(with_doc)) != canonical_form(json.dumps(KEY))
    assert parsing_canonical_form(with_doc) == parsing_canonical_form(KEY)
    dec = {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}
    assert canonical_form(json.dumps(dec)) != canonical_form(json.dumps({**dec, "scale": 4}))


def test_canonical_form_of_other_types_and_references() -> None:
    assert canonical_form('{"b": 1, "a": {"y": 2, "x": 1}}', "json") == \
        '{"a":{"x":1,"y":2},"b":1}'
    # Protobuf: the compiled descriptor (keyguard.formats.protobuf_schema.canonical_proto), so
    # layout and comments do not count.
    assert canonical_form("  syntax = \"proto3\";\n\n message M {}\n", "PROTOBUF") == \
        canonical_form('syntax = "proto3"; // M\nmessage M {}', "PROTOBUF")
    text = json.dumps({"type": "record", "name": "Order", "fields": [
        {"name": "ship", "type": "shop.Address"}]})  # unknown until references are resolved
    with_refs = canonical_form(text, references=[REF])
    assert with_refs.endswith('\0refs[{"name":"shop.Address","subject":"address-value",'
                              '"version":1}]')
    with pytest.raises(SchemaError, match="not a valid Avro schema"):
        canonical_form(text)  # without its references, the name is unknown
    with pytest.raises(SchemaError, match="unknown schema type 'XML'"):
        canonical_form("<a/>", "xml")
    with pytest.raises(SchemaError, match="here: "):
        canonical_form("{nope", where="here")


def test_derived_ids_depend_on_type_canonical_form_and_references() -> None:
    text = json.dumps(KEY)
    schema_id = derived_schema_id(text)
    assert 0 < schema_id < 2**31
    assert derived_schema_id(json.dumps(KEY, indent=2)) == schema_id
    assert derived_schema_id(text, "JSON") != schema_id
    assert derived_schema_id(json.dumps({**KEY, "doc": "x"})) != schema_id
    ref_text = json.dumps({"type": "record", "name": "O", "fields": [
        {"name": "a", "type": "shop.Address"}]})
    assert derived_schema_id(ref_text, references=[REF]) != derived_schema_id(
        ref_text, references=[{**REF, "version": 2}])


def test_the_file_registry_assigns_the_derived_id(tmp_path: Path) -> None:
    reg = FileRegistry(tmp_path)
    assert reg.register("k", json.dumps(KEY)) == derived_schema_id(json.dumps(KEY))
    # Older importers still find the identity functions where they were, the same objects.
    assert file_registry.canonical_form is canonical_form
    assert file_registry.derived_schema_id is derived_schema_id
    assert file_registry.same_schema is same_schema


def test_same_schema_is_the_first_version_with_that_identity() -> None:
    text = json.dumps(KEY)
    versions = [SchemaVersion("s", 1, 10, json.dumps({**KEY, "doc": "x"})),
                SchemaVersion("s", 2, 11, json.dumps(KEY, indent=2)),
                SchemaVersion("s", 3, 12, text),
                SchemaVersion("s", 4, 13, text, "JSON")]
    found = same_schema(versions, text)
    assert found is not None and found.version == 2
    assert same_schema(versions[:1], text) is None


def test_fingerprints_are_avros() -> None:
    text = json.dumps(KEY)
    assert avro_fingerprint(text) == fingerprint(parse_avro(text))
    assert avro_parsing_canonical_form(text) == parsing_canonical_form(parse_avro(text))
    assert fingerprint(parse_avro(text), "SHA-256") != fingerprint(parse_avro(text))
    assert fingerprint(parse_avro(json.dumps({**KEY, "doc": "x"}))) == \
        fingerprint(parse_avro(text))


def test_avro_canonical_resolves_names_in_their_namespace() -> None:
    assert avro_canonical("Thing", "a.b") == "a.b.Thing"
    assert avro_canonical("x.Thing", "a.b") == "x.Thing"
    assert avro_canonical("string", "a.b") == "string"
    assert avro_canonical({"type": "array", "items": "T"}, "n") == {"type": "array",
                                                                     "items": "n.T"}


def test_schema_identity_is_pure() -> None:
    """No network client, no file system, no registry backend is imported."""
    source = Path(__file__).parents[2] / "formats" / "schema_identity.py"
    imported = {
        alias.name if isinstance(node, ast.Import) else str(node.module)
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert not {m for m in imported
                if m.startswith(("keyguard.formats.registry.", "confluent_kafka", "requests",
                                 "httpx", "os", "pathlib"))}
