"""Renderers of a guard Report: text, json, junit, sarif, github, gitlab. A Report in, a str
out.

Each format is one module with the same `render(report, *, files, rules)`. `files` maps a
subject or a topic to its schema file (for SARIF locations and GitHub annotations, at the line
that declares the finding's path: `common.SchemaFiles` reads the files, the one read of any
renderer); `rules` is the rule catalogue (SARIF's rule descriptions, JUnit's passing cases),
beyond the rules the findings name. Every format but GitLab's says which rules the user
ignored (`Report.ignored`) and how many findings each hid: text and github a line each, json
an `ignored` list, SARIF suppressed results and `properties.ignored`, JUnit skipped testcases;
GitLab's Code Quality array holds issues only, so ignored findings are not in it.

A machine format carries its errors too: when keyguard could not judge (exit 2, 3 or 4),
`render_error` gives a document of the same format that says so (a JSON error object, a SARIF
tool execution notification, a JUnit `<error>`, a GitHub `::error`, a GitLab blocker issue), so
a pipeline that parses the report never mistakes a failure for an empty, passing one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from keyguard.formats.errors import InvalidOptionError
from keyguard.guard.catalog import RENDERERS, module_of

if TYPE_CHECKING:
    from keyguard.guard.report import Report, Rule

Renderer = Callable[..., str]
ErrorRenderer = Callable[[str, str, int], str]

#: Every report format; each is its module in the catalog (`keyguard.guard.catalog.RENDERERS`),
#: imported when it is asked for (a text report never loads the XML of junit).
FORMATS = tuple(RENDERERS)
#: The `files` entry for findings that name no subject and no topic (`keyguard diff --key`'s,
#: all about its candidate): SARIF, GitHub and GitLab point them at it.
UNSCOPED = ""
#: The formats whose errors are documents on stdout (text errors stay one line on stderr).
MACHINE_FORMATS = ("json", "junit", "sarif", "github", "gitlab")


def _module(fmt: str) -> ModuleType:
    """The renderer of `fmt`, imported when first asked for (InvalidOptionError when unknown)."""
    module = module_of(RENDERERS, fmt)
    if module is None:
        raise InvalidOptionError(f"unknown report format {fmt!r}",
                                 hint=f"use one of {', '.join(FORMATS)}")
    return module


def renderer(fmt: str) -> Renderer:
    """The `render` function of report format `fmt` (InvalidOptionError when unknown)."""
    return _module(fmt).render  # type: ignore[no-any-return]


def uses_catalogue(fmt: str) -> bool:
    """Whether format `fmt` describes every rule (SARIF's rule list, JUnit's passing cases), so
    the caller must hand it the whole catalogue (`USES_CATALOGUE` in the renderer's module)."""
    return fmt in FORMATS and bool(getattr(_module(fmt), "USES_CATALOGUE", False))


def render(report: Report, fmt: str, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    return renderer(fmt)(report, files=files, rules=tuple(rules))


def render_error(fmt: str, kind: str, message: str, exit_code: int) -> str | None:
    """The error document of a machine format; None for text (and unknown formats)."""
    if fmt not in MACHINE_FORMATS:
        return None
    return _module(fmt).render_error(kind, message, exit_code)  # type: ignore[no-any-return]
