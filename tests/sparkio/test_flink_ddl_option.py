"""The `flink.ddl` option: the upsert-kafka data source, writer and reader take a Flink table as
its CREATE TABLE statement, and resolve it to the options it stands for."""

from __future__ import annotations

from typing import Any

import pytest
from broker import new_topic

from keyguard.formats.errors import InvalidOptionError
from keyguard.sparkio.options import FLINK_DDL, resolve_connector, with_flink_ddl

DDL = """
CREATE TABLE orders (
  region STRING,
  id INT,
  name STRING,
  amount DECIMAL(10, 2),
  written TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
  PRIMARY KEY (region, id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{topic}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'csv',
  'key.csv.field-delimiter' = '|',
  'value.format' = 'json',
  'value.json.encode.decimal-as-plain-number' = 'true',
  'sink.parallelism' = '2'{more}
)
"""
OPTIONS = {"topic": "orders", "properties.bootstrap.servers": "127.0.0.1:9",
           "primary-key": "region,id", "key.format": "csv", "key.csv.field-delimiter": "|",
           "value.format": "json", "value.json.encode.decimal-as-plain-number": "true",
           "sink.parallelism": "2"}


def ddl(topic: str = "orders", bootstrap: str = "127.0.0.1:9", more: str = "") -> str:
    return DDL.format(topic=topic, bootstrap=bootstrap, more=more)


def test_the_ddl_resolves_to_its_options() -> None:
    assert with_flink_ddl({FLINK_DDL.key: ddl()})[0] == OPTIONS
    by_ddl = resolve_connector({FLINK_DDL.key: ddl()})
    by_options = resolve_connector(OPTIONS)
    assert by_ddl.resolved == by_options.resolved
    assert by_ddl.primary_key == ("region", "id")
    assert by_ddl.bootstrap == "127.0.0.1:9"


def test_options_given_beside_the_ddl_win() -> None:
    conn = resolve_connector({FLINK_DDL.key: ddl(), "topic": "orders_v2",
                              "key.csv.field-delimiter": ";"})
    assert conn.topic == "orders_v2"
    assert conn.resolved.key.given == {"field-delimiter": ";"}


@pytest.mark.parametrize(("more", "message"), [
    (",\n  'sink.partitioner' = 'round-robin'", "sink.partitioner 'round-robin'"),
    (",\n  'key.csv.quote' = 'x'", "flink.ddl:18:3: option 'key.csv.quote'"),
])
def test_what_the_connector_cannot_honour_is_refused(more: str, message: str) -> None:
    with pytest.raises(InvalidOptionError) as info:
        resolve_connector({FLINK_DDL.key: ddl(more=more)})
    assert message in info.value.message


def test_written_and_read_back_by_the_ddl_alone(spark: Any, kafka_bootstrap: str) -> None:
    from decimal import Decimal

    topic = new_topic(kafka_bootstrap, 3)
    table = ddl(topic, kafka_bootstrap)
    rows = [("eu", 1, "ann", Decimal("1.50")), ("eu", 2, "bob", None),
            ("us", 1, "cid", Decimal("1000.00"))]
    df = spark.createDataFrame(rows, "region string, id int, name string, "
                                     "amount decimal(10,2)")
    df.write.format("upsert-kafka").option(FLINK_DDL.key, table).mode("append").save()
    back = spark.read.format("upsert-kafka").option(FLINK_DDL.key, table).load()
    assert back.schema.simpleString() == \
        "struct<region:string,id:int,name:string,amount:decimal(10,2)>"
    assert [f.nullable for f in back.schema.fields] == [False, False, True, True]
    assert sorted(tuple(r) for r in back.collect()) == sorted(rows)


LENGTHS_DDL = """
CREATE TABLE codes (
  id INT,
  tm STRING,
  c CHAR(2),
  b BINARY(16),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{topic}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json',
  'value.format' = 'json'
)
"""


def test_the_ddl_declares_the_table_written() -> None:
    """Its columns in its order and with their lengths; a nullable one the DataFrame lacks is
    written as null, a NOT NULL one or an undeclared DataFrame column is refused by name."""
    from pyspark.sql import types as T

    from keyguard.formats.errors import SchemaError
    from keyguard.sparkio.writer import table_type

    conn = resolve_connector({FLINK_DDL.key: LENGTHS_DDL.format(topic="codes",
                                                                    bootstrap="127.0.0.1:9")})
    frame = T.StructType([T.StructField("c", T.StringType()), T.StructField("id", T.IntegerType()),
                          T.StructField("b", T.BinaryType())])
    assert table_type(frame, conn).sql() == (
        "ROW<`id` INT, `tm` STRING, `c` CHAR(2), `b` BINARY(16)> NOT NULL")
    extra = T.StructType([*frame.fields, T.StructField("note", T.StringType())])
    with pytest.raises(SchemaError) as info:
        table_type(extra, conn)
    assert "DataFrame column note not declared" in info.value.message
    with pytest.raises(SchemaError) as info:
        table_type(T.StructType(frame.fields[:1]), conn)
    assert "NOT NULL column id of the table missing from the DataFrame" in info.value.message


def test_the_writer_writes_flinks_bytes_for_the_declared_table(spark: Any,
                                                              kafka_bootstrap: str) -> None:
    """The bytes Flink 2.3 wrote for these rows (tests/formats/data/flink_golden: json-missing,
    json-length): CHAR(2) 'D' padded, BINARY(16) X'01' padded, the left-out `tm` null."""
    pytest.importorskip("pandas", reason="pyspark's mapInArrow needs pandas on the driver")
    from keyguard import sparkio

    df = spark.createDataFrame([("D", 2, bytearray(b"\x01")), ("DDDD", 1, None)],
                               "c string, id int, b binary")
    topic = new_topic(kafka_bootstrap, 1)
    out = sparkio.serialize(df, **{FLINK_DDL.key: LENGTHS_DDL.format(
        topic=topic, bootstrap=kafka_bootstrap)}).collect()
    values = sorted(bytes(r["value"]) for r in out)
    assert values == [b'{"id":1,"tm":null,"c":"DD","b":null}',
                      b'{"id":2,"tm":null,"c":"D ","b":"AQAAAAAAAAAAAAAAAAAAAA=="}']
