"""GitHub Actions workflow commands: one annotation per finding on the run's summary page
(and on the schema file in the diff, when the caller maps its subject or topic to one: at the
line where the finding's field or option is declared, as in SARIF).

Escaping follows @actions/core: in data `%`, CR and LF; in properties also `:` and `,`.
Unescaped, a message with a newline would end the command, and one with `::` could start
another.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from keyguard.guard.render.common import (
    Located,
    SchemaFiles,
    first_difference,
    ignored_line,
    key_json,
    ordered,
    safe,
    where,
)
from keyguard.guard.report import Finding, Report, Rule, Severity

COMMAND = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def render(report: Report, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    schemas = SchemaFiles(files)
    lines = [_annotation(f, schemas.locate(f)) for f in ordered(report)]
    lines += [f"::notice title=keyguard note::{escape_data(safe(n))}" for n in report.notes]
    lines += [f"::notice title=keyguard ignored::{escape_data(ignored_line(i))}"
              for i in report.ignored]
    return "".join(line + "\n" for line in lines)


def render_error(kind: str, message: str, exit_code: int) -> str:
    """One error annotation: keyguard could not judge (exit `exit_code`)."""
    return (f"::error title=keyguard::{escape_data(f'error ({kind}): {safe(message)}')}"
            f"{escape_data(chr(10))}exit code {exit_code}\n")


def _annotation(f: Finding, at: Located) -> str:
    props = []
    if at.file:
        props.append(f"file={escape_property(safe(at.file))}")
    if at.place is not None:
        props += [f"line={at.place.line}", f"col={at.place.column}"]
    props.append(f"title={escape_property(f'{f.rule.id} {f.rule.name}')}")
    body = [safe(f.message)]
    context = where(f)
    body.append(f"at {safe(f.path)}" + (f" ({context})" if context else ""))
    w = f.witness
    if w is not None:
        body.append(f"key: {key_json(w.key)}")
        body.append(f"old bytes: {w.old_bytes.hex() if w.old_bytes is not None else '(none)'}")
        if w.new_bytes is None:
            body.append(f"new bytes: (cannot encode: {safe(w.new_error)})")
        else:
            diff = first_difference(w.old_bytes, w.new_bytes)
            mark = f" (first difference at byte {diff})" if diff is not None else ""
            body.append(f"new bytes: {w.new_bytes.hex()}{mark}")
        if w.old_partition != w.new_partition:
            body.append(f"partition: {w.old_partition} -> {w.new_partition}")
    return f"::{COMMAND[f.effective_severity]} {','.join(props)}::{escape_data(chr(10).join(body))}"
