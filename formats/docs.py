"""The docs' option tables, generated from the option declarations (never written by hand).

`python -m keyguard.formats.docs PAGE...` rewrites every block between `<!-- options:NAME -->` and
`<!-- /options:NAME -->` (`python -m keyguard.sparkio.docs` rewrites every generated page); a test
fails when a page is out of date.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from keyguard.formats.codec import format_factory, format_names
from keyguard.formats.options import OptionSet
from keyguard.formats.plan import TABLE_OPTIONS
from keyguard.formats.registry.connect import REGISTRY_OPTIONS

_BLOCK = re.compile(
    r"(<!-- options:(?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /options:(?P=name) -->)",
    re.DOTALL,
)


def option_sets() -> dict[str, Callable[[], OptionSet]]:
    """The option sets `formats` declares: each format's, the table's, the registry's."""

    def of_format(name: str) -> Callable[[], OptionSet]:
        return lambda: format_factory(name).options

    out: dict[str, Callable[[], OptionSet]] = {name: of_format(name) for name in format_names()}
    out["table"] = lambda: TABLE_OPTIONS
    out["registry"] = lambda: REGISTRY_OPTIONS
    return out


def render(text: str, sets: Mapping[str, Callable[[], OptionSet]] | None = None) -> str:
    """Every `<!-- options:NAME -->` block of `text`, rendered from `sets` (default: formats')."""
    known = dict(sets) if sets is not None else option_sets()

    def table(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in known:
            raise KeyError(f"the page names option block {name!r}; known: {', '.join(known)}")
        return f"{m.group(1)}{known[name]().markdown_table()}\n{m.group(4)}"

    return _BLOCK.sub(table, text)


def rewrite(path: Path, render_text: Callable[[str], str]) -> None:
    """Re-render the generated parts of `path` in place (only when they changed)."""
    old = path.read_text(encoding="utf-8")
    new = render_text(old)
    if new != old:
        path.write_text(new, encoding="utf-8")
        print(f"updated generated tables in {path}")


def main(argv: list[str]) -> int:
    for page in argv or ["docs/reference/format-options.md"]:
        rewrite(Path(page), render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
