"""The `keyguard` command: parses arguments, calls the library, renders the result.

It never imports pyspark, and imports the registry client, pyarrow and the formats lazily,
so a check of one topic starts fast.
"""

from __future__ import annotations

import typer

from guard.cli import bytes_cmd, check_cmd, demo_cmd

app = typer.Typer(
    name="keyguard",
    help="Byte-exact keys for compacted Kafka topics: encode, decode, and guard key schemas.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

app.command("encode")(bytes_cmd.encode)
app.command("decode")(bytes_cmd.decode)
app.command("formats")(bytes_cmd.formats_cmd)
app.command("check")(check_cmd.check_cmd)
app.command("diff")(check_cmd.diff_cmd)
app.command("rules")(check_cmd.rules_cmd)
app.command("demo")(demo_cmd.demo)
