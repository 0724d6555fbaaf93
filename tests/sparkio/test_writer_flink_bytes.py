"""The Spark writer writes Flink 2.3's bytes (captured in tests/formats/data/flink_golden) for
the cases a real Flink showed: json TIME(3) with its fraction, csv DECIMAL plain at full width,
a csv string holding a backslash, a csv ROW column; in keys and values."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from broker import new_topic

FULL = "99999999999999999999.999999999999999999"
DDL = "k decimal(38,18), s string, t time(3), r struct<a: int, b: string>"
ROW = (Decimal(FULL), "k\\b", dt.time(12, 34, 56, 789000), (1, "x y"))
JSON = (b'{"k":' + FULL.encode() + b',"s":"k\\\\b","t":"12:34:56.789","r":{"a":1,"b":"x y"}}')
CSV = FULL.encode() + b',"k\\b",12:34:56.789,"1;x y"'


@pytest.mark.parametrize(("key_format", "value_format", "key", "value"), [
    ("csv", "json", FULL.encode() + b',"k\\b"', JSON),
    ("json", "csv", b'{"k":' + FULL.encode() + b',"s":"k\\\\b"}', CSV),
])
def test_spark_writer_writes_flinks_bytes(spark: Any, kafka_bootstrap: str, key_format: str,
                                          value_format: str, key: bytes, value: bytes) -> None:
    pytest.importorskip("pandas", reason="pyspark's mapInArrow needs pandas on the driver")
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 1)
    opts = {"topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
            "primary-key": "k,s", "key.format": key_format, "value.format": value_format}
    before = spark.conf.get("spark.sql.timeType.enabled", "false")
    spark.conf.set("spark.sql.timeType.enabled", "true")  # Spark 4.1+ keeps TIME behind a flag
    try:
        out = sparkio.serialize(spark.createDataFrame([ROW], DDL), **opts).collect()
    finally:
        spark.conf.set("spark.sql.timeType.enabled", before)
    assert [(bytes(r["key"]), bytes(r["value"])) for r in out] == [(key, value)]
