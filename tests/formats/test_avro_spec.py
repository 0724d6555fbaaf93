"""The Avro specification check, the JSON depth limit, and the JSON Schema metaschema check."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats import avro_spec
from keyguard.formats.avro_schema import from_avro_schema, parse_avro
from keyguard.formats.avro_spec import valid_decimal, validate_avro
from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.json_schema import validate_json_schema
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.schemajson import MAX_SCHEMA_DEPTH, check_depth, loads_schema
from keyguard.formats.types import AvroOnlyType, BytesType, DecimalType, RowType, StringType


def _rec(*fields: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": "r", **extra, "fields": list(fields)}


VALID = [
    "string",
    "null",
    ["null", "string"],
    _rec(),
    _rec({"name": "a", "type": "int", "default": 1, "order": "descending", "aliases": ["b"]}),
    _rec({"name": "a", "type": {"type": "int"}}),
    _rec({"name": "a", "type": {"type": {"type": "long"}}}),
    _rec({"name": "next", "type": ["null", "r"], "default": None}),
    _rec({"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"],
                                "default": "A"}, "default": "B"}),
    _rec({"name": "f", "type": {"type": "fixed", "name": "F", "size": 0}}),
    _rec({"name": "f", "type": {"type": "fixed", "name": "F", "size": 2},
          "default": "\u00ff\u0000"}),
    _rec({"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["A"]}},
         {"name": "b", "type": "E"}, {"name": "c", "type": {"type": "E"}}),
    _rec({"name": "a", "type": {"type": "record", "name": "N", "namespace": "x.y",
                                "fields": []}},
         {"name": "b", "type": "x.y.N"}),
    {**_rec({"name": "a", "type": {"type": "record", "name": "N", "fields": []}},
            {"name": "b", "type": "com.acme.N"}), "namespace": "com.acme"},
    {**_rec(), "name": "com.acme.r", "namespace": "ignored.when.name.is.full"},
    {**_rec(), "namespace": ""},
    _rec({"name": "u", "type": ["null", {"type": "record", "name": "P", "fields": []},
                                {"type": "enum", "name": "S", "symbols": ["A"]},
                                {"type": "array", "items": "P"}, {"type": "map", "values": "S"}],
          "default": None}),
    _rec({"name": "d", "type": "double", "default": "NaN"}),
    _rec({"name": "d", "type": "float", "default": 1}),
    _rec({"name": "l", "type": "long", "default": -(2**63)}),
    _rec({"name": "m", "type": {"type": "map", "values": "int"}, "default": {"a": 1}}),
    _rec({"name": "n", "type": {"type": "record", "name": "N", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0}]},
        "default": {"a": 1}}),
    # Invalid logical types are ignored, not errors (the specification).
    {"type": "string", "logicalType": "decimal", "precision": 4},
    {"type": "bytes", "logicalType": "decimal"},
    {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3},
    {"type": "string", "logicalType": "date"},
    {"type": "long", "logicalType": "no-such-type"},
    {"type": "error", "name": "Oops", "fields": []},
]


@pytest.mark.parametrize("schema", VALID, ids=lambda s: json.dumps(s)[:60])
def test_valid_schemas_pass(schema: Any) -> None:
    validate_avro(schema)


def test_invalid_decimals_are_their_underlying_type() -> None:
    assert not valid_decimal({"type": "bytes", "logicalType": "decimal"})
    assert not valid_decimal({"type": "bytes", "logicalType": "decimal", "precision": 2,
                              "scale": 3})
    assert not valid_decimal({"type": "fixed", "size": 2, "logicalType": "decimal",
                              "precision": 5})  # 2 bytes hold 4 digits
    assert valid_decimal({"type": "fixed", "size": 2, "logicalType": "decimal", "precision": 4})
    t = from_avro_schema(_rec({"name": "a", "type": {"type": "bytes", "logicalType": "decimal"}},
                              {"name": "b", "type": {"type": "bytes", "logicalType": "decimal",
                                                     "precision": 5, "scale": 2}}))
    assert isinstance(t, RowType)
    assert isinstance(t.fields[0].type, BytesType)
    assert t.fields[1].type == DecimalType(precision=5, scale=2, nullable=False)


@pytest.mark.parametrize(("schema", "where", "says"), [
    (_rec({"name": "a", "type": {"type": "enum", "name": "E", "symbols": []}}),
     "/fields/0/type/symbols", "no symbols"),
    (_rec({"name": "a", "type": "int"}, {"name": "a", "type": "long"}), "/fields/1/name",
     "two fields named 'a'"),
    (_rec({"name": "a", "type": ["null", "int"], "default": 0}), "/fields/0/default",
     "first branch"),
    ({"type": "record", "name": "r", "fields": [{"name": "a", "type": [
        {"type": "record", "name": "X", "fields": []}, "X"]}]}, "/fields/0/type/1",
     "two branches of type X"),
], ids=["enum", "duplicate-field", "union-default", "union-same-named"])
def test_errors_name_the_json_pointer(schema: Any, where: str, says: str) -> None:
    with pytest.raises(SchemaError) as err:
        validate_avro(schema)
    assert f"at {where}:" in err.value.message
    assert says in err.value.message


def test_validation_is_linear_in_the_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each field is visited a fixed number of times, whatever the width (no rescans)."""
    calls = {"n": 0}
    original = avro_spec._Validator.schema

    def counting(self: Any, s: Any, ns: Any, at: Any) -> Any:
        calls["n"] += 1
        return original(self, s, ns, at)

    monkeypatch.setattr(avro_spec._Validator, "schema", counting)
    per_width = {}
    for n in (100, 1000):
        calls["n"] = 0
        validate_avro(_rec(*({"name": f"f{i}", "type": ["null", "string"], "default": None}
                             for i in range(n))))
        per_width[n] = calls["n"]
    assert per_width[1000] == 10 * per_width[100] - 9


def test_row_type_names_and_fields_are_built_once() -> None:
    t = from_avro_schema(_rec(*({"name": f"f{i}", "type": "int"} for i in range(50))))
    assert isinstance(t, RowType)
    assert t.names is t.names
    assert t.field("f49") is t.fields[49]


# --- recursion and unions that have no row type ------------------------------------------

RECURSIVE = _rec({"name": "id", "type": "long"},
                 {"name": "next", "type": ["null", "r"], "default": None})


def test_recursive_schema_has_no_row_type_for_codecs() -> None:
    with pytest.raises(UnsupportedTypeError, match="refers back to the Avro record 'r'"):
        from_avro_schema(RECURSIVE)


def test_recursive_schema_for_the_guard() -> None:
    t = from_avro_schema(RECURSIVE, avro_only=True)
    assert isinstance(t, RowType)
    nxt = t.field("next").type
    assert isinstance(nxt, AvroOnlyType) and nxt.nullable and "r" in nxt.what


def test_union_of_several_types_for_the_guard() -> None:
    schema = _rec({"name": "u", "type": ["null", "int", "string"], "default": None})
    with pytest.raises(SchemaError, match="has no column type"):
        from_avro_schema(schema)
    t = from_avro_schema(schema, avro_only=True)
    assert isinstance(t, RowType) and isinstance(t.fields[0].type, AvroOnlyType)


def test_enum_is_a_string_column() -> None:
    t = from_avro_schema(_rec({"name": "e", "type": {"type": "enum", "name": "E",
                                                     "symbols": ["A"]}}))
    assert isinstance(t, RowType) and isinstance(t.fields[0].type, StringType)


# --- depth --------------------------------------------------------------------------------


def _deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_SCHEMA_DEPTH + 1, 5_000, 100_000])
def test_nesting_beyond_the_limit_is_a_schema_error(depth: int) -> None:
    with pytest.raises(SchemaError, match=f"more than {MAX_SCHEMA_DEPTH} levels"):
        loads_schema(_deep_text(depth), "deep.json")


def test_nesting_at_the_limit_loads() -> None:
    assert loads_schema(_deep_text(MAX_SCHEMA_DEPTH), "ok.json") is not None


def test_depth_error_points_into_the_data() -> None:
    data: Any = "x"
    for _ in range(MAX_SCHEMA_DEPTH + 5):
        data = {"a": [data]}
    with pytest.raises(SchemaError) as err:
        check_depth({"ok": 1, "deep": data}, "f.json")
    assert " at /deep/a/0/a/0" in err.value.message


def test_parse_avro_rejects_deep_data_without_recursion() -> None:
    data: Any = "long"
    for _ in range(10_000):
        data = {"type": "array", "items": data}
    with pytest.raises(SchemaError, match="nested more than"):
        parse_avro(data)


# --- JSON Schema metaschema ------------------------------------------------------------------


@pytest.mark.parametrize("schema", [
    True,
    {},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "maximum": 3,
     "exclusiveMaximum": True},
    {"$schema": "http://json-schema.org/draft-06/schema#", "type": "integer",
     "exclusiveMaximum": 3},
    {"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "object"},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
     "prefixItems": [{"type": "string"}]},
    {"$schema": "https://json-schema.org/draft-07/schema#", "type": "object"},
    {"$schema": "http://json-schema.org/draft-07/schema", "type": "object"},
], ids=["true", "empty", "draft04-boolean-exclusive", "draft06", "2019-09", "2020-12",
        "draft07-https", "draft07-no-fragment"])
def test_valid_json_schemas(schema: Any) -> None:
    validate_json_schema(schema)


@pytest.mark.parametrize(("schema", "says"), [
    ({"type": "object", "properties": 5}, "at /properties: 5 is not of type 'object'"),
    ({"type": "integer", "maximum": 3, "exclusiveMaximum": True}, "at /exclusiveMaximum"),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer",
      "exclusiveMaximum": 3}, "at /exclusiveMaximum"),
    ({"$schema": "urn:nope"}, "not a JSON Schema draft"),
    ([], "expected an object or a boolean, got an array"),
    (5, "got the number 5"),
    (None, "got null"),
], ids=["properties-5", "draft07-boolean", "draft04-number", "unknown-draft", "array", "number",
        "null"])
def test_invalid_json_schemas(schema: Any, says: str) -> None:
    with pytest.raises(SchemaError, match="invalid JSON Schema") as err:
        validate_json_schema(schema)
    assert says in err.value.message


def test_schema_text_is_validated_when_made() -> None:
    with pytest.raises(SchemaError, match=r"^subject-x v3: invalid Avro schema at /name"):
        SchemaText("AVRO", json.dumps({**_rec(), "name": "1bad"}), "subject-x v3")
    with pytest.raises(SchemaError, match=r"^f.json: invalid JSON Schema at /properties"):
        SchemaText("JSON", '{"type": "object", "properties": 5}', "f.json")
    with pytest.raises(SchemaError, match="empty"):
        SchemaText("JSON", "  \n", "f.json")
    assert SchemaText("PROTOBUF", "syntax = 'proto3';", "p").text  # kept, not validated


# --- fuzz: any JSON is a schema or a SchemaError, never another exception ---------------------

_WORDS = st.sampled_from(["type", "name", "record", "enum", "fixed", "array", "map", "items",
                          "values", "fields", "symbols", "size", "default", "namespace",
                          "aliases", "order", "logicalType", "decimal", "precision", "scale",
                          "int", "long", "string", "null", "r", "E", "a", "1bad", "a.b"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 40) | st.floats(allow_nan=False) | _WORDS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_WORDS, inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(_JSON)
def test_any_json_is_a_valid_avro_schema_or_a_schema_error(data: Any) -> None:
    try:
        parsed = parse_avro(data)
    except SchemaError:
        return
    try:
        from_avro_schema(parsed, avro_only=True, validated=True)
    except SchemaError:
        pass


@settings(max_examples=200, deadline=None)
@given(_JSON)
def test_any_json_is_a_valid_json_schema_or_a_schema_error(data: Any) -> None:
    try:
        validate_json_schema(data)
    except SchemaError:
        pass
