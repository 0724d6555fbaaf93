"""analyze_key_change end to end: findings with exact witness bytes, topic findings, errors."""

from __future__ import annotations

import pytest

from keyguard.formats.errors import KeyguardError
from keyguard.formats.partitioner import partition_for
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.keys import KeySide, analyze_key_change, topic_findings
from keyguard.guard.report import Report, Severity, Verdict


def ids(findings: list) -> list[str]:
    return [f.rule.id for f in findings]


def test_json_primary_key_order_is_in_the_bytes() -> None:
    old = KeySide("json", parse_columns("a INT NOT NULL, b STRING NOT NULL"))
    new = KeySide("json", parse_columns("b STRING NOT NULL, a INT NOT NULL"))
    [f] = analyze_key_change(old, new, topic="t")
    assert f.rule.id == "KG103" and f.path == "$" and f.topic == "t"
    w = f.witness
    assert w is not None
    assert w.old_bytes == b'{"a":42,"b":"0"}' and w.new_bytes == b'{"b":"0","a":42}'


def test_confluent_full_compatible_change_breaks_every_key() -> None:
    old = KeySide.from_avro("avro-confluent", {
        "type": "record", "name": "Key", "fields": [{"name": "id", "type": "long"}]},
        schema_id=7)
    new = KeySide.from_avro("avro-confluent", {
        "type": "record", "name": "Key", "fields": [
            {"name": "id", "type": "long", "doc": "the user"}]})
    findings = analyze_key_change(old, new)
    assert sorted(ids(findings)) == ["KG501", "KG906"]
    w = next(f for f in findings if f.rule.id == "KG501").witness
    assert w is not None and w.old_bytes is not None and w.new_bytes is not None
    assert w.old_bytes[:5] == b"\x00\x00\x00\x00\x07"
    assert w.new_bytes[0] == 0 and w.new_bytes[1:5] != b"\x00\x00\x00\x07"
    assert w.old_bytes[5:] == w.new_bytes[5:]  # the payload is the same; the id is not


def test_confluent_same_schema_registered_under_the_carried_id_is_safe() -> None:
    schema = '{"type":"record","name":"Key","fields":[{"name":"id","type":"long"}]}'
    old = KeySide.from_avro("avro-confluent", schema, key_schema_ids=(7,))
    new = KeySide.from_avro("avro-confluent", schema.replace(":", ": "), schema_id=7)
    assert ids(analyze_key_change(old, new)) == ["KG911"]


def test_avro_nullable_prefixes_every_key_with_a_branch_index() -> None:
    old = KeySide("avro", parse_columns("id STRING NOT NULL"))
    new = KeySide("avro", parse_columns("id STRING"))
    [f] = analyze_key_change(old, new)
    assert f.rule.id == "KG402"
    assert f.witness is not None and f.witness.new_bytes == b"\x02" + f.witness.old_bytes


def test_narrowing_witness_is_a_key_the_new_side_cannot_write() -> None:
    old = KeySide("csv", parse_columns("id BIGINT NOT NULL"))
    new = KeySide("csv", parse_columns("id INT NOT NULL"))
    [f] = analyze_key_change(old, new)
    assert f.rule.id == "KG202" and f.witness is not None
    assert f.witness.new_bytes is None and "out of range" in (f.witness.new_error or "")


def test_partition_count_change_shows_partitions() -> None:
    old = KeySide("raw", parse_columns("id STRING NOT NULL"), partitions=6)
    new = KeySide("raw", parse_columns("id STRING NOT NULL"), partitions=12)
    [f] = analyze_key_change(old, new)
    w = f.witness
    assert f.rule.id == "KG602" and w is not None and w.old_bytes == w.new_bytes
    assert w.old_partition == partition_for(w.old_bytes, 6) != w.new_partition


def test_safe_change_has_only_info_findings() -> None:
    old = KeySide("json", parse_columns("id INT NOT NULL"))
    new = KeySide("json", parse_columns("id BIGINT NOT NULL"))
    findings = analyze_key_change(old, new)
    assert Report.of(findings).verdict is Verdict.SAFE
    assert all(f.effective_severity is Severity.INFO for f in findings)


def test_a_side_no_codec_accepts_is_an_error_not_a_finding() -> None:
    old = KeySide("raw", parse_columns("a INT NOT NULL"))
    new = KeySide("raw", parse_columns("a INT NOT NULL, b INT NOT NULL"))
    with pytest.raises(KeyguardError):
        analyze_key_change(old, new)


def test_topic_findings() -> None:
    assert ids(topic_findings("compact", 6, 6, "murmur2_random")) == []
    assert ids(topic_findings("compact,delete", None, None)) == []
    [f] = topic_findings("delete", 6, 6, topic="orders")
    assert f.rule.id == "KG701" and f.effective_severity is Severity.WARNING
    assert f.topic == "orders"
    found = topic_findings("compact", 6, 12, "consistent_random")
    assert ids(found) == ["KG602", "KG603"]
    assert all(f.witness is not None and f.witness.differs for f in found)
