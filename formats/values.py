"""Python values for a row type from loosely typed input (JSON on a command line, config files).

A user types `{"amount": "12.50", "ts": "2024-01-01 10:00:00"}`; the codecs want a Decimal and
a datetime. `coerce_row` converts by the column's logical type and names the column when a
value cannot be converted.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import math
import re
from collections.abc import Mapping
from typing import Any

from keyguard.formats.errors import EncodeError
from keyguard.formats.types import (
    ArrayType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    MapType,
    RowType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
)


def coerce_row(row_type: RowType, raw: Mapping[str, Any], *, where: str = "row") -> dict[str, Any]:
    """Convert every column of `raw`; unknown columns are an error (they would be dropped).

    A column `raw` lacks is null, as Flink writes a nullable column an INSERT leaves out;
    lacking a NOT NULL column is an error (Flink refuses that INSERT too)."""
    known = set(row_type.names)
    unknown = [k for k in raw if k not in known]
    if unknown:
        raise EncodeError(
            f"{where}: unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}",
            hint="the columns are: " + ", ".join(row_type.names),
        )
    missing = [f.name for f in row_type.fields if not f.type.nullable and f.name not in raw]
    if missing:
        s = "s" if len(missing) > 1 else ""
        raise EncodeError(
            f"{where}: NOT NULL column{s} {', '.join(missing)} missing",
            hint=f"give {'them' if s else 'it'} a value: a column left out is written as "
                 "null, which a NOT NULL column cannot hold",
        )
    return {f.name: coerce(f.type, raw.get(f.name), f"{where}.{f.name}") for f in row_type.fields}


def coerce(t: DataType, v: Any, path: str) -> Any:
    if v is None:
        return None
    try:
        return _coerce(t, v, path)
    except (ValueError, TypeError, ArithmeticError, binascii.Error) as exc:
        shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
        raise EncodeError(
            f"{path}: cannot read {shown} as {t.sql()}: {exc}",
            hint=_HINTS.get(type(t), "give a value of the column's type"),
        ) from None


_HINTS: dict[type, str] = {
    DecimalType: 'give decimals as strings, e.g. "12.50", to keep their scale',
    TimestampType: 'use "YYYY-MM-DD HH:MM:SS[.ffffff]"',
    TimestampLtzType: 'use "YYYY-MM-DDTHH:MM:SS[.ffffff]Z" (UTC)',
    DateType: 'use "YYYY-MM-DD"',
    TimeType: 'use "HH:MM:SS[.fff]" (milliseconds, as Flink keeps TIME)',
    BytesType: "give bytes as base64 text",
}


# `2024-01-01 10:00:00.5`, `...T10:00`, `...Z`, `...+02:00`: one parser on every Python
# (3.10's fromisoformat wants 3 or 6 fraction digits and no Z).
_TIME = r"(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
_TIMESTAMP = re.compile(
    r"\s*(\d{4})-(\d{2})-(\d{2})(?:[T ]" + _TIME + r")?\s*(Z|[+-]\d{2}:?\d{2})?\s*")
_TIME_ONLY = re.compile(r"\s*" + _TIME + r"\s*")


def _time_parts(hh: str, mm: str, ss: str | None, frac: str | None) -> tuple[int, int, int, int]:
    micros = int((frac or "0")[:6].ljust(6, "0"))
    return int(hh), int(mm), int(ss or 0), micros


def _parse_time(text: str) -> dt.time:
    """TIME text as Flink's cast from a string reads it (DateTimeUtils.parseTime and its
    parseFraction): milliseconds, rounded half up on the fourth fractional digit, the carry
    going into the seconds; a time that rounds to 24:00:00 fails, as the cast does."""
    m = _TIME_ONLY.fullmatch(text)
    if m is None:
        raise ValueError("expected HH:MM[:SS[.fraction]]")
    hh, mm, ss, frac = m.groups()
    clock = dt.time(int(hh), int(mm), int(ss or 0))  # the fields in range, as before rounding
    digits = (frac or "").ljust(4, "0")
    millis = (((clock.hour * 60 + clock.minute) * 60 + clock.second) * 1000
              + int(digits[:3]) + (digits[3] >= "5"))
    if millis >= 86_400_000:
        raise ValueError(f"{text.strip()} rounds to 24:00:00: Flink keeps TIME in milliseconds "
                         "and its cast from text fails on it (hour 24)")
    seconds, ms = divmod(millis, 1000)
    return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, ms * 1000)


def _parse_timestamp(text: str) -> dt.datetime:
    m = _TIMESTAMP.fullmatch(text)
    if m is None:
        raise ValueError("expected YYYY-MM-DD[ HH:MM[:SS[.fraction]]][Z|+HH:MM]")
    y, mo, d, hh, mm, ss, frac, zone = m.groups()
    clock: tuple[int, int, int, int] = (0, 0, 0, 0) if hh is None else _time_parts(hh, mm, ss, frac)
    tz = None
    if zone == "Z":
        tz = dt.timezone.utc
    elif zone:
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        tz = dt.timezone(sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    return dt.datetime(int(y), int(mo), int(d), *clock, tzinfo=tz)


# Number text as Java reads it: no `1_000`, no `0x1F`, no `inf` (Python's int/float/Decimal
# accept more than Flink does).
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
#: The only spellings of the non-finite doubles, as Flink's json writes and reads them.
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "+Infinity": math.inf,
               "-Infinity": -math.inf}
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_DATE = re.compile(r"\s*\d{4}-\d{2}-\d{2}\s*")


def lone_surrogate(text: str) -> str | None:
    """Why `text` is not valid Unicode (a lone surrogate, which UTF-8 cannot carry), or None.

    Python strings may hold one (JSON's "\\ud800" reads as one); Flink's StringData is UTF-8
    and would turn it into `?`. Every format refuses it instead, on encode and on decode.
    """
    m = _LONE_SURROGATE.search(text)
    if m is None:
        return None
    return (f"is not valid UTF-8 text: a lone surrogate \\u{ord(m.group()):04x} at character "
            f"{m.start()}")


def _text(v: str) -> str:
    why = lone_surrogate(v)
    if why is not None:
        raise ValueError(why.removeprefix("is "))
    return v


def _integer(t: IntegralType, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TypeError("expected an integer")
    if isinstance(v, str) and not _INTEGER.fullmatch(v):
        raise ValueError("not an integer")
    iv = int(v)
    if not t.min_value <= iv <= t.max_value:
        raise ValueError(f"out of range for {t.sql_name} ({t.min_value}..{t.max_value})")
    return iv


def _floating(t: DataType, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise TypeError("expected a number")
    if isinstance(v, str):
        if v.strip() in _NON_FINITE:
            return _NON_FINITE[v.strip()]
        if not _NUMBER.fullmatch(v):
            raise ValueError('not a number (NaN and infinities are "NaN", "Infinity", '
                             '"-Infinity")')
    f = float(v)
    overflows = math.isinf(f)
    if not overflows and isinstance(t, FloatType):
        # lazy: CLI start-up (Java's number text, ~1.5 ms to load; a check needs none of it)
        from keyguard.formats.javatext import float32_fits

        overflows = not float32_fits(f)
    if overflows:
        raise ValueError(f"overflows {t.sql_name}; write \"Infinity\" to mean infinity")
    return f


class JsonNumber(float):
    """A JSON number literal that remembers its text: a float for DOUBLE columns, exact digits
    for DECIMAL ones (`99999999999999999999.999999999999999999` is 1e+20 as a float).

    Pass as `json.loads(..., parse_float=JsonNumber)`.
    """

    text: str

    def __new__(cls, text: str) -> JsonNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __repr__(self) -> str:
        return self.text


def _decimal(t: DecimalType, v: Any) -> decimal.Decimal:
    if isinstance(v, bool) or not isinstance(v, (int, float, str, decimal.Decimal)):
        raise TypeError("expected a decimal number")
    if isinstance(v, JsonNumber):
        v = v.text
    elif isinstance(v, float):
        v = repr(v)
    if isinstance(v, str) and not _NUMBER.fullmatch(v):
        raise ValueError("not a decimal number")
    d = decimal.Decimal(v)
    if not d.is_finite():
        raise ValueError("not a finite number")
    whole = t.precision - t.scale
    if d and d.adjusted() >= whole:
        raise ValueError(f"needs more than {t.precision} digits ({whole} before the point)")
    return d


def _coerce(t: DataType, v: Any, path: str) -> Any:
    if isinstance(t, StringType):
        if not isinstance(v, str):
            raise TypeError("expected a string")
        return _text(v)
    if isinstance(t, BooleanType):
        if not isinstance(v, bool):
            raise TypeError("expected true or false")
        return v
    if isinstance(t, IntegralType):
        return _integer(t, v)
    if isinstance(t, (FloatType, DoubleType)):
        return _floating(t, v)
    if isinstance(t, DecimalType):
        return _decimal(t, v)
    if isinstance(t, (DateType, TimeType, TimestampType, TimestampLtzType)):
        return _temporal(t, v)
    if isinstance(t, BytesType):
        return v if isinstance(v, bytes) else base64.b64decode(v, validate=True)
    return _nested(t, v, path)


def _temporal(t: DataType, v: Any) -> dt.date | dt.time:
    """A DATE, TIME, TIMESTAMP or TIMESTAMP_LTZ (in UTC) from its value or its ISO text."""
    if isinstance(t, DateType):
        if isinstance(v, dt.date):
            return v
        if not isinstance(v, str) or not _DATE.fullmatch(v):
            raise ValueError("expected YYYY-MM-DD")
        return dt.date.fromisoformat(v.strip())
    if isinstance(t, TimeType):
        return v if isinstance(v, dt.time) else _parse_time(str(v))
    if isinstance(t, TimestampType):
        if isinstance(v, dt.datetime):
            return v
        parsed = _parse_timestamp(str(v))
        if parsed.tzinfo is not None:
            raise ValueError("TIMESTAMP has no time zone: drop the offset, or use TIMESTAMP_LTZ")
        return parsed
    if not isinstance(v, dt.datetime):
        v = _parse_timestamp(str(v))
    if v.tzinfo is None:
        v = v.replace(tzinfo=dt.timezone.utc)
    return v.astimezone(dt.timezone.utc)


def _nested(t: DataType, v: Any, path: str) -> Any:
    """An ARRAY, MAP or ROW, its parts coerced in turn."""
    if isinstance(t, ArrayType):
        if not isinstance(v, list):
            raise TypeError("expected a list")
        return [coerce(t.element, e, f"{path}[{i}]") for i, e in enumerate(v)]
    if isinstance(t, MapType):
        if not isinstance(v, dict):
            raise TypeError("expected an object")
        return {coerce(t.key, k, f"{path}{{key}}"): coerce(t.value, e, f"{path}[{k!r}]")
                for k, e in v.items()}
    if isinstance(t, RowType):
        if not isinstance(v, dict):
            raise TypeError("expected an object")
        return coerce_row(t, v, where=path)
    raise TypeError(f"unsupported type {t.sql()}")


def to_jsonable(value: Any) -> Any:
    """Row values as JSON (the inverse of `coerce`): decimals and times as text, bytes base64."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return value
