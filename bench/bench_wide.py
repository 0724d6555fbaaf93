"""`keyguard encode` with very wide value schemas: the cost must grow linearly with the fields.

For each width, a record of `id` plus N nullable string fields is written as an Avro schema, and
one full row is encoded by a fresh `python -m guard.cli encode` process. Prints wall and CPU
seconds (CPU is what to compare: other processes on the machine inflate wall time) and the CPU
per 1000 fields, which stays flat when the cost is linear. Asserts nothing.

    python bench/bench_wide.py [--widths 2500,5000,10000,50000,200000] [--format json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def _run(cmd: list[str], stdin: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with stdin.open("rb") as f:
        done = subprocess.run(cmd, stdin=f, capture_output=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
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
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    print(f"{'fields':>8} {'wall s':>8} {'cpu s':>8} {'cpu ms/1k fields':>17}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in widths:
            key, value, row = _files(work, n)
            cmd = [sys.executable, "-m", "guard.cli", "encode", "--key-schema", str(key),
                   "--value-schema", str(value), "--value-format", args.format, "--row", "-"]
            wall, cpu = _run(cmd, row)
            print(f"{n:>8} {wall:>8.2f} {cpu:>8.2f} {1000 * cpu / (n / 1000):>17.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
