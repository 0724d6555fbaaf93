"""Accepting one finding where the schema or the config says so, on the command line: the exit
code, every report format, the unused note, and the mistakes that exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keyguard.guard.cli import app

REPO = Path(__file__).resolve().parents[2]
KEY_V1 = REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc"
TOPIC = "pageviews_per_region"
REASON = "tenant is null in every existing key"


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "schemas"


def added(**attributes: Any) -> dict[str, Any]:
    """The sample key schema plus an optional field `tenant` (KG101 under any key format)."""
    doc = json.loads(KEY_V1.read_text())
    doc["fields"].append({"name": "tenant", "type": ["null", "string"], "default": None,
                          **attributes})
    return doc


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=2) if not isinstance(doc, str) else doc)
    return path


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def check(cand: Path, *more: str) -> Any:
    """A bare Avro key (no schema id in the key): the added field is the one breaking finding."""
    return run("check", "--topic", TOPIC, "--key-schema", str(cand), "--key-format", "avro",
               *more)


def test_a_field_suppression_turns_the_exit_code_and_every_format_says_so(
        schemas: Path) -> None:
    assert check(write(Path("plain.avsc"), added())).exit_code == 1
    cand = write(Path("k.avsc"), added(**{"keyguard.ignore": {"KG101": REASON}}))
    where = f"k.avsc line {line_of(cand, 'keyguard.ignore')}"
    text = check(cand)
    assert text.exit_code == 0, text.output
    assert (f"ignored: KG101 key-field-added at tenant for topic {TOPIC} ({where}: {REASON}): "
            "1 finding hidden") in text.output
    assert "verdict safe" in text.output

    doc = json.loads(check(cand, "-f", "json").output)
    assert "KG101" not in [f["rule"]["id"] for f in doc["findings"]]
    (ignored,) = doc["ignored"]
    assert {k: ignored[k] for k in ("selector", "source", "reason", "path", "in_source",
                                    "count")} == {
        "selector": "KG101", "source": where, "reason": REASON, "path": "tenant",
        "in_source": True, "count": 1}
    assert ignored["findings"][0]["path"] == "tenant"

    sarif = json.loads(check(cand, "-f", "sarif").output)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "KG101"]
    (suppression,) = result["suppressions"]
    assert suppression["kind"] == "inSource" and suppression["status"] == "accepted"
    assert f"({where}: {REASON})" in suppression["justification"]

    junit = ET.fromstring(check(cand, "-f", "junit").output)
    skipped = [s.get("message") or "" for s in junit.iter("skipped")]
    assert len(skipped) == 1 and REASON in skipped[0] and where in skipped[0], skipped
    category = write(Path("c.avsc"), added(**{"keyguard.ignore": {"key-bytes": REASON}}))
    junit = ET.fromstring(check(category, "-f", "junit").output)
    # The category accepted the one finding; its rules that found nothing still pass.
    assert len(list(junit.iter("skipped"))) == 1

    github = check(cand, "-f", "github").output
    assert any(line.startswith("::notice title=keyguard ignored::KG101") and REASON in line
               for line in github.splitlines()), github


def test_a_suppression_that_matches_nothing_is_noted(schemas: Path) -> None:
    cand = write(Path("k.avsc"), added(**{"keyguard.ignore": {"KG101": REASON,
                                                              "KG201": "no type changed"}}))
    where = f"k.avsc line {line_of(cand, 'keyguard.ignore')}"
    r = check(cand)
    assert r.exit_code == 0, r.output
    note = (f"unused suppression: KG201 at tenant for topic {TOPIC} ({where}) matched no "
            "finding; remove it, or check its rule and place")
    assert f"note: {note}" in r.output
    assert note in json.loads(check(cand, "-f", "json").output)["notes"]


def test_an_unknown_rule_in_the_schema_exits_2_naming_file_and_line(schemas: Path) -> None:
    cand = write(Path("k.avsc"), added(**{"keyguard.ignore": {"KG1O1": REASON}}))
    r = check(cand)
    assert r.exit_code == 2
    assert (f"k.avsc line {line_of(cand, 'keyguard.ignore')}: unknown rule or category "
            "'KG1O1'") in r.output
    assert "did you mean KG101" in r.output and "Traceback" not in r.output


def test_the_top_record_covers_the_whole_schema_with_a_rule_name(schemas: Path) -> None:
    doc = added()
    doc["keyguard.ignore"] = {"key-field-added": REASON, "confluent-schema-id-changed": "ids"}
    cand = write(Path("k.avsc"), doc)
    # avro-confluent: the new field and the new schema id are both breaking, both accepted.
    r = run("check", "--topic", TOPIC, "--key-schema", str(cand), "-f", "json")
    assert r.exit_code == 0, r.output
    assert sorted((i["selector"], i["path"], i["count"]) for i in json.loads(r.output)[
        "ignored"]) == [("KG101", None, 1), ("KG501", None, 1)]


def test_config_tables_accept_a_finding_at_a_path(schemas: Path, tmp_path: Path) -> None:
    cand = write(Path("k.avsc"), added())
    cfg = tmp_path / "keyguard.toml"
    topic = (f'[[topics]]\nname = "{TOPIC}"\nkey-format = "avro"\nkey-schema = "k.avsc"\n'
             f'ignore = [{{rule = "KG101", reason = "{REASON}", path = "PATH"}}]\n')
    cfg.write_text(topic.replace("PATH", "region"))
    r = run("check", "--config", str(cfg))
    assert r.exit_code == 1  # the finding is at tenant, not region: still breaking
    assert "unused suppression: KG101 at region" in r.output
    cfg.write_text(topic.replace("PATH", "tenant"))
    r = run("check", "--config", str(cfg), "-f", "sarif")
    assert r.exit_code == 0, r.output
    (result,) = [x for x in json.loads(r.output)["runs"][0]["results"] if x["ruleId"] == "KG101"]
    assert result["suppressions"][0]["kind"] == "external"
    assert f"({cfg}: topics[0]: ignore[0]: {REASON})" in result["suppressions"][0][
        "justification"]
    assert cand.exists()
    cfg.write_text(topic.replace("PATH", "tenant").replace(f'reason = "{REASON}", ', ""))
    r = run("check", "--config", str(cfg))
    assert r.exit_code == 2
    assert f"{cfg}: topics[0]: ignore[0]: ignoring KG101 needs a reason" in r.output


DDL = """-- keyguard: ignore KG501 -- the producers move to the new id together
CREATE TABLE pageviews_per_region (
  user_region STRING,
  region_id INT,  -- keyguard: ignore KG101 -- region_id is 0 in every existing key
  pv BIGINT,
  PRIMARY KEY (user_region, region_id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'pageviews_per_region',
  'properties.bootstrap.servers' = 'kafka:9092',
  'key.format' = 'avro-confluent',
  'key.avro-confluent.url' = 'http://sr.example:8081',
  'value.format' = 'avro-confluent',
  'value.avro-confluent.url' = 'http://sr.example:8081'
);
"""


def test_flink_ddl_comments_on_check_and_diff(schemas: Path) -> None:
    ddl = write(Path("pv.sql"), DDL)
    r = run("check", "--flink-ddl", str(ddl), "--registry", "file://schemas", "-f", "json")
    doc = json.loads(r.stdout)  # stderr notes the DDL's connection options it leaves out
    assert [(i["selector"], i["source"], i["path"], i["count"]) for i in doc["ignored"]] == [
        ("KG501", "pv.sql line 1", None, 1), ("KG101", "pv.sql line 4", "region_id", 1)]
    # The value's new column (KG801) is not accepted: still breaking.
    assert [f["rule"]["id"] for f in doc["findings"] if f["severity"] == "breaking"] == ["KG801"]
    assert r.exit_code == 1
    r = run("diff", "--key", str(KEY_V1), "--flink-ddl", str(ddl), "-f", "json")
    assert r.exit_code == 0, r.output
    assert {i["selector"] for i in json.loads(r.stdout)["ignored"]} == {"KG101", "KG501"}


def test_diff_reads_the_candidate_json_schema_and_proto(tmp_path: Path) -> None:
    old = write(tmp_path / "a.json", {"type": "object", "properties": {
        "region": {"type": "string"}}, "required": ["region"]})
    new = write(tmp_path / "b.json", {
        "type": "object", "required": ["region"], "properties": {"region": {
            "type": "integer", "$comment": "keyguard: ignore KG201 -- ids replace names"}}})
    r = run("diff", "--key", str(old), str(new), "--key-format", "json")
    assert r.exit_code == 0, r.output
    assert f"at region ({new} line " in r.output and ": ids replace names): 1 finding" in r.output
    old_proto = write(tmp_path / "a.proto", 'syntax = "proto3";\nmessage Key {\n'
                      '  string region = 1;\n  int64 id = 2;\n}\n')
    new_proto = write(tmp_path / "b.proto", 'syntax = "proto3";\nmessage Key {\n'
                      '  string region = 1;\n  // keyguard: ignore KG423 -- ids fit in 32 bits\n'
                      '  int32 id = 2;\n}\n')
    write(tmp_path / "plain.proto", new_proto.read_text().replace("  // keyguard", "  //"))
    assert run("diff", "--key", str(old_proto), str(tmp_path / "plain.proto"),
               "--key-format", "protobuf").exit_code == 1
    r = run("diff", "--key", str(old_proto), str(new_proto), "--key-format", "protobuf")
    assert r.exit_code == 0, r.output
    assert f"KG423 protobuf-type-narrowed at id ({new_proto} line 4: ids fit in 32 bits)" \
        in r.output
    write(new_proto, new_proto.read_text().replace(" -- ids fit in 32 bits", ""))
    r = run("diff", "--key", str(old_proto), str(new_proto), "--key-format", "protobuf")
    assert r.exit_code == 2
    assert f"{new_proto} line 4: `keyguard: ignore KG423` needs a reason" in r.output


def test_the_git_gate_follows_the_committed_schema(schemas: Path, tmp_path: Path) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, env=env)
    v2 = schemas / f"subjects/{TOPIC}-key/v2.avsc"
    write(v2, added())
    assert run("check", "--against", "git:main").exit_code == 1
    doc = added(**{"keyguard.ignore": {"KG101": REASON}})
    doc["keyguard.ignore"] = {"KG501": "the producers move to the new id together"}
    write(v2, doc)
    r = run("check", "--against", "git:main", "-f", "json")
    assert r.exit_code == 0, r.output
    assert {(i["selector"], i["reason"]) for i in json.loads(r.output)["ignored"]} == {
        ("KG101", REASON), ("KG501", "the producers move to the new id together")}
