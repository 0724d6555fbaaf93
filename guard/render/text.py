"""The human report: a verdict line, each finding with its example key and bytes, a summary.

Ignored rules get a line each (what was ignored, where, how many findings it hid); their
findings are not shown and do not count.

The first differing byte is marked under the new bytes, so a reader sees at once whether the
schema id (bytes 1-4), a field, or only the partition changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from keyguard.guard.render.common import (
    counts,
    file_for,
    first_difference,
    headers_text,
    ignored_line,
    key_json,
    ordered,
    safe,
    where,
)
from keyguard.guard.report import Finding, Report, Rule, Witness

#: Bytes shown per line; a longer key is shown around its first difference.
WIDTH = 32
_INDENT = 16
_LABEL = "    {:<12}"


def render(report: Report, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    c = counts(report)
    lines = [f"keyguard: {report.verdict.value.upper()}"
             + ("" if report.findings else " (no findings)")]
    lines += [f"checked: {safe(x)}" for x in report.checked]
    for f in ordered(report):
        lines.append("")
        lines += finding_lines(f, file_for(f, files))
    for section in report.sections:
        lines.append("")
        lines += [safe(x) for x in section.lines]
    if report.notes:
        lines.append("")
        lines += [f"note: {safe(n)}" for n in report.notes]
    if report.ignored:
        lines.append("")
        lines += [f"ignored: {ignored_line(i)}" for i in report.ignored]
    lines.append("")
    hidden = f", {len(report.suppressed)} ignored" if report.ignored else ""
    lines.append(", ".join(f"{n} {sev}" for sev, n in c.items()) + hidden
                 + f": verdict {report.verdict.value}")
    return "\n".join(lines) + "\n"


def finding_lines(f: Finding, file: str | None = None) -> list[str]:
    """One finding as indented lines (also the body of a JUnit failure)."""
    head = f"{f.effective_severity.value.upper()} {f.rule.id} {f.rule.name}"
    context = where(f)
    lines = [head + (f" ({context})" if context else "")]
    lines.append(_LABEL.format("at:") + safe(f.path))
    if file:
        lines.append(_LABEL.format("file:") + safe(file))
    lines.append(_LABEL.format("message:") + safe(f.message).replace("\n", "\n" + " " * _INDENT))
    if f.witness is not None:
        lines += _witness(f.witness)
    if f.advice:
        lines.append(_LABEL.format("fix:") + safe(f.advice))
    return lines


def _witness(w: Witness) -> list[str]:
    lines = [_LABEL.format("key:") + key_json(w.key)]
    diff = first_difference(w.old_bytes, w.new_bytes)
    start = 0 if diff is None or diff < WIDTH - 8 else diff - 8
    lines.append(_LABEL.format("old bytes:") + _hex(w.old_bytes, start)[0])
    if w.new_bytes is None:
        lines.append(_LABEL.format("new bytes:")
                     + f"(cannot encode: {safe(w.new_error) or 'no reason given'})")
    else:
        shown, lead = _hex(w.new_bytes, start)
        lines.append(_LABEL.format("new bytes:") + shown)
        if diff is not None:
            col = _INDENT + lead + 3 * (diff - start)
            lines.append(" " * col + f"^^ first difference at byte {diff}")
    if w.old_headers or w.new_headers:
        lines.append(_LABEL.format("old header:") + headers_text(w.old_headers))
        lines.append(_LABEL.format("new header:") + headers_text(w.new_headers))
    if w.old_partition != w.new_partition:
        lines.append(_LABEL.format("partition:") + f"{_part(w.old_partition)} -> "
                     f"{_part(w.new_partition)}")
    return lines


def _hex(data: bytes | None, start: int) -> tuple[str, int]:
    """Spaced hex from `start`, WIDTH bytes at most; and the width of the leading ellipsis."""
    if data is None:
        return "(none)", 0
    lead = "… " if start else ""
    body = " ".join(f"{b:02x}" for b in data[start:start + WIDTH])
    tail = f" … ({len(data)} bytes)" if len(data) > start + WIDTH else ""
    return lead + body + tail, len(lead)


def _part(p: int | None) -> str:
    return "?" if p is None else str(p)
