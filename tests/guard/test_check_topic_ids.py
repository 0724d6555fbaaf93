"""What the keys in a live topic say about their schema ids, reported as findings (real broker).

A topic whose keys carry two schema ids (a producer still on an old version), or an id the
subject does not list (a foreign producer, a deleted version), is a fact about the topic: the
check reports it with counts, the ids and example offsets, and still judges the candidate.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
from pathlib import Path
from typing import Any

import fastavro
import pytest
from broker import new_topic
from confluent_kafka import Producer

from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.check import TopicCheck, check
from keyguard.guard.report import Report, Verdict
from keyguard.guard.topic import KafkaTopicInspector

REPO = Path(__file__).resolve().parents[2]
SUBJECT_OF = "{}-key"


def _key(schema: dict[str, Any], schema_id: int, region: str) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), {"user_region": region})
    return b"\x00" + struct.pack(">I", schema_id) + out.getvalue()


def _produce(bootstrap: str, topic: str, keys: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        producer.produce(topic, key=key, value=b"v")
    assert producer.flush(15) == 0


def _registry(tmp_path: Path, topic: str) -> tuple[FileRegistry, dict[str, Any], int, int]:
    """A file registry whose subject for `topic` has v1 and v2 (v2 adds a doc: a new id)."""
    root = tmp_path / "schemas"
    src = REPO / "schemas/subjects/pageviews_per_region-key"
    shutil.copytree(src, root / "subjects" / SUBJECT_OF.format(topic))
    reg = FileRegistry(root)
    v1 = reg.get_version(SUBJECT_OF.format(topic))
    v2_schema = {**json.loads(v1.schema), "doc": "a second version"}
    v2_id = reg.register(SUBJECT_OF.format(topic), json.dumps(v2_schema))
    return reg, v2_schema, v1.schema_id, v2_id


def _by_rule(report: Report, rule_id: str) -> list[Any]:
    return [f for f in report.findings if f.rule.id == rule_id]


@pytest.mark.broker
def test_keys_with_two_schema_ids_are_one_consistent_finding(kafka_bootstrap: str,
                                                             tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 2, {"cleanup.policy": "compact"})
    reg, v2_schema, v1_id, v2_id = _registry(tmp_path, topic)
    _produce(kafka_bootstrap, topic, [_key(v2_schema, v1_id, f"old{i}") for i in range(7)]
             + [_key(v2_schema, v2_id, f"new{i}") for i in range(5)])
    candidate = SchemaText("AVRO", json.dumps(v2_schema), "key.avsc")

    report = check(TopicCheck(topic, value_format=None, candidate_key=candidate),
                   registry=reg, inspector=KafkaTopicInspector(kafka_bootstrap))

    assert "KG000" not in {f.rule.id for f in report.findings}  # no "keyguard gap"
    several = _by_rule(report, "KG502")
    assert len(several) == 1, [f.rule.id for f in report.findings]
    message = several[0].message
    assert f"id {v1_id} ({SUBJECT_OF.format(topic)} v1): 7 keys" in message
    assert f"id {v2_id} ({SUBJECT_OF.format(topic)} v2): 5 keys" in message
    assert "offset" in message and f"the candidate writes id {v2_id}" in message
    # The candidate is the version the newest keys carry: nothing new breaks.
    assert report.verdict is Verdict.WARN


@pytest.mark.broker
def test_keys_with_an_id_the_subject_does_not_list_are_a_finding(kafka_bootstrap: str,
                                                                 tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 1, {"cleanup.policy": "compact"})
    reg, v2_schema, _v1_id, v2_id = _registry(tmp_path, topic)
    foreign = 424_242
    _produce(kafka_bootstrap, topic, [_key(v2_schema, foreign, f"f{i}") for i in range(3)]
             + [_key(v2_schema, v2_id, f"n{i}") for i in range(4)])
    candidate = SchemaText("AVRO", json.dumps(v2_schema), "key.avsc")

    report = check(TopicCheck(topic, value_format=None, candidate_key=candidate),
                   registry=reg, inspector=KafkaTopicInspector(kafka_bootstrap))

    unlisted = _by_rule(report, "KG016")
    assert len(unlisted) == 1
    assert "3 of 7 scanned keys" in unlisted[0].message
    assert f"id {foreign}: 3 keys, e.g. partition 0 offset 0" in unlisted[0].message
    assert "does not list" in unlisted[0].message
    assert len(_by_rule(report, "KG502")) == 1  # two ids: also said once
    assert "KG000" not in {f.rule.id for f in report.findings}


@pytest.mark.broker
def test_only_unlisted_ids_judge_the_latest_version_and_break(kafka_bootstrap: str,
                                                              tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 1, {"cleanup.policy": "compact"})
    reg, v2_schema, _v1_id, _v2_id = _registry(tmp_path, topic)
    _produce(kafka_bootstrap, topic, [_key(v2_schema, 999_001, f"f{i}") for i in range(2)])

    report = check(TopicCheck(topic, value_format=None), registry=reg,
                   inspector=KafkaTopicInspector(kafka_bootstrap))

    assert {"KG016", "KG501"} <= {f.rule.id for f in report.findings}
    assert report.verdict is Verdict.BREAKING  # no key can be written again by the candidate


@pytest.mark.broker
def test_a_typo_in_the_topic_names_the_near_topics_and_subjects(kafka_bootstrap: str,
                                                                tmp_path: Path) -> None:
    topic = new_topic(kafka_bootstrap, 1, {"cleanup.policy": "compact"})
    reg, v2_schema, _v1_id, _v2_id = _registry(tmp_path, topic)
    typo = topic[:-1] + ("x" if topic[-1] != "x" else "y")
    candidate = SchemaText("AVRO", json.dumps(v2_schema), "key.avsc")

    report = check(TopicCheck(typo, value_format=None, candidate_key=candidate),
                   registry=reg, inspector=KafkaTopicInspector(kafka_bootstrap),
                   require_subject=True)

    missing = _by_rule(report, "KG015")
    assert len(missing) == 1 and report.verdict is Verdict.BREAKING
    assert f"did you mean subjects {SUBJECT_OF.format(topic)}" in missing[0].message
    assert topic in missing[0].message.split("topics", 1)[1]
    assert any(typo in n and topic in n for n in report.notes)
