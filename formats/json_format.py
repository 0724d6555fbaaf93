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

Here: the options, the row writer and the codec. Strings are quoted by
`keyguard.formats.json_text`, records read by `keyguard.formats.json_decode`, Arrow batches
written column-wise by `keyguard.formats.json_vector`.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from keyguard.formats import flink_casts, javatext
from keyguard.formats.codec import (
    Codec,
    CodecContext,
    DecodedColumns,
    FormatFactory,
    register_format,
)
from keyguard.formats.errors import (
    DecodeError,
    EncodeError,
    InvalidOptionError,
    UnsupportedTypeError,
)
from keyguard.formats.framing import Headers
from keyguard.formats.json_decode import PARSER, decoder, json_columns
from keyguard.formats.json_text import SURROGATE, json_string
from keyguard.formats.json_vector import encode_rows
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
# Encoding: one closure per type, built once per codec
# ----------------------------------------------------------------------------------------------

Encoder = Callable[[Any, str], str]


class JsonSettings:
    """The options as the writers and readers use them, with where the codec sits (for
    messages)."""

    def __init__(self, options: ResolvedOptions, where: str) -> None:
        self.iso = options[TIMESTAMP_FORMAT] == TimestampStandard.ISO_8601
        self.null_key_mode = options[MAP_NULL_KEY_MODE]
        self.null_key_literal = options[MAP_NULL_KEY_LITERAL]
        self.plain_decimals = options[DECIMAL_AS_PLAIN_NUMBER]
        self.ignore_nulls = options[IGNORE_NULL_FIELDS]
        self.fail_on_missing = options[FAIL_ON_MISSING_FIELD]
        self.ignore_parse_errors = options[IGNORE_PARSE_ERRORS]
        self.where = where


def _bad(settings: JsonSettings, path: str, value: Any, t: DataType, why: str = "") -> EncodeError:
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


def _encoder(t: DataType, s: JsonSettings) -> Encoder:
    """The encoder of a non-null value of type t (nulls are handled by the caller)."""
    if isinstance(t, StringType):
        def enc_str(v: Any, path: str) -> str:
            if not isinstance(v, str):
                raise _bad(s, path, v, t, "is not a string")
            if SURROGATE.search(v) is not None:
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
            return '"' + fmt(flink_casts.truncate_datetime(v, t.precision)) + suffix
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
                elif SURROGATE.search(k) is not None:
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
        self.settings = JsonSettings(options, where)
        self._encode = _encoder(row_type, self.settings)
        self._decode = decoder(row_type, self.settings)

    def encode(self, row: Mapping[str, Any]) -> bytes:
        return self._encode(row, "").encode("utf-8")

    def decode(self, data: bytes) -> dict[str, Any] | None:
        """The row in `data`; None (a skipped record) only with ignore-parse-errors."""
        try:
            text = bytes(data).decode("utf-8")
            value = PARSER.decode(text)
        except RecursionError:
            if self.settings.ignore_parse_errors:
                return None  # Jackson's nesting limit fails the record; Flink then skips it
            raise DecodeError(
                f"{self.settings.where}: the JSON record is nested too deeply to read",
                hint="no writer of this row type nests so deep: check the topic's format",
            ) from None
        except (UnicodeDecodeError, ValueError) as exc:
            if self.settings.ignore_parse_errors:
                return None
            raise DecodeError(
                f"{self.settings.where}: not a JSON document: {exc}",
                hint="check that the topic holds JSON written for this schema",
            ) from None
        try:
            if not isinstance(value, dict):
                raise ValueError("Illegal JSON object data: the record is not a JSON object")
            return self._decode(value)  # type: ignore[no-any-return]
        except (ValueError, ArithmeticError, OverflowError, TypeError) as exc:
            if self.settings.ignore_parse_errors:
                return None  # type: ignore[return-value]
            raise DecodeError(
                f"{self.settings.where}: failed to deserialize JSON: {exc}",
                hint="the record does not match the row type; ignore-parse-errors=true turns "
                "such fields into nulls",
            ) from None

    def undeclared_fields(self, data: bytes, headers: Headers = None) -> tuple[str, ...]:
        try:
            value = PARSER.decode(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return ()  # `decode` says what is wrong with it
        if not isinstance(value, dict):
            return ()
        declared = set(self.row_type.names)
        return tuple(name for name in value if name not in declared)

    def decode_batch(self, data: Sequence[bytes], *, arrow: bool = True,
                     headers: Sequence[Headers] | None = None) -> DecodedColumns:
        """`decode` of every record (its bytes alone: json has no frame): each parsed, then
        converted column by column (Python lists, whatever `arrow` asks); a batch with any
        record that is not a plain object of this row's fields goes record by record, so its
        skips and errors are `decode`'s."""
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
        """Every row of `batch`, each after `prefix`, as one Arrow binary array (column-wise:
        `keyguard.formats.json_vector`).

        A callable prefix (a registry frame's header) is asked for only once every value has
        been checked, as `encode` checks the row before the frame.
        """
        return encode_rows(self.row_type, batch, prefix, self.settings, self._per_value)

    def _per_value(self, t: DataType) -> Encoder:
        cache = self.__dict__.setdefault("_encoders", {})
        if t not in cache:
            cache[t] = _encoder(t, self.settings)
        return cache[t]  # type: ignore[no-any-return]


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
