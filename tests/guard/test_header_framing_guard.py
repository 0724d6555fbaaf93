"""The guard under each side's real framing (`key.<format>.framing`).

Under a header framing the key's schema id is in a record header and the key bytes are the body
alone: a key schema change that keeps the body keeps every key (KG913), where the prefix framing
moves every key (KG501). A change of framing moves every key (KG503); a value's is a reader's
break, not a key's (KG804). confluent-kafka's serializers are the oracle for the bytes.
"""

from __future__ import annotations

import itertools
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from typer.testing import CliRunner

from keyguard.formats.codec import CodecContext, create_codec
from keyguard.formats.framing import APICURIO_HEADER_CONTENT_ID, CONFLUENT_HEADER
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_schema_id
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.check import check
from keyguard.guard.cli import app
from keyguard.guard.diff import KeyWriting, diff_sides
from keyguard.guard.keys.confluent import ID_IN_HEADER
from keyguard.guard.plan import TopicPlan
from keyguard.guard.report import Report, Severity, Verdict
from keyguard.guard.topic import KeyTally, StaticTopicInspector, TopicFacts

REPO = Path(__file__).resolve().parents[2]
TOPIC = "pageviews_per_region"
SUBJECT = f"{TOPIC}-key"
KEY_V1 = (REPO / f"schemas/subjects/{SUBJECT}/v1.avsc").read_text()
HEADER = {"framing": "confluent-header"}
ROW = {"user_region": "eu-west"}
runner = CliRunner()
_SCOPES = itertools.count()


def _with_doc(schema: str) -> str:
    """The same key with a doc on its field: FULL-compatible, the same Avro body."""
    doc = json.loads(schema)
    doc["fields"][0]["doc"] = "the region of the page view"
    return json.dumps(doc)


KEY_DOC = _with_doc(KEY_V1)


@pytest.fixture
def registry(tmp_path: Path) -> FileRegistry:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    return FileRegistry(tmp_path / "schemas")


@pytest.fixture
def mock() -> Any:
    name = f"header-guard-{next(_SCOPES)}"
    yield MockRegistry(name)
    MockRegistry.drop_scope(name)


def _ids(report: Report) -> set[str]:
    return {f.rule.id for f in report.findings}


def _plan(options: dict[str, str], candidate: str = KEY_DOC) -> TopicPlan:
    return TopicPlan(TOPIC, key_format="avro-confluent", value_format=None,
                     key_options=options, candidate_key=SchemaText("AVRO", candidate, "new key"))


def test_a_doc_change_keeps_the_key_bytes_under_the_header_framing_and_kg501_fires_under_the_prefix(
        registry: FileRegistry, mock: MockRegistry) -> None:
    # The same row, the old and the new key schema, written by confluent-kafka's serializer
    # with the id in the header: the key bytes are equal, only the header's GUID differs.
    context = [SerializationContext(TOPIC, MessageField.KEY, []) for _ in range(2)]
    written = [AvroSerializer(mock.client, text,
                              conf={"schema.id.serializer": header_schema_id_serializer})(
        ROW, ctx) for text, ctx in zip((KEY_V1, KEY_DOC), context, strict=True)]
    assert written[0] == written[1] == b"\x0eeu-west"
    (old_header,), (new_header,) = (ctx.headers for ctx in context)
    assert old_header[0] == new_header[0] == "__key_schema_id"
    assert old_header[1][:1] == new_header[1][:1] == b"\x01" and old_header != new_header
    # keyguard's own codec writes those bytes (the key side's framing option decides)
    ours = [bind_schema_id(create_codec("avro-confluent", parse_columns("user_region STRING"),
                                        {"url": mock.name, "schema": text, **HEADER},
                                        CodecContext(role="key", topic=TOPIC, registry=mock)),
                           mock) for text in (KEY_V1, KEY_DOC)]
    assert [c.encode(ROW) for c in ours] == written
    assert [list(c.record_headers()) for c in ours] == [[old_header], [new_header]]

    header = check(_plan(HEADER), registry=registry)
    assert header.verdict is Verdict.SAFE, header.findings
    assert "KG501" not in _ids(header) and "KG913" in _ids(header)
    why = next(f for f in header.findings if f.rule.id == "KG913")
    assert ID_IN_HEADER in why.message
    assert ID_IN_HEADER == "the key's schema id is in a header: the key bytes do not carry it"

    prefix = check(_plan({}), registry=registry)
    assert prefix.verdict is Verdict.BREAKING
    assert "KG501" in _ids(prefix) and "KG913" not in _ids(prefix)
    w = next(f for f in prefix.findings if f.rule.id == "KG501").witness
    assert w is not None and w.old_bytes is not None and w.new_bytes is not None
    region = w.key["user_region"].encode()
    assert w.old_bytes[5:] == w.new_bytes[5:] == bytes([2 * len(region)]) + region  # the body
    assert w.old_bytes[1:5] != w.new_bytes[1:5]  # and only the ids differ


def test_a_json_registry_key_whose_schema_only_gains_a_description_is_safe_in_a_header() -> None:
    old = json.dumps({"type": "object", "title": "Key", "properties": {
        "id": {"type": "integer", "connect.type": "int64"}}, "required": ["id"]})
    new = json.dumps({"type": "object", "title": "Key", "description": "an order's key",
                      "properties": {"id": {"type": "integer", "connect.type": "int64",
                                            "description": "the order id"}},
                      "required": ["id"]})
    texts = [SchemaText("JSON", old, "old.json")], SchemaText("JSON", new, "new.json")
    header = diff_sides(*texts, KeyWriting("json-registry", HEADER),
                        KeyWriting("json-registry", HEADER))
    assert header.verdict is Verdict.SAFE, header.findings
    assert _ids(header) >= {"KG913"} and "KG501" not in _ids(header)
    prefix = diff_sides(*texts, KeyWriting("json-registry"), KeyWriting("json-registry"))
    assert prefix.verdict is Verdict.BREAKING and "KG501" in _ids(prefix)


def _diff(tmp: Path, fmt: str, old: str, new: str, *extra: str) -> Any:
    (tmp / "old.avsc").write_text(KEY_V1)
    (tmp / "new.avsc").write_text(KEY_V1)
    return runner.invoke(app, ["diff", "--key", str(tmp / "old.avsc"), str(tmp / "new.avsc"),
                               "--key-format", "avro-confluent", "-o", f"framing={old}",
                               "--new-option", f"framing={new}", "-f", fmt, *extra],
                         catch_exceptions=False)


def test_a_framing_change_is_kg503_with_both_sides_bytes_headers_and_the_migration(
        tmp_path: Path) -> None:
    r = _diff(tmp_path, "json", "confluent", "confluent-header")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    (found,) = [f for f in doc["findings"] if f["rule"]["id"] == "KG503"]
    assert found["rule"]["name"] == "key-framing-changed" and found["severity"] == "breaking"
    w = found["witness"]
    assert w["old_hex"].startswith("00") and w["old_hex"][10:] == w["new_hex"]
    assert w["old_headers"] == []
    (header,) = w["new_headers"]
    assert header["name"] == "__key_schema_id" and header["hex"][:2] == "01"
    assert uuid.UUID(bytes=bytes.fromhex(header["hex"][2:]))  # the schema's GUID
    migrate = next(n for n in doc["notes"] if "keyguard migrate" in n)
    assert "--old-option key.avro-confluent.framing=confluent " in migrate
    assert "--new-option key.avro-confluent.framing=confluent-header " in migrate

    text = _diff(tmp_path, "text", "confluent", "confluent-header").stdout
    assert "BREAKING KG503 key-framing-changed" in text
    assert "old header: (none)" in text and "new header: __key_schema_id=01 " in text
    sarif = json.loads(_diff(tmp_path, "sarif", "confluent", "confluent-header").stdout)
    (result,) = [x for x in sarif["runs"][0]["results"] if x["ruleId"] == "KG503"]
    assert "headers: old (none), new __key_schema_id=01 " in result["message"]["text"]
    assert result["properties"]["witness"]["new_headers"] == w["new_headers"]


@pytest.mark.parametrize(("old", "new"), [
    ("confluent-header", "confluent"), ("confluent", "apicurio"),
    ("apicurio", "apicurio-legacy"), ("apicurio-header-content-id", "apicurio"),
])
def test_every_change_of_framing_moves_every_key(tmp_path: Path, old: str, new: str) -> None:
    r = _diff(tmp_path, "json", old, new)
    assert r.exit_code == 1, r.output
    (found,) = [f for f in json.loads(r.stdout)["findings"] if f["rule"]["id"] == "KG503"]
    w = found["witness"]
    assert (w["old_hex"], w["old_headers"]) != (w["new_hex"], w["new_headers"])
    assert f"key framing {old} -> {new}" in found["message"]


def test_kg501_names_the_header_framing_and_who_reads_it_in_every_rendering(
        tmp_path: Path) -> None:
    (tmp_path / "old.avsc").write_text(KEY_V1)
    (tmp_path / "new.avsc").write_text(KEY_DOC)
    out = {fmt: runner.invoke(app, ["diff", "--key", str(tmp_path / "old.avsc"),
                                    str(tmp_path / "new.avsc"), "--key-format",
                                    "avro-confluent", "-f", fmt], catch_exceptions=False)
           for fmt in ("text", "json", "sarif")}
    assert {r.exit_code for r in out.values()} == {1}
    (kg501,) = [f for f in json.loads(out["json"].stdout)["findings"]
                if f["rule"]["id"] == "KG501"]
    advice = kg501["advice"]
    for said in ("'key.avro-confluent.framing' = 'confluent-header'", "__key_schema_id",
                 "confluent-kafka-python 2.10.1", "dual_schema_id_deserializer",
                 "DualSchemaIdDeserializer", "HeaderSchemaIdSerializer",
                 "Flink's avro-confluent format reads the schema id from the bytes only"):
        assert said in advice, said
    assert "    fix:        " + advice in out["text"].stdout
    (result,) = [x for x in json.loads(out["sarif"].stdout)["runs"][0]["results"]
                 if x["ruleId"] == "KG501"]
    assert result["message"]["text"].endswith("fix: " + advice)
    assert result["properties"]["advice"] == advice


PV = """CREATE TABLE pageviews_per_region (
  user_region STRING,
  pv BIGINT,
  PRIMARY KEY (user_region) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'pageviews_per_region',
  'key.format' = 'avro-confluent',
  'key.avro-confluent.url' = 'http://sr.example:8081',
  'value.format' = 'avro-confluent',
  'value.avro-confluent.url' = 'http://sr.example:8081'{more}
);
"""


@pytest.mark.parametrize(("old", "new", "severity", "code"), [
    ("confluent", "confluent-header", "breaking", 1),
    ("confluent-header", "confluent", "warning", 0),
    ("apicurio-header-global-id", "apicurio-legacy", "warning", 0),
    ("confluent", "apicurio", "breaking", 1),
])
def test_a_value_framing_change_is_a_readers_break_not_a_keys(
        tmp_path: Path, old: str, new: str, severity: str, code: int) -> None:
    for name, framing in (("old.sql", old), ("new.sql", new)):
        (tmp_path / name).write_text(PV.format(
            more=f",\n  'value.avro-confluent.framing' = '{framing}'"))
    r = runner.invoke(app, ["diff", "--key", "--old-flink-ddl", str(tmp_path / "old.sql"),
                            "--flink-ddl", str(tmp_path / "new.sql"), "-f", "json"],
                      catch_exceptions=False)
    assert r.exit_code == code, r.output
    doc = json.loads(r.stdout)
    (found,) = [f for f in doc["findings"] if f["rule"]["id"] == "KG804"]
    assert found["severity"] == severity and "no key changes" in found["message"]
    assert {f["rule"]["id"] for f in doc["findings"]} & {"KG501", "KG503"} == set()
    assert not any("keyguard migrate" in n for n in doc["notes"])
    if new == "confluent-header":
        assert "readers that read the schema id from the prefix only" in found["message"]


@pytest.mark.usefixtures("registry")
def test_a_ddls_key_framing_reaches_check(tmp_path: Path) -> None:
    ddl = PV.replace("  pv BIGINT,\n", "  region_id INT,\n  pv BIGINT,\n").replace(
        "PRIMARY KEY (user_region)", "PRIMARY KEY (user_region, region_id)")
    for name, more in (("prefix.sql", ""),
                       ("header.sql", ",\n  'key.avro-confluent.framing' = 'confluent-header'")):
        (tmp_path / name).write_text(ddl.format(more=more))
    ids = {}
    for name in ("prefix.sql", "header.sql"):
        r = runner.invoke(app, ["check", "--flink-ddl", str(tmp_path / name),
                                "--registry", f"file://{tmp_path / 'schemas'}", "-f", "json"],
                          catch_exceptions=False)
        assert r.exit_code == 1, r.output  # a key column added breaks under either framing
        ids[name] = {f["rule"]["id"] for f in json.loads(r.stdout)["findings"]}
    assert {"KG101", "KG501"} <= ids["prefix.sql"] and "KG913" not in ids["prefix.sql"]
    assert {"KG101", "KG913"} <= ids["header.sql"] and "KG501" not in ids["header.sql"]


def test_sampled_keys_are_read_with_the_id_their_header_carries(registry: FileRegistry) -> None:
    guid = registry.get_version(SUBJECT).guid
    assert guid is not None
    body = b"\x0eeu-west"  # the Avro body alone: under the header framing, the whole key
    good = (("__key_schema_id", b"\x01" + uuid.UUID(guid).bytes),)
    unknown = (("__key_schema_id", b"\x01" + uuid.uuid4().bytes),)
    reports = {}
    for name, headers in (("good", good), ("unknown", unknown)):
        facts = TopicFacts(TOPIC, 1, "compact", keys_scanned=1, scan_complete=True,
                           sample_keys=((body, 0),), sample_headers={body: headers})
        reports[name] = check(_plan(HEADER, KEY_V1), registry=registry,
                              inspector=StaticTopicInspector({TOPIC: facts}))
    assert reports["good"].verdict is Verdict.SAFE, reports["good"].findings
    assert "KG013" not in _ids(reports["good"])
    # A GUID the registry does not know: the key cannot be decoded, so it is reported.
    (real,) = [f for f in reports["unknown"].findings if f.rule.id == "KG013"]
    assert real.effective_severity is Severity.BREAKING
    assert real.witness is not None and "cannot decode" in (real.witness.new_error or "")


def test_the_scan_keeps_each_sampled_keys_headers_and_counts_header_ids() -> None:
    tally = KeyTally(frame=APICURIO_HEADER_CONTENT_ID.for_role("key"))
    tally.add(b"k1", 0, 5, (("apicurio.key.contentId", (7).to_bytes(8, "big")),))
    tally.add(b"k1", 0, 6, (("apicurio.key.contentId", (8).to_bytes(8, "big")),))
    assert tally.ids == {7: 1, 8: 1} and tally.samples == {b"k1": 0}
    assert tally.headers == {b"k1": (("apicurio.key.contentId", (7).to_bytes(8, "big")),)}
    guid = KeyTally(frame=CONFLUENT_HEADER.for_role("key"))
    guid.add(b"\x00\x00\x00\x00\x07", 1, 0, (("__key_schema_id", b"\x01" + bytes(16)),))
    # A GUID is no registry id, and the bytes that look like a prefix are the body.
    assert guid.ids == {} and guid.other == 1


def test_the_spark_writers_plan_carries_the_key_framing(mock: MockRegistry) -> None:
    from keyguard.formats.plan import resolve_plan

    plan = resolve_plan(parse_columns("id BIGINT NOT NULL, v STRING"), {
        "topic": "t", "primary-key": "id", "key.format": "avro-confluent",
        "key.avro-confluent.url": mock.name, "key.avro-confluent.framing": "confluent-header",
        "value.format": "json", "key.fields-prefix": "", "value.fields-include": "ALL"},
        registry=mock)
    spec = TopicPlan.of_upsert(plan, 3)
    assert spec.key_frame(existing=False).id_in_header
    assert not spec.key_ids_in_bytes(existing=False) and spec.keys_carry_schema_ids()


def test_keyguard_rules_lists_the_framing_rules() -> None:
    r = runner.invoke(app, ["rules"], catch_exceptions=False)
    assert r.exit_code == 0
    for line in ("KG503  key-framing-changed  [breaking, key-bytes]",
                 "KG804  value-framing-changed  [breaking, value-compatibility]",
                 "KG913  key-schema-id-in-header  [info, key-bytes]"):
        assert line in r.stdout


@pytest.mark.parametrize("how", ["option", "config"])
def test_checks_option_and_config_file_give_the_key_framing(
        tmp_path: Path, registry: FileRegistry, monkeypatch: pytest.MonkeyPatch,
        how: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k2.avsc").write_text(KEY_DOC)
    common = ["--registry", "file://schemas", "-f", "json"]
    if how == "option":
        args = ["check", "--topic", TOPIC, "--key-format", "avro-confluent", "--key-schema",
                "k2.avsc", "--option", "key.avro-confluent.framing=confluent-header", *common]
    else:
        (tmp_path / "kg.toml").write_text(
            f'[[topics]]\nname = "{TOPIC}"\nkey-format = "avro-confluent"\n'
            'key-schema = "k2.avsc"\n[topics.options]\n'
            '"key.avro-confluent.framing" = "confluent-header"\n')
        args = ["check", "--config", "kg.toml", *common]
    r = runner.invoke(app, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    ids = {f["rule"]["id"] for f in json.loads(r.stdout)["findings"]}
    assert "KG913" in ids and not ids & {"KG501", "KG012"}
