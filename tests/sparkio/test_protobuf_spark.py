"""protobuf-registry and protobuf through Spark: a DataFrame written by the upsert-kafka writer
(registering .proto schemas in the file registry) and read back by the reader."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from broker import new_topic

CHANGES = [
    ("eu", 1, "ann", 1.5, dt.date(2024, 1, 1), "+I"),
    ("eu", 2, "bob", None, None, "+I"),
    ("us", 1, "cid", 2.5, dt.date(2024, 1, 3), "+I"),
    ("eu", 1, "ann2", 3.5, dt.date(2024, 2, 1), "+U"),
    ("eu", 2, "bob", None, None, "-D"),
]
DDL = "region string, id int, name string, score double, day date, op string"
COLUMNS = "region string, id int, name string, score double, day date"


@pytest.mark.parametrize("fmt", ["protobuf-registry", "protobuf"])
def test_write_and_read_back(spark: Any, kafka_bootstrap: str, tmp_path: Path, fmt: str) -> None:
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    opts = {"topic": topic, "properties.bootstrap.servers": kafka_bootstrap,
            "primary-key": "region,id", "key.format": fmt, "value.format": fmt,
            "changelog.column": "op"}
    if fmt == "protobuf-registry":
        registry = tmp_path / "schemas"
        opts |= {"key.protobuf-registry.url": f"file://{registry}",
                 "value.protobuf-registry.url": f"file://{registry}"}
    summary = sparkio.write_upsert(spark.createDataFrame(CHANGES, DDL), **opts)
    assert (summary.rows, summary.records, summary.tombstones) == (5, 5, 1)
    if fmt == "protobuf-registry":
        assert (registry / f"subjects/{topic}-key/v1.proto").exists()
        assert (registry / f"subjects/{topic}-value/v1.proto").exists()
    read_opts = {k: v for k, v in opts.items() if k != "changelog.column"}
    df = spark.read.format("upsert-kafka").options(**read_opts).schema(COLUMNS).load()
    got = sorted(tuple(r) for r in df.collect())
    assert got == [("eu", 1, "ann2", 3.5, dt.date(2024, 2, 1)),
                   ("us", 1, "cid", 2.5, dt.date(2024, 1, 3))]
    if fmt == "protobuf-registry":  # the registered messages give the table's columns
        inferred = spark.read.format("upsert-kafka").options(**read_opts).load()
        assert inferred.schema.simpleString() == \
            "struct<region:string,id:int,name:string,score:double,day:date>"
        assert sorted(tuple(r) for r in inferred.collect()) == got
