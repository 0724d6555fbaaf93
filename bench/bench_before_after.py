"""One benchmark script, run against two keyguard trees alternately: before and after a change.

    python bench/bench_before_after.py --before ../keyguard-before --after . \
        [--script bench/bench_writer.py] [--runs 3] [-- --rows 300000]

The script is always the BEFORE tree's copy (or the one an absolute --script names), so both sides
run the same benchmark code and only the library differs: each side gets a shadow directory whose
formats/, guard/, sparkio/, tests/ and schemas/ link to its tree and whose bench/ holds a copy of
the script's bench/ modules (the script, bench/harness.py and the other helpers it imports).
Runs alternate (before, after, before, ...), each a fresh process. Every line of the script's
output that reports `rows/s` (bench_writer's table, bench_json's and bench_avro_confluent's
lines) is collected; the table shows each line's median rows/s [min-max] per side and
after / before. Also prints the load average: compare only runs made under similar load.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

LINKED = ("formats", "guard", "sparkio", "tests", "schemas", "pyproject.toml")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import importable  # noqa: E402

#: bench_writer: `name   secs   rows/s`; bench_json / bench_avro_confluent: `name: N rows/s`.
TABLE_ROW = re.compile(r"^(?P<name>\S.*?)\s{2,}(?P<secs>\d+\.\d+)\s+(?P<rate>[\d,]+)\s*$")
RATE_LINE = re.compile(r"^(?P<name>\S.*?)\s*:?\s+(?P<rate>[\d,]+) rows/s")


def shadow(tree: Path, script: Path, where: Path) -> Path:
    where.mkdir(parents=True)
    for name in LINKED:
        if (tree / name).exists():
            (where / name).symlink_to(tree / name)
    if (tree / "keyguard" / "__init__.py").exists():
        importable(tree, where)  # the installed layout, before any installed keyguard
    (where / "bench").mkdir()
    for helper in script.parent.glob("*.py"):  # the script and what it imports (harness, ...)
        (where / "bench" / helper.name).write_bytes(helper.read_bytes())
    return where / "bench" / script.name


def rates(output: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in output.splitlines():
        m = TABLE_ROW.match(line) or RATE_LINE.match(line)
        if m:
            out[m.group("name").strip().rstrip(":").strip()] = float(m.group("rate")
                                                                        .replace(",", ""))
    return out


def cell(xs: list[float]) -> str:
    return f"{statistics.median(xs):,.0f} [{min(xs):,.0f}-{max(xs):,.0f}]" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--script", default="bench/bench_writer.py",
                    help="path inside the BEFORE tree")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("args", nargs=argparse.REMAINDER, help="after --: the script's arguments")
    a = ap.parse_args()
    extra = a.args[1:] if a.args[:1] == ["--"] else a.args
    results: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    loads = []
    with tempfile.TemporaryDirectory(prefix="keyguard-before-after-") as tmp:
        scripts = {side: shadow(tree.resolve(), a.before.resolve() / a.script, Path(tmp) / side)
                   for side, tree in (("before", a.before), ("after", a.after))}
        for run in range(a.runs):
            for side, script in scripts.items():
                loads.append(os.getloadavg()[0])
                env = {**os.environ, "PYTHONPATH": str(script.parents[1])}
                done = subprocess.run([sys.executable, str(script), *extra], capture_output=True,
                                      text=True, cwd=script.parents[1], env=env)
                if done.returncode != 0:
                    raise SystemExit(f"{side} run {run + 1} failed ({done.returncode}):\n"
                                     f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
                for name, rate in rates(done.stdout).items():
                    results[side].setdefault(name, []).append(rate)
                print(f"run {run + 1} {side}: " + ", ".join(
                    f"{n} {r:,.0f}" for n, r in rates(done.stdout).items()), flush=True)
    print(f"\n{a.script} {' '.join(extra)}; {a.runs} runs each, alternating; load average "
          f"{min(loads):.1f}-{max(loads):.1f}")
    print(f"| rows/s | before {a.before} | after {a.after} | after / before |\n|---|---|---|---|")
    for name in results["before"]:
        b, f = results["before"][name], results["after"].get(name, [])
        ratio = f"{statistics.median(f) / statistics.median(b):.2f}x" if b and f else "-"
        print(f"| {name} | {cell(b)} | {cell(f)} | {ratio} |")


if __name__ == "__main__":
    main()
