"""json-registry keys and values through the Spark writer and reader, with a file registry."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

from broker import new_topic

from keyguard.formats.framing import CONFLUENT
from keyguard.formats.registry.file import FileRegistry

DDL = "region string, id int, name string, amount decimal(10,2), ts timestamp_ntz"
ROWS = [
    ("eu", 1, "Zoë", Decimal("1000.00"), dt.datetime(2024, 1, 1, 12, 0, 0, 500000)),
    ("us", 2, 'say "hi"', None, None),
    ("eu", 1, "Zoë 2", Decimal("12.50"), dt.datetime(2024, 1, 2)),  # an update of (eu, 1)
]


def test_write_and_read_back_json_registry(spark: Any, kafka_bootstrap: str, reader: Any,
                                           tmp_path: Path) -> None:
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    url = f"file://{tmp_path / 'schemas'}"
    opts = {"topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
            "primary-key": "region,id", "key.format": "json-registry",
            "value.format": "json-registry", "value.fields-include": "EXCEPT_KEY",
            "key.json-registry.url": url, "value.json-registry.url": url}
    summary = sparkio.write_upsert(spark.createDataFrame(ROWS, DDL), **opts)
    assert summary.records == 3

    registry = FileRegistry(tmp_path / "schemas")
    key_id = registry.get_version(f"{topic}-key").schema_id
    value_id = registry.get_version(f"{topic}-value").schema_id
    assert registry.get_by_id(key_id)[0] == registry.get_by_id(value_id)[0] == "JSON"
    written = reader.table(topic)
    assert CONFLUENT.header_bytes(key_id) + b'{"region":"eu","id":1}' in written
    value = written[CONFLUENT.header_bytes(key_id) + b'{"region":"eu","id":1}']
    assert value == CONFLUENT.header_bytes(value_id) + \
        '{"name":"Zoë 2","amount":12.5,"ts":"2024-01-02 00:00:00"}'.encode()

    rows = spark.read.format("upsert-kafka").options(**opts).schema(DDL).load().collect()
    got = sorted((r["region"], r["id"], r["name"], r["amount"], r["ts"]) for r in rows)
    assert got == sorted([ROWS[1], ROWS[2]])

    # Without .schema(...): the table comes from the registered JSON Schemas, as for Avro.
    inferred = spark.read.format("upsert-kafka").options(**opts).load()
    assert inferred.schema.simpleString() == \
        "struct<name:string,amount:decimal(10,2),ts:timestamp_ntz,region:string,id:int>"
    again = sorted((r["region"], r["id"], r["name"], r["amount"], r["ts"])
                   for r in inferred.collect())
    assert again == got
