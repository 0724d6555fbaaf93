"""Mistakes in a suppression, in a schema file or the config file: exit 2 naming the file and
the line (or entry), before any registry is asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from badinput import assert_rejected

from keyguard.formats.errors import EXIT_INVALID

KEY_V1 = Path(__file__).resolve().parents[2] / "schemas/subjects/pageviews_per_region-key/v1.avsc"
# An unreachable registry: a bad suppression must be refused before it is ever asked.
REGISTRY = ["--registry", "http://127.0.0.1:9"]
PROTO = 'syntax = "proto3";\nmessage Key {\n  // {comment}\n  int32 id = 1;\n}\n'

SCHEMAS = [
    ("avro unknown rule", "k.avsc", {"keyguard.ignore": {"KG1O1": "why"}},
     "k.avsc line 1: unknown rule or category 'KG1O1' (did you mean KG101?"),
    ("avro no reason", "k.avsc", {"keyguard.ignore": {"KG101": ""}},
     "k.avsc line 1: keyguard.ignore KG101 needs a reason"),
    ("avro not an object", "k.avsc", {"keyguard.ignore": ["KG101"]},
     "k.avsc line 1: keyguard.ignore must be an object of rule and reason"),
    ("json schema no reason", "k.json", "keyguard: ignore KG101",
     "k.json line 1: `keyguard: ignore KG101` needs a reason"),
    ("proto unknown category", "k.proto", "keyguard: ignore key-byts -- why",
     "k.proto line 3: unknown rule or category 'key-byts' (did you mean key-bytes?"),
    ("proto not an ignore", "k.proto", "keyguard: accept KG101 -- why",
     "k.proto line 3: not a keyguard comment keyguard reads"),
]


@pytest.mark.parametrize(("name", "given", "says"), [r[1:] for r in SCHEMAS],
                         ids=[r[0] for r in SCHEMAS])
def test_bad_suppressions_in_a_schema_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           name: str, given: object, says: str) -> None:
    monkeypatch.chdir(tmp_path)
    if name.endswith(".avsc"):
        text = json.dumps({**json.loads(KEY_V1.read_text()), **given})  # type: ignore[dict-item]
        fmt = "avro-confluent"
    elif name.endswith(".json"):
        text = json.dumps({"$comment": given, "type": "object",
                           "properties": {"id": {"type": "integer"}}})
        fmt = "json"
    else:
        text = PROTO.replace("{comment}", str(given))
        fmt = "protobuf"
    (tmp_path / name).write_text(text)
    assert_rejected(["check", "--topic", "t", "--key-schema", name, "--key-format", fmt,
                     "--value-format", "", *REGISTRY], EXIT_INVALID, "invalid-option",
                    says=says)


def test_a_config_table_without_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keyguard.toml").write_text(
        '[[topics]]\nname = "orders"\nignore = ["KG701", {rule = "KG101", path = "region"}]\n')
    assert_rejected(["check", "--config", "keyguard.toml"], EXIT_INVALID, "invalid-option",
                    says="keyguard.toml: topics[0]: ignore[1]: ignoring KG101 needs a reason")
