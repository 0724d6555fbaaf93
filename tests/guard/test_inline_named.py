"""A field added with an inline named type (record, enum, fixed), at every level, is judged.

It used to crash the value check (`unhashable type: 'dict'`): a field's "type" is a schema,
not a type name. Each case adds field `n` whose type defines a named type inline.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from keyguard.formats.registry import SchemaVersion
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.compat import check_compatibility
from keyguard.guard.diff import KeyWriting, diff_sides
from keyguard.guard.values import check_value

NAMED: dict[str, tuple[dict[str, Any], Any]] = {
    "record": ({"type": "record", "name": "N", "fields": [{"name": "x", "type": "int"}]},
               {"x": 0}),
    "enum": ({"type": "enum", "name": "N", "symbols": ["A", "B"]}, "A"),
    "fixed": ({"type": "fixed", "name": "N", "size": 2}, "\u0000\u0000"),
}


def _base() -> dict[str, Any]:
    return {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": "int"},
        {"name": "inner", "type": {"type": "record", "name": "I", "fields": [
            {"name": "b", "type": "int"}]}},
        {"name": "items", "type": {"type": "array", "items": {
            "type": "record", "name": "It", "fields": [{"name": "c", "type": "int"}]}}},
        {"name": "byname", "type": {"type": "map", "values": {
            "type": "record", "name": "Mv", "fields": [{"name": "d", "type": "int"}]}}},
        {"name": "maybe", "type": ["null", {"type": "record", "name": "U", "fields": [
            {"name": "e", "type": "int"}]}], "default": None},
    ]}


#: Where the new field goes: the index of the record's field list to extend, and how to reach it.
LEVELS = {
    "top": lambda s: s["fields"],
    "nested-record": lambda s: s["fields"][1]["type"]["fields"],
    "array-items": lambda s: s["fields"][2]["type"]["items"]["fields"],
    "map-values": lambda s: s["fields"][3]["type"]["values"]["fields"],
    "union-branch": lambda s: s["fields"][4]["type"][1]["fields"],
}


def _with_field(kind: str, level: str, *, default: bool) -> dict[str, Any]:
    schema = _base()
    named, value = NAMED[kind]
    field: dict[str, Any] = {"name": "n", "type": copy.deepcopy(named)}
    if default:
        field["default"] = value
    LEVELS[level](schema).append(field)
    return schema


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("kind", NAMED)
def test_added_without_default_breaks_backward(kind: str, level: str) -> None:
    result = check_compatibility("AVRO", [_base()], _with_field(kind, level, default=False),
                                 "BACKWARD")
    assert not result.compatible
    (inc,) = result.incompatibilities
    if level == "union-branch":
        # As Avro Java: the writer's branch U matches no reader branch (its U needs n).
        assert inc.kind == "MISSING_UNION_BRANCH" and inc.path == "/fields/4/type/1"
    else:
        assert inc.kind == "READER_FIELD_MISSING_DEFAULT_VALUE"
        assert inc.message == "n"
        assert inc.reader_fragment["name"] == "n"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("kind", NAMED)
def test_added_with_default_is_full_compatible(kind: str, level: str) -> None:
    result = check_compatibility("AVRO", [_base()], _with_field(kind, level, default=True),
                                 "FULL_TRANSITIVE")
    assert result.compatible, result.incompatibilities


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("kind", NAMED)
def test_value_check_reports_it(kind: str, level: str) -> None:
    old = SchemaVersion("t-value", 1, 1, json.dumps(_base()))
    cand = SchemaText("AVRO", json.dumps(_with_field(kind, level, default=False)),
                      "v2.avsc")
    findings = check_value("t-value", cand, [old], "BACKWARD")
    assert [f.rule.id for f in findings] == ["KG801"]


@pytest.mark.parametrize("kind", NAMED)
def test_key_diff_reports_the_added_field(kind: str) -> None:
    key = {"type": "record", "name": "k", "fields": [{"name": "id", "type": "long"}]}
    grown = copy.deepcopy(key)
    grown["fields"].append({"name": "n", "type": copy.deepcopy(NAMED[kind][0])})
    texts = [SchemaText("AVRO", json.dumps(key), "v1.avsc"),
             SchemaText("AVRO", json.dumps(grown), "v2.avsc")]
    report = diff_sides(texts[:-1], texts[-1], KeyWriting("avro", {}), KeyWriting("avro", {}))
    assert any(f.rule.id == "KG101" and f.path == "n" for f in report.findings)


@pytest.mark.parametrize(("column", "breaking"), [
    ("n ROW<x INT NOT NULL> NOT NULL", True),  # no default: BACKWARD breaks
    ("n ROW<x INT NOT NULL>", False),  # nullable: ["null", record] with default null
    ("n ARRAY<ROW<x INT>>", False),
])
def test_the_writer_guard_path_judges_a_new_nested_row(tmp_path: Any, column: str,
                                                       breaking: bool) -> None:
    """What the Spark writer's guard checks: Flink's Avro schema of the table's value row.

    A ROW column becomes an inline named record (`record_n`); the check used to crash on it.
    """
    from keyguard.formats.avro_schema import to_avro_json, to_avro_schema
    from keyguard.formats.registry.file import FileRegistry
    from keyguard.formats.sqltypes import parse_columns
    from keyguard.guard.check import TopicCheck, check
    from keyguard.guard.report import Verdict

    old = to_avro_json(to_avro_schema(parse_columns("id BIGINT NOT NULL, a STRING").not_null()))
    new = to_avro_json(to_avro_schema(
        parse_columns(f"id BIGINT NOT NULL, a STRING, {column}").not_null()))
    root = tmp_path / "registry"
    (root / "subjects" / "t-value").mkdir(parents=True)
    (root / "config.json").write_text('{"compatibility": "BACKWARD"}')
    (root / "subjects" / "t-value" / "v1.avsc").write_text(old)
    report = check(TopicCheck("t", candidate_value=SchemaText("AVRO", new, "writer of t")),
                   registry=FileRegistry(root))
    assert (report.verdict is Verdict.BREAKING) is breaking
    if breaking:
        assert [f.rule.id for f in report.breaking] == ["KG801"]
