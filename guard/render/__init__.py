"""Renderers of a guard Report: text, json, junit, sarif, github. Pure: a Report in, a str out.

Each format is one module with the same `render(report, *, files, rules)`. `files` maps a
subject or a topic to its schema file (for SARIF locations and GitHub annotations); `rules` is
the rule catalogue (SARIF's rule descriptions, JUnit's passing cases), beyond the rules the
findings name. Every format says which rules the user ignored (`Report.ignored`) and how many
findings each hid: text and github a line each, json an `ignored` list, SARIF suppressed results
and `properties.ignored`, JUnit skipped testcases.

A machine format carries its errors too: when keyguard could not judge (exit 2, 3 or 4),
`render_error` gives a document of the same format that says so (a JSON error object, a SARIF
tool execution notification, a JUnit `<error>`, a GitHub `::error`), so a pipeline that parses
the report never mistakes a failure for an empty, passing one.
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

ErrorRenderer = Callable[[str, str, int], str]

#: The formats whose errors are documents on stdout (text errors stay one line on stderr).
ERROR_RENDERERS: dict[str, ErrorRenderer] = {
    "json": json.render_error,
    "junit": junit.render_error,
    "sarif": sarif.render_error,
    "github": github.render_error,
}
MACHINE_FORMATS = tuple(ERROR_RENDERERS)


def render(report: Report, fmt: str, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise InvalidOptionError(f"unknown report format {fmt!r}",
                                 hint=f"use one of {', '.join(FORMATS)}") from None
    return renderer(report, files=files, rules=tuple(rules))


def render_error(fmt: str, kind: str, message: str, exit_code: int) -> str | None:
    """The error document of a machine format; None for text (and unknown formats)."""
    renderer = ERROR_RENDERERS.get(fmt)
    return None if renderer is None else renderer(kind, message, exit_code)
