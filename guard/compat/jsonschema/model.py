"""What kind of schema a JSON Schema node is, as Confluent Schema Registry loads it.

Confluent compares schemas as everit-json-schema loads them, one Java class per kind: a node
with `type` is that type's schema; a node without `type` is the schema of each type whose
keywords it uses; `enum`, `const`, `not` and each of `allOf`/`anyOf`/`oneOf` are schemas of
their own; a node that holds several of these is a synthetic `allOf` of them (so
`{"type": "integer", "enum": [1, 2]}` is `allOf[integer, enum]`); a `type` list is an `anyOf`
of one schema per type; a node with none of them (`{}`, `true`) is the empty schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EMPTY = "empty"
FALSE = "false"
STRING = "string"
NUMBER = "number"
BOOLEAN = "boolean"
NULL = "null"
OBJECT = "object"
ARRAY = "array"
ENUM = "enum"
CONST = "const"
NOT = "not"
CONDITIONAL = "if"
ALL_OF = "allOf"
ANY_OF = "anyOf"
ONE_OF = "oneOf"
COMBINED = (ALL_OF, ANY_OF, ONE_OF)

_TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    STRING: frozenset({"minLength", "maxLength", "pattern", "format"}),
    NUMBER: frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                       "multipleOf"}),
    OBJECT: frozenset({"properties", "required", "additionalProperties", "patternProperties",
                       "minProperties", "maxProperties", "dependencies", "dependentRequired",
                       "dependentSchemas", "propertyNames", "unevaluatedProperties"}),
    ARRAY: frozenset({"items", "additionalItems", "prefixItems", "minItems", "maxItems",
                      "uniqueItems", "contains", "minContains", "maxContains",
                      "unevaluatedItems"}),
}
_SEPARATE = frozenset({"enum", "const", "not", "if", "then", "else", *COMBINED})
_BY_TYPE = {"string": STRING, "number": NUMBER, "integer": NUMBER, "boolean": BOOLEAN,
            "null": NULL, "object": OBJECT, "array": ARRAY}


@dataclass(eq=False)
class Node:
    """One schema as Confluent sees it: its kind, its keywords, and (combined) its subschemas."""

    kind: str
    schema: Any
    subs: list[Any] = field(default_factory=list)
    integer: bool = False
    synthetic: bool = False

    @property
    def type_name(self) -> str:
        if self.kind == NUMBER:
            return "integer" if self.integer else "number"
        return self.kind


class Classifier:
    """Classifies schema nodes once each (by identity, so cycles of inlined `$ref`s are stable)."""

    def __init__(self) -> None:
        self._nodes: dict[int, tuple[Any, Node]] = {}

    def node(self, schema: Any) -> Node:
        if isinstance(schema, Node):
            return schema
        if schema is True:
            return Node(EMPTY, True)
        if schema is False or not isinstance(schema, dict):
            return Node(FALSE, schema)
        cached = self._nodes.get(id(schema))
        if cached is not None:
            return cached[1]
        made = _classify(schema)
        self._nodes[id(schema)] = (schema, made)
        return made


def _classify(schema: dict[str, Any]) -> Node:
    pieces: list[Node] = []
    declared = schema.get("type")
    if isinstance(declared, list) and len(declared) == 1:
        declared = declared[0]
    if isinstance(declared, str):
        pieces.append(_typed(schema, declared))
    elif isinstance(declared, list):
        own = {k: v for k, v in schema.items() if k not in _SEPARATE}
        subs = [_typed({**own, "type": name}, name) for name in declared]
        pieces.append(Node(ANY_OF, schema, subs=list(subs), synthetic=True))
    else:
        pieces += [Node(kind, schema) for kind, words in _TYPE_KEYWORDS.items()
                   if words & schema.keys()]
    if "enum" in schema:
        pieces.append(Node(ENUM, schema))
    if "const" in schema:
        pieces.append(Node(CONST, schema))
    if "not" in schema:
        pieces.append(Node(NOT, schema, subs=[schema["not"]]))
    if "if" in schema:
        pieces.append(Node(CONDITIONAL, schema))
    for keyword in COMBINED:
        if isinstance(schema.get(keyword), list):
            pieces.append(Node(keyword, schema, subs=list(schema[keyword])))
    if not pieces:
        return Node(EMPTY, schema)
    if len(pieces) == 1:
        return pieces[0]
    return Node(ALL_OF, schema, subs=list(pieces), synthetic=True)


def _typed(schema: dict[str, Any], name: str) -> Node:
    return Node(_BY_TYPE.get(name, EMPTY), schema, integer=name == "integer")


def is_empty(classifier: Classifier, schema: Any) -> bool:
    """True for `true` and `{}`-like schemas, which accept every value."""
    return schema is not None and classifier.node(schema).kind == EMPTY
