"""The README's generated parts, all of them: `python -m keyguard.sparkio.docs README.md`.

keyguard.guard.docs renders the formats' option tables, the exit codes and the rules; sparkio sits
above both and contributes its own table (the connector's options, `keyguard.sparkio.options`), so
no module in guard/ or formats/ imports sparkio. A test fails when the README drifts from the
declarations.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from keyguard.formats.docs import rewrite
from keyguard.formats.options import OptionSet
from keyguard.guard import docs as guard_docs
from keyguard.sparkio.options import CONNECTOR_OPTIONS


def option_sets() -> dict[str, Callable[[], OptionSet]]:
    """The option blocks sparkio contributes: the Spark connector's (writing and reading)."""
    return {"connector": lambda: CONNECTOR_OPTIONS}


def render(text: str) -> str:
    return guard_docs.render(text, option_sets())


def main(argv: list[str]) -> int:
    rewrite(Path(argv[0] if argv else "README.md"), render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
