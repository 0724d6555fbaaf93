"""keyguard.guard.check: registry versions and topic facts in, one Report out."""

import json
import shutil
from pathlib import Path

import pytest

from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.check import TopicCheck, check
from keyguard.guard.report import Verdict
from keyguard.guard.rules_catalogue import catalogue
from keyguard.guard.topic import StaticTopicInspector, TopicFacts

REPO = Path(__file__).resolve().parents[2]
KEY_V1 = (REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc").read_text()
VALUE_V1 = (REPO / "schemas/subjects/pageviews_per_region-value/v1.avsc").read_text()
TOPIC = "pageviews_per_region"


@pytest.fixture
def registry(tmp_path):
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    return FileRegistry(tmp_path / "schemas")


def _with_field(schema: str, field: dict) -> str:
    doc = json.loads(schema)
    doc["fields"].append(field)
    return json.dumps(doc)


def _ids(report):
    return sorted({f.rule.id for f in report.findings})


def test_unchanged_key_is_safe_and_says_it_assumed_the_latest_id(registry):
    report = check(TopicCheck(TOPIC, candidate_key=SchemaText("AVRO", KEY_V1, "key")),
                   registry=registry)
    assert report.verdict is Verdict.SAFE
    assert "KG012" in _ids(report)


def test_full_compatible_key_change_is_blocked_with_a_byte_witness(registry):
    optional = _with_field(KEY_V1, {"name": "tenant", "type": ["null", "string"],
                                    "default": None})
    report = check(TopicCheck(TOPIC, candidate_key=SchemaText("AVRO", optional, "new key")),
                   registry=registry)
    assert report.verdict is Verdict.BREAKING
    id_change = [f for f in report.breaking if "id" in f.rule.name]
    assert id_change, _ids(report)
    w = id_change[0].witness
    assert w is not None and w.old_bytes[:1] == b"\x00" and w.old_bytes[1:5] != w.new_bytes[1:5]


def test_topic_scan_ids_replace_the_latest_assumption(registry):
    key_id = registry.get_version(f"{TOPIC}-key").schema_id
    facts = TopicFacts(TOPIC, partitions=6, cleanup_policy="compact",
                       key_schema_ids={key_id: 10}, keys_scanned=10, scan_complete=True)
    report = check(TopicCheck(TOPIC, candidate_key=SchemaText("AVRO", KEY_V1, "key")),
                   registry=registry, inspector=StaticTopicInspector({TOPIC: facts}))
    assert report.verdict is Verdict.SAFE
    assert "KG012" not in _ids(report)


def test_keys_carrying_an_unknown_id_are_a_finding_not_an_error(registry):
    facts = TopicFacts(TOPIC, partitions=6, cleanup_policy="compact",
                       key_schema_ids={424242: 3}, keys_scanned=3, scan_complete=True,
                       key_id_examples={424242: (2, 17)})
    report = check(TopicCheck(TOPIC), registry=registry,
                   inspector=StaticTopicInspector({TOPIC: facts}))
    unlisted = [f for f in report.findings if f.rule.id == "KG016"]
    assert len(unlisted) == 1, _ids(report)
    assert "424242" in unlisted[0].message and "3 keys" in unlisted[0].message
    assert "partition 2 offset 17" in unlisted[0].message
    # The candidate (the latest version) writes another id than every key carries.
    assert report.verdict is Verdict.BREAKING
    assert "KG501" in _ids(report)


def test_partition_count_change_breaks_placement(registry):
    key_id = registry.get_version(f"{TOPIC}-key").schema_id
    facts = TopicFacts(TOPIC, partitions=6, cleanup_policy="compact",
                       key_schema_ids={key_id: 1}, keys_scanned=1, scan_complete=True)
    report = check(TopicCheck(TOPIC, partitions=12), registry=registry,
                   inspector=StaticTopicInspector({TOPIC: facts}))
    assert report.verdict is Verdict.BREAKING
    w = report.breaking[0].witness
    assert w is not None and w.old_partition != w.new_partition


def test_value_change_against_the_subject_level(registry):
    ok = _with_field(VALUE_V1, {"name": "avg_ms", "type": ["null", "double"], "default": None})
    bad = json.loads(VALUE_V1)
    bad["fields"][1]["type"] = ["null", "int"]
    assert check(TopicCheck(TOPIC, candidate_value=SchemaText("AVRO", ok, "v")),
                 registry=registry).verdict is Verdict.SAFE
    report = check(TopicCheck(TOPIC, candidate_value=SchemaText("AVRO", json.dumps(bad), "v")),
                   registry=registry)
    assert [f.rule.id for f in report.breaking] == ["KG801"]
    assert report.breaking[0].subject == f"{TOPIC}-value"


def test_first_version_of_a_new_topic_is_safe(registry):
    report = check(TopicCheck("fresh", candidate_key=SchemaText("AVRO", KEY_V1, "k"),
                              candidate_value=SchemaText("AVRO", VALUE_V1, "v")),
                   registry=registry)
    assert report.verdict is Verdict.SAFE
    assert _ids(report) == ["KG011", "KG803"]


def test_rule_ids_are_unique_and_documented():
    rules = catalogue()
    assert len({r.id for r in rules}) == len(rules)
    for r in rules:
        assert r.why and r.summary, r.id


def test_witnesses_are_real_keys_from_the_topic_when_sampled(registry):
    from keyguard.formats.codec import CodecContext, create_codec
    from keyguard.formats.partitioner import partition_for
    from keyguard.formats.registry.registration import bind_schema_id

    key_type = SchemaText("AVRO", KEY_V1, "key").row_type()
    codec = create_codec("avro-confluent", key_type, {"schema": KEY_V1},
                         CodecContext(role="key", topic=TOPIC, registry=registry))
    real = bind_schema_id(codec).encode({"user_region": "EMEA"})
    key_id = registry.get_version(f"{TOPIC}-key").schema_id
    facts = TopicFacts(TOPIC, partitions=6, cleanup_policy="compact",
                       key_schema_ids={key_id: 1}, keys_scanned=1, scan_complete=True,
                       sample_keys=((real, partition_for(real, 6)),))
    renamed = json.loads(KEY_V1)
    renamed["namespace"] = "com.acme"
    report = check(TopicCheck(TOPIC, candidate_key=SchemaText("AVRO", json.dumps(renamed), "k")),
                   registry=registry, inspector=StaticTopicInspector({TOPIC: facts}))
    (f,) = report.breaking
    assert f.witness.key == {"user_region": "EMEA"} and f.witness.old_bytes == real


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit", "github"])
def test_a_first_registration_is_visible_in_every_format_with_near_misses(fmt):
    from typer.testing import CliRunner

    from keyguard.guard.cli import app

    key = str(REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc")
    result = CliRunner().invoke(app, ["check", "--topic", "pageviews_per_regoin", "--registry",
                                      f"file://{REPO / 'schemas'}", "--key-schema", key,
                                      "--value-format", "", "--format", fmt])
    assert result.exit_code == 0, result.output
    assert "first registration" in result.stdout
    assert "did you mean subjects pageviews_per_region-key" in result.stdout


def test_require_subject_makes_a_missing_key_or_value_subject_breaking(registry):
    value = SchemaText("AVRO", VALUE_V1, "value")
    report = check(TopicCheck("pageviews", candidate_key=SchemaText("AVRO", KEY_V1, "key"),
                              candidate_value=value), registry=registry, require_subject=True)
    missing = [f for f in report.findings if f.rule.id == "KG015"]
    assert {f.subject for f in missing} == {"pageviews-key", "pageviews-value"}
    assert report.verdict is Verdict.BREAKING
    lenient = check(TopicCheck("pageviews", candidate_key=SchemaText("AVRO", KEY_V1, "key"),
                               candidate_value=value), registry=registry)
    assert lenient.verdict is Verdict.SAFE and "KG011" in _ids(lenient)


def test_a_registry_that_is_not_there_is_never_a_first_registration(tmp_path):
    from keyguard.formats.errors import RegistryUnavailableError

    with pytest.raises(RegistryUnavailableError, match="does not exist"):
        check(TopicCheck(TOPIC, candidate_key=SchemaText("AVRO", KEY_V1, "key")),
              registry=FileRegistry(tmp_path / "nowhere"))
