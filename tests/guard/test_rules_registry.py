"""One registry of rules: each rule is a constant bound to the checks that emit it, IDs are
never string literals outside the modules that declare them, and retired IDs keep working."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import keyguard.guard.rules as rules_module
from keyguard.guard.cli import app
from keyguard.guard.report import Rule
from keyguard.guard.rules import ALL_RULES, KEY_RULES, RULES, rule
from keyguard.guard.rules_catalogue import catalogue
from keyguard.guard.selection import selector

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("formats", "guard", "sparkio")
#: Calls whose first argument (or `safe_rule=`) is the rule a finding is made of.
EMITTERS = {"Change", "Finding", "_ids_finding"}
#: The modules that declare rules (their IDs are literals there, and only there).
DECLARATIONS = {"keyguard.guard.rules", "keyguard.guard.rules_beyond_keys"}
CONSTANTS = {name: value for name, value in vars(rules_module).items()
             if isinstance(value, Rule)}


def _modules() -> list[tuple[str, ast.Module]]:
    out = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            name = ".".join(("keyguard", *path.relative_to(REPO).with_suffix("").parts))
            out.append((name.removesuffix(".__init__"), ast.parse(path.read_text())))
    return out


def _emissions() -> dict[str, set[str]]:
    """Rule ID -> the functions (module.outermost_function) that build a finding of it."""
    found: dict[str, set[str]] = {}

    def walk(node: ast.AST, module: str, fn: str | None, cls: str | None = None) -> None:
        for child in ast.iter_child_nodes(node):
            here, inside = fn, cls
            if isinstance(child, ast.ClassDef) and fn is None:
                inside = child.name
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn is None:
                here = child.name if cls is None else f"{cls}.{child.name}"
            if isinstance(child, ast.Call) and getattr(child.func, "id", None) in EMITTERS:
                args = [*child.args[:1], *(k.value for k in child.keywords
                                          if k.arg in ("rule", "safe_rule"))]
                for a in args:
                    if isinstance(a, ast.Name) and a.id in CONSTANTS and here is not None:
                        found.setdefault(CONSTANTS[a.id].id, set()).add(f"{module}.{here}")
            walk(child, module, here, inside)

    for module, tree in _modules():
        if module not in DECLARATIONS:
            walk(tree, module, None)
    return found


def _resolve(dotted: str) -> object:
    """`keyguard.guard.keys.avro.AvroWalk._record` -> the function (module, then attributes)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def test_every_rule_is_a_named_constant_in_the_registry() -> None:
    assert {r.id for r in CONSTANTS.values()} == set(ALL_RULES)
    assert [r.id for r in catalogue()] == sorted(ALL_RULES)
    assert set(RULES) == {r.id for r in KEY_RULES} < set(ALL_RULES)
    assert rule("kg801") is ALL_RULES["KG801"]


def test_each_rule_names_the_checks_that_emit_it_and_only_those() -> None:
    emitted = _emissions()
    for r in ALL_RULES.values():
        assert r.checks, f"{r.id} names no check"
        for dotted in r.checks:
            assert callable(_resolve(dotted)), dotted
        assert set(r.checks) == emitted.get(r.id, set()), (
            f"{r.id}: declared checks {sorted(r.checks)}, emitted by "
            f"{sorted(emitted.get(r.id, set()))}: update Rule.checks in guard/rules.py")


def test_no_rule_id_is_a_string_literal_outside_its_declaration() -> None:
    literals = []
    for module, tree in _modules():
        if module in DECLARATIONS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"KG\d{3}", node.value.strip()):
                literals.append(f"{module}:{node.lineno} {node.value!r}")
    assert literals == [], "use the rule's constant from keyguard.guard.rules"


@pytest.fixture
def retired(monkeypatch: pytest.MonkeyPatch) -> str:
    """A test-only alias: KG105, retired into KG101 (key-field-added)."""
    monkeypatch.setitem(rules_module.ALIASES, "KG105", "KG101")
    return "KG105"


def test_a_retired_id_resolves_to_its_successor(retired: str) -> None:
    assert rule(retired) is ALL_RULES["KG101"]
    chosen = selector(retired.lower(), where="test")
    assert (chosen.token, chosen.alias, chosen.rules) == ("KG101", "KG105", (ALL_RULES["KG101"],))


def test_keyguard_rules_explains_a_retired_id(retired: str) -> None:
    r = CliRunner().invoke(app, ["rules", retired])
    assert r.exit_code == 0, r.output
    assert "KG105 is a retired ID: it now means KG101" in r.output
    assert "KG101  key-field-added" in r.output and "formerly: KG105" in r.output
    doc = CliRunner().invoke(app, ["rules", "KG101", "-f", "json"]).output
    assert '"aliases": [\n      "KG105"\n    ]' in doc


def test_aliases_never_shadow_a_live_id() -> None:
    assert not set(rules_module.ALIASES) & set(ALL_RULES)
    assert set(rules_module.ALIASES.values()) <= set(ALL_RULES)


def test_keyguard_rules_shows_category_and_checks() -> None:
    r = CliRunner().invoke(app, ["rules"])
    assert "KG701  topic-not-compacted  [warning, topic]" in r.output
    assert "checked by: keyguard.guard.keys.placement.topic_findings" in r.output
    one = CliRunner().invoke(app, ["rules", "topic-not-compacted", "-f", "json"])
    (doc,) = __import__("json").loads(one.output)
    assert doc["category"] == "topic"
    assert doc["checks"] == ["keyguard.guard.keys.placement.topic_findings"]
    placement = CliRunner().invoke(app, ["rules", "key-placement"]).output
    ids = re.findall(r"^(KG\d{3}) ", placement, re.MULTILINE)
    assert ids == ["KG014", "KG601", "KG602", "KG603"]
