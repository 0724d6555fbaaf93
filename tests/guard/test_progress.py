"""Progress on stderr for `keyguard audit` and `keyguard migrate`: redrawn in place on a
terminal, a plain line every few seconds in CI and pipes, never silent for long."""

from __future__ import annotations

import io

import pytest

from keyguard.guard.cli.progress import PLAIN_EVERY_S, Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_gets_one_line_redrawn_at_most_ten_times_a_second(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    err, clock = _Tty(), _Clock()
    show = Progress("audit", stream=err, clock=clock)
    assert show.tty
    clock.now = 1.0
    show(500, 2000, 1.0, "records read")
    clock.now = 1.05
    show(510, 2000, 1.05, "records read")  # within 0.1 s of the last: not redrawn
    clock.now = 4.0
    show(2000, 2000, 4.0, "records read")
    text = err.getvalue()
    assert "\rkeyguard audit: 500/2,000 records read (25%), 500/s, 3s left" in text
    assert "510/" not in text
    assert text.endswith("2,000/2,000 records read (100%), 500/s, 0s left   \n")


def test_ci_and_pipes_get_a_plain_line_every_few_seconds_and_at_the_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    err, clock = _Tty(), _Clock()  # a terminal, but CI: plain lines
    show = Progress("migrate", stream=err, clock=clock)
    assert not show.tty
    for second in range(0, 31):
        clock.now = float(second)
        show(second * 100, 5000, float(second) or 1.0, "records read")
    clock.now = 31.0
    show(5000, 5000, 31.0, "records read")
    lines = err.getvalue().splitlines()
    assert "\r" not in err.getvalue()
    assert len(lines) == 31 // int(PLAIN_EVERY_S) + 1  # every 10 s, and the end
    assert lines[0].startswith("keyguard migrate: 1,000/5,000 records read (20%)")
    assert lines[-1].startswith("keyguard migrate: 5,000/5,000 records read (100%)")
    show.note("writing 3 rewrites")
    assert err.getvalue().endswith("keyguard migrate: writing 3 rewrites\n")


def test_a_short_step_in_a_log_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    err, clock = io.StringIO(), _Clock()
    show = Progress("audit", stream=err, clock=clock)
    assert not show.tty  # a pipe
    clock.now = 2.0
    show(10, 20, 2.0)
    show(20, 20, 2.0)
    assert err.getvalue() == ""
