"""Real keys from the topic: re-encoded under the candidate, and checked for murmur2 placement."""

import json

import pytest

from keyguard.formats.json_schema import to_json_schema
from keyguard.formats.partitioner import partition_for
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.check import TopicCheck, check
from keyguard.guard.report import Verdict
from keyguard.guard.topic import StaticTopicInspector, TopicFacts

TOPIC = "users"


def _json_key_schema(columns: str) -> SchemaText:
    return SchemaText("JSON", json.dumps(to_json_schema(parse_columns(columns).not_null())),
                      "candidate")


def _facts(keys: list[bytes], partitions: int = 6, *, murmur2: bool = True) -> TopicFacts:
    placed = tuple((k, partition_for(k, partitions) if murmur2 else
                    (partition_for(k, partitions) + 1) % partitions) for k in keys)
    return TopicFacts(TOPIC, partitions, "compact", keys_scanned=len(keys),
                      scan_complete=True, sample_keys=placed)


def _check(tmp_path, candidate: SchemaText, facts: TopicFacts):
    spec = TopicCheck(TOPIC, key_format="json", value_format=None, candidate_key=candidate)
    return check(spec, registry=FileRegistry(tmp_path),
                 inspector=StaticTopicInspector({TOPIC: facts}))


KEYS = [b'{"region":"EU","id":1}', b'{"region":"US","id":22}']


def test_unregistered_json_keys_that_the_candidate_reproduces_are_safe(tmp_path):
    report = _check(tmp_path, _json_key_schema("region STRING NOT NULL, id INT NOT NULL"),
                    _facts(KEYS))
    assert report.verdict is Verdict.SAFE
    assert [f.rule.id for f in report.findings] == ["KG011"]


@pytest.mark.parametrize("columns", [
    "id INT NOT NULL, region STRING NOT NULL",          # primary key order swapped
    "region STRING NOT NULL, id DOUBLE NOT NULL",       # 1 -> 1.0
    "region STRING NOT NULL, id INT NOT NULL, t STRING",  # adds "t":null
])
def test_real_keys_the_candidate_cannot_reproduce_are_breaking(tmp_path, columns):
    report = _check(tmp_path, _json_key_schema(columns), _facts(KEYS))
    (f,) = report.breaking
    assert f.rule.id == "KG013" and "2 of 2" in f.message
    assert f.witness.old_bytes in KEYS and f.witness.new_bytes != f.witness.old_bytes


def test_a_renamed_key_column_loses_the_value(tmp_path):
    report = _check(tmp_path, _json_key_schema("area STRING NOT NULL, id INT NOT NULL"),
                    _facts(KEYS))
    (f,) = report.breaking
    assert f.witness.new_bytes == b'{"area":null,"id":1}'


def test_keys_the_candidate_cannot_decode_are_breaking(tmp_path):
    report = _check(tmp_path, _json_key_schema("region STRING NOT NULL, id INT NOT NULL"),
                    _facts([b"EU,1"]))
    (f,) = report.breaking
    assert f.witness.new_bytes is None and "cannot decode" in f.witness.new_error


def test_keys_not_on_their_murmur2_partition_are_breaking(tmp_path):
    report = _check(tmp_path, _json_key_schema("region STRING NOT NULL, id INT NOT NULL"),
                    _facts(KEYS, murmur2=False))
    (f,) = report.breaking
    assert f.rule.id == "KG014"
    assert f.witness.old_partition != f.witness.new_partition


def test_a_topic_that_is_not_compacted_warns(tmp_path):
    facts = TopicFacts(TOPIC, 3, "delete", sample_keys=())
    report = _check(tmp_path, _json_key_schema("region STRING NOT NULL, id INT NOT NULL"), facts)
    assert report.verdict is Verdict.WARN
    assert "KG701" in {f.rule.id for f in report.findings}


def test_live_topic_written_by_librdkafkas_default_partitioner(kafka_bootstrap, tmp_path):
    """The scan reads real keys and partitions: keys placed by consistent_random are caught."""
    from broker import new_topic
    from confluent_kafka import Producer

    from keyguard.guard.topic import KafkaTopicInspector

    topic = new_topic(kafka_bootstrap, partitions=6, config={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap})  # default: consistent_random
    keys = [json.dumps({"region": f"r{i}", "id": i}, separators=(",", ":")).encode()
            for i in range(40)]
    for k in keys:
        producer.produce(topic, key=k, value=b"{}")
    assert producer.flush(15) == 0
    spec = TopicCheck(topic, key_format="json", value_format=None,
                      candidate_key=_json_key_schema("region STRING NOT NULL, id INT NOT NULL"))
    report = check(spec, registry=FileRegistry(tmp_path),
                   inspector=KafkaTopicInspector(kafka_bootstrap))
    assert [f.rule.id for f in report.breaking] == ["KG014"]
