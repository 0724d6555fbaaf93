"""Flink's `csv` format, byte-identical: one line per record, written the way Jackson writes it.

Longer than 800 lines: each type's text is written and read back here side by side (Jackson's
writer, then Flink's reader with Jackson's parser and Java's parsing of each type), so that a
change to one side of a type is made beside the other.

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

Decoding follows Flink's `CsvRowDataDeserializationSchema` (checked against its answers in
tests/formats/data/flink_golden/golden_read.jsonl): Jackson's bootstrapper picks the encoding
(BOM, NUL bytes), its CsvParser splits the first record (one blank trailing field allowed, more
fields fail the record), ARRAY and ROW fields are split on the array delimiter before the null
literal is compared (so per element), and `CsvToRowDataConverters` converts each value with
Java's parse methods (`Boolean.parseBoolean`, `Date.valueOf`, DecimalData's null when too wide).
With ignore-parse-errors a value that does not convert is null and a record Jackson cannot read
is skipped (`decode` returns None); without it both fail.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import datetime as dt
import math
import re
import struct
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from keyguard.formats import flink_casts, javatext
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
    "Reading: fields that do not parse become null, and records that do not parse are "
    "skipped, instead of failing.")
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
#: Flink's csv reader refuses TIME with a higher precision (CsvRowDataDeserializationSchema's
#: builder: "Csv does not support TIME type with precision: 6, it only supports precision
#: 0 ~ 3."); its writer writes any (the milliseconds Flink holds).
MAX_TIME_PRECISION = 3

_WIDE = Context(prec=1000)
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


def _cells_types(t: DataType) -> tuple[DataType, ...]:
    """The types a column's text holds: its own, its ARRAY's element or its ROW's fields."""
    if isinstance(t, ArrayType):
        return (t.element,)
    if isinstance(t, RowType):
        return tuple(x.type for x in t.fields)
    return (t,)


def check_row_type(row_type: RowType, *, role: str = "value") -> None:
    """Plan-time check: atomic columns, and ARRAYs and ROWs of atomic values (Flink's rule)."""
    for f in row_type.fields:
        where = f"{role} format 'csv': column '{f.name}' of type {f.type.sql()}"
        inner = _cells_types(f.type)
        for t in inner:
            if not isinstance(t, ATOMIC_TYPES):
                what = "arrays and nested rows hold" if inner != (f.type,) else "has no maps:"
                raise UnsupportedTypeError(
                    f"{where} is not supported: csv {what} atomic values only "
                    "(Flink: only simple types in the second level of nesting)",
                    hint="use 'json' or 'avro' for maps and deeper nesting, or flatten the "
                    "column",
                )


def _unreadable_time(row_type: RowType) -> tuple[str, TimeType] | None:
    """The first column (or its ARRAY element or ROW field) of a TIME precision Flink's csv
    reader refuses, with its column's name."""
    for f in row_type.fields:
        for t in _cells_types(f.type):
            if isinstance(t, TimeType) and t.precision > MAX_TIME_PRECISION:
                return f.name, t
    return None


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
        self._unreadable_time = _unreadable_time(row_type)
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

    def decode(self, data: bytes) -> dict[str, Any] | None:
        """The row Flink's CsvRowDataDeserializationSchema reads from `data`; None when Flink
        skips the record (ignore-parse-errors and a record Jackson cannot read, or one with
        more fields than columns). A field that does not convert is null with
        ignore-parse-errors, else the record fails, as in Flink."""
        if self._unreadable_time is not None:
            name, t = self._unreadable_time
            raise UnsupportedTypeError(
                f"{self.context.role} format 'csv': column '{name}' of type {t.sql()} cannot be "
                f"read: Flink's csv reader refuses it (Csv does not support TIME type with "
                f"precision: {t.precision}, it only supports precision 0 ~ "
                f"{MAX_TIME_PRECISION}.)",
                hint="read it as TIME(3): the bytes are the same, Flink keeps TIME in "
                "milliseconds")
        try:
            cells = self._record(bytes(data))
        except DecodeError:
            if self.ignore_parse_errors:
                return None
            raise
        n = len(self.row_type)
        if len(cells) < n and not self.ignore_parse_errors:
            raise DecodeError(
                f"{self.describe()}: {len(cells)} field{'s' if len(cells) != 1 else ''}, the "
                f"row has {n} columns (Flink: Row length mismatch)",
                hint="set ignore-parse-errors=true to read missing fields as null",
            )
        out: dict[str, Any] = {}
        for i, f in enumerate(self.row_type.fields):
            if i >= len(cells):
                out[f.name] = None
                continue
            value = cells[i]
            try:
                out[f.name] = self._parse_cell(f.type, value)
            except (ValueError, ArithmeticError, binascii.Error) as exc:
                if self.ignore_parse_errors:
                    out[f.name] = None
                    continue
                raise DecodeError(
                    f"{self.context.role} column '{f.name}' (csv format): cannot read "
                    f"{value!r} as {f.type.sql()}: {exc}",
                    hint="Flink's csv reader fails on this record too; set null-literal for "
                    "nulls, or ignore-parse-errors=true to read such fields as null",
                ) from None
        return out

    def _record(self, data: bytes) -> list[str]:
        """The fields of the first record in `data`, as Jackson's CsvParser reads them with
        Flink's schema; DecodeError where Jackson fails the record."""
        text = _jackson_text(data, self.describe())
        if self.allow_comments:
            # CsvDecoder skips lines whose first non-space character is '#'.
            while text.lstrip(" ").startswith("#"):
                nl = re.search(r"\r\n?|\n", text)
                text = "" if nl is None else text[nl.end():]
        if not text:
            raise DecodeError(f"{self.describe()}: empty record (Flink: No content to map "
                              "due to end-of-input)",
                              hint="Flink fails on it, or skips it with ignore-parse-errors")
        cells = self._split(text)
        n = len(self.row_type)
        # Jackson's ALLOW_TRAILING_COMMA: one extra field that is blank is no field.
        if len(cells) == n + 1 and not _java_trim(cells[-1]):
            cells.pop()
        if len(cells) > n:
            raise DecodeError(
                f"{self.describe()}: {len(cells)} fields, the row has {n} columns",
                hint="Flink fails on this record (Too many entries), or skips it with "
                "ignore-parse-errors",
            )
        return cells

    def _split(self, text: str) -> list[str]:
        """Fields of the first record, as Jackson's CsvDecoder reads them."""
        cells: list[str] = []
        i, n = 0, len(text)
        while True:
            buf: list[str] = []
            if self.quote is not None and i < n and text[i] == self.quote:
                i = self._read_quoted(text, i + 1, buf, len(cells))
                # After the closing quote: spaces, then the delimiter or the end of the line.
                while i < n and text[i] in " \t" and text[i] != self.delimiter:
                    i += 1
                if i < n and text[i] != self.delimiter and text[i] not in "\r\n":
                    raise DecodeError(
                        f"{self.describe()}: field {len(cells) + 1}: {text[i]!r} after a "
                        "closing quote (Flink: expected column separator character)",
                        hint="the record was not written by Flink's csv")
            else:
                i = self._read_unquoted(text, i, buf)
            cells.append("".join(buf))
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
        if text[i] == self.escape:
            if i + 1 >= len(text):
                raise DecodeError(f"{self.describe()}: the record ends in the escape character "
                                  "(Flink: Unexpected EOF in escaped character)")
            buf.append(_unescape(text[i + 1]))
            return i + 2
        buf.append(text[i])
        return i + 1

    def _parse_cell(self, t: DataType, text: str) -> Any:
        """CsvToRowDataConverters on one field. The null literal nulls an atomic field; an
        ARRAY or ROW field is split first (Jackson's array column) and it nulls elements."""
        if isinstance(t, (ArrayType, RowType)):
            elements: list[Any] = [] if not _java_trim(text) else [
                None if self.null_literal is not None and e == self.null_literal else e
                for e in text.split(self.array_delimiter)]
            if isinstance(t, ArrayType):
                return [self._nullable_element(t.element, e) for e in elements]
            if not elements:
                return None  # Flink reads a nested row of no fields as null
            if len(elements) < len(t.fields) and not self.ignore_parse_errors:
                raise ValueError(
                    f"the nested row has {len(elements)} fields separated by "
                    f"{self.array_delimiter!r}, the type has {len(t.fields)} (Flink: Row "
                    "length mismatch)")
            out: dict[str, Any] = {}
            for j, f in enumerate(t.fields):
                try:
                    out[f.name] = (self._nullable_element(f.type, elements[j])
                                   if j < len(elements) else None)
                except (ValueError, ArithmeticError, binascii.Error) as exc:
                    raise ValueError(f"nested field '{f.name}': {exc}") from None
            return out
        if self.null_literal is not None and text == self.null_literal:
            return None
        return self._parse_element(t, text)

    def _nullable_element(self, t: DataType, text: str | None) -> Any:
        """Flink's nullable converter on an element: null stays null; with
        ignore-parse-errors an element that does not convert is null."""
        if text is None:
            return None
        try:
            return self._parse_element(t, text)
        except (ValueError, ArithmeticError, binascii.Error):
            if self.ignore_parse_errors:
                return None
            raise

    def _parse_element(self, t: DataType, text: str) -> Any:
        """CsvToRowDataConverters: Java's parse methods on the text."""
        if isinstance(t, StringType):
            return text
        if isinstance(t, BooleanType):
            return _java_trim(text).lower() == "true"  # Boolean.parseBoolean
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
            return _parse_timestamp(text)
        if isinstance(t, TimestampLtzType):
            return _parse_timestamp(text, ltz=True)
        if isinstance(t, BytesType):
            return _jackson_base64(text)
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
    v = flink_casts.truncate_datetime(v, t.precision)
    return javatext.format_sql_timestamp(v, v.microsecond * 1000)


def _timestamp_ltz_text(t: TimestampLtzType, v: Any) -> str:
    if not isinstance(v, dt.datetime):
        raise _bad(t, v)
    try:
        utc = v if v.tzinfo is None else v.astimezone(dt.timezone.utc)
    except OverflowError:
        raise EncodeError(f"{v!r} is outside years 1..9999 in UTC") from None
    utc = flink_casts.truncate_datetime(utc, t.precision)
    return javatext.format_sql_timestamp(utc, utc.microsecond * 1000) + "Z"


def _bytes_text(t: BytesType, v: Any) -> str:
    if not isinstance(v, (bytes, bytearray, memoryview)):
        raise _bad(t, v)
    return base64.b64encode(bytes(v)).decode("ascii")


# --- one record's text and one value, as Jackson and Java's parse methods read them ----------


def _jackson_text(data: bytes, where: str) -> str:
    """The text Jackson's CsvParserBootstrapper reads from `data`: a BOM (UTF-8, UTF-16,
    UTF-32) is dropped, and NUL bytes among the first four select UTF-16 or UTF-32 (so
    `k\\x00` is the UTF-16LE text `k`); otherwise UTF-8, where a bad byte fails the record."""
    head = data[:4]
    enc = "utf-8"
    if len(head) == 4:
        quad = int.from_bytes(head, "big")
        if quad == 0x0000FEFF:
            enc, data = "utf-32-be", data[4:]
        elif quad == 0xFFFE0000:
            enc, data = "utf-32-le", data[4:]
        elif quad in (0x0000FFFE, 0xFEFF0000):
            raise DecodeError(f"{where}: record starts with an unsupported UCS-4 byte order mark")
        elif quad >> 16 == 0xFEFF:
            enc, data = "utf-16-be", data[2:]
        elif quad >> 16 == 0xFFFE:
            enc, data = "utf-16-le", data[2:]
        elif quad >> 8 == 0xEFBBBF:
            data = data[3:]
        elif quad >> 8 == 0:
            enc = "utf-32-be"
        elif quad & 0x00FFFFFF == 0:
            enc = "utf-32-le"
        elif quad & ~0x00FF0000 & 0xFFFFFFFF == 0 or quad & ~0x0000FF00 & 0xFFFFFFFF == 0:
            raise DecodeError(f"{where}: record looks like UCS-4 in an unsupported byte order")
        elif head[0] == 0:
            enc = "utf-16-be"
        elif head[1] == 0:
            enc = "utf-16-le"
    elif len(head) >= 2 and head[0] == 0:
        enc = "utf-16-be"
    elif len(head) >= 2 and head[1] == 0:
        enc = "utf-16-le"
    try:
        # Java's InputStreamReader replaces bad UTF-16; Jackson's own readers fail.
        return data.decode(enc, errors="replace" if enc.startswith("utf-16") else "strict")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"{where}: record is not {enc.upper()}: {exc}") from None


_JAVA_BLANKS = "".join(map(chr, range(33)))


def _java_trim(text: str) -> str:
    """String.trim: drops characters up to U+0020 at both ends (not other spaces)."""
    return text.strip(_JAVA_BLANKS)


_JAVA_INT_RE = re.compile(r"[+-]?\d+\Z")  # Integer.parseInt: any Unicode decimal digit
_JAVA_FLOAT_RE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)\Z")
_BIGDECIMAL_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_JAVA_DATE_PART = re.compile(r"[+-]?\d+\Z")
_SQL_TIMESTAMP_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{0,9}))?\Z")
_BASE64 = {c: i for i, c in enumerate(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


def _parse_integer(t: IntegralType, text: str) -> int:
    s = _java_trim(text)
    if not _JAVA_INT_RE.match(s):
        raise ValueError(f"not an integer (For input string: {s!r})")
    v = int(s)
    if not t.min_value <= v <= t.max_value:
        raise ValueError(f"{v} is out of range for {t.sql()}")
    return v


def _parse_float(t: FloatType | DoubleType, text: str) -> float:
    """Double.parseDouble / Float.parseFloat: decimal or hex, too large is infinity."""
    s = _java_trim(text)
    m = _JAVA_FLOAT_RE.match(s)
    if not m:
        raise ValueError(f"not a number (For input string: {s!r})")
    if m["hex"]:
        sign = -1.0 if s.startswith("-") else 1.0
        try:
            x = sign * float.fromhex(m["hex"])
        except OverflowError:
            x = sign * math.inf
        return _float32(x) if isinstance(t, FloatType) else x
    body = s.rstrip("fFdD")
    x = float(body.replace("Infinity", "inf"))
    if not isinstance(t, FloatType):
        return x
    f = _float32(x)
    if f == x or not math.isfinite(f):
        return f
    # Float.parseFloat rounds the decimal once: where the double lies exactly halfway between
    # two floats, the exact decimal decides (rounding through the double would tie to even).
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    other = struct.unpack("<f", struct.pack("<I", bits + 1 if abs(x) > abs(f) else bits - 1))[0]
    if x * 2 != f + other:
        return f
    exact = Fraction(Decimal(body))
    if exact == Fraction(x):
        return f
    return float(other) if (exact > Fraction(x)) == (other > f) else f


def _parse_decimal(t: DecimalType, text: str) -> Decimal | None:
    """new BigDecimal(text) (untrimmed), then DecimalData.fromBigDecimal: HALF_UP to the
    scale, and null (not an error) when the digits do not fit the precision."""
    if not _BIGDECIMAL_RE.match(text):
        raise ValueError("not a decimal number")
    fitted = _fit_decimal(t, Decimal(text))
    return None if fitted is None else fitted.copy_abs() if fitted == 0 else fitted


def _parse_date(text: str) -> dt.date:
    """java.sql.Date.valueOf(text).toLocalDate(): yyyy-[m]m-[d]d, a day past the month's end
    rolls into the next month (2024-02-30 is 2024-03-01); Julian months before 1582."""
    first = text.find("-")
    second = text.find("-", first + 1)
    n = len(text)
    if not (first == 4 and second > 0 and 1 < second - first <= 3 and 1 < n - second <= 3):
        raise ValueError("expected yyyy-[m]m-[d]d")
    parts = (text[:first], text[first + 1:second], text[second + 1:])
    if not all(_JAVA_DATE_PART.match(x) for x in parts):
        raise ValueError("expected yyyy-[m]m-[d]d")
    year, month, day = (int(x) for x in parts)
    if not (1 <= month <= 12 and 1 <= day <= 31) or year < 1:
        raise ValueError("expected yyyy-[m]m-[d]d")
    julian = year < 1582 or (year == 1582 and month < 10)
    leap = year % 4 == 0 and (julian or year % 100 != 0 or year % 400 == 0)
    length = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    if day > length:
        day -= length
        month, year = (1, year + 1) if month == 12 else (month + 1, year)
    return dt.date(year, month, day)  # LocalDate.of: Julian-only Feb 29 fails, as in Java


def _parse_time(t: TimeType, text: str) -> dt.time:
    m = _LOCAL_TIME_RE.match(text)  # LocalTime.parse, then truncated to the precision
    if not m:
        raise ValueError("expected HH:mm[:ss[.fraction]]")
    millis = _truncate(int((m[4] or "0").ljust(9, "0")[:3]), 3, t.precision)
    return dt.time(int(m[1]), int(m[2]), int(m[3] or 0), millis * 1000)


def _parse_timestamp(text: str, *, ltz: bool = False) -> dt.datetime:
    """Flink's SQL timestamp format (with a literal Z for TIMESTAMP_LTZ, in UTC), trimmed,
    resolved as java.time's SMART resolver does: a day past the month's end is its last day,
    24:00:00 is the next midnight."""
    trimmed = _java_trim(text)
    if ltz and not trimmed.endswith("Z"):
        raise ValueError("expected yyyy-MM-dd HH:mm:ss[.fraction]Z")
    m = _SQL_TIMESTAMP_RE.match(trimmed[:-1] if ltz else trimmed)
    if not m:
        raise ValueError("expected yyyy-MM-dd HH:mm:ss[.fraction]" + ("Z" if ltz else ""))
    return _smart_timestamp(m).replace(tzinfo=dt.timezone.utc if ltz else None)


def _smart_timestamp(m: re.Match[str]) -> dt.datetime:
    year, month, day, hour, minute, second = (int(x) for x in m.groups()[:6])
    nanos = int((m[7] or "0").ljust(9, "0"))
    if not (1 <= month <= 12 and 1 <= day <= 31 and minute < 60 and second < 60):
        raise ValueError("a field is out of range")
    day = min(day, calendar.monthrange(year, month)[1])  # 9999-12 has no next month
    if hour == 24 and minute == second == nanos == 0:
        return dt.datetime(year, month, day) + dt.timedelta(days=1)
    if hour > 23:
        raise ValueError("hour out of range")
    return dt.datetime(year, month, day, hour, minute, second, nanos // 1000)


def _jackson_base64(text: str) -> bytes:
    """TextNode.binaryValue: Jackson's MIME-NO-LINEFEEDS Base64, padding required, blanks
    allowed between 4-character groups only."""
    s = _java_trim(text)
    out = bytearray()
    i, n = 0, len(s)
    while True:
        while i < n and s[i] <= " ":
            i += 1
        if i >= n:
            return bytes(out)
        quad = s[i:i + 4]
        if len(quad) < 4:
            raise binascii.Error("broken Base64: unexpected end (padding is required)")
        bits = [_BASE64.get(c, -1) for c in quad]
        if bits[0] < 0 or bits[1] < 0:
            raise binascii.Error(f"broken Base64: illegal character {quad!r}")
        if quad[2] == "=":
            if quad[3] != "=":
                raise binascii.Error("broken Base64: expected padding character '='")
            out.append(((bits[0] << 6 | bits[1]) >> 4) & 0xFF)
        elif bits[2] < 0:
            raise binascii.Error(f"broken Base64: illegal character {quad[2]!r}")
        elif quad[3] == "=":
            out += (((bits[0] << 12 | bits[1] << 6 | bits[2]) >> 2) & 0xFFFF).to_bytes(2, "big")
        elif bits[3] < 0:
            raise binascii.Error(f"broken Base64: illegal character {quad[3]!r}")
        else:
            out += (bits[0] << 18 | bits[1] << 12 | bits[2] << 6 | bits[3]).to_bytes(3, "big")
        i += 4


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
