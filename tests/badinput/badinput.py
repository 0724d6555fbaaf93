"""The bad-input harness: run a CLI line in-process and assert how it failed.

Every case asserts the exit code and the error's kind (the `(KIND)` of
`keyguard: error (KIND): ...`, or `internal` for `keyguard failed: ...`, which must never
happen), and that no traceback reached the user.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from typer.testing import CliRunner

from keyguard.guard.cli import app

_KIND = re.compile(r"^keyguard: error \((?P<kind>[a-z0-9-]+)\): ", re.MULTILINE)


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def kind(self) -> str | None:
        if "keyguard failed:" in self.stderr:
            return "internal"
        m = _KIND.search(self.stderr)
        return m.group("kind") if m else None

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(args: Sequence[str], *, env: Mapping[str, str] | None = None,
            input: str | None = None) -> Outcome:
    result = CliRunner().invoke(app, list(args), env=dict(env or {}), input=input,
                                catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"uncaught {type(result.exception).__name__}: "
                             f"{result.exception!r}\n{result.output}")
    return Outcome(result.exit_code, result.stdout, result.stderr)


def assert_rejected(args: Sequence[str], code: int, kind: str | tuple[str, ...], *,
                    env: Mapping[str, str] | None = None, input: str | None = None,
                    says: str | None = None) -> Outcome:
    """Run `args`; assert exit `code`, error kind `kind`, no traceback, and `says` in stderr."""
    out = run_cli(args, env=env, input=input)
    kinds = (kind,) if isinstance(kind, str) else kind
    assert "Traceback" not in out.output, out.output
    assert out.code == code, f"exit {out.code}, wanted {code}: {out.output}"
    assert out.kind in kinds, f"kind {out.kind!r}, wanted {kinds}: {out.output}"
    if says is not None:
        assert says.lower() in out.stderr.lower(), out.stderr
    return out
