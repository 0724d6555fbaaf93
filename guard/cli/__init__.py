"""The `keyguard` command: parses arguments, calls the library, renders the result.

It never imports pyspark, and imports the registry client, pyarrow and the formats lazily,
so a check of one topic starts fast.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from formats.errors import EXIT_CODES
from guard.cli import bytes_cmd, check_cmd
from guard.cli.common import DEBUG

EXIT_CODES_HELP = "Exit codes: " + "; ".join(f"{c} {text}" for c, text in EXIT_CODES.items()) + "."

app = typer.Typer(
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

#: Commands packages above guard/ contribute (name, "module:function"): loaded by module path,
#: so guard/ imports nothing of them; each module keeps its heavy imports inside the command.
PLUGIN_COMMANDS = (("demo", "sparkio.cli:demo"),)

for _name, _path in PLUGIN_COMMANDS:
    _module, _, _attr = _path.partition(":")
    app.command(_name, epilog=EXIT_CODES_HELP)(getattr(importlib.import_module(_module), _attr))


def main() -> None:
    """The console script: `--debug` is accepted anywhere on the line, not only first."""
    args = sys.argv[1:]
    if "--debug" in args:
        args = ["--debug", *(a for a in args if a != "--debug")]
    app(args=args, prog_name="keyguard")
