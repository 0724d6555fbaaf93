"""CLI start-up of one or more keyguard checkouts, side by side, against `python -c pass`.

    python bench/bench_startup.py [--root DIR ...] [--runs 10]

Every contender runs as a fresh process, round-robin (pass, A, B, pass, A, B, ...), so machine
load hits them alike; the table shows the median wall and CPU ms [min-max] of each and the
ratio of each median to `python -c pass`'s (CPU, user + system, moves less with other load).
Contenders per root: `keyguard --help`, `keyguard check --help` and a real `keyguard check` of
one topic against the file registry (schemas/ copied to a temp dir). Then, per root, the time
of every import `check --help` makes, from `python -X importtime` (median of --runs), and the
heavy packages the CLI imports for `--help` and `check --help`: none of pyspark, pyarrow,
fastavro, confluent_kafka may be there (main at 3e90b94 imports none of them). Give two
checkouts to compare before and after, both made alike (e.g. `git archive` of each commit into
/tmp: a worktree elsewhere measured faster for reasons not found). keyguard has no
`--version`: `--help` is its cheapest command. Timing is only printed, never asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from harness import importable  # noqa: E402

HEAVY = ("pyspark", "pyarrow", "fastavro", "confluent_kafka", "pandas", "numpy", "httpx",
         "requests")
TOPIC = "pageviews_per_region"


def _env(root: Path) -> dict[str, str]:
    """PYTHONPATH that imports checkout `root`'s keyguard (`harness.importable`)."""
    tree = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
    where = Path(tempfile.gettempdir()) / f"keyguard-startup-{tree}"
    if not where.exists():
        importable(root.resolve(), where)
    return {**os.environ, "PYTHONPATH": str(where)}


def _time(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def _script(root: Path) -> str:
    """The module the `keyguard` script runs in checkout `root` (`keyguard.sparkio.cli` since it
    assembles guard's and sparkio's commands; `keyguard.guard.cli` before)."""
    cli = (root / "sparkio" / "cli.py")
    if cli.exists() and "def main" in cli.read_text():
        return "keyguard.sparkio.cli"
    return "keyguard.guard.cli"


def _importtime(root: Path, args: list[str], cwd: Path) -> tuple[int, set[str]]:
    """Microseconds of every import the command makes (the cumulative times of the top-level
    imports: whichever module imports typer first counts it, so no one module's is compared)
    and the heavy top-level packages imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", _script(root), *args],
                          cwd=cwd, capture_output=True, text=True, env=_env(root))
    cumulative, heavy = 0, set()
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        _, cum, raw = line.split("|")
        name = raw.strip()
        if raw.startswith(" ") and not raw.startswith("  "):  # depth 0: one space after "|"
            cumulative += int(cum)
        if name.split(".")[0] in HEAVY:
            heavy.add(name.split(".")[0])
    return cumulative, heavy


def _cell(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:7.1f} [{min(xs) * 1000:.0f}-{max(xs) * 1000:.0f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--root", action="append", type=Path,
                    help="a keyguard checkout (repeatable; default: this one)")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    roots = [r.resolve() for r in (args.root or [REPO])]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(roots[0] / "schemas", work / "schemas")
        key = work / f"schemas/subjects/{TOPIC}-key/v1.avsc"
        value = work / f"schemas/subjects/{TOPIC}-value/v1.avsc"

        def commands(root: Path) -> dict[str, list[str]]:
            cli = [sys.executable, "-m", _script(root)]
            return {
                "--help": [*cli, "--help"],
                "check --help": [*cli, "check", "--help"],
                "check (1 topic, file registry)": [*cli, "check", "--topic", TOPIC,
                                                   "--key-schema", str(key),
                                                   "--value-schema", str(value)],
            }

        base_cmd = [sys.executable, "-c", "pass"]
        contenders = [(f"{label} @ {root}", cmd, _env(root))
                      for root in roots for label, cmd in commands(root).items()]
        for _, cmd, env in contenders:  # warm the OS file cache and the .pyc files
            _time(cmd, work, env)
        times: dict[str, list[float]] = {"python -c pass": []}
        cpus: dict[str, list[float]] = {"python -c pass": []}
        load = [os.getloadavg()[0]]
        for _ in range(args.runs):
            for name, cmd, env in [("python -c pass", base_cmd, dict(os.environ)), *contenders]:
                wall, cpu = _time(cmd, work, env)
                times.setdefault(name, []).append(wall)
                cpus.setdefault(name, []).append(cpu)
        load.append(os.getloadavg()[0])
        base = statistics.median(times["python -c pass"])
        base_cpu = statistics.median(cpus["python -c pass"])
        print(f"load average {min(load):.2f}-{max(load):.2f}; {args.runs} runs each, round-robin;"
              f" python {sys.version.split()[0]}; CPU = user + system of the process (less "
              "sensitive to other load than wall)")
        print("| contender | wall ms median [min-max] | / python -c pass | CPU ms median "
              "[min-max] | / python -c pass |\n|---|---|---|---|---|")
        for name, xs in times.items():
            print(f"| {name} | {_cell(xs)} | {statistics.median(xs) / base:.2f}x | "
                  f"{_cell(cpus[name])} | {statistics.median(cpus[name]) / base_cpu:.2f}x |")
        print()
        print("| root | all imports µs (check --help, median) | heavy imports: --help |"
              " check --help |\n|---|---|---|---|")
        for root in roots:
            cums = [_importtime(root, ["check", "--help"], work)[0] for _ in range(args.runs)]
            _, heavy_help = _importtime(root, ["--help"], work)
            _, heavy_check = _importtime(root, ["check", "--help"], work)
            print(f"| {root} | {statistics.median(cums):,.0f} | "
                  f"{', '.join(sorted(heavy_help)) or 'none'} | "
                  f"{', '.join(sorted(heavy_check)) or 'none'} |")


if __name__ == "__main__":
    main()
