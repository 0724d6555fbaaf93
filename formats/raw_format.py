"""Flink's `raw` format: one column as its bare bytes, byte-identical to Flink's.

Mirrors `RawFormatSerializationSchema` / `RawFormatDeserializationSchema` / `RawFormatFactory`
(flink-table-runtime, package `org.apache.flink.formats.raw`):

- exactly one physical column, of type STRING (encoded in `charset`), BYTES (as is), BOOLEAN
  (one byte, 1 or 0), TINYINT (one byte), SMALLINT / INT / BIGINT (2 / 4 / 8 bytes two's
  complement), FLOAT / DOUBLE (IEEE 754, 4 / 8 bytes); numbers in `endianness` byte order;
- Flink writes a null column as a null record (no bytes at all). In an upsert topic a null
  value record is a tombstone, so keyguard refuses to write one by accident (EncodeError);
- decoding checks the exact width of fixed-size types, as Flink's `DataLengthValidator` does.
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Mapping
from typing import Any

from keyguard.formats.codec import Codec, CodecContext, FormatFactory, register_format
from keyguard.formats.errors import (
    DecodeError,
    EncodeError,
    InvalidOptionError,
    UnsupportedTypeError,
)
from keyguard.formats.options import Option, OptionEnum, OptionSet, ResolvedOptions, enum_option
from keyguard.formats.types import (
    BigIntType,
    BooleanType,
    BytesType,
    DataType,
    DoubleType,
    FloatType,
    IntegralType,
    IntType,
    RowType,
    SmallIntType,
    StringType,
    TinyIntType,
)
from keyguard.formats.values import lone_surrogate

FORMAT = "raw"


class Endianness(OptionEnum):
    BIG = "big-endian"
    LITTLE = "little-endian"


BIG_ENDIAN = Endianness.BIG
LITTLE_ENDIAN = Endianness.LITTLE

CHARSET: Option[str] = Option(
    "charset", str, "UTF-8",
    "Charset of a STRING column (a Java charset name, e.g. UTF-8, UTF-16LE, ISO-8859-1).")
ENDIANNESS: Option[Endianness] = enum_option(
    "endianness", Endianness, BIG_ENDIAN,
    "Byte order of SMALLINT, INT, BIGINT, FLOAT and DOUBLE columns.")

OPTIONS = OptionSet(FORMAT, (CHARSET, ENDIANNESS))

# struct codes and widths of the fixed-size types, as Flink's MemorySegment writes them.
_FIXED: dict[type[DataType], tuple[str, int]] = {
    TinyIntType: ("b", 1),
    SmallIntType: ("h", 2),
    IntType: ("i", 4),
    BigIntType: ("q", 8),
    FloatType: ("f", 4),
    DoubleType: ("d", 8),
}
SUPPORTED: tuple[type[DataType], ...] = (StringType, BytesType, BooleanType, *_FIXED)


class JavaCharset:
    """A Java charset name with Java's encode/decode behaviour where Python's differs.

    Java's `UTF-16` writes a big-endian BOM (Python's writes the platform's order) and Java's
    `UTF-32` writes big-endian without a BOM; unmappable characters become the charset's
    replacement (`?`) and malformed input U+FFFD, as `String.getBytes` / `new String` do.
    """

    def __init__(self, name: str):
        self.name = name
        try:
            self._python = codecs.lookup(name).name
        except LookupError:
            raise InvalidOptionError(
                f"raw format: unsupported 'charset' name {name!r}",
                hint="use a Java charset name such as UTF-8, UTF-16BE, UTF-16LE, ISO-8859-1, "
                "US-ASCII",
            ) from None

    def encode(self, text: str) -> bytes:
        if self._python == "utf-16":
            return codecs.BOM_UTF16_BE + text.encode("utf-16-be", errors="replace")
        if self._python == "utf-32":
            return text.encode("utf-32-be", errors="replace")
        return text.encode(self._python, errors="replace")

    def decode(self, data: bytes) -> str:
        """The text in `data`; malformed input raises UnicodeDecodeError.

        Java's `new String` reads malformed bytes as U+FFFD: no writer of this charset made
        them, so keyguard reports them instead of reading a different string.
        """
        if self._python in ("utf-16", "utf-32"):
            width = 2 if self._python == "utf-16" else 4
            bom_be = codecs.BOM_UTF16_BE if width == 2 else codecs.BOM_UTF32_BE
            bom_le = codecs.BOM_UTF16_LE if width == 2 else codecs.BOM_UTF32_LE
            if data.startswith(bom_be):
                return data[width:].decode(f"{self._python}-be")
            if data.startswith(bom_le):
                return data[width:].decode(f"{self._python}-le")
            return data.decode(f"{self._python}-be")
        return data.decode(self._python)


def check_row_type(row_type: RowType, *, role: str = "value") -> DataType:
    """The single column's type; anything else is the plan-time error Flink's factory raises."""
    if len(row_type) != 1:
        cols = ", ".join(f.sql() for f in row_type.fields) or "(none)"
        raise UnsupportedTypeError(
            f"{role} format 'raw' supports exactly one column, got {len(row_type)}: {cols}",
            hint="use 'json', 'csv' or 'avro' for several columns, or project the "
            f"{role} to one column (value.fields-include=EXCEPT_KEY for a one-column value)",
        )
    field = row_type.fields[0]
    if not isinstance(field.type, SUPPORTED):
        raise UnsupportedTypeError(
            f"{role} format 'raw' does not support column '{field.name}' of type "
            f"{field.type.sql()}",
            hint="raw supports STRING, BYTES, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT "
            "and DOUBLE; use 'json', 'csv' or 'avro' for other types",
        )
    return field.type


class RawCodec(Codec):
    format_name = FORMAT

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        super().__init__(row_type, options, context)
        self.column = row_type.fields[0].name
        self.type = check_row_type(row_type, role=context.role)
        self.charset = JavaCharset(options[CHARSET])
        order = ">" if options[ENDIANNESS] == BIG_ENDIAN else "<"
        fixed = _FIXED.get(type(self.type))
        self._struct = struct.Struct(order + fixed[0]) if fixed else None

    def _where(self) -> str:
        return f"{self.context.role} column '{self.column}' (raw format)"

    def encode(self, row: Mapping[str, Any]) -> bytes:
        v = row.get(self.column)
        t = self.type
        if v is None:
            raise EncodeError(
                f"{self._where()} is null: Flink's raw format writes a null record, which in an "
                "upsert topic is a tombstone that deletes the key",
                hint="fill the null, or use a format that can carry nulls (json, csv, avro)",
            )
        if isinstance(t, StringType):
            if not isinstance(v, str):
                raise self._bad(v)
            why = lone_surrogate(v)
            if why is not None:  # Java would write '?' in its place
                raise EncodeError(f"{self._where()}: {v!r} {why}")
            return self.charset.encode(v)
        if isinstance(t, BytesType):
            if not isinstance(v, (bytes, bytearray, memoryview)):
                raise self._bad(v)
            return bytes(v)
        if isinstance(t, BooleanType):
            if not isinstance(v, bool):
                raise self._bad(v)
            return b"\x01" if v else b"\x00"
        assert self._struct is not None
        if isinstance(t, IntegralType):
            if isinstance(v, bool) or not isinstance(v, int):
                raise self._bad(v)
            if not t.min_value <= v <= t.max_value:
                raise EncodeError(
                    f"{self._where()}: {v} is out of range for {t.sql()} "
                    f"({t.min_value}..{t.max_value})"
                )
            return self._struct.pack(v)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self._bad(v)
        try:
            return self._struct.pack(float(v))
        except (OverflowError, struct.error):
            raise EncodeError(f"{self._where()}: {v!r} is out of range for {t.sql()}") from None

    def _bad(self, v: Any) -> EncodeError:
        return EncodeError(
            f"{self._where()}: expected a value of type {self.type.sql()}, "
            f"got {type(v).__name__} {v!r}"
        )

    def decode(self, data: bytes) -> dict[str, Any]:
        t = self.type
        if isinstance(t, StringType):
            try:
                return {self.column: self.charset.decode(bytes(data))}
            except UnicodeDecodeError as exc:
                raise DecodeError(
                    f"{self._where()}: the bytes are not valid {self.charset.name}: "
                    f"{exc.reason} at byte offset {exc.start}",
                    hint="check the topic's format and the raw.charset option",
                ) from None
        if isinstance(t, BytesType):
            return {self.column: bytes(data)}
        width = 1 if isinstance(t, BooleanType) else _FIXED[type(t)][1]
        if len(data) != width:
            raise DecodeError(
                f"{self._where()}: a {t.sql_name} needs exactly {width} "
                f"byte{'s' if width > 1 else ''}, got {len(data)}",
                hint="check the topic's format and the column type",
            )
        if isinstance(t, BooleanType):
            return {self.column: data[0] != 0}
        assert self._struct is not None
        return {self.column: self._struct.unpack(data)[0]}


def _build(row_type: RowType, options: ResolvedOptions, context: CodecContext) -> Codec:
    return RawCodec(row_type, options, context)


FACTORY = register_format(
    FormatFactory(
        name=FORMAT,
        options=OPTIONS,
        build=_build,
        key_family="raw",
        summary="One column as its bare bytes (STRING in a charset, numbers in a byte order), "
        "like Flink's 'raw'.",
    )
)
