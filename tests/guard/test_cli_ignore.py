"""--ignore and --select on every command that judges, and `ignore` in the config file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keyguard.guard.cli import app

REPO = Path(__file__).resolve().parents[2]
KEY_V1 = REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc"
VALUE_V1 = REPO / "schemas/subjects/pageviews_per_region-value/v1.avsc"
TOPIC = "pageviews_per_region"


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "schemas"


@pytest.fixture
def documented(tmp_path: Path) -> Path:
    """The key schema with a doc: the same Avro bytes, a new schema id (KG501, breaking)."""
    doc = json.loads(KEY_V1.read_text())
    doc["doc"] = "now documented"
    out = tmp_path / "cand.avsc"
    out.write_text(json.dumps(doc))
    return out


def _json(r: Any) -> dict[str, Any]:
    return json.loads(r.output)  # type: ignore[no-any-return]


def test_check_ignore_turns_the_exit_code(schemas: Path, documented: Path) -> None:
    base = ("check", "--topic", TOPIC, "--key-schema", str(documented), "-f", "json")
    before = run(*base)
    assert before.exit_code == 1 and _json(before)["verdict"] == "breaking"
    after = run(*base, "--ignore", "KG501")
    assert after.exit_code == 0, after.output
    doc = _json(after)
    assert doc["verdict"] == "safe" and "KG501" not in [f["rule"]["id"] for f in doc["findings"]]
    assert [(i["selector"], i["count"]) for i in doc["ignored"]] == [("KG501", 1)]


def test_check_ignore_repeatable_and_comma_separated(schemas: Path, documented: Path) -> None:
    r = run("check", "--topic", TOPIC, "--key-schema", str(documented),
            "--ignore", "KG501,KG906", "--ignore", "key-placement")
    assert r.exit_code == 0, r.output
    assert "ignored: KG501 confluent-schema-id-changed (--ignore): 1 finding hidden" in r.output
    assert "ignored: KG906 avro-metadata-changed (--ignore): 1 finding hidden" in r.output
    assert "ignored: category key-placement, 4 rules (--ignore): 0 findings hidden" in r.output
    assert r.output.rstrip().endswith("0 breaking, 0 warning, 1 info, 2 ignored: verdict safe")


def test_check_select_keeps_only_the_selected(schemas: Path, documented: Path) -> None:
    r = run("check", "--topic", TOPIC, "--key-schema", str(documented), "-f", "json",
            "--select", "KG012")
    assert r.exit_code == 0, r.output
    doc = _json(r)
    assert [f["rule"]["id"] for f in doc["findings"]] == ["KG012"]
    (unselected,) = doc["ignored"]
    assert unselected["selector"] == "not selected (KG012)"
    assert unselected["hidden"] == {"KG501": 1, "KG906": 1}
    assert run("check", "--topic", TOPIC, "--key-schema", str(documented),
               "--select", "key-bytes").exit_code == 1


def test_config_ignore_global_and_per_topic(schemas: Path, documented: Path,
                                            tmp_path: Path) -> None:
    cfg = tmp_path / "keyguard.toml"
    entry = f'[[topics]]\nname = "{TOPIC}"\nkey-schema = "{documented.name}"\n'
    cfg.write_text(f'registry = "file://{schemas}"\nignore = ["KG906"]\n{entry}')
    r = run("check", "--config", str(cfg), "-f", "json")
    assert r.exit_code == 1
    assert [(i["selector"], i["source"], i["topic"]) for i in _json(r)["ignored"]] == [
        ("KG906", str(cfg), None)]
    cfg.write_text(f'registry = "file://{schemas}"\nignore = ["KG906"]\n{entry}'
                   'ignore = ["confluent-schema-id-changed"]\n')
    r = run("check", "--config", str(cfg), "-f", "json")
    assert r.exit_code == 0, r.output
    assert [(i["selector"], i["topic"], i["count"]) for i in _json(r)["ignored"]] == [
        ("KG906", None, 1), ("KG501", TOPIC, 1)]
    # The command line adds to the file; the topic's own ignore follows it onto --topic.
    r = run("check", "--config", str(cfg), "--topic", TOPIC, "--ignore", "KG012", "-f", "json")
    assert [i["selector"] for i in _json(r)["ignored"]] == ["KG012", "KG906", "KG501"]


def test_diff_ignore_and_select(tmp_path: Path) -> None:
    added = json.loads(KEY_V1.read_text())
    added["fields"].append({"name": "tenant", "type": ["null", "string"], "default": None})
    cand = tmp_path / "added.avsc"
    cand.write_text(json.dumps(added))
    assert run("diff", str(KEY_V1), str(cand), "--key").exit_code == 1
    r = run("diff", str(KEY_V1), str(cand), "--key", "--ignore", "key-bytes", "-f", "json")
    assert r.exit_code == 0 and _json(r)["findings"] == []
    assert _json(r)["ignored"][0]["count"] >= 1
    narrowed = json.loads(VALUE_V1.read_text())
    narrowed["fields"][1]["type"] = ["null", "int"]
    value = tmp_path / "narrow.avsc"
    value.write_text(json.dumps(narrowed))
    assert run("diff", str(VALUE_V1), str(value), "--level", "BACKWARD").exit_code == 1
    assert run("diff", str(VALUE_V1), str(value), "--level", "BACKWARD",
               "--select", "key-bytes").exit_code == 0
    assert run("diff", str(VALUE_V1), str(value), "--level", "BACKWARD",
               "--ignore", "value-incompatible").exit_code == 0


def test_the_git_gate_honors_ignore(schemas: Path, tmp_path: Path) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, env=env)
    doc = json.loads(KEY_V1.read_text())
    doc["namespace"] = "com.example"
    (schemas / f"subjects/{TOPIC}-key/v2.avsc").write_text(json.dumps(doc))
    assert run("check", "--against", "git:main").exit_code == 1
    r = run("check", "--against", "git:main", "--ignore", "KG501,KG906", "-f", "sarif")
    assert r.exit_code == 0, r.output
    results = _json(r)["runs"][0]["results"]
    suppressed = {x["ruleId"] for x in results if x.get("suppressions")}
    assert "KG501" in suppressed
    assert all(x.get("suppressions") for x in results if x["level"] == "error")
