"""The `protobuf` and `protobuf-registry` formats: a row as one Protobuf message.

The body is what the official protobuf runtime writes for the message (fields in number
order, proto3 defaults of implicit-presence fields not on the wire): the codec builds the
message class from the schema's descriptors (`message_factory.GetMessageClass` over a
`DescriptorPool`) and lets the runtime serialize and parse; it never writes the wire itself.

The message is the `message` option's in the `schema` option's `.proto` text, else the file's
first message; without a `schema`, the message derived from the row type
(`keyguard.formats.protobuf_schema.to_proto`, as Confluent Cloud's Flink derives one). Flink's own
`protobuf` format names a compiled Java class (`message-class-name`): here that key names the
message in the `.proto` text instead (its last `.`/`$` part when no message has the full name).

- `protobuf`: the bare message (Flink's `protobuf` format has no framing).
- `protobuf-registry`: Confluent's wire format (`keyguard.formats.framing.CONFLUENT_PROTOBUF`):
magic
  byte 0, the schema id (given from outside, as avro-confluent's: `bind_schema_id`), the
  message index of the message in its file, then the body, byte for byte as confluent-kafka's
  `ProtobufSerializer`. Reading fetches the writer's schema by id and finds the writer's
  message by the record's index; columns are matched to the writer's fields by name.

Columns are matched to fields by name; a column type and a field type must agree (an enum
field is a STRING column, by value name, or an integer column, by number, as in Flink; a
nullable scalar may be a wrapper; a ROW may be any message, google.protobuf.Timestamp as
Flink's `ROW<seconds BIGINT, nanos INT>`). A null column leaves its field unset. A null inside
an array or map: `protobuf` writes the type's default as Flink's serializer does
(`write-null-string-literal` for strings), `protobuf-registry` refuses it (EncodeError).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from keyguard.formats.avro_confluent_format import (
    AUTO_REGISTER,
    SUBJECT,
    SUBJECT_STRATEGY,
    URL,
)
from keyguard.formats.codec import Codec, CodecContext, FormatFactory, register_format
from keyguard.formats.errors import DecodeError, EncodeError, KeyguardError, SchemaError
from keyguard.formats.flink_casts import truncate_datetime
from keyguard.formats.framing import BARE, CONFLUENT_PROTOBUF, Headers, SchemaId, named_id
from keyguard.formats.options import Option, OptionSet, ResolvedOptions, merge
from keyguard.formats.protobuf_schema import (
    ProtoSchema,
    descriptor_pool,
    find_message,
    full_message_name,
    parse_proto,
    registered_proto,
    to_proto,
)
from keyguard.formats.registry.options import REGISTRY_OPTIONS
from keyguard.formats.registry_framed import FRAMING, RegistryFramed
from keyguard.formats.schemafile import SchemaText
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

if TYPE_CHECKING:
    from keyguard.formats.registry import Registry

SCHEMA: Option[str] = Option(
    "schema", str, None,
    "The Protobuf schema to write with, as .proto text (proto3 or proto2); its message's "
    "fields must cover the row's columns by name. Default: the proto3 message derived from "
    "the row type (field numbers in column order).",
)
MESSAGE: Option[str] = Option(
    "message", str, None,
    "The message of the schema that a record is: its name (Outer.Inner for a nested one, or "
    "the full name with the package). Default: the file's first message. Flink's "
    "message-class-name is accepted (the message is taken by name from the schema, not "
    "from a Java class).",
    fallback_keys=("message-class-name",),
)
IGNORE_PARSE_ERRORS: Option[bool] = Option(
    "ignore-parse-errors", bool, False,
    "Skip a record that is not a valid message instead of failing (Flink's option).",
)
WRITE_NULL_STRING_LITERAL: Option[str] = Option(
    "write-null-string-literal", str, "",
    "The string written for a null element of an array or a null map key or value of a "
    "string field (Flink's option); other types get their default (0, false, empty bytes, "
    "the enum's first value, an empty message), as Flink's serializer writes them.",
)
PROTOBUF_OPTIONS = OptionSet(
    "protobuf", (SCHEMA, MESSAGE, IGNORE_PARSE_ERRORS, WRITE_NULL_STRING_LITERAL))
PROTOBUF_REGISTRY_OPTIONS = OptionSet(
    "protobuf-registry",
    merge((URL, SUBJECT, SCHEMA, MESSAGE, AUTO_REGISTER, SUBJECT_STRATEGY, FRAMING),
          REGISTRY_OPTIONS),
    passthrough_prefixes=("properties.",),
)

_EPOCH = dt.datetime(1970, 1, 1)
_WRAPPER_PREFIX = "google.protobuf."
_TIMESTAMP, _DATE, _TIME = "google.protobuf.Timestamp", "google.type.Date", \
    "google.type.TimeOfDay"
_DECIMAL = "confluent.type.Decimal"


class Message:
    """One compiled message of a `.proto` file: its class, and rows to and from it."""

    def __init__(self, schema: ProtoSchema, name: str | None, where: str) -> None:
        from google.protobuf import message_factory  # lazy: protobuf runtime

        _, self.index = find_message(schema, name)
        self.full_name = full_message_name(schema, self.index)
        self.pool = descriptor_pool(schema)
        self.descriptor = self.pool.FindMessageTypeByName(self.full_name)  # type: ignore
        self.cls = message_factory.GetMessageClass(self.descriptor)
        self.where = where

    # -- checking a row type against the message ------------------------------------------

    def check(self, row: RowType) -> None:
        """SchemaError naming the column when a column has no field, or one of another kind."""
        _check_row(row, self.descriptor, self.where)

    # -- rows -> bytes -----------------------------------------------------------------------

    def encode(self, row: RowType, values: Mapping[str, Any], nulls: str | None = None) -> bytes:
        """The message's bytes; `nulls`: how nulls inside containers are written (`_fill`)."""
        msg = self.cls()
        _fill(msg, row, values, "", nulls)
        return msg.SerializeToString()  # type: ignore[no-any-return]

    def decode(self, row: RowType, data: bytes) -> dict[str, Any]:
        try:
            msg = self.cls.FromString(data)
        except Exception as exc:  # the runtime raises DecodeError (its own) or others
            raise DecodeError(f"{self.where}: not a valid {self.full_name} message: {exc}",
                              hint="the record was not written with this schema") from None
        try:
            return _read(msg, row, "")
        except (ValueError, OverflowError, ArithmeticError) as exc:
            # A well-formed message whose values no row can hold: a TIME of hour 25, a DATE of
            # month 13, a timestamp past year 9999.
            raise DecodeError(f"{self.where}: a {self.full_name} message holds a value the "
                              f"row type cannot: {exc}",
                              hint="the record was not written for this table (or by a writer "
                                   "that checks its values)") from None


# --- the row type against the descriptor ------------------------------------------------------

def _field_message(fd: Any) -> str | None:
    return fd.message_type.full_name if fd.message_type is not None else None


def _is_map(fd: Any) -> bool:
    """A `map<K, V>` field (protoc's map entry)."""
    return fd.message_type is not None and fd.message_type.GetOptions().map_entry


def _is_entries(fd: Any) -> bool:
    """A map written as Confluent writes one: `repeated XEntry` of `key = 1`, `value = 2`."""
    message = fd.message_type
    return bool(fd.is_repeated and message is not None and not _is_map(fd)
                and message.name.endswith("Entry")
                and [(f.name, f.number) for f in message.fields] == [("key", 1), ("value", 2)])


def _is_repeated(fd: Any) -> bool:
    return bool(fd.is_repeated)


def _check_row(row: RowType, desc: Any, where: str) -> None:
    for col in row.fields:
        path = f"{where}: column {col.name!r}" if where else f"column {col.name!r}"
        fd = desc.fields_by_name.get(col.name)
        if fd is None:
            raise SchemaError(f"{path} has no field in message {desc.full_name} (fields: "
                              + ", ".join(f.name for f in desc.fields) + ")",
                              hint="name the columns as the message's fields, or give "
                              "another schema or message")
        _check_field(col.type, fd, path)


def _check_field(t: DataType, fd: Any, path: str) -> None:
    if isinstance(t, MapType):
        if not (_is_map(fd) or _is_entries(fd)):
            raise SchemaError(f"{path}: {t.sql()} needs a map field, {fd.name} is not one")
        entry = fd.message_type
        _check_single(t.key, entry.fields_by_name["key"], path)
        _check_single(t.value, entry.fields_by_name["value"], path)
        return
    if isinstance(t, ArrayType):
        if not _is_repeated(fd) or _is_map(fd):
            raise SchemaError(f"{path}: {t.sql()} needs a repeated field, {fd.name} is not one")
        _check_single(t.element, fd, path)
        return
    if _is_repeated(fd):
        raise SchemaError(f"{path}: {t.sql()} cannot hold repeated field {fd.name}",
                          hint="make the column an ARRAY (or MAP for a map field)")
    _check_single(t, fd, path)


_KINDS: dict[type[DataType], set[str]] = {
    StringType: {"string", "enum"}, BooleanType: {"bool"}, BytesType: {"bytes"},
    FloatType: {"float", "double"}, DoubleType: {"double", "float"},
}
_INTS = {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
         "sfixed32", "sfixed64"}
_TYPE_NAMES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64",
               7: "fixed32", 8: "bool", 9: "string", 10: "group", 11: "message", 12: "bytes",
               13: "uint32", 14: "enum", 15: "sfixed32", 16: "sfixed64", 17: "sint32",
               18: "sint64"}


def _check_single(t: DataType, fd: Any, path: str) -> None:
    kind = _TYPE_NAMES.get(fd.type, "?")
    message = _field_message(fd)
    if isinstance(t, RowType):  # any message, google.protobuf.Timestamp as Flink's
        if message is None:      # ROW<seconds BIGINT, nanos INT> included
            raise SchemaError(f"{path}: {t.sql()} needs a message field, {fd.name} is {kind}")
        _check_row(t, fd.message_type, path)
        return
    if message is not None and message.startswith(_WRAPPER_PREFIX) and message.endswith("Value"):
        fd = fd.message_type.fields_by_name["value"]
        kind, message = _TYPE_NAMES.get(fd.type, "?"), None
    wanted = {TimestampType: _TIMESTAMP, TimestampLtzType: _TIMESTAMP, DateType: _DATE,
              TimeType: _TIME, DecimalType: _DECIMAL}.get(type(t))
    if wanted is not None:
        ok = message == wanted
    elif isinstance(t, IntegralType):  # an enum by its number, as Flink maps it to INT
        ok = kind in _INTS or kind == "enum"
    else:
        ok = kind in _KINDS.get(type(t), set())
    if not ok:
        raise SchemaError(f"{path}: a {t.sql()} column cannot be field {fd.name} of type "
                          f"{message or kind}",
                          hint="change the column's type or the field's")


# --- values -> message ------------------------------------------------------------------------

def _fill(msg: Any, row: RowType, values: Mapping[str, Any], path: str,
          nulls: str | None) -> None:
    """Set the fields of `msg` from `values`; a null column leaves its field unset.

    `nulls`: None, a null inside an array or map is an EncodeError; else Flink's protobuf
    serializer's way (PbCodegenUtils#pbDefaultValueCode): the element type's default (0, false,
    empty bytes, the enum's first value, an empty message), `nulls` for a string."""
    desc = msg.DESCRIPTOR
    for col in row.fields:
        where = f"{path}.{col.name}" if path else col.name
        value = values.get(col.name)
        if value is None:
            if not col.type.nullable:
                raise EncodeError(f"column {where!r} is NOT NULL but the value is null")
            continue
        fd = desc.fields_by_name[col.name]
        try:
            _set(msg, fd, col.type, value, where, nulls)
        except (TypeError, ValueError, OverflowError, ArithmeticError) as exc:
            raise EncodeError(f"column {where!r}: {value!r} does not fit {col.type.sql()} "
                              f"(field {fd.full_name}): {exc}") from None


def _set(msg: Any, fd: Any, t: DataType, value: Any, where: str, nulls: str | None) -> None:
    if isinstance(t, MapType) and _is_entries(fd):
        # Entry messages: a null key or value of a nullable type is an unset optional field.
        pair = _pair(t)
        container = getattr(msg, fd.name)
        for k, v in dict(value).items():
            _fill(container.add(), pair, {"key": k, "value": v}, f"{where}{{entry}}", nulls)
        return
    if isinstance(t, MapType):
        _set_map(getattr(msg, fd.name), fd, t, value, where, nulls)
        return
    if isinstance(t, ArrayType):
        _set_repeated(getattr(msg, fd.name), fd, t, value, where, nulls)
        return
    if fd.message_type is not None:
        _into(getattr(msg, fd.name), fd, t, value, where, nulls)
        return
    setattr(msg, fd.name, _scalar_value(fd, t, value))


def _set_map(container: Any, fd: Any, t: MapType, value: Any, where: str,
             nulls: str | None) -> None:
    """A Protobuf map field; a null key or value is Flink's default for it when `nulls` says."""
    entry = fd.message_type
    key_fd, value_fd = entry.fields_by_name["key"], entry.fields_by_name["value"]
    for k, v in dict(value).items():
        if (k is None or v is None) and nulls is None:
            raise EncodeError(f"column {where!r}: a Protobuf map holds no null key or value")
        key = _default(key_fd, nulls) if k is None else _scalar_value(key_fd, t.key, k)
        if value_fd.message_type is not None:
            sub = container[key]
            sub.SetInParent()
            if v is not None:
                _into(sub, value_fd, t.value, v, f"{where}{{value}}", nulls)
        else:
            container[key] = _default(value_fd, nulls) if v is None \
                else _scalar_value(value_fd, t.value, v)


def _set_repeated(container: Any, fd: Any, t: ArrayType, value: Any, where: str,
                  nulls: str | None) -> None:
    """A repeated field; a null element is Flink's default for it when `nulls` says."""
    for i, v in enumerate(value):
        if v is None and nulls is None:
            raise EncodeError(f"column {where!r}: element {i} is null; a repeated "
                              "Protobuf field holds no null element")
        if fd.message_type is not None:
            sub = container.add()
            if v is not None:
                _into(sub, fd, t.element, v, f"{where}[{i}]", nulls)
        else:
            container.append(_default(fd, nulls) if v is None
                             else _scalar_value(fd, t.element, v))


def _pair(t: MapType) -> RowType:
    return RowType(fields=(Field("key", t.key), Field("value", t.value)), nullable=False)


def _default(fd: Any, null_string: str | None) -> Any:
    """Flink's default for a null inside a container (scalars; messages are left empty)."""
    if fd.enum_type is not None:
        return fd.enum_type.values[0].number
    kind = _TYPE_NAMES.get(fd.type)
    if kind == "string":
        return null_string or ""
    if kind == "bytes":
        return b""
    if kind == "bool":
        return False
    return 0.0 if kind in ("float", "double") else 0


def _into(sub: Any, fd: Any, t: DataType, value: Any, where: str, nulls: str | None) -> None:
    """Fill the message `sub` (a field's, an element's or a map value's) with `value`."""
    sub.SetInParent()
    name = sub.DESCRIPTOR.full_name
    if isinstance(t, RowType):
        if not isinstance(value, Mapping):
            raise EncodeError(f"column {where!r}: a ROW value is a mapping, got "
                              f"{type(value).__name__}")
        _fill(sub, t, value, where, nulls)
    elif name == _TIMESTAMP:  # cut to the declared precision first, as Flink's cast does
        sub.seconds, sub.nanos = _timestamp(value, getattr(t, "precision", 9))
    elif name == _DATE:
        sub.year, sub.month, sub.day = value.year, value.month, value.day
    elif name == _TIME:
        sub.hours, sub.minutes, sub.seconds = value.hour, value.minute, value.second
        sub.nanos = value.microsecond * 1000
    elif name == _DECIMAL:
        assert isinstance(t, DecimalType)
        sub.value, sub.precision, sub.scale = _decimal(value, t, where)
    else:  # a wrapper: google.protobuf.*Value
        value_fd = sub.DESCRIPTOR.fields_by_name["value"]
        sub.value = _scalar_value(value_fd, t, value)


def _scalar_value(fd: Any, t: DataType, value: Any) -> Any:
    if fd.enum_type is not None and isinstance(t, IntegralType):
        if isinstance(value, bool) or not isinstance(value, int) or \
                value not in fd.enum_type.values_by_number:
            raise ValueError(f"no number {value!r} in enum {fd.enum_type.full_name}")
        return value
    if fd.enum_type is not None:
        found = fd.enum_type.values_by_name.get(str(value))
        if found is None:
            raise ValueError(f"no value {value!r} in enum {fd.enum_type.full_name}")
        return found.number
    if isinstance(t, IntegralType):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"an integer is needed, got {type(value).__name__}")
        if not t.min_value <= value <= t.max_value:
            raise ValueError(f"out of the range of {t.sql_name}")
    return value


def _timestamp(value: Any, precision: int) -> tuple[int, int]:
    if not isinstance(value, dt.datetime):
        raise TypeError(f"a datetime is needed, got {type(value).__name__}")
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    delta = truncate_datetime(value, precision) - _EPOCH
    return delta.days * 86400 + delta.seconds, delta.microseconds * 1000


def _decimal(value: Any, t: DecimalType, where: str) -> tuple[bytes, int, int]:
    """confluent.type.Decimal of a value at the column's scale: the unscaled value as
    two's-complement big-endian bytes (Java's BigInteger.toByteArray), its digit count
    (BigDecimal.precision) and the scale, as Confluent's DecimalUtils.fromBigDecimal."""
    d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
    quantum = decimal.Decimal(1).scaleb(-t.scale)
    scaled = d.quantize(quantum, context=decimal.Context(prec=80, traps=[decimal.Inexact]))
    unscaled = int(scaled.scaleb(t.scale))
    if len(str(abs(unscaled))) > t.precision:
        raise EncodeError(f"column {where!r}: {value} has more digits than {t.sql()}")
    size = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(size, "big", signed=True), len(str(abs(unscaled))), t.scale


# --- message -> values ------------------------------------------------------------------------

def _read(msg: Any, row: RowType, path: str) -> dict[str, Any]:
    desc = msg.DESCRIPTOR
    out: dict[str, Any] = {}
    for col in row.fields:
        fd = desc.fields_by_name.get(col.name)
        if fd is None:  # a writer's message without the column
            out[col.name] = None
            continue
        where = f"{path}.{col.name}" if path else col.name
        out[col.name] = _get(msg, fd, col.type, where)
    return out


def _get(msg: Any, fd: Any, t: DataType, where: str) -> Any:
    value = getattr(msg, fd.name)
    if isinstance(t, MapType) and _is_entries(fd):
        entry = fd.message_type
        key_fd, value_fd = entry.fields_by_name["key"], entry.fields_by_name["value"]
        return {_get(e, key_fd, t.key, where): _get(e, value_fd, t.value, where)
                for e in value}
    if isinstance(t, MapType):
        value_fd = fd.message_type.fields_by_name["value"]
        return {k: (_out(v, value_fd, t.value, where) if value_fd.message_type is not None
                    else _plain(value_fd, v, t.value)) for k, v in value.items()}
    if isinstance(t, ArrayType):
        return [_out(v, fd, t.element, where) if fd.message_type is not None
                else _plain(fd, v, t.element) for v in value]
    if fd.message_type is not None or fd.has_presence:
        if not msg.HasField(fd.name):
            return None
    if fd.message_type is not None:
        return _out(value, fd, t, where)
    return _plain(fd, value, t)


def _plain(fd: Any, value: Any, t: DataType | None = None) -> Any:
    if fd.enum_type is not None and not isinstance(t, IntegralType):
        found = fd.enum_type.values_by_number.get(value)
        return found.name if found is not None else str(value)
    if isinstance(t, IntegralType) and isinstance(value, int) and not (
            t.min_value <= value <= t.max_value):
        # An int32 field read as TINYINT or SMALLINT: a value the column cannot hold.
        raise ValueError(f"{value} does not fit {t.sql()} ({t.min_value}..{t.max_value})")
    return value


def _out(sub: Any, fd: Any, t: DataType, where: str) -> Any:
    name = sub.DESCRIPTOR.full_name
    if isinstance(t, RowType):
        return _read(sub, t, where)
    if name == _TIMESTAMP:
        moment = _EPOCH + dt.timedelta(seconds=sub.seconds, microseconds=sub.nanos // 1000)
        return moment.replace(tzinfo=dt.timezone.utc) if isinstance(t, TimestampLtzType) \
            else moment
    if name == _DATE:
        return dt.date(sub.year, sub.month, sub.day)
    if name == _TIME:
        return dt.time(sub.hours, sub.minutes, sub.seconds, sub.nanos // 1000)
    if name == _DECIMAL:
        unscaled = int.from_bytes(sub.value, "big", signed=True) if sub.value else 0
        d = decimal.Decimal(unscaled).scaleb(-sub.scale)
        if isinstance(t, DecimalType):
            d = d.quantize(decimal.Decimal(1).scaleb(-t.scale),
                           context=decimal.Context(prec=80))
            if d and d.adjusted() >= t.precision - t.scale:
                raise ValueError(f"{where or 'the value'}: {d} needs more than {t.precision} "
                                 f"digits for {t.sql()}")
        return d
    return _plain(sub.DESCRIPTOR.fields_by_name["value"], sub.value, t)


# --- the codecs -------------------------------------------------------------------------------


class ProtobufCodec(Codec):
    """Rows as bare Protobuf messages (Flink's `protobuf` format, with a `.proto` schema)."""

    format_name = "protobuf"

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        super().__init__(row_type, options, context)
        given = options[SCHEMA]
        #: The schema's `.proto` text: as given, or derived from the row type.
        self.schema_text: str = given if given else to_proto(row_type)
        self.message_name: str | None = options[MESSAGE]
        self._message: Message | None = None
        self.message  # noqa: B018 - compiled and checked now: a bad schema fails at plan time

    @property
    def message(self) -> Message:
        if self._message is None:
            where = self.describe()
            schema = parse_proto(self.schema_text, f"{where}: schema")
            try:
                message = Message(schema, message_name(schema, self.message_name), where)
                message.check(self.row_type)
            except SchemaError as exc:
                raise type(exc)(exc.message if exc.message.startswith(where)
                                else f"{where}: {exc.message}", hint=exc.hint) from None
            self._message = message
        return self._message

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_message"] = None  # descriptors do not pickle: compiled again where needed
        return state

    def describe(self) -> str:
        topic = f" of topic '{self.context.topic}'" if self.context.topic else ""
        return f"{self.format_name} {self.context.role} format{topic}"

    def written_schema(self, origin: str | None = None) -> SchemaText:
        return SchemaText("PROTOBUF", self.schema_text,
                          origin or f"the {self.context.role} ({self.format_name})")

    @property
    def message_index(self) -> tuple[int, ...]:
        """The message's position in its file, as Confluent's framing writes it."""
        return self.message.index

    def encode(self, row: Mapping[str, Any]) -> bytes:
        # Flink's protobuf format writes defaults for nulls inside containers; the registry
        # format refuses them (None: no such option).
        return self.message.encode(self.row_type, row,
                                   self.options.get(WRITE_NULL_STRING_LITERAL.key))

    def decode(self, data: bytes) -> dict[str, Any] | None:
        try:
            return self.message.decode(self.row_type, data)
        except DecodeError:
            if self.options.get(IGNORE_PARSE_ERRORS.key):
                return None
            raise


def message_name(schema: ProtoSchema, name: str | None) -> str | None:
    """The message option's `name` as the schema knows it: as given, else (a Java class name,
    `com.example.Outer$Inner`, as Flink's message-class-name gives it) its last part."""
    if not name:
        return None
    try:
        find_message(schema, name)
        return name
    except SchemaError:
        last = name.replace("$", ".").rpartition(".")[2]
        if last != name:
            return last
        raise


class ProtobufRegistryCodec(RegistryFramed, ProtobufCodec):
    """Rows as Protobuf messages in Confluent's framing, with a schema id given from outside
    (the frame's half, registry, subject and id, is
    `keyguard.formats.registry_framed.RegistryFramed`)."""

    format_name = "protobuf-registry"
    frame = CONFLUENT_PROTOBUF

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        self._registry: Registry | None = context.registry
        ProtobufCodec.__init__(self, row_type, options, context)
        self._init_frame()
        #: Registered without references (imports of the registry's built-in files only).
        self.references: tuple[dict[str, object], ...] = ()
        self.resolved_references: tuple[Any, ...] = ()
        self._writers: dict[tuple[SchemaId, tuple[int, ...]], Message] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_writers"] = {}
        return state

    def __repr__(self) -> str:
        return f"ProtobufRegistryCodec({self.context.role}, registry={self._where_registry()!r})"

    def record_name(self) -> str | None:
        return str(self.message.full_name)

    def frame_index(self) -> tuple[int, ...]:
        """The message index the frame writes after the schema id: the message's own."""
        return self.message_index

    def encode(self, row: Mapping[str, Any]) -> bytes:
        body = super().encode(row)  # the row's own errors first, then a missing id
        return self.header() + body

    def decode(self, data: bytes) -> dict[str, Any] | None:
        return self.decode_record(data)

    def decode_record(self, data: bytes, headers: Headers = None) -> dict[str, Any] | None:
        schema_id, index, body = self.unwrap(data, headers)
        return self._writer(schema_id, index or (0,)).decode(self.row_type, body)

    def _writer(self, schema_id: SchemaId, index: tuple[int, ...]) -> Message:
        """The writer's message: this codec's own when the id and index are its, else the
        one the registry holds under the id (ids are immutable: cached by id and index)."""
        if schema_id in (self._schema_id, self._guid) and index == self.message_index:
            return self.message
        key = (schema_id, index)
        if key not in self._writers:
            try:
                schema_type, text = self.lookup(schema_id)
            except KeyguardError as exc:
                raise type(exc)(f"{self.describe()}: fetching writer schema "
                                f"{named_id(schema_id)}: {exc.message}", hint=exc.hint) from None
            if schema_type.upper() != "PROTOBUF":
                raise DecodeError(f"{self.describe()}: schema {named_id(schema_id)} is a "
                                  f"{schema_type} schema, not Protobuf")
            where = f"{self.describe()}: writer schema {named_id(schema_id)}"
            schema = registered_proto(text, where)
            try:
                name = _dotted_at(schema, index)
                writer = Message(schema, name, where)
                writer.check(_present(self.row_type, writer))
            except SchemaError as exc:
                raise DecodeError(f"{where}: {exc.message}", hint=exc.hint) from None
            self._writers[key] = writer
        return self._writers[key]


def _dotted_at(schema: ProtoSchema, index: tuple[int, ...]) -> str:
    messages = list(schema.file.message_type)  # type: ignore[attr-defined]
    parts = []
    for i in index:
        if i >= len(messages):
            raise SchemaError(f"message index {list(index)} is not in the schema")
        parts.append(messages[i].name)
        messages = list(messages[i].nested_type)
    return ".".join(parts)


def _present(row: RowType, message: Message) -> RowType:
    """The columns the writer's message has (the others read as null)."""
    names = message.descriptor.fields_by_name  # type: ignore[attr-defined]
    return RowType(fields=tuple(f for f in row.fields if f.name in names), nullable=False)


PROTOBUF_FORMAT = register_format(FormatFactory(
    name="protobuf", options=PROTOBUF_OPTIONS, build=ProtobufCodec,
    schema_type="PROTOBUF", key_family="protobuf", frame=BARE,
    summary="Protobuf binary of one message (Flink's protobuf; the message from a .proto "
            "schema or derived from the table)",
))
PROTOBUF_REGISTRY_FORMAT = register_format(FormatFactory(
    name="protobuf-registry", options=PROTOBUF_REGISTRY_OPTIONS, build=ProtobufRegistryCodec,
    schema_type="PROTOBUF", key_family="protobuf", frame=ProtobufRegistryCodec.frame,
    uses_registry=True,
    summary="Confluent Schema Registry framing (magic byte, schema id, message index) + "
            "Protobuf binary",
))
