"""The docs' rules, exit-code and CLI reference, generated from the rule catalogue, the exit
codes and the commands' declarations.

Renders the blocks between `<!-- rules -->` and `<!-- /rules -->`, `<!-- exit-codes -->` and
`<!-- cli -->` (each command's `--help`, as plain text), after the option tables
(`keyguard.formats.docs`) and any option sets a package above guard/ contributes:
`keyguard.sparkio.docs` adds the Spark connector's and its commands, and is the docs' one command
(`python -m keyguard.sparkio.docs`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from keyguard.formats.docs import option_sets
from keyguard.formats.docs import render as render_options
from keyguard.formats.errors import EXIT_CODES
from keyguard.formats.options import OptionSet
from keyguard.guard.cli import COMMANDS, built_command
from keyguard.guard.rules_catalogue import catalogue

_BLOCK = re.compile(r"(<!-- rules -->\n)(?P<body>.*?)(<!-- /rules -->)", re.DOTALL)
_EXIT_BLOCK = re.compile(r"(<!-- exit-codes -->\n)(?P<body>.*?)(<!-- /exit-codes -->)", re.DOTALL)
_CLI_BLOCK = re.compile(r"(<!-- cli -->\n)(?P<body>.*?)(<!-- /cli -->)", re.DOTALL)
#: The width the CLI reference is wrapped at, whatever the terminal that renders it.
_HELP_WIDTH = 100


def exit_codes_table() -> str:
    """From `keyguard.formats.errors.EXIT_CODES`, the same lines `--help` shows."""

    lines = ["| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {text} |" for code, text in EXIT_CODES.items()]
    return "\n".join(lines)


def rules_table() -> str:

    lines = ["| ID | name | severity | what it catches |", "|---|---|---|---|"]
    for r in catalogue():
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| `{r.id}` | {r.name} | {r.severity.value} | {summary} |")
    return "\n".join(lines)


def command_help(name: str, function: Callable[..., Any] | str | None = None) -> str:
    """`keyguard <name> --help` as plain text (no colours, no boxes), `_HELP_WIDTH` wide."""
    command = built_command(name, function)
    ctx = command.context_class(command, info_name=f"keyguard {name}",
                                terminal_width=_HELP_WIDTH, max_content_width=_HELP_WIDTH)
    formatter = ctx.make_formatter()
    # click's plain rendering (typer's own Command base, whichever click typer runs on), not
    # typer's rich one, so the page does not depend on rich or on the terminal.
    plain: Any = next(c for c in type(command).__mro__ if c.__name__ == "Command")
    plain.format_help(command, ctx, formatter)
    return formatter.getvalue().rstrip()


def cli_reference(commands: Mapping[str, Callable[..., Any] | str]) -> str:
    """One section per command (name -> its function, or "module:function"): its `--help`, in
    a text block."""
    parts = [f"### `keyguard {name}`\n\n```text\n{command_help(name, function)}\n```"
             for name, function in commands.items()]
    return "\n\n".join(parts)


def render(text: str, contributed: Mapping[str, Callable[[], OptionSet]] | None = None,
           commands: Mapping[str, Callable[..., Any] | str] | None = None) -> str:
    """The generated blocks of `text`: the formats' option tables plus the `contributed` sets
    (by block name), the exit codes, the rules and the help of the `commands` (by default
    guard's)."""
    text = render_options(text, {**option_sets(), **(contributed or {})})
    text = _EXIT_BLOCK.sub(lambda m: f"{m.group(1)}{exit_codes_table()}\n{m.group(3)}", text)
    if _CLI_BLOCK.search(text):
        reference = cli_reference(COMMANDS if commands is None else commands)
        text = _CLI_BLOCK.sub(lambda m: f"{m.group(1)}{reference}\n{m.group(3)}", text)
    return _BLOCK.sub(lambda m: f"{m.group(1)}{rules_table()}\n{m.group(3)}", text)

