"""Where Karapace, Apicurio or Redpanda judge a JSON Schema change unlike Confluent.

The walk (`keyguard.guard.compat.jsonschema.diff`) follows Confluent; under another registry's
rules (`keyguard.guard.compat.registry_rules.RegistryRules`) it asks these functions at the few
places where that registry decides otherwise, and nowhere else.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from keyguard.formats.errors import SchemaError
from keyguard.formats.json_schema import validate_json_schema
from keyguard.formats.schemajson import loads_schema
from keyguard.guard.compat.jsonschema.model import CONST, EMPTY, ENUM, FALSE, OBJECT, Node

if TYPE_CHECKING:
    from keyguard.guard.compat.jsonschema.diff import Found, Path, Walk

#: Metaschemas Redpanda tries for a schema without `$schema`, the draft Confluent assumes first.
_GUESSED_DRAFTS = (
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-04/schema#",
)


def classes_differ(walk: Walk, reader: Node, writer: Node, at: Path) -> Found | None:
    """The verdict on two schemas of different kinds where the chosen registry has its own;
    None: Confluent's (`SchemaDiff.compare`) stands."""
    rules = walk.rules
    if rules.boolean_schemas_as_karapace:
        booleans = (EMPTY, FALSE)
        if reader.kind in booleans and writer.kind in booleans:
            return []  # Karapace: `true` and `false` read each other
        if reader.kind == EMPTY and writer.kind != OBJECT:
            return [walk.issue("TYPE_CHANGED", at, "under Karapace's rules a `true` (or `{}`) "
                               "schema reads only object schemas", reader, writer)]
        if writer.kind == FALSE and reader.kind != EMPTY:
            return [walk.issue("TYPE_CHANGED", at, "under Karapace's rules only a `true` or "
                               "`false` schema reads a `false` one", reader, writer)]
    if rules.const_is_one_value_enum and {reader.kind, writer.kind} == {CONST, ENUM}:
        kept = {json.dumps(v, sort_keys=True) for v in _values(reader)}
        lost = [v for v in _values(writer) if json.dumps(v, sort_keys=True) not in kept]
        return [walk.issue("ENUM_ARRAY_NARROWED", at, f"values no longer accepted: {lost}",
                           reader, writer)] if lost else []
    return None


def string_annotations(walk: Walk, r: dict[str, Any], w: dict[str, Any], at: Path) -> Found:
    """Apicurio's `format`, `contentEncoding` and `contentMediaType`: the reader may drop one,
    not add or change it (STRING_TYPE_FORMAT_ADDED, ..._CHANGED)."""
    found: Found = []
    for keyword in walk.rules.string_annotations:
        r_value, w_value = r.get(keyword), w.get(keyword)
        if r_value is None or r_value == w_value:
            continue
        name = "".join(f"_{c}" if c.isupper() else c.upper() for c in keyword)
        way = "ADDED" if w_value is None else "CHANGED"
        found.append(walk.issue(f"STRING_TYPE_{name}_{way}", (*at, keyword),
                                f"{keyword} {w_value!r} became {r_value!r} (Apicurio compares "
                                f"{keyword}; Confluent does not)", r, w))
    return found


def required_undeclared(walk: Walk, r: dict[str, Any], w: dict[str, Any], at: Path) -> Found:
    """Apicurio: a name newly required by the reader, declared in its `properties` or not."""
    if not walk.rules.required_undeclared:
        return []
    declared = r.get("properties")
    props: dict[str, Any] = declared if isinstance(declared, dict) else {}
    w_required = set(_names(w.get("required")))
    return [walk.issue("OBJECT_TYPE_REQUIRED_PROPERTIES_MEMBER_ADDED", (*at, "required", name),
                       f"{name} became required (Apicurio counts a required name that "
                       "`properties` does not declare; Confluent does not)", r, w)
            for name in _names(r.get("required"))
            if name not in w_required and name not in props]


def guess_draft(schema: Any) -> Any:
    """Redpanda: a schema without `$schema` under the first draft whose metaschema accepts it
    (draft-07 first, as Confluent); unchanged when none does (the error is draft-07's)."""
    if not isinstance(schema, dict) or "$schema" in schema:
        return schema
    for uri in _GUESSED_DRAFTS:
        candidate = {"$schema": uri, **schema}
        try:
            validate_json_schema(candidate)
        except SchemaError:
            continue
        return schema if uri == _GUESSED_DRAFTS[0] else candidate
    return schema


def with_guessed_draft(text: str) -> str:
    """JSON Schema text with the draft `guess_draft` finds declared in its `$schema`; the text
    as it is when it is no JSON, declares a draft, or draft-07 reads it."""
    try:
        schema = loads_schema(text, "schema")
    except SchemaError:
        return text
    guessed = guess_draft(schema)
    return text if guessed is schema else json.dumps(guessed)


def _values(node: Node) -> list[Any]:
    if node.kind == CONST:
        return [node.schema.get("const")]
    enum = node.schema.get("enum")
    return list(enum) if isinstance(enum, list) else []


def _names(required: Any) -> list[str]:
    return [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
