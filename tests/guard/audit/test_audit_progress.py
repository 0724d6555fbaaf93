"""`keyguard audit`'s progress line: on a terminal only, never in CI."""

from __future__ import annotations

import io

import pytest

from keyguard.guard.cli import audit_cmd
from keyguard.guard.cli.audit_cmd import ProgressLine, progress_line


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_records_rate_and_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    err = _Tty()
    monkeypatch.setattr(audit_cmd.sys, "stderr", err)
    line = ProgressLine()
    line(500, 2000, 1.0)
    line(510, 2000, 1.01)  # within 0.1 s of the last: not redrawn
    line(2000, 2000, 4.0)
    text = err.getvalue()
    assert "500/2,000 records (25%), 500 records/s, 3s left" in text
    assert "510/" not in text
    assert text.endswith("2,000/2,000 records (100%), 500 records/s, 0s left   \n")


def test_progress_only_on_a_terminal_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_cmd.sys, "stderr", _Tty())
    monkeypatch.delenv("CI", raising=False)
    assert isinstance(progress_line(), ProgressLine)
    monkeypatch.setenv("CI", "true")
    assert progress_line() is None
    monkeypatch.delenv("CI")
    monkeypatch.setattr(audit_cmd.sys, "stderr", io.StringIO())
    assert progress_line() is None
