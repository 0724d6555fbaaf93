"""javatext against Java 17's own output (tests/formats/data/java_numbers.jsonl) and known edges."""

from __future__ import annotations

import datetime as dt
import json
import struct
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats import flink_casts
from keyguard.formats import javatext as jt

VECTORS = [json.loads(line) for line in
           (Path(__file__).parent / "data" / "java_numbers.jsonl").read_text().splitlines()]


def _of(kind: str) -> list[dict]:
    return [v for v in VECTORS if v["kind"] == kind]


def _double(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits.zfill(16)))[0]


def _float(bits: str) -> float:
    return struct.unpack(">f", bytes.fromhex(bits.zfill(8)))[0]


def _decimal(v: dict) -> Decimal:
    unscaled = int(v["unscaled"])
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((1 if unscaled < 0 else 0, digits, -v["scale"]))


def test_double_to_string_matches_java17() -> None:
    bad = [(v["java"], jt.double_to_string(_double(v["bits"]))) for v in _of("double")
           if jt.double_to_string(_double(v["bits"])) != v["java"]]
    assert not bad and len(_of("double")) > 300


def test_float_to_string_matches_java17() -> None:
    bad = [(v["java"], jt.float_to_string(_float(v["bits"]))) for v in _of("float")
           if jt.float_to_string(_float(v["bits"])) != v["java"]]
    assert not bad and len(_of("float")) > 300


def test_bigdecimal_matches_java() -> None:
    for v in _of("decimal"):
        d = _decimal(v)
        assert jt.bigdecimal_to_string(d) == v["to_string"]
        assert jt.bigdecimal_to_string(jt.bigdecimal_strip_trailing_zeros(d)) == v["strip"]
        assert jt.bigdecimal_to_plain_string(d) == v["plain"]


def test_timestamps_match_java() -> None:
    for v in _of("timestamp"):
        ts = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=v["epoch_second"])
        assert jt.format_sql_timestamp(ts, v["nano"]) == v["sql"]
        assert jt.format_iso_timestamp(ts, v["nano"]) == v["iso"]
        assert jt.format_sql_time(ts.time().replace(microsecond=0)) == v["time"]


@pytest.mark.parametrize(("x", "java"), [
    (1e20, "1.0E20"), (1e-5, "1.0E-5"), (100.0, "100.0"), (1234567.0, "1234567.0"),
    (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (0.0009999, "9.999E-4"),
    (-0.0, "-0.0"), (0.0, "0.0"), (float("nan"), "NaN"), (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"), (5e-324, "4.9E-324"), (1e23, "9.999999999999999E22"),
    (2.82879384806159e17, "2.82879384806159008E17"), (12345678.9, "1.23456789E7"),
    (8.41e21, "8.409999999999999E21"),
])
def test_double_edges_java17(x: float, java: str) -> None:
    assert jt.double_to_string(x) == java


@pytest.mark.parametrize(("x", "java"), [
    (2.82879384806159e17, "2.82879384806159E17"), (5e-324, "4.9E-324"), (1e23, "1.0E23"),
    (8.41e21, "8.41E21"), (2e-3, "0.002"), (1e7, "1.0E7"),
])
def test_double_shortest_jdk19(x: float, java: str) -> None:
    assert jt.double_to_string(x, jdk=21) == java


@pytest.mark.parametrize(("x", "java"), [
    (0.1, "0.1"), (1.0, "1.0"), (1e10, "1.0E10"), (3.4028234663852886e38, "3.4028235E38"),
    (1.401298464324817e-45, "1.4E-45"), (16777217.0, "1.6777216E7"), (1.0000001, "1.0000001"),
])
def test_float_edges(x: float, java: str) -> None:
    assert jt.float_to_string(x) == java


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_text_reads_back(x: float) -> None:
    for jdk in (17, 21):
        assert float(jt.double_to_string(x, jdk=jdk)) == x


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float_text_reads_back(x: float) -> None:
    for jdk in (17, 21):
        assert jt._to_float32(float(jt.float_to_string(x, jdk=jdk))) == x


@pytest.mark.parametrize(("d", "strip", "plain"), [
    ("12345678.90", "12345678.9", "12345678.90"), ("1000.00", "1E+3", "1000.00"),
    ("0.00", "0", "0.00"), ("-0.000000027", "-2.7E-8", "-0.000000027"), ("0E+3", "0", "0"),
])
def test_bigdecimal_examples(d: str, strip: str, plain: str) -> None:
    assert jt.bigdecimal_to_string(jt.bigdecimal_strip_trailing_zeros(Decimal(d))) == strip
    assert jt.bigdecimal_to_plain_string(Decimal(d)) == plain


def test_time_text() -> None:
    ts = dt.datetime(2024, 1, 1, 0, 0, 0, 120000)
    assert jt.format_sql_timestamp(ts) == "2024-01-01 00:00:00.12"
    assert jt.format_sql_timestamp(ts.replace(microsecond=0)) == "2024-01-01 00:00:00"
    assert jt.format_iso_timestamp(ts, nanos=123456789) == "2024-01-01T00:00:00.123456789"
    assert jt.format_iso_date(12345, 1, 2) == "+12345-01-02"
    assert jt.format_date(dt.date(5, 1, 2)) == "0005-01-02"


def test_parse_temporal() -> None:
    assert jt.parse_temporal("2024-01-01 10:20:30.5", "sql")[1] == dt.time(10, 20, 30, 500000)
    assert jt.parse_temporal("2024-01-01T10:20", "iso")[1] == dt.time(10, 20)
    assert jt.parse_temporal("2024-01-01 10:20:30Z", "sql_ltz")[0] == dt.date(2024, 1, 1)
    for bad, pattern in [("2024-1-01", "date"), ("2024-01-01T10:20:30", "sql"),
                         ("10:20", "sql_time"), ("2024-01-01 10:20:30", "sql_ltz")]:
        with pytest.raises(ValueError):
            jt.parse_temporal(bad, pattern)


@given(st.lists(st.integers(-62_135_596_800_000_000, 253_402_300_799_999_999), max_size=20),
       st.integers(0, 9))
@settings(deadline=None)  # the first example imports numpy
def test_truncating_ticks_is_truncating_each_value(micros: list[int], precision: int) -> None:
    """The batch writers' cut equals the row writers' (Flink's DateTimeUtils.truncate)."""
    import numpy as np

    got = flink_casts.truncate_ticks(np.array(micros, dtype=np.int64), 6, precision)
    assert got.tolist() == [flink_casts.truncate_micros(us, precision) for us in micros]
    fits = [us for us in micros if abs(us) < 9_000_000_000_000_000]  # int64 nanoseconds
    nanos = flink_casts.truncate_ticks(np.array(fits, dtype=np.int64) * 1000, 9, precision)
    assert (nanos // 1000).tolist() == [flink_casts.truncate_micros(us, precision) for us in fits]


def test_truncation_is_toward_the_epoch_below_precision_3() -> None:
    v = dt.datetime(1969, 12, 31, 23, 59, 58, 500000)
    assert flink_casts.truncate_datetime(v, 0) == dt.datetime(1969, 12, 31, 23, 59, 59)
    assert flink_casts.truncate_datetime(v, 3) == v
    assert flink_casts.truncate_datetime(dt.datetime(2024, 1, 1, 0, 0, 0, 999999), 1) == \
        dt.datetime(2024, 1, 1, 0, 0, 0, 900000)
