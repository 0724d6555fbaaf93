"""json-registry keys: the schema-id rules of avro-confluent plus the json text rules.

Every key is the magic byte, the schema id and Flink's json text, so a JSON Schema change the
registry sees as a new schema (even a FULL-compatible one) breaks every key, re-registering the
same schema keeps the id, and a change of the json text breaks the body too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keyguard.formats.errors import SchemaError
from keyguard.formats.framing import CONFLUENT
from keyguard.formats.json_schema import to_json_schema
from keyguard.formats.partitioner import partition_for
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.sqltypes import parse_type
from keyguard.formats.types import RowType
from keyguard.guard.check import TopicCheck, check
from keyguard.guard.keys import KeySide, analyze_key_change
from keyguard.guard.keys.analyze import encoder
from keyguard.guard.report import Report, Verdict
from keyguard.guard.topic import StaticTopicInspector, TopicFacts

TOPIC = "orders"


def rt(sql: str) -> RowType:
    t = parse_type(f"ROW<{sql}>")
    assert isinstance(t, RowType)
    return t.not_null()


def schema(sql: str, **extra: object) -> str:
    return json.dumps({**to_json_schema(rt(sql)), **extra})


def rule_ids(findings: list) -> set[str]:
    return {f.rule.id for f in findings}


def side(sql: str, text: str, schema_id: int | None = None, **kw: object) -> KeySide:
    return KeySide("json-registry", rt(sql), schema=text, schema_id=schema_id, **kw)


def test_full_compatible_schema_change_gets_a_new_id_and_breaks_every_key() -> None:
    sql = "region STRING NOT NULL, id BIGINT NOT NULL"
    old = side(sql, schema(sql), 11)
    described = schema(sql, description="order keys")  # FULL-compatible: metadata only
    findings = analyze_key_change(old, side(sql, described))
    assert Report.of(findings).verdict is Verdict.BREAKING
    (id_change,) = [f for f in findings if f.rule.id == "KG501"]
    w = id_change.witness
    assert w is not None and w.differs
    assert w.old_bytes[:5] == b"\x00" + (11).to_bytes(4, "big")
    assert w.new_bytes[:1] == b"\x00" and w.new_bytes[1:5] != w.old_bytes[1:5]
    assert w.old_bytes[5:] == w.new_bytes[5:]  # the json body is the same: only the id moved
    assert w.old_bytes[5:].startswith(b'{"region":')


def test_reregistering_the_identical_schema_is_safe() -> None:
    sql = "id BIGINT NOT NULL"
    text = schema(sql)
    respaced = json.dumps(json.loads(text), indent=2)  # the registry dedupes formatting away
    findings = analyze_key_change(side(sql, text, 11), side(sql, respaced))
    assert Report.of(findings).verdict is Verdict.SAFE, [f.message for f in findings]
    assert "KG911" in rule_ids(findings)
    same_id = analyze_key_change(side(sql, text, 11), side(sql, text, 11))
    assert Report.of(same_id).verdict is Verdict.SAFE


def test_field_order_change_breaks_the_json_text_and_the_id() -> None:
    old_sql, new_sql = "region STRING NOT NULL, id BIGINT NOT NULL", \
        "id BIGINT NOT NULL, region STRING NOT NULL"
    findings = analyze_key_change(side(old_sql, schema(old_sql), 11),
                                  side(new_sql, schema(new_sql)))
    assert {"KG103", "KG501"} <= rule_ids(findings)  # json text rule and id rule, both
    (reorder,) = [f for f in findings if f.rule.id == "KG103"]
    w = reorder.witness
    assert w is not None
    assert w.old_bytes[:1] == w.new_bytes[:1] == b"\x00"
    assert w.old_bytes[5:].startswith(b'{"region":') and w.new_bytes[5:].startswith(b'{"id":')


def test_a_json_text_option_change_is_judged_like_the_json_format() -> None:
    sql = "id BIGINT NOT NULL, ts TIMESTAMP(3) NOT NULL"
    text = schema(sql)
    old = side(sql, text, 11)
    new = side(sql, text, 11, options={"timestamp-format.standard": "ISO-8601"})
    findings = analyze_key_change(old, new)
    (changed,) = [f for f in findings if f.rule.id == "KG301"]
    assert Report.of(findings).verdict is Verdict.BREAKING
    w = changed.witness
    assert w is not None and w.old_bytes[:5] == w.new_bytes[:5]  # same id, other text
    assert b'"ts":"' in w.old_bytes and b"T" in w.new_bytes[w.new_bytes.index(b'"ts"'):]


def test_witness_bytes_are_what_the_codecs_write() -> None:
    sql = "id BIGINT NOT NULL"
    old = side(sql, schema(sql), 11)
    enc = encoder(old, TOPIC, 11)
    assert enc({"id": 5}) == b"\x00\x00\x00\x00\x0b" + b'{"id":5}'


@pytest.fixture
def registry(tmp_path: Path) -> FileRegistry:
    reg = FileRegistry(tmp_path / "schemas")
    reg.register(f"{TOPIC}-key", schema("id BIGINT NOT NULL"), "JSON")
    return reg


def test_check_blocks_a_compatible_key_change_through_the_registry(registry: FileRegistry
                                                                   ) -> None:
    plan = TopicCheck(TOPIC, key_format="json-registry", value_format="json-registry",
                      candidate_key=SchemaText("JSON", schema("id BIGINT NOT NULL",
                                                              title="OrderKey"), "new key"))
    report = check(plan, registry=registry)
    assert report.verdict is Verdict.BREAKING
    assert "KG501" in rule_ids(report.findings)


def test_check_passes_the_registered_key_schema(registry: FileRegistry) -> None:
    plan = TopicCheck(TOPIC, key_format="json-registry", value_format="json-registry",
                      candidate_key=SchemaText("JSON", schema("id BIGINT NOT NULL"), "key"))
    report = check(plan, registry=registry)
    assert report.verdict is Verdict.SAFE, [(f.rule.id, f.message) for f in report.findings]


def test_record_name_strategy_names_the_subject_by_the_schema_title() -> None:
    text = schema("id BIGINT NOT NULL", title="com.acme.OrderKey")
    plan = TopicCheck(TOPIC, key_format="json-registry",
                      key_options={"subject.name.strategy": "TopicRecordNameStrategy"})
    assert plan.subject("key", SchemaText("JSON", text, "key")) == "orders-com.acme.OrderKey"


def test_the_guard_reads_the_subject_in_the_schema_context() -> None:
    plan = TopicCheck(TOPIC, key_format="json-registry",
                      key_options={"schema-context": ".flink-dev"})
    assert plan.subject("key", None) == ":.flink-dev:orders-key"


def _scanned(keys: list[bytes], partitions: int = 6) -> TopicFacts:
    ids: dict[int, int] = {}
    for k in keys:
        framed = CONFLUENT.schema_id(k)
        if framed is not None:
            ids[framed] = ids.get(framed, 0) + 1
    return TopicFacts(TOPIC, partitions, "compact", key_schema_ids=ids,
                      keys_scanned=len(keys), scan_complete=True,
                      sample_keys=tuple((k, partition_for(k, partitions)) for k in keys))


def test_real_framed_keys_from_the_topic(registry: FileRegistry) -> None:
    key_id = registry.get_version(f"{TOPIC}-key").schema_id
    real = [CONFLUENT.header_bytes(key_id) + b'{"id":%d}' % i for i in (1, 22)]
    plan = TopicCheck(TOPIC, key_format="json-registry", value_format="json-registry",
                      candidate_key=SchemaText("JSON", schema("id BIGINT NOT NULL"), "key"))
    report = check(plan, registry=registry, inspector=StaticTopicInspector({TOPIC: _scanned(real)}))
    assert report.verdict is Verdict.SAFE, [(f.rule.id, f.message) for f in report.findings]

    unframed = [*real, b'{"id":3}']  # a plain json key: no frame, not this topic's writer
    report = check(plan, registry=registry,
                   inspector=StaticTopicInspector({TOPIC: _scanned(unframed)}))
    assert report.verdict is Verdict.BREAKING
    (f,) = [f for f in report.breaking if f.witness and f.witness.old_bytes == b'{"id":3}']
    assert f.witness.new_bytes is None and "magic byte" in (f.witness.new_error or "")


def test_a_candidate_of_another_schema_type_than_the_format_registers_is_refused(
        registry: FileRegistry) -> None:
    # avro-registry would register the Avro schema it derives, not this JSON Schema: judging
    # the JSON Schema (the registered one, so "the same id") would be a wrong SAFE.
    plan = TopicCheck(TOPIC, key_format="avro-registry", value_format="json-registry",
                      candidate_key=SchemaText("JSON", schema("id BIGINT NOT NULL"), "key.json"))
    with pytest.raises(SchemaError, match="key format avro-registry registers AVRO schemas"):
        check(plan, registry=registry)
