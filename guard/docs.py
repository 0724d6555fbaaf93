"""The README's rules table, generated from the rule catalogue (`python -m guard.docs README.md`).

Renders the block between `<!-- rules -->` and `<!-- /rules -->`, after the option tables
(`formats.docs`), so one command refreshes every generated part of the README.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from formats.docs import option_sets, rewrite
from formats.docs import render as render_options
from formats.options import OptionSet

_BLOCK = re.compile(r"(<!-- rules -->\n)(?P<body>.*?)(<!-- /rules -->)", re.DOTALL)
_EXIT_BLOCK = re.compile(r"(<!-- exit-codes -->\n)(?P<body>.*?)(<!-- /exit-codes -->)", re.DOTALL)


def exit_codes_table() -> str:
    """From `formats.errors.EXIT_CODES`, the same lines `--help` shows."""
    from formats.errors import EXIT_CODES

    lines = ["| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {text} |" for code, text in EXIT_CODES.items()]
    return "\n".join(lines)


def rules_table() -> str:
    from guard.rules_catalogue import catalogue

    lines = ["| ID | name | severity | what it catches |", "|---|---|---|---|"]
    for r in catalogue():
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| `{r.id}` | {r.name} | {r.severity.value} | {summary} |")
    return "\n".join(lines)


def all_option_sets() -> dict[str, Callable[[], OptionSet]]:
    """The formats' option sets plus the Spark connector's (writing and reading)."""

    def connector() -> OptionSet:
        from sparkio.options import CONNECTOR_OPTIONS

        return CONNECTOR_OPTIONS

    return {**option_sets(), "connector": connector}


def render(text: str) -> str:
    text = render_options(text, all_option_sets())
    text = _EXIT_BLOCK.sub(lambda m: f"{m.group(1)}{exit_codes_table()}\n{m.group(3)}", text)
    return _BLOCK.sub(lambda m: f"{m.group(1)}{rules_table()}\n{m.group(3)}", text)


def main(argv: list[str]) -> int:
    rewrite(Path(argv[0] if argv else "README.md"), render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
