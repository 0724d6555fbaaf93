"""keyguard.guard.judge: the verdict from plain data (no registry object, no broker), and the facts
step.

`judge(plan, registered, facts, sides)` is pure: every test here builds its inputs as plain values.
The last tests check that `check()` is exactly gather + judge, and that the pure core imports
no network client.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import fastavro

from keyguard.formats.registry import CompatibilityAnswer, SchemaVersion
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.check import TopicCheck, check
from keyguard.guard.facts import Facts, Registered, SubjectFacts, gather
from keyguard.guard.judge import judge
from keyguard.guard.keys.known import WriterSchema
from keyguard.guard.plan import TopicPlan
from keyguard.guard.report import Report, Verdict
from keyguard.guard.sides import key_sides
from keyguard.guard.topic import StaticTopicInspector, TopicFacts

REPO = Path(__file__).resolve().parents[2]
TOPIC = "pv"
KEY_V1 = json.dumps({"type": "record", "name": "record", "namespace": "acme",
                     "fields": [{"name": "user_region", "type": "string"}]})
VALUE_V1 = json.dumps({"type": "record", "name": "value", "namespace": "acme",
                       "fields": [{"name": "pv", "type": "long"}]})


def verdict(plan: TopicPlan, registered: Registered, facts: Facts) -> Report:
    """`judge` with the key sides built from the same inputs, as `check` builds them."""
    return judge(plan, registered, facts, key_sides(plan, registered, facts))


def _ids(report) -> list[str]:
    return sorted({f.rule.id for f in report.findings})


def _version(subject: str, schema: str, schema_id: int, version: int = 1) -> SchemaVersion:
    return SchemaVersion(subject, version, schema_id, schema)


def _key(schema_id: int, region: str) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(KEY_V1)),
                               {"user_region": region})
    return b"\x00" + struct.pack(">I", schema_id) + out.getvalue()


def test_plain_data_first_registration() -> None:
    plan = TopicPlan(TOPIC, value_format=None, candidate_key=SchemaText("AVRO", KEY_V1, "new"))
    registered = Registered("plain data", SubjectFacts("pv-key"),
                            subject_names=("pv_old-key",))
    report = verdict(plan, registered, Facts())
    assert _ids(report) == ["KG011"]
    assert "pv-key has no versions" in report.findings[0].message
    assert "did you mean subjects pv_old-key" in report.findings[0].message


def test_plain_data_required_subject_missing_is_breaking() -> None:
    plan = TopicPlan(TOPIC, value_format=None, candidate_key=SchemaText("AVRO", KEY_V1, "new"),
                     require_subject=True)
    report = verdict(plan, Registered("reg-a", SubjectFacts("pv-key")), Facts())
    assert report.verdict is Verdict.BREAKING
    assert _ids(report) == ["KG015"]
    assert "in reg-a" in report.findings[0].message


def test_plain_data_unchanged_key_assumes_the_latest_id() -> None:
    v1 = _version("pv-key", KEY_V1, 7)
    registered = Registered("plain data", SubjectFacts(
        "pv-key", (v1,), latest=SchemaText("AVRO", KEY_V1, "pv-key v1"), candidate_id=7))
    report = verdict(TopicPlan(TOPIC, value_format=None), registered, Facts())
    assert report.verdict is not Verdict.BREAKING
    kg012 = [f for f in report.findings if f.rule.id == "KG012"]
    assert kg012 and "assumed every key carries id 7" in kg012[0].message


def test_plain_data_added_key_field_is_breaking_with_a_witness() -> None:
    v1 = _version("pv-key", KEY_V1, 7)
    doc = json.loads(KEY_V1)
    doc["fields"].append({"name": "n", "type": "int", "default": 0})
    plan = TopicPlan(TOPIC, value_format=None,
                     candidate_key=SchemaText("AVRO", json.dumps(doc), "new key"))
    report = verdict(plan, Registered("plain data", SubjectFacts("pv-key", (v1,))), Facts())
    assert report.verdict is Verdict.BREAKING
    assert any(f.witness is not None for f in report.breaking)


def test_plain_data_value_and_the_registrys_own_answer() -> None:
    bad = json.dumps({**json.loads(VALUE_V1), "fields": [{"name": "pv", "type": "int"}]})
    plan = TopicPlan(TOPIC, candidate_value=SchemaText("AVRO", bad, "new value"))
    registered = Registered(
        "http://sr.example", SubjectFacts("pv-key", (_version("pv-key", KEY_V1, 7),),
                                          latest=SchemaText("AVRO", KEY_V1, "k"),
                                          candidate_id=7),
        value=SubjectFacts("pv-value", (_version("pv-value", VALUE_V1, 8),), level="BACKWARD",
                           answer=CompatibilityAnswer(True)))
    report = verdict(plan, registered, Facts())
    assert {"KG801", "KG802"} <= set(_ids(report))
    kg802 = next(f for f in report.findings if f.rule.id == "KG802")
    assert kg802.message.startswith("http://sr.example says compatible, keyguard says "
                                    "incompatible at BACKWARD")
    assert f"{TOPIC}: value pv-value at BACKWARD by Confluent's rules" in report.checked


def test_plain_data_topic_ids_and_decoded_keys() -> None:
    """Keys under two ids, one the subject does not list; writer schemas come as plain data."""
    v1 = _version("pv-key", KEY_V1, 7)
    keys = ((_key(7, "EU"), 0), (_key(99, "US"), 1))
    topic = TopicFacts(TOPIC, 3, "compact", key_schema_ids={7: 5, 99: 2}, keys_scanned=7,
                       scan_complete=True, sample_keys=keys,
                       key_id_examples={7: (0, 1), 99: (1, 4)})
    registered = Registered(
        "plain data", SubjectFacts("pv-key", (v1,), latest=SchemaText("AVRO", KEY_V1, "k"),
                                   candidate_id=7),
        writer_schemas={7: WriterSchema("AVRO", KEY_V1), 99: WriterSchema("AVRO", KEY_V1)})
    report = verdict(TopicPlan(TOPIC, value_format=None), registered, Facts(topic, True))
    assert {"KG502", "KG016"} <= set(_ids(report))
    kg016 = next(f for f in report.findings if f.rule.id == "KG016")
    assert "2 of 7 scanned keys carry schema id id 99: 2 keys, e.g. partition 1 offset 4" \
        in kg016.message


def test_plain_data_missing_topic_note() -> None:
    plan = TopicPlan(TOPIC, value_format=None, candidate_key=SchemaText("AVRO", KEY_V1, "new"))
    report = verdict(plan, Registered("plain data", SubjectFacts("pv-key")),
                   Facts(None, inspected=True, topic_names=("pvs",)))
    assert any(n.startswith("topic pv does not exist yet") and "did you mean topics pvs" in n
               for n in report.notes)


def test_check_is_gather_then_judge(tmp_path: Path) -> None:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    registry = FileRegistry(tmp_path / "schemas")
    topic = "pageviews_per_region"
    key = (REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc").read_text()
    spec = TopicCheck(topic, candidate_key=SchemaText("AVRO", key, "key"))
    facts = TopicFacts(topic, 6, "compact")
    inspector = StaticTopicInspector({topic: facts})
    registered, gathered = gather(spec, registry, inspector)
    assert registered.key.subject == "pageviews_per_region-key"
    assert [v.version for v in registered.key.versions] == [1]
    assert registered.key.candidate_id == registered.key.versions[0].schema_id
    assert gathered.topic == facts and gathered.inspected
    assert verdict(spec, registered, gathered) == check(spec, registry=registry,
                                                      inspector=inspector)


def test_topic_check_is_the_topic_plan() -> None:
    assert TopicCheck is TopicPlan


def test_the_judge_imports_no_network_client() -> None:
    code = ("import sys, guard.judge; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'confluent_kafka', 'requests', 'httpx', 'urllib3', 'guard'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.strip()
    assert out == "['guard']"
