"""What every renderer shares: the rule catalogue, bytes as hex, keys as JSON, and redaction.

Renderers are pure: a Report in, a string out. Every free text that reaches the output goes
through `safe()`, so a credential that slipped into a message (a registry URL with user:pass)
is redacted here at the last moment, whatever the analysis put in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from keyguard.formats.secrets import redact
from keyguard.guard.report import Category, Finding, Ignored, Report, Rule, Severity, Witness

#: The order in which findings and counts are shown: the worst first.
SEVERITY_ORDER = (Severity.BREAKING, Severity.WARNING, Severity.INFO)


def safe(text: str | None) -> str:
    return redact(text) if text else ""


def safe_opt(text: str | None) -> str | None:
    return None if text is None else redact(text)


def jsonable(value: Any) -> Any:
    """Key values as JSON (decimals and times as text, bytes as base64), redacted strings."""
    if isinstance(value, str):
        return safe(value)
    if isinstance(value, dict):
        return {safe(str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    # lazy: CLI start-up (the loose-value module, only for decimals, times and bytes)
    from keyguard.formats.values import to_jsonable

    converted = to_jsonable(value)  # a leaf: text, or the value as it was
    return safe(converted) if isinstance(converted, str) else converted


def key_json(key: Mapping[str, Any]) -> str:
    """A witness key as one line of JSON, fields in the key's own order."""
    return json.dumps(jsonable(dict(key)), ensure_ascii=False, separators=(", ", ": "))


def hex_of(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def first_difference(old: bytes | None, new: bytes | None) -> int | None:
    """Index of the first byte that differs (or where the shorter one ends); None if equal."""
    if old is None or new is None or old == new:
        return None
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return i
    return min(len(old), len(new))


def counts(report: Report) -> dict[str, int]:
    found = {s.value: 0 for s in SEVERITY_ORDER}
    for f in report.findings:
        found[f.effective_severity.value] += 1
    return found


def ordered(report: Report) -> list[Finding]:
    """Findings the worst first, otherwise in the order the analysis found them."""
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    return sorted(report.findings, key=lambda f: rank[f.effective_severity])


def catalogue(report: Report, rules: Iterable[Rule] = ()) -> list[Rule]:
    """The rules to describe: the given catalogue, then any rule a finding (shown or hidden by
    an ignore) names beyond it."""
    out: dict[str, Rule] = {}
    for rule in rules:
        out.setdefault(rule.id, rule)
    for f in (*report.findings, *report.suppressed):
        out.setdefault(f.rule.id, f.rule)
    return list(out.values())


def ignored_line(i: Ignored) -> str:
    """`KG701 topic-not-compacted (--ignore): 1 finding hidden`: one ignore, for every renderer;
    a suppression says its place and reason: `KG101 key-field-added at region (orders-key.avsc
    line 7: region is fixed per tenant): 1 finding hidden`."""
    what = safe(i.selector)
    if len(i.rules) == 1 and i.rules[0].id == i.selector:
        what = f"{i.selector} {i.rules[0].name}"
    elif i.selector in {c.value for c in Category}:
        what = f"category {i.selector}, {len(i.rules)} rules"
    if i.path is not None:
        what += f" at {safe(i.path)}"
    if i.topic is not None:
        what += f" for topic {safe(i.topic)}"
    n = len(i.findings)
    source = safe(i.source) + (f": {safe(i.reason)}" if i.reason else "")
    line = f"{what} ({source}): {n} finding{'' if n == 1 else 's'} hidden"
    per_rule = i.hidden()
    if per_rule and list(per_rule) != [i.selector]:
        line += " (" + ", ".join(f"{rid}: {k}" for rid, k in sorted(per_rule.items())) + ")"
    return line


def ignored_dict(i: Ignored) -> dict[str, Any]:
    """One ignore as the JSON and SARIF renderers show it."""
    return {
        "selector": safe(i.selector),
        "source": safe(i.source),
        "topic": safe_opt(i.topic),
        "rules": [r.id for r in i.rules],
        "hidden": i.hidden(),
        "count": len(i.findings),
        "reason": safe_opt(i.reason),
        "path": safe_opt(i.path),
        "in_source": i.in_source,
    }


def file_for(finding: Finding, files: Mapping[str, str] | None) -> str | None:
    """The schema file a finding points at: looked up by subject first, then by topic."""
    if not files:
        return None
    for name in (finding.subject, finding.topic):
        if name is not None and name in files:
            return files[name]
    return None


def witness_dict(w: Witness | None) -> dict[str, Any] | None:
    """The witness as the JSON and SARIF renderers show it."""
    if w is None:
        return None
    return {
        "key": jsonable(dict(w.key)),
        "old_hex": hex_of(w.old_bytes),
        "new_hex": hex_of(w.new_bytes),
        "new_error": safe(w.new_error) or None,
        "old_partition": w.old_partition,
        "new_partition": w.new_partition,
        "first_difference": first_difference(w.old_bytes, w.new_bytes),
    }


def where(finding: Finding) -> str:
    """`topic orders, subject orders-key` (or empty)."""
    parts = []
    if finding.topic:
        parts.append(f"topic {safe(finding.topic)}")
    if finding.subject:
        parts.append(f"subject {safe(finding.subject)}")
    return ", ".join(parts)
