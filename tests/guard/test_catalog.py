"""Formats, frames, schema types, key families, compatibility checkers, renderers and commands
come from explicit catalogs (formats/catalog.py, guard/catalog.py): a new one is its module and
one catalog line, and an unknown name is an error listing the known ones. Test-only modules
listed here prove each path."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from keyguard.formats import catalog, codec
from keyguard.formats.codec import format_factory, register_format
from keyguard.formats.errors import InvalidOptionError, SchemaError
from keyguard.formats.framing import CONFLUENT
from keyguard.formats.schema_types import schema_module, schema_type
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.types import BigIntType, Field, RowType
from keyguard.guard import catalog as guard_catalog
from keyguard.guard.cli import command_function
from keyguard.guard.compat import check_reader_writer, checked_types
from keyguard.guard.compat.levels import PairChecker
from keyguard.guard.keys import KeySide, analyze_key_change
from keyguard.guard.keys.analyze import UnknownKeyFamilyError, family_rules
from keyguard.guard.keys.side import Change, FamilyContext
from keyguard.guard.keys.text import text_family_changes
from keyguard.guard.render import renderer
from keyguard.guard.rules import FORMAT_OPTION_CHANGED

ROW = RowType(fields=(Field("id", BigIntType(nullable=False)),))


def test_builtin_schema_types_come_from_their_modules():
    assert schema_module("AVRO") == "keyguard.formats.avro_schema"
    assert schema_type("AVRO") is sys.modules["keyguard.formats.avro_schema"].SCHEMA_TYPE
    assert schema_type("JSON") is sys.modules["keyguard.formats.json_schema"].SCHEMA_TYPE
    assert schema_type("PROTOBUF") is sys.modules["keyguard.formats.protobuf_schema"].SCHEMA_TYPE
    assert schema_type("XML") is None  # the catalog lists no module: kept as text
    assert SchemaText("XML", "<k/>", "k.xml").text == "<k/>"
    assert schema_type("../etc") is None
    assert schema_module("avro") is None  # a registry's names, upper case, as listed


def test_a_schema_type_in_the_catalog_parses_and_types_schemas(monkeypatch, tmp_path):
    # A real module file, imported by schema_type("KGTEST") through its catalog line only.
    (tmp_path / "kgtest_types.py").write_text(
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
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("keyguard.formats.schema_types._TYPES", {})
    monkeypatch.delitem(sys.modules, "kgtest_types", raising=False)
    assert schema_type("KGTEST") is None  # not in the catalog: no module is looked for
    assert "kgtest_types" not in sys.modules
    monkeypatch.setitem(catalog.SCHEMA_TYPES, "KGTEST", "kgtest_types")
    try:
        text = SchemaText("KGTEST", "a,b", origin="k.kg")
        assert sys.modules["kgtest_types"].SEEN == ["k.kg"]
        assert text.parsed() == {"fields": ["a", "b"]}
        assert text.row_type().names == ["a", "b"]
        with pytest.raises(SchemaError, match=r"^bad.kg: not a kgtest schema"):
            SchemaText("KGTEST", "bad", origin="bad.kg")
    finally:
        sys.modules.pop("kgtest_types", None)


def test_builtin_key_families_come_from_their_modules():
    assert family_rules("json") is text_family_changes
    assert family_rules("csv") is text_family_changes
    assert family_rules("avro") is sys.modules["keyguard.guard.keys.avro"].family_changes
    assert family_rules("raw") is sys.modules["keyguard.guard.keys.raw"].family_changes
    for unknown in ("nosuchfamily", "Bad.Name", "", "text", "witness"):
        with pytest.raises(UnknownKeyFamilyError, match="no key rules for key family") as err:
            family_rules(unknown)
        assert err.value.exit_code == 4
        assert "(the key families: avro, csv, json, protobuf, raw)" in err.value.message


def test_every_format_in_the_catalog_has_key_rules():
    """A format whose family has no rules would pass every key change: none may exist."""
    for name in codec.format_names():
        family = format_factory(name).key_family
        assert callable(family_rules(family)), name


def test_a_format_without_key_rules_is_an_error_not_a_pass(monkeypatch):
    codec.format_names()
    monkeypatch.setattr(codec, "_FACTORIES", dict(codec._FACTORIES))
    register_format(format_factory("json").replace(name="norules-json", key_family="norules"))
    side = KeySide("norules-json", ROW)
    with pytest.raises(UnknownKeyFamilyError):
        analyze_key_change(side, side, topic="t")


def test_a_key_family_in_the_catalog_judges_its_keys(monkeypatch):
    calls = []

    def family_changes(old: KeySide, new: KeySide, ctx: FamilyContext) -> Iterator[Change]:
        calls.append((old.format, new.format, ctx.topic, ctx.by_example))
        yield Change(FORMAT_OPTION_CHANGED, "$", "the kgtest family judged this change")

    module = types.ModuleType("kgtest_family")
    module.family_changes = family_changes  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kgtest_family", module)
    monkeypatch.setitem(guard_catalog.KEY_FAMILIES, "kgtest", "kgtest_family")
    codec.format_names()  # every built-in registered first: the copy below is thrown away
    monkeypatch.setattr(codec, "_FACTORIES", dict(codec._FACTORIES))
    register_format(format_factory("json").replace(name="kgtest-json", key_family="kgtest"))
    side = KeySide("kgtest-json", ROW)
    findings = analyze_key_change(side, side, topic="t")
    assert calls == [("kgtest-json", "kgtest-json", "t", True)]
    judged = [f.message for f in findings if f.rule == FORMAT_OPTION_CHANGED]
    assert len(judged) == 1 and judged[0].startswith("the kgtest family judged this change")


def test_a_compatibility_checker_in_the_catalog_is_used(monkeypatch):
    assert checked_types() == ["AVRO", "JSON", "PROTOBUF"]
    module = types.ModuleType("kgtest_checker")
    module.CHECKER = PairChecker(  # type: ignore[attr-defined]
        parse=lambda s: s, check=lambda reader, writer: ["differs"] if reader != writer else [])
    monkeypatch.setitem(sys.modules, "kgtest_checker", module)
    with pytest.raises(InvalidOptionError, match="'KGTEST'"):
        check_reader_writer("KGTEST", "a", "a")  # a module alone is not a checker
    monkeypatch.setitem(guard_catalog.CHECKERS, "KGTEST", "kgtest_checker")
    assert check_reader_writer("KGTEST", "a", "a") == []
    assert check_reader_writer("kgtest", "a", "b") == ["differs"]
    with pytest.raises(InvalidOptionError, match="no compatibility checker for schema type "
                       "'XSD'") as caught:
        check_reader_writer("XSD", "a", "b")
    assert caught.value.hint == "use one of AVRO, JSON, KGTEST, PROTOBUF"
    with pytest.raises(InvalidOptionError):
        check_reader_writer("levels", "a", "b")


def test_unknown_names_are_errors_that_list_the_known_ones():
    with pytest.raises(InvalidOptionError, match="unknown format 'thrift'") as fmt:
        format_factory("thrift")
    assert fmt.value.exit_code == 2 and "avro-confluent" in (fmt.value.hint or "")
    with pytest.raises(InvalidOptionError, match="unknown framing 'glue'") as frame:
        catalog.frame("glue")
    assert frame.value.exit_code == 2
    assert frame.value.hint == (
        "use one of apicurio, apicurio-header-content-id, apicurio-header-global-id, "
        "apicurio-key-content-id, apicurio-key-global-id, apicurio-legacy, "
        "apicurio-value-content-id, apicurio-value-global-id, bare, confluent, confluent-header, "
        "confluent-protobuf, confluent-protobuf-header")
    with pytest.raises(InvalidOptionError, match="unknown report format 'html'") as rendered:
        renderer("html")
    assert rendered.value.hint == "use one of text, json, junit, sarif, github, gitlab"


def test_every_catalog_entry_is_what_it_says():
    """Each listed module declares what its line promises, under the listed name."""
    for name, module in catalog.BUILTIN_FORMATS.items():
        assert format_factory(name).name == name
        assert sys.modules[module].__name__ == module
    for name in catalog.FRAMES:
        assert catalog.frame(name).name == name
    assert {format_factory(n).frame.name for n in codec.format_names()} <= set(catalog.FRAMES)
    assert catalog.frame("confluent") is CONFLUENT
    for name in catalog.SCHEMA_TYPES:
        found = schema_type(name)
        assert found is not None and found.name == name
    for fmt in guard_catalog.RENDERERS:
        assert callable(renderer(fmt))
    for name in guard_catalog.COMMANDS:
        assert callable(command_function(name))
    assert set(guard_catalog.KEY_FAMILIES) == {format_factory(n).key_family
                                               for n in codec.format_names()}


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
