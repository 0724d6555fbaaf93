"""The pure half of bench/harness.py, so the benchmarks cannot rot unnoticed (no timing here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from harness import (
    Contender,
    Run,
    Spread,
    alternate,
    digests_agree,
    ratio,
    records_digest,
    table,
)


def test_spread_is_median_min_max() -> None:
    s = Spread.of([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.low, s.high) == (2.5, 1.0, 10.0)
    assert s.show() == "2.50 [1.00-10.00]"
    with pytest.raises(ValueError):
        Spread.of([])


def test_ratio_follows_the_goal_direction() -> None:
    assert ratio(2.0, 4.0) == 0.5  # throughput: the writer at half the bare producer
    assert ratio(0.03, 0.12, higher_is_better=False) == 4.0  # cost: check at 4x python
    with pytest.raises(ValueError):
        ratio(0.0, 1.0)


def test_alternate_runs_abab_after_equal_warmup() -> None:
    order: list[str] = []

    def make(name: str) -> Contender:
        return Contender(name, lambda: order.append(name) or Run(1.0, "d"))

    a, b = make("a"), make("b")
    alternate([a, b], runs=3, warmup=1)
    assert order == ["a", "b"] * 4
    assert (len(a.runs), len(b.runs)) == (3, 3)
    with pytest.raises(ValueError):
        alternate([a, b], runs=2)


def test_records_digest_ignores_order_but_not_bytes_or_partitions() -> None:
    recs = [(0, b"k1", b"v1"), (1, b"k2", None), (0, b"k3", b"v3")]
    same = records_digest(recs)
    assert records_digest(list(reversed(recs))) == same
    assert records_digest([(0, b"k1", b"v1"), (1, b"k2", b""), (0, b"k3", b"v3")]) != same
    assert records_digest([(1, b"k1", b"v1"), (1, b"k2", None), (0, b"k3", b"v3")]) != same
    # length-prefixed: moving a byte from key to value changes the digest
    assert records_digest([(0, b"k", b"1v1")]) != records_digest([(0, b"k1", b"v1")])


def test_table_has_ratio_to_baseline_and_digest_verdict() -> None:
    base = Contender("bare", lambda: Run(1.0))
    base.runs = [Run(1.0, "x", 2**20), Run(2.0, "x"), Run(3.0, "x")]
    writer = Contender("writer", lambda: Run(1.0))
    writer.runs = [Run(4.0, "x"), Run(4.0, "x"), Run(5.0, "x", 3 * 2**20)]
    text = table([base, writer], baseline="bare", load=((1.0, 0.5, 0.25), (1.5, 0.5, 0.25)))
    assert "| bare | 2.000 [1.000-3.000] | 3 | 1.00x | 1 MiB |" in text
    assert "| writer | 4.000 [4.000-5.000] | 3 | 0.50x | 3 MiB |" in text
    assert "same output from every run: yes" in text
    assert "before 1.00 0.50 0.25, after 1.50 0.50 0.25" in text
    writer.runs[0] = Run(4.0, "y")
    assert not digests_agree([base, writer])
    assert "NO" in table([base, writer], baseline="bare")
    with pytest.raises(ValueError):
        table([base], baseline="nobody")


def test_table_shows_machine_cpu_only_when_runs_measured_it() -> None:
    base = Contender("bare", lambda: Run(1.0))
    base.runs = [Run(1.0, cpu_s=1.5), Run(2.0, cpu_s=2.5), Run(3.0, cpu_s=3.5)]
    writer = Contender("writer", lambda: Run(1.0))
    writer.runs = [Run(2.0), Run(2.0), Run(2.0)]
    text = table([base, writer], baseline="bare")
    assert "machine CPU, core-s" in text
    assert "| bare | 2.000 [1.000-3.000] | 3 | 1.00x | - | 2.50 [1.50-3.50] |" in text
    assert "| writer | 2.000 [2.000-2.000] | 3 | 1.00x | - | - |" in text
    for c in (base, writer):
        c.runs = [Run(1.0)] * 3
    assert "CPU" not in table([base, writer], baseline="bare")


def test_cpu_counters_grow_with_work() -> None:
    import os

    from harness import machine_cpu_s, process_cpu_s

    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc")
    machine, mine = machine_cpu_s(), process_cpu_s(os.getpid())
    sum(i * i for i in range(2_000_000))  # CPU-bound work in this process
    own = process_cpu_s(os.getpid())
    assert own > mine
    assert process_cpu_s(os.getpid(), descendants=True) >= own  # read after: never less
    assert machine_cpu_s() > machine
    assert process_cpu_s(2**22 + 1) == 0.0  # no such process (above Linux's pid_max default)


def test_child_named_finds_a_child_by_its_command_name() -> None:
    import os
    import subprocess

    from harness import child_named

    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc")
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert child_named("sleep", os.getpid()) == child.pid
        assert child_named("sleep", child.pid) == 0  # not its own child
        assert child_named("no-such-command", os.getpid()) == 0
    finally:
        child.kill()
        child.wait()


def test_importable_makes_a_checkout_import_before_the_installed_keyguard(tmp_path: Path) -> None:
    """The benchmarks that compare two checkouts import each through this layout."""
    import os
    import subprocess

    from harness import importable

    repo = Path(__file__).resolve().parents[1]
    where = importable(repo, tmp_path / "layout")
    done = subprocess.run(
        [sys.executable, "-c", "import keyguard.formats.codec as c, keyguard; "
                               "print(c.__file__); print(keyguard.__file__)"],
        env={**os.environ, "PYTHONPATH": str(where)}, capture_output=True, text=True,
        cwd=tmp_path, check=True)
    codec, root = done.stdout.split()
    assert codec.startswith(str(where)) and root.startswith(str(where))
