"""What Apache Flink 2.3's csv reader makes of each record in data/flink_golden/golden_read.jsonl
(captured by data/flink_golden/capture.py from CsvRowDataDeserializationSchema, with
csv.ignore-parse-errors off and on): keyguard's csv decoder must answer the same, row by row and
in `decode_batch` -- the same row, a skipped record (None), or an error."""

from __future__ import annotations

import json
import math
import struct
from collections import defaultdict
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from keyguard.formats.codec import BatchDecodeError, Codec, create_codec
from keyguard.formats.errors import DecodeError
from keyguard.formats.sqltypes import parse_columns
from keyguard.formats.types import ArrayType, DataType, FloatType, RowType
from keyguard.formats.values import coerce_row

GOLDEN = Path(__file__).parent / "data" / "flink_golden" / "golden_read.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text("utf-8").split("\n") if line]
BATCHES: dict[tuple[str, bool], list[dict[str, Any]]] = defaultdict(list)
for _case in CASES:
    BATCHES[(_case["case"].split("/")[0], _case["ignore-parse-errors"])].append(_case)

#: Records keyguard reads differently from Flink, and why (README, csv notes).
DIFFERENT = {
    # Jackson's UTF-8 reader accepts the overlong form C0 80 (NUL); Python's codec, which
    # keyguard decodes with, rejects it as invalid UTF-8.
    "csv-read-key/21": "overlong UTF-8",
}


def _id(case: dict[str, Any]) -> str:
    return f"{case['case']}-{'lenient' if case['ignore-parse-errors'] else 'strict'}"


def _codec(case: dict[str, Any]) -> tuple[RowType, Codec]:
    rt = parse_columns(case["columns"])
    options = dict(case["options"], **{"ignore-parse-errors": str(case["ignore-parse-errors"])})
    return rt, create_codec("csv", rt, options)


def _same(t: DataType, a: Any, b: Any) -> bool:
    """Equal as the column's type holds them: FLOAT as float32, NaN equal to NaN."""
    if a is None or b is None:
        return a is b
    if isinstance(t, RowType):
        return all(_same(f.type, a.get(f.name), b.get(f.name)) for f in t.fields)
    if isinstance(t, ArrayType):
        return len(a) == len(b) and all(_same(t.element, x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if isinstance(t, FloatType):
            return struct.pack("<f", a) == struct.pack("<f", b)
    return type(a) is type(b) and a == b


def _agrees(rt: RowType, case: dict[str, Any], got: dict[str, Any] | None) -> bool:
    if "skipped" in case:
        return got is None
    expected = coerce_row(rt, case["row"])
    return got is not None and all(_same(f.type, got[f.name], expected[f.name])
                                   for f in rt.fields)


def test_the_capture_covers_the_reads_flink_differs_on() -> None:
    ids = {_id(c): c for c in CASES}
    # An empty BOOLEAN is FALSE in both modes.
    assert ids["csv-read-boolean/0-strict"]["row"]["c"] is False
    # An empty element of an ARRAY or ROW is null (lenient), the whole field is not.
    assert ids["csv-read-array/0-lenient"]["row"]["a"] == [None, 5]
    assert ids["csv-read-row/0-lenient"]["row"]["r"] == {"x": None, "y": "", "z": None}
    # An ARRAY field equal to the null literal is [NULL].
    assert ids["csv-read-array-null-literal/0-strict"]["row"]["a"] == [None]
    # A zero-length record and one with extra fields: skipped, or the job fails.
    for key in ("csv-read-key/0", "csv-read-key/6"):
        assert ids[f"{key}-lenient"].get("skipped") and "error" in ids[f"{key}-strict"]
    # A UTF-8 BOM goes; a NUL among the first bytes makes Jackson read UTF-16.
    assert ids["csv-read-key/2-strict"]["row"]["k"] == "k1"
    assert ids["csv-read-key/4-strict"]["row"]["k"] == "k"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_decode_reads_what_flink_reads(case: dict[str, Any]) -> None:
    rt, codec = _codec(case)
    data = bytes.fromhex(case["hex"])
    if case["case"] in DIFFERENT:
        with pytest.raises(DecodeError) if not case["ignore-parse-errors"] else nullcontext():
            got = codec.decode(data)
            assert not _agrees(rt, case, got)
        return
    if "error" in case:
        with pytest.raises(DecodeError):
            codec.decode(data)
        return
    got = codec.decode(data)
    assert _agrees(rt, case, got), f"Flink: {case.get('row', 'skipped')}, keyguard: {got}"


@pytest.mark.parametrize("batch", sorted(BATCHES), ids=lambda b: f"{b[0]}-{b[1]}")
def test_decode_batch_reads_what_flink_reads(batch: tuple[str, bool]) -> None:
    cases = [c for c in BATCHES[batch] if c["case"] not in DIFFERENT]
    rt, codec = _codec(cases[0])
    data = [bytes.fromhex(c["hex"]) for c in cases]
    failing = [i for i, c in enumerate(cases) if "error" in c]
    if failing:
        with pytest.raises(BatchDecodeError) as info:
            codec.decode_batch(data, arrow=False)
        assert info.value.index == failing[0]
        assert isinstance(info.value.error, DecodeError)
        cases = [c for c in cases if "error" not in c]
        data = [bytes.fromhex(c["hex"]) for c in cases]
    decoded = codec.decode_batch(data, arrow=False)
    assert decoded.skipped == [i for i, c in enumerate(cases) if "skipped" in c]
    for case, got in zip(cases, decoded.rows(), strict=True):
        assert _agrees(rt, case, got), case["case"]
