"""`keyguard rules`: the guard's rule catalogue on the command line.

Its own module so that a `check` does not compile it."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from keyguard.formats.errors import InvalidOptionError
from keyguard.guard.cli.common import echo, fail, handles_errors


@handles_errors(formats=("text", "json"))
def rules_cmd(
    rule_id: Annotated[str | None, typer.Argument(
        help="Show one rule (KG101, a retired ID, or its name), or the rules of a category "
             "(key-placement).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
) -> None:
    """Every guard rule: ID, severity, category, why it matters, a minimal example, its checks.

    Contacts nothing."""
    import textwrap

    # lazy: CLI start-up (the catalogue imports every rule; tests replace it per call)
    from keyguard.guard import rules_catalogue
    from keyguard.guard.rules import ALIASES
    from keyguard.guard.selection import selector

    rules = rules_catalogue.catalogue()
    notes: list[str] = []
    one = False
    if rule_id:
        try:
            chosen = selector(rule_id, where="keyguard rules")
        except InvalidOptionError as exc:
            raise fail(f"no rule or category {rule_id!r} ({exc.hint})") from None
        rules = [r for r in rules if chosen.names(r)]
        one = not chosen.is_category
        if chosen.alias:
            notes.append(f"{chosen.alias} is a retired ID: it now means {chosen.token}")
    if fmt == "json":
        echo(json.dumps([{
            "id": r.id, "name": r.name, "category": r.category.value,
            "severity": r.severity.value, "summary": r.summary, "why": r.why,
            "example": {"old": r.example_old, "new": r.example_new},
            "formats": list(rules_catalogue.formats_of(r)),
            "checks": list(r.checks),
            "aliases": sorted(old for old, new in ALIASES.items() if new == r.id),
        } for r in rules], indent=2))
        return
    if fmt != "text":
        raise fail(f"--format must be text or json, got {fmt!r}")
    width = min(100, os.get_terminal_size().columns if os.isatty(1) else 100)
    for note in notes:
        echo(f"note: {note}")
    for r in rules:
        echo(f"{r.id}  {r.name}  [{r.severity.value}, {r.category.value}]")
        echo(f"    {r.summary}")
        if one:
            echo(textwrap.fill(r.why, width, initial_indent="    ",
                                     subsequent_indent="    "))
            if r.example_old or r.example_new:
                echo(f"    old: {r.example_old}\n    new: {r.example_new}")
            aliases = sorted(old for old, new in ALIASES.items() if new == r.id)
            if aliases:
                echo(f"    formerly: {', '.join(aliases)}")
        echo(f"    checked by: {', '.join(r.checks)}")
