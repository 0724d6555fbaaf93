"""`keyguard check` of one topic against the file registry, as a ratio to `python -c pass`.

Every run is a fresh process; the contenders alternate after the same warm-up (bench/harness).
Two start-up conditions, each with its own baseline:
- warm: a copy of keyguard's source whose __pycache__ was compiled beforehand (an installed
  package, a second run);
- cold: a copy without __pycache__ and PYTHONDONTWRITEBYTECODE=1, so every run compiles
  keyguard's modules again (a read-only install, a fresh container).
Third-party packages are the venv's either way. Every run of `check` must print the same output
with the same exit code. Goal: at most 4x. Prints a markdown table; asserts nothing.

    python bench/bench_cli.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def timed(cmd: list[str], cwd: Path, env: Mapping[str, str], *, digest: bool) -> Run:
    """One fresh process: wall time, its own peak RSS (wait4), a digest of what it printed."""
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
    return Run(elapsed, text_digest(code, printed) if digest else "", peak)


def source_copy(into: Path, *, compiled: bool) -> Path:
    """keyguard's packages copied without __pycache__; compiled once when `compiled`."""
    into.mkdir()
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, into / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if compiled:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(into)], check=True)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "schemas", work / "schemas")
        key = work / "schemas/subjects/pageviews_per_region-key/v1.avsc"
        value = work / "schemas/subjects/pageviews_per_region-value/v1.avsc"
        check = [sys.executable, "-m", "sparkio.cli", "check", "--topic", "pageviews_per_region",
                 "--key-schema", str(key), "--value-schema", str(value)]
        baseline = [sys.executable, "-c", "pass"]
        tables = []
        for mode, compiled in (("warm", True), ("cold", False)):
            src = source_copy(work / f"src-{mode}", compiled=compiled)
            env = {**os.environ, "PYTHONPATH": str(src)}
            if not compiled:
                env["PYTHONDONTWRITEBYTECODE"] = "1"
            else:
                env.pop("PYTHONDONTWRITEBYTECODE", None)
            contenders = [
                Contender("python -c pass", lambda env=env: timed(baseline, work, env,
                                                                  digest=False)),
                Contender("keyguard check (1 topic)",
                          lambda env=env: timed(check, work, env, digest=True)),
            ]
            before = load_average()
            alternate(contenders, runs=args.runs, warmup=2)
            if not compiled:  # nothing may have written bytecode into the cold copy
                assert not list(src.rglob("__pycache__")), "the cold copy got __pycache__"
            tables.append(table(
                contenders, baseline="python -c pass", higher_is_better=False,
                ratio_label="x python -c pass (goal <= 4x)", load=(before, load_average()),
                title=f"{mode} start: "
                      + ("compiled __pycache__" if compiled
                         else "no __pycache__, PYTHONDONTWRITEBYTECODE=1")))
    print("\n\n".join(tables))


if __name__ == "__main__":
    main()
