"""Avro reader/writer rules with their locations, and the level semantics
(keyguard.guard.compat.levels)."""

from __future__ import annotations

from typing import Any

import pytest

from keyguard.formats.errors import InvalidOptionError, SchemaError
from keyguard.guard.compat import check_compatibility, check_reader_writer


def record(*fields: dict[str, Any], name: str = "R", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def field(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def enum(*symbols: str, name: str = "E", **extra: Any) -> dict[str, Any]:
    return {"type": "enum", "name": name, "symbols": list(symbols), **extra}


def node(value_type: str) -> dict[str, Any]:
    """A recursive linked list."""
    return record(
        field("value", value_type), field("next", ["null", "Node"], default=None), name="Node"
    )


def found(reader: Any, writer: Any) -> list[tuple[str, str]]:
    return [(i.kind, i.path) for i in check_reader_writer("AVRO", reader, writer)]


COMPATIBLE = {
    "same record": (record(field("a", "int")), record(field("a", "int"))),
    "int promoted to long": ("long", "int"),
    "int promoted to float": ("float", "int"),
    "long promoted to double": ("double", "long"),
    "float promoted to double": ("double", "float"),
    "string read as bytes": ("bytes", "string"),
    "bytes read as string": ("string", "bytes"),
    "field added with default": (
        record(field("a", "int"), field("b", "string", default="")),
        record(field("a", "int")),
    ),
    "field removed": (record(field("a", "int")), record(field("a", "int"), field("b", "int"))),
    "field renamed with alias": (
        record(field("b", "int", aliases=["a"])),
        record(field("a", "int")),
    ),
    "record renamed with alias": (
        record(name="New", namespace="ns", aliases=["Old"]),
        record(name="ns.Old"),
    ),
    "namespace ignored, as in Java": (record(name="a.R"), record(name="b.R")),
    "enum symbol added": (enum("A", "B"), enum("A")),
    "enum default covers removed symbol": (enum("A", "U", default="U"), enum("A", "B")),
    "union branch added": (["null", "int", "string"], ["null", "int"]),
    "writer branch promoted into reader union": (["null", "long"], "int"),
    "logical type ignored": ({"type": "long", "logicalType": "timestamp-millis"}, "int"),
    "recursive type": (node("long"), node("int")),
    "nullable field widened": (
        record(field("a", ["null", "int"], default=None)),
        record(field("a", "int")),
    ),
}


@pytest.mark.parametrize(("reader", "writer"), COMPATIBLE.values(), ids=COMPATIBLE.keys())
def test_compatible(reader: Any, writer: Any) -> None:
    assert found(reader, writer) == []


INCOMPATIBLE = {
    "type changed": ("string", "int", [("TYPE_MISMATCH", "/")]),
    "long narrowed to int": ("int", "long", [("TYPE_MISMATCH", "/")]),
    "field type changed": (
        record(field("a", "int"), field("b", "string")),
        record(field("a", "int"), field("b", "int")),
        [("TYPE_MISMATCH", "/fields/1/type")],
    ),
    "field added without default": (
        record(field("a", "int"), field("b", "int")),
        record(field("a", "int")),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")],
    ),
    "enum symbols removed": (
        record(field("e", enum("A"))),
        record(field("e", enum("A", "B", "C"))),
        [("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols")],
    ),
    "enum renamed": (enum("A", name="F"), enum("A"), [("NAME_MISMATCH", "/name")]),
    "record renamed": (record(name="S"), record(name="R"), [("NAME_MISMATCH", "/name")]),
    "fixed resized and renamed": (
        {"type": "fixed", "name": "F", "size": 4},
        {"type": "fixed", "name": "G", "size": 8},
        [("NAME_MISMATCH", "/name"), ("FIXED_SIZE_MISMATCH", "/size")],
    ),
    "array items narrowed": (
        {"type": "array", "items": "int"},
        {"type": "array", "items": "long"},
        [("TYPE_MISMATCH", "/items")],
    ),
    "map values narrowed": (
        {"type": "map", "values": "int"},
        {"type": "map", "values": "long"},
        [("TYPE_MISMATCH", "/values")],
    ),
    "reader union lacks a writer branch": (
        ["null", "int"],
        ["null", "string", "int"],
        [("MISSING_UNION_BRANCH", "/1")],
    ),
    "reader union lacks the writer type": (
        ["null", "string"],
        "int",
        [("MISSING_UNION_BRANCH", "/")],
    ),
    "writer union branch unreadable": ("int", ["int", "string"], [("TYPE_MISMATCH", "/1")]),
    "nested record field in union": (
        record(field("p", ["null", record(field("x", "int"), name="P")], default=None)),
        record(field("p", ["null", record(field("x", "long"), name="P")], default=None)),
        [("MISSING_UNION_BRANCH", "/fields/0/type/1")],
    ),
    "recursive type narrowed, reported once": (
        node("string"),
        node("int"),
        [("TYPE_MISMATCH", "/fields/0/type")],
    ),
    "enum default field against a record, as in Java": (
        record(field("e", enum("A", default="A"))),
        record(),
        [("TYPE_MISMATCH", "/fields/0/type")],
    ),
}


@pytest.mark.parametrize(
    ("reader", "writer", "expected"), INCOMPATIBLE.values(), ids=INCOMPATIBLE.keys()
)
def test_incompatible_with_locations(
    reader: Any, writer: Any, expected: list[tuple[str, str]]
) -> None:
    assert found(reader, writer) == expected


def test_every_incompatibility_is_reported_with_fragments() -> None:
    reader = record(field("a", "string"), field("b", "int"), field("c", enum("X")))
    writer = record(field("a", "int"), field("c", enum("X", "Y")))
    issues = check_reader_writer("AVRO", reader, writer)
    assert [(i.kind, i.path) for i in issues] == [
        ("TYPE_MISMATCH", "/fields/0/type"),
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1"),
        ("MISSING_ENUM_SYMBOLS", "/fields/2/type/symbols"),
    ]
    assert (issues[0].reader_fragment, issues[0].writer_fragment) == ("string", "int")
    assert issues[2].message == "[Y]"
    assert issues[2].writer_fragment == {"type": "enum", "name": "E"}


def test_schema_text_and_bare_names_are_accepted() -> None:
    assert check_reader_writer("AVRO", '"long"', "int") == []
    assert check_reader_writer("AVRO", '{"type": "array", "items": "long"}', b'"null"') != []
    assert check_reader_writer("AVRO", "null", "null") == []


@pytest.mark.parametrize(
    "bad",
    [
        '{"type": "record", "name": "R"',
        {"type": "enum", "name": "E", "symbols": ["A"], "default": "B"},
        {"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]},
    ],
    ids=["not json", "enum default not a symbol", "unknown named type"],
)
def test_invalid_schema_is_a_schema_error(bad: Any) -> None:
    with pytest.raises(SchemaError, match="invalid Avro schema"):
        check_compatibility("AVRO", ["int"], bad, "BACKWARD")


# Level semantics. v1 has a string field f, v2 dropped it, the candidate brings f back as an
# int with a default: v2's data is readable, v1's is not.
V1 = record(field("f", "string"))
V2 = record()
CANDIDATE = record(field("f", "int", default=0))


def kinds(result: Any) -> list[tuple[str | None, int | None, str, str]]:
    return [(i.direction, i.version, i.kind, i.path) for i in result.incompatibilities]


def test_backward_checks_the_latest_version_only() -> None:
    result = check_compatibility("AVRO", [V1, V2], CANDIDATE, "BACKWARD")
    assert result.compatible
    assert result.checked_against == [2]


def test_backward_transitive_checks_every_version() -> None:
    result = check_compatibility("AVRO", [V1, V2], CANDIDATE, "BACKWARD_TRANSITIVE")
    assert not result.compatible
    assert result.checked_against == [1, 2]
    assert kinds(result) == [("BACKWARD", 1, "TYPE_MISMATCH", "/fields/0/type")]


def test_forward_reads_new_data_with_the_old_schema() -> None:
    # Dropping a field the old schema needs (no default) breaks old readers only.
    old, new = record(field("a", "int"), field("b", "int")), record(field("a", "int"))
    assert check_compatibility("AVRO", [old], new, "BACKWARD").compatible
    result = check_compatibility("AVRO", [old], new, "FORWARD")
    assert kinds(result) == [("FORWARD", 1, "READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")]


def test_forward_transitive_checks_every_version() -> None:
    v1 = record(field("a", "int"), field("b", "int"))
    v2 = record(field("a", "int"), field("b", "int", default=0))
    new = record(field("a", "int"))
    assert check_compatibility("AVRO", [v1, v2], new, "FORWARD").compatible
    result = check_compatibility("AVRO", [v1, v2], new, "FORWARD_TRANSITIVE")
    assert kinds(result) == [("FORWARD", 1, "READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")]


def test_full_checks_both_directions() -> None:
    old, new = record(field("a", "int")), record(field("a", "long"))
    assert check_compatibility("AVRO", [old], new, "BACKWARD").compatible
    result = check_compatibility("AVRO", [old], new, "FULL")
    assert kinds(result) == [("FORWARD", 1, "TYPE_MISMATCH", "/fields/0/type")]


def test_full_transitive_checks_both_directions_against_every_version() -> None:
    v1 = record(field("a", "int"), field("b", "string"))
    v2 = record(field("a", "int"), field("b", "string", default=""))
    new = record(field("a", "int"), field("c", "int"))
    assert check_compatibility("AVRO", [v1, v2], new, "FULL").incompatibilities != []
    result = check_compatibility("AVRO", [v1, v2], new, "FULL_TRANSITIVE")
    assert result.checked_against == [1, 2]
    assert kinds(result) == [
        ("BACKWARD", 1, "READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1"),
        ("FORWARD", 1, "READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1"),
        ("BACKWARD", 2, "READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1"),
    ]


def test_none_checks_nothing_but_still_parses_the_candidate() -> None:
    result = check_compatibility("AVRO", ["int"], "string", "NONE")
    assert (result.compatible, result.checked_against) == (True, [])
    with pytest.raises(SchemaError):
        check_compatibility("AVRO", ["int"], {"type": "nope"}, "NONE")


def test_first_version_is_always_compatible() -> None:
    result = check_compatibility("AVRO", [], "string", "FULL_TRANSITIVE")
    assert (result.compatible, result.checked_against) == (True, [])


def test_registry_version_numbers_are_reported() -> None:
    result = check_compatibility(
        "AVRO", [V1, V2], CANDIDATE, "backward_transitive", versions=[3, 7]
    )
    assert result.checked_against == [3, 7]
    assert [i.version for i in result.incompatibilities] == [3]
    assert "BACKWARD version 3 TYPE_MISMATCH at /fields/0/type" in str(result.incompatibilities[0])


@pytest.mark.parametrize(
    ("schema_type", "level", "versions"),
    [("AVRO", "SIDEWAYS", None), ("XSD", "BACKWARD", None), ("AVRO", "BACKWARD", [1, 2])],
    ids=["unknown level", "unsupported type", "versions do not match history"],
)
def test_bad_arguments_are_option_errors(
    schema_type: str, level: str, versions: list[int] | None
) -> None:
    with pytest.raises(InvalidOptionError):
        check_compatibility(schema_type, ["int"], "int", level, versions=versions)
