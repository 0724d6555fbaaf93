"""The `keyguard` command: parses arguments, calls the library, renders the result.

It never imports pyspark, and imports the registry client, pyarrow and the formats lazily,
so a check of one topic starts fast. No `from __future__ import annotations` here nor in
check_cmd: typer reads the commands' parameters, and annotations kept as text are compiled
again by `eval` on every run.
"""

import atexit
import gc
import importlib
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from keyguard import __version__
from keyguard.formats.errors import EXIT_CODES
from keyguard.guard.catalog import COMMANDS as GUARD_COMMANDS
from keyguard.guard.catalog import SUMMARIES as GUARD_SUMMARIES
from keyguard.guard.cli.common import DEBUG

EXIT_CODES_HELP = "Exit codes: " + "; ".join(f"{c} {text}" for c, text in EXIT_CODES.items()) + "."

#: The entry-point group through which packages above guard/ (e.g. `demo`) contribute
#: commands; guard/ names none of them. Each value is "module:function", a typer command.
COMMANDS_GROUP = "keyguard.commands"


#: The commands of `keyguard`, by name, in the order help lists them: each is turned into a
#: click command only when it is invoked or listed, so a check does not pay for typer reading
#: every other command's signature (~15 ms with audit and migrate).
COMMANDS: dict[str, Callable[..., Any] | str] = {}

#: What help lists for a command, when it was given one (the first paragraph of its docstring):
#: the listing then imports none of their modules (~15 ms).
SUMMARIES: dict[str, str] = {}


def add_command(name: str, function: Callable[..., Any] | str, summary: str | None = None) -> None:
    """Make `function` (a typer command function, or "module:name" of one, imported when the
    command is asked for) `keyguard <name>`, listed by help with `summary` (by default, its
    docstring's first paragraph)."""
    COMMANDS[name] = function
    if summary is not None:
        SUMMARIES[name] = summary


def _loaded(function: Callable[..., Any] | str) -> Callable[..., Any]:
    if isinstance(function, str):
        module, _, attr = function.partition(":")
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
    return function


def command_function(name: str) -> Callable[..., Any]:
    """The function of command `name`, its module imported on first use."""
    function = COMMANDS[name] = _loaded(COMMANDS[name])
    return function


def _built(name: str, function: Callable[..., Any]) -> Any:
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    one.command(name, epilog=EXIT_CODES_HELP)(function)  # every --help ends with the exit codes
    return typer.main.get_command(one)


def built_command(name: str, function: Callable[..., Any] | str | None = None) -> Any:
    """The click command of `keyguard <name>` (`function`, by default the registered one), as
    `keyguard` builds it: the docs render its help."""
    return _built(name, command_function(name) if function is None else _loaded(function))


class _Commands(TyperGroup):
    """The commands of `COMMANDS` (guard's, and those the packages above guard/ add when they
    assemble the `keyguard` script: `keyguard.sparkio.cli.main`), each built when it is asked for,
    plus
    those of the `keyguard.commands` entry points, looked up only when a name is not known:
    neither a check nor `--help` reads the installed packages' metadata (~15 ms). Help lists
    `COMMANDS`; an entry point's command runs by its name."""

    _contributed_loaded = False

    def _load_contributed(self) -> None:
        if self._contributed_loaded:
            return
        self._contributed_loaded = True
        # lazy: importlib.metadata costs ~10 ms (email, zipfile); a check never needs it
        from importlib.metadata import entry_points

        for point in entry_points(group=COMMANDS_GROUP):
            if point.name not in self.commands and point.name not in COMMANDS:
                self.add_command(_built(point.name, point.load()), point.name)

    _listing = False

    def format_help(self, ctx, formatter):  # type: ignore[no-untyped-def]
        # Help lists each command by its summary: it needs no command built (their parameters
        # are what costs) nor, given `SUMMARIES`, imported, so the listing gets a summary-only
        # stand-in for those not built.
        self._listing = True
        try:
            return super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def get_help_option(self, ctx):  # type: ignore[no-untyped-def]
        # Absent, `keyguard`'s own --help is False rather than None: typer coerces a flag's
        # None through pydantic, whose import (~40 ms) `keyguard check --help` would otherwise
        # pay for the --help it was not given.
        option = super().get_help_option(ctx)
        if option is not None:
            option.default = False
        return option

    def list_commands(self, ctx):  # type: ignore[no-untyped-def]
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx, cmd_name):  # type: ignore[no-untyped-def]
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in COMMANDS and self._listing:
            summary = SUMMARIES.get(cmd_name) or command_function(cmd_name).__doc__
            return TyperCommand(cmd_name, help=summary)
        if found is None and cmd_name in COMMANDS:
            found = _built(cmd_name, command_function(cmd_name))
            self.add_command(found, cmd_name)
        if found is None:
            self._load_contributed()
            found = super().get_command(ctx, cmd_name)
        return found


app = typer.Typer(
    cls=_Commands,
    name="keyguard",
    help="Byte-exact keys for compacted Kafka topics: encode, decode, and guard key schemas.\n\n"
    + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"keyguard {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback when keyguard itself fails.")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True,
                           help="Print keyguard's version and exit.")
    ] = False,
) -> None:
    if debug:
        DEBUG["on"] = True


# Each command's module (the catalog's) is imported when the command is invoked or help lists it.
for _name, _function in GUARD_COMMANDS.items():
    add_command(_name, _function, GUARD_SUMMARIES[_name])


def main() -> None:
    """The console script: `--debug` is accepted anywhere on the line, not only first."""
    # Last of the exit handlers registered from here on (they run in reverse): the objects
    # alive at exit go to the collector's permanent generation, so the interpreter's
    # finalization does not walk them in its full collections (~15 ms of a `check`: every
    # function, class and annotation typer and keyguard created). Nothing is skipped: exit
    # handlers, flushing and the exit code are as before; only reference cycles still alive
    # at exit are left to the process's end, which the interpreter never promises to collect.
    atexit.register(gc.freeze)
    args = sys.argv[1:]
    if "--debug" in args:
        args = ["--debug", *(a for a in args if a != "--debug")]
    app(args=args, prog_name="keyguard")
