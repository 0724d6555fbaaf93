"""GitLab Code Quality: a JSON array of issues, the report a merge request's widget and diff
show (`artifacts: reports: codequality:` in `.gitlab-ci.yml`).

Each finding is one issue: its description, the rule as `check_name`, a fingerprint that stays
the same while the finding does (rule, topic, subject and path: not the message, whose counts
change from run to run), a severity, and the schema file with the line that declares the
finding's path (`common.SchemaFiles`, as SARIF's). GitLab requires a path: a finding without a
schema file names its subject or topic instead. Ignored findings are not issues (the widget has
no place for them); an error of keyguard is one blocker issue, so an empty array always means
nothing was found, never that nothing was judged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from keyguard.guard.render.common import Located, SchemaFiles, ordered, safe, where
from keyguard.guard.report import Finding, Report, Rule, Severity

#: GitLab's severities are info, minor, major, critical and blocker.
SEVERITY = {Severity.BREAKING: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def render(report: Report, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    schemas = SchemaFiles(files)
    issues = [_issue(f, schemas.locate(f)) for f in ordered(report)]
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"


def render_error(kind: str, message: str, exit_code: int) -> str:
    """One blocker issue: keyguard could not judge (exit `exit_code`)."""
    text = f"keyguard could not judge ({kind}, exit code {exit_code}): {safe(message)}"
    issue = {"description": text, "check_name": f"keyguard-{kind}",
             "fingerprint": _fingerprint("error", kind), "severity": "blocker",
             "location": {"path": "keyguard", "lines": {"begin": 1}}}
    return json.dumps([issue], indent=2, ensure_ascii=False) + "\n"


def _issue(f: Finding, at: Located) -> dict[str, Any]:
    context = where(f)
    description = f"{f.rule.id} {f.rule.name}: {safe(f.message)} (at {safe(f.path)}" + (
        f", {context})" if context else ")")
    path = at.file or f.subject or f.topic or "keyguard"
    return {"description": description, "check_name": f.rule.id,
            "fingerprint": _fingerprint(f.rule.id, f.topic or "", f.subject or "", f.path),
            "severity": SEVERITY[f.effective_severity],
            "location": {"path": safe(path),
                         "lines": {"begin": at.place.line if at.place is not None else 1}}}


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]
