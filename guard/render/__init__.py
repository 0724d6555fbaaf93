"""Renderers of a guard Report: text, json, junit, sarif, github. Pure: a Report in, a str out.

Each format is one module with the same `render(report, *, files, rules)`. `files` maps a
subject or a topic to its schema file (for SARIF locations and GitHub annotations); `rules` is
the rule catalogue (SARIF's rule descriptions, JUnit's passing cases), beyond the rules the
findings name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from formats.errors import InvalidOptionError
from guard.render import github, json, junit, sarif, text
from guard.report import Report, Rule

Renderer = Callable[..., str]

RENDERERS: dict[str, Renderer] = {
    "text": text.render,
    "json": json.render,
    "junit": junit.render,
    "sarif": sarif.render,
    "github": github.render,
}
FORMATS = tuple(RENDERERS)


def render(report: Report, fmt: str, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise InvalidOptionError(f"unknown report format {fmt!r}",
                                 hint=f"use one of {', '.join(FORMATS)}") from None
    return renderer(report, files=files, rules=tuple(rules))
