"""Golden bytes captured from Apache Flink 2.3's own serialization schemas (see
data/flink_golden/capture.py): keyguard's row encoder and its Arrow batch encoder (the Spark
writer's two paths) must write exactly these bytes, and the decoder must read them back."""

from __future__ import annotations

import contextlib
import json
import math
import re
import struct
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from keyguard.formats.arrow_schema import rows_to_batch
from keyguard.formats.codec import Codec, CodecContext, create_codec
from keyguard.formats.errors import DecodeError
from keyguard.formats.lengths import fit_batch, fit_row
from keyguard.formats.sqltypes import parse_columns
from keyguard.formats.types import (
    ArrayType,
    DataType,
    DoubleType,
    FloatType,
    MapType,
    RowType,
    StringType,
)
from keyguard.formats.values import coerce_row

GOLDEN = Path(__file__).parent / "data" / "flink_golden" / "golden.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text("utf-8").split("\n") if line]
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
        if isinstance(t, ArrayType):
            return v is not None and any(empty_non_string(t.element, x) for x in v)
        return v is None and not isinstance(t, StringType)

    return any(empty_non_string(f.type, row.get(f.name)) for f in rt.fields)


#: Records Flink writes but cannot read back as the same row (nor can keyguard; what both read
#: is in golden_read.jsonl): csv has no escaping of the array delimiter, nor of anything with
#: quoting disabled, and an ARRAY or ROW field holding the null literal is split like any other.
NOT_READABLE = {
    "csv-quote-escape/0": "an ARRAY element holds the array-element-delimiter",
    "csv-no-quotes/0": "quoting disabled and a value holds the field delimiter",
    "csv-types/2": "ARRAY [''] is written as an empty field, which reads as []",
    "csv-ascii/128": "a NUL as the second byte makes Jackson read the record as UTF-16LE",
    "csv-row-options/2": "a null ROW is written as the null literal, read as one null field",
    "csv-no-quotes/1": "a null ARRAY is written as the null literal, read as [NULL]",
}


def _same(t: DataType, a: Any, b: Any) -> bool:
    """Equal as the column's type holds them: FLOAT as float32, NaN equal to NaN."""
    if a is None or b is None:
        return a is b
    if isinstance(t, RowType):
        return all(_same(f.type, a.get(f.name), b.get(f.name)) for f in t.fields)
    if isinstance(t, ArrayType):
        return len(a) == len(b) and all(_same(t.element, x, y) for x, y in zip(a, b, strict=True))
    if isinstance(t, MapType):
        return a.keys() == b.keys() and all(_same(t.value, a[k], b[k]) for k in a)
    if isinstance(t, (FloatType, DoubleType)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if isinstance(t, FloatType):
            return bool(struct.pack("<f", a) == struct.pack("<f", b))
    return bool(a == b)


def test_the_golden_file_covers_every_brief_item() -> None:
    groups = set(GROUPS)
    assert {"json-time", "csv-decimal", "csv-decimal-scientific", "csv-ascii", "csv-row",
            "csv-key-row", "json-decimal", "json-length", "csv-length", "raw-char",
            "raw-varchar", "raw-binary", "raw-varbinary", "json-missing"} <= groups
    ascii_cases = [c for c in GROUPS["csv-ascii"] if len(c["row"]["s"]) == 3]
    assert sorted(ord(c["row"]["s"][1]) for c in ascii_cases) == list(range(128))


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_row_encoder_writes_flinks_bytes_and_reads_them_back(case: dict[str, Any]) -> None:
    rt, codec = _codec(case)
    # As Flink casts a value to its column's CHAR(n), VARCHAR(n), ... type before writing it.
    row = dict(fit_row(rt, coerce_row(rt, case["row"])))
    golden = bytes.fromhex(case["hex"])
    assert codec.encode(row) == golden
    if case["case"] in NOT_READABLE:
        got = None
        with contextlib.suppress(DecodeError):
            got = codec.decode(golden)
        assert got is None or not _same(rt, got, row)
    elif _unreadable_null(case, rt, row):
        with pytest.raises(DecodeError):
            codec.decode(golden)
    else:
        assert _same(rt, codec.decode(golden), row)


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_batch_encoder_writes_the_same_bytes(group: str) -> None:
    cases = GROUPS[group]
    rt, codec = _codec(cases[0])
    rows = [coerce_row(rt, c["row"]) for c in cases]
    got = codec.encode_batch(fit_batch(rt, rows_to_batch(rows, rt)))
    assert got == [bytes.fromhex(c["hex"]) for c in cases]


LENGTH_GROUPS = ["json-length", "csv-length", "raw-char", "raw-varchar", "raw-binary",
                 "raw-varbinary"]


@pytest.mark.parametrize("group", LENGTH_GROUPS)
def test_length_columns_are_cut_and_padded_before_any_codec_sees_them(group: str) -> None:
    """Unfitted values (as a DataFrame holds them) change bytes only through the fitting:
    with it the codec writes Flink's bytes, without it some row of the group differs."""
    cases = GROUPS[group]
    rt, codec = _codec(cases[0])
    raw = rows_to_batch([coerce_row(rt, c["row"]) for c in cases], rt)
    golden = [bytes.fromhex(c["hex"]) for c in cases]
    assert codec.encode_batch(fit_batch(rt, raw)) == golden
    assert codec.encode_batch(raw) != golden


def test_flink_reads_length_columns_back_as_written() -> None:
    """A CHAR(n) value read back keeps its padding, and a short one is not padded on read:
    Flink's readers take the text as it is (StringData.fromString)."""
    case = GROUPS["json-length"][0]
    rt, codec = _codec(case)
    row = codec.decode(bytes.fromhex(case["hex"]))
    assert row is not None and row["c"] == "D " and row["a"] == ["p  ", "qrs"]
    assert codec.decode(b'{"c":"D","v":"abcdef"}') == {**dict.fromkeys(rt.names), "c": "D",
                                                         "v": "abcdef"}


@pytest.mark.parametrize("fmt", ["avro", "avro-confluent"])
def test_avro_writes_length_columns_as_flinks_cast_values(fmt: str) -> None:
    """Flink's AvroSchemaConverter maps CHAR/VARCHAR to "string" and BINARY/VARBINARY to
    "bytes", and its Avro writer takes the value the cast gave (PyFlink ships no Avro format
    to capture from): a length row's Avro bytes are those of the STRING/BYTES row holding
    Flink's cast values, read from json-length's golden bytes."""
    from keyguard.formats.registry.mock import MockRegistry
    from keyguard.formats.registry.registration import bind_schema_id

    columns = GROUPS["json-length"][0]["columns"]
    rt = parse_columns(columns)
    plain = parse_columns(re.sub(r"VARBINARY\(\d+\)|BINARY\(\d+\)", "BYTES",
                                 re.sub(r"VARCHAR\(\d+\)|CHAR\(\d+\)", "STRING", columns)))
    registry = MockRegistry(f"flink-golden-{fmt}")

    def codec(t: RowType) -> Codec:
        made = create_codec(fmt, t, {"url": "mock://unused"} if fmt != "avro" else {},
                            CodecContext(topic="lengths", registry=registry))
        return made if fmt == "avro" else bind_schema_id(made, registry)

    declared, flinks = codec(rt), codec(plain)
    assert declared.written_schema().text == flinks.written_schema().text
    read_json = create_codec("json", plain, {})
    for case in GROUPS["json-length"]:
        cast = read_json.decode(bytes.fromhex(case["hex"]))
        assert cast is not None
        assert declared.encode(fit_row(rt, coerce_row(rt, case["row"]))) == flinks.encode(cast)
