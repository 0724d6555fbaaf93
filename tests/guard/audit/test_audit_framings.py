"""The audit's framings: where keys and values carry their schema id (bytes, header, both,
nowhere), counted in the one fold, and a topic whose producers disagree judged breaking
(KG958), rendered as text, json and SARIF. The records are the bytes and headers
confluent-kafka's serializers write (`prefix_schema_id_serializer`, the default, and
`header_schema_id_serializer`), on keyguard's and the library's shared mock registry."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import UpsertPlan
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.judge import AuditFacts, framings, judge, phantoms
from keyguard.guard.audit.state import Folder
from keyguard.guard.offsets import Record
from keyguard.guard.render import render
from keyguard.guard.report import Verdict
from keyguard.guard.rules import MIXED_FRAMING, PHANTOM_KEY

PARTITIONS = 3
TABLE = parse_columns("code STRING NOT NULL, qty INT")


@pytest.fixture()
def scope() -> Iterator[str]:
    name = f"audit-framings-{uuid.uuid4().hex[:8]}"
    yield name
    MockRegistry.drop_scope(name)


def _plan(scope: str, key: str = "confluent", value: str = "confluent") -> UpsertPlan:
    plan = open_plan(TABLE, {
        "topic": "orders", "primary-key": "code", "key.format": "avro-confluent",
        "value.format": "avro-confluent", "key.avro-confluent.url": f"mock://{scope}",
        "value.avro-confluent.url": f"mock://{scope}", "key.avro-confluent.framing": key,
        "value.avro-confluent.framing": value})
    bind_plan_schema_ids(plan)
    return plan


class Log:
    """Records per partition, in offset order, murmur2-placed."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.next = dict.fromkeys(range(PARTITIONS), 0)

    def add(self, key: bytes, value: bytes | None, headers: Any = ()) -> None:
        p = partition_for(key, PARTITIONS)
        self.records.append(Record(p, self.next[p], 0, key, value, tuple(headers)))
        self.next[p] += 1

    def write(self, plan: UpsertPlan, code: str, qty: int | None) -> None:
        row = {"code": code, "qty": qty}
        key, value = plan.encode(row)
        self.add(key, None if qty is None else value,
                 plan.record_headers(tombstone=qty is None))


def _judged(plan: UpsertPlan, log: Log) -> Any:
    folder = Folder(plan, PARTITIONS)
    folder.add(log.records)
    state = folder.state
    facts = AuditFacts("orders", PARTITIONS, plan.key_format, plan.value_format)
    return state, judge(state, facts, phantoms(state), {})


def test_one_framing_is_counted_and_clean(scope: str) -> None:
    header = _plan(scope, "confluent-header", "confluent-header")
    log = Log()
    for i in range(6):
        log.write(header, f"order-{i:04d}", i)
    log.write(header, "order-0001", None)  # a delete: the key's header, no value's
    _, result = _judged(_plan(scope), log)  # Confluent's readers read either framing
    assert result.clean and result.undecodable == 0
    assert result.report.verdict is Verdict.SAFE
    assert result.data["framings"] == {
        "key": {"records": {"none": 0, "header": 7, "id": 0, "guid": 0, "both": 0},
                "live": {"none": 0, "header": 5, "id": 0, "guid": 0, "both": 0}},
        "value": {"records": {"none": 0, "header": 6, "id": 0, "guid": 0, "both": 0},
                  "live": {"none": 0, "header": 5, "id": 0, "guid": 0, "both": 0}}}
    guid = str(header.key_codec.guid)  # type: ignore[attr-defined]
    assert guid in {s["schema_id"] for s in result.data["schema_ids"]["key"]}
    text = render(result.report, "text")
    assert "key framings: live header 5; all records header 7" in text
    assert f"key schema GUID {guid}" in text


def test_producers_that_disagree_on_the_key_framing_leave_phantoms_and_a_finding(
        scope: str) -> None:
    prefix, header = _plan(scope), _plan(scope, "confluent-header", "confluent")
    log = Log()
    for i in range(4):
        log.write(prefix, f"order-{i:04d}", 1)
    for i in range(2):
        log.write(header, f"order-{i:04d}", 2)  # the same logical keys, header-framed
    state, result = _judged(prefix, log)
    assert result.phantom_keys == 2 and result.report.verdict is Verdict.BREAKING
    assert result.mixed_framings == 1 and not result.clean
    mixed = [f for f in result.report.findings if f.rule is MIXED_FRAMING]
    assert [f.path for f in mixed] == ["key framing"]
    message = mixed[0].message
    assert "the 6 live keys of topic orders carry their schema id in 2 framings" in message
    assert "4 in the bytes (magic byte 0" in message and "2 in a record header" in message
    assert "prefix-only reader" in message and "phantom rows" in message
    assert framings(state)["key"]["live"] == {"none": 0, "header": 2, "id": 4, "guid": 0,
                                              "both": 0}
    phantom = next(f for f in result.report.findings if f.rule is PHANTOM_KEY)
    assert "schema GUID in a header" in phantom.message
    # values: one framing, no finding for them
    assert framings(state)["value"]["live"]["id"] == 6
    doc = json.loads(render(result.report, "json"))
    assert any(f["rule"]["id"] == "KG958" for f in doc["findings"])
    assert doc["audit"]["framings"]["key"]["live"]["header"] == 2
    sarif = json.loads(render(result.report, "sarif"))
    results = sarif["runs"][0]["results"]
    assert any(r["ruleId"] == "KG958" and r["level"] == "error" for r in results)
    assert "KG958 mixed-framing" in render(result.report, "text")


def test_values_in_two_framings_are_a_finding_without_phantoms(scope: str) -> None:
    prefix = _plan(scope)
    header_values = _plan(scope, "confluent", "confluent-header")
    log = Log()
    for i in range(3):
        log.write(prefix, f"order-{i:04d}", 1)
    log.write(header_values, "order-0009", 1)
    _, result = _judged(prefix, log)
    assert result.phantom_keys == 0 and result.undecodable == 0
    mixed = [f for f in result.report.findings if f.rule is MIXED_FRAMING]
    assert [f.path for f in mixed] == ["value framing"]
    assert "phantom" not in mixed[0].message and "prefix-only reader" in mixed[0].message
    assert result.report.verdict is Verdict.BREAKING


def test_a_superseded_framing_is_counted_but_judged_by_the_live_table(scope: str) -> None:
    """A key rewritten in the header framing and its prefix-framed key deleted (what a
    migration leaves): every record read shows both framings, the live table one."""
    prefix, header = _plan(scope), _plan(scope, "confluent-header", "confluent-header")
    log = Log()
    log.write(prefix, "order-0001", 1)
    log.write(header, "order-0001", 1)
    key, _ = prefix.encode({"code": "order-0001", "qty": 1})
    log.add(key, None)  # the old key bytes, deleted
    state, result = _judged(prefix, log)
    assert result.clean and not [f for f in result.report.findings if f.rule is MIXED_FRAMING]
    assert framings(state)["key"]["records"]["id"] == 2
    assert framings(state)["key"]["live"] == {"none": 0, "header": 1, "id": 0, "guid": 0,
                                              "both": 0}


def test_confluent_kafkas_header_serializer_records_are_read_and_counted(scope: str) -> None:
    """The oracle: records confluent-kafka's AvroSerializer writes with
    header_schema_id_serializer decode, and count as header-framed."""
    plan = _plan(scope)
    client = MockRegistry(scope).client
    key_schema = plan.key_codec.written_schema().text
    conf = {"auto.register.schemas": True, "schema.id.serializer": header_schema_id_serializer}
    keys = AvroSerializer(client, key_schema, conf=conf)
    value_schema = plan.value_codec.written_schema().text
    values = AvroSerializer(client, value_schema, conf=conf)
    log = Log()
    for i in range(3):
        headers: list[tuple[str, bytes]] = []
        k = keys({"code": f"order-{i:04d}"},
                 SerializationContext("orders", MessageField.KEY, headers))
        v = values({"code": f"order-{i:04d}", "qty": i},
                   SerializationContext("orders", MessageField.VALUE, headers))
        log.add(k, v, headers)
    folder = Folder(_plan(scope, "confluent", "confluent"), PARTITIONS)
    folder.add(log.records)
    counts = framings(folder.state)
    assert counts["key"]["records"]["header"] == 3 and counts["value"]["records"]["header"] == 3
    assert sum(s.undecodable_keys + s.undecodable_values
               for s in folder.state.stats.values()) == 0
