"""The GitLab Code Quality report: one issue per finding, at the schema file's line that
declares the finding's path, with fingerprints that stay while the finding does, and an error
that is a blocker issue, never an empty (passing) array."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from keyguard.guard import rules
from keyguard.guard.cli import app
from keyguard.guard.render import render, render_error
from keyguard.guard.report import Finding, Report

REPO = Path(__file__).resolve().parents[2]
KEY_V1 = REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc"
#: The keys GitLab's Code Quality schema requires of an issue.
REQUIRED = {"description", "check_name", "fingerprint", "severity", "location"}


def _key_v2(changed_type: str) -> str:
    doc = json.loads(KEY_V1.read_text())
    doc["fields"][0]["type"] = changed_type
    return json.dumps(doc, indent=2) + "\n"


@pytest.fixture
def schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "schemas"


def _check(*args: str) -> tuple[int, list[dict]]:  # type: ignore[type-arg]
    r = CliRunner().invoke(app, ["check", "--topic", "pageviews_per_region", *args,
                                 "-f", "gitlab"], catch_exceptions=False)
    return r.exit_code, json.loads(r.stdout)


def test_a_breaking_key_change_is_an_issue_at_the_fields_line(schemas: Path) -> None:
    text = _key_v2("int")
    Path("key_v2.avsc").write_text(text)
    code, issues = _check("--key-schema", "key_v2.avsc")
    assert code == 1
    assert issues and all(REQUIRED <= set(i) for i in issues)
    changed = [i for i in issues if "user_region" in i["description"]]
    assert changed and {i["severity"] for i in changed} == {"critical"}
    line = next(n for n, t in enumerate(text.splitlines(), 1) if '"user_region"' in t)
    assert line > 1
    assert changed[0]["location"] == {"path": "key_v2.avsc", "lines": {"begin": line}}
    assert re.fullmatch(r"KG\d{3}", changed[0]["check_name"])
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_fingerprints_stay_while_the_finding_does(schemas: Path) -> None:
    Path("key_v2.avsc").write_text(_key_v2("int"))
    _, first = _check("--key-schema", "key_v2.avsc")
    Path("key_v2.avsc").write_text("\n\n" + _key_v2("int"))  # moved down: same findings
    _, again = _check("--key-schema", "key_v2.avsc")
    assert [i["fingerprint"] for i in first] == [i["fingerprint"] for i in again]
    assert [i["location"]["lines"]["begin"] for i in again] != \
        [i["location"]["lines"]["begin"] for i in first]


def test_an_unchanged_key_has_only_info_issues(schemas: Path) -> None:
    code, issues = _check("--key-schema", str(KEY_V1))
    assert code == 0
    assert {i["severity"] for i in issues} <= {"info"}


def test_a_finding_without_a_file_names_its_subject() -> None:
    f = Finding(rules.ALL_RULES["KG201"], "user_region", "the type changed",
                topic="orders", subject="orders-key")
    (issue,) = json.loads(render(Report.of([f], [], []), "gitlab"))
    assert issue["location"] == {"path": "orders-key", "lines": {"begin": 1}}


def test_an_error_is_a_blocker_issue_never_an_empty_array() -> None:
    (issue,) = json.loads(render_error("gitlab", "registry-unavailable",
                                       "registry https://u:secret@r.example down", 3))
    assert issue["severity"] == "blocker" and REQUIRED <= set(issue)
    assert "exit code 3" in issue["description"] and "secret" not in issue["description"]
