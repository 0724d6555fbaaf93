"""Protobuf value compatibility: Confluent's Difference types, at every level, located."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from keyguard.formats.errors import SchemaError
from keyguard.formats.registry import COMPATIBILITY_LEVELS
from keyguard.guard.compat import check_compatibility, check_reader_writer
from keyguard.guard.compat.protobuf import (
    COMPATIBLE_CHANGES,
    DIFFERENCE_TYPES,
    differences,
    parse,
)

P3 = 'syntax = "proto3";\n'
P2 = 'syntax = "proto2";\n'


def msg(body: str, extra: str = "", header: str = P3) -> str:
    return f"{header}message M {{\n{body}}}\n{extra}"


SUB = "message B { string s = 1; }\nmessage C { string s = 1; }\n"
DEP_INT = 'syntax = "proto3";\npackage dep;\nmessage D { int32 v = 1; }\n'
DEP_STR = 'syntax = "proto3";\npackage dep;\nmessage D { string v = 1; }\n'
IMPORTING = 'syntax = "proto3";\nimport "dep.proto";\nmessage M { dep.D d = 1; }\n'

#: (name, old, new, incompatible kinds reading old with new, kinds reading new with old)
INCOMPATIBLE = [
    ("MESSAGE_REMOVED", msg("  int32 a = 1;\n", "message N { int32 b = 1; }\n"),
     msg("  int32 a = 1;\n"), {"MESSAGE_REMOVED"}, set()),
    ("FIELD_KIND_CHANGED", msg("  int32 a = 1;\n", SUB), msg("  B a = 1;\n", SUB),
     {"FIELD_KIND_CHANGED"}, {"FIELD_KIND_CHANGED"}),
    ("FIELD_KIND_CHANGED map", msg("  map<string, int32> a = 1;\n"),
     msg("  repeated int32 a = 1;\n"), {"FIELD_KIND_CHANGED"}, {"FIELD_KIND_CHANGED"}),
    ("FIELD_SCALAR_KIND_CHANGED", msg("  int32 a = 1;\n"), msg("  sint32 a = 1;\n"),
     {"FIELD_SCALAR_KIND_CHANGED"}, {"FIELD_SCALAR_KIND_CHANGED"}),
    ("FIELD_SCALAR_KIND_CHANGED fixed", msg("  fixed32 a = 1;\n"), msg("  fixed64 a = 1;\n"),
     {"FIELD_SCALAR_KIND_CHANGED"}, {"FIELD_SCALAR_KIND_CHANGED"}),
    ("FIELD_SCALAR_KIND_CHANGED map value", msg("  map<string, int32> a = 1;\n"),
     msg("  map<string, string> a = 1;\n"), {"FIELD_SCALAR_KIND_CHANGED"},
     {"FIELD_SCALAR_KIND_CHANGED"}),
    ("FIELD_NAMED_TYPE_CHANGED", msg("  B a = 1;\n", SUB), msg("  C a = 1;\n", SUB),
     {"FIELD_NAMED_TYPE_CHANGED"}, {"FIELD_NAMED_TYPE_CHANGED"}),
    ("FIELD_NUMERIC_LABEL_CHANGED", msg("  optional int32 a = 1;\n"),
     msg("  repeated int32 a = 1;\n"), {"FIELD_NUMERIC_LABEL_CHANGED"},
     {"FIELD_NUMERIC_LABEL_CHANGED"}),
    ("FIELD_NUMERIC_LABEL_CHANGED proto2", msg("  optional double a = 1;\n", header=P2),
     msg("  repeated double a = 1;\n", header=P2), {"FIELD_NUMERIC_LABEL_CHANGED"},
     {"FIELD_NUMERIC_LABEL_CHANGED"}),
    ("REQUIRED_FIELD_ADDED", msg("  optional int32 a = 1;\n", header=P2),
     msg("  optional int32 a = 1;\n  required int32 b = 2;\n", header=P2),
     {"REQUIRED_FIELD_ADDED"}, {"REQUIRED_FIELD_REMOVED"}),
    ("ONEOF_FIELD_REMOVED", msg("  oneof o { int32 a = 1; string b = 2; }\n"),
     msg("  oneof o { int32 a = 1; }\n"), {"ONEOF_FIELD_REMOVED"}, set()),
    ("MULTIPLE_FIELDS_MOVED_TO_ONEOF", msg("  int32 a = 1;\n  string b = 2;\n"),
     msg("  oneof o { int32 a = 1; string b = 2; }\n"), {"MULTIPLE_FIELDS_MOVED_TO_ONEOF"},
     set()),
    ("FIELD_MOVED_TO_EXISTING_ONEOF", msg("  int32 c = 3;\n  oneof o { int32 a = 1; }\n"),
     msg("  oneof o { int32 a = 1; int32 c = 3; }\n"), {"FIELD_MOVED_TO_EXISTING_ONEOF"},
     set()),
    ("PACKAGE_CHANGED", 'syntax = "proto3";\npackage a;\nmessage M { int32 a = 1; }\n',
     'syntax = "proto3";\npackage b;\nmessage M { int32 a = 1; }\n', {"PACKAGE_CHANGED"},
     {"PACKAGE_CHANGED"}),
    # Old data sets only a; the new oneof reads it. Read back by the old schema, b is a member
    # of a oneof that lost it while a survived at the top level.
    ("ONEOF_ADDED with one moved field", msg("  int32 a = 1;\n"),
     msg("  oneof o { int32 a = 1; string b = 2; }\n"), set(), {"ONEOF_FIELD_REMOVED"}),
    ("imported message changed", {"schema": IMPORTING, "references": {"dep.proto": DEP_INT}},
     {"schema": IMPORTING, "references": {"dep.proto": DEP_STR}},
     {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"},
     {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"}),
]

#: Changes Confluent accepts both ways (the Difference each shows, for the record).
COMPATIBLE = [
    ("MESSAGE_MOVED", msg("  int32 a = 1;\n", "message N { int32 b = 1; }\n"),
     'syntax = "proto3";\nmessage N { int32 b = 1; }\nmessage M { int32 a = 1; }\n'),
    ("FIELD_NAME_CHANGED", msg("  int32 a = 1;\n"), msg("  int32 renamed = 1;\n")),
    ("int32 -> int64 -> uint64 -> bool", msg("  int32 a = 1;\n"), msg("  bool a = 1;\n")),
    ("enum <-> int32", msg("  int32 a = 1;\n"), msg("  E a = 1;\n", "enum E { X = 0; }\n")),
    ("string <-> bytes", msg("  string a = 1;\n"), msg("  bytes a = 1;\n")),
    ("sfixed32 <-> fixed32", msg("  sfixed32 a = 1;\n"), msg("  fixed32 a = 1;\n")),
    ("FIELD_STRING_OR_BYTES_LABEL_CHANGED", msg("  optional string a = 1;\n"),
     msg("  repeated string a = 1;\n")),
    ("proto3 implicit <-> optional <-> repeated", msg("  int32 a = 1;\n"),
     msg("  repeated int32 a = 1;\n")),
    ("message label", msg("  optional B a = 1;\n", SUB), msg("  repeated B a = 1;\n", SUB)),
    ("ENUM_CONST_*", msg("  E a = 1;\n", "enum E { X = 0; Y = 1; }\n"),
     msg("  E a = 1;\n", "enum E { X = 0; Z = 2; }\n")),
    ("ENUM_CONST_CHANGED", msg("  E a = 1;\n", "enum E { X = 0; Y = 1; }\n"),
     msg("  E a = 1;\n", "enum E { X = 0; Z = 1; }\n")),
    ("ONEOF_ADDED", msg("  int32 a = 1;\n"), msg("  int32 a = 1;\n  oneof o { string b = 2; }\n")),
    ("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", msg("  oneof o { int32 a = 1; }\n"),
     msg("  int32 a = 1;\n")),
    ("syntax proto2 -> proto3", msg("  optional int32 a = 1;\n  optional string b = 2;\n",
                                    header=P2),
     msg("  int32 a = 1;\n  string b = 2;\n")),
    ("field removed and its number reserved", msg("  int32 a = 1;\n  string b = 2;\n"),
     msg("  reserved 2;\n  reserved \"b\";\n  int32 a = 1;\n")),
    ("options changed", msg("  int32 a = 1;\n"),
     'syntax = "proto3";\noption java_package = "x.y";\n'
     "message M { int32 a = 1 [deprecated = true]; }\n"),
]


def _kinds(result: Any) -> set[str]:
    return {i.kind for i in result.incompatibilities}


@pytest.mark.parametrize("level", COMPATIBILITY_LEVELS)
@pytest.mark.parametrize(("name", "old", "new", "backward", "forward"), INCOMPATIBLE,
                         ids=[c[0] for c in INCOMPATIBLE])
def test_each_difference_type_at_each_level(name: str, old: Any, new: Any, backward: set[str],
                                            forward: set[str], level: str) -> None:
    result = check_compatibility("PROTOBUF", [old], new, level)
    expected = (backward if level.startswith(("BACKWARD", "FULL")) else set()) | (
        forward if level.startswith(("FORWARD", "FULL")) else set())
    assert _kinds(result) == expected
    assert result.compatible == (not expected)
    for inc in result.incompatibilities:
        wanted = backward if inc.direction == "BACKWARD" else forward
        assert inc.kind in wanted and inc.version == 1


@pytest.mark.parametrize("level", COMPATIBILITY_LEVELS)
@pytest.mark.parametrize(("name", "old", "new"), COMPATIBLE, ids=[c[0] for c in COMPATIBLE])
def test_compatible_changes_at_each_level(name: str, old: str, new: str, level: str) -> None:
    result = check_compatibility("PROTOBUF", [old], new, level)
    assert result.compatible, result.incompatibilities
    assert result.checked_against == ([] if level == "NONE" else [1])


def test_compatible_changes_are_reported_as_differences() -> None:
    shown = {d.type for _, old, new in COMPATIBLE for d in differences(parse(old), parse(new))}
    assert {"ONEOF_FIELD_MOVED_TO_TOP_LEVEL", "MESSAGE_MOVED", "FIELD_NAME_CHANGED",
            "ENUM_CONST_ADDED", "ENUM_CONST_REMOVED", "ENUM_ADDED", "ONEOF_ADDED", "FIELD_REMOVED",
            "FIELD_STRING_OR_BYTES_LABEL_CHANGED"} <= shown
    assert shown <= COMPATIBLE_CHANGES


def test_every_difference_type_is_exercised() -> None:
    seen = {k for case in INCOMPATIBLE for k in case[3] | case[4]}
    for _, old, new, *_ in [*COMPATIBLE, *INCOMPATIBLE]:
        seen |= {d.type for d in differences(parse(old), parse(new))}
        seen |= {d.type for d in differences(parse(new), parse(old))}
    assert set(DIFFERENCE_TYPES) == seen


# --- transitive levels ---------------------------------------------------------------------

V1 = msg("  int32 a = 1;\n  int32 b = 2;\n")
V2 = msg("  int32 a = 1;\n")  # b removed: compatible
V3 = msg("  int32 a = 1;\n  string c = 2;\n")  # number 2 back as a string: not with V1


@pytest.mark.parametrize(("level", "compatible", "checked", "found"), [
    ("BACKWARD", True, [2], set()),
    ("FORWARD", True, [2], set()),
    ("FULL", True, [2], set()),
    ("BACKWARD_TRANSITIVE", False, [1, 2], {(1, "BACKWARD")}),
    ("FORWARD_TRANSITIVE", False, [1, 2], {(1, "FORWARD")}),
    ("FULL_TRANSITIVE", False, [1, 2], {(1, "BACKWARD"), (1, "FORWARD")}),
    ("NONE", True, [], set()),
])
def test_transitive_levels_check_every_version(level: str, compatible: bool, checked: list[int],
                                               found: set[tuple[int, str]]) -> None:
    result = check_compatibility("PROTOBUF", [V1, V2], V3, level)
    assert result.compatible is compatible
    assert result.checked_against == checked
    assert {(i.version, i.direction) for i in result.incompatibilities} == found
    assert all(i.kind == "FIELD_SCALAR_KIND_CHANGED" and i.path == "/M/2"
               for i in result.incompatibilities)


def test_none_still_rejects_an_invalid_candidate() -> None:
    with pytest.raises(SchemaError, match=r"invalid Protobuf schema.*line 1"):
        check_compatibility("PROTOBUF", [V1], "message {", "NONE")


def test_an_invalid_registered_version_is_named() -> None:
    with pytest.raises(SchemaError, match=r"^s-value v1: invalid Protobuf schema"):
        check_compatibility("PROTOBUF", ["message M { int32 a = 1 }"], V1, "BACKWARD",
                            origins=["s-value v1"])


def test_an_unresolved_import_is_invalid() -> None:
    with pytest.raises(SchemaError, match=r"dep\.proto"):
        parse(IMPORTING)


# --- located reasons -----------------------------------------------------------------------


def test_a_scalar_kind_change_names_message_field_and_number() -> None:
    old = 'syntax = "proto3";\npackage shop;\nmessage Order { message Line { int64 qty = 4; } }\n'
    new = 'syntax = "proto3";\npackage shop;\nmessage Order { message Line { double qty = 4; } }\n'
    (inc,) = check_reader_writer("PROTOBUF", new, old)
    assert inc.kind == "FIELD_SCALAR_KIND_CHANGED" and inc.path == "/Order/Line/4"
    assert "message shop.Order.Line: field qty = 4" in inc.message
    assert "int64 (GENERAL_NUMBER) in the writer, double (DOUBLE) in the reader" in inc.message
    assert (inc.writer_fragment, inc.reader_fragment) == ("int64", "double")


def test_a_oneof_member_is_located_under_its_oneof() -> None:
    (inc,) = check_reader_writer("PROTOBUF", msg("  oneof pay { string card = 7; }\n"),
                                 msg("  oneof pay { string card = 7; int64 cash = 8; }\n"))
    assert inc.kind == "ONEOF_FIELD_REMOVED" and inc.path == "/M/pay/8"
    assert "field cash = 8" in inc.message and "oneof pay" in inc.message


def test_a_renamed_first_message_is_removed_not_moved() -> None:
    """Confluent matches messages by name: renaming the message a record's id points at loses it."""
    result = check_compatibility("PROTOBUF", [msg("  int32 a = 1;\n")],
                                 'syntax = "proto3";\nmessage Renamed { int32 a = 1; }\n',
                                 "BACKWARD")
    assert [(i.kind, i.path) for i in result.incompatibilities] == [("MESSAGE_REMOVED", "/M")]


def test_a_recursive_message_is_walked_once() -> None:
    tree = msg("  repeated M children = 1;\n  int32 v = 2;\n")
    changed = msg("  repeated M children = 1;\n  string v = 2;\n")
    kinds = [i.kind for i in check_reader_writer("PROTOBUF", changed, tree)]
    assert kinds == ["FIELD_SCALAR_KIND_CHANGED"]


def test_well_known_imports_resolve_without_references() -> None:
    ts = ('syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
          "message M { google.protobuf.Timestamp at = 1; }\n")
    assert check_reader_writer("PROTOBUF", ts, ts) == []
    kinds = {i.kind for i in check_reader_writer("PROTOBUF", msg("  int64 at = 1;\n"), ts)}
    assert kinds == {"FIELD_KIND_CHANGED"}


# --- Confluent's own expected Difference lists -------------------------------------------------

VECTORS = json.loads((Path(__file__).parent / "data" / "protobuf_conformance.json").read_text())
CONFLUENT = [c for c in VECTORS["cases"] if c["source"] == "confluent"]


@pytest.mark.parametrize("case", CONFLUENT, ids=[c["id"] for c in CONFLUENT])
def test_the_differences_are_confluents(case: dict[str, Any]) -> None:
    """Not just the verdict: every Difference Confluent's SchemaDiffTest lists, at its path."""
    found = differences(parse(case["writer_or_old"]), parse(case["reader_or_new"]))
    assert sorted(f"{d.type} #{d.path}" for d in found) == sorted(case["changes"])


@pytest.mark.parametrize("schema", [
    {"schema": IMPORTING, "references": [{"name": "dep.proto", "schema": DEP_INT}]},
    {"schema": IMPORTING, "references": {"dep.proto": DEP_INT}},
    IMPORTING.encode(),
])
def test_schema_forms(schema: Any) -> None:
    if isinstance(schema, bytes):
        with pytest.raises(SchemaError, match=r"dep\.proto"):
            parse(schema)
    else:
        assert "dep.D" in parse(schema).types


@pytest.mark.parametrize("schema", [
    {"schema": IMPORTING, "references": {"dep.proto": 1}},
    {"schema": IMPORTING, "references": "dep.proto"},
    42,
])
def test_malformed_schema_input_is_a_schema_error(schema: Any) -> None:
    with pytest.raises(SchemaError, match="invalid Protobuf schema"):
        parse(schema)


# --- oneof membership (Confluent's by-number comparison across oneofs) ------------------------


def test_a_renamed_oneof_still_compares_its_members() -> None:
    old = msg("  oneof before { int32 a = 1; string b = 2; }\n")
    new = msg("  oneof after { int32 a = 1; double b = 2; }\n")
    found = {(d.type, d.path) for d in differences(parse(old), parse(new))}
    assert {("ONEOF_REMOVED", "/M/before"), ("ONEOF_ADDED", "/M/after"),
            ("FIELD_SCALAR_KIND_CHANGED", "/M/after/2")} == found


def test_a_field_moved_out_of_its_oneof_is_compared_where_it_went() -> None:
    old = msg("  oneof o { int32 a = 1; string b = 2; }\n")
    new = msg("  int32 a = 1;\n  oneof o { string b = 2; }\n")
    assert [(d.type, d.path) for d in differences(parse(old), parse(new))] == [
        ("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", "/M/1")]
    assert check_reader_writer("PROTOBUF", new, old) == []
    (inc,) = check_reader_writer("PROTOBUF", msg("  sint32 a = 1;\n  oneof o { string b = 2; }\n"),
                                 old)
    assert (inc.kind, inc.path) == ("FIELD_SCALAR_KIND_CHANGED", "/M/1")


def test_a_package_change_is_incompatible() -> None:
    old = 'syntax = "proto3";\npackage foo;\nmessage M { int32 a = 1; }\n'
    new = 'syntax = "proto3";\npackage bar;\nmessage M { int32 a = 1; }\n'
    (inc,) = check_reader_writer("PROTOBUF", new, old)
    assert (inc.kind, inc.path) == ("PACKAGE_CHANGED", "/")
    assert "package foo became bar" in inc.message
    assert not check_compatibility("PROTOBUF", [old], new, "BACKWARD").compatible


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param(msg("  oneof x { int32 a = 1; int32 b = 2; }\n  oneof y { int32 c = 3; }\n"),
                 msg("  oneof x { int32 a = 1; }\n  oneof y { int32 c = 3; int32 b = 2; }\n"),
                 {("FIELD_MOVED_TO_EXISTING_ONEOF", "/M/y")}, id="moved between oneofs"),
    pytest.param(msg("  oneof x { int32 a = 1; }\n  oneof y { int32 b = 3; }\n"),
                 msg("  oneof y { int32 b = 3; int32 a = 1; }\n"),
                 {("FIELD_MOVED_TO_EXISTING_ONEOF", "/M/y")}, id="from a removed oneof"),
    pytest.param(msg("  oneof x { int32 a = 1; }\n  oneof y { int32 b = 2; }\n"),
                 msg("  oneof z { int32 a = 1; int32 b = 2; }\n"),
                 {("FIELD_MOVED_TO_EXISTING_ONEOF", "/M/z")}, id="two oneofs merged"),
    pytest.param(msg("  oneof g { int32 a = 1; int32 b = 2; }\n"),
                 msg("  oneof g2 { int32 a = 1; }\n"),
                 {("ONEOF_FIELD_REMOVED", "/M/g/2")}, id="member dropped while renamed"),
])
def test_oneof_changes_that_make_fields_exclusive_or_lose_one(
        old: str, new: str, expected: set[tuple[str, str]]) -> None:
    """Fields independent before now exclusive, or a member lost behind a renamed oneof."""
    found = {(i.kind, i.path) for i in check_reader_writer("PROTOBUF", new, old)}
    assert found == expected


def test_a_oneof_removed_with_all_its_members_is_compatible() -> None:
    old = msg("  int32 a = 1;\n  oneof o { int32 b = 2; string c = 3; }\n")
    new = msg("  int32 a = 1;\n")
    assert {(d.type, d.path) for d in differences(parse(old), parse(new))} == {
        ("ONEOF_REMOVED", "/M/o")}
    assert check_reader_writer("PROTOBUF", new, old) == []


def test_every_vector_schema_is_compatible_with_itself() -> None:
    schemas = [s for c in VECTORS["cases"] for s in (c["reader_or_new"],
               *(c["writer_or_old"] if c.get("old_is_history") else [c["writer_or_old"]]))]
    for schema in schemas:
        parsed = parse(schema)
        assert differences(parsed, parsed) == [], schema
