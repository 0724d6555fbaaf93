"""The machine report: one JSON document whose shape is a contract (`version` bumps on change).

    {
      "version": 1,
      "verdict": "safe" | "warn" | "breaking",
      "counts": {"breaking": int, "warning": int, "info": int},
      "checked": [str],                  # what was compared
      "notes": [str],                    # what could not be known (no credentials)
      "findings": [{                     # the worst first
        "rule": {"id": str, "name": str, "category": str, "severity": str},
        "severity": str,                 # this finding's, which may differ from the rule's
        "path": str,                     # `user_region`, `address.zip`, `$`, or an option
        "message": str,
        "topic": str | null,
        "subject": str | null,
        "file": str | null,              # the schema file, when the caller said which
        "witness": null | {
          "key": {...},                  # decimals and times as strings, bytes as base64
          "old_hex": str | null, "new_hex": str | null,
          "new_error": str | null,       # why the new schema cannot encode the key
          "old_partition": int | null, "new_partition": int | null,
          "first_difference": int | null, # index of the first differing byte
          "old_headers": [{"name": str, "hex": str}],  # the headers each side's framing
          "new_headers": [{"name": str, "hex": str}]   # writes (a schema id in a header)
        },
        "advice": str | null             # the durable fix, where there is one (KG501)
      }],
      "ignored": [{                      # rules the user ignored; their findings do not count
        "selector": str,                 # a rule ID, a category, or "not selected (...)"
        "source": str,                   # --ignore, --select, config file, guard.ignore,
                                         # or where a suppression is: "k.avsc line 7"
        "topic": str | null,             # null: every topic
        "rules": [str],                  # the rule IDs it covers
        "hidden": {str: int},            # findings hidden per rule ID
        "count": int,                    # findings hidden in all
        "reason": str | null,            # why, for a rule accepted with a reason
        "path": str | null,              # the schema path it is limited to, if any
        "in_source": bool,               # written in the schema file (else config or flags)
        "findings": [...]                # the hidden findings, shaped as above
      }],
      "audit": {...},                    # only in `keyguard audit`'s report: its numbers
      "error": null                      # always null in a report
    }

When keyguard could not judge (exit 2, 3 or 4), the document has the same keys, no findings,
and says why:

    {"version": 1, "verdict": "error", "counts": {...all 0}, "checked": [], "notes": [],
     "findings": [], "ignored": [], "error": {"kind": str, "message": str, "exit_code": 2 | 3 | 4}}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from keyguard.guard.render.common import (
    SEVERITY_ORDER,
    counts,
    file_for,
    ignored_dict,
    ordered,
    safe,
    safe_opt,
    witness_dict,
)
from keyguard.guard.report import Finding, Report, Rule

VERSION = 1


def render(report: Report, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    return json.dumps(document(report, files=files), indent=2, ensure_ascii=False) + "\n"


def document(report: Report, *, files: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "version": VERSION,
        "verdict": report.verdict.value,
        "counts": counts(report),
        "checked": [safe(c) for c in report.checked],
        "notes": [safe(n) for n in report.notes],
        "findings": [finding_dict(f, file_for(f, files)) for f in ordered(report)],
        "ignored": [{**ignored_dict(i),
                     "findings": [finding_dict(f, file_for(f, files)) for f in i.findings]}
                    for i in report.ignored],
        # Extra sections (`keyguard audit`'s numbers) only when the report has them.
        **{s.name: s.data for s in report.sections},
        "error": None,
    }


def render_error(kind: str, message: str, exit_code: int) -> str:
    return json.dumps(error_document(kind, message, exit_code), indent=2,
                      ensure_ascii=False) + "\n"


def error_document(kind: str, message: str, exit_code: int) -> dict[str, Any]:
    """A report's shape, with no verdict earned: `verdict` is "error" and `error` says why."""
    return {
        "version": VERSION,
        "verdict": "error",
        "counts": {s.value: 0 for s in SEVERITY_ORDER},
        "checked": [],
        "notes": [],
        "findings": [],
        "ignored": [],
        "error": {"kind": kind, "message": safe(message), "exit_code": exit_code},
    }


def finding_dict(f: Finding, file: str | None = None) -> dict[str, Any]:
    return {
        "rule": {"id": f.rule.id, "name": f.rule.name, "category": f.rule.category.value,
                 "severity": f.rule.severity.value},
        "severity": f.effective_severity.value,
        "path": safe(f.path),
        "message": safe(f.message),
        "topic": safe_opt(f.topic),
        "subject": safe_opt(f.subject),
        "file": safe_opt(file),
        "witness": witness_dict(f.witness),
        "advice": safe_opt(f.advice),
    }
