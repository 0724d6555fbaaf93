"""The `avro` format: schemaless binary Avro of one row, byte-equal to Flink's `avro` format.

Flink writes a Kafka record as the bare Avro binary encoding of one record (no container file,
no header) with the schema `keyguard.formats.avro_schema` derives. `AvroWriter` pairs a row type
with an Avro schema once (derived, or given and checked), compiling one small writer function per
column, fastavro-style; `encode_arrow` (in `keyguard.formats.avro_vector`) writes a whole Arrow
batch column by column with numpy and joins the columns in Arrow's C++ kernels.

Where Flink's bytes and fastavro's differ, Flink wins: DECIMAL unscaled values are written as
Java's `BigInteger.toByteArray()` (the shortest two's complement), which is one byte shorter
than fastavro's for -2^(8k-1) (fastavro writes -128 as ff80, Java as 80).
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import numbers
import operator
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keyguard.formats.avro_binary import INT32, INT64, Writer, avro_kind, null_split
from keyguard.formats.avro_schema import (
    AvroSchema,
    expand_named,
    parse_avro,
    to_avro_json,
    to_avro_schema,
)
from keyguard.formats.avro_vocab import TIMESTAMPS
from keyguard.formats.codec import (
    Codec,
    CodecContext,
    DecodedColumns,
    FormatFactory,
    register_format,
)
from keyguard.formats.errors import DecodeError, EncodeError, SchemaError
from keyguard.formats.flink_casts import truncate_micros
from keyguard.formats.framing import Headers
from keyguard.formats.options import Option, OptionSet, ResolvedOptions
from keyguard.formats.schemafile import SchemaText
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

if TYPE_CHECKING:
    import pyarrow as pa

ENCODING = Option(
    "encoding", str, "binary",
    "Avro encoding of each record: binary, or Avro's JSON encoding.",
    choices=("binary", "json"),
)
TIMESTAMP_LEGACY = Option(
    "timestamp_mapping.legacy", bool, True,
    "Flink's legacy timestamp mapping (its default): TIMESTAMP(p<=3) as timestamp-millis, no "
    "TIMESTAMP_LTZ. When false: TIMESTAMP as local-timestamp-millis/-micros/-nanos and "
    "TIMESTAMP_LTZ as timestamp-millis/-micros/-nanos, by precision.",
)
CODEC = Option(
    "codec", str, "snappy",
    "Compression codec of Avro container files (Flink's filesystem sink). Kafka records are "
    "bare Avro; accepted for option compatibility, it changes nothing here.",
)
FAST_READ = Option(
    "open.fastread", bool, False,
    "Flink's fast-read switch for Avro files; accepted for option compatibility, no effect.",
)
AVRO_OPTIONS = OptionSet("avro", (ENCODING, TIMESTAMP_LEGACY, CODEC, FAST_READ))

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_US = dt.timedelta(microseconds=1)
# Room for DECIMAL(38) and beyond; HALF_UP as Flink's DecimalData.fromBigDecimal.
_DEC = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP, Emax=10**6, Emin=-(10**6))


# --------------------------------------------------------------------------------------------
# Pairing a column type with its Avro schema
# --------------------------------------------------------------------------------------------


def _mismatch(path: str, t: DataType, s: AvroSchema) -> SchemaError:
    return SchemaError(
        f"column '{path}' of type {t.sql()} cannot be written as Avro {json.dumps(s)}",
        hint="make the Avro schema match the table, or leave the schema out to derive it",
    )


def _varint(out: bytearray, n: int) -> None:
    n = (n << 1) ^ (n >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _bad(path: str, v: Any, what: str) -> EncodeError:
    return EncodeError(f"column '{path}': {type(v).__name__} value {v!r} {what}")


def _as_int(path: str, v: Any) -> int:
    if isinstance(v, bool):
        raise _bad(path, v, "is not an integer")
    try:
        return operator.index(v)
    except TypeError:
        raise _bad(path, v, "is not an integer") from None


def _unscaled(path: str, v: Any, precision: int, scale: int) -> int:
    """The unscaled value at `scale`, rounded HALF_UP as Flink's DecimalData does."""
    if isinstance(v, bool) or not isinstance(v, (decimal.Decimal, int)):
        raise _bad(path, v, f"is not a Decimal for DECIMAL({precision}, {scale})")
    d = decimal.Decimal(v)
    if not d.is_finite():
        raise _bad(path, v, "is not a finite decimal")
    if d and d.adjusted() >= precision - scale + 1:  # 1E+400: too wide to even round
        n = 10**precision
    else:
        n = int(d.scaleb(scale, _DEC).quantize(1, context=_DEC))
    if abs(n) >= 10**precision:
        raise EncodeError(
            f"column '{path}': {v} has more than {precision - scale} integer digits, "
            f"too many for DECIMAL({precision}, {scale})",
        )
    return n


def _java_bytes(n: int) -> bytes:
    """Java's BigInteger.toByteArray(): the shortest big-endian two's complement."""
    return n.to_bytes(((n if n >= 0 else ~n).bit_length()) // 8 + 1, "big", signed=True)


#: TIMESTAMP_LTZ instants: years 1..9999 in UTC, as epoch microseconds.
_LTZ_MIN = (dt.datetime.min.replace(tzinfo=dt.timezone.utc) - _EPOCH_UTC) // _US
_LTZ_MAX = (dt.datetime.max.replace(tzinfo=dt.timezone.utc) - _EPOCH_UTC) // _US


def _epoch_micros(path: str, v: Any, aware: bool) -> int:
    if not isinstance(v, dt.datetime):
        raise _bad(path, v, "is not a datetime")
    if aware:
        if v.tzinfo is None or v.utcoffset() is None:
            raise _bad(path, v, "is naive; TIMESTAMP_LTZ takes timezone-aware datetimes")
        micros = (v - _EPOCH_UTC) // _US
        if not _LTZ_MIN <= micros <= _LTZ_MAX:
            raise _bad(path, v, "is outside years 1..9999 in UTC")
        return micros
    if v.tzinfo is not None:
        raise _bad(path, v, "is timezone-aware; TIMESTAMP takes naive datetimes "
                            "(use TIMESTAMP_LTZ for instants)")
    return (v - _EPOCH) // _US


def _compile(t: DataType, s: AvroSchema, path: str) -> Writer:
    """A writer for values of `t` as Avro `s`, nullable unions included."""
    inner_schema, null_idx, value_idx = null_split(s, path)
    inner = _compile_value(t, inner_schema, path)
    if null_idx is None:
        def not_null(out: bytearray, v: Any) -> None:
            if v is None:
                raise EncodeError(f"column '{path}' is null, but its type is NOT NULL",
                                  hint="give every NOT NULL column a value")
            inner(out, v)
        return not_null
    null_byte, value_byte = null_idx * 2, value_idx * 2  # zig-zag of small indexes

    def nullable(out: bytearray, v: Any) -> None:
        if v is None:
            out.append(null_byte)
        else:
            out.append(value_byte)
            inner(out, v)
    return nullable


def _compile_value(t: DataType, s: AvroSchema, path: str) -> Writer:
    """A writer for non-null values of `t` as the non-union Avro `s`: the first compiler below
    that takes the pair makes it."""
    kind, logical, props = avro_kind(s)
    for compiler in _VALUE_COMPILERS:
        writer = compiler(t, kind, logical, props, path)
        if writer is not None:
            return writer
    raise _mismatch(path, t, s)


# Each compiler below: (column type, Avro type name, logical type, the Avro node's properties,
# the column's path) -> a writer, or None when the pair is not its kind.

def _boolean_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                    path: str) -> Writer | None:
    if not (isinstance(t, BooleanType) and kind == "boolean"):
        return None

    def w_bool(out: bytearray, v: Any) -> None:
        if v is True or v is False or type(v).__name__ == "bool_":
            out.append(1 if v else 0)
        else:
            raise _bad(path, v, "is not a bool")
    return w_bool


def _integral_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                     path: str) -> Writer | None:
    if not (isinstance(t, IntegralType) and logical is None
            and (kind == "long" or (kind == "int" and t.bits <= 32))):
        return None
    lo, hi = t.min_value, t.max_value
    if kind == "int":
        lo, hi = max(lo, INT32[0]), min(hi, INT32[1])

    def w_int(out: bytearray, v: Any) -> None:
        if type(v) is not int:
            v = _as_int(path, v)
        if not lo <= v <= hi:
            raise EncodeError(f"column '{path}': {v} is out of range for {t.sql()} "
                              f"({lo}..{hi})")
        _varint(out, v)
    return w_int


def _floating_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                     path: str) -> Writer | None:
    if not ((isinstance(t, FloatType) and kind in ("float", "double"))
            or (isinstance(t, DoubleType) and kind == "double")):
        return None
    fmt = struct.Struct("<f" if kind == "float" else "<d").pack

    def w_float(out: bytearray, v: Any) -> None:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise _bad(path, v, "is not a float")
        try:
            out += fmt(v)
        except (OverflowError, struct.error):
            raise _bad(path, v, f"does not fit {t.sql()}") from None
    return w_float


def _string_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                   path: str) -> Writer | None:
    if not (isinstance(t, StringType) and kind == "string"):
        return None

    def w_str(out: bytearray, v: Any) -> None:
        if type(v) is not str:
            raise _bad(path, v, "is not a str")
        try:
            b = v.encode()
        except UnicodeEncodeError as exc:
            raise _bad(path, v, f"is not valid UTF-8 text: {exc.reason}") from None
        _varint(out, len(b))
        out += b
    return w_str


def _enum_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                 path: str) -> Writer | None:
    if not (isinstance(t, StringType) and kind == "enum"):
        return None
    symbols = {sym: i for i, sym in enumerate(props["symbols"])}

    def w_enum(out: bytearray, v: Any) -> None:
        if v not in symbols:
            raise _bad(path, v, f"is not a symbol of the Avro enum "
                                f"({', '.join(props['symbols'])})")
        _varint(out, symbols[v])
    return w_enum


def _bytes_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                  path: str) -> Writer | None:
    if not (isinstance(t, BytesType) and kind in ("bytes", "fixed") and logical is None):
        return None
    size = props.get("size")

    def w_bytes(out: bytearray, v: Any) -> None:
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise _bad(path, v, "is not bytes")
        if size is None:
            _varint(out, len(v))
        elif len(v) != size:
            raise _bad(path, v, f"has {len(v)} bytes; the Avro fixed type has {size}")
        out += v
    return w_bytes


def _decimal_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                    path: str) -> Writer | None:
    if not (isinstance(t, DecimalType) and kind in ("bytes", "fixed") and logical == "decimal"):
        return None
    precision, scale, size = props["precision"], props.get("scale", 0), props.get("size")

    def w_decimal(out: bytearray, v: Any) -> None:
        n = _unscaled(path, v, precision, scale)
        if size is None:
            b = _java_bytes(n)
            _varint(out, len(b))
            out += b
        else:
            out += n.to_bytes(size, "big", signed=True)
    return w_decimal


def _date_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                 path: str) -> Writer | None:
    if not (isinstance(t, DateType) and kind == "int" and logical == "date"):
        return None

    def w_date(out: bytearray, v: Any) -> None:
        if not isinstance(v, dt.date) or isinstance(v, dt.datetime):
            raise _bad(path, v, "is not a date")
        _varint(out, v.toordinal() - _EPOCH_DAY)
    return w_date


def _time_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                 path: str) -> Writer | None:
    if not (isinstance(t, TimeType)
            and (kind, logical) in (("int", "time-millis"), ("long", "time-micros"))):
        return None
    per_unit = 1000 if logical == "time-millis" else 1
    trunc = 10 ** max(0, 6 - t.precision)

    def w_time(out: bytearray, v: Any) -> None:
        if not isinstance(v, dt.time):
            raise _bad(path, v, "is not a time")
        us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        _varint(out, (us - us % trunc) // per_unit)
    return w_time


def _timestamp_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                      path: str) -> Writer | None:
    if not (isinstance(t, (TimestampType, TimestampLtzType)) and kind == "long"
            and (logical or "").replace("local-", "") in TIMESTAMPS):
        return None
    aware = isinstance(t, TimestampLtzType)
    unit = str(logical).rsplit("-", 1)[1]
    precision = t.precision

    def w_ts(out: bytearray, v: Any) -> None:
        us = truncate_micros(_epoch_micros(path, v, aware), precision)
        n = us // 1000 if unit == "millis" else us if unit == "micros" else us * 1000
        if not INT64[0] <= n <= INT64[1]:
            raise _bad(path, v, "is out of range for Avro's long")
        _varint(out, n)
    return w_ts


def _array_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                  path: str) -> Writer | None:
    if not (isinstance(t, ArrayType) and kind == "array"):
        return None
    item = _compile(t.element, props["items"], f"{path}[]")

    def w_array(out: bytearray, v: Any) -> None:
        if not isinstance(v, (list, tuple)):
            raise _bad(path, v, "is not a list")
        if v:
            _varint(out, len(v))
            for x in v:
                item(out, x)
        out.append(0)
    return w_array


def _map_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                path: str) -> Writer | None:
    if not (isinstance(t, MapType) and kind == "map" and isinstance(t.key, StringType)):
        return None
    value = _compile(t.value, props["values"], f"{path}{{value}}")
    key = _compile_value(t.key, "string", f"{path}{{key}}")

    def w_map(out: bytearray, v: Any) -> None:
        if not isinstance(v, Mapping):
            raise _bad(path, v, "is not a dict")
        if v:
            _varint(out, len(v))
            for k, x in v.items():
                if k is None:
                    raise EncodeError(f"column '{path}': a map key is null")
                key(out, k)
                value(out, x)
        out.append(0)
    return w_map


def _record_writer(t: DataType, kind: str, logical: str | None, props: Mapping[str, Any],
                   path: str) -> Writer | None:
    if not (isinstance(t, RowType) and kind in ("record", "error")):
        return None
    return _compile_record(t, props, path)


_VALUE_COMPILERS: tuple[Callable[[DataType, str, str | None, Mapping[str, Any], str],
                                 Writer | None], ...] = (
    _boolean_writer, _integral_writer, _floating_writer, _string_writer, _enum_writer,
    _bytes_writer, _decimal_writer, _date_writer, _time_writer, _timestamp_writer,
    _array_writer, _map_writer, _record_writer)


def _compile_record(t: RowType, s: Mapping[str, Any], path: str) -> Writer:
    # Flink pairs table fields and Avro fields by position; names must agree here too.
    fields = s["fields"]
    if [f["name"] for f in fields] != t.names:
        raise SchemaError(
            f"{'column ' + repr(path) + ': ' if path else ''}the Avro record's fields "
            f"({', '.join(f['name'] for f in fields)}) are not the row's "
            f"({', '.join(t.names)})",
            hint="the schema must list the same fields in the same order",
        )
    writers = [
        (f.name, _compile(f.type, af["type"], f"{path}.{f.name}" if path else f.name))
        for f, af in zip(t.fields, fields, strict=True)
    ]

    names = frozenset(t.names)

    def w_record(out: bytearray, v: Any) -> None:
        if not isinstance(v, Mapping):
            raise _bad(path or "(row)", v, "is not a dict")
        if path and not names.issuperset(v):  # a nested ROW: its value names every field
            unknown = ", ".join(sorted(map(str, set(v) - names)))
            raise _bad(path, v, f"has fields the {t.sql()} does not: {unknown}")
        for name, w in writers:
            w(out, v.get(name))
    return w_record


# --------------------------------------------------------------------------------------------
# Reading: fastavro with Avro's schema resolution, then Python values per keyguard.formats.types
# --------------------------------------------------------------------------------------------

Reader = Callable[[Any], Any]


def _identity(v: Any) -> Any:
    return v


class _OutOfType(ValueError):
    """A decoded value outside its column's type; `path` names the column."""

    def __init__(self, path: str, t: DataType, v: Any, why: str) -> None:
        shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
        super().__init__(f"column '{path or '(row)'}' ({t.sql()}): {shown} {why}")


def _reader(t: DataType, path: str = "") -> Reader:
    """Avro datum -> row value; a value outside the column's type raises _OutOfType.

    Avro's int and long carry any varint, and bytes any decimal: Flink's reader would fail or
    wrap; keyguard names the column instead of returning a value the type cannot hold.
    """
    if isinstance(t, IntegralType):
        lo, hi = t.min_value, t.max_value

        def r_int(v: Any) -> Any:
            if not lo <= v <= hi:
                raise _OutOfType(path, t, v, f"is out of range ({lo}..{hi})")
            return v
        return r_int
    if isinstance(t, TimestampType):
        def r_ts(v: Any) -> Any:
            if isinstance(v, int):  # timestamp-nanos: fastavro leaves it a long
                return _EPOCH + dt.timedelta(microseconds=v // 1000)
            return v.astimezone(dt.timezone.utc).replace(tzinfo=None) if v.tzinfo else v
        return r_ts
    if isinstance(t, TimestampLtzType):
        def r_ltz(v: Any) -> Any:
            if isinstance(v, int):
                return _EPOCH_UTC + dt.timedelta(microseconds=v // 1000)
            return v.replace(tzinfo=dt.timezone.utc) if v.tzinfo is None else \
                v.astimezone(dt.timezone.utc)
        return r_ltz
    if isinstance(t, DecimalType):
        q = decimal.Decimal(1).scaleb(-t.scale)
        limit = decimal.Decimal(10) ** (t.precision - t.scale)

        def r_decimal(v: Any) -> Any:
            if not isinstance(v, decimal.Decimal) or not v.is_finite() or (
                    v and v.adjusted() >= t.precision - t.scale + 1):
                raise _OutOfType(path, t, v, f"needs more than {t.precision} digits")
            out = v.quantize(q, context=_DEC)
            if out.copy_abs() >= limit:
                raise _OutOfType(path, t, v, f"needs more than {t.precision} digits")
            return out
        return r_decimal
    if isinstance(t, TimeType):
        def r_time(v: Any) -> Any:
            if not isinstance(v, int):
                return v
            if not 0 <= v < 86_400_000:
                raise _OutOfType(path, t, v, "is not a time of day in milliseconds "
                                 "(0..86399999)")
            return (dt.datetime.combine(_EPOCH, dt.time()) + dt.timedelta(milliseconds=v)).time()
        return r_time
    if isinstance(t, ArrayType):
        item = _nullable_reader(t.element, f"{path}[]")
        return lambda v: [item(x) for x in v]
    if isinstance(t, MapType):
        value = _nullable_reader(t.value, f"{path}{{}}")
        return lambda v: {k: value(x) for k, x in v.items()}
    if isinstance(t, RowType):
        readers = [(f.name, _nullable_reader(f.type, f"{path}.{f.name}" if path else f.name))
                   for f in t.fields]
        return lambda v: {name: r(v.get(name)) for name, r in readers}
    if isinstance(t, BytesType):
        return lambda v: bytes(v)
    return _identity


def _nullable_reader(t: DataType, path: str) -> Reader:
    r = _reader(t, path)
    if r is _identity:
        return r
    return lambda v: None if v is None else r(v)


def _failing_field(data: bytes, writer: Any) -> str:
    """`: column 'c' at byte offset 3`, the first top-level field the bytes fail in, or ''.

    Only on the error path: decodes ever longer prefixes of the writer's record fields.
    """
    import fastavro

    if not isinstance(writer, dict) or writer.get("type") != "record":
        return ""
    fields = writer.get("fields", [])
    offset = 0
    for i, field in enumerate(fields):
        buf = io.BytesIO(data)
        try:
            prefix = fastavro.parse_schema({**writer, "fields": fields[: i + 1]},
                                           named_schemas={})
            fastavro.schemaless_reader(buf, prefix, None)
        except Exception:
            return f": column '{field.get('name')}' at byte offset {offset}"
        offset = buf.tell()
    return ""


def _json_encoder() -> Any:
    """fastavro's Avro JSON encoder, except that an empty map key is a key (it drops it)."""
    from fastavro.io.json_encoder import AvroJSONEncoder

    class _Encoder(AvroJSONEncoder):  # type: ignore[misc]
        def write_value(self, value: Any) -> None:
            if isinstance(self._current, dict) and self._key is not None:
                self._current[self._key] = value
            else:
                super().write_value(value)

    return _Encoder


def _parse(schema: AvroSchema) -> Any:
    import fastavro

    return fastavro.parse_schema(schema, named_schemas={})


# --------------------------------------------------------------------------------------------
# The row writer
# --------------------------------------------------------------------------------------------


class AvroWriter:
    """A row type paired with its Avro schema: encodes rows and batches, decodes records."""

    def __init__(self, row_type: RowType, schema: AvroSchema, *, where: str = "avro") -> None:
        self.row_type = row_type
        self.schema = parse_avro(schema)
        self.where = where
        expanded = expand_named(self.schema)
        self._write = _compile(row_type, expanded, "")
        record, null_idx, value_idx = null_split(expanded, "(row)")
        self.row_prefix = b"" if null_idx is None else bytes([value_idx * 2])
        #: (field, its Avro schema, its writer), for the column-wise batch encoder.
        self.columns = [
            (f, af["type"], _compile(f.type, af["type"], f.name))
            for f, af in zip(row_type.fields, record["fields"], strict=True)
        ]
        self._parsed = _parse(self.schema)
        self._read = _reader(row_type)
        self._writer_cache: dict[str, Any] = {}

    def encode(self, row: Mapping[str, Any]) -> bytes:
        out = bytearray()
        try:
            self._write(out, row)
        except EncodeError as exc:
            raise type(exc)(f"{self.where}: {exc.message}", hint=exc.hint) from None
        return bytes(out)

    def decode(self, data: bytes, writer_schema: AvroSchema | None = None) -> dict[str, Any]:
        """The row in `data`, resolving from `writer_schema` (default: this schema)."""
        import fastavro

        writer = self._parsed if writer_schema is None else self._parsed_writer(writer_schema)
        buf = io.BytesIO(data)
        try:
            value = fastavro.schemaless_reader(buf, writer, self._parsed)
        except Exception as exc:  # fastavro raises EOFError, ValueError, IndexError, ...
            raise DecodeError(
                f"{self.where}: not a valid Avro record of this schema"
                f"{_failing_field(data, writer)}: "
                + ("the bytes end before the record does (truncated?)"
                   if isinstance(exc, EOFError) else f"{type(exc).__name__}: {exc}"),
                hint="check that the topic holds this format and schema",
            ) from None
        if buf.tell() != len(data):
            raise DecodeError(
                f"{self.where}: {len(data) - buf.tell()} bytes left after the Avro record",
                hint="the bytes are not a record of this schema (or not this format)",
            )
        if value is None:
            raise DecodeError(f"{self.where}: the record is null")
        return self._checked_read(value)

    def _checked_read(self, value: Any) -> dict[str, Any]:
        try:
            return self._read(value)  # type: ignore[no-any-return]
        except (_OutOfType, decimal.InvalidOperation, OverflowError) as exc:
            raise DecodeError(
                f"{self.where}: {exc}",
                hint="the record was written with another schema, or the bytes are corrupt",
            ) from None

    def _parsed_writer(self, writer_schema: AvroSchema) -> Any:
        key = writer_schema if isinstance(writer_schema, str) else json.dumps(writer_schema)
        parsed = self._writer_cache.get(key)
        if parsed is None:
            parsed = self._writer_cache[key] = _parse(parse_avro(writer_schema))
        return parsed

    def encode_json(self, row: Mapping[str, Any]) -> bytes:
        """Avro's JSON encoding of one row (fastavro's encoder; after checking like encode)."""
        import fastavro
        from fastavro.json_write import json_writer

        # Same checks and errors as binary; then the datum as Avro reads it back (decimals at
        # the schema's scale, ints as ints), which fastavro's JSON encoder then writes.
        binary = self.encode(row)
        datum = fastavro.schemaless_reader(io.BytesIO(binary), self._parsed, self._parsed)
        buf = io.StringIO()
        json_writer(buf, self._parsed, [datum], encoder=_json_encoder())
        return buf.getvalue().rstrip("\n").encode()

    def decode_json(self, data: bytes) -> dict[str, Any]:
        from fastavro.json_read import json_reader

        try:
            records = list(json_reader(io.StringIO(data.decode()), self._parsed))
        except Exception as exc:
            raise DecodeError(f"{self.where}: not a valid Avro JSON record: {exc}") from None
        if len(records) != 1:
            raise DecodeError(f"{self.where}: expected one Avro JSON record, got {len(records)}")
        return self._checked_read(records[0])

    def encode_arrow(
        self, batch: pa.RecordBatch | pa.Table, prefix: bytes | Callable[[], bytes] = b""
    ) -> pa.Array:
        """Every row of `batch`, each after `prefix`, as one Arrow binary array.

        Equal to `encode` row by row; columns numpy can write are written vectorized. A
        callable prefix is asked for only once every value has been checked.
        """
        # lazy: CLI start-up (the column-wise encoder, for Arrow batches only)
        from keyguard.formats.avro_vector import encode_arrow

        return encode_arrow(self, batch, prefix)


# --------------------------------------------------------------------------------------------
# The codec and its factory
# --------------------------------------------------------------------------------------------


class AvroCodec(Codec):
    """Flink's `avro` format: bare Avro binary (or JSON) of the derived schema."""

    format_name = "avro"

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        super().__init__(row_type, options, context)
        self.avro_schema = to_avro_schema(
            row_type, legacy_timestamp_mapping=options["timestamp_mapping.legacy"]
        )
        self.writer = AvroWriter(row_type, self.avro_schema, where=self.describe())
        self.json = options["encoding"] == "json"

    def encode(self, row: Mapping[str, Any]) -> bytes:
        return self.writer.encode_json(row) if self.json else self.writer.encode(row)

    def decode(self, data: bytes) -> dict[str, Any]:
        return self.writer.decode_json(data) if self.json else self.writer.decode(data)

    def decode_batch(self, data: Sequence[bytes], *, arrow: bool = True,
                     headers: Sequence[Headers] | None = None) -> DecodedColumns:
        """`decode` of every record (the bytes alone: Avro has no frame); flat rows of numbers
        and strings column-wise (numpy)."""
        if not self.json:
            # lazy: CLI start-up (a check never decodes a batch)
            from keyguard.formats.avro_column_decoder import decoded_batch
            columns = decoded_batch(self.row_type, self.writer.schema, None, data, arrow=arrow)
            if columns is not None:
                return columns
        return super().decode_batch(data, arrow=arrow)

    def encode_batch(self, batch: pa.RecordBatch | pa.Table) -> list[bytes]:
        if self.json:
            return super().encode_batch(batch)
        return self.writer.encode_arrow(batch).to_pylist()  # type: ignore[no-any-return]

    def encode_arrow(self, batch: pa.RecordBatch | pa.Table) -> pa.Array:
        """The encoded rows as an Arrow binary array, for writers that stay in Arrow."""
        if self.json:
            import pyarrow as pa

            return pa.array(super().encode_batch(batch), pa.binary())
        return self.writer.encode_arrow(batch)

    def written_schema(self, origin: str | None = None) -> SchemaText:
        return SchemaText("AVRO", to_avro_json(self.avro_schema),
                          origin or f"the {self.context.role} ({self.format_name})")

    def __repr__(self) -> str:
        return f"AvroCodec({self.context.role}, {self.row_type.sql()})"


AVRO_FORMAT = register_format(
    FormatFactory(
        name="avro",
        options=AVRO_OPTIONS,
        build=AvroCodec,
        schema_type="AVRO", key_family="avro",
        summary="Bare Avro binary of one row per record, with the schema Flink derives",
    )
)
