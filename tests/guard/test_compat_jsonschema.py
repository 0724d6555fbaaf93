"""JSON Schema reader/writer rules with their locations (reader = new schema under BACKWARD)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats.errors import SchemaError
from keyguard.guard.compat import check_compatibility, check_reader_writer


def obj(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **extra}


def tree(value_type: str) -> dict[str, Any]:
    """A recursive schema: each node holds children of its own shape."""
    return obj({"v": {"type": value_type}, "children": {"type": "array", "items": {"$ref": "#"}}})


INT = {"type": "integer"}
STR = {"type": "string"}


def found(reader: Any, writer: Any) -> list[tuple[str, str]]:
    return [(i.kind, i.path) for i in check_reader_writer("JSON", reader, writer)]


COMPATIBLE = {
    "integer widened to number": ({"type": "number"}, INT),
    "property added to a closed model": (
        obj({"a": INT, "b": STR}, additionalProperties=False),
        obj({"a": INT}, additionalProperties=False),
    ),
    "property removed from an open model": (obj({"a": INT}), obj({"a": INT, "b": STR})),
    "property with false removed": (
        obj({"a": INT}, additionalProperties=False),
        obj({"a": INT, "b": False}, additionalProperties=False),
    ),
    "maxLength raised, minLength lowered": (
        {"type": "string", "maxLength": 10, "minLength": 1},
        {"type": "string", "maxLength": 5, "minLength": 2},
    ),
    "bounds removed": ({"type": "number"}, {"type": "number", "minimum": 0, "maximum": 9}),
    "multipleOf divides the old one": (
        {"type": "integer", "multipleOf": 2},
        {"type": "integer", "multipleOf": 4},
    ),
    "enum extended": ({"enum": ["A", "B"]}, {"enum": ["A"]}),
    "anyOf extended": ({"anyOf": [STR, INT]}, {"anyOf": [STR]}),
    "oneOf reordered": ({"oneOf": [INT, STR]}, {"oneOf": [STR, INT]}),
    "single-schema oneOf is its schema": ({"oneOf": [{"type": "number"}]}, INT),
    "type list extended": ({"type": ["string", "integer"]}, {"type": ["string"]}),
    "required property with default added to a closed model": (
        obj(
            {"a": INT, "b": {"type": "integer", "default": 0}},
            required=["b"],
            additionalProperties=False,
        ),
        obj({"a": INT}, additionalProperties=False),
    ),
    "required dropped": (obj({"a": INT}), obj({"a": INT}, required=["a"])),
    "false stays false": (False, False),
    "false to true": (True, False),
    "true reads objects": (True, obj({"a": INT})),
    "$ref resolved": (
        {"definitions": {"A": {"type": "number"}}, **obj({"a": {"$ref": "#/definitions/A"}})},
        {"definitions": {"A": INT}, **obj({"a": {"$ref": "#/definitions/A"}})},
    ),
    "recursive $ref": (tree("number"), tree("integer")),
    "schema given as text": ('{"type": "number"}', '{"type": "integer"}'),
}


@pytest.mark.parametrize(("reader", "writer"), COMPATIBLE.values(), ids=COMPATIBLE.keys())
def test_compatible(reader: Any, writer: Any) -> None:
    assert found(reader, writer) == []


INCOMPATIBLE = {
    "type changed": (STR, INT, [("TYPE_CHANGED", "/")]),
    "number narrowed to integer": (
        {"type": "integer"},
        {"type": "number"},
        [("TYPE_NARROWED", "/")],
    ),
    "property type changed": (
        obj({"a": STR}),
        obj({"a": INT}),
        [("TYPE_CHANGED", "/properties/a")],
    ),
    "property added to an open model": (
        obj({"a": INT, "b": STR}),
        obj({"a": INT}),
        [("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "/properties/b")],
    ),
    "property removed from a closed model": (
        obj({"a": INT}, additionalProperties=False),
        obj({"a": INT, "b": STR}, additionalProperties=False),
        [("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "/properties/b")],
    ),
    "removed property not covered by patternProperties": (
        {"type": "object", "patternProperties": {"^x_": STR}, "additionalProperties": False},
        obj({"x_a": INT}, additionalProperties=False),
        [
            ("TYPE_CHANGED", "/properties/x_a"),
            ("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "/properties/x_a"),
        ],
    ),
    "added property not covered by additionalProperties": (
        obj({"a": STR}, additionalProperties=INT),
        {"type": "object", "additionalProperties": INT},
        # Confluent reports the nested difference, then the kind (ObjectSchemaDiff
        # compareProperties; diff-schema-examples "partially open content model 3").
        [
            ("TYPE_CHANGED", "/properties/a"),
            ("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "/properties/a"),
        ],
    ),
    "required property added to a closed model": (
        obj({"a": INT, "b": INT}, required=["b"], additionalProperties=False),
        obj({"a": INT}, additionalProperties=False),
        [("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "/properties/b")],
    ),
    "existing property made required": (
        obj({"a": INT}, required=["a"]),
        obj({"a": INT}),
        # ObjectSchemaDiff.compareRequired reports it under #/required/<name>.
        [("REQUIRED_ATTRIBUTE_ADDED", "/required/a")],
    ),
    "additionalProperties introduced": (
        obj({"a": INT}, additionalProperties=False),
        obj({"a": INT}),
        # Absent -> false changes permitsAdditionalProperties: ADDITIONAL_PROPERTIES_REMOVED
        # (ObjectSchemaDiff.compareAdditionalProperties); NARROWED is absent -> a schema.
        [("ADDITIONAL_PROPERTIES_REMOVED", "/additionalProperties")],
    ),
    "string constraints tightened": (
        obj({"s": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^a"}}),
        obj({"s": {"type": "string", "maxLength": 10}}),
        [
            ("MAX_LENGTH_DECREASED", "/properties/s/maxLength"),
            ("MIN_LENGTH_ADDED", "/properties/s/minLength"),
            ("PATTERN_ADDED", "/properties/s/pattern"),
        ],
    ),
    "number constraints tightened": (
        {"type": "number", "minimum": 0, "maximum": 10, "exclusiveMaximum": 9, "multipleOf": 2},
        {"type": "number", "minimum": -1, "maximum": 20, "multipleOf": 3},
        [
            ("MAXIMUM_DECREASED", "/maximum"),
            ("MINIMUM_INCREASED", "/minimum"),
            ("EXCLUSIVE_MAXIMUM_ADDED", "/exclusiveMaximum"),
            ("MULTIPLE_OF_CHANGED", "/multipleOf"),
        ],
    ),
    "enum narrowed": ({"enum": ["A"]}, {"enum": ["A", "B"]}, [("ENUM_ARRAY_NARROWED", "/enum")]),
    "array items narrowed and constrained": (
        {"type": "array", "items": INT, "maxItems": 3, "uniqueItems": True},
        {"type": "array", "items": {"type": "number"}},
        [
            ("TYPE_NARROWED", "/items"),
            ("MAX_ITEMS_ADDED", "/maxItems"),
            ("UNIQUE_ITEMS_ADDED", "/uniqueItems"),
        ],
    ),
    "array became a tuple": (
        {"type": "array", "items": [INT]},
        {"type": "array", "items": INT},
        # ArraySchemaDiff: the all-items schema removed is compatible, the tuple item added to
        # the old (open) content model is not.
        [("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", "/items/0")],
    ),
    "tuple item changed": (
        {"type": "array", "items": [INT, STR]},
        {"type": "array", "items": [INT, INT]},
        [("TYPE_CHANGED", "/items/1")],
    ),
    "tuple closed": (
        {"type": "array", "items": [INT], "additionalItems": False},
        {"type": "array", "items": [INT, STR]},
        [
            ("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", "/items/1"),
            ("ADDITIONAL_ITEMS_REMOVED", "/additionalItems"),
        ],
    ),
    "anyOf narrowed": ({"anyOf": [STR]}, {"anyOf": [STR, INT]}, [("SUM_TYPE_NARROWED", "/anyOf")]),
    "oneOf branch replaced": (
        {"oneOf": [STR, {"type": "boolean"}]},
        {"oneOf": [STR, INT]},
        [("COMBINED_TYPE_SUBSCHEMAS_CHANGED", "/oneOf")],
    ),
    # Confluent collapses duplicate subschemas ({"allOf": [STR, STR]} is {"allOf": [STR]}),
    # so the allOf must grow by a distinct schema.
    "allOf grew": (
        {"allOf": [STR, {"maxLength": 3}]},
        {"allOf": [STR]},
        [("PRODUCT_TYPE_EXTENDED", "/allOf")],
    ),
    "oneOf changed to allOf": (
        {"allOf": [STR, INT]},
        {"oneOf": [STR, INT]},
        [("COMBINED_TYPE_CHANGED", "/allOf")],
    ),
    # NotSchemaDiff compares the negated schemas reversed and reports NOT_TYPE_EXTENDED.
    "not widened": ({"not": STR}, {"not": INT}, [("NOT_TYPE_EXTENDED", "/not")]),
    "true to false (Confluent)": (False, True, [("TYPE_CHANGED", "/")]),
    "dependency added": (
        obj({"a": INT}, dependencies={"a": ["b"]}),
        obj({"a": INT}),
        [("DEPENDENCY_ARRAY_ADDED", "/dependencies/a")],
    ),
    "$ref target narrowed": (
        {"definitions": {"A": INT}, **obj({"a": {"$ref": "#/definitions/A"}})},
        {"definitions": {"A": {"type": "number"}}, **obj({"a": {"$ref": "#/definitions/A"}})},
        [("TYPE_NARROWED", "/properties/a")],
    ),
    "recursive $ref narrowed, reported once": (
        tree("integer"),
        tree("number"),
        [("TYPE_NARROWED", "/properties/v")],
    ),
}


@pytest.mark.parametrize(
    ("reader", "writer", "expected"), INCOMPATIBLE.values(), ids=INCOMPATIBLE.keys()
)
def test_incompatible_with_locations(
    reader: Any, writer: Any, expected: list[tuple[str, str]]
) -> None:
    assert found(reader, writer) == expected


def test_fragments_show_both_sides() -> None:
    [issue] = check_reader_writer("JSON", obj({"a": STR}), obj({"a": INT}))
    assert (issue.reader_fragment, issue.writer_fragment) == (STR, INT)
    assert "string" in issue.message and "integer" in issue.message


@pytest.mark.parametrize(
    "bad",
    ["{not json", {"type": "strnig"}, 3, {"$ref": "http://example.com/elsewhere.json"}],
    ids=["not json", "unknown type", "not a schema", "remote $ref"],
)
def test_invalid_schema_is_a_schema_error(bad: Any) -> None:
    with pytest.raises(SchemaError, match="invalid JSON Schema"):
        check_compatibility("JSON", [{"type": "object"}], bad, "BACKWARD")


# Levels with JSON Schema: BACKWARD = the new schema accepts every old value.
V1 = obj({"a": INT, "b": STR}, additionalProperties=False)
V2 = obj({"a": INT, "b": STR, "c": INT}, additionalProperties=False)
NEW = obj({"a": INT, "c": INT}, additionalProperties=False)


def located(result: Any) -> list[tuple[str | None, int | None, str, str]]:
    return [(i.direction, i.version, i.kind, i.path) for i in result.incompatibilities]


def test_backward_and_forward_directions() -> None:
    old, new = obj({"n": INT}), obj({"n": {"type": "number"}})
    assert check_compatibility("JSON", [old], new, "BACKWARD").compatible
    result = check_compatibility("JSON", [old], new, "FORWARD")
    assert located(result) == [("FORWARD", 1, "TYPE_NARROWED", "/properties/n")]
    assert located(check_compatibility("JSON", [old], new, "FULL")) == located(result)


def test_transitive_levels_check_every_version() -> None:
    # Dropping b from a closed model rejects values of v1 and v2 alike.
    result = check_compatibility("JSON", [V1, V2], NEW, "BACKWARD_TRANSITIVE")
    assert result.checked_against == [1, 2]
    assert located(result) == [
        ("BACKWARD", 1, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "/properties/b"),
        ("BACKWARD", 2, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "/properties/b"),
    ]
    # Old readers: v1 is closed and never heard of c, v2 reads NEW's values fine.
    forward = check_compatibility("JSON", [V1, V2], NEW, "FORWARD_TRANSITIVE")
    assert located(forward) == [
        ("FORWARD", 1, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "/properties/c")
    ]
    assert check_compatibility("JSON", [V1, V2], NEW, "FORWARD").compatible
    full = check_compatibility("JSON", [V1, V2], NEW, "FULL_TRANSITIVE")
    assert len(full.incompatibilities) == 3


# One case per class of disagreement with Confluent, old -> new, BACKWARD.
NUM = {"type": "number"}
D2020 = "https://json-schema.org/draft/2020-12/schema"
BUNDLE_OLD = {"$schema": D2020, "type": "object",
              "properties": {"home": {"$ref": "https://example.com/address"}},
              "$defs": {"address": {"$id": "https://example.com/address", "type": "object",
                                    "properties": {"zip": INT}}}}
BUNDLE_NEW = {**BUNDLE_OLD, "$defs": {"address": {"$id": "https://example.com/address",
              "type": "object", "properties": {"zip": STR}}}}
ISSUE_9: dict[str, tuple[Any, Any, bool]] = {
    "closed tuple gains an item": (
        {"type": "array", "items": [STR], "additionalItems": False},
        {"type": "array", "items": [STR, NUM], "additionalItems": False}, True),
    "prefixItems item type changed": (
        {"$schema": D2020, "type": "array", "prefixItems": [STR]},
        {"$schema": D2020, "type": "array", "prefixItems": [NUM]}, False),
    "2020-12 items after prefixItems closed": (
        {"$schema": D2020, "type": "array", "prefixItems": [STR]},
        {"$schema": D2020, "type": "array", "prefixItems": [STR], "items": False}, False),
    "2020-12 closed prefixItems gains an item": (
        {"$schema": D2020, "type": "array", "prefixItems": [STR], "items": False},
        {"$schema": D2020, "type": "array", "prefixItems": [STR, NUM], "items": False}, True),
    "singleton oneOf to singleton allOf": (
        {"oneOf": [INT]}, {"allOf": [NUM]}, True),
    "additionalProperties schema to false": (
        {"type": "object", "additionalProperties": STR},
        {"type": "object", "additionalProperties": False}, False),
    "unevaluatedProperties closed": (
        {"$schema": D2020, "type": "object", "properties": {"a": STR}},
        {"$schema": D2020, "type": "object", "properties": {"a": STR},
         "unevaluatedProperties": False}, False),
    "enum changed next to type": (
        {"type": "integer", "enum": [4, 1, 3]}, {"type": "integer", "enum": [1, 2, 4]}, False),
    "const changed": ({"const": 1}, {"const": 2}, False),
    "const to one-value enum": ({"const": 1}, {"enum": [1]}, False),
    "string to true": (STR, True, True),
    "minLength 0 is no constraint": (STR, {"type": "string", "minLength": 0}, True),
    "exclusiveMinimum to minimum": ({"exclusiveMinimum": 10}, {"minimum": 10}, True),
    "minimum to exclusiveMinimum": ({"minimum": 10}, {"exclusiveMinimum": 10}, False),
    "not is contravariant": ({"not": NUM}, {"not": INT}, True),
    "items removed": ({"type": "array", "items": STR}, {"type": "array"}, True),
    "$ref with a narrowing sibling": (
        {"$schema": D2020, "$defs": {"s": STR}, "$ref": "#/$defs/s"},
        {"$schema": D2020, "$defs": {"s": STR}, "$ref": "#/$defs/s", "maxLength": 3}, False),
    "constraint under a type list narrowed": (
        {"type": ["string", "integer"], "maxLength": 5},
        {"type": ["string", "integer"], "maxLength": 3}, False),
    "narrowing inside a oneOf branch": (
        {"oneOf": [{"type": "string", "maxLength": 10}, INT]},
        {"oneOf": [{"type": "string", "maxLength": 5}, INT]}, False),
    "bundled $id resource resolved and compared": (BUNDLE_OLD, BUNDLE_NEW, False),
    "bundled $id resource unchanged": (BUNDLE_OLD, BUNDLE_OLD, True),
}


@pytest.mark.parametrize(("old", "new", "compatible"), ISSUE_9.values(), ids=ISSUE_9.keys())
def test_issue_9_classes_as_confluent_decides(old: Any, new: Any, compatible: bool) -> None:
    result = check_compatibility("JSON", [old], new, "BACKWARD")
    assert result.compatible is compatible, [str(i) for i in result.incompatibilities]
    assert all(i.kind.isupper() and i.message for i in result.incompatibilities)


def test_bundled_resource_narrowing_is_located_inside_it() -> None:
    result = check_compatibility("JSON", [BUNDLE_OLD], BUNDLE_NEW, "BACKWARD")
    assert located(result) == [("BACKWARD", 1, "TYPE_CHANGED", "/properties/home/properties/zip")]


def test_missing_bundled_resource_is_a_schema_error() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.com/missing"}}}
    with pytest.raises(SchemaError, match="cannot resolve"):
        check_compatibility("JSON", [{"type": "object"}], schema, "BACKWARD")


def _bundled(zip_type: dict[str, Any], **root: Any) -> dict[str, Any]:
    """No $schema (draft 7): a resource bundled under `$defs`, named by its `$id`."""
    return {**root, "type": "object",
            "$defs": {"a": {"$id": root.pop("bundle_id", "https://example.com/a.json"),
                            "type": "object", "properties": {"zip": zip_type}}},
            "properties": {"home": {"$ref": "https://example.com/a.json"}}}


def test_a_resource_bundled_under_defs_resolves_without_schema() -> None:
    assert check_compatibility("JSON", [_bundled(INT)], _bundled(INT), "BACKWARD").compatible
    result = check_compatibility("JSON", [_bundled(INT)], _bundled(STR), "BACKWARD")
    assert located(result) == [("BACKWARD", 1, "TYPE_CHANGED", "/properties/home/properties/zip")]


def test_a_bundled_relative_id_resolves_against_the_root_id() -> None:
    old = _bundled(INT, bundle_id="a.json", **{"$id": "https://example.com/root.json"})
    new = _bundled(STR, bundle_id="a.json", **{"$id": "https://example.com/root.json"})
    result = check_compatibility("JSON", [old], new, "BACKWARD")
    assert located(result) == [("BACKWARD", 1, "TYPE_CHANGED", "/properties/home/properties/zip")]


def test_a_root_ref_to_a_bundled_resource_without_schema() -> None:
    schema = {"$defs": {"a": {"$id": "https://example.com/a.json", "type": "string"}},
              "$ref": "https://example.com/a.json"}
    assert check_compatibility("JSON", [STR], schema, "FULL").compatible
    assert not check_compatibility("JSON", [INT], schema, "BACKWARD").compatible


def test_an_id_inside_data_names_no_resource() -> None:
    schema = {"type": "object", "enum": [{"$id": "https://example.com/a.json"}],
              "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    with pytest.raises(SchemaError, match="cannot resolve"):
        check_compatibility("JSON", [{"type": "object"}], schema, "BACKWARD")


def test_a_draft_04_bound_without_schema_is_refused_as_confluent_refuses_it() -> None:
    """Confluent reads a schema without $schema as draft-07, whose exclusiveMaximum is a
    number: the schema is invalid there, and the error says how to declare draft-04."""
    bound = {"type": "number", "maximum": 10, "exclusiveMaximum": True}
    with pytest.raises(SchemaError, match="at /exclusiveMaximum") as err:
        check_compatibility("JSON", [{"type": "number", "maximum": 10}], bound, "BACKWARD")
    assert 'declare "$schema": "http://json-schema.org/draft-04/schema#"' in (err.value.hint
                                                                              or "")
    declared = {"$schema": "http://json-schema.org/draft-04/schema#", **bound}
    result = check_compatibility("JSON", [{"type": "number", "maximum": 10}], declared,
                                 "BACKWARD")
    assert not result.compatible  # judged: 10 itself is no longer accepted


def test_unevaluated_properties_named_in_the_finding() -> None:
    old, new = ISSUE_9["unevaluatedProperties closed"][:2]
    result = check_compatibility("JSON", [old], new, "BACKWARD")
    assert located(result) == [
        ("BACKWARD", 1, "ADDITIONAL_PROPERTIES_REMOVED", "/unevaluatedProperties")
    ]


def test_value_finding_names_confluents_kind() -> None:
    from keyguard.formats.registry import SchemaVersion
    from keyguard.formats.schemafile import SchemaText
    from keyguard.guard.values import check_value

    old = {"type": "object", "additionalProperties": STR}
    history = [SchemaVersion("t-value", 1, 7, json.dumps(old), "JSON")]
    new = SchemaText("JSON", json.dumps({"type": "object", "additionalProperties": False}), "c")
    (finding,) = check_value("t-value", new, history, "BACKWARD")
    assert finding.rule.id == "KG801"
    assert finding.message.startswith("ADDITIONAL_PROPERTIES_REMOVED: ")
    assert finding.path == "/additionalProperties"


# Recursive unions, after Confluent's SchemaDiffTest (testRecursiveOneOfUnionTerminates,
# testRecursiveOneOfUnionDetectsIncompatibleChange,
# testRecursiveOneOfMemoizationDoesNotMaskIncompatibility).
TRADE_TYPES = ["Asset", "Basket", "Swap", "Bond", "Option", "Future", "Forward", "Loan"]


def trade(first_id_type: str = "string") -> dict[str, Any]:
    def union() -> dict[str, Any]:
        return {"oneOf": [{"$ref": f"#/definitions/{t}"} for t in TRADE_TYPES]}

    definitions = {
        t: obj({"id": {"type": first_id_type if t == "Asset" else "string"},
                "underlying": union(), "referenceProduct": union()})
        for t in TRADE_TYPES
    }
    return {"definitions": definitions, **obj({"tradeId": STR, "product": union()})}


def mask(t0_id: str, t1_id: str) -> dict[str, Any]:
    def node(id_type: str, target: str) -> dict[str, Any]:
        return obj({"id": {"type": id_type},
                    "ref": {"oneOf": [{"$ref": f"#/definitions/{target}"}]}})

    return {
        "definitions": {"T0": node(t0_id, "T2"), "T1": node(t1_id, "T2"),
                        "T2": node("integer", "T0")},
        **obj({"root": {"oneOf": [{"$ref": "#/definitions/T0"}, {"$ref": "#/definitions/T1"}]}}),
    }


def test_recursive_union_is_judged() -> None:
    assert check_compatibility("JSON", [trade()], trade(), "BACKWARD").compatible
    changed = check_compatibility("JSON", [trade()], trade("number"), "BACKWARD")
    assert not changed.compatible
    assert {i.kind for i in changed.incompatibilities} == {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"}


def test_assumptions_in_a_recursive_union_do_not_mask_a_change() -> None:
    result = check_compatibility("JSON", [mask("integer", "boolean")], mask("boolean", "number"),
                                 "BACKWARD")
    assert not result.compatible


# Beyond Confluent (which compares none of these): only ever stricter than the registry.
BEYOND = {
    "patternProperties schema narrowed": (
        {"type": "object", "patternProperties": {"^S_": {"type": "number"}}},
        {"type": "object", "patternProperties": {"^S_": INT}},
        [("TYPE_NARROWED", "/patternProperties/^S_")],
    ),
    "patternProperties dropped from a closed model": (
        {"type": "object", "patternProperties": {"^S_": STR}, "additionalProperties": False},
        {"type": "object", "additionalProperties": False},
        [("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "/patternProperties/^S_")],
    ),
    "patternProperties added to an open model": (
        {"type": "object"},
        {"type": "object", "patternProperties": {"^S_": STR}},
        [("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "/patternProperties/^S_")],
    ),
    "propertyNames added to an open model": (
        {"type": "object"},
        {"type": "object", "propertyNames": {"maxLength": 3}},
        [("PROPERTY_NAMES_NARROWED", "/propertyNames")],
    ),
    "contains narrowed": (
        {"type": "array", "contains": {"type": "number"}},
        {"type": "array", "contains": INT},
        [("TYPE_NARROWED", "/contains"), ("CONTAINS_NARROWED", "/contains")],
    ),
}


@pytest.mark.parametrize(("old", "new", "expected"), BEYOND.values(), ids=BEYOND.keys())
def test_narrowing_confluent_does_not_compare(old: Any, new: Any, expected: Any) -> None:
    result = check_compatibility("JSON", [old], new, "BACKWARD")
    assert [(i.kind, i.path) for i in result.incompatibilities] == expected
    assert all("Confluent does not compare" in i.message for i in result.incompatibilities
               if i.kind not in ("TYPE_CHANGED", "TYPE_NARROWED"))
    assert check_compatibility("JSON", [new], old, "BACKWARD").compatible


@pytest.mark.parametrize(
    "names",
    [{"pattern": "a*"}, {"type": "string", "maxLength": 5}, True],
    ids=["pattern matching every name", "long enough for the closed model's names", "true"],
)
def test_property_names_that_admit_every_old_name(names: Any) -> None:
    old = obj({"b": INT}, additionalProperties=False)
    new = {"type": "object", "propertyNames": names}
    assert check_compatibility("JSON", [old], new, "BACKWARD").compatible


def conditional(then: Any, condition: Any = ("lower",)) -> dict[str, Any]:
    return {"type": "object", "properties": {"case": {"enum": ["lower", "upper"]}, "data": STR},
            "if": {"properties": {"case": {"enum": list(condition)}}},
            "then": {"properties": {"data": then}}}


def test_conditional_branches_are_compared() -> None:
    old = conditional({"pattern": "^[a-z]*$"})
    widened, narrowed = conditional(STR), conditional({"pattern": "^[a-z]*$", "maxLength": 3})
    assert check_compatibility("JSON", [old], widened, "BACKWARD").compatible
    # The object and its conditional are one synthetic allOf, as in Confluent: the piece that
    # changed is located, then the allOf is reported.
    assert located(check_compatibility("JSON", [old], narrowed, "BACKWARD")) == [
        ("BACKWARD", 1, "MAX_LENGTH_ADDED", "/then/properties/data/maxLength"),
        ("BACKWARD", 1, "COMBINED_TYPE_SUBSCHEMAS_CHANGED", "/"),
    ]
    moved = check_compatibility("JSON", [old], conditional(STR, ("upper",)), "BACKWARD")
    assert located(moved)[0] == ("BACKWARD", 1, "CONDITIONAL_CHANGED", "/if")


@pytest.mark.parametrize(
    ("draft", "compatible"),
    [("http://json-schema.org/draft-07/schema#", True),
     ("https://json-schema.org/draft/2020-12/schema", False)],
    ids=["draft 7 ignores $ref siblings", "2020-12 applies them"],
)
def test_ref_siblings_follow_the_draft(draft: str, compatible: bool) -> None:
    old = {"$schema": draft, "definitions": {"s": STR}, **obj({"a": {"$ref": "#/definitions/s"}})}
    new = {**old, **obj({"a": {"$ref": "#/definitions/s", "maxLength": 3}})}
    assert check_compatibility("JSON", [old], new, "BACKWARD").compatible is compatible


@pytest.mark.parametrize(
    ("old", "new"),
    [({}, {"properties": {}}), ({"const": 1}, {"enum": [1]})],
    ids=["SchemaDiffTest.testSchemaAddsProperties", "const to one-value enum"],
)
def test_kind_changes_follow_confluent_and_say_so(old: Any, new: Any) -> None:
    [issue] = check_compatibility("JSON", [old], new, "BACKWARD").incompatibilities
    assert issue.kind == "TYPE_CHANGED"
    assert "Confluent compares the kind of each schema" in issue.message


@pytest.mark.parametrize(
    ("old", "new", "kinds"),
    [
        # SchemaDiffTest.testMultipleOfWithFractionalValueDoesNotThrow
        ('{"type":"number","multipleOf":0.5}', '{"type":"number","multipleOf":10}',
         ["MULTIPLE_OF_EXPANDED"]),
        # SchemaDiffTest.testMultipleOfWithEqualValueDifferentScaleIsNotAChange
        ('{"type":"number","multipleOf":0.5}', '{"type":"number","multipleOf":0.50}', []),
        ('{"type":"number","multipleOf":1e400}', '{"type":"number","multipleOf":2}',
         ["MULTIPLE_OF_CHANGED"]),
    ],
    ids=["fractional", "same value other scale", "not finite"],
)
def test_multiple_of_compares_exactly(old: str, new: str, kinds: list[str]) -> None:
    result = check_compatibility("JSON", [old], new, "BACKWARD")
    assert [i.kind for i in result.incompatibilities] == kinds


# Properties over generated schemas: a verdict or a SchemaError, never a crash; every valid
# schema reads itself; `true` reads everything and everything reads a `false` writer.
_LEAVES = st.sampled_from([True, False, {}, STR, INT, {"type": "number"}, {"type": "null"},
                           {"enum": [1, "a", None]}, {"const": {"k": [1]}},
                           {"type": ["string", "integer"]}])
_KEYWORDS = {
    "minLength": st.integers(0, 5), "maxLength": st.integers(0, 9),
    "pattern": st.sampled_from(["^a", "b+", "a*"]),
    "minimum": st.sampled_from([0, 1.5, -3]), "exclusiveMaximum": st.sampled_from([9, 3.5]),
    "multipleOf": st.sampled_from([1, 2, 0.5, 3]),
    "required": st.lists(st.sampled_from(["a", "b"]), unique=True),
    "uniqueItems": st.booleans(), "minItems": st.integers(0, 3),
}


def _schemas() -> st.SearchStrategy[Any]:
    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        keyed = st.fixed_dictionaries({}, optional={
            **_KEYWORDS,
            "type": st.sampled_from(["object", "array", "string", "number", "integer"]),
            "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), children,
                                          max_size=3),
            "additionalProperties": st.one_of(st.booleans(), children),
            "patternProperties": st.dictionaries(st.sampled_from(["^a", "b"]), children,
                                                 max_size=2),
            "items": st.one_of(children, st.lists(children, max_size=3)),
            "additionalItems": st.one_of(st.booleans(), children),
            "contains": children, "not": children,
            "allOf": st.lists(children, min_size=1, max_size=3),
            "anyOf": st.lists(children, min_size=1, max_size=3),
            "oneOf": st.lists(children, min_size=1, max_size=3),
            "if": children, "then": children, "else": children,
            "dependencies": st.dictionaries(st.sampled_from(["a", "b"]),
                                            st.one_of(children, st.just(["b"])), max_size=2),
        })
        return keyed

    return st.recursive(_LEAVES, extend, max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_schemas(), _schemas())
def test_generated_schemas_get_a_verdict_and_read_themselves(old: Any, new: Any) -> None:
    try:
        check_compatibility("JSON", [old], new, "FULL")
        assert check_compatibility("JSON", [new], new, "FULL").compatible
    except SchemaError:
        return
    assert check_compatibility("JSON", [new], True, "BACKWARD").compatible
    assert check_compatibility("JSON", [False], new, "BACKWARD").compatible


def test_a_schema_reads_itself_even_where_the_walk_would_not() -> None:
    """Found by the generated-schemas test: duplicate-like oneOf branches made the walk call a
    schema incompatible with itself. The same document is one schema; JSON types stay apart."""
    schema = {"minLength": 0, "allOf": [True], "minimum": 0,
              "oneOf": [True, {"enum": [1, "a", None]}]}
    assert check_compatibility("JSON", [schema], json.loads(json.dumps(schema)), "FULL").compatible
    assert not check_compatibility("JSON", [{"const": 1}], {"const": True}, "FULL").compatible
