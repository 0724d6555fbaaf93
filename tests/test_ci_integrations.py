"""The CI integrations, run as CI runs them: the gate script of the GitHub Action in a shallow
clone, and the pre-commit hook through pre-commit itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
TOPIC = "pageviews_per_region"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1"}


def _env() -> dict[str, str]:
    keyguard = shutil.which("keyguard") or str(Path(sys.executable).parent / "keyguard")
    path = os.pathsep.join([str(Path(keyguard).parent), str(Path(sys.executable).parent),
                            os.environ.get("PATH", "")])
    shell = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**shell, **GIT_ENV, "PATH": path}


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                          env=_env(), check=True)
    return done.stdout


def _key_field_added(doc: dict[str, Any]) -> None:
    doc["fields"].append({"name": "tenant", "type": ["null", "string"], "default": None})


def _value_doc_changed(doc: dict[str, Any]) -> None:
    doc["doc"] = "pageviews, per region"


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A repository with the sample file registry on main and two branches: `breaking` adds
    a field to the key, `harmless` changes the value's doc."""
    repo = tmp_path / "origin"
    shutil.copytree(REPO / "schemas", repo / "schemas")
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "schemas")
    for branch, subject, mutate in (("breaking", f"{TOPIC}-key", _key_field_added),
                                    ("harmless", f"{TOPIC}-value", _value_doc_changed)):
        _git(repo, "checkout", "-q", "-b", branch, "main")
        d = repo / "schemas" / "subjects" / subject
        doc = json.loads((d / "v1.avsc").read_text())
        mutate(doc)
        (d / "v2.avsc").write_text(json.dumps(doc))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", branch)
    _git(repo, "checkout", "-q", "main")
    return repo


def _shallow(origin: Path, branch: str, into: Path) -> Path:
    """What actions/checkout and GitLab give a job by default: one commit of the branch."""
    subprocess.run(["git", "clone", "-q", "--depth=1", "--branch", branch,
                    f"file://{origin}", str(into)], check=True, env=_env(),
                   capture_output=True)
    return into


@pytest.mark.parametrize(("branch", "code", "rule"), [("breaking", 1, "KG101"),
                                                      ("harmless", 0, None)])
def test_the_action_gate_fetches_the_base_of_a_shallow_clone(
        origin: Path, tmp_path: Path, branch: str, code: int, rule: str | None) -> None:
    clone = _shallow(origin, branch, tmp_path / "clone")
    with pytest.raises(subprocess.CalledProcessError):  # the base is really not there
        _git(clone, "rev-parse", "--verify", "origin/main^{commit}")
    done = subprocess.run([str(REPO / "ci" / "keyguard-gate.sh")], cwd=clone,
                          capture_output=True, text=True, timeout=300,
                          env={**_env(), "KEYGUARD_BASE": "main", "KEYGUARD_FORMAT": "github"})
    assert done.returncode == code, done.stderr + done.stdout
    assert "fetching main from origin" in done.stderr
    sarif = json.loads((clone / "keyguard.sarif").read_text())
    results = sarif["runs"][0]["results"]
    if rule is None:
        assert not [r for r in results if r.get("level") == "error"]
    else:
        assert rule in {r["ruleId"] for r in results}
        # GitHub annotations, on the changed schema file.
        assert f"::error file=schemas/subjects/{TOPIC}-key/v2.avsc" in done.stdout


def test_the_action_gate_refuses_to_run_without_a_base(tmp_path: Path) -> None:
    done = subprocess.run([str(REPO / "ci" / "keyguard-gate.sh")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in _env().items() if k != "KEYGUARD_BASE"})
    assert done.returncode != 0 and "KEYGUARD_BASE" in done.stderr


def test_the_action_runs_the_gate_script() -> None:
    action = (REPO / "action.yml").read_text()
    assert "using: composite" in action and "ci/keyguard-gate.sh" in action
    assert "upload-sarif" in action and "KEYGUARD_BASE: ${{ inputs.base }}" in action


@pytest.mark.slow
def test_the_pre_commit_hook_blocks_a_breaking_key_change(origin: Path, tmp_path: Path) -> None:
    """pre-commit itself installs the hook from this checkout into its own environment."""
    if shutil.which("pre-commit") is None and \
            subprocess.run([sys.executable, "-m", "pre_commit", "--version"],
                           capture_output=True).returncode != 0:
        pytest.fail("pre-commit is not installed (it is in the test extra)")
    env = {**_env(), "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}

    def hook() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(REPO),
                               "keyguard-gate", "--all-files"], cwd=origin, env=env,
                              capture_output=True, text=True, timeout=900)

    _git(origin, "checkout", "-q", "main")
    _git(origin, "checkout", "-q", "breaking", "--", "schemas")  # staged, not committed
    blocked = hook()
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "KG101" in blocked.stdout and "Failed" in blocked.stdout
    _git(origin, "reset", "-q", "--hard", "main")
    passed = hook()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
