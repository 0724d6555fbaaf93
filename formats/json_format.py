"""The `json` format, byte-identical to Flink's flink-json (Flink 2.x) for keys and values.

Flink builds a Jackson tree and writes it with a default `ObjectMapper`, so the bytes follow
Jackson's rules: compact, fields in row order, `"f":null` for nulls, strings escaped as
`UTF8JsonGenerator` does (control characters as `\\n`-style or `\\u00XX` escapes, `/`, DEL and
U+2028 left alone, BMP text as raw UTF-8, but characters beyond U+FFFF as an escaped surrogate
pair `\\uD83D\\uDE00`), DOUBLE/FLOAT as Java's `Double.toString`/`Float.toString`, NaN and the
infinities as the strings "NaN"/"Infinity"/"-Infinity" (QUOTE_NON_NUMERIC_NUMBERS is on by
default), DECIMAL stripped of trailing zeros (`1E+3`), times with `java.time` formatters
(TIME(p) keeps its milliseconds: `"12:34:56.789"`, trailing zeros trimmed).

Decoding follows Flink's JsonParser path: numbers given as strings are accepted, missing fields
are null (or an error with fail-on-missing-field). With ignore-parse-errors a field that does not
convert becomes null and a record that is not JSON decodes to None (Flink skips it); without it
both raise DecodeError.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from keyguard.formats import javatext
from keyguard.formats.codec import Codec, CodecContext, FormatFactory, register_format
from keyguard.formats.errors import (
    DecodeError,
    EncodeError,
    InvalidOptionError,
    UnsupportedTypeError,
)
from keyguard.formats.options import Option, OptionEnum, OptionSet, ResolvedOptions, enum_option
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
    import pyarrow as pa

FORMAT = "json"

class TimestampStandard(OptionEnum):
    SQL = "SQL"
    ISO_8601 = "ISO-8601"


class MapNullKeyMode(OptionEnum):
    FAIL = "FAIL"
    DROP = "DROP"
    LITERAL = "LITERAL"


FAIL_ON_MISSING_FIELD: Option[bool] = Option(
    "fail-on-missing-field", bool, False,
    "Fail when a field of the row type is missing from the JSON object; by default "
    "a missing field is null.")
IGNORE_PARSE_ERRORS: Option[bool] = Option(
    "ignore-parse-errors", bool, False,
    "Turn a field that cannot be converted into null and a record that is not JSON "
    "into None (Flink skips it) instead of failing. Cannot be combined with "
    "fail-on-missing-field.")
TIMESTAMP_FORMAT: Option[TimestampStandard] = enum_option(
    "timestamp-format.standard", TimestampStandard, TimestampStandard.SQL,
    "Text form of TIMESTAMP and TIMESTAMP_LTZ: SQL (`2024-01-01 12:00:00.5`) or "
    "ISO-8601 (`2024-01-01T12:00:00.5`); TIMESTAMP_LTZ adds `Z`.")
MAP_NULL_KEY_MODE: Option[MapNullKeyMode] = enum_option(
    "map-null-key.mode", MapNullKeyMode, MapNullKeyMode.FAIL,
    "What to do with a null MAP key when encoding: FAIL, DROP the entry, or write "
    "it as LITERAL (map-null-key.literal).")
MAP_NULL_KEY_LITERAL: Option[str] = Option(
    "map-null-key.literal", str, "null",
    "The key written for a null MAP key when map-null-key.mode is LITERAL.")
DECIMAL_AS_PLAIN_NUMBER: Option[bool] = Option(
    "encode.decimal-as-plain-number", bool, False,
    "Write DECIMAL as a plain number with the column's scale (`1000.00`) instead of "
    "Java's stripped form that may use an exponent (`1E+3`).")
IGNORE_NULL_FIELDS: Option[bool] = Option(
    "encode.ignore-null-fields", bool, False,
    "Leave out ROW fields whose value is null instead of writing `\"f\":null` (array "
    "elements and map values stay null).")
JSON_PARSER_ENABLED: Option[bool] = Option(
    "decode.json-parser.enabled", bool, True,
    "Flink's choice between its JsonParser and JsonNode decoders; accepted for "
    "compatibility, keyguard always decodes with the JsonParser rules.")

OPTIONS = OptionSet(
    FORMAT,
    (FAIL_ON_MISSING_FIELD, IGNORE_PARSE_ERRORS, TIMESTAMP_FORMAT, MAP_NULL_KEY_MODE,
     MAP_NULL_KEY_LITERAL, DECIMAL_AS_PLAIN_NUMBER, IGNORE_NULL_FIELDS, JSON_PARSER_ENABLED),
)

# ----------------------------------------------------------------------------------------------
# Strings, escaped as Jackson's UTF8JsonGenerator does
# ----------------------------------------------------------------------------------------------

_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r",
                 0x22: '\\"', 0x5C: "\\\\"})
_SURROGATE = re.compile("[\ud800-\udfff]")
_NEEDS_ESCAPE = re.compile("[\x00-\x1f\"\\\\\ud800-\udfff\U00010000-\U0010ffff]")


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x80:
        return _ESCAPES[c]
    if c < 0x10000:  # a lone surrogate: Jackson escapes it too
        return f"\\u{c:04X}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04X}\\u{0xDC00 + (c & 0x3FF):04X}"


def json_string(s: str) -> str:
    """The quoted JSON text of `s`, byte for byte what Flink's Jackson writes."""
    if _NEEDS_ESCAPE.search(s) is None:
        return f'"{s}"'
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'


# ----------------------------------------------------------------------------------------------
# Encoding: one closure per type, built once per codec
# ----------------------------------------------------------------------------------------------

Encoder = Callable[[Any, str], str]


class _Settings:
    def __init__(self, options: ResolvedOptions, where: str) -> None:
        self.iso = options[TIMESTAMP_FORMAT] == TimestampStandard.ISO_8601
        self.null_key_mode = options[MAP_NULL_KEY_MODE]
        self.null_key_literal = options[MAP_NULL_KEY_LITERAL]
        self.plain_decimals = options[DECIMAL_AS_PLAIN_NUMBER]
        self.ignore_nulls = options[IGNORE_NULL_FIELDS]
        self.fail_on_missing = options[FAIL_ON_MISSING_FIELD]
        self.ignore_parse_errors = options[IGNORE_PARSE_ERRORS]
        self.where = where


def _bad(settings: _Settings, path: str, value: Any, t: DataType, why: str = "") -> EncodeError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return EncodeError(
        f"{settings.where}: column '{path}' ({t.sql()}): {shown} {why or 'does not fit the type'}",
        hint=f"convert the column to {t.sql()} before writing, or change the table schema",
    )


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        hasattr(v, "__index__") and not isinstance(v, (bool, float)) and not isinstance(v, str)
    )


def _encoder(t: DataType, s: _Settings) -> Encoder:
    """The encoder of a non-null value of type t (nulls are handled by the caller)."""
    if isinstance(t, StringType):
        def enc_str(v: Any, path: str) -> str:
            if not isinstance(v, str):
                raise _bad(s, path, v, t, "is not a string")
            if _SURROGATE.search(v) is not None:
                raise _bad(s, path, v, t, lone_surrogate(v) or "")
            return json_string(v)
        return enc_str
    if isinstance(t, BooleanType):
        def enc_bool(v: Any, path: str) -> str:
            if not isinstance(v, bool):
                raise _bad(s, path, v, t, "is not a boolean")
            return "true" if v else "false"
        return enc_bool
    if isinstance(t, IntegralType):
        lo, hi = t.min_value, t.max_value

        def enc_int(v: Any, path: str) -> str:
            if not _is_int(v):
                raise _bad(s, path, v, t, "is not an integer")
            iv = int(v.__index__())
            if not lo <= iv <= hi:
                raise _bad(s, path, v, t, f"is out of range for {t.sql_name} ({lo}..{hi})")
            return str(iv)
        return enc_int
    if isinstance(t, (DoubleType, FloatType)):
        single = isinstance(t, FloatType)

        def enc_float(v: Any, path: str) -> str:
            if isinstance(v, bool) or (not isinstance(v, (int, float)) and not (
                hasattr(v, "__float__") and not isinstance(v, (str, Decimal))
            )):
                raise _bad(s, path, v, t, "is not a number")
            try:
                f = float(v)
            except OverflowError:
                raise _bad(s, path, v, t, "is too large") from None
            if single:
                if not javatext.float32_fits(f):
                    raise _bad(s, path, v, t, "is out of range for FLOAT (32-bit)")
                text = javatext.float_to_string(f)
            else:
                text = javatext.double_to_string(f)
            return text if math.isfinite(f) else f'"{text}"'
        return enc_float
    if isinstance(t, DecimalType):
        quantum = Decimal(1).scaleb(-t.scale)
        limit = Decimal(10) ** (t.precision - t.scale)
        plain = s.plain_decimals

        def enc_decimal(v: Any, path: str) -> str:
            if isinstance(v, bool) or not isinstance(v, (Decimal, int)):
                raise _bad(s, path, v, t, "is not a decimal.Decimal or int")
            d = Decimal(v)
            if not d.is_finite():
                raise _bad(s, path, v, t, "is not a finite decimal")
            try:
                q = d.quantize(quantum, rounding=ROUND_HALF_UP, context=javatext._WIDE)
            except InvalidOperation:
                raise _bad(s, path, v, t, "does not fit the precision") from None
            if q.copy_abs() >= limit:
                raise _bad(s, path, v, t, f"needs more than {t.precision} digits")
            if plain:
                return javatext.bigdecimal_to_plain_string(q)
            return javatext.bigdecimal_to_string(javatext.bigdecimal_strip_trailing_zeros(q))
        return enc_decimal
    if isinstance(t, DateType):
        def enc_date(v: Any, path: str) -> str:
            if not isinstance(v, dt.date) or isinstance(v, dt.datetime):
                raise _bad(s, path, v, t, "is not a datetime.date")
            return f'"{javatext.format_date(v)}"'
        return enc_date
    if isinstance(t, TimeType):
        step = 10 ** (3 - min(t.precision, 3))  # milliseconds kept by the precision

        def enc_time(v: Any, path: str) -> str:
            if not isinstance(v, dt.time):
                raise _bad(s, path, v, t, "is not a datetime.time")
            # Flink 2.3 holds TIME as milliseconds of the day and writes SQL_TIME_FORMAT
            # (`HH:mm:ss` + appendFraction(NANO_OF_SECOND, 0, 9, true)): trailing zeros trimmed.
            millis = v.microsecond // 1000
            millis -= millis % step
            return '"' + javatext.format_sql_time(v, millis * 1_000_000) + '"'
        return enc_time
    if isinstance(t, (TimestampType, TimestampLtzType)):
        ltz = isinstance(t, TimestampLtzType)
        unit = 10 ** max(0, 6 - t.precision)
        fmt = javatext.format_iso_timestamp if s.iso else javatext.format_sql_timestamp
        suffix = 'Z"' if ltz else '"'

        def enc_ts(v: Any, path: str) -> str:
            if not isinstance(v, dt.datetime):
                raise _bad(s, path, v, t, "is not a datetime.datetime")
            if v.tzinfo is not None:
                if not ltz:
                    raise _bad(s, path, v, t, "has a time zone; TIMESTAMP is zone-less",)
                try:
                    v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
                except OverflowError:
                    raise _bad(s, path, v, t, "is outside years 1..9999 in UTC") from None
            if unit > 1:
                v = v.replace(microsecond=v.microsecond - v.microsecond % unit)
            return '"' + fmt(v) + suffix
        return enc_ts
    if isinstance(t, BytesType):
        def enc_bytes(v: Any, path: str) -> str:
            if not isinstance(v, (bytes, bytearray, memoryview)):
                raise _bad(s, path, v, t, "is not bytes")
            return '"' + base64.b64encode(bytes(v)).decode("ascii") + '"'
        return enc_bytes
    if isinstance(t, ArrayType):
        elem = _nullable(_encoder(t.element, s))

        def enc_array(v: Any, path: str) -> str:
            if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__iter__"):
                raise _bad(s, path, v, t, "is not a list")
            return "[" + ",".join([elem(x, f"{path}[{i}]") for i, x in enumerate(v)]) + "]"
        return enc_array
    if isinstance(t, MapType):
        if not isinstance(t.key, StringType):
            raise UnsupportedTypeError(
                f"{s.where}: JSON format doesn't support non-string as key type of map: {t.sql()}",
                hint="use MAP<STRING, ...>, as Flink requires",
            )
        val = _nullable(_encoder(t.value, s))

        def enc_map(v: Any, path: str) -> str:
            if not isinstance(v, Mapping):
                items = list(v) if isinstance(v, list) else None  # Arrow gives [(k, v), ...]
                if items is None:
                    raise _bad(s, path, v, t, "is not a dict")
            else:
                items = list(v.items())
            out: dict[str, str] = {}  # an ObjectNode: a repeated key keeps its first place
            for k, x in items:
                if k is None:
                    if s.null_key_mode == MapNullKeyMode.DROP:
                        continue
                    if s.null_key_mode == MapNullKeyMode.FAIL:
                        raise EncodeError(
                            f"{s.where}: column '{path}': JSON format doesn't support to "
                            "serialize map data with null keys",
                            hint="drop null key entries or write them as a literal with "
                            "map-null-key.mode = DROP or LITERAL",
                        )
                    k = s.null_key_literal
                elif not isinstance(k, str):
                    raise _bad(s, f"{path}{{key}}", k, t.key, "is not a string")
                elif _SURROGATE.search(k) is not None:
                    raise _bad(s, f"{path}{{key}}", k, t.key, lone_surrogate(k) or "")
                out[k] = val(x, f"{path}{{{k}}}")
            return "{" + ",".join(json_string(k) + ":" + x for k, x in out.items()) + "}"
        return enc_map
    if isinstance(t, RowType):
        fields = [(f.name, json_string(f.name) + ":", _nullable(_encoder(f.type, s)))
                  for f in t.fields]
        ignore_nulls = s.ignore_nulls

        names = frozenset(t.names)

        def enc_row(v: Any, path: str) -> str:
            if not isinstance(v, Mapping):
                raise _bad(s, path or "(row)", v, t, "is not a dict")
            if path and not names.issuperset(v):  # a nested ROW: its value names every field
                unknown = ", ".join(sorted(map(str, set(v) - names)))
                raise _bad(s, path, v, t, f"has fields the type does not: {unknown}")
            parts = []
            for name, key, enc in fields:
                x = v.get(name)
                if x is None and ignore_nulls:
                    continue
                parts.append(key + enc(x, f"{path}.{name}" if path else name))
            return "{" + ",".join(parts) + "}"
        return enc_row
    raise UnsupportedTypeError(f"{s.where}: the json format cannot write {t.sql()}")


def _nullable(enc: Encoder) -> Encoder:
    def enc_nullable(v: Any, path: str) -> str:
        return "null" if v is None else enc(v, path)
    return enc_nullable


# ----------------------------------------------------------------------------------------------
# Decoding: Flink's JsonParserToRowDataConverters rules
# ----------------------------------------------------------------------------------------------


class _Num(str):
    """A JSON number kept as its text (Flink converts from the text, not from a Python float)."""

    is_int: bool = True


class _FloatNum(_Num):
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


def _decoder(t: DataType, s: _Settings) -> Decoder:
    """Converts one parsed JSON value (not None) of type t; raises ValueError on a mismatch."""
    if isinstance(t, StringType):
        def dec_str(v: Any) -> str:
            if isinstance(v, (dict, list)):
                return _tree_text(v)
            if isinstance(v, bool):
                return "true" if v else "false"
            if _SURROGATE.search(v) is not None:  # "\ud800" parses into a lone surrogate
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
            if isinstance(v, _Num) or text not in ("true", "false"):
                raise ValueError(f"expected true or false, got {_scalar_text(v)!r}")
            return text == "true"
        return dec_bool
    if isinstance(t, IntegralType):
        lo, hi = t.min_value, t.max_value
        allow_float = not isinstance(t, TinyIntType) and t.bits >= 32

        def dec_int(v: Any) -> int:
            if isinstance(v, _Num) and (v.is_int or allow_float):
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
            f = float(v) if isinstance(v, _Num) else _java_double(_scalar_text(v))
            f = javatext._to_float32(f) if single else f
            if math.isinf(f) and "Infinity" not in str(v):  # 1e999: an overflow, not infinity
                raise ValueError(f"{v} overflows {t.sql_name}; write \"Infinity\" for infinity")
            return f
        return dec_float
    if isinstance(t, DecimalType):
        quantum = Decimal(1).scaleb(-t.scale)
        limit = Decimal(10) ** (t.precision - t.scale)

        def dec_decimal(v: Any) -> Decimal | None:
            text = v if isinstance(v, _Num) else _scalar_text(v).strip(_JAVA_TRIM)
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
        unit = 10 ** max(0, 6 - min(t.precision, 3))

        def dec_time(v: Any) -> dt.time:
            _, time, _ = javatext.parse_temporal(_scalar_text(v), "sql_time")
            assert time is not None  # Flink keeps milliseconds at most
            return time.replace(microsecond=time.microsecond - time.microsecond % unit)
        return dec_time
    if isinstance(t, (TimestampType, TimestampLtzType)):
        ltz = isinstance(t, TimestampLtzType)
        pattern = ("iso" if s.iso else "sql") + ("_ltz" if ltz else "")
        unit = 10 ** max(0, 6 - t.precision)

        def dec_ts(v: Any) -> dt.datetime:
            date, time, _ = javatext.parse_temporal(_scalar_text(v), pattern)
            assert date is not None and time is not None
            out = dt.datetime.combine(date, time)
            out = out.replace(microsecond=out.microsecond - out.microsecond % unit)
            return out.replace(tzinfo=dt.timezone.utc) if ltz else out
        return dec_ts
    if isinstance(t, BytesType):
        def dec_bytes(v: Any) -> bytes:
            if not isinstance(v, str) or isinstance(v, _Num):
                raise ValueError("BYTES must be a base64 JSON string")
            return base64.b64decode(v, validate=True)
        return dec_bytes
    if isinstance(t, ArrayType):
        elem = _nullable_decoder(_decoder(t.element, s), s)

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
        val = _nullable_decoder(_decoder(t.value, s), s)

        def dec_map(v: Any) -> dict[str, Any]:
            if not isinstance(v, dict):
                raise ValueError("Illegal JSON map data")
            for k in v:
                if _SURROGATE.search(k) is not None:
                    raise ValueError(f"the map key {lone_surrogate(k)}")
            return {k: val(x) for k, x in v.items()}
        return dec_map
    if isinstance(t, RowType):
        fields = [(f.name, _nullable_decoder(_decoder(f.type, s), s)) for f in t.fields]

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


def _nullable_decoder(dec: Decoder, s: _Settings) -> Decoder:
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
    if isinstance(v, _Num):
        return str(v)
    if isinstance(v, str):
        return json_string(v)
    if isinstance(v, list):
        return "[" + ",".join(_tree_text(x) for x in v) + "]"
    return "{" + ",".join(json_string(k) + ":" + _tree_text(x) for k, x in v.items()) + "}"


_PARSE = json.JSONDecoder(
    parse_int=_Num, parse_float=_FloatNum, parse_constant=_reject_constant, strict=True
)


# ----------------------------------------------------------------------------------------------
# The codec
# ----------------------------------------------------------------------------------------------


class JsonCodec(Codec):
    """Flink's `json` format for one row type."""

    format_name = FORMAT

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        super().__init__(row_type, options, context)
        where = f"{context.role} format '{self.format_name}'" + (f" of topic {context.topic}"
                                                      if context.topic else "")
        if options[FAIL_ON_MISSING_FIELD] and options[IGNORE_PARSE_ERRORS]:
            raise InvalidOptionError(
                f"{where}: fail-on-missing-field and ignore-parse-errors shouldn't both be true",
                hint="set at most one of them, as Flink requires",
            )
        self._settings = _Settings(options, where)
        self._encode = _encoder(row_type, self._settings)
        self._decode = _decoder(row_type, self._settings)

    def encode(self, row: Mapping[str, Any]) -> bytes:
        return self._encode(row, "").encode("utf-8")

    def decode(self, data: bytes) -> dict[str, Any] | None:
        """The row in `data`; None (a skipped record) only with ignore-parse-errors."""
        try:
            text = bytes(data).decode("utf-8")
            value = _PARSE.decode(text)
        except RecursionError:
            if self._settings.ignore_parse_errors:
                return None  # Jackson's nesting limit fails the record; Flink then skips it
            raise DecodeError(
                f"{self._settings.where}: the JSON record is nested too deeply to read",
                hint="no writer of this row type nests so deep: check the topic's format",
            ) from None
        except (UnicodeDecodeError, ValueError) as exc:
            if self._settings.ignore_parse_errors:
                return None
            raise DecodeError(
                f"{self._settings.where}: not a JSON document: {exc}",
                hint="check that the topic holds JSON written for this schema",
            ) from None
        try:
            if not isinstance(value, dict):
                raise ValueError("Illegal JSON object data: the record is not a JSON object")
            return self._decode(value)  # type: ignore[no-any-return]
        except (ValueError, ArithmeticError, OverflowError, TypeError) as exc:
            if self._settings.ignore_parse_errors:
                return None  # type: ignore[return-value]
            raise DecodeError(
                f"{self._settings.where}: failed to deserialize JSON: {exc}",
                hint="the record does not match the row type; ignore-parse-errors=true turns "
                "such fields into nulls",
            ) from None

    def undeclared_fields(self, data: bytes) -> tuple[str, ...]:
        try:
            value = _PARSE.decode(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return ()  # `decode` says what is wrong with it
        if not isinstance(value, dict):
            return ()
        declared = set(self.row_type.names)
        return tuple(name for name in value if name not in declared)

    def decode_batch(self, data: Sequence[bytes], *, arrow: bool = True) -> DecodedColumns:
        """`decode` of every record: each parsed, then converted column by column (Python
        lists, whatever `arrow` asks); a batch with any record that is not a plain object of
        this row's fields goes record by record, so its skips and errors are `decode`'s."""
        columns = json_columns(self, data)
        return super().decode_batch(data) if columns is None else columns

    def encode_batch(self, batch: pa.RecordBatch | pa.Table) -> list[bytes]:
        """Every row of an Arrow batch, the same bytes as `encode` row by row, built per column.

        Strings, integers, booleans, doubles, timestamps and decimals are turned into JSON text
        with pyarrow.compute and numpy; nested values and the rare values needing Java's rules
        are formatted per value. One join then lays each row out, field names and all.
        """
        return self.encode_rows(batch).to_pylist()  # type: ignore[no-any-return]

    def encode_arrow(self, batch: pa.RecordBatch | pa.Table) -> pa.Array:
        """The encoded rows as one Arrow binary array (what `encode_batch` lists)."""
        return self.encode_rows(batch)

    def encode_rows(
        self, batch: pa.RecordBatch | pa.Table, prefix: bytes | Callable[[], bytes] = b""
    ) -> pa.Array:
        """Every row of `batch`, each after `prefix`, as one Arrow binary array.

        A callable prefix (a registry frame's header) is asked for only once every value has
        been checked, as `encode` checks the row before the frame.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        n = batch.num_rows
        if n == 0:
            return pa.array([], pa.binary())
        texts = []
        for f in self.row_type.fields:
            try:
                column = batch.column(f.name)
            except KeyError:
                column = pa.nulls(n, pa.string())
            if isinstance(column, pa.ChunkedArray):
                column = column.combine_chunks()
            texts.append((f.name, *self._column_json(f.name, f.type, column)))
        head = prefix() if callable(prefix) else prefix
        if self._settings.ignore_nulls:
            return _join_skipping_nulls(n, head, texts)
        # One element-wise join: literal field names between the columns' texts; a column
        # without nulls gets its quotes from the literals around it.
        parts: list[Any] = []
        lit = head + b"{"
        for name, text, wrap in texts:
            if wrap is not None and text.null_count:
                text = pc.binary_join_element_wise(wrap[0], text, wrap[1], "")
                wrap = None
            lit += json_string(name).encode("utf-8") + b":" + (wrap[0].encode() if wrap else b"")
            if text.null_count:
                text = pc.fill_null(text, "null")
            parts += [_repeated(lit, n), text.cast(pa.binary())]
            lit = (wrap[1].encode() if wrap else b"") + b","
        parts.append(_repeated(lit[:-1] + b"}", n))
        return pc.binary_join_element_wise(*parts, b"")

    def _column_json(
        self, name: str, t: DataType, column: Any
    ) -> tuple[Any, tuple[str, str] | None]:
        """The JSON text of each value of one column (null where the value is null), and the
        quotes still to put around each non-null value (None: the text is complete)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        typ = column.type
        if isinstance(t, StringType) and (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
            return _arrow_strings(column), ('"', '"')
        if isinstance(t, BooleanType) and pa.types.is_boolean(typ):
            return column.cast(pa.string()), None
        if isinstance(t, IntegralType) and pa.types.is_integer(typ):
            lo_hi = pc.min_max(column)
            lo, hi = lo_hi["min"].as_py(), lo_hi["max"].as_py()
            if lo is None or (t.min_value <= lo and hi <= t.max_value):
                return column.cast(pa.string()), None
        if (isinstance(t, TimestampType) and pa.types.is_timestamp(typ) and typ.tz is None) or (
            isinstance(t, TimestampLtzType) and pa.types.is_timestamp(typ)
        ):
            return _arrow_timestamps(column, t, self._settings.iso), \
                ('"', 'Z"' if isinstance(t, TimestampLtzType) else '"')
        if isinstance(t, DecimalType) and pa.types.is_decimal(typ) and typ.scale == t.scale \
                and typ.precision <= t.precision:
            return _arrow_decimals(column, self._settings.plain_decimals, self._per_value(t)), None
        if isinstance(t, DoubleType) and pa.types.is_float64(typ):
            return _arrow_doubles(column), None
        enc = self._per_value(t)
        out: list[str | None] = []
        for i, v in enumerate(column.to_pylist()):
            try:
                out.append(None if v is None else enc(v, name))
            except EncodeError as exc:  # as the row-by-row path: say which row
                raise type(exc)(f"row {i}: {exc.message}", hint=exc.hint) from None
        return pa.array(out, pa.string()), None

    def _per_value(self, t: DataType) -> Encoder:
        cache = self.__dict__.setdefault("_encoders", {})
        if t not in cache:
            cache[t] = _encoder(t, self._settings)
        return cache[t]  # type: ignore[no-any-return]


def _repeated(value: bytes, n: int) -> Any:
    """`value` n times, as an Arrow binary array built from two numpy buffers (no Python loop;
    Arrow's join is faster with arrays than with scalars)."""
    import numpy as np
    import pyarrow as pa

    # The joined rows hold these bytes and more, within Arrow binary's 2 GiB as before.
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(value))
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                 pa.py_buffer(value * n)])


def _join_skipping_nulls(n: int, head: bytes, texts: list[tuple[str, Any, Any]]) -> Any:
    """Rows without their null fields (encode.ignore-null-fields): each field its own piece."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pieces = []
    for name, text, wrap in texts:
        key = "," + json_string(name) + ":"
        if wrap is not None:
            pieces.append(pc.binary_join_element_wise(key + wrap[0], text, wrap[1], ""))
        else:
            pieces.append(pc.binary_join_element_wise(key, text, ""))
    pieces = [pc.fill_null(p, "") for p in pieces]
    if not pieces:
        return _repeated(head + b"{}", n)
    joined = pc.binary_join_element_wise(*pieces, "") if len(pieces) > 1 else pieces[0]
    body = pc.utf8_slice_codeunits(joined, 1)
    return pc.binary_join_element_wise(head + b"{", body.cast(pa.binary()), b"}", b"")


def _offsets(arr: Any) -> tuple[Any, Any]:
    """(offsets as int64, the data buffer as uint8) of a string or binary array."""
    import numpy as np

    offs = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1,
                         offset=4 * arr.offset).astype(np.int64)
    buf = arr.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    return offs, data


def _trailing_zeros(values: Any, most: int) -> Any:
    """How many trailing decimal zeros each non-negative int64 value has (0 has `most`), up to
    `most`: one modulo over all values, then only over the shrinking rest that ends in 0."""
    import numpy as np

    zeros = np.where(values == 0, most, 0)
    rows = np.flatnonzero((values != 0) & (values % 10 == 0))
    rest = values[rows] // 10
    for _ in range(most):
        if not rows.size:
            break
        zeros[rows] += 1
        ends_in_0 = rest % 10 == 0
        rows, rest = rows[ends_in_0], rest[ends_in_0] // 10
    return np.minimum(zeros, most)


def _compact(mat: Any, mask: Any) -> Any:
    """The bytes of `mat` where `mask` is true, row-major: Arrow's filter on a bit-packed mask
    (faster than numpy's boolean indexing)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    flat = mask.reshape(-1)
    keep = pa.Array.from_buffers(pa.bool_(), len(flat), [
        None, pa.py_buffer(np.packbits(flat, bitorder="little"))])
    return pc.filter(pa.array(mat.reshape(-1)), keep).buffers()[1]

def _trim_ends(arr: Any, cut: Any) -> Any:
    """A string array with the last cut[i] bytes of each value left off (cut is 0 for nulls)."""
    import numpy as np
    import pyarrow as pa

    n = len(arr)
    if arr.offset:
        arr = pa.concat_arrays([arr])
    offs, data = _offsets(arr)
    lens = np.diff(offs)
    keep_len = lens - cut
    width = int(lens[0]) if n else 0
    if n and (lens == width).all():  # fixed width (a timestamp's text): one 2-D mask
        mat = data[offs[0]: offs[0] + n * width].reshape(n, width)
        out = _compact(mat, np.arange(width)[None, :] < keep_len[:, None])
    else:
        total = int(offs[-1] - offs[0])
        pos = np.arange(total, dtype=np.int64) - np.repeat(offs[:-1] - offs[0], lens)
        out = data[offs[0]: offs[-1]][pos < np.repeat(keep_len, lens)]
    new_offs = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(keep_len, out=new_offs[1:])
    data_out = out if isinstance(out, pa.Buffer) else pa.py_buffer(out)
    return pa.Array.from_buffers(pa.string(), n, [arr.buffers()[0], pa.py_buffer(new_offs),
                                                 data_out], arr.null_count)


def _doubles_text(values: list[float | None], jdk: int | None = None) -> list[str | None]:
    """Java text of an Arrow float64 column's values (already floats: no checks needed)."""
    java = javatext.DEFAULT_JDK if jdk is None else jdk

    def to_text(v: float) -> str:
        return javatext.double_to_string(v, jdk=java)
    return [None if v is None else to_text(v) if v - v == 0 else f'"{to_text(v)}"'
            for v in values]


_ARROW_DOUBLES_OK: list[bool] = []
_MANTISSA = (1 << 52) - 1


def _arrow_prints_like_repr() -> bool:
    """Whether this pyarrow prints doubles as `_arrow_doubles` expects: the shortest digits
    (as `repr`), plain from 1e-3 up to 1e7 (the window's edges probed), integers bare."""
    import pyarrow as pa

    if not _ARROW_DOUBLES_OK:
        probe = [4739.33, 0.001234, 1234567.891, 0.1, 2.5e-3, 9999999.999999998, 1.1, -123.456,
                 0.001, 0.0010000000000000002, 0.0019999999999999996, 9999999.5]
        wholes = [1.0, -0.0, 0.0, 1000000.0, 9999999.0, -42.0]
        arrow_text = pa.array(probe + wholes).cast(pa.string()).to_pylist()
        java = [javatext.double_to_string(x) for x in probe]
        java += [javatext.double_to_string(x).removesuffix(".0") for x in wholes]
        _ARROW_DOUBLES_OK.append(arrow_text == java)
    return _ARROW_DOUBLES_OK[0]


def _arrow_doubles(column: Any, jdk: int | None = None) -> Any:
    """Java text of a float64 column (`Double.toString` of JDK `jdk`), from Arrow's text.

    Arrow prints the shortest round-trip digits, as `repr`; from 1e-3 up to 1e7 that is also
    Java's text (JDK 19+ by definition; JDK 17's FloatingDecimal too, see below), with two
    layout fixes done here in bulk: an integral value gets `.0` (`1234` -> `1234.0`, `-0` ->
    `-0.0`). Per value through javatext go only: values outside that window (Java's exponent
    form), NaN and the infinities, one-digit values (JDK 19+ may then print two digits), and
    powers of two (FloatingDecimal's one asymmetric case).

    JDK 17: `javatext._legacy_fast` shows FloatingDecimal and `repr` agree but for values of
    1 digit, powers of two, subnormals, integers >= 2^53, and a k-digit neighbour exactly half
    an ulp away or x exactly midway between two: with x = m*2^q (2^52 <= m < 2^53) and the text
    D*10^-k (k >= 1 fraction digits, D < 10^17), the first needs D = (2m+-1)*5^k*2^(q+k-1), so
    x >= 2^52*5/10 > 1e7 at k = 1 and more digits than 17 beyond; the second needs
    2D+-1 = m*5^k, so x >= 2^52*5/20 > 1e14. Neither happens in the window.
    tests/formats/test_json_doubles.py checks this against the full port.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not _arrow_prints_like_repr():
        return pa.array(_doubles_text(column.to_pylist(), jdk), pa.string())
    text = column.cast(pa.string())
    x = column.fill_null(0.0).to_numpy(zero_copy_only=False)
    valid = np.ones(len(x), dtype=bool) if column.null_count == 0 else \
        column.is_valid().to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(x)
        window = (a >= 1e-3) & (a < 1e7)
        whole = valid & (a < 1e7) & (x == np.trunc(x))  # zeros included
        fractional = valid & window & ~whole
        power_of_two = (x.view(np.uint64) & np.uint64(_MANTISSA)) == 0
        one_digit = np.zeros(len(x), dtype=bool)
        for scale in (10.0, 100.0, 1000.0):  # 0.d, 0.0d, 0.00d: the only 1-digit fractions
            d = np.rint(a * scale)
            one_digit |= (d >= 1) & (d <= 9) & (d / scale == a)
    plain = fractional & ~power_of_two & ~one_digit
    slow = valid & ~plain & ~whole
    if whole.any():
        mask = pa.array(whole)
        text = pc.replace_with_mask(text, mask, pc.binary_join_element_wise(
            pc.filter(text, mask), ".0", ""))
    if slow.any():
        mask = pa.array(slow)
        values = _doubles_text(pc.filter(column, mask).to_pylist(), jdk)
        text = pc.replace_with_mask(text, mask, pa.array(values, pa.string()))
    return text


def _arrow_strings(column: Any) -> Any:
    """The escaped text of a string column, without its quotes (null where null).

    One numpy pass over the UTF-8 bytes finds the values that need escaping at all: `"` and
    `\\` are escaped in bulk, control characters and characters beyond U+FFFF (4-byte
    sequences) per value with json_string.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.cast(pa.string())
    n = len(column)
    offs, data = _offsets(column)
    body = data[offs[0]: offs[-1]]
    special = (body < 0x20) | (body >= 0xF0)
    quoting = (body == 0x22) | (body == 0x5C)
    text = column
    if quoting.any():
        text = pc.replace_substring(text, "\\", "\\\\")
        text = pc.replace_substring(text, '"', '\\"')
    if special.any():
        rows = np.searchsorted(offs, np.flatnonzero(special) + offs[0], side="right") - 1
        mask = np.zeros(n, dtype=bool)
        mask[rows] = True
        if column.null_count:
            mask &= column.is_valid().to_numpy(zero_copy_only=False)
        arrow_mask = pa.array(mask)
        slow = [json_string(v)[1:-1] for v in pc.filter(column, arrow_mask).to_pylist()]
        text = pc.replace_with_mask(text, arrow_mask, pa.array(slow, pa.string()))
    return text


def _arrow_timestamps(column: Any, t: DataType, iso: bool) -> Any:
    """The text of a timestamp column without its quotes (and without LTZ's `Z`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    precision = t.precision  # type: ignore[attr-defined]
    typ = column.type
    if typ.tz is not None:
        column = column.cast(pa.timestamp(typ.unit))  # the UTC wall clock
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[typ.unit]
    if column.offset:
        column = pa.concat_arrays([column])
    ticks = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if precision < digits:  # floor to the precision in integer ticks (no ns overflow)
        m = 10 ** (digits - precision)
        ticks = ticks - ticks % m  # numpy's % is a floor modulo, as the floor needs
        column = pa.Array.from_buffers(pa.timestamp(typ.unit), len(column),
                                       [column.buffers()[0], pa.py_buffer(ticks)],
                                       column.null_count)
    text = column.cast(pa.string())  # `yyyy-MM-dd HH:mm:ss[.ffffff]`, faster than strftime
    if iso:
        text = pc.replace_substring(text, " ", "T", max_replacements=1)
    if digits:
        # Trailing fractional zeros trimmed, and the point with them when all are zeros.
        cut = _trailing_zeros(ticks % 10**digits, digits)
        cut += cut == digits  # no fraction left: the point goes too
        if text.null_count:
            cut = np.where(text.is_valid().to_numpy(zero_copy_only=False), cut, 0)
        text = _trim_ends(text, cut)
    return text


def _arrow_decimals(column: Any, plain: bool, enc: Encoder) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if not plain and pa.types.is_decimal128(column.type) and column.type.precision <= 18:
        text, slow_rows = _decimals_text(column, plain)
        slow = pa.array(slow_rows)
    else:
        raw = column.cast(pa.string())  # plain at the column's scale, but `1E-8` when tiny
        text = raw
        slow = pc.match_substring(raw, "E")
        if not plain:
            if column.type.scale > 0:
                text = pc.replace_substring_regex(text, "0+$", "")
                text = pc.replace_substring_regex(text, "\\.$", "")
            # Integers ending in 0 need an exponent, tiny values may: Java's rules for those.
            slow = pc.or_(slow, pc.or_(pc.match_substring_regex(text, "0$"),
                                       pc.match_substring_regex(text, "^-?0\\.000000")))
            slow = pc.and_(slow, pc.not_equal(text, "0"))
    if pc.any(slow).as_py():
        mask = pc.fill_null(slow, False)
        values = [enc(v, "") for v in pc.filter(column, mask).to_pylist()]
        text = pc.replace_with_mask(text, mask, pa.array(values, pa.string()))
    return text


def _decimals_text(column: Any, plain: bool) -> tuple[Any, Any]:
    """The text of a decimal128 column of precision <= 18 (unscaled values fit int64), written
    digit by digit into one byte matrix, and the rows left to Java's rules: with
    `stripTrailingZeros().toString()` an integer ending in 0 (`1E+3`) and an adjusted exponent
    below -6 (`1E-7`). Plain keeps the scale: `toPlainString()` never has an exponent."""
    import numpy as np
    import pyarrow as pa

    n = len(column)
    scale, precision = column.type.scale, column.type.precision
    words = np.frombuffer(column.buffers()[1], dtype="<i8")[2 * column.offset:
                                                            2 * (column.offset + n)]
    valid = np.ones(n, dtype=bool) if column.null_count == 0 else \
        column.is_valid().to_numpy(zero_copy_only=False)
    u = np.where(valid, words[0::2], 0)
    a = np.abs(u)
    whole, frac = a // 10**scale, a % 10**scale
    int_width = max(1, precision - scale)
    int_digits = np.ones(n, dtype=np.int64)
    for k in range(1, int_width):
        int_digits += whole >= 10**k
    keep_frac = np.full(n, scale, dtype=np.int64)
    slow = np.zeros(n, dtype=bool)
    if not plain:
        keep_frac -= _trailing_zeros(frac, scale)
        digits_of_u = np.where(whole > 0, int_digits + scale, 0)
        for k in range(scale):  # the digits of a fraction-only value: frac < 10^scale
            digits_of_u += (whole == 0) & (frac >= 10**k)
        adjusted = digits_of_u - 1 - scale
        slow = valid & (u != 0) & (((frac == 0) & (whole % 10 == 0)) | (adjusted < -6))
    width = 1 + int_width + (1 + scale if scale else 0)
    mat = np.empty((n, width), dtype=np.uint8)
    mask = np.empty((n, width), dtype=bool)
    mat[:, 0] = ord("-")
    mask[:, 0] = u < 0
    cols = np.arange(int_width)
    for j in range(int_width):
        mat[:, 1 + j] = 48 + (whole // 10 ** (int_width - 1 - j)) % 10
    mask[:, 1: 1 + int_width] = cols[None, :] >= int_width - int_digits[:, None]
    if scale:
        at = 1 + int_width
        mat[:, at] = ord(".")
        mask[:, at] = keep_frac > 0
        for k in range(scale):
            mat[:, at + 1 + k] = 48 + (frac // 10 ** (scale - 1 - k)) % 10
        mask[:, at + 1:] = np.arange(scale)[None, :] < keep_frac[:, None]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(mask.sum(axis=1, dtype=np.int32), out=offsets[1:])
    data = _compact(mat, mask)
    validity = None if column.null_count == 0 else pa.array(valid).buffers()[1]
    text = pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offsets), data],
                                 column.null_count)
    return text, slow


def _build(row_type: RowType, options: ResolvedOptions, context: CodecContext) -> Codec:
    return JsonCodec(row_type, options, context)


FACTORY = register_format(
    FormatFactory(
        FORMAT,
        OPTIONS,
        _build,
        key_family="json",
        summary="Flink's json format: compact JSON objects, Java number and time text",
    )
)


# ----------------------------------------------------------------------------------------------
# Column-wise decoding
# ----------------------------------------------------------------------------------------------

# Here rather than at the top, so that this part stays apart from the encoding side.
from collections.abc import Sequence  # noqa: E402

from keyguard.formats.codec import DecodedColumns  # noqa: E402


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
    settings = codec._settings
    try:
        # JSONDecoder.decode without its whitespace skipping: a record with whitespace
        # around its object goes record by record (raw_decode fails, or the end is short).
        parse = _PARSE.raw_decode
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
        s = codec._settings
        cached = {f.name: _nullable_decoder(_decoder(f.type, s), s)
                  for f in codec.row_type.fields}
        codec.__dict__["_column_decoders"] = cached
    return cached  # type: ignore[no-any-return]


def _json_column(t: DataType, values: list[Any], dec: Decoder) -> list[Any]:
    """One column's values converted; the common shapes of a column without a call per value,
    the others by the field's own decoder."""
    present = [v for v in values if v is not None]
    if isinstance(t, StringType):
        if all(type(v) is str for v in present) and \
                _SURROGATE.search("\0".join(present)) is None:
            return values
    elif isinstance(t, IntegralType):
        if all(type(v) is _Num for v in present):
            ints = [None if v is None else int(v) for v in values]
            kept = [v for v in ints if v is not None]
            if not kept or (t.min_value <= min(kept) and max(kept) <= t.max_value):
                return ints
    elif isinstance(t, DoubleType):
        if all(type(v) is _Num or type(v) is _FloatNum for v in present):
            floats = [None if v is None else float(v) for v in values]
            if not any(math.isinf(v) for v in floats if v is not None):
                return floats
    elif isinstance(t, BooleanType):
        if all(type(v) is bool for v in present):
            return values
    return [None if v is None else dec(v) for v in values]
