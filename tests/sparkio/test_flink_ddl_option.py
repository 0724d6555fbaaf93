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
    assert with_flink_ddl({FLINK_DDL.key: ddl()}) == OPTIONS
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
