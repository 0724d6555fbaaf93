"""Schema types, key families and compatibility checkers are found by convention:
a new one is a new module, and no dispatch table in formats/schemafile.py, guard/keys/analyze.py
or guard/compat/__init__.py changes. Test-only modules registered here prove each path."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from dataclasses import replace

import pytest

from keyguard import formats
from keyguard.formats import codec
from keyguard.formats.codec import format_factory, register_format
from keyguard.formats.errors import InvalidOptionError, SchemaError
from keyguard.formats.schema_types import schema_module, schema_type
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.types import BigIntType, Field, RowType
from keyguard.guard.compat import check_reader_writer, checked_types
from keyguard.guard.compat.levels import PairChecker
from keyguard.guard.keys import KeySide, analyze_key_change
from keyguard.guard.keys.analyze import UnknownKeyFamilyError, family_rules
from keyguard.guard.keys.side import Change, FamilyContext
from keyguard.guard.keys.text import text_family_changes
from keyguard.guard.rules import FORMAT_OPTION_CHANGED

ROW = RowType(fields=(Field("id", BigIntType(nullable=False)),))


def test_builtin_schema_types_come_from_their_modules():
    assert schema_module("AVRO") == "keyguard.formats.avro_schema"
    assert schema_type("AVRO") is sys.modules["keyguard.formats.avro_schema"].SCHEMA_TYPE
    assert schema_type("JSON") is sys.modules["keyguard.formats.json_schema"].SCHEMA_TYPE
    assert schema_type("PROTOBUF") is sys.modules["keyguard.formats.protobuf_schema"].SCHEMA_TYPE
    assert schema_type("XML") is None  # no module declares it: kept as text
    assert SchemaText("XML", "<k/>", "k.xml").text == "<k/>"
    assert schema_type("../etc") is None


def test_a_schema_type_module_found_by_convention_parses_and_types_schemas(
        monkeypatch, tmp_path):
    # A real module file, formats/kgtest_schema.py, imported by schema_type("KGTEST") itself.
    (tmp_path / "kgtest_schema.py").write_text(
        "from keyguard.formats.errors import SchemaError\n"
        "from keyguard.formats.schema_types import SchemaType, register_schema_type\n"
        "from keyguard.formats.types import BigIntType, Field, RowType\n"
        "SEEN = []\n"
        "def parse(text, origin):\n"
        "    SEEN.append(origin)\n"
        "    if text == 'bad':\n"
        "        raise SchemaError('not a kgtest schema')\n"
        "    return {'fields': text.split(',')}\n"
        "def row_type(data, avro_only):\n"
        "    return RowType(fields=tuple(Field(n, BigIntType(nullable=False))\n"
        "                                for n in data['fields']))\n"
        "SCHEMA_TYPE = register_schema_type(SchemaType('KGTEST', parse, row_type))\n")
    monkeypatch.setattr(formats, "__path__", [*formats.__path__, str(tmp_path)])
    monkeypatch.setattr("keyguard.formats.schema_types._TYPES", {})
    monkeypatch.delitem(sys.modules, "keyguard.formats.kgtest_schema", raising=False)
    try:
        text = SchemaText("KGTEST", "a,b", origin="k.kg")
        assert sys.modules["keyguard.formats.kgtest_schema"].SEEN == ["k.kg"]
        assert text.parsed() == {"fields": ["a", "b"]}
        assert text.row_type().names == ["a", "b"]
        with pytest.raises(SchemaError, match=r"^bad.kg: not a kgtest schema"):
            SchemaText("KGTEST", "bad", origin="bad.kg")
    finally:
        sys.modules.pop("keyguard.formats.kgtest_schema", None)


def test_builtin_key_families_come_from_their_modules():
    assert family_rules("json") is text_family_changes
    assert family_rules("csv") is text_family_changes
    assert family_rules("avro") is sys.modules["keyguard.guard.keys.avro"].family_changes
    assert family_rules("raw") is sys.modules["keyguard.guard.keys.raw"].family_changes
    for unknown in ("nosuchfamily", "Bad.Name", ""):
        with pytest.raises(UnknownKeyFamilyError, match="no key rules for key family") as err:
            family_rules(unknown)
        assert err.value.exit_code == 4


def test_every_format_in_the_catalog_has_key_rules():
    """A format whose family has no rules would pass every key change: none may exist."""
    for name in codec.format_names():
        family = format_factory(name).key_family
        assert callable(family_rules(family)), name


def test_a_format_without_key_rules_is_an_error_not_a_pass(monkeypatch):
    codec.format_names()
    monkeypatch.setattr(codec, "_FACTORIES", dict(codec._FACTORIES))
    register_format(replace(format_factory("json"), name="norules-json", key_family="norules"))
    side = KeySide("norules-json", ROW)
    with pytest.raises(UnknownKeyFamilyError):
        analyze_key_change(side, side, topic="t")


def test_a_key_family_module_found_by_convention_judges_its_keys(monkeypatch):
    calls = []

    def family_changes(old: KeySide, new: KeySide, ctx: FamilyContext) -> Iterator[Change]:
        calls.append((old.format, new.format, ctx.topic, ctx.by_example))
        yield Change(FORMAT_OPTION_CHANGED, "$", "the kgtest family judged this change")

    module = types.ModuleType("keyguard.guard.keys.kgtest")
    module.family_changes = family_changes  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keyguard.guard.keys.kgtest", module)
    codec.format_names()  # every built-in registered first: the copy below is thrown away
    monkeypatch.setattr(codec, "_FACTORIES", dict(codec._FACTORIES))
    register_format(replace(format_factory("json"), name="kgtest-json", key_family="kgtest"))
    side = KeySide("kgtest-json", ROW)
    findings = analyze_key_change(side, side, topic="t")
    assert calls == [("kgtest-json", "kgtest-json", "t", True)]
    judged = [f.message for f in findings if f.rule == FORMAT_OPTION_CHANGED]
    assert len(judged) == 1 and judged[0].startswith("the kgtest family judged this change")


def test_a_compatibility_checker_module_found_by_convention_is_used(monkeypatch):
    assert checked_types() == ["AVRO", "JSON", "PROTOBUF"]
    module = types.ModuleType("keyguard.guard.compat.kgtest")
    module.CHECKER = PairChecker(  # type: ignore[attr-defined]
        parse=lambda s: s, check=lambda reader, writer: ["differs"] if reader != writer else [])
    monkeypatch.setitem(sys.modules, "keyguard.guard.compat.kgtest", module)
    assert check_reader_writer("KGTEST", "a", "a") == []
    assert check_reader_writer("kgtest", "a", "b") == ["differs"]
    with pytest.raises(InvalidOptionError, match="no compatibility checker for schema type "
                       "'XSD'") as caught:
        check_reader_writer("XSD", "a", "b")
    assert caught.value.hint == "use one of AVRO, JSON, PROTOBUF"
    with pytest.raises(InvalidOptionError):
        check_reader_writer("levels", "a", "b")


def kgtest_command(name: str = "world") -> None:
    """A test-only contributed command."""
    print(f"kgtest says hello to {name}")


def test_contributed_commands_come_from_the_entry_point_group(monkeypatch):
    from importlib.metadata import EntryPoint

    from typer.testing import CliRunner

    from keyguard.guard.cli import COMMANDS_GROUP, app

    asked = []

    def entry_points(*, group: str) -> list[EntryPoint]:
        asked.append(group)
        return [EntryPoint("kgtest", f"{__name__}:kgtest_command", group)]

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)
    runner = CliRunner()
    assert runner.invoke(app, ["rules", "KG101"]).exit_code == 0
    assert asked == []  # a built-in command never reads the installed packages' metadata
    done = runner.invoke(app, ["kgtest", "--name", "keyguard"])
    assert done.exit_code == 0, done.output
    assert "kgtest says hello to keyguard" in done.output and asked == [COMMANDS_GROUP]
    asked.clear()
    shown = runner.invoke(app, ["--help"])
    # help lists the registered commands and reads no package metadata to do it
    assert "check" in shown.output and "kgtest" not in shown.output and asked == []
    assert "Exit codes: 0" in runner.invoke(app, ["kgtest", "--help"]).output
