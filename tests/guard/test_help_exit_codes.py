"""Every command's --help ends with the exit codes, the same line the top-level help shows."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from keyguard.formats.errors import EXIT_CODES
from keyguard.guard.cli import EXIT_CODES_HELP, app


@pytest.mark.parametrize("command", ["check", "diff", "encode", "decode", "rules", "formats",
                                     "demo"])
def test_help_ends_with_the_exit_codes(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert flat.endswith(" ".join(EXIT_CODES_HELP.split())), flat[-400:]


def test_the_line_names_every_code_once() -> None:
    for code, text in EXIT_CODES.items():
        assert EXIT_CODES_HELP.count(f"{code} {text}") == 1
