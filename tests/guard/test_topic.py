"""keyguard.guard.topic against a real broker (tansu or noida, started by the suite), plus its pure
half."""

from __future__ import annotations

import socket
import struct
import uuid

import pytest
from broker import KINDS, BrokerMissing, BrokerPool, new_topic
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from keyguard.formats.errors import EXIT_UNREACHABLE, BrokerUnavailableError
from keyguard.guard.topic import (
    KafkaTopicInspector,
    KeyTally,
    StaticTopicInspector,
    TopicFacts,
    TopicInspector,
    confluent_schema_id,
)


def confluent_key(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + payload


# -- pure ------------------------------------------------------------------------------------


def test_confluent_schema_id() -> None:
    assert confluent_schema_id(confluent_key(42, b"\x02")) == 42
    assert confluent_schema_id(b"\x00\x00\x00\x01\x00") == 256  # header only, empty payload
    assert confluent_schema_id(b"\x00\x00\x00\x01") is None  # too short
    assert confluent_schema_id(b"\x01\x00\x00\x00\x07x") is None  # not magic byte 0
    assert confluent_schema_id(b"") is None
    assert confluent_schema_id(None) is None


def test_key_tally() -> None:
    t = KeyTally.of(
        [confluent_key(1, b"a"), confluent_key(2, b"b"), confluent_key(1, b"c"), b"plain", None]
    )
    assert (t.ids, t.other, t.seen) == ({1: 2, 2: 1}, 2, 5)


def test_static_inspector_is_a_topic_inspector() -> None:
    facts = TopicFacts("t", 3, "compact,delete")
    inspector: TopicInspector = StaticTopicInspector({"t": facts})
    assert inspector.facts("t") is facts
    assert inspector.facts("other") is None


# -- against the broker ----------------------------------------------------------------------


def _create(bootstrap: str, partitions: int, config: dict[str, str] | None = None) -> str:
    return new_topic(bootstrap, partitions, config, prefix="kg-topic")


@pytest.fixture(params=KINDS)
def each_broker(request: pytest.FixtureRequest, kafka_brokers: BrokerPool) -> str:
    """Both brokers, for the facts whose answers differ between them (ListOffsets,
    DescribeConfigs); only the external one when KEYGUARD_TEST_BOOTSTRAP is set."""
    try:
        return kafka_brokers.get(request.param).bootstrap
    except BrokerMissing as e:
        pytest.skip(str(e))


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    # Batching (linger) is what makes tansu's ListOffsets wrong: the scan must not rely on it.
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 50, "partitioner": "murmur2_random"}
    )
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(15) == 0


@pytest.mark.broker
def test_facts_counts_schema_ids_tombstones_and_foreign_keys(each_broker: str) -> None:
    kafka_bootstrap = each_broker
    topic = _create(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    records: list[tuple[bytes | None, bytes | None]] = []
    records += [(confluent_key(101, bytes([i])), b"v") for i in range(120)]
    records += [(confluent_key(202, bytes([i])), b"v") for i in range(40)]
    records += [(confluent_key(202, bytes([i])), None) for i in range(5)]  # tombstones
    records += [(b"plain-text-key", b"v"), (b"\x00\x01", b"v"), (b"\x05\x00\x00\x00\x01x", None)]
    _produce(kafka_bootstrap, topic, records)

    facts = KafkaTopicInspector(kafka_bootstrap, timeout_s=10).facts(topic)

    assert facts is not None
    assert facts.topic == topic
    assert facts.partitions == 3
    assert facts.cleanup_policy == "compact"
    assert facts.key_schema_ids == {101: 120, 202: 45}
    assert facts.non_confluent_keys == 3
    assert facts.keys_scanned == len(records)
    assert facts.scan_complete is True


@pytest.mark.broker
def test_a_header_framed_topic_is_scanned_with_the_headers_that_hold_its_key_ids(
        kafka_bootstrap: str) -> None:
    from keyguard.formats.framing import APICURIO_HEADER_CONTENT_ID, CONFLUENT

    topic = _create(kafka_bootstrap, 2, {"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    # Bare bodies that start like Confluent's prefix: only the header says the id.
    keys = [confluent_key(9, bytes([i])) for i in range(6)]
    for i, key in enumerate(keys):
        producer.produce(topic, key=key, value=b"v", headers=[
            ("apicurio.key.contentId", struct.pack(">q", 40 + i % 2)), ("trace", b"t")])
    assert producer.flush(15) == 0
    frame = APICURIO_HEADER_CONTENT_ID.for_role("key")
    facts = KafkaTopicInspector(kafka_bootstrap, timeout_s=10).facts(topic, key_frame=frame)
    assert facts is not None
    assert facts.key_schema_ids == {40: 3, 41: 3}  # read from the header, not the bytes
    assert set(facts.sample_headers) == set(keys)
    for i, key in enumerate(keys):
        assert ("apicurio.key.contentId", struct.pack(">q", 40 + i % 2)) in \
            facts.sample_headers[key]
    # The prefix framing's scan keeps no headers and reads the bytes' id.
    prefix = KafkaTopicInspector(kafka_bootstrap, timeout_s=10).facts(topic, key_frame=CONFLUENT)
    assert prefix is not None and prefix.key_schema_ids == {9: 6} and not prefix.sample_headers


@pytest.mark.broker
def test_scan_limit_is_spread_over_partitions(kafka_bootstrap: str) -> None:
    topic = _create(kafka_bootstrap, 4, {"cleanup.policy": "compact"})
    _produce(
        kafka_bootstrap, topic, [(confluent_key(7, f"k{i}".encode()), b"v") for i in range(400)]
    )
    inspector = KafkaTopicInspector(kafka_bootstrap, timeout_s=10)

    limited = inspector.facts(topic, scan_limit=50)
    assert limited is not None
    assert (limited.keys_scanned, limited.key_schema_ids) == (50, {7: 50})
    assert limited.scan_complete is False
    assert any("limit of 50" in n for n in limited.notes)

    whole = inspector.facts(topic, scan_limit=400)
    assert whole is not None
    assert (whole.keys_scanned, whole.scan_complete) == (400, True)


@pytest.mark.broker
def test_short_partitions_leave_their_share_to_the_others(kafka_bootstrap: str) -> None:
    # 80 + 5 + 5 keys, a limit of 60: the first round gives each partition 20; partitions 1
    # and 2 end with 5, so partition 0 gets what they left, and the scan still takes 60.
    topic = _create(kafka_bootstrap, 3)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 50})
    for partition, n in ((0, 80), (1, 5), (2, 5)):
        for i in range(n):
            producer.produce(
                topic, key=confluent_key(partition, bytes([i])), value=b"v", partition=partition
            )
    assert producer.flush(15) == 0

    facts = KafkaTopicInspector(kafka_bootstrap).facts(topic, scan_limit=60)

    assert facts is not None
    assert facts.key_schema_ids == {0: 50, 1: 5, 2: 5}
    assert (facts.keys_scanned, facts.scan_complete) == (60, False)


@pytest.mark.broker
def test_empty_topic_and_no_scan(kafka_bootstrap: str) -> None:
    topic = _create(kafka_bootstrap, 2, {"cleanup.policy": "compact"})
    inspector = KafkaTopicInspector(kafka_bootstrap)
    facts = inspector.facts(topic)
    assert facts is not None
    assert (facts.keys_scanned, facts.key_schema_ids, facts.scan_complete) == (0, {}, True)

    unscanned = inspector.facts(topic, scan_schema_ids=False)
    assert unscanned is not None
    assert (unscanned.partitions, unscanned.keys_scanned, unscanned.scan_complete) == (2, 0, False)


@pytest.mark.broker
def test_cleanup_policy_unset_is_default_or_unknown(each_broker: str) -> None:
    # noida reports the broker default (delete); tansu reports only configs set at creation.
    topic = _create(each_broker, 1)
    facts = KafkaTopicInspector(each_broker).facts(topic, scan_schema_ids=False)
    assert facts is not None
    assert facts.cleanup_policy in ("delete", None)
    if facts.cleanup_policy is None:
        assert any("cleanup.policy" in n for n in facts.notes)


@pytest.mark.broker
def test_missing_topic_is_none_and_is_not_created(each_broker: str) -> None:
    topic = f"kg-missing-{uuid.uuid4().hex[:12]}"
    inspector = KafkaTopicInspector(each_broker)
    assert inspector.facts(topic) is None
    # Asking must not auto-create it (a Metadata request naming it would, on tansu and noida).
    assert inspector.facts(topic) is None
    assert (
        topic
        not in AdminClient({"bootstrap.servers": each_broker}).list_topics(timeout=10).topics
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_bootstrap_is_broker_unavailable() -> None:
    bootstrap = f"127.0.0.1:{_closed_port()}"
    inspector = KafkaTopicInspector(
        bootstrap, {"sasl.password": "hunter2-not-shown"}, timeout_s=1.5
    )
    with pytest.raises(BrokerUnavailableError) as info:
        inspector.facts("orders")
    err = info.value
    assert err.exit_code == EXIT_UNREACHABLE
    assert bootstrap in str(err)
    assert "'orders'" in str(err)
    assert "hunter2" not in str(err)


@pytest.mark.broker
def test_failed_authentication_is_broker_unavailable_without_secrets(kafka_bootstrap: str) -> None:
    # The broker's listener is plaintext: a SASL_SSL handshake cannot succeed.
    config = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "hunter2-not-shown",
    }
    inspector = KafkaTopicInspector(kafka_bootstrap, config, timeout_s=1.5)
    with pytest.raises(BrokerUnavailableError) as info:
        inspector.facts("orders")
    assert "hunter2" not in str(info.value)
    assert "hunter2" not in repr(info.value.args)


def test_tally_keeps_a_bounded_sample_of_distinct_keys_with_partitions():
    from keyguard.guard.topic import KeyTally

    tally = KeyTally(sample_limit=2)
    for key, part in ((b"a", 0), (b"a", 1), (None, 2), (b"b", 1), (b"c", 2)):
        tally.add(key, part)
    assert tally.samples == {b"a": 0, b"b": 1}
    assert tally.seen == 5
