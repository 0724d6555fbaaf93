"""What Flink's INSERT does to a TIMESTAMP or TIMESTAMP_LTZ value before any format writes it:
the cast to the declared precision (`DateTimeUtils.truncate` over `TimestampData`, as Flink 2.3
runs it), for one value or a column of epoch ticks. Character and binary lengths:
`keyguard.formats.lengths`."""

from __future__ import annotations

import datetime as dt
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)


def truncate_micros(us: int, precision: int) -> int:
    """Epoch microseconds cast to TIMESTAMP(precision) or TIMESTAMP_LTZ(precision) as Flink 2.3
    casts at run time (DateTimeUtils.truncate over TimestampData): below precision 3 the epoch
    milliseconds are cut toward zero, so 1969-12-31 23:59:59.999999 becomes 1970-01-01 00:00:00
    in a TIMESTAMP(0); from 3 on, the part of the millisecond beyond the precision is dropped."""
    if precision >= 6:
        return us
    if precision >= 3:
        return us - us % 10 ** (6 - precision)
    millis, step = us // 1000, 10 ** (3 - precision)
    kept = abs(millis) // step * step
    return (kept if millis >= 0 else -kept) * 1000


def truncate_datetime(v: dt.datetime, precision: int) -> dt.datetime:
    """`truncate_micros` of a wall clock (TIMESTAMP, or TIMESTAMP_LTZ in UTC); keeps tzinfo."""
    if precision >= 6:
        return v
    us = (v.replace(tzinfo=None) - _EPOCH) // _MICRO
    return v + (truncate_micros(us, precision) - us) * _MICRO


def truncate_ticks(ticks: Any, digits: int, precision: int) -> Any:
    """`truncate_micros` over a numpy array of epoch ticks of 10**-digits seconds (an Arrow
    timestamp's unit: 0, 3, 6 or 9 digits)."""
    if precision >= digits:
        return ticks
    if precision >= 3:
        return ticks - ticks % 10 ** (digits - precision)  # numpy's % floors, as needed
    per_milli, step = 10 ** (digits - 3), 10 ** (3 - precision)
    millis = ticks // per_milli
    return abs(millis) // step * step * ((millis >= 0) * 2 - 1) * per_milli
