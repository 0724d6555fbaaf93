"""sparkio.audit: the audit as a Spark job (one task per partition, states merged on the
driver) gives the report `keyguard.guard.audit.scan.audit_topic` gives."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from broker import new_topic
from confluent_kafka import Producer

from keyguard import sparkio
from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.partitioner import partition_for
from keyguard.formats.registry.registration import open_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.scan import audit_topic
from keyguard.guard.render import render

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.broker, pytest.mark.slow]

COLS = "id BIGINT, region STRING, n STRING"


def _opts(bootstrap: str, topic: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap, "key.format": "json",
            "value.format": "json", "primary-key": "id,region"}


def _key(i: int, *, reverse: bool = False) -> bytes:
    return (f'{{"region":"r{i % 2}","id":{i}}}' if reverse
            else f'{{"id":{i},"region":"r{i % 2}"}}').encode()


def _value(i: int, n: str) -> bytes:
    return f'{{"id":{i},"region":"r{i % 2}","n":"{n}"}}'.encode()


def _write_damaged_topic(bootstrap: str) -> str:
    """v1 keys, then v2 keys with the fields reordered (phantoms), a key on the wrong partition,
    a tombstone, a null key."""
    topic = new_topic(bootstrap, 3, {"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                  "linger.ms": 20})
    for i in range(24):
        p.produce(topic, key=_key(i), value=_value(i, "v1"))
    for i in range(6):
        p.produce(topic, key=_key(i, reverse=True), value=_value(i, "v2"))
    stray = _key(100)
    p.produce(topic, key=stray, value=_value(100, "x"),
              partition=(partition_for(stray, 3) + 1) % 3)
    p.produce(topic, key=_key(7), value=None)
    p.produce(topic, key=None, value=b"{}")
    assert p.flush(15) == 0
    return topic


def test_spark_audit_is_the_command_audit(spark: SparkSession, kafka_bootstrap: str) -> None:
    topic = _write_damaged_topic(kafka_bootstrap)
    result = sparkio.audit(spark, schema=COLS, **_opts(kafka_bootstrap, topic))
    assert (result.phantom_keys, result.orphaned_records, result.misplaced_keys) == (6, 6, 1)
    assert result.null_keys == 1 and result.records == 33

    plan = open_plan(parse_columns(COLS), {k: v for k, v in _opts(kafka_bootstrap, topic).items()
                                           if not k.startswith("properties.")})
    local = audit_topic(topic, plan, bootstrap=kafka_bootstrap)
    assert result.data == local.data
    assert render(result.report, "json") == render(local.report, "json")


def test_spark_audit_sample_and_bad_options(spark: SparkSession, kafka_bootstrap: str) -> None:
    topic = _write_damaged_topic(kafka_bootstrap)
    sampled = sparkio.audit(spark, schema=COLS, sample=6, **_opts(kafka_bootstrap, topic))
    assert sampled.records == 6 and sampled.data["captured_records"] == 33
    with pytest.raises(InvalidOptionError, match=r"key\.fromat"):
        sparkio.audit(spark, schema=COLS, **{**_opts(kafka_bootstrap, topic),
                                             "key.fromat": "json"})
