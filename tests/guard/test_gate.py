"""The CI gate: the file registry of a working tree against itself at a git ref."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from keyguard.formats.registry.file import FileRegistry
from keyguard.guard.gate import discover_topics, gate, registry_at_ref
from keyguard.guard.report import Verdict

REPO = Path(__file__).resolve().parents[2]
TOPIC = "pageviews_per_region"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                        "PATH": "/usr/bin:/bin"})


@pytest.fixture
def repo(tmp_path):
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    return tmp_path


def _add_version(repo: Path, subject: str, mutate) -> None:
    d = repo / "schemas" / "subjects" / subject
    doc = json.loads((d / "v1.avsc").read_text())
    mutate(doc)
    (d / "v2.avsc").write_text(json.dumps(doc))


def test_no_change_is_safe_with_a_note(repo):
    report = gate(registry_at_ref(repo / "schemas", "main"), FileRegistry(repo / "schemas"))
    assert report.verdict is Verdict.SAFE and not report.findings
    assert any("no schema changed" in n for n in report.notes)


def test_a_new_key_version_is_blocked(repo):
    _add_version(repo, f"{TOPIC}-key", lambda d: d["fields"].append(
        {"name": "tenant", "type": ["null", "string"], "default": None}))
    report = gate(registry_at_ref(repo / "schemas", "main"), FileRegistry(repo / "schemas"))
    assert report.verdict is Verdict.BREAKING
    assert all(f.topic == TOPIC for f in report.breaking)


def test_a_compatible_value_version_passes(repo):
    _add_version(repo, f"{TOPIC}-value", lambda d: d["fields"].append(
        {"name": "avg_ms", "type": ["null", "double"], "default": None}))
    report = gate(registry_at_ref(repo / "schemas", "main"), FileRegistry(repo / "schemas"))
    assert report.verdict is Verdict.SAFE
    assert any("value" in c for c in report.checked)


def test_a_reformatted_key_file_is_no_change(repo):
    d = repo / "schemas" / "subjects" / f"{TOPIC}-key"
    (d / "v2.avsc").write_text(json.dumps(json.loads((d / "v1.avsc").read_text()), indent=4))
    report = gate(registry_at_ref(repo / "schemas", "main"), FileRegistry(repo / "schemas"))
    assert report.verdict is Verdict.SAFE


def test_topics_are_discovered_from_key_subjects(repo):
    (entry,) = discover_topics(FileRegistry(repo / "schemas"))
    assert (entry.name, entry.key_format, entry.value_format) == (
        TOPIC, "avro-confluent", "avro-confluent")


def test_outside_git_is_a_clear_error(tmp_path):
    from keyguard.formats.errors import InvalidOptionError

    (tmp_path / "schemas").mkdir()
    with pytest.raises(InvalidOptionError, match="not inside a git repository"):
        registry_at_ref(tmp_path / "schemas", "main")


def test_a_base_ref_missing_from_a_shallow_clone_says_how_to_fetch_it(repo, tmp_path):
    _add_version(repo, f"{TOPIC}-value", lambda doc: doc.update(doc="v2"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "second")
    _git(repo, "branch", "feature")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", f"file://{repo}",
         str(clone))
    from keyguard.formats.registry import RegistryError

    with pytest.raises(RegistryError) as err:
        registry_at_ref(clone / "schemas", "origin/main")
    assert "shallow clone" in str(err.value)
    assert "fetch-depth: 0" in err.value.hint and "git fetch" in err.value.hint
    with pytest.raises(RegistryError) as whole:  # a whole clone: the ref is just missing
        registry_at_ref(repo / "schemas", "no-such-branch")
    assert "shallow" not in str(whole.value)
