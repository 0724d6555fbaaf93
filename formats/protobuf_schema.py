"""Protobuf schemas: `.proto` text (the form a registry stores) parsed by protoc itself.

`parse_proto(text)` compiles the text with protoc as the `grpcio-tools` wheel ships it (never a
hand-written parser) and returns a `ProtoSchema`: the file's `FileDescriptorProto` and those of
its imports, the model every later step works on (the format's encoders, the guard's key rules
and the compatibility checker). Imports resolve against the schema's references (name -> text,
as a registry's references give them), protobuf's well-known types shipped with protoc, and
the files a registry knows without a reference (`BUILTIN_IMPORTS`: confluent/type/decimal.proto,
google/type/date.proto, google/type/timeofday.proto).

Errors are protoc's, with their line and column: a SchemaError naming the origin.

The module also declares the PROTOBUF schema type (`SCHEMA_TYPE`: schema files and subjects of
type PROTOBUF read as a `ProtoSchema`, their row type the first message's), finds messages and
their message index (`find_message`), derives a proto3 message from a row type (`to_proto`)
and a row type from a message (`message_row_type`), and gives a schema's identity for a
registry (`canonical_proto`).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.schema_types import SchemaType, register_schema_type
from keyguard.formats.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    Field,
    FloatType,
    IntType,
    MapType,
    RowType,
    SmallIntType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
    TinyIntType,
)

#: Imports a registry knows without a reference (Confluent's `_is_builtin`: `confluent/`,
#: `google/type/`; `google/protobuf/` ships with protoc). Only their messages' fields matter
#: here (the wire), so they are given as the fields of the upstream files, in their packages.
BUILTIN_IMPORTS = {
    "confluent/type/decimal.proto": 'syntax = "proto3";\npackage confluent.type;\n'
    "message Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }\n",
    "google/type/date.proto": 'syntax = "proto3";\npackage google.type;\n'
    "message Date { int32 year = 1; int32 month = 2; int32 day = 3; }\n",
    "google/type/timeofday.proto": 'syntax = "proto3";\npackage google.type;\n'
    "message TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; "
    "int32 nanos = 4; }\n",
    # Confluent's field, message and file metadata (`confluent.field_meta` and its kin).
    "confluent/meta.proto": 'syntax = "proto3";\npackage confluent;\n'
    'import "google/protobuf/descriptor.proto";\n'
    "message Meta { string doc = 1; map<string, string> params = 2; repeated string tags = 3;"
    " repeated Rule rules = 4; }\n"
    "message Rule { string name = 1; string doc = 2; string expr = 3; string sql = 4; }\n"
    "extend google.protobuf.FileOptions { Meta file_meta = 1088; }\n"
    "extend google.protobuf.MessageOptions { Meta message_meta = 1088; }\n"
    "extend google.protobuf.FieldOptions { Meta field_meta = 1088; }\n"
    "extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }\n"
    "extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }\n",
}

#: The file name the parsed text gets when nothing else names it (Confluent's serializer uses
#: the generated message's file name; the registry does not store it).
DEFAULT_FILE_NAME = "schema.proto"

# protoc is a C++ library with process-wide state; one compile at a time.
_PROTOC = threading.Lock()


@dataclass(frozen=True)
class ProtoSchema:
    """A parsed `.proto` file: its descriptor and its imports' descriptors (dependencies first)."""

    text: str
    file: object  # google.protobuf.descriptor_pb2.FileDescriptorProto
    dependencies: tuple[object, ...] = field(default=())

    @property
    def syntax(self) -> str:
        return self.file.syntax or "proto2"  # type: ignore[attr-defined]


def _include_dir() -> str:
    import grpc_tools  # lazy: protoc only when a protobuf schema is read

    return os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")


def parse_proto(text: str, origin: str = "schema", *, name: str = DEFAULT_FILE_NAME,
                references: Mapping[str, str] | None = None) -> ProtoSchema:
    """Compile `.proto` text; SchemaError (with protoc's line:column) when it does not compile.

    `references`: imported file name -> its `.proto` text (a registry schema's references).
    """
    if not isinstance(text, str) or not text.strip():
        raise SchemaError(f"{origin}: the Protobuf schema is empty",
                          hint="give the .proto text of the schema")
    try:
        from google.protobuf import descriptor_pb2  # lazy: protobuf runtime
        from grpc_tools import protoc  # lazy: protoc only when needed
    except ImportError as exc:
        raise SchemaError(f"{origin}: reading a Protobuf schema needs keyguard's protobuf "
                          f"extra ({exc})",
                          hint="pip install 'keyguard[protobuf]' (it brings protoc, as "
                               "grpcio-tools)") from None
    texts = [text, *(references or {}).values()]
    files = {dep: body for dep, body in BUILTIN_IMPORTS.items()
             if any(f'"{dep}"' in t for t in texts)}
    files.update(references or {})
    files[name] = text
    with _PROTOC, tempfile.TemporaryDirectory(prefix="keyguard-proto-") as tmp:
        for file_name, body in files.items():
            path = Path(tmp, file_name)
            if Path(tmp) not in path.resolve().parents:
                raise SchemaError(f"{origin}: reference name {file_name!r} leaves its directory",
                                  hint="name references by relative .proto paths")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        out = os.path.join(tmp, "out.desc")
        args = ["protoc", f"-I{tmp}", f"-I{_include_dir()}", "--include_imports",
                f"--descriptor_set_out={out}", name]
        code, errors = _run_protoc(protoc.main, args)
        if code != 0:
            raise SchemaError(f"{origin}: the Protobuf schema does not compile: "
                              + _protoc_message(errors, tmp, name, origin),
                              hint="fix the .proto text at that line and column")
        descriptors = descriptor_pb2.FileDescriptorSet.FromString(Path(out).read_bytes())
    by_name = {f.name: f for f in descriptors.file}
    main = by_name.pop(name)
    return ProtoSchema(text=text, file=main, dependencies=tuple(by_name.values()))


def _run_protoc(main: Callable[[list[str]], int], args: list[str]) -> tuple[int, str]:
    """protoc's exit code and what it wrote to stderr: `grpc_tools.protoc.main` runs protoc in
    this process, which reports errors on file descriptor 2 (callers hold `_PROTOC`)."""
    with tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        try:
            os.dup2(captured.fileno(), 2)
            code = main(args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        return code, captured.read().decode("utf-8", "replace")


#: One protoc error line: `file:line:column: message` (lines and columns count from 1).
_PROTOC_ERROR = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): (?P<message>.*)$")


def _protoc_message(errors: str, tmp: str, name: str, origin: str) -> str:
    parts = []
    for line in errors.splitlines():
        line = line.strip()
        if not line or line.startswith("warning:"):
            continue
        m = _PROTOC_ERROR.match(line)
        if m is None:
            parts.append(line.replace(tmp + os.sep, ""))
            continue
        where = m["file"].replace(tmp + os.sep, "")
        if where == name:
            where = origin
        parts.append(f"line {m['line']}, column {m['column']} of {where}: {m['message']}")
    return "; ".join(parts) or "protoc could not compile it"


# --- messages in a file ----------------------------------------------------------------------


def find_message(schema: ProtoSchema, name: str | None = None) -> tuple[object, tuple[int, ...]]:
    """The DescriptorProto of message `name` and its message index (the path of positions
    Confluent's framing writes: `[i]` for the i-th top-level message, `[i, j]` nested).

    `name`: simple (`Order`), dotted inside the file (`Order.Line`) or full (`shop.Order`);
    None: the file's first message, as Confluent's deserializer reads index `[0]`.
    """
    top = list(schema.file.message_type)  # type: ignore[attr-defined]
    if not top:
        raise SchemaError("the Protobuf schema declares no message",
                          hint="declare the key's or value's message in the .proto text")
    if not name:
        return top[0], (0,)
    package = schema.file.package  # type: ignore[attr-defined]
    local = name.lstrip(".")
    if package and local.startswith(package + "."):
        local = local[len(package) + 1:]
    found: list[tuple[str, object, tuple[int, ...]]] = []  # (dotted name, message, index)

    def visit(messages: list, prefix: str, path: tuple[int, ...]) -> None:
        for i, m in enumerate(messages):
            if m.options.map_entry:
                continue
            dotted = f"{prefix}{m.name}"
            found.append((dotted, m, (*path, i)))
            visit(list(m.nested_type), dotted + ".", (*path, i))

    visit(top, "", ())
    exact = [(m, i) for dotted, m, i in found if dotted == local]
    simple = [(m, i) for dotted, m, i in found if dotted.rpartition(".")[2] == local]
    if exact or len(simple) == 1:
        return (exact or simple)[0]
    names = ", ".join(dotted for dotted, _, _ in found)
    raise SchemaError(f"no single message {name!r} in the Protobuf schema (messages: {names})",
                      hint="name the message as the .proto declares it, e.g. Outer.Inner")


def _dotted(schema: ProtoSchema, path: tuple[int, ...]) -> str:
    messages = list(schema.file.message_type)  # type: ignore[attr-defined]
    parts = []
    for i in path:
        parts.append(messages[i].name)
        messages = list(messages[i].nested_type)
    return ".".join(parts)


def full_message_name(schema: ProtoSchema, path: tuple[int, ...]) -> str:
    package = schema.file.package  # type: ignore[attr-defined]
    return f"{package}.{_dotted(schema, path)}" if package else _dotted(schema, path)


def descriptor_pool(schema: ProtoSchema) -> object:
    """A DescriptorPool holding the file and its imports (the runtime's own descriptors)."""
    from google.protobuf import descriptor_pool as pools  # lazy: protobuf runtime

    pool = pools.DescriptorPool()
    add_to_pool(pool, (*schema.dependencies, schema.file))
    return pool


def add_to_pool(pool: Any, files: Sequence[Any]) -> None:
    """Add compiled files (FileDescriptorProto) to a runtime pool; what the runtime refuses
    that protoc accepted (a message too large for its layout) is a SchemaError."""
    for file in files:
        try:
            pool.Add(file)
        except (TypeError, ValueError) as exc:
            raise SchemaError(
                f"{file.name}: the protobuf runtime cannot load this schema: {exc}",
                hint="protoc accepts it, but the runtime limits a message's layout (about "
                     "65,535 bytes: some thousands of fields); split the message into "
                     "nested messages") from None


# --- table -> message (.proto text) ----------------------------------------------------------

_TIMESTAMP = "google.protobuf.Timestamp"
_DATE = "google.type.Date"
_TIME = "google.type.TimeOfDay"
_DECIMAL = "confluent.type.Decimal"
_IMPORTS = {_TIMESTAMP: "google/protobuf/timestamp.proto", _DATE: "google/type/date.proto",
            _TIME: "google/type/timeofday.proto", _DECIMAL: "confluent/type/decimal.proto"}
_META_IMPORT = "confluent/meta.proto"
#: Wrapper messages, read as nullable scalars (Connect's `wrapper.for.nullables`).
_WRAPPERS = {f"google.protobuf.{n}Value" for n in (
    "Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")}

#: The message and package a table's derived schema gets, as Confluent's Flink names them.
ROW_MESSAGE = "Row"
ROW_PACKAGE = "io.confluent.protobuf.generated"
#: The `confluent.field_meta` parameters the derivation writes and the row type reads back
#: (Connect's `connect.type`, `precision`, `scale`; Confluent's Flink's `flink.notNull`).
_CONNECT_TYPE, _PRECISION, _SCALE = "connect.type", "precision", "scale"
_FLINK_VERSION, _FLINK_NOT_NULL = "flink.version", "flink.notNull"

_SCALARS: dict[type[DataType], str] = {
    StringType: "string", BooleanType: "bool", TinyIntType: "int32", SmallIntType: "int32",
    IntType: "int32", BigIntType: "int64", FloatType: "float", DoubleType: "double",
    BytesType: "bytes"}


def _scalar(t: DataType) -> str | None:
    return _SCALARS.get(type(t))


def _well_known(t: DataType) -> str | None:
    if isinstance(t, (TimestampType, TimestampLtzType)):
        return _TIMESTAMP
    if isinstance(t, DateType):
        return _DATE
    if isinstance(t, TimeType):
        return _TIME
    if isinstance(t, DecimalType):
        return _DECIMAL
    return None


def _upper_camel(name: str) -> str:
    """Guava's LOWER_UNDERSCORE -> UPPER_CAMEL, as Confluent names map entry messages."""
    return "".join(p[:1].upper() + p[1:].lower() for p in name.split("_") if p)


def to_proto(row_type: RowType, message: str = ROW_MESSAGE,
             package: str | None = ROW_PACKAGE) -> str:
    """The proto3 `.proto` text of a message for `row_type`, derived as Confluent's Flink
    (`proto-registry`; its `FlinkToProtoSchemaConverter`) derives one, itself following Kafka
    Connect's `ProtobufData.fromConnectSchema`:

    - message `Row` in package `io.confluent.protobuf.generated`, field numbers in column order
      from 1 (Connect: "Fields are generated sequentially");
    - a nullable column is a proto3 `optional` field (explicit presence: unset = NULL), a NOT
      NULL scalar has implicit presence. Confluent's Flink: "When converting to a Protobuf
      schema, Flink marks all NULLABLE fields as optional"; Connect's ProtobufData does the
      same with `optional.for.nullables`, uses wrappers (google.protobuf.*Value) with
      `wrapper.for.nullables`, and by default loses the null. Wrappers are read
      (`message_row_type`), not written. A message field has presence anyway: NOT NULL ones
      carry `flink.notNull` in `confluent.field_meta` (Confluent Cloud's Flink documents it);
    - ROW -> a nested message `<column>_Row` declared inside its parent; ARRAY -> `repeated`
      (proto has no null list nor null element); MAP -> `repeated <Column>Entry` with the
      nested message `<Column>Entry { key = 1; value = 2; }`, as Confluent writes it (not
      `map<K, V>`: an entry's default key or value is then not on the wire, as in its bytes);
    - TIMESTAMP and TIMESTAMP_LTZ -> google.protobuf.Timestamp, DATE -> google.type.Date,
      TIME -> google.type.TimeOfDay, DECIMAL -> confluent.type.Decimal (unscaled two's
      complement bytes, precision, scale) with `precision` and `scale` in the field's meta;
      TINYINT and SMALLINT -> int32 with Connect's `connect.type` int8 / int16. Apache Flink's
      own protobuf format derives no schema: it needs a compiled class (`PbFormatUtils`).
    """
    imports: set[str] = set()
    body = _message_lines(row_type, message, imports, "", "$")
    head = ['syntax = "proto3";']
    if package:
        head.append(f"package {package};")
    head.append("")
    head += [f'import "{i}";' for i in sorted(imports)]
    return "\n".join(head) + ("\n\n" if imports else "\n") + "\n".join(body) + "\n"


def _meta(params: list[tuple[str, str]]) -> str:
    if not params:
        return ""
    entries = ", ".join(f'{{key: "{k}", value: "{v}"}}' for k, v in params)
    return f" [(.confluent.field_meta) = {{params: [{entries}]}}]"


def _message_lines(row: RowType, name: str, imports: set[str], indent: str,
                   path: str) -> list[str]:
    lines = [f"{indent}message {name} {{"]
    nested: list[str] = []
    inner = indent + "  "
    for number, f in enumerate(row.fields, start=1):
        where = f"{path}.{f.name}" if path != "$" else f.name
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", f.name):
            raise UnsupportedTypeError(f"column {where!r}: not a Protobuf field name",
                                       hint="Protobuf field names are letters, digits and _")
        t = f.type
        if isinstance(t, ArrayType):
            if isinstance(t.element, (ArrayType, MapType)):
                raise UnsupportedTypeError(f"column {where!r}: {t.sql()} has no Protobuf "
                                           "field (repeated fields do not nest)")
            decl, params = _type_of(t.element, f.name, where, imports, nested, inner)
            lines.append(f"{inner}repeated {decl} {f.name} = {number}{_meta(params)};")
            continue
        if isinstance(t, MapType):
            entry = _upper_camel(f"{f.name}_Entry")
            pair = RowType(fields=(Field("key", t.key), Field("value", t.value)),
                           nullable=False)
            if isinstance(t.key, (ArrayType, MapType)) or isinstance(t.value, (ArrayType,
                                                                               MapType)):
                raise UnsupportedTypeError(
                    f"column {where!r}: {t.sql()} has no Protobuf field",
                    hint="map keys and values are not repeated in Protobuf")
            nested.extend(_message_lines(pair, entry, imports, inner, where))
            lines.append(f"{inner}repeated {entry} {f.name} = {number};")
            continue
        decl, params = _type_of(t, f.name, where, imports, nested, inner)
        label = "optional " if t.nullable else ""
        if not t.nullable and (_well_known(t) or isinstance(t, RowType)):
            params = [(_FLINK_VERSION, "1"), (_FLINK_NOT_NULL, "true"), *params]
        if params:
            imports.add(_META_IMPORT)
        lines.append(f"{inner}{label}{decl} {f.name} = {number}{_meta(params)};")
    return lines + nested + [f"{indent}}}"]


def _type_of(t: DataType, field: str, where: str, imports: set[str], nested: list[str],
             indent: str) -> tuple[str, list[tuple[str, str]]]:
    """The field type of a column type and the `confluent.field_meta` params it needs."""
    scalar = _scalar(t)
    if scalar is not None:
        width = {TinyIntType: "int8", SmallIntType: "int16"}.get(type(t))  # type: ignore
        if width:
            imports.add(_META_IMPORT)
        return scalar, [(_CONNECT_TYPE, width)] if width else []
    known = _well_known(t)
    if known is not None:
        imports.add(_IMPORTS[known])
        if isinstance(t, DecimalType):
            imports.add(_META_IMPORT)
            return "." + known, [(_PRECISION, str(t.precision)), (_SCALE, str(t.scale))]
        return "." + known, []
    if isinstance(t, RowType):
        name = f"{field}_Row"
        nested.extend(_message_lines(t, name, imports, indent, where))
        return name, []
    raise UnsupportedTypeError(f"column {where!r}: {t.sql()} has no Protobuf field",
                               hint="use a column type the protobuf formats support")


# --- message -> table (row type) -------------------------------------------------------------

# FieldDescriptorProto.Type numbers (descriptor.proto): stable across protobuf versions.
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _STRING = range(1, 10)
_GROUP, _MESSAGE, _BYTES, _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = range(10, 19)
_REPEATED = 3


def _scalar_type(kind: int) -> DataType | None:
    """Flink's `PbToRowTypeUtil` mapping; unsigned 32-bit ones widen to BIGINT as Connect's
    `ProtobufData.toConnectSchema` does (their values reach 2^32 - 1, past INT)."""
    return {
        _DOUBLE: DoubleType(), _FLOAT: FloatType(), _INT64: BigIntType(),
        _UINT64: BigIntType(), _INT32: IntType(), _FIXED64: BigIntType(),
        _FIXED32: BigIntType(), _BOOL: BooleanType(), _STRING: StringType(),
        _BYTES: BytesType(), _UINT32: BigIntType(), _ENUM: StringType(),
        _SFIXED32: IntType(), _SFIXED64: BigIntType(), _SINT32: IntType(),
        _SINT64: BigIntType(),
    }.get(kind)


def is_entry(message: Any) -> bool:
    """A map's entry message: protoc's (`map<K, V>`), or Confluent's `repeated XEntry` with
    exactly `key = 1` and `value = 2` (its Flink and Connect write maps so)."""
    if message.options.map_entry:
        return True
    fields = [(f.name, f.number) for f in message.field]
    return message.name.endswith("Entry") and fields == [("key", 1), ("value", 2)]


def message_row_type(schema: ProtoSchema, name: str | None = None) -> RowType:
    """The row type of message `name` (None: the file's first), the reverse of `to_proto`:
    scalars as Flink's `PbToRowTypeUtil` reads them (enum -> STRING), `connect.type` int8 /
    int16 -> TINYINT / SMALLINT; proto3 `optional`, oneof and message fields nullable (unless
    `flink.notNull`), implicit-presence scalars NOT NULL (an unset one reads as its default);
    repeated -> ARRAY, a map or a repeated entry message -> MAP; google.protobuf.Timestamp ->
    TIMESTAMP_LTZ(9) (as Confluent reads it), google.type.Date -> DATE, google.type.TimeOfDay
    -> TIME(3), confluent.type.Decimal -> DECIMAL(precision, scale) from the field's meta
    (DECIMAL(38, 18) without); the google.protobuf wrappers -> nullable scalars."""
    message, _ = find_message(schema, name)
    by_name: dict[str, object] = {}
    for f in (*schema.dependencies, schema.file):
        _index(f.package, list(f.message_type), by_name)  # type: ignore[attr-defined]
    return _row_of(message, by_name, (), name or message.name)  # type: ignore[attr-defined]


def _index(prefix: str, messages: list, by_name: dict[str, object]) -> None:
    for m in messages:
        full = f"{prefix}.{m.name}" if prefix else m.name
        by_name["." + full] = m
        _index(full, list(m.nested_type), by_name)


def _row_of(message: Any, by_name: dict[str, object], seen: tuple[str, ...],
            where: str) -> RowType:
    fields = []
    for f in message.field:
        t = _field_type(f, by_name, seen, f"{where}.{f.name}")
        fields.append(Field(f.name, t))
    return RowType(fields=tuple(fields), nullable=False)


def _field_type(f: Any, by_name: dict[str, object], seen: tuple[str, ...],
                where: str) -> DataType:
    kind = f.type
    target: Any = by_name.get(f.type_name) if kind == _MESSAGE else None
    params = field_meta(f)
    if f.label == _REPEATED:
        if target is not None and is_entry(target):
            key, value = target.field
            return MapType(key=_field_type(key, by_name, seen, where).not_null(),
                           value=_field_type(value, by_name, seen, where), nullable=False)
        element = _single(f, kind, target, params, by_name, seen, where)
        return ArrayType(element=element.not_null(), nullable=False)
    t = _single(f, kind, target, params, by_name, seen, where)
    # proto3 `optional` is a synthetic oneof: explicit presence, like the real oneofs' fields.
    if (kind == _MESSAGE and params.get(_FLINK_NOT_NULL) != "true") or f.HasField("oneof_index"):
        return t.with_nullable(True)
    return t.not_null()  # implicit presence (and proto2's defaults): unset reads as default


def _single(f: Any, kind: int, target: Any, params: dict[str, str],
            by_name: dict[str, object], seen: tuple[str, ...], where: str) -> DataType:
    width = {"int8": TinyIntType(), "int16": SmallIntType()}.get(params.get(_CONNECT_TYPE, ""))
    if width is not None and kind in (_INT32, _SINT32, _SFIXED32):
        return width.not_null()
    scalar = _scalar_type(kind)
    if scalar is not None:
        return scalar.not_null()
    if kind == _MESSAGE:
        full = f.type_name.lstrip(".")
        if full == _DECIMAL:
            try:
                return DecimalType(precision=int(params.get(_PRECISION, 38)),
                                   scale=int(params.get(_SCALE, 18)), nullable=False)
            except (ValueError, SchemaError):
                return DecimalType(precision=38, scale=18, nullable=False)
        known = {_TIMESTAMP: TimestampLtzType(precision=9), _DATE: DateType(),
                 _TIME: TimeType(precision=3)}
        if full in known:
            return known[full].not_null()
        if full in _WRAPPERS:
            return (_scalar_type(target.field[0].type) or StringType()).not_null()
        if target is None or full in seen:
            raise UnsupportedTypeError(
                f"field {where!r}: message {full} " + ("refers back to itself: a row type "
                                                       "is a tree" if target is not None
                                                       else "is not defined"))
        return _row_of(target, by_name, (*seen, full), where)
    raise UnsupportedTypeError(f"field {where!r}: Protobuf groups have no column type",
                               hint="use a nested message instead of a group")


_META_CARRIER = ('syntax = "proto3";\nimport "confluent/meta.proto";\n'
                 "message FieldMetaCarrier { confluent.Meta field_meta = 1088; }\n")
_CARRIER: list[Any] = []


def field_meta(f: Any) -> dict[str, str]:
    """The `(confluent.field_meta).params` of a FieldDescriptorProto, read by the protobuf
    runtime: the field's options parsed as a message whose field 1088 is the extension."""
    if not f.HasField("options"):
        return {}
    raw = f.options.SerializeToString()
    if not raw:
        return {}
    if not _CARRIER:
        from google.protobuf import message_factory  # lazy: protobuf runtime

        carrier = parse_proto(_META_CARRIER, "keyguard's field meta reader",
                              name="keyguard-meta.proto")
        pool: Any = descriptor_pool(carrier)
        _CARRIER.append(message_factory.GetMessageClass(
            pool.FindMessageTypeByName("FieldMetaCarrier")))
    try:
        return dict(_CARRIER[0].FromString(raw).field_meta.params)
    except Exception:  # options that are not Confluent's meta under that number
        return {}


#: A schema with references in one text (its standalone form,
#: `keyguard.formats.registry.references`): a JSON object of the `.proto` text and the imported
#: files' texts by import name. A `.proto` file never starts with `{`, so the two cannot be
#: confused.
_BUNDLE_KEYS = {"schema", "references"}


def bundle(text: str, references: Mapping[str, str]) -> str:
    """`text` and the texts of the files it imports (nested bundles flattened), as one text."""
    import json

    files: dict[str, str] = {}
    for name, ref in references.items():
        inner, deeper = unbundle(ref)
        files.update(deeper)
        files[name] = inner
    return json.dumps({"schema": text, "references": dict(sorted(files.items()))})


def unbundle(text: str) -> tuple[str, dict[str, str]]:
    """(the `.proto` text, the imported files' texts by name) of a bundle; plain `.proto`
    text as it is, with no references."""
    if not text.lstrip().startswith("{"):
        return text, {}
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return text, {}
    if (isinstance(data, dict) and set(data) == _BUNDLE_KEYS and isinstance(data["schema"], str)
            and isinstance(data["references"], dict)
            and all(isinstance(v, str) for v in data["references"].values())):
        return data["schema"], dict(data["references"])
    return text, {}


def _parse(text: str, origin: str) -> ProtoSchema:
    body, references = unbundle(text)
    return registered_proto(body, origin, references=references or None)


def _row_type(data: object, avro_only: bool) -> DataType:
    assert isinstance(data, ProtoSchema)
    return message_row_type(data)


#: Found by `keyguard.formats.schema_types.schema_type("PROTOBUF")` (its line in
#: `keyguard.formats.catalog.SCHEMA_TYPES`).
SCHEMA_TYPE = register_schema_type(SchemaType("PROTOBUF", _parse, _row_type))


def canonical_proto(text: str, origin: str = "schema") -> str:
    """The schema's identity for a registry: its compiled FileDescriptorProto in protobuf's
    text form, without source positions (comments and layout do not make another schema)."""
    from google.protobuf import text_format  # lazy: protobuf runtime

    parsed = parse_proto(text, origin)
    file: Any = type(parsed.file)()
    file.CopyFrom(parsed.file)
    file.ClearField("source_code_info")
    return str(text_format.MessageToString(file, as_one_line=True))


def registered_proto(text: str, origin: str = "schema", *,
                     references: Mapping[str, str] | None = None) -> ProtoSchema:
    """A schema as a registry returns it: `.proto` text, or a base64 FileDescriptorProto, the
    form confluent-kafka's Python ProtobufSerializer registers (`_schema_to_str`) and its mock
    registry returns as is. The descriptor's imports are compiled by protoc like any import."""
    body = text.strip()
    if body and not any(c.isspace() for c in body) and "{" not in body:
        import base64
        import binascii

        from google.protobuf import descriptor_pb2  # lazy: protobuf runtime
        from google.protobuf.message import DecodeError

        try:
            file = descriptor_pb2.FileDescriptorProto.FromString(
                base64.b64decode(body, validate=True))
        except (binascii.Error, ValueError, DecodeError):
            file = None
        if file is not None and file.message_type:
            deps: tuple[object, ...] = ()
            if file.dependency:
                imports = "".join(f'import "{d}";\n' for d in file.dependency)
                deps = parse_proto(f'syntax = "proto3";\n{imports}', origin,
                                   name="keyguard-imports.proto",
                                   references=references).dependencies
            return ProtoSchema(text=text, file=file, dependencies=deps)
    return parse_proto(text, origin, references=references)
