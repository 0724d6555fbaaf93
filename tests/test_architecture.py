"""The shape of the code, kept honest: the import graph and ARCHITECTURE.md's module list.

The import graph is read with `ast` from formats/, guard/ and sparkio/ (nothing is imported),
counting imports at every level: module level, inside functions, inside `try`. Imports under
`if TYPE_CHECKING:` never run, so they are not edges of a cycle; they still count for the layer
rule (a type is a dependency too). `python tests/test_architecture.py` lists what still
violates each rule.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("formats", "guard", "sparkio")
#: Network clients: the pure core imports none of them, directly or through another module.
NETWORK = ("confluent_kafka", "requests", "httpx", "httpx2", "urllib.request", "urllib3",
           "http.client", "socket", "aiohttp")
#: The edge of guard/: the modules that gather facts (registry, broker, git), resolve a run's
#: settings (the environment's among them) and the shell that drives them. Everything else in
#: guard/, and formats/ outside formats/registry/, is the core.
GUARD_EDGE = tuple(f"keyguard.guard.{m}" for m in (
    "check", "facts", "topic", "offsets", "realkeys", "config", "request", "gate", "cli", "docs",
    "audit.scan"))
#: formats/docs.py generates the docs' option tables: tooling, like guard/docs.py.
FORMATS_EDGE = ("keyguard.formats.registry", "keyguard.formats.docs")
#: The registry backends and their opener: the core gets a `Registry` (keyguard.formats.registry,
#: the interface) handed in and never opens one itself.
REGISTRY_BACKENDS = tuple(f"keyguard.formats.registry.{m}"
                          for m in ("connect", "settings", "http", "mock", "file"))
#: A function-local import of a project module says why on its line or the line above.
REASON = re.compile(r"#\s*lazy:\s*\S")
#: Packages the CLI must not import to print its help (the `spark` extra, the Kafka client).
HEAVY = ("pyspark", "pyarrow", "fastavro", "confluent_kafka")


@dataclass(frozen=True)
class ImportSite:
    """One import statement in a project module, resolved to full module names."""

    module: str
    path: Path
    rel: str  # the path from the repository root, for messages
    line: int
    end_line: int
    names: tuple[str, ...]  # what it names: ("confluent_kafka.admin", "keyguard.formats.types")
    targets: tuple[str, ...]  # the project modules among them
    local: bool  # inside a function (or lambda)
    type_checking: bool  # under `if TYPE_CHECKING:`

    def where(self) -> str:
        return f"{self.rel}:{self.line}"


def project_modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(("keyguard", *parts))] = path
    return mods


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The project module that `name` (a module, or a name inside one) lives in."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in mods:
            return ".".join(parts[:n])
    return None


def _named(module: str, is_package: bool, node: ast.Import | ast.ImportFrom,
           mods: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in mods else prefix for a in node.names]


def import_sites(root: Path = REPO, packages: Iterable[str] = PACKAGES) -> list[ImportSite]:
    mods = project_modules(root, packages)
    sites: list[ImportSite] = []
    for module, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, local: bool, tc: bool, module: str = module,
                  path: Path = path, is_package: bool = is_package) -> None:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = _named(module, is_package, node, mods)
                targets = {t for n in names if (t := _owner(n, mods)) and t != module}
                sites.append(ImportSite(module, path, path.relative_to(root).as_posix(),
                                        node.lineno, node.end_lineno or node.lineno,
                                        tuple(names), tuple(sorted(targets)), local, tc))
                return
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.body:
                    visit(child, local, True)
                for child in node.orelse:
                    visit(child, local, tc)
                return
            inner = local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for sub in ast.iter_child_nodes(node):
                visit(sub, inner, tc)

        visit(tree, False, False)
    return sites


def runtime_edges(sites: Iterable[ImportSite]) -> dict[str, dict[str, list[ImportSite]]]:
    edges: dict[str, dict[str, list[ImportSite]]] = {}
    for site in sites:
        if site.type_checking:
            continue
        for target in site.targets:
            edges.setdefault(site.module, {}).setdefault(target, []).append(site)
    return edges


def cycles(edges: dict[str, dict[str, list[ImportSite]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(edges):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def _in(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _package_of(module: str) -> str:
    """formats, guard or sparkio: the package under the `keyguard` root."""
    return module.split(".")[1]


def is_pure_core(module: str) -> bool:
    top = _package_of(module)
    return (top == "formats" and not _in(module, FORMATS_EDGE)) or (
        top == "guard" and not _in(module, GUARD_EDGE))


def _network(site: ImportSite) -> list[str]:
    return [n for n in site.names if _in(n, NETWORK)]


def network_paths(sites: list[ImportSite]) -> list[str]:
    """Each core module that loads a network client, with the chain of imports that does.

    What loads: the core module's own imports at any level (a function-local import runs when
    its function does), then whatever those modules import at module level, transitively. A
    function-local import inside an edge module (the registry opener's backends) is the edge's
    business: it runs only when the edge is asked for I/O.
    """
    direct: dict[str, str] = {}
    for site in sites:
        if not site.type_checking and _network(site) and site.module not in direct:
            direct[site.module] = f"{site.where()} imports {', '.join(_network(site))}"
    every = runtime_edges(sites)
    loads = runtime_edges(s for s in sites if not s.local)
    found = []
    for start in sorted({s.module for s in sites if is_pure_core(s.module)}):
        seen = {start: [start]}
        queue = [start]
        while queue:
            v = queue.pop(0)
            if v in direct:
                found.append(f"{start}: {' -> '.join(seen[v])} ({direct[v]})")
                break
            for w in sorted((every if v == start else loads).get(v, {})):
                if w not in seen:
                    seen[w] = [*seen[v], w]
                    queue.append(w)
    return found


def registry_openers(sites: list[ImportSite]) -> list[str]:
    """Core modules importing a registry backend or the opener, at any level."""
    return [f"{s.where()} imports {t}" for s in sites if is_pure_core(s.module)
            for t in s.targets if _in(t, REGISTRY_BACKENDS)]


#: What the rest of formats/ may import of formats/registry/: the interface (`Registry`,
#: `SchemaVersion`, the schema types), the options every registry format declares, and the
#: references model. The other modules of formats/registry/ are its edge: the backends, their
#: settings and opener, and registration (which builds on the plan and the codecs).
REGISTRY_INTERFACE = ("keyguard.formats.registry", "keyguard.formats.registry.options",
                      "keyguard.formats.registry.references")


def registry_floor_violations(sites: list[ImportSite]) -> list[str]:
    """formats/ modules below the registry's edge (the core, and the registry's interface
    modules themselves) importing a module of that edge, at any level."""
    out = []
    for s in sites:
        below = (is_pure_core(s.module) and _package_of(s.module) == "formats") or \
            s.module in REGISTRY_INTERFACE
        if not below:
            continue
        out += [f"{s.where()} imports {t}" for t in s.targets
                if _in(t, ("keyguard.formats.registry",)) and t not in REGISTRY_INTERFACE]
    return out


def _comments(path: Path) -> dict[int, str]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}


def unexplained_local_imports(sites: list[ImportSite]) -> list[str]:
    """Function-local imports of project modules without a `# lazy: <reason>` comment.

    The comment sits on the import's own line(s) or on the line above; one comment above a run
    of consecutive import lines covers the whole run.
    """
    lines_by_path: dict[Path, set[int]] = {}
    for site in sites:  # every import line, project or not: a run may mix them
        lines_by_path.setdefault(site.path, set()).update(range(site.line, site.end_line + 1))
    comments: dict[Path, dict[int, str]] = {}
    bad = []
    for site in sites:
        if not site.local or site.type_checking or not site.targets:
            continue
        notes = comments.setdefault(site.path, _comments(site.path))
        line = site.line
        while line - 1 in lines_by_path[site.path] and not any(
                REASON.search(notes.get(n, "")) for n in range(line, site.end_line + 1)):
            line -= 1  # climb the run of imports above to the comment that covers it
        if not any(REASON.search(notes.get(n, "")) for n in range(line - 1, site.end_line + 1)):
            bad.append(f"{site.where()} ({', '.join(site.targets)})")
    return bad


def layer_violations(sites: list[ImportSite]) -> list[str]:
    """formats/ imports neither guard/ nor sparkio/; guard/ does not import sparkio/."""
    above = {"formats": ("guard", "sparkio"), "guard": ("sparkio",), "sparkio": ()}
    return [f"{s.where()} imports {t}" for s in sites for t in s.targets
            if _package_of(t) in above[_package_of(s.module)]]


# --- the project's own graph ---------------------------------------------------------------

SITES = import_sites()



def test_no_import_cycles():
    found = cycles(runtime_edges(SITES))
    edges = runtime_edges(SITES)
    described = []
    for component in found:
        inside = [f"  {site.where()} {a} -> {b}" for a in component for b in component
                  for site in edges.get(a, {}).get(b, [])]
        described.append(" <-> ".join(component) + "\n" + "\n".join(inside))
    assert not found, "import cycles (function-local imports count):\n" + "\n".join(described)


def test_layers_formats_then_guard_then_sparkio():
    assert layer_violations(SITES) == []


def _code_strings(path: Path) -> Iterable[tuple[int, str]]:
    """The string constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def test_guard_names_no_package_above_it_even_by_string():
    """Commands of packages above guard/ come through the `keyguard.commands` entry points,
    not a module path written in guard/ (an import by string is still a dependency)."""
    named = [f"{path.relative_to(REPO)}:{line}"
             for mod, path in project_modules(REPO, ["guard"]).items()
             for line, text in _code_strings(path) if re.search(r"\bsparkio\b", text)]
    assert named == []


def test_contributed_commands_are_entry_points():
    text = (REPO / "pyproject.toml").read_text()
    assert '[project.entry-points."keyguard.commands"]' in text
    assert 'demo = "keyguard.sparkio.cli_commands:demo"' in text


def format_name_switches(root: Path = REPO) -> list[str]:
    """Comparisons of a format's name outside formats/: `fmt == "avro-confluent"`,
    `side.format in ("avro", ...)`. A format answers for itself (`format_factory(name)`:
    `uses_registry`, `frame`, `schema_type`, `key_family`), so nothing else asks its name."""
    found = []
    for package in ("guard", "sparkio"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                names = [n.attr if isinstance(n, ast.Attribute) else
                         n.id if isinstance(n, ast.Name) else "" for n in sides]
                texts = [c.value for n in sides for c in
                         ([n] if isinstance(n, ast.Constant) else
                          n.elts if isinstance(n, (ast.Tuple, ast.List, ast.Set)) else [])
                         if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                by_name = any(x in ("format", "key_format", "value_format", "format_name")
                              for x in names) and texts
                if "avro-confluent" in texts or by_name:
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_format_name_switches_outside_formats():
    assert format_name_switches() == []


def test_format_name_switches_are_found(tmp_path):
    (tmp_path / "guard").mkdir()
    (tmp_path / "sparkio").mkdir()
    (tmp_path / "guard" / "a.py").write_text(
        'if fmt == "avro-confluent":\n    pass\nif side.format in ("avro", "csv"):\n    pass\n'
        'if family == "json":\n    pass\n')
    assert format_name_switches(tmp_path) == ["guard/a.py:1", "guard/a.py:3"]


def test_pure_core_imports_no_network_client():
    assert network_paths(SITES) == []


def test_pure_core_opens_no_registry():
    assert registry_openers(SITES) == []


def test_formats_core_uses_only_the_registry_interface():
    assert registry_floor_violations(SITES) == []


def test_function_local_project_imports_say_why():
    bad = unexplained_local_imports(SITES)
    assert not bad, (f"{len(bad)} function-local imports of project modules give no reason; "
                     "hoist them, or add `# lazy: <why>` (e.g. `# lazy: CLI start-up`, "
                     "`# lazy: pyspark`; a lazy import still counts in a cycle):\n"
                     + "\n".join(bad))


#: Besides HEAVY, what help never needs: typer's pydantic-based coercion of option values (a
#: command's --help must not coerce `keyguard`'s own options, ~40 ms).
HELP_FREE = (*HEAVY, "pydantic")


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"], ["encode", "--help"]])
def test_cli_help_imports_no_heavy_package(args):
    code = ("import runpy, sys\n"
            f"sys.argv = ['keyguard', *{args!r}]\n"
            "try:\n    runpy.run_module('keyguard.guard.cli', run_name='__main__')\n"
            "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HELP_FREE)!r}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_cli_help_loads_no_format():
    """`keyguard --help` lists the formats and report formats by name (`formats/catalog.py`,
    `guard/render/__init__.py`) without loading a codec, a renderer's file reader or the
    compatibility checkers, and the commands by their summaries without importing any
    command's module."""
    from keyguard.guard import catalog as guard_catalog
    from keyguard.sparkio import cli as sparkio_cli

    commands = sorted({f.partition(":")[0] for f in [*guard_catalog.COMMANDS.values(),
                                                      *sparkio_cli.COMMANDS.values()]})
    code = ("import runpy, sys\n"
            "sys.argv = ['keyguard', '--help']\n"
            "try:\n    runpy.run_module('keyguard.sparkio.cli', run_name='__main__')\n"
            "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "print(sorted(m for m in sys.modules if m in {'keyguard.formats.codec', "
            "'keyguard.formats.avro_column_decoder', 'keyguard.guard.render.locate', "
            f"'keyguard.guard.compat', *{commands!r}}}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_help_lists_each_command_by_its_docstrings_first_paragraph():
    """The summaries `keyguard --help` lists without importing the commands are theirs."""
    import importlib
    import inspect

    from keyguard.guard import catalog as guard_catalog
    from keyguard.sparkio import cli as sparkio_cli

    summaries = {**guard_catalog.SUMMARIES, **sparkio_cli.SUMMARIES}
    commands = {**guard_catalog.COMMANDS, **sparkio_cli.COMMANDS}
    assert summaries.keys() == commands.keys()
    for name, where in commands.items():
        module, _, function = where.partition(":")
        doc = inspect.cleandoc(getattr(importlib.import_module(module), function).__doc__)
        assert summaries[name] == " ".join(doc.split("\n\n")[0].split()), name


#: What a Spark task runs imports for its job (a fresh Python worker imports it before its
#: first batch): the guard and the registry client run on the driver only.
DRIVER_ONLY = ("keyguard.sparkio.guarding", "keyguard.guard.check", "keyguard.guard.judge",
               "confluent_kafka.schema_registry")


@pytest.mark.parametrize("module", ["keyguard.sparkio.writer", "keyguard.sparkio.reader",
                                    "keyguard.sparkio.source"])
def test_task_modules_import_neither_the_guard_nor_a_registry_client(module):
    code = (f"import sys\nimport {module}\n"
            f"print(sorted(m for m in sys.modules if m in {DRIVER_ONLY!r}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


# --- the analysis itself, on a tiny package, so a broken analysis cannot pass silently -----

def _package(tmp_path: Path, files: dict[str, str]) -> list[ImportSite]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_sites(tmp_path, ["formats", "guard"])


def test_analysis_finds_each_kind_of_violation(tmp_path):
    sites = _package(tmp_path, {
        "formats/__init__.py": "",
        "formats/a.py": "from keyguard.formats.b import x\n",
        "formats/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from keyguard.guard import g\n"
                         "def f():\n    from keyguard.formats import a\n    return a\n"),
        "formats/c.py": ("def f():\n    # lazy: start-up\n    from keyguard.formats import a\n"
                         "    from keyguard.formats.b import x\n    import json\n"
                         "def h():\n    from . import b  # lazy: start-up\n"),
        "formats/registry/__init__.py": "import socket\n",
        "guard/__init__.py": "",
        "guard/g.py": "import keyguard.formats.c\n\ndef k():\n    from ..formats import registry\n",
        "guard/t.py": "def k():\n    import confluent_kafka.admin\n",
        "formats/registry/connect.py": "",
        "guard/v.py": "def f():\n    from keyguard.formats.registry.connect import open_registry\n",
        "formats/registry/references.py": "from keyguard.formats.registry import registration\n",
        "formats/registry/registration.py": "",
    })
    assert cycles(runtime_edges(sites)) == [["keyguard.formats.a", "keyguard.formats.b"]]
    assert layer_violations(sites) == ["formats/b.py:3 imports keyguard.guard.g"]
    assert [s.split(":")[0] for s in network_paths(sites)] == ["keyguard.guard.g",
                                                              "keyguard.guard.t"]
    assert unexplained_local_imports(sites) == ["formats/b.py:5 (keyguard.formats.a)",
                                                "guard/g.py:4 (keyguard.formats.registry)",
                                                "guard/v.py:2 (keyguard.formats.registry.connect)"]
    assert registry_openers(sites) == ["guard/v.py:2 imports keyguard.formats.registry.connect"]
    assert registry_floor_violations(sites) == [
        "formats/registry/references.py:1 imports keyguard.formats.registry.registration"]


# --- ARCHITECTURE.md's module list ---------------------------------------------------------

ARCHITECTURE = REPO / "ARCHITECTURE.md"
LISTED = re.compile(r"`((?:formats|guard|sparkio)(?:/[A-Za-z0-9_]+)*(?:\.py|/))`")


def documented_modules(text: str) -> set[str]:
    """Modules named in the module list: `formats/codec.py`; `formats/registry/` for a package."""
    section = text.split("## Modules", 1)[1].split("\n## ", 1)[0]
    return {"keyguard." + m.removesuffix("/").removesuffix(".py").replace("/", ".")
            for m in LISTED.findall(section)}


def test_every_module_is_in_architecture_md():
    missing = sorted(set(project_modules(REPO)) - documented_modules(ARCHITECTURE.read_text()))
    assert missing == [], f"add these modules to the module list of {ARCHITECTURE.name}"


def test_architecture_md_lists_only_modules_that_exist():
    extra = sorted(documented_modules(ARCHITECTURE.read_text()) - set(project_modules(REPO)))
    assert extra == [], f"{ARCHITECTURE.name} lists modules that do not exist"


def test_module_list_parsing():
    text = ("# x\n`formats/nope.py` outside\n## Modules\n- `formats/codec.py`: one\n"
            "- `formats/registry/`: pkg, `guard/`\n## Where to add\n`guard/x.py`\n")
    assert documented_modules(text) == {"keyguard.formats.codec", "keyguard.formats.registry",
                                      "keyguard.guard"}


# --- size: modules and functions a reader can hold in mind ---------------------------------

#: Lines a module may have; a longer one says why in its docstring ("Longer than 800 lines:").
MODULE_LINES = 800
#: Cyclomatic complexity (radon's, closures counted apart) no function may pass.
FUNCTION_COMPLEXITY = 25
#: Functions at radon's grades D to F (complexity 21 and above) the code may hold at most.
GRADE_D_OR_WORSE = 10
LONG_REASON = re.compile(r"Longer than \d+ lines: \S")


def long_modules(root: Path = REPO) -> list[str]:
    """Modules over MODULE_LINES lines whose docstring does not say why."""
    out = []
    for module, path in sorted(project_modules(root).items()):
        text = path.read_text()
        if text.count("\n") <= MODULE_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if not LONG_REASON.search(doc):
            out.append(f"{module}: {text.count(chr(10))} lines")
    return out


def complexities(root: Path = REPO) -> list[tuple[int, str]]:
    """(complexity, where) of every function and method, by radon's count."""
    from radon.complexity import cc_visit
    from radon.visitors import Function

    out = []
    for module, path in sorted(project_modules(root).items()):
        for f in cc_visit(path.read_text()):
            if isinstance(f, Function):  # methods too; a class's own total is not a function's
                out.append((f.complexity, f"{module}.{f.fullname} (line {f.lineno})"))
    return out


def test_no_module_is_longer_than_its_limit_without_a_reason():
    assert long_modules() == [], (
        f"split these modules, or say in the docstring why they are longer than "
        f"{MODULE_LINES} lines (\"Longer than {MODULE_LINES} lines: ...\")")


def test_no_function_is_too_complex_to_follow():
    pytest.importorskip("radon")
    found = complexities()
    worst = sorted(((c, w) for c, w in found if c > FUNCTION_COMPLEXITY), reverse=True)
    assert worst == [], f"split these functions (radon complexity above {FUNCTION_COMPLEXITY})"
    graded_d = sorted(((c, w) for c, w in found if c > 20), reverse=True)
    assert len(graded_d) <= GRADE_D_OR_WORSE, (
        f"{len(graded_d)} functions at radon grade D or worse (at most {GRADE_D_OR_WORSE}): "
        f"{graded_d}")


def test_size_checks_find_what_they_look_for(tmp_path):
    pytest.importorskip("radon")
    pkg = tmp_path / "formats"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(30))
    (pkg / "big.py").write_text('"""A module."""\n' + "x = 1\n" * (MODULE_LINES + 1)
                                + f"def f(x):\n{branches}    return -1\n")
    (pkg / "told.py").write_text(f'"""Longer than {MODULE_LINES} lines: one table."""\n'
                                 + "y = 2\n" * (MODULE_LINES + 1))
    assert long_modules(tmp_path) == [f"keyguard.formats.big: {MODULE_LINES + 64} lines"]
    assert max(complexities(tmp_path)) == (31, "keyguard.formats.big.f (line 803)")


if __name__ == "__main__":  # `python tests/test_architecture.py`: what still violates, listed
    edges = runtime_edges(SITES)
    for title, found in (
            ("import cycles", [" <-> ".join(c) for c in cycles(edges)]),
            ("layer violations", layer_violations(SITES)),
            ("core modules loading a network client", network_paths(SITES)),
            ("core modules opening a registry", registry_openers(SITES)),
            ("function-local project imports without `# lazy:`",
             unexplained_local_imports(SITES)),
            ("modules missing from ARCHITECTURE.md",
             sorted(set(project_modules(REPO)) - documented_modules(ARCHITECTURE.read_text()))),
            ("ARCHITECTURE.md modules that do not exist",
             sorted(documented_modules(ARCHITECTURE.read_text()) - set(project_modules(REPO))))):
        print(f"{title}: {len(found)}")
        for item in found:
            print(f"  {item}")
