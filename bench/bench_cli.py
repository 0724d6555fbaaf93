"""`keyguard check` of one topic against the file registry, as a ratio to `python -c pass`.

Every run is a fresh process; the contenders alternate after the same warm-up (bench/harness).
Two start-up conditions, each with its own baseline:
- warm: a copy of keyguard's source whose __pycache__ was compiled beforehand (an installed
  package, a second run);
- cold: a copy without __pycache__ and PYTHONDONTWRITEBYTECODE=1, so every run compiles
  keyguard's modules again (a read-only install, a fresh container).
Third-party packages are the venv's either way. Every run of `check` must print the same output
with the same exit code. Goal: at most 4x. Prints a markdown table per condition; asserts
nothing. Give `--root` twice to compare two checkouts in the same alternated runs (before and
after a change: `--root /path/to/baseline --root .`); each row's ratio is to `python -c pass`.
Wall time moves with other load on the machine, so each table is followed by the median CPU
time (user + system) of each contender, which moves less.

    python bench/bench_cli.py [--runs 15] [--root DIR ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
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
)

PACKAGES = ("formats", "guard", "sparkio")
WARMUP = 2


def timed(cmd: list[str], cwd: Path, env: Mapping[str, str], *, digest: bool,
          cpu: list[float]) -> Run:
    """One fresh process: wall time, its own peak RSS (wait4), a digest of what it printed;
    its CPU seconds (user + system) are appended to `cpu`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # reaps it: its own rusage, not the sum
        elapsed = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        printed, errors = out.read(), err.read()
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): {errors.decode()}")
    peak = child_peak_rss(usage)
    cpu.append(usage.ru_utime + usage.ru_stime)
    return Run(elapsed, text_digest(code, printed) if digest else "", peak)


def source_copy(root: Path, into: Path, *, compiled: bool) -> Path:
    """keyguard's packages of checkout `root` copied without __pycache__; compiled once when
    `compiled`."""
    into.mkdir()
    for pkg in PACKAGES:
        shutil.copytree(root / pkg, into / pkg,
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
    """The module the `keyguard` script runs in checkout `root` (`sparkio.cli` since it
    assembles guard's and sparkio's commands; `guard.cli` before)."""
    cli = root / "sparkio" / "cli.py"
    return "sparkio.cli" if cli.exists() and "def main" in cli.read_text() else "guard.cli"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--root", action="append", type=Path,
                    help="a keyguard checkout (repeatable; default: this one)")
    args = ap.parse_args()
    roots = [r.resolve() for r in (args.root or [REPO])]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "schemas", work / "schemas")
        key = work / "schemas/subjects/pageviews_per_region-key/v1.avsc"
        value = work / "schemas/subjects/pageviews_per_region-value/v1.avsc"
        args_check = ["check", "--topic", "pageviews_per_region",
                      "--key-schema", str(key), "--value-schema", str(value)]
        baseline = [sys.executable, "-c", "pass"]
        tables = []
        for mode, compiled in (("warm", True), ("cold", False)):
            env = dict(os.environ)
            if not compiled:
                env["PYTHONDONTWRITEBYTECODE"] = "1"
            else:
                env.pop("PYTHONDONTWRITEBYTECODE", None)
            cpu: dict[str, list[float]] = {}
            contenders = [contender("python -c pass", baseline, work, env, cpu, digest=False)]
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
