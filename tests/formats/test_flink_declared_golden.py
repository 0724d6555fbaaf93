"""Declared TIME, TIMESTAMP and TIMESTAMP_LTZ precisions against Apache Flink 2.3's bytes
(data/flink_golden/golden_declared.jsonl, captured by data/flink_golden/capture.py): what Flink
writes once its INSERT has cast a value to the column's declared type, from text (a row given
to the CLI) or from microseconds (what a Spark DataFrame holds), and what its readers make of
those bytes and of a few another producer wrote."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from keyguard.formats.arrow_schema import rows_to_batch
from keyguard.formats.codec import Codec, create_codec
from keyguard.formats.errors import KeyguardError, UnsupportedTypeError
from keyguard.formats.sqltypes import parse_columns
from keyguard.formats.types import RowType
from keyguard.formats.values import coerce_row

GOLDEN = Path(__file__).parent / "data" / "flink_golden" / "golden_declared.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text("utf-8").split("\n") if line]
WRITES = [c for c in CASES if c["source"] != "bytes"]
READS = [c for c in CASES if "hex" in c]
GROUPS: dict[str, list[dict[str, Any]]] = defaultdict(list)
for _case in WRITES:
    if "hex" in _case:
        GROUPS[_case["case"].split("/")[0]].append(_case)


def _codec(case: dict[str, Any]) -> tuple[RowType, Codec]:
    rt = parse_columns(case["columns"])
    return rt, create_codec(case["format"], rt, case["options"])


def _spark_types(case: dict[str, Any]) -> RowType:
    """The columns as a DataFrame holds them: microseconds whatever the declared precision."""
    return parse_columns(re.sub(r"\((\d)\)", "(6)", case["columns"]))


def _spark_value(text: str) -> dt.time | dt.datetime:
    """A value at Spark's precision (microseconds, never rounded)."""
    if len(text) <= 15:
        return dt.time.fromisoformat(text)
    if text.endswith("Z"):
        return dt.datetime.fromisoformat(text[:-1]).replace(tzinfo=dt.timezone.utc)
    return dt.datetime.fromisoformat(text)


def _row(case: dict[str, Any], rt: RowType) -> dict[str, Any]:
    if case["source"] == "text":
        return coerce_row(rt, case["row"])
    return {k: _spark_value(v) for k, v in case["row"].items()}


def test_the_capture_covers_each_precision_format_and_source() -> None:
    kinds = {(c["format"], c["source"], t)
             for c in WRITES for t in re.findall(r"(TIMESTAMP_LTZ|TIMESTAMP|TIME)\(", c["columns"])}
    assert {(f, "value", t) for f in ("json", "csv")
            for t in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ")} <= kinds
    assert {("json", "text", "TIME"), ("csv", "text", "TIME")} <= kinds
    precisions = {int(p) for c in WRITES for p in re.findall(r"\((\d)\)", c["columns"])}
    assert {0, 1, 3, 6, 9} <= precisions
    # the half-millisecond just before midnight: Flink's cast fails, so does keyguard's
    assert any(c["row"]["m3"] == "23:59:59.9995" and "error" in c for c in WRITES
               if "m3" in c["row"])


@pytest.mark.parametrize("case", WRITES, ids=[c["case"] for c in WRITES])
def test_row_encoder_writes_the_declared_types_bytes(case: dict[str, Any]) -> None:
    rt, codec = _codec(case)
    if "error" in case:  # Flink's cast fails, and the INSERT with it
        with pytest.raises(KeyguardError, match="rounds to 24:00:00"):
            coerce_row(rt, case["row"])
        return
    assert codec.encode(_row(case, rt)) == bytes.fromhex(case["hex"])


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_spark_batches_are_written_at_the_declared_precision(group: str) -> None:
    """The Spark writer's path: Arrow columns of microseconds (timestamp[us], time64[us]),
    encoded by the codec of the declared types."""
    cases = GROUPS[group]
    _, codec = _codec(cases[0])
    spark = _spark_types(cases[0])
    rows = [_row(c, spark) for c in cases]
    batch = rows_to_batch(rows, spark)
    assert codec.encode_batch(batch) == [bytes.fromhex(c["hex"]) for c in cases]


@pytest.mark.parametrize("case", READS, ids=[c["case"] for c in READS])
def test_decode_reads_what_flinks_reader_reads(case: dict[str, Any]) -> None:
    rt, codec = _codec(case)
    data = bytes.fromhex(case["hex"])
    if "read_error" in case:
        assert "Csv does not support TIME type with precision" in case["read_error"]
        with pytest.raises(UnsupportedTypeError, match="Flink's csv reader refuses it"):
            codec.decode(data)
        return
    assert codec.decode(data) == coerce_row(rt, case["read"])


def test_sub_millisecond_time_text_rounds_as_flinks_cast() -> None:
    rt = parse_columns("t TIME(3)")
    got = [coerce_row(rt, {"t": t})["t"] for t in
           ("01:02:03.1235", "01:02:03.1234", "01:02:59.9995", "23:59:59.9994", "01:02:03.5")]
    assert got == [dt.time(1, 2, 3, 124000), dt.time(1, 2, 3, 123000), dt.time(1, 3),
                   dt.time(23, 59, 59, 999000), dt.time(1, 2, 3, 500000)]
    with pytest.raises(KeyguardError, match=r"23:59:59\.9995 rounds to 24:00:00"):
        coerce_row(rt, {"t": "23:59:59.9995"})
    with pytest.raises(KeyguardError, match=r"hour must be in 0\.\.23"):
        coerce_row(rt, {"t": "24:00:00"})


def test_spark_values_are_never_rounded() -> None:
    """A time Spark holds is truncated to milliseconds, as Flink converts a LocalTime."""
    rt = parse_columns("t TIME(3), s TIMESTAMP(0), l TIMESTAMP_LTZ(0)")
    codec = create_codec("json", rt, {})
    row = {"t": dt.time(1, 2, 3, 123999), "s": dt.datetime(2024, 2, 29, 12, 0, 0, 999999),
           "l": dt.datetime(2024, 2, 29, 12, 0, 0, 999999, tzinfo=dt.timezone.utc)}
    assert codec.encode(row) == (b'{"t":"01:02:03.123","s":"2024-02-29 12:00:00",'
                                 b'"l":"2024-02-29 12:00:00Z"}')
