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


TIMES_DDL = """CREATE TABLE times (
  k BIGINT, ts TIMESTAMP(0), l TIMESTAMP_LTZ(1), t TIME(0), old TIMESTAMP(3),
  PRIMARY KEY (k) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = '{topic}',
        'properties.bootstrap.servers' = '{bootstrap}',
        'key.format' = 'json', 'value.format' = '{value_format}')"""


@pytest.mark.parametrize(("value_format", "value"), [
    # golden_declared.jsonl: declared-timestamp-json/0, declared-ltz-json/2, declared-time-json/0
    ("json", b'{"k":1,"ts":"2024-02-29 12:00:00","l":"1970-01-01 00:00:00Z","t":"01:02:03",'
             b'"old":"1969-12-31 23:59:59.999"}'),
    ("csv", b'1,"2024-02-29 12:00:00","1970-01-01 00:00:00Z",01:02:03,'
            b'"1969-12-31 23:59:59.999"'),
])
def test_spark_writer_and_reader_follow_the_ddls_time_precisions(
        spark: Any, kafka_bootstrap: str, value_format: str, value: bytes) -> None:
    """Spark holds microseconds; the DDL's TIMESTAMP(0), TIMESTAMP_LTZ(1) and TIME(0) are
    written as Flink writes them after its cast, and read back as declared."""
    pytest.importorskip("pandas", reason="pyspark's mapInArrow needs pandas on the driver")
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 1)
    ddl = TIMES_DDL.format(topic=topic, bootstrap=kafka_bootstrap, value_format=value_format)
    row = (1, dt.datetime(2024, 2, 29, 12, 0, 0, 999999),
           dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc),
           dt.time(1, 2, 3, 999999), dt.datetime(1969, 12, 31, 23, 59, 59, 999999))
    before = spark.conf.get("spark.sql.timeType.enabled", "false")
    spark.conf.set("spark.sql.timeType.enabled", "true")  # Spark 4.1+ keeps TIME behind a flag
    try:
        df = spark.createDataFrame(
            [row], "k bigint, ts timestamp_ntz, l timestamp, t time(6), old timestamp_ntz")
        out = sparkio.serialize(df, **{"flink.ddl": ddl}).collect()
        assert [bytes(r["value"]) for r in out] == [value]
        df.write.format("upsert-kafka").option("flink.ddl", ddl).mode("append").save()
        back = spark.read.format("upsert-kafka").option("flink.ddl", ddl).load().collect()
    finally:
        spark.conf.set("spark.sql.timeType.enabled", before)
    assert [tuple(r) for r in back] == [(
        1, dt.datetime(2024, 2, 29, 12), dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        .astimezone().replace(tzinfo=None), dt.time(1, 2, 3),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999000))]
