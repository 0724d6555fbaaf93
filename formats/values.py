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
import re
from collections.abc import Mapping
from typing import Any

from formats.errors import EncodeError
from formats.types import (
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
    """Convert every column of `raw`; unknown columns are an error (they would be dropped)."""
    known = set(row_type.names)
    unknown = [k for k in raw if k not in known]
    if unknown:
        raise EncodeError(
            f"{where}: unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}",
            hint="the columns are: " + ", ".join(row_type.names),
        )
    return {f.name: coerce(f.type, raw.get(f.name), f"{where}.{f.name}") for f in row_type.fields}


def coerce(t: DataType, v: Any, path: str) -> Any:
    if v is None:
        return None
    try:
        return _coerce(t, v, path)
    except (ValueError, TypeError, ArithmeticError, binascii.Error) as exc:
        raise EncodeError(
            f"{path}: cannot read {v!r} as {t.sql()}: {exc}",
            hint=_HINTS.get(type(t), "give a value of the column's type"),
        ) from None


_HINTS: dict[type, str] = {
    DecimalType: 'give decimals as strings, e.g. "12.50", to keep their scale',
    TimestampType: 'use "YYYY-MM-DD HH:MM:SS[.ffffff]"',
    TimestampLtzType: 'use "YYYY-MM-DDTHH:MM:SS[.ffffff]Z" (UTC)',
    DateType: 'use "YYYY-MM-DD"',
    TimeType: 'use "HH:MM:SS[.ffffff]"',
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
    m = _TIME_ONLY.fullmatch(text)
    if m is None:
        raise ValueError("expected HH:MM[:SS[.fraction]]")
    return dt.time(*_time_parts(*m.groups()))


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


def _coerce(t: DataType, v: Any, path: str) -> Any:
    if isinstance(t, StringType):
        if not isinstance(v, str):
            raise TypeError("expected a string")
        return v
    if isinstance(t, BooleanType):
        if not isinstance(v, bool):
            raise TypeError("expected true or false")
        return v
    if isinstance(t, IntegralType):
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise TypeError("expected an integer")
        return int(v)
    if isinstance(t, (FloatType, DoubleType)):
        if isinstance(v, bool):
            raise TypeError("expected a number")
        return float(v)
    if isinstance(t, DecimalType):
        if isinstance(v, float):
            v = repr(v)
        d = decimal.Decimal(v)
        if not d.is_finite():
            raise ValueError("not a finite number")
        return d
    if isinstance(t, DateType):
        return v if isinstance(v, dt.date) else dt.date.fromisoformat(v)
    if isinstance(t, TimeType):
        return v if isinstance(v, dt.time) else _parse_time(str(v))
    if isinstance(t, TimestampType):
        if isinstance(v, dt.datetime):
            return v
        parsed = _parse_timestamp(str(v))
        if parsed.tzinfo is not None:
            raise ValueError("TIMESTAMP has no time zone: drop the offset, or use TIMESTAMP_LTZ")
        return parsed
    if isinstance(t, TimestampLtzType):
        if not isinstance(v, dt.datetime):
            v = _parse_timestamp(str(v))
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        return v.astimezone(dt.timezone.utc)
    if isinstance(t, BytesType):
        return v if isinstance(v, bytes) else base64.b64decode(v, validate=True)
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
