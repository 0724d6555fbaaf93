"""`keyguard encode` with very wide value schemas: the cost must grow linearly with the fields.

For each width, a record of `id` plus N nullable string fields is written as an Avro schema, and
one full row is encoded by a fresh `python -m keyguard.guard.cli encode` process. Prints wall and
CPU seconds (CPU is what to compare: other processes on the machine inflate wall time) and the CPU
per 1000 fields, which stays flat when the cost is linear. Asserts nothing.

    python bench/bench_wide.py [--widths 2500,5000,10000,50000,200000] [--format json]
        [--baseline DIR] [--repeat 3] [--timeout 120]

With `--baseline DIR` (a checkout of another keyguard, e.g. `git worktree add /tmp/base REV`)
both contenders run alternately (A B A B ...), `--repeat` times each, and the table shows the
median CPU seconds [min-max] of each side by side with their ratio. A run that exceeds
`--timeout` seconds is shown as `>T`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _files(work: Path, n: int) -> tuple[Path, Path, Path]:
    key = work / "k.avsc"
    key.write_text(json.dumps({"type": "record", "name": "k",
                               "fields": [{"name": "id", "type": "long"}]}))
    fields = [{"name": "id", "type": "long"}] + [
        {"name": f"f{i}", "type": ["null", "string"], "default": None} for i in range(n)]
    value = work / f"v{n}.avsc"
    value.write_text(json.dumps({"type": "record", "name": "v", "fields": fields}))
    row = work / f"row{n}.json"
    row.write_text(json.dumps({"id": 1, **{f"f{i}": "x" for i in range(n)}}))
    return key, value, row


def _run(cmd: list[str], stdin: Path, root: Path = REPO,
         timeout: float | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one run; CPU is inf when it did not finish within `timeout`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with stdin.open("rb") as f:
        try:
            done = subprocess.run(cmd, stdin=f, capture_output=True, timeout=timeout,
                                  env={**os.environ, "PYTHONPATH": str(root)}, cwd=root)
        except subprocess.TimeoutExpired:
            return float("inf"), float("inf")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({done.returncode}): "
                         f"{done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="2500,5000,10000,50000,200000")
    ap.add_argument("--format", default="json", help="the value format (json, csv, avro)")
    ap.add_argument("--baseline", type=Path, help="another checkout to compare with")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    if args.baseline is not None:
        compare(widths, args.format, args.baseline.resolve(), args.repeat, args.timeout)
        return
    print(f"{'fields':>8} {'wall s':>8} {'cpu s':>8} {'cpu ms/1k fields':>17}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in widths:
            key, value, row = _files(work, n)
            cmd = [sys.executable, "-m", "keyguard.guard.cli", "encode", "--key-schema", str(key),
                   "--value-schema", str(value), "--value-format", args.format, "--row", "-"]
            wall, cpu = _run(cmd, row)
            print(f"{n:>8} {wall:>8.2f} {cpu:>8.2f} {1000 * cpu / (n / 1000):>17.1f}",
                  flush=True)


def _cell(values: list[float], timeout: float) -> str:
    if all(v == float("inf") for v in values):
        return f">{timeout:.0f}".rjust(20)
    finite = sorted(v if v != float("inf") else timeout for v in values)
    med = statistics.median(finite)
    return f"{med:.2f} [{finite[0]:.2f}-{finite[-1]:.2f}]".rjust(20)


def compare(widths: list[int], fmt: str, baseline: Path, repeat: int, timeout: float) -> None:
    """Baseline and this checkout alternately, `repeat` runs each; median CPU side by side."""
    print(f"load average {os.getloadavg()[0]:.2f}; CPU seconds, median [min-max] of {repeat}")
    print(f"{'fields':>8} {'baseline':>20} {'this':>20} {'this/baseline':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in widths:
            key, value, row = _files(work, n)
            cmd = [sys.executable, "-m", "keyguard.guard.cli", "encode", "--key-schema", str(key),
                   "--value-schema", str(value), "--value-format", fmt, "--row", "-"]
            runs: dict[Path, list[float]] = {baseline: [], REPO: []}
            for _ in range(repeat):
                for root in (baseline, REPO):
                    if runs[root] and runs[root][-1] == float("inf"):
                        runs[root].append(float("inf"))  # it timed out once: once is enough
                        continue
                    runs[root].append(_run(cmd, row, root, timeout)[1])
            base = statistics.median(runs[baseline])
            this = statistics.median(runs[REPO])
            ratio = f"{this / base:.3f}" if base != float("inf") else f"<{this / timeout:.3f}"
            print(f"{n:>8} {_cell(runs[baseline], timeout)} {_cell(runs[REPO], timeout)} "
                  f"{ratio:>14}", flush=True)


if __name__ == "__main__":
    main()
