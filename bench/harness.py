"""The one harness every benchmark in bench/ shares, so that its numbers can be trusted.

- Contenders alternate (ABAB...), after the same warm-up each, so that a slow minute of a
  shared machine hits all of them alike; every contender runs at least three times.
- Each run reports its wall time, what it wrote (a digest: the same bytes or it does not
  count) and the peak memory of the fresh process that did the work.
- The result is a markdown table: median [min-max] per contender, its ratio to the baseline
  contender, the load average before and after, and whether every digest matched; and, when
  the runs measured it, the CPU the whole machine spent during each run (core-seconds, from
  /proc/stat: on a machine whose cores are all busy, wall time follows CPU).

The pure half (median, ratio, table, digests) is tested in tests/test_bench_harness.py; the
runs themselves never are (timing belongs in benchmarks, not in asserts).
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Fewest measured runs per contender: a median of fewer says nothing about spread.
MIN_RUNS = 3


@dataclass(frozen=True)
class Run:
    """One measured run of one contender."""

    seconds: float
    #: What the run produced (records written, output printed), equal across contenders.
    digest: str = ""
    #: Peak resident memory of the fresh process(es) that did the work, in bytes (0: unknown).
    peak_rss_bytes: int = 0
    #: CPU seconds every process on the machine spent during the timed part (0: unknown).
    cpu_s: float = 0.0


@dataclass
class Contender:
    name: str
    run: Callable[[], Run]
    runs: list[Run] = field(default_factory=list)

    @property
    def seconds(self) -> list[float]:
        return [r.seconds for r in self.runs]


@dataclass(frozen=True)
class Spread:
    """median [min-max] of a sample."""

    median: float
    low: float
    high: float

    @staticmethod
    def of(sample: Sequence[float]) -> Spread:
        if not sample:
            raise ValueError("no runs to summarize")
        return Spread(statistics.median(sample), min(sample), max(sample))

    def show(self, scale: float = 1.0, digits: int = 2) -> str:
        return (f"{self.median * scale:.{digits}f} "
                f"[{self.low * scale:.{digits}f}-{self.high * scale:.{digits}f}]")


def ratio(baseline_s: float, contender_s: float, *, higher_is_better: bool = True) -> float:
    """How a contender compares with the baseline, as docs/benchmarks.md states its goals.

    Throughput goals ("the writer reaches 0.8x of the bare producer") are baseline time over
    contender time; cost goals ("check takes at most 4x python -c pass") are the inverse.
    """
    if baseline_s <= 0 or contender_s <= 0:
        raise ValueError(f"times must be positive, got {baseline_s} and {contender_s}")
    return baseline_s / contender_s if higher_is_better else contender_s / baseline_s


def alternate(contenders: Sequence[Contender], *, runs: int = MIN_RUNS, warmup: int = 1,
              between: Callable[[], None] | None = None) -> None:
    """Warm every contender up alike, then run them ABAB..., `runs` times each."""
    if runs < MIN_RUNS:
        raise ValueError(f"at least {MIN_RUNS} runs per contender, got {runs}")
    for _ in range(warmup):
        for c in contenders:
            c.run()
            if between:
                between()
    for _ in range(runs):
        for c in contenders:
            c.runs.append(c.run())
            if between:
                between()


def digests_agree(contenders: Sequence[Contender]) -> bool:
    """Every run of every contender produced the same digest (runs without one are skipped)."""
    seen = {r.digest for c in contenders for r in c.runs if r.digest}
    return len(seen) <= 1


def table(contenders: Sequence[Contender], *, baseline: str, title: str = "",
          higher_is_better: bool = True, load: tuple[Sequence[float], Sequence[float]]
          | None = None, ratio_label: str = "ratio") -> str:
    """The markdown table docs/benchmarks.md quotes, with the load average and the digest
    verdict."""
    base = next((c for c in contenders if c.name == baseline), None)
    if base is None:
        raise ValueError(f"no contender named {baseline!r}")
    base_median = Spread.of(base.seconds).median
    lines = []
    if title:
        lines += [f"**{title}**", ""]
    with_cpu = any(r.cpu_s for c in contenders for r in c.runs)
    cpu_head = " machine CPU, core-s, median [min-max] |" if with_cpu else ""
    lines += [f"| contender | seconds, median [min-max] | runs | {ratio_label} | peak RSS |"
              + cpu_head, "|---|---|---|---|---|" + ("---|" if with_cpu else "")]
    for c in contenders:
        spread = Spread.of(c.seconds)
        r = ratio(base_median, spread.median, higher_is_better=higher_is_better)
        peak = max((x.peak_rss_bytes for x in c.runs), default=0)
        peak_s = f"{peak / 2**20:.0f} MiB" if peak else "-"
        cpu = [x.cpu_s for x in c.runs if x.cpu_s]
        cpu_s = (f" {Spread.of(cpu).show()} |" if cpu else " - |") if with_cpu else ""
        lines.append(f"| {c.name} | {spread.show(digits=3)} | {len(c.runs)} | {r:.2f}x | "
                     f"{peak_s} |" + cpu_s)
    lines.append("")
    same = digests_agree(contenders)
    lines.append(f"same output from every run: {'yes' if same else 'NO (see the digests)'}")
    if load is not None:
        before, after = load
        lines.append("load average (1, 5, 15 min): before "
                     f"{' '.join(f'{x:.2f}' for x in before)}, after "
                     f"{' '.join(f'{x:.2f}' for x in after)}")
    return "\n".join(lines)


def load_average() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:  # not on every platform
        return (0.0, 0.0, 0.0)


def machine_cpu_s() -> float:
    """CPU seconds all processes have spent since boot: /proc/stat's user, nice, system, irq
    and softirq (not idle, iowait or steal); 0.0 where there is no /proc. Take the difference
    around a run."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]  # then steal: not ours
    return (user + nice + system + irq + softirq) / ticks  # guest time is inside user


def settle(*, below_cores: float = 0.25, window_s: float = 0.5, timeout_s: float = 15.0
           ) -> float:
    """Wait until the machine is quiet (under `below_cores` busy over `window_s`), at most
    `timeout_s`; the seconds waited. Between runs, so that no run pays for what the one before
    left running (a JVM's JIT compiler and garbage collector go on after its job returns)."""
    import time

    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        before = machine_cpu_s()
        time.sleep(window_s)
        if machine_cpu_s() - before < below_cores * window_s:
            break
    return time.perf_counter() - start


def _proc_stat(pid: int) -> tuple[str, list[str]]:
    """/proc/PID/stat as (the command name, the fields after it); OSError if it is gone."""
    with open(f"/proc/{pid}/stat") as f:
        name, rest = f.read().rsplit(")", 1)
    return name.split("(", 1)[-1], rest.split()


def _pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def child_named(name: str, parent: int) -> int:
    """The pid of `parent`'s child process called `name` (e.g. the JVM pyspark started); 0 if
    there is none."""
    for pid in _pids():
        try:
            command, fields = _proc_stat(pid)
        except (OSError, IndexError):
            continue  # ended meanwhile
        if command == name and int(fields[1]) == parent:
            return pid
    return 0


def process_cpu_s(pid: int, *, descendants: bool = False) -> float:
    """CPU seconds (user + system) process `pid` has spent, with its live descendants' when
    `descendants` (a Spark JVM's Python workers); 0.0 for a process that is gone."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    if descendants:
        for child in _pids():
            try:
                children.setdefault(int(_proc_stat(child)[1][1]), []).append(child)
            except (OSError, IndexError):
                continue  # ended meanwhile
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = _proc_stat(p)[1]
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
        todo += children.get(p, [])
    return total


def records_digest(records: Iterable[tuple[int, bytes | None, bytes | None]]) -> str:
    """An order-independent digest of (partition, key, value) records: two writers that put
    the same key and value bytes in the same partitions agree, whatever order they sent them
    in (the writer shuffles by key; a bare producer sends in input order)."""
    per_part: dict[int, list[int]] = {}
    for partition, key, value in records:
        h = hashlib.blake2b(digest_size=8)
        for part in (key, value):
            if part is None:
                h.update(b"\xff")
            else:
                h.update(len(part).to_bytes(4, "big"))
                h.update(part)
        entry = per_part.setdefault(partition, [0, 0])
        entry[0] += 1
        entry[1] = (entry[1] + int.from_bytes(h.digest(), "big")) % 2**64
    total = hashlib.blake2b(digest_size=12)
    for partition in sorted(per_part):
        count, acc = per_part[partition]
        total.update(f"{partition}:{count}:{acc};".encode())
    return total.hexdigest()


def text_digest(*parts: bytes | str | int) -> str:
    h = hashlib.blake2b(digest_size=12)
    for p in parts:
        h.update(str(p).encode() if not isinstance(p, bytes) else p)
        h.update(b"\0")
    return h.hexdigest()


def child_peak_rss(rusage: object) -> int:
    """Peak RSS in bytes from `os.wait4`'s rusage (Linux counts KiB, macOS bytes)."""
    import sys

    rss = int(getattr(rusage, "ru_maxrss", 0))
    return rss if sys.platform == "darwin" else rss * 1024


def own_peak_rss() -> int:
    """This process's peak RSS in bytes (/proc/self/status VmHWM; 0 where there is none).
    A child reports its own: the rusage `wait4` gives counts the parent's pages it forked."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def timed_process(cmd: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
                  env: dict[str, str] | None = None) -> tuple[float, int, bytes, bytes, Any]:
    """One fresh process, run to its end: (wall seconds, exit code, stdout, stderr, its own
    rusage: `os.wait4` reaps it, so peak RSS and CPU are that process's alone)."""
    import subprocess
    import tempfile
    import time

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        out.seek(0)
        err.seek(0)
        return elapsed, code, out.read(), err.read(), usage


def fresh_process(argv: Sequence[str], what: str) -> tuple[dict[str, object], int]:
    """Run a bare contender in a fresh process that prints one JSON object on stdout: that
    object, and the process's own peak RSS (`os.wait4` reaps it, so the rusage is its own)."""
    import json
    import subprocess

    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE)
    assert proc.stdout is not None
    with proc.stdout:
        out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
    if code:
        raise SystemExit(f"{what} failed ({code})")
    return json.loads(out), child_peak_rss(usage)


def local_spark(app: str, **config: str) -> object:
    """The Spark benchmarks' session: local[2], no UI or progress bar, a 2g driver, logs at
    ERROR, workers on this Python, keyguard's data source registered; `config` on top."""
    from pyspark.sql import SparkSession

    from keyguard import sparkio
    from keyguard.sparkio.workers import point_workers_here

    builder = point_workers_here(SparkSession.builder).master("local[2]").appName(app)
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.driver.memory": "2g", **config}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    sparkio.register(spark)
    return spark


def importable(tree: Path, where: Path) -> Path:
    """A directory that, on PYTHONPATH, imports checkout `tree`'s keyguard before any installed
    one: its folders linked as the installed layout (`keyguard/` with formats, guard and sparkio
    under it) or, for a checkout before the one import root, as they are."""
    where.mkdir(parents=True, exist_ok=True)
    if (tree / "keyguard" / "__init__.py").exists():
        (where / "keyguard").mkdir(exist_ok=True)
        for item in (tree / "keyguard").iterdir():
            (where / "keyguard" / item.name).symlink_to(item)
        for package in ("formats", "guard", "sparkio"):
            (where / "keyguard" / package).symlink_to(tree / package)
    else:
        for package in ("formats", "guard", "sparkio"):
            (where / package).symlink_to(tree / package)
    return where
