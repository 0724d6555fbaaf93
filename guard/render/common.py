"""What every renderer shares: the rule catalogue, bytes as hex, keys as JSON, and redaction.

Renderers are pure, a Report in and a string out, but for `SchemaFiles`, which reads the schema
files a report names to point at a line. Every free text that reaches the output goes
through `safe()`, so a credential that slipped into a message (a registry URL with user:pass)
is redacted here at the last moment, whatever the analysis put in it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from keyguard.formats.immutable import Value
from keyguard.formats.secrets import redact
from keyguard.guard.render import UNSCOPED
from keyguard.guard.report import Category, Finding, Ignored, Report, Rule, Severity, Witness

if TYPE_CHECKING:
    from keyguard.guard.render.locate import Place, SchemaLines

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


class Located(Value):
    """Where a finding points: its schema file, the line where its path is declared there (None
    when the path is not found in the file), and why not."""

    __slots__ = ("file", "missing", "place")
    FIELDS = ("file", "place", "missing")
    file: Final[str | None]
    place: Final[Place | None]
    missing: Final[str | None]

    def __init__(self, file: str | None = None, place: Place | None = None,
                 missing: str | None = None) -> None:
        self.file = file
        self.place = place
        self.missing = missing


class SchemaFiles:
    """The schema files a report's findings point at (`files`: subject or topic -> file), each
    read once, and where in them each finding's path is declared (`keyguard.guard.render.locate`).

    The one place a renderer reads: a file that cannot be read, or a path it does not declare,
    gives a finding its file without a line, and says why.
    """

    def __init__(self, files: Mapping[str, str] | None) -> None:
        self.files = files or {}
        self._lines: dict[str, SchemaLines | str] = {}  # file -> its lines, or why not

    def locate(self, finding: Finding) -> Located:
        file = file_for(finding, self.files)
        if file is None and finding.subject is None and finding.topic is None:
            file = self.files.get(UNSCOPED)
        if file is None:
            return Located()
        what = path_names(finding)
        if what is None:
            return Located(file, None, f"{safe(finding.path)} is a setting of the topic, not of "
                           f"{safe(file)}")
        lines = self._read(file)
        if isinstance(lines, str):
            return Located(file, None, lines)
        place = lines.option(finding.path) if what == "option" else lines.field(finding.path)
        if place is not None:
            return Located(file, place)
        if what == "schema":
            why = f"where the key or value schema starts in {safe(file)} is not known"
        elif finding.path.startswith("/"):
            why = f"{safe(finding.path)} is a place in the schemas compared, not in the file"
        else:
            why = f"{what} {safe(finding.path)} is not declared in {safe(file)} (or is, more " \
                  "than once)"
        return Located(file, None, why)

    def _read(self, file: str) -> SchemaLines | str:
        if file not in self._lines:
            try:
                text = Path(file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                self._lines[file] = f"cannot read {safe(file)}: " + safe(
                    getattr(exc, "strerror", None) or "not UTF-8 text")
            else:
                # lazy: CLI start-up (only the formats that point at lines read files)
                from keyguard.guard.render.locate import SchemaLines, kind_of

                lines = SchemaLines.of(text, kind_of(file, text))
                self._lines[file] = lines if lines.readable else \
                    f"{safe(file)} does not read as a {lines.kind.lower()} schema"
        return self._lines[file]


def path_names(finding: Finding) -> str | None:
    """What a finding's path names in a schema file: the whole schema (`$`), a field, or an
    option (format options, key placement); None for what no schema file declares (the
    topic's settings, what an audit read)."""
    if finding.path == "$":
        return "schema"
    if finding.rule.category in (Category.TOPIC, Category.AUDIT):
        return None
    if finding.rule.category is Category.KEY_PLACEMENT or finding.rule.id in _option_rules():
        return "option"
    return "field"


@functools.cache
def _option_rules() -> frozenset[str]:
    """The IDs of the key-bytes rules whose findings name a format or table option."""
    # lazy: CLI start-up (the rule registry, only when a report points into files)
    from keyguard.guard import rules

    return frozenset(r.id for r in (
        rules.JSON_TIMESTAMP_STANDARD_CHANGED, rules.JSON_DECIMAL_PLAIN_NUMBER_CHANGED,
        rules.JSON_IGNORE_NULL_FIELDS_CHANGED, rules.CSV_FIELD_DELIMITER_CHANGED,
        rules.CSV_QUOTING_CHANGED, rules.CSV_NULL_LITERAL_CHANGED, rules.RAW_ENDIANNESS_CHANGED,
        rules.RAW_CHARSET_CHANGED, rules.KEY_FIELDS_PREFIX_CHANGED, rules.FORMAT_OPTION_CHANGED,
        rules.FORMAT_OPTION_NO_KEY_EFFECT))


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
        "old_headers": headers_list(w.old_headers),
        "new_headers": headers_list(w.new_headers),
    }


def headers_list(headers: Iterable[tuple[str, bytes]]) -> list[dict[str, str]]:
    """A witness's record headers as the JSON and SARIF renderers show them: name and hex."""
    return [{"name": safe(name), "hex": value.hex()} for name, value in headers]


def headers_text(headers: Iterable[tuple[str, bytes]]) -> str:
    """A witness's record headers in a line: `__key_schema_id=01 0f 1e ...`, or `(none)`."""
    shown = [f"{safe(name)}={' '.join(f'{b:02x}' for b in value)}" for name, value in headers]
    return "; ".join(shown) or "(none)"


def where(finding: Finding) -> str:
    """`topic orders, subject orders-key` (or empty)."""
    parts = []
    if finding.topic:
        parts.append(f"topic {safe(finding.topic)}")
    if finding.subject:
        parts.append(f"subject {safe(finding.subject)}")
    return ", ".join(parts)
