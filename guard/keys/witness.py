"""Witness search: concrete keys encoded with the old and the new codec, bytes side by side.

Structural rules decide the verdict; this module proves it. A battery of representative values
per logical type (typical, zero, negative, extremes, max-precision decimals, sub-millisecond
timestamps, non-ASCII, csv delimiters and quotes, empty strings, null) is varied one field at a
time from a base key. Each old key is carried to the new side the way Flink's CAST would carry
the column (by name, or by position for a rename), then encoded with both sides' real codecs.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import cached_property
from typing import Any, Final

from keyguard.formats.errors import KeyguardError
from keyguard.formats.partitioner import partition_for
from keyguard.formats.types import (
    ArrayType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    Field,
    FloatType,
    IntegralType,
    MapType,
    RowType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
)
from keyguard.guard.keys.side import KeySide, pair_fields
from keyguard.guard.report import Witness

#: Partition count used to show a placement witness when the topic's count is not known.
ILLUSTRATIVE_PARTITIONS = 12


class CarryError(Exception):
    """An existing key that has no representation under the new key type."""


# --- the battery ---------------------------------------------------------------------------


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _trunc_micros(micros: int, precision: int) -> int:
    step = 10 ** max(0, 6 - precision)
    return micros // step * step


def _decimals(t: DecimalType) -> list[Decimal]:
    p, s = t.precision, t.scale
    q = Decimal(1).scaleb(-s)
    top = Decimal(10) ** (p - s) - q  # all nines: the max-precision value
    raw = [
        Decimal("12.5"), Decimal(0), Decimal("-7.25"), top, -top, q, Decimal(10),
        Decimal(1000), Decimal("0.001"), Decimal("123456789.123456789"), Decimal(1),
    ]
    out: list[Decimal] = []
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        for d in raw:
            v = d.quantize(q, rounding=decimal.ROUND_HALF_UP)
            if len(v.as_tuple().digits) <= p and abs(v) <= top and v not in out:
                out.append(v)
    return out


#: Representative values of the types whose battery does not depend on the type's parameters.
_CONSTANT_BATTERIES: tuple[tuple[type[DataType], tuple[Any, ...]], ...] = (
    (StringType, ("user-1", "", "0", "-1", "ü€日本😀", "Zürich", "a,b", 'q"t', "a;b",
                  "line\nbreak", "back\\slash", " pad ", "null", "#c", "x" * 30, "1.0E20",
                  "true")),
    (BooleanType, (True, False)),
    (FloatType, tuple(_f32(x) for x in (1.5, 0.0, -2.25, 0.1, 100.0, 1e20, 1e-5, 1234567.0,
                                        3.4e38, 16777217.0))),
    (DoubleType, (1.5, 0.0, -2.25, 0.1, 1 / 3, 100.0, 1e20, 1e-5, 1234567.0, 1e300, 1e7,
                  float((1 << 53) + 2))),
    (DateType, (dt.date(2024, 1, 31), dt.date(1970, 1, 1), dt.date(1969, 12, 31),
                dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    (BytesType, (b"\x01\x02", b"", b"\xff\x00", "ü".encode(), b"a,b", b"user-1")),
)


def battery(t: DataType) -> list[Any]:
    """Representative non-null values of `t` (typical first), then None if `t` is nullable."""
    vals = _non_null_battery(t)
    return [*vals, None] if t.nullable else vals


def _non_null_battery(t: DataType) -> list[Any]:
    for types, values in _CONSTANT_BATTERIES:
        if isinstance(t, types):
            return list(values)
    if isinstance(t, IntegralType):
        cand = [42, 0, -1, 10, 1000, 127, -128, 255, 32767, -32768, (1 << 31) - 1, -(1 << 31),
                1 << 31, (1 << 53) + 1, t.max_value, t.min_value]
        return list(dict.fromkeys(v for v in cand if t.min_value <= v <= t.max_value))
    if isinstance(t, DecimalType):
        return _decimals(t)
    if isinstance(t, TimeType):
        return _times(t)
    if isinstance(t, (TimestampType, TimestampLtzType)):
        return _timestamps(t)
    if isinstance(t, ArrayType):
        e = battery(t.element.not_null())
        return [[e[0]], [], e[:3]]
    if isinstance(t, MapType):
        k, v = battery(t.key.not_null()), battery(t.value.not_null())
        return [{k[0]: v[0]}, {}]
    if isinstance(t, RowType):
        # Each field's battery once: asking twice doubles the work at every nesting level.
        per_field = {f.name: battery(f.type) for f in t.fields}
        row0 = {name: b[0] for name, b in per_field.items()}
        return [row0] + [{**row0, name: v} for name, b in per_field.items() for v in b[1:4]]
    return []


def _times(t: TimeType) -> list[dt.time]:
    p = min(t.precision, 6)
    return list(dict.fromkeys(
        x.replace(microsecond=_trunc_micros(x.microsecond, p))
        for x in (dt.time(10, 15, 30), dt.time(0, 0), dt.time(12, 0, 0, 123456),
                  dt.time(23, 59, 59, 999999), dt.time(8, 0, 0, 500000))
    ))


def _timestamps(t: TimestampType | TimestampLtzType) -> list[dt.datetime]:
    p = min(t.precision, 6)
    base = [dt.datetime(2024, 1, 31, 10, 15, 30), dt.datetime(1970, 1, 1),
            dt.datetime(2024, 1, 1, 0, 0, 0, 123456), dt.datetime(2024, 1, 1, 0, 0, 0, 120000),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2024, 1, 1, 0, 0, 0, 1),
            dt.datetime(1900, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]
    vals = list(dict.fromkeys(x.replace(microsecond=_trunc_micros(x.microsecond, p))
                              for x in base))
    if isinstance(t, TimestampLtzType):
        return [x.replace(tzinfo=dt.timezone.utc) for x in vals]
    return vals


Hints = Mapping[str, list[Any]]


def field_battery(f: Field, hints: Hints | None = None) -> list[Any]:
    """The battery of a top-level field; `hints` replace it (an Avro enum's symbols)."""
    if hints and f.name in hints:
        return [*hints[f.name], None] if f.type.nullable else list(hints[f.name])
    return battery(f.type)


def base_key(rt: RowType, hints: Hints | None = None) -> dict[str, Any]:
    """A typical key whose fields differ from each other (so reorders show in csv too)."""
    out = {}
    for i, f in enumerate(rt.fields):
        vals = [v for v in field_battery(f, hints) if v is not None]
        typical = [v for v in vals if v not in ("", 0, False, b"")] or vals
        out[f.name] = typical[min(i, len(typical) - 1)] if typical else None
    return out


def candidates(rt: RowType, prefer: str | None = None,
               hints: Hints | None = None) -> Iterator[dict[str, Any]]:
    """The base key, then the base with one field varied over its battery (`prefer` first)."""
    base = base_key(rt, hints)
    yield base
    top = prefer.split(".")[0].split("[")[0].split("{")[0] if prefer else None
    order = sorted(rt.fields, key=lambda f: f.name != top)
    for f in order:
        for v in field_battery(f, hints):
            if v != base[f.name] or (v is None) != (base[f.name] is None):
                yield {**base, f.name: v}


def wide_values(t: DataType, n: int = 300) -> list[Any]:
    """Many distinct ordinary values of `t`, for placement witnesses the battery misses."""
    if isinstance(t, IntegralType):
        return list(range(max(t.min_value, -n // 2), min(t.max_value, n // 2) + 1))
    if isinstance(t, StringType):
        return [f"key-{i}" for i in range(n)]
    if isinstance(t, BytesType):
        return [i.to_bytes(2, "big") for i in range(n)]
    if isinstance(t, DecimalType):
        q = Decimal(1).scaleb(-t.scale)
        return [Decimal(i) * q for i in range(min(n, 10**t.precision))]
    if isinstance(t, (FloatType, DoubleType)):
        return [float(i) for i in range(n)]
    if isinstance(t, DateType):
        return [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(n)]
    if isinstance(t, (TimestampType, TimestampLtzType)):
        tz = dt.timezone.utc if isinstance(t, TimestampLtzType) else None
        return [dt.datetime(2024, 1, 1, tzinfo=tz) + dt.timedelta(seconds=i) for i in range(n)]
    if isinstance(t, TimeType):
        return [dt.time(i // 60 % 24, i % 60) for i in range(n)]
    return []


# --- carrying an old key to the new side ---------------------------------------------------


def carry(value: Any, old: DataType, new: DataType) -> Any:
    """The new side's value for an old key's value: Flink's CAST, or CarryError."""
    if value is None:
        if not new.nullable:
            raise CarryError("the key holds a null, the new type is NOT NULL")
        return None
    if isinstance(new, RowType) and isinstance(old, RowType):
        return carry_row(value, old, new)
    if isinstance(new, ArrayType) and isinstance(old, ArrayType):
        return [carry(e, old.element, new.element) for e in value]
    if isinstance(new, MapType) and isinstance(old, MapType):
        return {carry(k, old.key, new.key): carry(v, old.value, new.value)
                for k, v in value.items()}
    try:
        return _cast(value, old, new)
    except (ValueError, ArithmeticError, TypeError, OverflowError) as exc:
        raise CarryError(f"{value!r} has no {new.sql()} value: {exc}") from None


def carry_row(key: Mapping[str, Any], old: RowType, new: RowType) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in pair_fields(old.fields, new.fields):
        if p.new is None:
            continue
        if p.old is None:
            # No value in existing keys: a null if allowed, else the typical value.
            out[p.new.name] = None if p.new.type.nullable else battery(p.new.type)[0]
        else:
            out[p.new.name] = carry(key.get(p.old.name), p.old.type, p.new.type)
    return out


#: Types whose value a cast may change even when the type's class stays (precision, width).
_PARAMETRIZED = (DecimalType, TimeType, TimestampType, TimestampLtzType, FloatType)
#: Values no number is cast from.
_NOT_NUMBERS = (bool, dt.date, dt.time, bytes)


def _cast(v: Any, old: DataType, new: DataType) -> Any:
    if type(old) is type(new) and not isinstance(new, _PARAMETRIZED):
        return v
    if isinstance(new, IntegralType):
        return _to_integral(v, new)
    if isinstance(new, (FloatType, DoubleType)):
        return _to_float(v, new)
    if isinstance(new, DecimalType):
        return _to_decimal(v, new)
    if isinstance(new, StringType):
        return _to_string(v, old)
    if isinstance(new, BytesType) and isinstance(v, (str, bytes)):
        return v.encode("utf-8") if isinstance(v, str) else v
    if isinstance(new, BooleanType) and isinstance(v, bool):
        return v
    if isinstance(new, (TimestampType, TimestampLtzType)):
        return _to_timestamp(v, new)
    if isinstance(new, TimeType) and isinstance(v, dt.time):
        return v.replace(microsecond=_trunc_micros(v.microsecond, new.precision))
    if isinstance(new, DateType) and isinstance(v, dt.date):
        return v.date() if isinstance(v, dt.datetime) else v
    raise TypeError("no cast")


def _to_integral(v: Any, new: IntegralType) -> int:
    if isinstance(v, _NOT_NUMBERS):
        raise TypeError("no cast")
    n = int(v) if not isinstance(v, str) else int(v.strip())
    if not new.min_value <= n <= new.max_value:
        raise OverflowError(f"out of range for {new.sql()}")
    return n


def _to_float(v: Any, new: FloatType | DoubleType) -> float:
    if isinstance(v, _NOT_NUMBERS):
        raise TypeError("no cast")
    x = float(v)
    return _f32(x) if isinstance(new, FloatType) else x


def _to_decimal(v: Any, new: DecimalType) -> Decimal:
    if isinstance(v, (*_NOT_NUMBERS, float)):
        raise TypeError("no cast")
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        d = Decimal(v).quantize(Decimal(1).scaleb(-new.scale), rounding=decimal.ROUND_HALF_UP)
    if len(d.as_tuple().digits) > new.precision and d != 0:
        raise OverflowError(f"more than {new.precision} digits")
    return d


def _to_timestamp(v: Any, new: TimestampType | TimestampLtzType) -> dt.datetime:
    if isinstance(v, dt.datetime):
        ts = v
    elif isinstance(v, dt.date):
        ts = dt.datetime(v.year, v.month, v.day)
    else:
        raise TypeError("no cast")
    ts = ts.replace(microsecond=_trunc_micros(ts.microsecond, new.precision))
    if isinstance(new, TimestampLtzType):
        return ts if ts.tzinfo else ts.replace(tzinfo=dt.timezone.utc)
    return ts.astimezone(dt.timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts


def _to_string(v: Any, old: DataType) -> str:
    """CAST(x AS STRING), Flink's text for the types a key may hold."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float | Decimal):
        # lazy: CLI start-up (Java's number text, ~1.5 ms to load; only for these keys)
        from keyguard.formats import javatext

        if isinstance(v, Decimal):
            return javatext.bigdecimal_to_plain_string(v)
        return (javatext.float_to_string(v) if isinstance(old, FloatType)
                else javatext.double_to_string(v))
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, dt.datetime):
        p = getattr(old, "precision", 6)
        text = v.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{v.microsecond:06d}"[: p + 1] if p else "")
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    raise TypeError("no cast")


# --- encoding and placement ----------------------------------------------------------------


def place(family: str, key: bytes, partitions: int) -> int | None:
    """The partition a producer partitioner family picks; None when it ignores the key."""
    if family == "murmur2":
        return partition_for(key, partitions)
    if family == "crc32":
        return zlib.crc32(key) % partitions
    if family == "fnv1a":
        h = 0x811C9DC5
        for b in key:
            h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
        return h % partitions
    return None


class Trial:
    """One candidate key, encoded by both sides, and where each side places it."""

    __slots__ = ("key", "new_bytes", "new_error", "new_partition", "old_bytes", "old_partition")

    def __init__(self, key: dict[str, Any], old_bytes: bytes, new_bytes: bytes | None,
                 new_error: str | None, old_partition: int | None = None,
                 new_partition: int | None = None) -> None:
        self.key: Final = key
        self.old_bytes: Final = old_bytes
        self.new_bytes: Final = new_bytes
        self.new_error: Final = new_error
        self.old_partition: Final = old_partition
        self.new_partition: Final = new_partition

    @property
    def bytes_differ(self) -> bool:
        return self.new_bytes is None or self.new_bytes != self.old_bytes

    @property
    def placement_differs(self) -> bool:
        return self.old_partition != self.new_partition

    def witness(self) -> Witness:
        return Witness(dict(self.key), self.old_bytes, self.new_bytes, self.new_error,
                       self.old_partition, self.new_partition)


Encoder = Callable[[Mapping[str, Any]], bytes]
#: How an old key becomes the new side's key (`carry_row` unless the key family says otherwise).
Carry = Callable[[Mapping[str, Any]], dict[str, Any]]


class WitnessSearch:
    """Encodes candidate keys under both sides, lazily and once each."""

    def __init__(self, old: KeySide, new: KeySide, old_enc: Encoder, new_enc: Encoder,
                 hints: Hints | None = None,
                 examples: Sequence[Mapping[str, Any]] = (),
                 carry: Carry | None = None) -> None:
        self.old, self.new = old, new
        #: An old key -> the new side's key (CarryError: it has none); Flink's CAST by default.
        self.carry: Carry = carry or (lambda key: carry_row(key, old.row_type, new.row_type))
        self.hints = hints
        #: Real keys (decoded from the topic): tried before the battery, the best witnesses.
        self.examples = [dict(e) for e in examples]
        self.old_enc, self.new_enc = old_enc, new_enc
        self._trials: dict[str, Trial | None] = {}
        n_old = old.partitions or new.partitions or ILLUSTRATIVE_PARTITIONS
        n_new = new.partitions or old.partitions or ILLUSTRATIVE_PARTITIONS
        self.n_old, self.n_new = n_old, n_new

    def trial(self, key: dict[str, Any]) -> Trial | None:
        """Both encodings of `key`; None when the old side cannot encode it (it cannot exist)."""
        ident = repr(sorted(key.items(), key=lambda kv: kv[0]))
        if ident in self._trials:
            return self._trials[ident]
        result: Trial | None
        try:
            old_bytes = self.old_enc(key)
        except KeyguardError:
            result = None
        else:
            new_bytes, err = None, None
            try:
                new_key = self.carry(key)
                new_bytes = self.new_enc(new_key)
            except CarryError as exc:
                err = str(exc)
            except KeyguardError as exc:
                err = exc.message
            result = Trial(key, old_bytes, new_bytes, err,
                           place(self.old.partitioner_family, old_bytes, self.n_old),
                           None if new_bytes is None else
                           place(self.new.partitioner_family, new_bytes, self.n_new))
        self._trials[ident] = result
        return result

    def trials(self, prefer: str | None = None) -> Iterator[Trial]:
        for key in itertools.chain(self.examples,
                                   candidates(self.old.row_type, prefer, self.hints)):
            t = self.trial(key)
            if t is not None:
                yield t

    def find(self, prefer: str | None = None,
             predicate: Callable[[Trial], bool] | None = None) -> Witness | None:
        """The first trial (varying `prefer` first) that satisfies `predicate` (bytes differ)."""
        pred = predicate or (lambda t: t.bytes_differ)
        for t in self.trials(prefer):
            if pred(t):
                return t.witness()
        return None

    def find_wide(self, predicate: Callable[[Trial], bool]) -> Witness | None:
        """Like `find`, over many ordinary values of each field (placement needs many keys)."""
        base = base_key(self.old.row_type, self.hints)
        for f in self.old.row_type.fields:
            for v in wide_values(f.type):
                t = self.trial({**base, f.name: v})
                if t is not None and predicate(t):
                    return t.witness()
        return None

    @cached_property
    def first_difference(self) -> Trial | None:
        """Any trial whose bytes or partition differ: the catch-all check behind KG000."""
        for t in self.trials():
            if t.bytes_differ or t.placement_differs:
                return t
        return None
