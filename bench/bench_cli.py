"""`keyguard check` of one topic against the file registry, as a ratio to `python -c pass`.

Both run as fresh processes, alternating, in the same run, so machine load hits both alike.
Goal: at most 4x. Prints the medians and the ratio; asserts nothing.

    python bench/bench_cli.py [--runs 15]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _time(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode()}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "schemas", work / "schemas")
        key = work / "schemas/subjects/pageviews_per_region-key/v1.avsc"
        value = work / "schemas/subjects/pageviews_per_region-value/v1.avsc"
        check = [sys.executable, "-m", "guard.cli", "check", "--topic", "pageviews_per_region",
                 "--key-schema", str(key), "--value-schema", str(value)]
        baseline = [sys.executable, "-c", "pass"]
        _time(check, work)  # warm the OS file cache and .pyc files
        base_t, check_t = [], []
        for _ in range(args.runs):
            base_t.append(_time(baseline, work))
            check_t.append(_time(check, work))
    b, c = statistics.median(base_t), statistics.median(check_t)
    print(f"python -c pass           median {b * 1000:7.1f} ms  ({args.runs} runs)")
    print(f"keyguard check (1 topic) median {c * 1000:7.1f} ms  ({args.runs} runs)")
    print(f"ratio check / baseline   {c / b:.2f}x   (goal: at most 4x)")


if __name__ == "__main__":
    main()
