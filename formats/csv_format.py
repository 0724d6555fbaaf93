"""Flink's `csv` format, byte-identical: one line per record, written the way Jackson writes it.

Flink's `CsvRowDataSerializationSchema` turns a row into a Jackson `ObjectNode` and lets
`CsvMapper` (jackson-dataformat-csv, `CsvGenerator` + `CsvEncoder`) print it with the line
separator removed. So the bytes follow Jackson's rules, which this module reproduces:

- Quoting is Jackson's default "loose" check, not RFC 4180: a text value is quoted when it is
  longer than 24 UTF-16 units, or holds any character below `max(delimiter, quote) + 1`
  (for `,` and `"`: anything below `-`, i.e. space, `!"#$%&'()*+,` and control characters), or
  the control-character escape: the escape character when one is set, else a backslash (so
  Flink writes `"k\\b"`). Hence `"2024-01-01 00:00:00.12"` (a space) and `"k,1"` are quoted
  while `2024-01-01` is not. Inside quotes the quote character (and the escape character) is
  doubled; a backslash without an escape character is written as it is.
- Numbers and booleans are never quoted: Double/Float.toString, `true`/`false`. DECIMAL is the
  plain number with the column's scale (`0.000000100000000000`, `1000.00`) unless
  write-bigdecimal-in-scientific-notation=true, which writes `stripTrailingZeros().toString()`
  (`1E-7`, `1E+3`, `0`), as observed from Flink 2.3.
- Null is the null literal (empty by default), never quoted; arrays join their elements with
  the array-element delimiter and are quoted as one text value. A nested ROW is written as
  Flink's `RowDataToCsvConverters` writes it: an array of its fields (atomic types only), so
  `ROW<a INT, b STRING>` (1, 'x') is `1;x`.
- Text forms of times follow Flink's converters: DATE `yyyy-MM-dd`, TIME `HH:mm:ss[.SSS]`,
  TIMESTAMP `yyyy-MM-dd HH:mm:ss[.fraction]`, TIMESTAMP_LTZ the same in UTC plus `Z`, BYTES
  base64.

Decoding follows Flink's `CsvToRowDataConverters`: numbers are trimmed and parsed strictly, an
empty field is `""` for STRING, empty for BYTES and ARRAY, and a parse error otherwise (Flink's
reader fails on it unless `null-literal` or `ignore-parse-errors` is set).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import re
import struct
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

from keyguard.formats import javatext
from keyguard.formats.codec import Codec, CodecContext, FormatFactory, register_format
from keyguard.formats.errors import (
    DecodeError,
    EncodeError,
    InvalidOptionError,
    UnsupportedTypeError,
)
from keyguard.formats.options import Option, OptionSet, ResolvedOptions
from keyguard.formats.types import (
    ATOMIC_TYPES,
    ArrayType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    RowType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
)
from keyguard.formats.values import lone_surrogate

FORMAT = "csv"

FIELD_DELIMITER: Option[str] = Option(
    "field-delimiter", str, ",",
    "Field delimiter character; Java escapes such as \\t are understood.")
DISABLE_QUOTE_CHARACTER: Option[bool] = Option(
    "disable-quote-character", bool, False,
    "Never quote values; quote-character may then not be set.")
QUOTE_CHARACTER: Option[str | None] = Option(
    "quote-character", str, None,
    'Quote character for values that need quoting (\'"\' when not set).')
ALLOW_COMMENTS: Option[bool] = Option(
    "allow-comments", bool, False,
    "Reading: records starting with '#' are comments (Flink then reads no row).")
IGNORE_PARSE_ERRORS: Option[bool] = Option(
    "ignore-parse-errors", bool, False,
    "Reading: fields that do not parse become null instead of failing.")
ARRAY_ELEMENT_DELIMITER: Option[str] = Option(
    "array-element-delimiter", str, ";", "Separator of ARRAY elements.")
ESCAPE_CHARACTER: Option[str | None] = Option(
    "escape-character", str, None, "Escape character (disabled by default).")
NULL_LITERAL: Option[str | None] = Option(
    "null-literal", str, None,
    "Text written and read for null (by default null is an empty field).")
SCIENTIFIC_DECIMALS: Option[bool] = Option(
    "write-bigdecimal-in-scientific-notation", bool, False,
    "true: DECIMAL as BigDecimal.stripTrailingZeros().toString() (1E+3, 0, 1E-7); "
    "absent or false: the plain number with the column's scale (1000.00), as Flink "
    "2.3 writes it when the option is not set.")

OPTIONS = OptionSet(
    FORMAT,
    (FIELD_DELIMITER, DISABLE_QUOTE_CHARACTER, QUOTE_CHARACTER, ALLOW_COMMENTS,
     IGNORE_PARSE_ERRORS, ARRAY_ELEMENT_DELIMITER, ESCAPE_CHARACTER, NULL_LITERAL,
     SCIENTIFIC_DECIMALS),
)

#: Jackson's CsvEncoder.MAX_QUOTE_CHECK: longer text values are always quoted.
MAX_QUOTE_CHECK = 24
#: Flink's CSV reader rejects TIME with a higher precision (CsvToRowDataConverters).
MAX_TIME_PRECISION = 3

_WIDE = Context(prec=1000)
_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT_RE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)\Z"
)
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_SQL_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})\Z")
_LOCAL_TIME_RE = re.compile(r"([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?\Z")
_JAVA_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "b": "\b", "f": "\f", "\\": "\\",
                 "'": "'", '"': '"'}


def unescape_java(text: str) -> str:
    r"""Commons-lang `StringEscapeUtils.unescapeJava`, as Flink applies to field-delimiter."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
            out.append(chr(int(text[i + 2:i + 6], 16)))
            i += 6
        elif nxt in "01234567":
            m = re.match(r"[0-3][0-7]{0,2}|[4-7][0-7]?", text[i + 1:])
            assert m is not None
            out.append(chr(int(m.group(0), 8)))
            i += 1 + len(m.group(0))
        else:
            out.append(_JAVA_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _single_char(options: ResolvedOptions, option: Option[Any], *,
                 unescape: bool = False) -> str | None:
    raw = options[option]
    if raw is None:
        return None
    value = unescape_java(raw) if unescape else raw
    if len(value) != 1:
        raise InvalidOptionError(
            f"csv format: option '{option.key}' must be a single character, got {raw!r}",
            hint="for a tab write \\t" if option is FIELD_DELIMITER else None,
        )
    return value


def check_row_type(row_type: RowType, *, role: str = "value") -> None:
    """Plan-time check: atomic columns, and ARRAYs and ROWs of atomic values (Flink's rule)."""
    for f in row_type.fields:
        where = f"{role} format 'csv': column '{f.name}' of type {f.type.sql()}"
        inner: tuple[DataType, ...] = (f.type,)
        if isinstance(f.type, ArrayType):
            inner = (f.type.element,)
        elif isinstance(f.type, RowType):
            inner = tuple(x.type for x in f.type.fields)
        for t in inner:
            if not isinstance(t, ATOMIC_TYPES):
                what = "arrays and nested rows hold" if inner != (f.type,) else "has no maps:"
                raise UnsupportedTypeError(
                    f"{where} is not supported: csv {what} atomic values only "
                    "(Flink: only simple types in the second level of nesting)",
                    hint="use 'json' or 'avro' for maps and deeper nesting, or flatten the "
                    "column",
                )
            if isinstance(t, TimeType) and t.precision > MAX_TIME_PRECISION:
                raise UnsupportedTypeError(
                    f"{where} is not supported: Flink's csv reader supports TIME precision "
                    "0 to 3",
                    hint="declare the column as TIME(3) or less",
                )


class CsvCodec(Codec):
    format_name = FORMAT

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        super().__init__(row_type, options, context)
        if options[DISABLE_QUOTE_CHARACTER] and options[QUOTE_CHARACTER] is not None:
            raise InvalidOptionError(
                "csv format: options 'quote-character' and 'disable-quote-character' "
                "cannot be set at the same time"
            )
        delimiter = _single_char(options, FIELD_DELIMITER, unescape=True)
        assert delimiter is not None
        self.delimiter = delimiter
        self.quote = None if options[DISABLE_QUOTE_CHARACTER] else (
            _single_char(options, QUOTE_CHARACTER) or '"')
        self.escape = _single_char(options, ESCAPE_CHARACTER)
        self.array_delimiter = _single_char(options, ARRAY_ELEMENT_DELIMITER) or ";"
        self.null_literal = options[NULL_LITERAL]
        self.scientific_decimals = options[SCIENTIFIC_DECIMALS]
        self.ignore_parse_errors = options[IGNORE_PARSE_ERRORS]
        self.allow_comments = options[ALLOW_COMMENTS]
        check_row_type(row_type, role=context.role)
        # Jackson's _cfgMinSafeChar (the line separator is empty in Flink).
        self._min_safe = max(ord(self.delimiter), ord(self.quote) if self.quote else -1) + 1
        # Characters that force quotes at or above _min_safe: the escape character, or, with
        # none set, the backslash Jackson would escape control characters with.
        self._quote_chars = frozenset({ord(self.escape or "\\")})

    # --- encoding ------------------------------------------------------------------------------

    def encode(self, row: Mapping[str, Any]) -> bytes:
        cells = []
        for f in self.row_type.fields:
            try:
                cells.append(self._cell(f.type, row.get(f.name)))
            except EncodeError as exc:
                raise EncodeError(
                    f"{self.context.role} column '{f.name}' (csv format): {exc.message}",
                    hint=exc.hint,
                ) from None
        return self.delimiter.join(cells).encode("utf-8", errors="surrogatepass")

    def _cell(self, t: DataType, v: Any) -> str:
        if v is None:
            if not t.nullable:
                raise EncodeError(f"null in a {t.sql()} column")
            return self.null_literal or ""
        if isinstance(t, ArrayType):
            if not isinstance(v, (list, tuple)):
                raise _bad(t, v)
            return self._quoted_if_needed(self._elements([(t.element, e) for e in v]))
        if isinstance(t, RowType):
            if not isinstance(v, Mapping):
                raise _bad(t, v, "a dict of the nested row's fields")
            unknown = set(v) - set(t.names)
            if unknown:
                names = ", ".join(sorted(map(str, unknown)))
                raise EncodeError(f"the nested row has no field {names}",
                                  hint="the fields are: " + ", ".join(t.names))
            for f in t.fields:
                if v.get(f.name) is None and not f.type.nullable:
                    raise EncodeError(f"null in nested field '{f.name}' ({f.type.sql()})")
            return self._quoted_if_needed(
                self._elements([(f.type, v.get(f.name)) for f in t.fields]))
        text, is_string = self._text(t, v, in_array=False)
        return self._quoted_if_needed(text) if is_string else text

    def _elements(self, items: list[tuple[DataType, Any]]) -> str:
        """An array node's text: elements joined by the array delimiter, null as the literal."""
        null = self.null_literal or ""
        return self.array_delimiter.join(
            null if e is None else self._text(et, e, in_array=True)[0] for et, e in items)

    def _text(self, t: DataType, v: Any, *, in_array: bool) -> tuple[str, bool]:
        """The value's text and whether Jackson writes it as a string (subject to quoting)."""
        if isinstance(t, StringType):
            return _string_text(t, v), True
        if isinstance(t, BooleanType):
            return _boolean_text(t, v), False
        if isinstance(t, IntegralType):
            return _integer_text(t, v), False
        if isinstance(t, (FloatType, DoubleType)):
            return _float_text(t, v), False
        if isinstance(t, DecimalType):
            return _decimal_text(t, v, scientific=self.scientific_decimals), False
        if isinstance(t, DateType):
            return _date_text(t, v), True
        if isinstance(t, TimeType):
            return _time_text(t, v), True
        if isinstance(t, TimestampType):
            return _timestamp_text(t, v), True
        if isinstance(t, TimestampLtzType):
            return _timestamp_ltz_text(t, v), True
        if isinstance(t, BytesType):
            return _bytes_text(t, v), True
        raise EncodeError(f"unsupported type {t.sql()}")  # check_row_type prevents this

    def _quoted_if_needed(self, text: str) -> str:
        """Jackson CsvEncoder._mayNeedQuotes (loose check) and _writeQuoted[AndEscaped]."""
        q = self.quote
        if q is None:
            return text
        esc = self.escape
        units = text.encode("utf-16-le", errors="surrogatepass")
        if len(units) // 2 <= MAX_QUOTE_CHECK:
            codes = memoryview(units).cast("H")
            quote_chars = self._quote_chars
            if all(c >= self._min_safe and c not in quote_chars for c in codes):
                return text
        body = text.replace(q, q + q)
        if esc is not None and esc != q:
            body = body.replace(esc, esc + esc)
        return q + body + q

    # --- decoding ------------------------------------------------------------------------------

    def decode(self, data: bytes) -> dict[str, Any]:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"{self.describe()}: record is not UTF-8: {exc}") from None
        if self.allow_comments and text.startswith("#"):
            raise DecodeError(f"{self.describe()}: record is a comment line; Flink reads no row")
        cells = self._split(text)
        n = len(self.row_type)
        if not cells:
            raise DecodeError(f"{self.describe()}: empty record; Flink reads no row")
        if len(cells) > n:
            raise DecodeError(
                f"{self.describe()}: {len(cells)} fields, the row has {n} columns",
                hint="Flink fails on this record, or skips it with ignore-parse-errors",
            )
        if len(cells) < n and not self.ignore_parse_errors:
            raise DecodeError(
                f"{self.describe()}: {len(cells)} fields, the row has {n} columns",
                hint="set ignore-parse-errors=true to read missing fields as null",
            )
        out: dict[str, Any] = {}
        for i, f in enumerate(self.row_type.fields):
            if i >= len(cells):
                out[f.name] = None
                continue
            value, _quoted = cells[i]
            try:
                out[f.name] = self._parse_cell(f.type, value)
            except (ValueError, ArithmeticError, binascii.Error) as exc:
                if self.ignore_parse_errors:
                    out[f.name] = None
                    continue
                raise DecodeError(
                    f"{self.context.role} column '{f.name}' (csv format): cannot read "
                    f"{value!r} as {f.type.sql()}: {exc}",
                    hint="Flink's csv reader fails here too; set null-literal for nulls, or "
                    "ignore-parse-errors=true",
                ) from None
        return out

    def _split(self, text: str) -> list[tuple[str, bool]]:
        """Fields of the first record, as Jackson's CsvDecoder reads them: (text, was quoted)."""
        cells: list[tuple[str, bool]] = []
        i, n = 0, len(text)
        if n == 0:
            return cells
        while True:
            buf: list[str] = []
            quoted = self.quote is not None and i < n and text[i] == self.quote
            if quoted:
                i = self._read_quoted(text, i + 1, buf, len(cells))
            # Unquoted text (or what follows a closing quote) up to the delimiter.
            i = self._read_unquoted(text, i, buf)
            cells.append(("".join(buf), quoted))
            if i < n and text[i] == self.delimiter:
                i += 1
                continue
            return cells

    def _read_quoted(self, text: str, i: int, buf: list[str], field: int) -> int:
        """A quoted value's text from `i` (after its opening quote) into `buf`; the offset
        after its closing quote. `field` counts the fields before it, for the error."""
        q, n = self.quote, len(text)
        while True:
            if i >= n:
                names = self.row_type.names
                col = f" (column '{names[field]}')" if field < len(names) else ""
                raise DecodeError(
                    f"{self.describe()}: field {field + 1}{col}: missing closing quote {q!r}",
                    hint="the record was cut short, or was not written by Flink's csv")
            c = text[i]
            if c == q:
                if i + 1 < n and text[i + 1] == q:
                    buf.append(q)
                    i += 2
                    continue
                return i + 1
            i = self._read_char(text, i, buf)

    def _read_unquoted(self, text: str, i: int, buf: list[str]) -> int:
        """Text from `i` into `buf` up to the delimiter or a line break; the offset there."""
        sep, n = self.delimiter, len(text)
        while i < n and text[i] != sep and text[i] not in "\r\n":
            i = self._read_char(text, i, buf)
        return i

    def _read_char(self, text: str, i: int, buf: list[str]) -> int:
        """The character at `i` into `buf`, or the one the escape character there stands for;
        the offset after it."""
        if text[i] == self.escape and i + 1 < len(text):
            buf.append(_unescape(text[i + 1]))
            return i + 2
        buf.append(text[i])
        return i + 1

    def _parse_cell(self, t: DataType, text: str) -> Any:
        if self.null_literal is not None and text == self.null_literal:
            return None
        if isinstance(t, RowType):
            if text == "" and t.nullable:  # how a null ROW is written without a null literal
                return None
            parts = text.split(self.array_delimiter)
            if len(parts) != len(t.fields):
                raise ValueError(
                    f"the nested row has {len(parts)} fields separated by "
                    f"{self.array_delimiter!r}, the type has {len(t.fields)}")
            out: dict[str, Any] = {}
            for f, e in zip(t.fields, parts, strict=True):
                if self.null_literal is not None and e == self.null_literal:
                    out[f.name] = None
                    continue
                try:
                    out[f.name] = self._parse_element(f.type, e)
                except (ValueError, ArithmeticError, binascii.Error) as exc:
                    raise ValueError(f"nested field '{f.name}': {exc}") from None
            return out
        if isinstance(t, ArrayType):
            if text == "":  # only an empty cell is an empty array; " " is [" "]
                return []
            return [
                None if self.null_literal is not None and e == self.null_literal
                else self._parse_element(t.element, e)
                for e in text.split(self.array_delimiter)
            ]
        return self._parse_element(t, text)

    def _parse_element(self, t: DataType, text: str) -> Any:
        """CsvToRowDataConverters: Java's parse methods, strict, numbers trimmed."""
        if isinstance(t, StringType):
            return text
        if isinstance(t, BooleanType):
            return _parse_boolean(text)
        if isinstance(t, IntegralType):
            return _parse_integer(t, text)
        if isinstance(t, (FloatType, DoubleType)):
            return _parse_float(t, text)
        if isinstance(t, DecimalType):
            return _parse_decimal(t, text)
        if isinstance(t, DateType):
            return _parse_date(text)
        if isinstance(t, TimeType):
            return _parse_time(t, text)
        if isinstance(t, TimestampType):
            date, time, _ = javatext.parse_temporal(text.strip(), "sql")
            assert date is not None and time is not None
            return dt.datetime.combine(date, time)
        if isinstance(t, TimestampLtzType):
            date, time, _ = javatext.parse_temporal(text.strip(), "sql_ltz")
            assert date is not None and time is not None
            return dt.datetime.combine(date, time, tzinfo=dt.timezone.utc)
        if isinstance(t, BytesType):
            return base64.b64decode(text, validate=True)
        raise ValueError(f"unsupported type {t.sql()}")


# --- one value's text, as Jackson writes it ----------------------------------------------------


def _string_text(t: StringType, v: Any) -> str:
    if not isinstance(v, str):
        raise _bad(t, v)
    why = lone_surrogate(v)
    if why is not None:
        raise EncodeError(f"{v!r} {why}")
    return v


def _boolean_text(t: BooleanType, v: Any) -> str:
    if not isinstance(v, bool):
        raise _bad(t, v)
    return "true" if v else "false"


def _integer_text(t: IntegralType, v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(t, v)
    if not t.min_value <= v <= t.max_value:
        raise EncodeError(f"{v} is out of range for {t.sql()}")
    return str(v)


def _float_text(t: FloatType | DoubleType, v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _bad(t, v)
    if isinstance(v, int) and not -2**1023 < v < 2**1024:
        raise EncodeError(f"{v} is out of range for {t.sql()}")
    if isinstance(t, FloatType):
        if not javatext.float32_fits(float(v)):
            raise EncodeError(f"{v!r} is out of range for FLOAT")
        return javatext.float_to_string(float(v))
    return javatext.double_to_string(float(v))


def _decimal_text(t: DecimalType, v: Any, *, scientific: bool) -> str:
    d = _to_decimal(t, v)
    if scientific:
        return javatext.bigdecimal_to_string(javatext.bigdecimal_strip_trailing_zeros(d))
    return javatext.bigdecimal_to_plain_string(d)


def _date_text(t: DateType, v: Any) -> str:
    if not isinstance(v, dt.date) or isinstance(v, dt.datetime):
        raise _bad(t, v)
    return javatext.format_date(v)


def _time_text(t: TimeType, v: Any) -> str:
    if not isinstance(v, dt.time):
        raise _bad(t, v)
    # Flink holds TIME as milliseconds of the day.
    millis = _truncate(v.microsecond // 1000, 3, min(t.precision, 3))
    return javatext.format_sql_time(v, millis * 1_000_000)


def _timestamp_text(t: TimestampType, v: Any) -> str:
    if not isinstance(v, dt.datetime) or v.tzinfo is not None:
        raise _bad(t, v, "a naive datetime")
    return javatext.format_sql_timestamp(v, _micros_to_nanos(v, t.precision))


def _timestamp_ltz_text(t: TimestampLtzType, v: Any) -> str:
    if not isinstance(v, dt.datetime):
        raise _bad(t, v)
    try:
        utc = v if v.tzinfo is None else v.astimezone(dt.timezone.utc)
    except OverflowError:
        raise EncodeError(f"{v!r} is outside years 1..9999 in UTC") from None
    return javatext.format_sql_timestamp(utc, _micros_to_nanos(utc, t.precision)) + "Z"


def _bytes_text(t: BytesType, v: Any) -> str:
    if not isinstance(v, (bytes, bytearray, memoryview)):
        raise _bad(t, v)
    return base64.b64encode(bytes(v)).decode("ascii")


# --- one value read back, as Java's parse methods read it -------------------------------------


def _parse_boolean(text: str) -> bool:
    # Boolean.parseBoolean reads anything but "true" as false: keyguard refuses to guess.
    low = text.strip().lower()
    if low not in ("true", "false"):
        raise ValueError("expected true or false")
    return low == "true"


def _parse_integer(t: IntegralType, text: str) -> int:
    s = text.strip()
    if not _INT_RE.match(s):
        raise ValueError(f"not an integer (For input string: {s!r})")
    v = int(s)
    if not t.min_value <= v <= t.max_value:
        raise ValueError(f"{v} is out of range for {t.sql()}")
    return v


def _parse_float(t: FloatType | DoubleType, text: str) -> float:
    s = text.strip()
    if not _FLOAT_RE.match(s):
        raise ValueError("not a number")
    x = float(s.rstrip("fFdD").replace("Infinity", "inf"))
    x = _float32(x) if isinstance(t, FloatType) else x
    if math.isinf(x) and "Infinity" not in s:
        raise ValueError(f"{s} overflows {t.sql_name}; write Infinity to mean infinity")
    return x


def _parse_decimal(t: DecimalType, text: str) -> Decimal:
    if not _DECIMAL_RE.match(text):
        raise ValueError("not a decimal number")
    fitted = _fit_decimal(t, Decimal(text))  # Flink reads a null: keyguard refuses
    if fitted is None:
        raise ValueError(f"needs more than {t.precision} digits")
    return fitted


def _parse_date(text: str) -> dt.date:
    m = _SQL_DATE_RE.match(text)  # java.sql.Date.valueOf
    if not m:
        raise ValueError("expected yyyy-[m]m-[d]d")
    return dt.date(int(m[1]), int(m[2]), int(m[3]))


def _parse_time(t: TimeType, text: str) -> dt.time:
    m = _LOCAL_TIME_RE.match(text)  # LocalTime.parse, then truncated to the precision
    if not m:
        raise ValueError("expected HH:mm[:ss[.fraction]]")
    millis = _truncate(int((m[4] or "0").ljust(9, "0")[:3]), 3, t.precision)
    return dt.time(int(m[1]), int(m[2]), int(m[3] or 0), millis * 1000)


def _float32(v: float) -> float:
    """Java's Float.parseFloat result as a Python float (overflow gives infinity)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", v))[0])
    except OverflowError:
        return math.copysign(math.inf, v)


def _unescape(c: str) -> str:
    """Jackson CsvDecoder._unescape: \\0, \\n, \\r, \\t; any other character stands for itself."""
    return {"0": "\0", "n": "\n", "r": "\r", "t": "\t"}.get(c, c)


def _bad(t: DataType, v: Any, expected: str | None = None) -> EncodeError:
    return EncodeError(
        f"expected {expected or 'a value of type ' + t.sql()}, got {type(v).__name__} {v!r}"
    )


def _truncate(value: int, digits: int, precision: int) -> int:
    """Drop fractional digits beyond `precision` from a `digits`-digit fraction."""
    step = 10 ** max(digits - precision, 0)
    return value // step * step


def _micros_to_nanos(v: dt.datetime, precision: int) -> int:
    return _truncate(v.microsecond, 6, precision) * 1000


def _fit_decimal(t: DecimalType, d: Decimal) -> Decimal | None:
    """DecimalData.fromBigDecimal: HALF_UP to the scale; None when the digits do not fit."""
    if d != 0 and d.adjusted() > t.precision - t.scale:  # too wide before rounding, too
        return None
    q = d.quantize(Decimal(1).scaleb(-t.scale), rounding=ROUND_HALF_UP,
                   context=_WIDE)
    if q != 0 and q.adjusted() + 1 > t.precision - t.scale:
        return None
    return q


def _to_decimal(t: DecimalType, v: Any) -> Decimal:
    if isinstance(v, bool) or not isinstance(v, (Decimal, int)):
        raise _bad(t, v, "a decimal.Decimal")
    try:
        d = Decimal(v)
    except (ValueError, InvalidOperation) as exc:
        raise EncodeError(str(exc)) from None
    if not d.is_finite():
        raise EncodeError(f"{v} is not a finite number")
    fitted = _fit_decimal(t, d)
    if fitted is None:
        raise EncodeError(f"{v} does not fit {t.sql()}", hint="round or widen the DECIMAL column")
    return fitted


def _build(row_type: RowType, options: ResolvedOptions, context: CodecContext) -> Codec:
    return CsvCodec(row_type, options, context)


FACTORY = register_format(
    FormatFactory(
        name=FORMAT,
        options=OPTIONS,
        build=_build,
        key_family="csv",
        summary="One line of delimited text per record, quoted as Jackson quotes it, like "
        "Flink's 'csv'.",
    )
)
