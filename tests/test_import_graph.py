"""Imports point one way: sparkio -> guard -> formats. Nothing in guard/ or formats/ imports
sparkio (its CLI commands and docs table are contributed from sparkio), and sparkio's own
modules import each other without cycles, function-local imports included."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("formats", "guard", "sparkio")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(("keyguard", *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return out


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `path` imports anywhere (TYPE_CHECKING blocks left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    names: list[str] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known
                      else node.module for a in node.names]
    out = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


def test_guard_and_formats_import_nothing_of_sparkio() -> None:
    known = _modules()
    # The graph is read, not empty: guard/ imports formats/ in hundreds of places.
    assert sum(len(_imports(p, known)) for m, p in known.items()
               if m.startswith("keyguard.guard")) > 100
    upward = sorted(f"{m} imports {t}" for m, p in known.items()
                    if not m.startswith("keyguard.sparkio") for t in _imports(p, known)
                    if t.startswith("keyguard.sparkio"))
    assert upward == []


def test_sparkio_has_no_import_cycles() -> None:
    known = _modules()
    graph = {m: {t for t in _imports(p, known) if t.startswith("keyguard.sparkio") and t != m}
             for m, p in known.items() if m.startswith("keyguard.sparkio")}
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for nxt in sorted(graph[module]):
            if nxt in path:
                cycles.append([*path[path.index(nxt):], nxt])
            elif len(path) < len(graph):
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert cycles == []
