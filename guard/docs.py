"""The README's rules and exit-code tables, generated from the rule catalogue and the exit codes.

Renders the block between `<!-- rules -->` and `<!-- /rules -->`, after the option tables
(`keyguard.formats.docs`) and any option sets a package above guard/ contributes:
`keyguard.sparkio.docs` adds the Spark connector's and is the README's one command (`python -m
keyguard.sparkio.docs README.md`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from keyguard.formats.docs import option_sets
from keyguard.formats.docs import render as render_options
from keyguard.formats.errors import EXIT_CODES
from keyguard.formats.options import OptionSet
from keyguard.guard.rules_catalogue import catalogue

_BLOCK = re.compile(r"(<!-- rules -->\n)(?P<body>.*?)(<!-- /rules -->)", re.DOTALL)
_EXIT_BLOCK = re.compile(r"(<!-- exit-codes -->\n)(?P<body>.*?)(<!-- /exit-codes -->)", re.DOTALL)


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


def render(text: str, contributed: Mapping[str, Callable[[], OptionSet]] | None = None) -> str:
    """The generated blocks of `text`: the formats' option tables plus the `contributed` sets
    (by block name), the exit codes and the rules."""
    text = render_options(text, {**option_sets(), **(contributed or {})})
    text = _EXIT_BLOCK.sub(lambda m: f"{m.group(1)}{exit_codes_table()}\n{m.group(3)}", text)
    return _BLOCK.sub(lambda m: f"{m.group(1)}{rules_table()}\n{m.group(3)}", text)

