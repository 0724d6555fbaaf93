"""What every command shares: error handling with exit codes, option parsing, output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from formats.errors import EXIT_INVALID, KeyguardError
from formats.secrets import redact

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = EXIT_INVALID) -> typer.Exit:
    typer.echo(f"keyguard: error: {redact(message)}", err=True)
    return typer.Exit(code)


def handles_errors(fn: F) -> F:
    """Turn keyguard errors into one clear line on stderr and the error's exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KeyguardError as exc:
            raise fail(str(exc), exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


def parse_kv(pairs: list[str] | None, *, what: str = "--option") -> dict[str, str]:
    """`["a=1", "b.c=x=y"]` -> `{"a": "1", "b.c": "x=y"}`."""
    out: dict[str, str] = {}
    for p in pairs or []:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise fail(f"{what} {p!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def read_json_arg(text: str, *, what: str) -> Any:
    """A JSON argument, or `-` for standard input."""
    if text == "-":
        text = sys.stdin.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"{what} is not valid JSON: {exc}") from None
