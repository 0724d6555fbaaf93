"""The `keyguard` command: parses arguments, calls the library, renders the result.

It never imports pyspark, and imports the registry client, pyarrow and the formats lazily,
so a check of one topic starts fast.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
import typer.main
from typer.core import TyperGroup

from formats.errors import EXIT_CODES
from guard.cli import audit_cmd, bytes_cmd, check_cmd
from guard.cli.common import DEBUG

EXIT_CODES_HELP = "Exit codes: " + "; ".join(f"{c} {text}" for c, text in EXIT_CODES.items()) + "."

#: The entry-point group through which packages above guard/ (e.g. `demo`) contribute
#: commands; guard/ names none of them. Each value is "module:function", a typer command.
COMMANDS_GROUP = "keyguard.commands"


class _Commands(TyperGroup):
    """The registered commands (guard's, and those the packages above guard/ add to `app` when
    they assemble the `keyguard` script: `sparkio.cli.main`), plus those of the
    `keyguard.commands` entry points, looked up only when a name is not registered: neither a
    check nor `--help` reads the installed packages' metadata (~15 ms). Help lists the
    registered commands; an entry point's command runs by its name."""

    _contributed_loaded = False

    def _load_contributed(self) -> None:
        if self._contributed_loaded:
            return
        self._contributed_loaded = True
        # lazy: importlib.metadata costs ~10 ms (email, zipfile); a check never needs it
        from importlib.metadata import entry_points

        for point in entry_points(group=COMMANDS_GROUP):
            if point.name in self.commands:
                continue
            one = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
            one.command(point.name, epilog=EXIT_CODES_HELP)(point.load())
            self.add_command(typer.main.get_command(one), point.name)

    def get_command(self, ctx, cmd_name):  # type: ignore[no-untyped-def]
        found = super().get_command(ctx, cmd_name)
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


@app.callback()
def _global(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback when keyguard itself fails.")
    ] = False,
) -> None:
    if debug:
        DEBUG["on"] = True


# Every command ends its --help with the exit codes.
app.command("encode", epilog=EXIT_CODES_HELP)(bytes_cmd.encode)
app.command("decode", epilog=EXIT_CODES_HELP)(bytes_cmd.decode)
app.command("formats", epilog=EXIT_CODES_HELP)(bytes_cmd.formats_cmd)
app.command("check", epilog=EXIT_CODES_HELP)(check_cmd.check_cmd)
app.command("diff", epilog=EXIT_CODES_HELP)(check_cmd.diff_cmd)
app.command("rules", epilog=EXIT_CODES_HELP)(check_cmd.rules_cmd)
app.command("audit", epilog=EXIT_CODES_HELP)(audit_cmd.audit_cmd)


def main() -> None:
    """The console script: `--debug` is accepted anywhere on the line, not only first."""
    args = sys.argv[1:]
    if "--debug" in args:
        args = ["--debug", *(a for a in args if a != "--debug")]
    app(args=args, prog_name="keyguard")
