"""What every command shares: error handling with exit codes, option parsing, output."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
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


def to_jsonable(value: Any) -> Any:
    """Row values as JSON: decimals and times as text, bytes as base64."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return value


def read_json_arg(text: str, *, what: str) -> Any:
    """A JSON argument, or `-` for standard input."""
    if text == "-":
        text = sys.stdin.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"{what} is not valid JSON: {exc}") from None
