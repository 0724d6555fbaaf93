"""The json format's reader: Flink's JsonParserToRowDataConverters rules, record by record or
a batch column by column.

Numbers are kept as their text (`Num`) and converted as Flink converts them; numbers given as
strings are accepted; a missing field is null (or an error with fail-on-missing-field). With
ignore-parse-errors a field that does not convert becomes null. A batch whose records are plain
objects of the row's fields is converted column by column (`json_columns`), the common shapes of
a column without a call per value; any other batch goes record by record through the codec.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from keyguard.formats import javatext
from keyguard.formats.codec import DecodedColumns
from keyguard.formats.errors import UnsupportedTypeError
from keyguard.formats.json_text import SURROGATE, json_string
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
    TinyIntType,
)
from keyguard.formats.values import lone_surrogate

if TYPE_CHECKING:
    from keyguard.formats.json_format import JsonCodec, JsonSettings

__all__ = ["PARSER", "Decoder", "decoder", "json_columns"]


class Num(str):
    """A JSON number kept as its text (Flink converts from the text, not from a Python float)."""

    is_int: bool = True


class FloatNum(Num):
    is_int = False


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_JAVA_TRIM = "".join(chr(i) for i in range(33))
Decoder = Callable[[Any], Any]


def _java_int(text: str, lo: int, hi: int) -> int:
    t = text.strip(_JAVA_TRIM)
    if not re.fullmatch(r"[+-]?[0-9]+", t):
        raise ValueError(f"For input string: {text!r}")
    v = int(t)
    if not lo <= v <= hi:
        raise ValueError(f"Value out of range. Value:{text!r}")
    return v


def _java_double(text: str) -> float:
    t = text.strip(_JAVA_TRIM)
    if t in ("NaN", "+NaN", "-NaN"):
        return math.nan
    if re.fullmatch(r"[+-]?Infinity", t):
        return math.copysign(math.inf, -1.0 if t.startswith("-") else 1.0)
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?", t):
        raise ValueError(f"For input string: {text!r}")
    return float(t.rstrip("fFdD"))


def decoder(t: DataType, s: JsonSettings) -> Decoder:
    """Converts one parsed JSON value (not None) of type t; raises ValueError on a mismatch."""
    if isinstance(t, StringType):
        def dec_str(v: Any) -> str:
            if isinstance(v, (dict, list)):
                return _tree_text(v)
            if isinstance(v, bool):
                return "true" if v else "false"
            if SURROGATE.search(v) is not None:  # "\ud800" parses into a lone surrogate
                raise ValueError(f"the string {lone_surrogate(v)}")
            return str(v)
        return dec_str
    if isinstance(t, BooleanType):
        def dec_bool(v: Any) -> bool:
            if isinstance(v, bool):
                return v
            # Flink's Boolean.parseBoolean reads anything but "true" as false: keyguard refuses
            # to guess ("yes", 1, "tru" are errors, not false).
            text = _scalar_text(v).strip(_JAVA_TRIM).lower()
            if isinstance(v, Num) or text not in ("true", "false"):
                raise ValueError(f"expected true or false, got {_scalar_text(v)!r}")
            return text == "true"
        return dec_bool
    if isinstance(t, IntegralType):
        lo, hi = t.min_value, t.max_value
        allow_float = not isinstance(t, TinyIntType) and t.bits >= 32

        def dec_int(v: Any) -> int:
            if isinstance(v, Num) and (v.is_int or allow_float):
                if not v.is_int and Decimal(v).adjusted() > 20:  # no 10**1e9-digit int
                    raise ValueError(f"Numeric value ({v}) out of range of {t.sql_name}")
                iv = int(v) if v.is_int else int(Decimal(v))  # Jackson truncates toward zero
                if not lo <= iv <= hi:
                    raise ValueError(f"Numeric value ({v}) out of range of {t.sql_name}")
                return iv
            return _java_int(_scalar_text(v), lo, hi)
        return dec_int
    if isinstance(t, (DoubleType, FloatType)):
        single = isinstance(t, FloatType)

        def dec_float(v: Any) -> float:
            f = float(v) if isinstance(v, Num) else _java_double(_scalar_text(v))
            f = javatext._to_float32(f) if single else f
            if math.isinf(f) and "Infinity" not in str(v):  # 1e999: an overflow, not infinity
                raise ValueError(f"{v} overflows {t.sql_name}; write \"Infinity\" for infinity")
            return f
        return dec_float
    if isinstance(t, DecimalType):
        quantum = Decimal(1).scaleb(-t.scale)
        limit = Decimal(10) ** (t.precision - t.scale)

        def dec_decimal(v: Any) -> Decimal | None:
            text = v if isinstance(v, Num) else _scalar_text(v).strip(_JAVA_TRIM)
            if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
                raise ValueError(f"Character array is not a valid decimal: {text!r}")
            d = Decimal(text)
            # DecimalData.fromBigDecimal gives null when the digits do not fit; keyguard never
            # turns a value into null silently (ignore-parse-errors does that, on request).
            if d and d.adjusted() >= t.precision - t.scale + 1:
                raise ValueError(f"{text} needs more than {t.precision} digits for {t.sql()}")
            q = d.quantize(quantum, rounding=ROUND_HALF_UP, context=javatext._WIDE)
            if q.copy_abs() >= limit:
                raise ValueError(f"{text} needs more than {t.precision} digits for {t.sql()}")
            return q
        return dec_decimal
    if isinstance(t, DateType):
        def dec_date(v: Any) -> dt.date:
            date, _, _ = javatext.parse_temporal(_scalar_text(v), "date")
            assert date is not None
            return date
        return dec_date
    if isinstance(t, TimeType):
        def dec_time(v: Any) -> dt.time:
            # JsonToRowDataConverters.convertToTime keeps the milliseconds whatever the
            # precision (TIME(0) reads 01:02:03.1 as 01:02:03.100), dropping the rest.
            _, time, _ = javatext.parse_temporal(_scalar_text(v), "sql_time")
            assert time is not None
            return time.replace(microsecond=time.microsecond - time.microsecond % 1000)
        return dec_time
    if isinstance(t, (TimestampType, TimestampLtzType)):
        ltz = isinstance(t, TimestampLtzType)
        pattern = ("iso" if s.iso else "sql") + ("_ltz" if ltz else "")

        def dec_ts(v: Any) -> dt.datetime:
            # Flink's json reader keeps the fraction whatever the precision (a TIMESTAMP(0)
            # reads 12:00:00.999 as written); Python holds microseconds.
            date, time, _ = javatext.parse_temporal(_scalar_text(v), pattern)
            assert date is not None and time is not None
            out = dt.datetime.combine(date, time)
            return out.replace(tzinfo=dt.timezone.utc) if ltz else out
        return dec_ts
    if isinstance(t, BytesType):
        def dec_bytes(v: Any) -> bytes:
            if not isinstance(v, str) or isinstance(v, Num):
                raise ValueError("BYTES must be a base64 JSON string")
            return base64.b64decode(v, validate=True)
        return dec_bytes
    if isinstance(t, ArrayType):
        elem = _nullable_decoder(decoder(t.element, s), s)

        def dec_array(v: Any) -> list[Any]:
            if not isinstance(v, list):
                raise ValueError("Illegal JSON array data")
            return [elem(x) for x in v]
        return dec_array
    if isinstance(t, MapType):
        if not isinstance(t.key, StringType):
            raise UnsupportedTypeError(
                f"{s.where}: JSON format doesn't support non-string as key type of map: {t.sql()}"
            )
        val = _nullable_decoder(decoder(t.value, s), s)

        def dec_map(v: Any) -> dict[str, Any]:
            if not isinstance(v, dict):
                raise ValueError("Illegal JSON map data")
            for k in v:
                if SURROGATE.search(k) is not None:
                    raise ValueError(f"the map key {lone_surrogate(k)}")
            return {k: val(x) for k, x in v.items()}
        return dec_map
    if isinstance(t, RowType):
        fields = [(f.name, _nullable_decoder(decoder(f.type, s), s)) for f in t.fields]

        def dec_row(v: Any) -> dict[str, Any]:
            if not isinstance(v, dict):
                raise ValueError("Illegal JSON object data")
            out: dict[str, Any] = {}
            for name, dec in fields:
                if name not in v:
                    if s.fail_on_missing:
                        raise ValueError(f"field '{name}' is missing in the JSON data")
                    out[name] = None
                    continue
                try:
                    out[name] = dec(v[name])
                except (ValueError, ArithmeticError) as exc:
                    raise ValueError(f"field '{name}': {exc}") from None
            return out
        return dec_row
    raise UnsupportedTypeError(f"{s.where}: the json format cannot read {t.sql()}")


def _nullable_decoder(dec: Decoder, s: JsonSettings) -> Decoder:
    def dec_nullable(v: Any) -> Any:
        if v is None:
            return None
        try:
            return dec(v)
        except (ValueError, ArithmeticError, OverflowError, TypeError):
            if s.ignore_parse_errors:
                return None
            raise
    return dec_nullable


def _scalar_text(v: Any) -> str:
    if isinstance(v, (dict, list)):
        raise ValueError("expected a scalar, got a JSON " + ("object" if isinstance(v, dict)
                                                             else "array"))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _tree_text(v: Any) -> str:
    """Compact JSON text of a parsed subtree (Flink reads a STRING column given an object so)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Num):
        return str(v)
    if isinstance(v, str):
        return json_string(v)
    if isinstance(v, list):
        return "[" + ",".join(_tree_text(x) for x in v) + "]"
    return "{" + ",".join(json_string(k) + ":" + _tree_text(x) for k, x in v.items()) + "}"


#: JSON text -> Python values, numbers kept as their text.
PARSER = json.JSONDecoder(
    parse_int=Num, parse_float=FloatNum, parse_constant=_reject_constant, strict=True
)


# --- a batch, column by column ----------------------------------------------------------------


def json_columns(codec: JsonCodec, data: Sequence[bytes]) -> DecodedColumns | None:
    """The records' rows column-wise, exactly as `decode` gives them, or None when any record
    is not a JSON object, misses a field `fail-on-missing-field` requires, or fails a column
    (then `decode` record by record says which, and how)."""
    columns: dict[str, list[Any]] = {name: [] for name in codec.row_type.names}
    # In chunks: the parsed objects of a chunk die before the next is parsed, so the garbage
    # collector never walks a whole batch of them.
    for start in range(0, len(data), _JSON_CHUNK):
        chunk = _json_chunk(codec, data[start:start + _JSON_CHUNK])
        if chunk is None:
            return None
        for name, values in chunk.items():
            columns[name].extend(values)
    return DecodedColumns(dict(columns), [], len(data))


_JSON_CHUNK = 4096


def _json_chunk(codec: JsonCodec, data: Sequence[bytes]) -> dict[str, list[Any]] | None:
    settings = codec.settings
    try:
        # JSONDecoder.decode without its whitespace skipping: a record with whitespace
        # around its object goes record by record (raw_decode fails, or the end is short).
        parse = PARSER.raw_decode
        texts = [bytes(d).decode("utf-8") for d in data]
        parsed = [parse(t) for t in texts]
    except Exception:  # decode names it (or skips the record)
        return None
    if not all(end == len(t) for (_, end), t in zip(parsed, texts, strict=True)):
        return None
    docs = [doc for doc, _ in parsed]
    del parsed, texts
    if not all(type(d) is dict for d in docs):
        return None
    decoders = _field_decoders(codec)
    columns: dict[str, list[Any]] = {}
    try:
        for f in codec.row_type.fields:
            name = f.name
            if settings.fail_on_missing and not all(name in d for d in docs):
                return None
            columns[name] = _json_column(f.type, [d.get(name) for d in docs], decoders[name])
    except Exception:  # the first error in record order is decode's to report
        return None
    return columns


def _field_decoders(codec: JsonCodec) -> dict[str, Decoder]:
    """Each field's decoder, as the row decoder applies it (nulls and ignore-parse-errors)."""
    cached = codec.__dict__.get("_column_decoders")
    if cached is None:
        s = codec.settings
        cached = {f.name: _nullable_decoder(decoder(f.type, s), s)
                  for f in codec.row_type.fields}
        codec.__dict__["_column_decoders"] = cached
    return cached  # type: ignore[no-any-return]


def _json_column(t: DataType, values: list[Any], dec: Decoder) -> list[Any]:
    """One column's values converted; the common shapes of a column without a call per value,
    the others by the field's own decoder."""
    present = [v for v in values if v is not None]
    converted = _column_at_once(t, values, present)
    if converted is not None:
        return converted
    return [None if v is None else dec(v) for v in values]


def _column_at_once(t: DataType, values: list[Any], present: list[Any]) -> list[Any] | None:
    """The column converted as a whole when its values have the common shape of the type
    (strings, JSON integers in range, JSON numbers, booleans); else None."""
    if isinstance(t, StringType):
        return _strings(values, present)
    if isinstance(t, IntegralType):
        return _integers(t, values, present)
    if isinstance(t, DoubleType):
        return _doubles(values, present)
    if isinstance(t, BooleanType) and all(type(v) is bool for v in present):
        return values
    return None


def _strings(values: list[Any], present: list[Any]) -> list[Any] | None:
    if all(type(v) is str for v in present) and SURROGATE.search("\0".join(present)) is None:
        return values
    return None


def _integers(t: IntegralType, values: list[Any], present: list[Any]) -> list[Any] | None:
    if not all(type(v) is Num for v in present):
        return None
    ints = [None if v is None else int(v) for v in values]
    kept = [v for v in ints if v is not None]
    if not kept or (t.min_value <= min(kept) and max(kept) <= t.max_value):
        return ints
    return None


def _doubles(values: list[Any], present: list[Any]) -> list[Any] | None:
    if not all(type(v) is Num or type(v) is FloatNum for v in present):
        return None
    floats = [None if v is None else float(v) for v in values]
    if any(math.isinf(v) for v in floats if v is not None):
        return None
    return floats
