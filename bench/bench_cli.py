"""`keyguard check` of one topic against the file registry, as a ratio to `python -c pass`.

Every run is a fresh process; the contenders alternate after the same warm-up (bench/harness).
Two start-up conditions, each with its own baseline:
- warm: a copy of keyguard's source whose __pycache__ was compiled beforehand (an installed
  package, a second run);
- cold: a copy without __pycache__ and PYTHONDONTWRITEBYTECODE=1, so every run compiles
  keyguard's modules again (a read-only install, a fresh container).
Third-party packages are the venv's either way. Every run of `check` must print the same output
with the same exit code. Goal: at most 4x. A third contender, `python -c "import typer, fastavro"`
(with the collector's threshold the `keyguard` script sets), is the floor no check can go under:
the interpreter and the two third-party packages every check imports whole (typer parses the
command line; fastavro parses and checks the Avro schemas), with nothing of keyguard; what a
check adds to it is keyguard's (importing, or compiling when cold, its modules, and the check).
Prints a markdown table per condition; asserts nothing. Give `--root` twice to compare two
checkouts in the same alternated runs (before and after a change: `--root /path/to/baseline
--root .`); each row's ratio is to `python -c pass`.
Wall time moves with other load on the machine, so each table is followed by the median CPU
time (user + system) of each contender, which moves less.

`--importtime` prints instead what the start-up of the last root is made of, warm and cold:
the median self-time of every imported module (`python -X importtime`, `--runs` runs), summed
by who brought it in (the third-party package or keyguard module at the top of its import
chain; the stdlib modules a package imports count as that package's), and keyguard's slowest
modules. Import times include `-X importtime`'s own overhead, so they add up to more than the
wall time of a plain run.

    python bench/bench_cli.py [--runs 15] [--root DIR ...] [--importtime]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402
    Contender,
    Run,
    alternate,
    child_peak_rss,
    load_average,
    table,
    text_digest,
    timed_process,
)

PACKAGES = ("formats", "guard", "sparkio")
#: The third-party imports every check makes, without keyguard: the floor under a check.
FLOOR = [sys.executable, "-c",
         "import gc; gc.set_threshold(10_000, *gc.get_threshold()[1:]); import typer, fastavro"]
FLOOR_NAME = "floor: import typer, fastavro (no keyguard)"
WARMUP = 2


def timed(cmd: list[str], cwd: Path, env: Mapping[str, str], *, digest: bool,
          cpu: list[float]) -> Run:
    """One fresh process: wall time, its own peak RSS (wait4), a digest of what it printed;
    its CPU seconds (user + system) are appended to `cpu`."""
    elapsed, code, printed, errors, usage = timed_process(cmd, cwd=cwd, env=dict(env))
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): {errors.decode()}")
    peak = child_peak_rss(usage)
    cpu.append(usage.ru_utime + usage.ru_stime)
    return Run(elapsed, text_digest(code, printed) if digest else "", peak)


def source_copy(root: Path, into: Path, *, compiled: bool) -> Path:
    """keyguard's packages of checkout `root` copied without __pycache__; compiled once when
    `compiled`."""
    into.mkdir()
    base = into
    if (root / "keyguard" / "__init__.py").exists():  # the installed layout: one import root
        base = into / "keyguard"
        shutil.copytree(root / "keyguard", base,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for pkg in PACKAGES:
        shutil.copytree(root / pkg, base / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if compiled:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(into)], check=True)
    return into


def contender(name: str, cmd: list[str], cwd: Path, env: dict[str, str],
              cpu: dict[str, list[float]], *, digest: bool) -> Contender:
    """`cmd` as a contender; the CPU seconds of its runs go to `cpu[name]`."""
    seconds = cpu.setdefault(name, [])
    return Contender(name, lambda: timed(cmd, cwd, env, digest=digest, cpu=seconds))


def script(root: Path) -> str:
    """The module the `keyguard` script runs in checkout `root` (`keyguard.sparkio.cli` since it
    assembles guard's and sparkio's commands; `keyguard.guard.cli` before)."""
    cli = root / "sparkio" / "cli.py"
    if cli.exists() and "def main" in cli.read_text():
        return "keyguard.sparkio.cli"
    return "keyguard.guard.cli"


def import_self_times(cmd: list[str], cwd: Path, env: Mapping[str, str], runs: int,
                      ) -> dict[str, tuple[float, str]]:
    """Median self-time (ms) of each module `cmd` imports, with the owner it counts toward:
    the nearest of keyguard's packages or of site-packages' on its import chain (itself
    first), else the interpreter's start-up."""
    times: dict[str, list[float]] = {}
    owners: dict[str, str] = {}
    third_party = _third_party()
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-X", "importtime", *cmd[1:]], cwd=cwd,
                              env=dict(env), capture_output=True, text=True)
        chain: list[str] = []
        # importtime prints a module after its imports, nested by indentation: walk it back
        lines = [ln for ln in done.stderr.splitlines()
                 if ln.startswith("import time:") and "|" in ln and "self [us]" not in ln]
        for line in reversed(lines):
            self_us, _, name = (part for part in line[len("import time:"):].split("|"))
            depth = (len(name) - len(name.lstrip())) // 2
            name = name.strip()
            del chain[depth:]
            chain.append(name)
            # the nearest package on the chain, the module itself first
            owner = next((c.split(".")[0] for c in reversed(chain)
                          if c.split(".")[0] in PACKAGES + third_party), "")
            owners.setdefault(name, "keyguard (and the stdlib it imports)"
                              if owner in PACKAGES else owner or "python start-up (site)")
            times.setdefault(name, []).append(int(self_us) / 1000)
    return {name: (statistics.median(xs), owners[name]) for name, xs in times.items()}


def _third_party() -> tuple[str, ...]:
    """Top-level names importable from site-packages (typer, fastavro, ...)."""
    import site

    names = set()
    for d in site.getsitepackages():
        for p in Path(d).glob("*"):
            if p.suffix in ("", ".py", ".so") and not p.name.startswith(("_", ".")):
                names.add(p.name.split(".")[0])
    return tuple(sorted(names - {"formats", "guard", "sparkio"}))


def importtime_tables(root: Path, work: Path, args_check: list[str], runs: int) -> str:
    """What a check's start-up is made of, warm and cold (see the module's docstring)."""
    out = []
    for mode, compiled in (("warm", True), ("cold", False)):
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if not compiled:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        src = source_copy(root, work / f"src-importtime-{mode}", compiled=compiled)
        found = import_self_times([sys.executable, "-m", script(root), *args_check], work,
                                  {**env, "PYTHONPATH": str(src)}, runs)
        by_owner: dict[str, list[float]] = {}
        for ms, owner in found.values():
            by_owner.setdefault(owner, []).append(ms)
        total = sum(ms for ms, _ in found.values())
        out += [f"**{mode}: import self-time by who imports it** (`-X importtime`, median of "
                f"{runs}; all imports {total:.1f} ms)", "",
                "| imported by | modules | self ms |", "|---|---|---|"]
        for owner, xs in sorted(by_owner.items(), key=lambda kv: -sum(kv[1])):
            if sum(xs) >= 0.5:
                out.append(f"| {owner} | {len(xs)} | {sum(xs):.1f} |")
        mine = sorted(((ms, name) for name, (ms, owner) in found.items()
                       if name.split(".")[0] in PACKAGES), reverse=True)
        out += ["", f"keyguard's {len(mine)} modules, the slowest: " + ", ".join(
            f"{name} {ms:.1f}" for ms, name in mine[:12]), ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--root", action="append", type=Path,
                    help="a keyguard checkout (repeatable; default: this one)")
    ap.add_argument("--importtime", action="store_true",
                    help="print what the last root's start-up is made of, warm and cold")
    args = ap.parse_args()
    roots = [r.resolve() for r in (args.root or [REPO])]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "schemas", work / "schemas")
        key = work / "schemas/subjects/pageviews_per_region-key/v1.avsc"
        value = work / "schemas/subjects/pageviews_per_region-value/v1.avsc"
        args_check = ["check", "--topic", "pageviews_per_region",
                      "--key-schema", str(key), "--value-schema", str(value)]
        if args.importtime:
            print(importtime_tables(roots[-1], work, args_check, args.runs))
            return
        baseline = [sys.executable, "-c", "pass"]
        tables = []
        for mode, compiled in (("warm", True), ("cold", False)):
            env = dict(os.environ)
            if not compiled:
                env["PYTHONDONTWRITEBYTECODE"] = "1"
            else:
                env.pop("PYTHONDONTWRITEBYTECODE", None)
            cpu: dict[str, list[float]] = {}
            contenders = [contender("python -c pass", baseline, work, env, cpu, digest=False),
                          contender(FLOOR_NAME, FLOOR, work, env, cpu, digest=False)]
            copies = []
            for n, root in enumerate(roots):
                src = source_copy(root, work / f"src-{mode}-{n}", compiled=compiled)
                copies.append(src)
                contenders.append(contender(
                    "keyguard check (1 topic)" if len(roots) == 1
                    else f"keyguard check (1 topic) @ {root}",
                    [sys.executable, "-m", script(root), *args_check], work,
                    {**env, "PYTHONPATH": str(src)}, cpu, digest=True))
            before = load_average()
            alternate(contenders, runs=args.runs, warmup=WARMUP)
            if not compiled:  # nothing may have written bytecode into the cold copies
                for src in copies:
                    assert not list(src.rglob("__pycache__")), "a cold copy got __pycache__"
            measured = {name: xs[WARMUP:] for name, xs in cpu.items()}  # warm-ups come first
            base_cpu = statistics.median(measured["python -c pass"])
            cpu_lines = "; ".join(
                f"{name} {statistics.median(xs) * 1000:.0f} ms "
                f"({statistics.median(xs) / base_cpu:.2f}x)" for name, xs in measured.items())
            tables.append(table(
                contenders, baseline="python -c pass", higher_is_better=False,
                ratio_label="x python -c pass (goal <= 4x)", load=(before, load_average()),
                title=f"{mode} start: "
                      + ("compiled __pycache__" if compiled
                         else "no __pycache__, PYTHONDONTWRITEBYTECODE=1"))
                + f"\nCPU (user + system), median: {cpu_lines}")
    print("\n\n".join(tables))


if __name__ == "__main__":
    main()
