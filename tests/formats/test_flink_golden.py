"""Golden bytes captured from Apache Flink 2.3's own serialization schemas (see
data/flink_golden/capture.py): keyguard's row encoder and its Arrow batch encoder (the Spark
writer's two paths) must write exactly these bytes, and the decoder must read them back."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from formats.arrow_schema import rows_to_batch
from formats.codec import Codec, create_codec
from formats.errors import DecodeError
from formats.sqltypes import parse_columns
from formats.types import DataType, RowType, StringType
from formats.values import coerce_row

GOLDEN = Path(__file__).parent / "data" / "flink_golden" / "golden.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text().splitlines() if line]
GROUPS: dict[str, list[dict[str, Any]]] = defaultdict(list)
for _case in CASES:
    GROUPS[_case["case"].split("/")[0]].append(_case)


def _codec(case: dict[str, Any]) -> tuple[RowType, Codec]:
    rt = parse_columns(case["columns"])
    return rt, create_codec(case["format"], rt, case["options"])


def _unreadable_null(case: dict[str, Any], rt: RowType, row: dict[str, Any]) -> bool:
    """A csv null written as an empty field in a non-string place: Flink cannot read it back
    (ENVIRONMENT.md), and keyguard refuses to guess either."""
    if case["format"] != "csv" or "null-literal" in case["options"]:
        return False

    def empty_non_string(t: DataType, v: Any) -> bool:
        if isinstance(t, RowType):
            if v is None:
                return False  # a null nested row: the whole cell is empty, read back as null
            return any(empty_non_string(f.type, v.get(f.name)) for f in t.fields)
        return v is None and not isinstance(t, StringType)

    return any(empty_non_string(f.type, row.get(f.name)) for f in rt.fields)


def test_the_golden_file_covers_every_brief_item() -> None:
    groups = set(GROUPS)
    assert {"json-time", "csv-decimal", "csv-decimal-scientific", "csv-ascii", "csv-row",
            "csv-key-row", "json-decimal"} <= groups
    ascii_cases = [c for c in GROUPS["csv-ascii"] if len(c["row"]["s"]) == 3]
    assert sorted(ord(c["row"]["s"][1]) for c in ascii_cases) == list(range(128))


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_row_encoder_writes_flinks_bytes_and_reads_them_back(case: dict[str, Any]) -> None:
    rt, codec = _codec(case)
    row = coerce_row(rt, case["row"])
    golden = bytes.fromhex(case["hex"])
    assert codec.encode(row) == golden
    if _unreadable_null(case, rt, row):
        with pytest.raises(DecodeError):
            codec.decode(golden)
    else:
        assert codec.decode(golden) == row


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_batch_encoder_writes_the_same_bytes(group: str) -> None:
    cases = GROUPS[group]
    rt, codec = _codec(cases[0])
    rows = [coerce_row(rt, c["row"]) for c in cases]
    got = codec.encode_batch(rows_to_batch(rows, rt))
    assert got == [bytes.fromhex(c["hex"]) for c in cases]
