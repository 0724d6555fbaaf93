"""What every command shares: error handling with exit codes, option parsing, output.

Exit codes (`formats.errors.EXIT_CODES`): 0 nothing breaking, 1 breaking findings, 2 invalid
input or usage, 3 registry or broker unreachable, 4 keyguard itself failed. A crash is never
read as a verdict: anything keyguard did not raise on purpose exits 4 with one line, and the
traceback only with `--debug` (or KEYGUARD_DEBUG=1).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from formats.errors import EXIT_INTERNAL, EXIT_INVALID, KeyguardError
from formats.secrets import redact

F = TypeVar("F", bound=Callable[..., Any])

#: Set by the global `--debug` flag (see guard.cli.main).
DEBUG = {"on": os.environ.get("KEYGUARD_DEBUG", "") not in ("", "0")}


def fail(message: str, code: int = EXIT_INVALID, kind: str = "usage") -> typer.Exit:
    typer.echo(f"keyguard: error ({kind}): {redact(message)}", err=True)
    return typer.Exit(code)


def crashed(exc: BaseException) -> typer.Exit:
    """An error keyguard did not raise on purpose: exit 4, never 1 (a verdict)."""
    if DEBUG["on"]:
        typer.echo(redact("".join(traceback.format_exception(exc))), err=True)
    first = (str(exc).splitlines() or [""])[0][:300]
    typer.echo(redact(f"keyguard failed: {type(exc).__name__}: {first}"), err=True)
    if not DEBUG["on"]:
        typer.echo("keyguard failed: this is a bug in keyguard; rerun with --debug for the "
                   "traceback and report it", err=True)
    return typer.Exit(EXIT_INTERNAL)


def handles_errors(fn: F) -> F:
    """Turn keyguard errors into one clear line on stderr and the error's exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KeyguardError as exc:
            raise fail(str(exc), exc.exit_code, exc.kind) from None
        except Exception as exc:
            if type(exc).__module__.startswith(("typer", "click")):
                raise  # Exit, Abort and usage errors: the CLI framework's own exit codes

            raise crashed(exc) from None

    return wrapper  # type: ignore[return-value]


def at_least(minimum: int, option: str) -> Callable[[int | None], int | None]:
    """A typer option callback: a number below `minimum` is exit 2 before anything runs."""

    def check(value: int | None) -> int | None:
        if value is not None and value < minimum:
            raise fail(f"{option} must be at least {minimum}, got {value}", kind="invalid-option")
        return value

    return check


def one_of(choices: tuple[str, ...], option: str) -> Callable[[str | None], str | None]:
    """A typer option callback: a value outside `choices` (any case) is exit 2, with a hint."""

    def check(value: str | None) -> str | None:
        if value is None or value.lower() in choices:
            return None if value is None else value.lower()
        from difflib import get_close_matches

        close = get_close_matches(value.lower(), choices, n=1)
        maybe = f" (did you mean {close[0]!r}?)" if close else ""
        raise fail(f"{option} must be one of {', '.join(choices)}, got {value!r}{maybe}",
                   kind="invalid-option")

    return check


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
    """A JSON argument, or `-` for standard input: strict JSON (RFC 8259).

    NaN/Infinity literals are not JSON (give "NaN" or "Infinity" as strings); a key given twice
    is refused rather than silently letting the last one win; absurd nesting is exit 2.
    """
    if text == "-":
        text = sys.stdin.read()
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise fail(f"{what} is not valid JSON: {exc}") from None
    except ValueError as exc:
        raise fail(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise fail(f"{what} is nested too deeply to read; flatten it") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value; write it as a string, \"{name}\"")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} is given twice; give each column once")
        out[key] = value
    return out
