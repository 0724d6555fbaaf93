"""The reader reads what Flink 2.3 writes: DECIMAL(38, 18) at full width in a NOT NULL key, a
json TIME(3) with its fraction, a csv ROW column. A value never turns into NULL: it decodes or
fails naming topic, partition, offset and column."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest
from broker import new_topic
from confluent_kafka import Producer

from keyguard.formats.errors import DecodeError
from keyguard.formats.plan import resolve_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.offsets import Record
from keyguard.sparkio.reader import connector_options, decode_events

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FULL = "99999999999999999999.999999999999999999"
COLS = "k DECIMAL(38, 18) NOT NULL, t TIME(3), r ROW<a INT, b STRING>"
# Bytes Flink 2.3's serialization schemas write for k = FULL, t = 12:34:56.789, r = (1, 'k\b')
JSON_KEY = b'{"k":' + FULL.encode() + b"}"
JSON_VALUE = b'{"k":' + FULL.encode() + b',"t":"12:34:56.789","r":{"a":1,"b":"k\\\\b"}}'
CSV_KEY = FULL.encode()
CSV_VALUE = FULL.encode() + b',12:34:56.789,"1;k\\b"'


def _options(fmt: str, **extra: str) -> dict[str, str]:
    return {"topic": "t", "primary-key": "k", "key.format": fmt, "value.format": fmt,
            "properties.bootstrap.servers": "127.0.0.1:1", **extra}


def _plan(fmt: str) -> Any:
    return resolve_plan(parse_columns(COLS), _options(fmt), extra=connector_options())


@pytest.mark.parametrize(("fmt", "key", "value"), [("json", JSON_KEY, JSON_VALUE),
                                                  ("csv", CSV_KEY, CSV_VALUE)])
def test_flinks_full_width_decimal_key_decodes_exactly(fmt: str, key: bytes, value: bytes,
                                                       ) -> None:
    [(k, row, _)] = decode_events(_plan(fmt), [Record(0, 7, 0, key, value)])
    assert k == (Decimal(FULL),)
    assert row is not None and row["k"] == Decimal(FULL)
    assert str(row["t"]) == "12:34:56.789000"
    assert row["r"] == {"a": 1, "b": "k\\b"}


@pytest.mark.parametrize(("fmt", "key"), [
    ("json", b'{"k":100000000000000000000}'),
    ("json", b'{"k":99999999999999999999.9999999999999999995}'),  # rounds to 39 digits
])
def test_a_key_wider_than_its_type_fails_naming_offset_and_column(fmt: str, key: bytes) -> None:
    with pytest.raises(DecodeError, match=r"partition 0 offset 7.*'k'.*38 digits"):
        list(decode_events(_plan(fmt), [Record(0, 7, 0, key, None)]))


def test_spark_reads_flinks_bytes(spark: SparkSession, kafka_bootstrap: str) -> None:
    topic = new_topic(kafka_bootstrap, 1)
    p = Producer({"bootstrap.servers": kafka_bootstrap, "log_level": 0})
    p.produce(topic, partition=0, key=JSON_KEY, value=JSON_VALUE)
    assert p.flush(10) == 0
    opts = {**_options("json"), "topic": topic, "properties.bootstrap.servers": kafka_bootstrap}
    rows = (spark.read.format("upsert-kafka").options(**opts)
            .schema("k DECIMAL(38, 18) NOT NULL, r STRUCT<a: INT, b: STRING>").load().collect())
    assert [(r["k"], r["r"]["b"]) for r in rows] == [(Decimal(FULL), "k\\b")]
