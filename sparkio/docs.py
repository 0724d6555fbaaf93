"""The docs pages' generated parts, all of them: `python -m keyguard.sparkio.docs`.

keyguard.guard.docs renders the formats' option tables, the exit codes, the rules and the CLI's
help; sparkio sits above both and contributes its own table (the connector's options,
`keyguard.sparkio.options`) and its commands (demo, broker, migrate), so no module in guard/ or
formats/ imports sparkio. With no argument every page in `PAGES` is rewritten (paths relative
to the repository's root, the working directory); with arguments, those files. A test fails
when a page drifts from the declarations.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from keyguard.formats.docs import rewrite
from keyguard.formats.options import OptionSet
from keyguard.guard import cli as guard_cli
from keyguard.guard import docs as guard_docs
from keyguard.sparkio.cli import COMMANDS as SPARKIO_COMMANDS
from keyguard.sparkio.options import CONNECTOR_OPTIONS

#: The pages that hold generated blocks, relative to the repository's root.
PAGES = (
    "docs/reference/cli.md",
    "docs/reference/format-options.md",
    "docs/reference/spark-options.md",
    "docs/reference/rules.md",
    "docs/reference/exit-codes.md",
    "docs/how-to/registries.md",
)


def option_sets() -> dict[str, Callable[[], OptionSet]]:
    """The option blocks sparkio contributes: the Spark connector's (writing and reading)."""
    return {"connector": lambda: CONNECTOR_OPTIONS}


def render(text: str) -> str:
    # Every `keyguard` command, guard's and sparkio's, in the order `keyguard --help` lists them.
    commands = {**guard_cli.COMMANDS, **SPARKIO_COMMANDS}
    return guard_docs.render(text, option_sets(), commands)


def main(argv: list[str]) -> int:
    for page in argv or PAGES:
        rewrite(Path(page), render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
