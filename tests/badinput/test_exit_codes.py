"""A crash is never a verdict: exit 4, one line, the traceback only with --debug."""

from __future__ import annotations

import subprocess
import sys

import pytest
from badinput import assert_rejected, run_cli

from keyguard.formats.errors import EXIT_CODES, EXIT_INTERNAL, EXIT_INVALID
from keyguard.guard.cli import EXIT_CODES_HELP


def _boom(*_a: object, **_k: object) -> None:
    raise ZeroDivisionError("division by zero, planted by the test")


def test_an_unexpected_error_exits_4_without_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("keyguard.guard.rules_catalogue.catalogue", _boom)
    out = run_cli(["rules"])
    assert out.code == EXIT_INTERNAL
    assert out.kind == "internal"
    assert "ZeroDivisionError: division by zero, planted" in out.stderr
    assert "Traceback" not in out.output


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("keyguard.guard.rules_catalogue.catalogue", _boom)
    monkeypatch.setitem(__import__("keyguard.guard.cli.common").guard.cli.common.DEBUG, "on", False)
    out = run_cli(["--debug", "rules"])
    assert out.code == EXIT_INTERNAL
    assert "Traceback" in out.stderr


def test_debug_is_accepted_after_the_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "keyguard.guard.cli", "rules", "KG101", "--debug"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "KG101" in proc.stdout


def test_usage_errors_exit_2() -> None:
    assert_rejected(["rules", "KG99999"], EXIT_INVALID, "usage", says="no rule")


def test_help_lists_every_exit_code() -> None:
    out = run_cli(["--help"])
    assert out.code == 0
    flat = " ".join(out.stdout.split())
    for code in EXIT_CODES:
        assert f"{code} " in EXIT_CODES_HELP
    assert "4 keyguard itself failed" in flat
