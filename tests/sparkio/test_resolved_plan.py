"""One resolved plan: the driver validates every option once; the plan pickles to the tasks,
which build their codecs from it and validate nothing again."""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from keyguard.sparkio.options import (
    DELIVERY,
    SCAN_FOLD,
    SCAN_LIMIT,
    SCAN_MODE,
    DeliveryGuarantee,
    ScanFold,
    ScanMode,
    resolve_connector,
)
from keyguard.sparkio.reader import UpsertKafkaReader
from keyguard.sparkio.writer import WriteJob, resolve_plan_only

SCHEMA = StructType([StructField("id", IntegerType()), StructField("v", StringType())])
OPTIONS = {"topic": "t", "properties.bootstrap.servers": "127.0.0.1:9", "primary-key": "id",
           "key.format": "json", "value.format": "csv", "value.csv.null-literal": "NULL",
           "guard.scan-limit": "5"}
#: One validation per option set: the table's with the connector's, then each format's.
ONCE = ["upsert-kafka", "json", "csv"]


def _batch() -> pa.RecordBatch:
    return pa.record_batch({"id": pa.array([1, 2], pa.int32()), "v": ["a", None]})


def test_the_driver_validates_each_option_set_once(validations: list[str]) -> None:
    resolve_plan_only(SCHEMA, OPTIONS)
    assert validations == ONCE


def test_a_task_validates_nothing(validations: list[str]) -> None:
    conn, plan = resolve_plan_only(SCHEMA, OPTIONS)
    job = pickle.loads(pickle.dumps(WriteJob(plan.spec, conn, 3)))
    del validations[:]
    encoded = job.encoder().encode(_batch())
    job.producer(0)
    job.run(iter([]))  # no rows: the task's whole setup, connecting to nothing
    assert validations == []
    assert list(encoded.keys) == [b'{"id":1}', b'{"id":2}']
    assert list(encoded.values) == [b"1,a", b"2,NULL"]


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_the_write_job_round_trips_through_pickle(dumps: Any) -> None:
    conn, plan = resolve_plan_only(SCHEMA, OPTIONS)
    job = WriteJob(plan.spec, conn, 3, 0.5, None, None)
    back = pickle.loads(dumps(job))
    assert back == job
    assert back.conn[SCAN_LIMIT] == 5 and back.table == plan.layout.table
    row = {"id": 1, "v": None}
    assert back.plan().encode(row) == plan.encode(row) == (b'{"id":1}', b"1,NULL")


def test_the_reader_validates_once_and_its_tasks_never(validations: list[str]) -> None:
    reader = UpsertKafkaReader(OPTIONS, SCHEMA)
    assert validations == ONCE
    task_side = pickle.loads(pickle.dumps(reader))
    plan = task_side.task_plan()
    assert validations == ONCE
    assert plan.decode(b'{"id":1}', b"1,NULL") == {"id": 1, "v": None}


def test_options_read_back_typed() -> None:
    conn = resolve_connector({**OPTIONS, "sink.delivery-guarantee": "EXACTLY-ONCE",
                              "sink.transactional-id-prefix": "job",
                              "scan.mode": "changelog", "scan.fold": "Global"})
    assert conn[DELIVERY] is DeliveryGuarantee.EXACTLY_ONCE
    assert conn[SCAN_MODE] is ScanMode.CHANGELOG and conn[SCAN_FOLD] is ScanFold.GLOBAL
    # Members are their option text, so a string comparison and the summary keep working.
    assert conn["sink.delivery-guarantee"] == "exactly-once"
