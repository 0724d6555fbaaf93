"""What every command shares: error handling with exit codes, option parsing, output.

Exit codes (`keyguard.formats.errors.EXIT_CODES`): 0 nothing breaking, 1 breaking findings, 2
invalid input or usage, 3 registry or broker unreachable, 4 keyguard itself failed. A crash is never
read as a verdict: anything keyguard did not raise on purpose exits 4 with one line, and the
traceback only with `--debug` (or KEYGUARD_DEBUG=1).

An error is always one line on stderr. With a machine report format (`--format json`, ...)
it is also a document of that format, on stdout or in the `--output` file, so a pipeline that
parses the report learns that there is no verdict, and why. Every line and document is
redacted (`keyguard.formats.secrets`): the credentials a command was given are registered first.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from keyguard.formats.catalog import BUILTIN_FORMATS, DEFAULT_FORMATS
from keyguard.formats.errors import (
    EXIT_INTERNAL,
    EXIT_INVALID,
    INTERNAL_KIND,
    InvalidOptionError,
    KeyguardError,
    UsageError,
)
from keyguard.formats.secrets import (
    redact,
    register_environment,
    register_options,
    register_url_credentials,
)
from keyguard.guard.render import FORMATS

F = TypeVar("F", bound=Callable[..., Any])

#: Set by the global `--debug` flag (see keyguard.guard.cli.main).
DEBUG = {"on": os.environ.get("KEYGUARD_DEBUG", "") not in ("", "0")}

#: The report formats of every command that renders a Report (check, diff, audit): the
#: renderers' own list (the package is light; each renderer is imported when asked for).
REPORT_FORMATS = FORMATS

#: The key and value formats every command takes: the format catalog's names
#: (`keyguard.formats.catalog.BUILTIN_FORMATS`; its modules are imported when a format is used).
FORMAT_CHOICES = ", ".join(BUILTIN_FORMATS)
#: The schema types of `--schema-type`: those the catalog's formats write (AVRO, JSON, PROTOBUF).
SCHEMA_TYPES = tuple(t.lower() for t in DEFAULT_FORMATS)

#: The flag with which a command uses a Flink DDL's connection options
#: (`keyguard.guard.request.ddl_notes`): the one rule of every command that takes a DDL.
DDL_CONNECTIONS = "--flink-ddl-connections"


def fail(message: str, code: int = EXIT_INVALID, kind: str = "usage") -> KeyguardError:
    """A usage error to raise inside a command: `raise fail("...")`."""
    error = UsageError(message)
    error.exit_code, error.kind = code, kind
    return error


def check_output(output: Path) -> None:
    """Fail before any work when the report could not be written to `output`."""
    where = f"--output {output}"
    if output.is_dir():
        raise InvalidOptionError(f"{where} is a directory",
                                 hint=f"give a file path, e.g. {output / 'keyguard-report'}")
    parent = output.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise InvalidOptionError(f"{where}: the directory {parent} {what}",
                                 hint="create the directory first, or choose another path")
    writable = os.access(output, os.W_OK) if output.exists() else os.access(parent, os.W_OK)
    if not writable:
        raise InvalidOptionError(f"{where} is not writable (permission denied)",
                                 hint="choose a path this user can write")


def write_output(output: Path, text: str) -> None:
    try:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidOptionError(f"--output {output}: cannot write the report: "
                                 f"{exc.strerror or exc}",
                                 hint="choose a path this user can write") from None


def _report_error(kind: str, message: str, code: int, fmt: str | None,
                  output: Path | None) -> typer.Exit:
    """One line on stderr; in a machine format also the error document. Never a secret."""
    message = redact(message)
    typer.echo(f"keyguard: error ({kind}): {message}", err=True)
    _error_document(kind, message, code, fmt, output)
    return typer.Exit(code)


def _error_document(kind: str, message: str, code: int, fmt: str | None,
                    output: Path | None) -> None:
    if fmt is None or fmt == "text":
        return
    from keyguard.guard.render import render_error  # lazy: CLI start-up (the renderers)

    document = render_error(fmt, kind, message, code)
    if document is None:
        return
    document = redact(document)
    if output is not None:
        try:
            write_output(output, document)
            typer.echo(f"keyguard: error report written to {output}", err=True)
            return
        except KeyguardError:
            pass  # the unwritable --output is the error being reported: stdout then
    echo(document.rstrip("\n"))


def echo(text: str) -> None:
    """One line (or block) of a command's output on stdout, for a reader that may leave early.

    `keyguard rules | head` closes the pipe after a line: the rest of the output then goes to
    /dev/null and the command still ends with its own exit code (a verdict stays a verdict),
    instead of failing with BrokenPipeError as a keyguard bug (exit 4).
    """
    try:
        typer.echo(text)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def crashed(exc: BaseException, fmt: str | None = None,
            output: Path | None = None) -> typer.Exit:
    """An error keyguard did not raise on purpose: exit 4, never 1 (a verdict)."""
    if DEBUG["on"]:
        typer.echo(redact("".join(traceback.format_exception(exc))), err=True)
    first = (str(exc).splitlines() or [""])[0][:300]
    line = redact(f"keyguard failed: {type(exc).__name__}: {first}")
    typer.echo(line, err=True)
    if not DEBUG["on"]:
        typer.echo("keyguard failed: this is a bug in keyguard; rerun with --debug for the "
                   "traceback and report it", err=True)
    _error_document(INTERNAL_KIND, line, EXIT_INTERNAL, fmt, output)
    return typer.Exit(EXIT_INTERNAL)


def _register_credentials(args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Credentials reach a command as environment variables, URL user info, or KEY=VALUE
    options: register them all before anything can print them."""
    register_environment(os.environ)
    for value in (*args, *kwargs.values()):
        for item in (value if isinstance(value, list | tuple) else [value]):
            if isinstance(item, str):
                register_url_credentials(item)
                key, sep, secret = item.partition("=")
                if sep:
                    register_options({key.strip(): secret})


def handles_errors(fn: F | None = None, *,
                   formats: Sequence[str] = REPORT_FORMATS, formats_why: str = "") -> Any:
    """Turn keyguard errors into one clear line on stderr and the error's exit code.

    A command with `fmt` (its `--format`) and `output` (`--output`) parameters also gets its
    errors as a document of that format; `formats` are the ones it accepts (`formats_why`:
    why, for a command that renders no Report).
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            fmt: str | None = kwargs.get("fmt")
            output: Path | None = kwargs.get("output")
            try:
                _register_credentials(args, kwargs)
                if fmt is not None and fmt not in formats:
                    bad, fmt = fmt, None
                    raise InvalidOptionError(f"--format {bad!r} is not a format of this command"
                                             + (f": {formats_why}" if formats_why else ""),
                                             hint=f"use one of {', '.join(formats)}")
                if output is not None and fmt is not None:
                    check_output(output)
                for value in kwargs.values():
                    if isinstance(value, Rejected):  # found by an option callback
                        raise value.error
                return fn(*args, **kwargs)
            except KeyguardError as exc:
                bad_output = output is not None and str(exc).startswith(f"--output {output}")
                raise _report_error(exc.kind, str(exc), exc.exit_code, fmt,
                                    None if bad_output else output) from None
            except Exception as exc:
                if type(exc).__module__.startswith(("typer", "click")):
                    raise  # Exit, Abort and usage errors: the CLI framework's own exit codes

                raise crashed(exc, fmt, output) from None

        return wrapper  # type: ignore[return-value]

    return decorate(fn) if fn is not None else decorate


class Rejected:
    """An option value its callback refused. Callbacks run before the command, outside
    `handles_errors`: they hand the error over as the value, and the command's wrapper raises
    it, so it is reported like any other error (in the command's --format too)."""

    def __init__(self, error: KeyguardError) -> None:
        self.error = error


def at_least(minimum: int, option: str) -> Callable[[int | None], Any]:
    """A typer option callback: a number below `minimum` is exit 2 before anything runs."""

    def check(value: int | None) -> Any:
        if value is not None and value < minimum:
            return Rejected(fail(f"{option} must be at least {minimum}, got {value}",
                                 kind="invalid-option"))
        return value

    return check


def one_of(choices: tuple[str, ...], option: str) -> Callable[[str | None], Any]:
    """A typer option callback: a value outside `choices` (any case) is exit 2, with a hint."""

    def check(value: str | None) -> Any:
        if value is None or value.lower() in choices:
            return None if value is None else value.lower()
        from difflib import get_close_matches

        close = get_close_matches(value.lower(), choices, n=1)
        maybe = f" (did you mean {close[0]!r}?)" if close else ""
        return Rejected(fail(f"{option} must be one of {', '.join(choices)}, got {value!r}"
                             f"{maybe}", kind="invalid-option"))

    return check


def format_help(role: str, *, default: str | None = None, shown: bool = True) -> str:
    """The help of a --key-format/--value-format flag: the catalog's formats and the default
    (`keyguard.guard.options`, the same in every command; `shown`: said here, for a flag
    whose own default is None)."""
    text = (f"The {role} format: {FORMAT_CHOICES} (`keyguard formats` lists them with their "
            "options).")
    if not shown:
        return text
    if default is None:
        from keyguard.guard.options import KEY_FORMAT, VALUE_FORMAT  # lazy: CLI start-up
        default = (KEY_FORMAT if role == "key" else VALUE_FORMAT).default_value
    return f"{text} Default: {default}."


KeyFormatOpt = Annotated[str, typer.Option("--key-format", help=format_help("key", shown=False))]
ValueFormatOpt = Annotated[str, typer.Option("--value-format",
                                             help=format_help("value", shown=False))]
SchemaTypeOpt = Annotated[str | None, typer.Option(
    "--schema-type", help=f"{', '.join(SCHEMA_TYPES)}: how to read a schema file when its "
    "extension (.avsc, .json, .proto) does not say.",
    callback=one_of(SCHEMA_TYPES, "--schema-type"))]
FormatOpt = Annotated[str, typer.Option(
    "--format", "-f", help=f"The report's format: {', '.join(REPORT_FORMATS)}.")]
DdlConnectionsOpt = Annotated[bool, typer.Option(
    DDL_CONNECTIONS, help="Use the Flink DDL's connection options (its registry url and "
    "credentials, properties.* such as bootstrap.servers) where this command's own flags name "
    "none. Without it they are ignored, with a note on stderr: the command's flags and "
    "defaults decide where it connects.")]
#: What a file registry's schema ids are, for every help and message that shows one.
FILE_REGISTRY_IDS = ("derived from the schema itself (stable on every machine, with no server "
                     "to hand out sequential ids)")
RegistryOpt = Annotated[str | None, typer.Option(
    "--registry", help="Schema registry: http(s)://..., file://DIR (default ./schemas when that "
    f"directory exists) or mock://NAME; a file registry's schema ids are {FILE_REGISTRY_IDS}. "
    "Credentials from KEYGUARD_REGISTRY_USER_INFO / KEYGUARD_REGISTRY_BEARER_TOKEN.")]


def print_notes(notes: Sequence[str]) -> None:
    """Each note once on stderr (`keyguard: note: ...`), in order."""
    for note in dict.fromkeys(notes):
        typer.echo(f"keyguard: note: {note}", err=True)


def note_ddls(tables: list[Any], use_connections: bool, *, connects: bool = True) -> None:
    """What the run's Flink DDLs say that it does not use, each note once on stderr
    (`keyguard.guard.request.ddl_notes`: the rule for their connection options)."""
    if not any(t is not None for t in tables):
        if use_connections:
            raise fail(f"{DDL_CONNECTIONS} uses a Flink DDL's connection options, and no DDL "
                       "is given: give --flink-ddl, or drop it", kind="invalid-option")
        return
    from keyguard.guard.request import ddl_notes  # lazy: CLI start-up (only with a DDL)

    print_notes(ddl_notes(tables, use_connections, connects=connects))


ReferenceOpt = Annotated[list[str] | None, typer.Option(
    "--reference", help="A schema file's reference to another subject, NAME=SUBJECT:VERSION "
    "(Confluent schema references; repeatable). Default: <file>.refs.json beside the file.")]


def parse_kv(pairs: list[str] | None, *, what: str = "--option") -> dict[str, str]:
    """`["a=1", "b.c=x=y"]` -> `{"a": "1", "b.c": "x=y"}`."""
    out: dict[str, str] = {}
    for p in pairs or []:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise fail(f"{what} {p!r} is not KEY=VALUE")
        out[key.strip()] = value
    register_options(out)
    return out


def read_json_arg(text: str, *, what: str) -> Any:
    """A JSON argument, or `-` for standard input: strict JSON (RFC 8259).

    NaN/Infinity literals are not JSON (give "NaN" or "Infinity" as strings); a key given twice
    is refused rather than silently letting the last one win; absurd nesting is exit 2.
    """
    from keyguard.formats.values import (
        JsonNumber,  # lazy: CLI start-up (the value types; not for check)
    )

    if text == "-":
        text = sys.stdin.read()
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys,
                          parse_float=JsonNumber)  # DECIMAL columns keep every digit
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
