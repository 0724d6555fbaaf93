"""SARIF 2.1.0, for GitHub code scanning and other static-analysis dashboards.

`tool.driver` names keyguard's version and the rule catalogue (id, name, summary, the why, an
example), so a dashboard can explain a result without keyguard at hand. A result points at the
schema file when the caller maps its subject or topic to one, at the line (and column) where the
finding's field or option is declared (`keyguard.guard.render.locate`); a path the file does not
declare once keeps region line 1 and says why in the result's `properties.location`. Without a
file, a result has only a logical location (topic, subject, path), which GitHub's upload
rejects, so CI that uploads SARIF passes `files`.

Findings of ignored rules are results too, suppressed (SARIF 2.1.0 3.27.23: a `suppressions`
entry of kind external, or inSource for a `keyguard: ignore` in the schema file, status
accepted, whose justification names the ignore and its reason), so dashboards
that honor suppressions hide them and the run still says what was ignored (`properties.ignored`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

from keyguard import __version__
from keyguard.guard.render.common import (
    Located,
    SchemaFiles,
    catalogue,
    headers_text,
    ignored_dict,
    ignored_line,
    key_json,
    ordered,
    safe,
    safe_opt,
    witness_dict,
)
from keyguard.guard.report import Finding, Ignored, Report, Rule, Severity
from keyguard.guard.rules_catalogue import formats_of

#: It describes every rule, so the caller hands it the whole catalogue.
USES_CATALOGUE = True

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
#: Semantic Versioning 2.0.0's version (its regular expression, as semver.org gives it).
_SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
                     r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?")


def render(report: Report, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    return json.dumps(document(report, files=files, rules=rules), indent=2,
                      ensure_ascii=False) + "\n"


def document(report: Report, *, files: Mapping[str, str] | None = None,
             rules: Iterable[Rule] = ()) -> dict[str, Any]:
    rule_list = catalogue(report, rules)
    index = {r.id: i for i, r in enumerate(rule_list)}
    schemas = SchemaFiles(files)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {**driver(), "rules": [_rule(r) for r in rule_list]}},
            "results": [_result(f, index[f.rule.id], schemas.locate(f))
                        for f in ordered(report)]
            + [{**_result(f, index[f.rule.id], schemas.locate(f)),
                "suppressions": [_suppression(i)]}
               for i in report.ignored for f in i.findings],
            "properties": {
                "verdict": report.verdict.value,
                "checked": [safe(c) for c in report.checked],
                "notes": [safe(n) for n in report.notes],
                "ignored": [ignored_dict(i) for i in report.ignored],
                **{s.name: s.data for s in report.sections},
            },
        }],
    }


def _suppression(i: Ignored) -> dict[str, Any]:
    """A hidden finding's `suppressions` entry: `inSource` when the schema file says it."""
    return {"kind": "inSource" if i.in_source else "external", "status": "accepted",
            "justification": f"ignored: {ignored_line(i)}"}


def render_error(kind: str, message: str, exit_code: int) -> str:
    return json.dumps(error_document(kind, message, exit_code), indent=2,
                      ensure_ascii=False) + "\n"


def error_document(kind: str, message: str, exit_code: int) -> dict[str, Any]:
    """A run that did not complete: no results, and an invocation that says why (SARIF
    2.1.0 3.20: `executionSuccessful` false, a `toolExecutionNotification` of level error
    whose descriptor, the error kind, is declared in `tool.driver.notifications`)."""
    text = safe(message)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                **driver(),
                "rules": [],
                "notifications": [{"id": kind,
                                   "shortDescription": {"text": f"keyguard error: {kind}"}}],
            }},
            "invocations": [{
                "executionSuccessful": False,
                "exitCode": exit_code,
                "toolExecutionNotifications": [{
                    "level": "error",
                    "message": {"text": text},
                    "descriptor": {"id": kind, "index": 0},
                }],
            }],
            "results": [],
            "properties": {"verdict": "error", "checked": [], "notes": [], "ignored": []},
        }],
    }


def driver() -> dict[str, str]:
    """The tool: its name and version (also as `semanticVersion` when it is one)."""
    out = {"name": "keyguard", "version": __version__}
    if _SEMVER.fullmatch(__version__):
        out["semanticVersion"] = __version__
    return out


def _rule(r: Rule) -> dict[str, Any]:
    example = ""
    if r.example_old or r.example_new:
        example = f"\n\nExample:\n  old: {r.example_old}\n  new: {r.example_new}"
    markdown = f"{r.why}"
    if example:
        markdown += (f"\n\n**Example**\n\n```\nold: {r.example_old}\nnew: {r.example_new}\n```")
    props: dict[str, Any] = {"category": r.category.value, "tags": ["keyguard", r.category.value]}
    formats = formats_of(r)
    if formats:
        props["formats"] = list(formats)
    return {
        "id": r.id,
        "name": r.name,
        "shortDescription": {"text": safe(r.summary)},
        "fullDescription": {"text": safe(r.why)},
        "help": {"text": safe(r.why + example), "markdown": safe(markdown)},
        "defaultConfiguration": {"level": LEVEL[r.severity]},
        "properties": props,
    }


def _result(f: Finding, rule_index: int, at: Located) -> dict[str, Any]:
    text = f"{safe(f.message)} (at {safe(f.path)})"
    w = f.witness
    if w is not None:
        new = w.new_bytes.hex() if w.new_bytes is not None else f"cannot encode: {w.new_error}"
        old = w.old_bytes.hex() if w.old_bytes is not None else "none"
        text += f"\nkey {key_json(w.key)}: old {old}, new {safe(new)}"
        if w.old_headers or w.new_headers:
            text += (f"\nheaders: old {headers_text(w.old_headers)}, "
                     f"new {headers_text(w.new_headers)}")
    if f.advice:
        text += f"\nfix: {safe(f.advice)}"
    scope = f.topic or f.subject or ""
    location: dict[str, Any] = {"logicalLocations": [{
        "name": safe(f.path),
        "fullyQualifiedName": safe(f"{scope}:{f.path}" if scope else f.path),
        "kind": "member",
    }]}
    where: dict[str, Any] = {}
    if at.file:
        # GitHub's upload needs a region: a path not found keeps the file's first line.
        region = {"startLine": 1} if at.place is None else \
            {"startLine": at.place.line, "startColumn": at.place.column}
        location["physicalLocation"] = {"artifactLocation": {"uri": _uri(at.file)},
                                        "region": region}
        where = {"location": {"found": at.place is not None}}
        if at.missing:
            where["location"]["missing"] = at.missing
    fingerprint = "\x1f".join((f.rule.id, f.topic or "", f.subject or "", f.path))
    return {
        "ruleId": f.rule.id,
        "ruleIndex": rule_index,
        "level": LEVEL[f.effective_severity],
        "message": {"text": text},
        "locations": [location],
        "partialFingerprints": {
            "keyguardFinding/v1": hashlib.sha256(fingerprint.encode()).hexdigest()[:32]},
        "properties": {
            "path": safe(f.path),
            "topic": safe_opt(f.topic),
            "subject": safe_opt(f.subject),
            "witness": witness_dict(w),
            "advice": safe_opt(f.advice),
            **where,
        },
    }


def _uri(file: str) -> str:
    """A relative path as a POSIX URI reference (what GitHub matches against the repo)."""
    path = PurePath(file)
    return path.as_uri() if path.is_absolute() else safe(path.as_posix())
