"""Loosely typed input (JSON from a command line) becomes typed Python values."""

import datetime as dt
import decimal

import pytest

from keyguard.formats.errors import EncodeError
from keyguard.formats.types import (
    BytesType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    MapType,
    StringType,
    TimestampLtzType,
    TimestampType,
    row,
)
from keyguard.formats.values import JsonNumber, coerce, coerce_row

T = row(("id", IntType()), ("amount", DecimalType(precision=10, scale=2)),
        ("ts", TimestampType(precision=3)), ("ltz", TimestampLtzType(precision=3)),
        ("blob", BytesType()), ("m", MapType(key=StringType(), value=IntType())))


def test_coerces_by_logical_type():
    got = coerce_row(T, {"id": "7", "amount": "12.50", "ts": "2024-01-01T10:00:00.5",
                         "ltz": "2024-01-01T10:00:00Z", "blob": "AAE=", "m": {"a": 1}})
    assert got == {
        "id": 7,
        "amount": decimal.Decimal("12.50"),
        "ts": dt.datetime(2024, 1, 1, 10, 0, 0, 500000),
        "ltz": dt.datetime(2024, 1, 1, 10, tzinfo=dt.timezone.utc),
        "blob": b"\x00\x01",
        "m": {"a": 1},
    }


def test_missing_columns_are_null():
    assert coerce_row(T, {"id": 1})["amount"] is None


def test_bad_value_names_the_column_and_gives_a_hint():
    with pytest.raises(EncodeError, match=r"row\.amount: cannot read 'x' as DECIMAL\(10, 2\)"):
        coerce_row(T, {"amount": "x"})


def test_unknown_column_is_an_error():
    with pytest.raises(EncodeError, match="unknown column amt"):
        coerce_row(T, {"amt": 1})


def test_timestamp_text_parses_the_same_on_every_python():
    got = coerce_row(T, {"ts": "2024-01-01 10:00:00.5", "ltz": "2024-01-01T12:00:00.5+02:00"})
    assert got["ts"] == dt.datetime(2024, 1, 1, 10, 0, 0, 500000)
    assert got["ltz"] == dt.datetime(2024, 1, 1, 10, 0, 0, 500000, tzinfo=dt.timezone.utc)


def test_an_offset_on_a_zoneless_timestamp_is_an_error_not_dropped():
    with pytest.raises(EncodeError, match="no time zone"):
        coerce_row(T, {"ts": "2024-01-01T10:00:00Z"})


@pytest.mark.parametrize(("t", "value", "says"), [
    (StringType(), "a\ud800", "lone surrogate"),
    (IntType(), 2**31, "out of range"),
    (IntType(), "1_000", "not an integer"),
    (DoubleType(), "1e999", "overflows"),
    (DoubleType(), float("inf"), "overflows"),  # what json.loads makes of 1e999
    (DoubleType(), "inf", "not a number"),
    (FloatType(), 1e39, "overflows"),
    (DecimalType(precision=10, scale=2), "1e400", "more than 10 digits"),
    (DecimalType(precision=10, scale=2), "1_0", "not a decimal"),
    (DateType(), "20240101", "YYYY-MM-DD"),
])
def test_values_outside_their_type_are_refused(t, value, says):
    with pytest.raises(EncodeError, match=says) as err:
        coerce_row(row(("c", t)), {"c": value})
    assert "row.c" in str(err.value)


@pytest.mark.parametrize(("t", "value", "expected"), [
    (DoubleType(), "Infinity", float("inf")),
    (DoubleType(), "-Infinity", float("-inf")),
    (DoubleType(), " 1.5 ", 1.5),
    (IntType(), " -7 ", -7),
    (DecimalType(precision=10, scale=2), "99999999.99", decimal.Decimal("99999999.99")),
])
def test_values_inside_their_type_are_read(t, value, expected):
    assert coerce_row(row(("c", t)), {"c": value}) == {"c": expected}


def test_a_json_number_keeps_its_digits_for_decimal_and_is_a_float_for_double():
    import json

    text = '{"d": 99999999999999999999.999999999999999999, "x": 1.5}'
    raw = json.loads(text, parse_float=JsonNumber)
    t = DecimalType(precision=38, scale=18)
    assert coerce(t, raw["d"], "d") == decimal.Decimal("99999999999999999999.999999999999999999")
    assert coerce(DoubleType(), raw["x"], "x") == 1.5
    with pytest.raises(EncodeError, match=r"cannot read 999999999999999999999\.5 as DECIMAL"):
        coerce(t, JsonNumber("999999999999999999999.5"), "d")
