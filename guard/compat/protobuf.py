"""Protobuf reader/writer compatibility, as Confluent Schema Registry decides it.

Confluent compares an original schema with an update (`protobuf.diff.SchemaDiff.compare`) and
lists `Difference`s, each of a `Difference.Type`; the update is compatible when every difference
is in `SchemaDiff.COMPATIBLE_CHANGES`. `ProtobufSchema.isBackwardCompatible(previous)` compares
original = previous with update = new, so here original = writer and update = reader: BACKWARD
compares (old, new), FORWARD (new, old). This is a port of that walk (its `MessageSchemaDiff`,
`FieldSchemaDiff` and `EnumSchemaDiff`, as of schema-registry commit 3f5ff24) over the
descriptors protoc compiles (`keyguard.formats.protobuf_schema`), with what Confluent's
wire-based model sees restored from them:

- a field's label is what its text says: proto3 fields without a label have none (so
  implicit <-> `optional` <-> `repeated` is never a label change there), `optional`, `required`
  and `repeated` otherwise; oneof members and map fields have none. A label change counts only
  for scalars: numeric ones (FIELD_NUMERIC_LABEL_CHANGED, incompatible: packed and unpacked
  encodings differ), string and bytes (compatible);
- scalars compare by wire group (`FieldSchemaDiff.scalarKind`): int32, int64, uint32, uint64,
  bool and enums; sint32, sint64; string, bytes; fixed32, sfixed32; fixed64, sfixed64; float;
  double; a change across groups is FIELD_SCALAR_KIND_CHANGED, between a scalar, a message and a
  map FIELD_KIND_CHANGED;
- messages and enums compare by name, scope by scope; a message defined in this file is compared
  once, where it is declared, not again through each field that uses it; a field's message type
  from an import is compared through the field when the import differs (FIELD_NAMED_TYPE_CHANGED
  when that comparison is incompatible). Map entries protoc synthesizes are maps, not messages;
- moving or reordering messages is compatible (MESSAGE_MOVED): a record's message index is read
  against the schema of its own id. Renaming a message is MESSAGE_REMOVED plus MESSAGE_ADDED, so
  renaming the first message (the one a plain record's id points at) is incompatible;
- fields compare by number across the whole message, oneof members and top-level fields alike,
  so renaming, removing or merging a oneof hides no removal or type change. A field moved out
  of its oneof is compatible (ONEOF_FIELD_MOVED_TO_TOP_LEVEL); a oneof whose earlier members
  come from more than one earlier oneof or top-level field makes independent fields exclusive
  (MULTIPLE_FIELDS_MOVED_TO_ONEOF, FIELD_MOVED_TO_EXISTING_ONEOF, both incompatible); a member
  dropped from a oneof is ONEOF_FIELD_REMOVED unless the whole oneof went with all its members;
- a package change (PACKAGE_CHANGED) is incompatible: every message's full name changes with
  it. Syntax changes, options and `reserved` declarations are not incompatible in themselves:
  Confluent reports no difference for them (protoc already rejects a field that reuses a number
  its own file reserves), only for what changes on the wire.

Each difference's path is Confluent's (`/Message/Nested/<field number>`, a oneof's name before
its members' numbers), and its message names the message, field and number involved.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from keyguard.formats.errors import SchemaError
from keyguard.formats.protobuf_schema import ProtoSchema, parse_proto, unbundle
from keyguard.guard.compat.levels import Incompatibility, PairChecker
from keyguard.guard.compat.registry_rules import CONFLUENT, RegistryRules

PACKAGE_CHANGED = "PACKAGE_CHANGED"
MESSAGE_ADDED = "MESSAGE_ADDED"
MESSAGE_REMOVED = "MESSAGE_REMOVED"
MESSAGE_MOVED = "MESSAGE_MOVED"
ENUM_ADDED = "ENUM_ADDED"
ENUM_REMOVED = "ENUM_REMOVED"
ENUM_CONST_ADDED = "ENUM_CONST_ADDED"
ENUM_CONST_CHANGED = "ENUM_CONST_CHANGED"
ENUM_CONST_REMOVED = "ENUM_CONST_REMOVED"
FIELD_ADDED = "FIELD_ADDED"
FIELD_REMOVED = "FIELD_REMOVED"
FIELD_NAME_CHANGED = "FIELD_NAME_CHANGED"
FIELD_KIND_CHANGED = "FIELD_KIND_CHANGED"
FIELD_SCALAR_KIND_CHANGED = "FIELD_SCALAR_KIND_CHANGED"
FIELD_NAMED_TYPE_CHANGED = "FIELD_NAMED_TYPE_CHANGED"
FIELD_NUMERIC_LABEL_CHANGED = "FIELD_NUMERIC_LABEL_CHANGED"
FIELD_STRING_OR_BYTES_LABEL_CHANGED = "FIELD_STRING_OR_BYTES_LABEL_CHANGED"
REQUIRED_FIELD_ADDED = "REQUIRED_FIELD_ADDED"
REQUIRED_FIELD_REMOVED = "REQUIRED_FIELD_REMOVED"
ONEOF_ADDED = "ONEOF_ADDED"
ONEOF_REMOVED = "ONEOF_REMOVED"
ONEOF_FIELD_ADDED = "ONEOF_FIELD_ADDED"
ONEOF_FIELD_REMOVED = "ONEOF_FIELD_REMOVED"
ONEOF_FIELD_MOVED_TO_TOP_LEVEL = "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"
MULTIPLE_FIELDS_MOVED_TO_ONEOF = "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
FIELD_MOVED_TO_EXISTING_ONEOF = "FIELD_MOVED_TO_EXISTING_ONEOF"

#: Confluent's `Difference.Type`, in its order.
DIFFERENCE_TYPES = (
    PACKAGE_CHANGED, MESSAGE_ADDED, MESSAGE_REMOVED, MESSAGE_MOVED, ENUM_ADDED, ENUM_REMOVED,
    ENUM_CONST_ADDED, ENUM_CONST_CHANGED, ENUM_CONST_REMOVED, FIELD_ADDED, FIELD_REMOVED,
    FIELD_NAME_CHANGED, FIELD_KIND_CHANGED, FIELD_SCALAR_KIND_CHANGED, FIELD_NAMED_TYPE_CHANGED,
    FIELD_NUMERIC_LABEL_CHANGED, FIELD_STRING_OR_BYTES_LABEL_CHANGED, REQUIRED_FIELD_ADDED,
    REQUIRED_FIELD_REMOVED, ONEOF_ADDED, ONEOF_REMOVED, ONEOF_FIELD_ADDED, ONEOF_FIELD_REMOVED,
    ONEOF_FIELD_MOVED_TO_TOP_LEVEL, MULTIPLE_FIELDS_MOVED_TO_ONEOF, FIELD_MOVED_TO_EXISTING_ONEOF,
)

#: Confluent's `SchemaDiff.COMPATIBLE_CHANGES`.
COMPATIBLE_CHANGES = frozenset({
    MESSAGE_ADDED, MESSAGE_MOVED, ENUM_ADDED, ENUM_REMOVED, ENUM_CONST_ADDED,
    ENUM_CONST_CHANGED, ENUM_CONST_REMOVED, FIELD_ADDED, FIELD_REMOVED, FIELD_NAME_CHANGED,
    FIELD_STRING_OR_BYTES_LABEL_CHANGED, ONEOF_ADDED, ONEOF_REMOVED, ONEOF_FIELD_ADDED,
    ONEOF_FIELD_MOVED_TO_TOP_LEVEL,
})

# FieldDescriptorProto.Type numbers -> the scalar's name in .proto text.
_SCALARS = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64",
            7: "fixed32", 8: "bool", 9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32",
            16: "sfixed64", 17: "sint32", 18: "sint64"}
_TYPE_GROUP, _TYPE_MESSAGE, _TYPE_ENUM = 10, 11, 14
_LABEL_OPTIONAL, _LABEL_REQUIRED, _LABEL_REPEATED = 1, 2, 3

#: Wire-compatible groups (Confluent's `FieldSchemaDiff.ScalarKind`); enums are GENERAL_NUMBER.
SCALAR_KINDS = {
    "int32": "GENERAL_NUMBER", "int64": "GENERAL_NUMBER", "uint32": "GENERAL_NUMBER",
    "uint64": "GENERAL_NUMBER", "bool": "GENERAL_NUMBER",
    "sint32": "SIGNED_NUMBER", "sint64": "SIGNED_NUMBER",
    "string": "STRING_OR_BYTES", "bytes": "STRING_OR_BYTES",
    "fixed32": "FIXED32", "sfixed32": "FIXED32",
    "fixed64": "FIXED64", "sfixed64": "FIXED64",
    "float": "FLOAT", "double": "DOUBLE",
}


@dataclass(frozen=True)
class Difference:
    """One Confluent `Difference`: its type, its path and what it means here."""

    type: str
    path: str
    message: str
    original: str | None = None
    update: str | None = None

    @property
    def compatible(self) -> bool:
        return self.type in COMPATIBLE_CHANGES


@dataclass(frozen=True)
class _TypeInfo:
    """A message or enum by full name: where it is declared (None: the schema's own file)."""

    full_name: str
    package: str
    proto: Any
    is_enum: bool
    origin: tuple[str, str] | None
    is_map: bool = False


@dataclass(frozen=True)
class ProtobufSchema:
    """A parsed Protobuf schema and every message and enum it can name, by full name."""

    schema: ProtoSchema
    types: dict[str, _TypeInfo]
    source: Any

    @property
    def file(self) -> Any:
        return self.schema.file

    @property
    def package(self) -> str:
        return str(self.file.package)


def parse(schema: Any) -> ProtobufSchema:
    """`.proto` text (str or bytes), a parsed `ProtoSchema`, or {"schema": text, "references":
    {import name: text}} for a schema with imports; SchemaError when protoc rejects it."""
    source = schema
    if isinstance(schema, ProtobufSchema):
        return schema
    if not isinstance(schema, ProtoSchema):
        text, references = _text_and_references(schema)
        try:
            schema = parse_proto(text, "schema", references=references)
        except SchemaError as exc:
            detail = exc.message.removeprefix("schema: ")
            raise SchemaError(f"invalid Protobuf schema: {detail}", hint=exc.hint) from None
    types: dict[str, _TypeInfo] = {}
    for dependency in schema.dependencies:
        body = dependency.SerializeToString(deterministic=True)  # type: ignore[attr-defined]
        origin = (str(dependency.name), hashlib.sha256(body).hexdigest())  # type: ignore[attr-defined]
        _collect(types, dependency, origin)
    _collect(types, schema.file, None)
    return ProtobufSchema(schema=schema, types=types, source=source)


def _text_and_references(schema: Any) -> tuple[str, dict[str, str] | None]:
    if isinstance(schema, bytes):
        schema = schema.decode()
    if isinstance(schema, str):
        text, refs = unbundle(schema)  # a schema with references in standalone form
        return text, refs or None
    if isinstance(schema, Mapping) and isinstance(schema.get("schema"), str):
        given = schema.get("references") or {}
        if isinstance(given, list):  # [{"name": ..., "schema": text}], as a registry lists them
            given = {r.get("name"): r.get("schema") for r in given if isinstance(r, Mapping)}
        if isinstance(given, Mapping) and all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in given.items()):
            return schema["schema"], dict(given)
        raise SchemaError("invalid Protobuf schema: its references are not import names "
                          "mapped to .proto text",
                          hint='give {"schema": text, "references": {"dep.proto": text}}')
    raise SchemaError(
        f"invalid Protobuf schema: expected .proto text, got {type(schema).__name__}",
        hint="give the schema as the .proto text a registry stores")


def _collect(types: dict[str, _TypeInfo], file: Any, origin: tuple[str, str] | None) -> None:
    package = str(file.package)

    def walk(prefix: str, messages: Any, enums: Any) -> None:
        for message in messages:
            name = f"{prefix}.{message.name}" if prefix else message.name
            types[name] = _TypeInfo(name, package, message, False, origin,
                                    is_map=bool(message.options.map_entry))
            walk(name, message.nested_type, message.enum_type)
        for enum in enums:
            name = f"{prefix}.{enum.name}" if prefix else enum.name
            types[name] = _TypeInfo(name, package, enum, True, origin)

    walk(package, file.message_type, file.enum_type)


# --- the walk ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    """A field as Confluent's wire model sees it: label as written, oneof by name."""

    proto: Any
    label: str | None
    oneof: str | None

    @property
    def number(self) -> int:
        return int(self.proto.number)

    @property
    def name(self) -> str:
        return str(self.proto.name)


@dataclass
class _Diff:
    """One comparison: both sides, the path so far, the differences found."""

    original: ProtobufSchema
    update: ProtobufSchema
    path: list[str] = field(default_factory=list)
    found: list[Difference] = field(default_factory=list)
    in_progress: set[int] = field(default_factory=set)

    @contextmanager
    def at(self, part: str) -> Iterator[None]:
        self.path.append(part)
        try:
            yield
        finally:
            self.path.pop()

    def add(self, kind: str, message: str, original: str | None = None,
            update: str | None = None) -> None:
        self.found.append(Difference(kind, "/" + "/".join(self.path), message, original, update))

    def sub(self, local_name: str) -> _Diff:
        return _Diff(self.original, self.update, local_name.split("."), [],
                     set(self.in_progress))

    # -- files and scopes ----------------------------------------------------------------------

    def files(self) -> None:
        if self.original.package != self.update.package:
            self.add(PACKAGE_CHANGED, f"package {self.original.package or '(none)'} became "
                     f"{self.update.package or '(none)'}: every message's full name changes "
                     "with it")
        self.scope(self.original.file, self.update.file, self.original.package)

    def scope(self, original: Any, update: Any, name: str) -> None:
        """Messages and enums declared in one scope (a file or a message), by name; `name` is
        the scope's full name (for messages), the path holds what Confluent's holds."""
        o_messages = _messages(original)
        u_messages = _messages(update)
        o_index = {m.name: i for i, m in enumerate(o_messages)}
        u_index = {m.name: i for i, m in enumerate(u_messages)}
        o_by_name = {m.name: m for m in o_messages}
        u_by_name = {m.name: m for m in u_messages}
        for short in sorted(o_by_name.keys() | u_by_name.keys()):
            full = f"{name}.{short}" if name else short
            with self.at(short):
                if short not in u_by_name:
                    self.add(MESSAGE_REMOVED, f"message {full} was removed: data written with "
                             "it cannot be read")
                elif short not in o_by_name:
                    self.add(MESSAGE_ADDED, f"message {full} was added")
                else:
                    self.message(o_by_name[short], u_by_name[short], full)
                    if o_index[short] != u_index[short]:
                        self.add(MESSAGE_MOVED, f"message {full} moved from index "
                                 f"{o_index[short]} to {u_index[short]} of its scope")
        o_enums = {e.name: e for e in original.enum_type}
        u_enums = {e.name: e for e in update.enum_type}
        for short in sorted(o_enums.keys() | u_enums.keys()):
            full = f"{name}.{short}" if name else short
            with self.at(short):
                if short not in u_enums:
                    self.add(ENUM_REMOVED, f"enum {full} was removed")
                elif short not in o_enums:
                    self.add(ENUM_ADDED, f"enum {full} was added")
                else:
                    self.enum(o_enums[short], u_enums[short], full)

    def enum(self, original: Any, update: Any, name: str) -> None:
        o_values = {v.number: v.name for v in original.value}
        u_values = {v.number: v.name for v in update.value}
        for number in sorted(o_values.keys() | u_values.keys()):
            with self.at(str(number)):
                if number not in u_values:
                    self.add(ENUM_CONST_REMOVED, f"enum {name}: value {o_values[number]} = "
                             f"{number} was removed")
                elif number not in o_values:
                    self.add(ENUM_CONST_ADDED, f"enum {name}: value {u_values[number]} = "
                             f"{number} was added")
                elif o_values[number] != u_values[number]:
                    self.add(ENUM_CONST_CHANGED, f"enum {name}: value {number} was renamed "
                             f"from {o_values[number]} to {u_values[number]}")

    # -- messages ------------------------------------------------------------------------------

    def message(self, original: Any, update: Any, name: str) -> None:
        if id(original) not in self.in_progress:
            self.in_progress.add(id(original))
            try:
                self.fields(original, update, name)
            finally:
                self.in_progress.discard(id(original))
        self.scope(original, update, name)

    def fields(self, original: Any, update: Any, name: str) -> None:
        """Confluent's `MessageSchemaDiff.compare`: every field by number across the whole
        message, oneof members and top-level fields alike, so that a oneof renamed, removed or
        merged cannot hide a field's removal or type change."""
        o_fields = _fields(original, self.original.file)
        u_fields = _fields(update, self.update.file)
        o_all = {f.number: f for f in o_fields}
        u_all = {f.number: f for f in u_fields}
        o_oneofs = _oneofs(o_fields)
        u_oneofs = _oneofs(u_fields)
        # A oneof removed with none of its members left anywhere is deleted as a whole, which
        # is compatible; members of one whose other members survive are removals.
        deleted = {oneof for oneof, members in o_oneofs.items()
                   if oneof not in u_oneofs and not any(m.number in u_all for m in members)}
        for oneof, members in u_oneofs.items():
            with self.at(oneof):
                self.new_exclusivity(members, o_all, name, oneof)
        for oneof in sorted(o_oneofs.keys() | u_oneofs.keys()):
            with self.at(oneof):
                if oneof not in u_oneofs:
                    self.add(ONEOF_REMOVED, f"message {name}: oneof {oneof} was removed")
                elif oneof not in o_oneofs:
                    self.add(ONEOF_ADDED, f"message {name}: oneof {oneof} was added")
        for number in sorted(o_all.keys() | u_all.keys()):
            o, u = o_all.get(number), u_all.get(number)
            if u is None and o is not None:
                self.removed(o, deleted, name)
            elif o is None and u is not None:
                self.added(u, name)
            elif o is not None and u is not None:
                self.kept(o, u, name)

    def new_exclusivity(self, members: list[_Field], o_all: dict[int, _Field], name: str,
                        oneof: str) -> None:
        """A oneof of the update whose earlier members come from more than one group (one
        earlier oneof, or one top-level field each) makes independent fields exclusive."""
        groups: set[tuple[str, str | int]] = set()
        moved = []
        for m in members:
            before = o_all.get(m.number)
            if before is None:
                continue  # a new field: data written before never set it
            if before.oneof is not None:
                groups.add(("oneof", before.oneof))
            else:
                groups.add(("field", m.number))
                moved.append(m)
        if len(groups) <= 1:
            return
        listed = ", ".join(f"{m.name} = {m.number}" for m in members if m.number in o_all)
        if len(moved) > 1:
            self.add(MULTIPLE_FIELDS_MOVED_TO_ONEOF,
                     f"message {name}: fields {listed} moved into oneof {oneof}: data "
                     "written with more than one of them set cannot be read")
        else:
            self.add(FIELD_MOVED_TO_EXISTING_ONEOF,
                     f"message {name}: fields {listed}, independent before, are now in oneof "
                     f"{oneof}: data written with more than one of them set cannot be read")

    def removed(self, o: _Field, deleted: set[str], name: str) -> None:
        if o.oneof is not None:
            if o.oneof not in deleted:
                with self.at(o.oneof), self.at(str(o.number)):
                    self.add(ONEOF_FIELD_REMOVED,
                             f"message {name}: field {o.name} = {o.number} of oneof {o.oneof} "
                             "was removed: data written with it set cannot be read",
                             _declared(o), None)
            return
        required = o.label == "required"
        with self.at(str(o.number)):
            self.add(REQUIRED_FIELD_REMOVED if required else FIELD_REMOVED,
                     f"message {name}: {'required ' if required else ''}field "
                     f"{o.name} = {o.number} was removed", _declared(o), None)

    def added(self, u: _Field, name: str) -> None:
        if u.oneof is not None:
            with self.at(u.oneof), self.at(str(u.number)):
                self.add(ONEOF_FIELD_ADDED, f"message {name}: field {u.name} = {u.number} "
                         f"was added to oneof {u.oneof}", None, _declared(u))
            return
        required = u.label == "required"
        with self.at(str(u.number)):
            self.add(REQUIRED_FIELD_ADDED if required else FIELD_ADDED,
                     f"message {name}: {'required ' if required else ''}field "
                     f"{u.name} = {u.number} was added"
                     + (": data written before has no value for it" if required else ""),
                     None, _declared(u))

    def kept(self, o: _Field, u: _Field, name: str) -> None:
        """A number on both sides: compared whatever its oneof, at its place in the update."""
        if o.oneof is not None and u.oneof is None:
            with self.at(str(u.number)):
                self.add(ONEOF_FIELD_MOVED_TO_TOP_LEVEL, f"message {name}: field {u.name} = "
                         f"{u.number} moved out of oneof {o.oneof}")
        if u.oneof is not None:
            with self.at(u.oneof), self.at(str(u.number)):
                self.field(o, u, name)
        else:
            with self.at(str(u.number)):
                self.field(o, u, name)

    # -- fields --------------------------------------------------------------------------------

    def field(self, original: _Field, update: _Field, name: str) -> None:
        where = f"message {name}: field {update.name} = {update.number}"
        if original.name != update.name:
            self.add(FIELD_NAME_CHANGED, f"message {name}: field {original.number} was renamed "
                     f"from {original.name} to {update.name}", original.name, update.name)
        self.types(original.label, update.label, self.original_type(original.proto),
                   self.update_type(update.proto), where)

    def original_type(self, proto: Any) -> _Type:
        return _type_of(proto, self.original)

    def update_type(self, proto: Any) -> _Type:
        return _type_of(proto, self.update)

    def types(self, o_label: str | None, u_label: str | None, original: _Type, update: _Type,
              where: str) -> None:
        if original.kind != update.kind:
            self.add(FIELD_KIND_CHANGED, f"{where}: a {original.kind.lower()} "
                     f"({original.text}) in the writer, a {update.kind.lower()} ({update.text}) "
                     "in the reader: one cannot be read as the other", original.text,
                     update.text)
        elif original.kind == "SCALAR":
            o_kind, u_kind = original.scalar_kind, update.scalar_kind
            if o_kind != u_kind:
                self.add(FIELD_SCALAR_KIND_CHANGED,
                         f"{where}: {original.text} ({o_kind}) in the writer, {update.text} "
                         f"({u_kind}) in the reader: scalars are read as each other only "
                         "within one wire-compatible group", original.text, update.text)
            elif o_label is not None and u_label is not None and o_label != u_label:
                if o_kind == "STRING_OR_BYTES":
                    self.add(FIELD_STRING_OR_BYTES_LABEL_CHANGED,
                             f"{where}: label {o_label} became {u_label}", o_label, u_label)
                else:
                    self.add(FIELD_NUMERIC_LABEL_CHANGED,
                             f"{where}: {o_label} {original.text} in the writer, {u_label} "
                             f"{update.text} in the reader: a numeric field's label changes "
                             "its encoding (packed or not)", o_label, u_label)
        elif original.kind == "MESSAGE":
            self.message_types(original, update, where)
        elif original.kind == "MAP":
            assert original.key and original.value and update.key and update.value
            self.types(None, None, original.key, update.key, f"{where} (map key)")
            self.types(None, None, original.value, update.value, f"{where} (map value)")

    def message_types(self, original: _Type, update: _Type, where: str) -> None:
        o_info, u_info = original.info, update.info
        if o_info is None or u_info is None:
            if original.text != update.text:
                self.add(FIELD_NAMED_TYPE_CHANGED, f"{where}: message type {original.text} "
                         f"became {update.text}", original.text, update.text)
            return
        o_local, u_local = _local(o_info), _local(u_info)
        if o_local != u_local:
            self.add(FIELD_NAMED_TYPE_CHANGED, f"{where}: message type {o_local} in the "
                     f"writer, {u_local} in the reader: messages are matched by name",
                     o_info.full_name, u_info.full_name)
            return
        if o_info.origin is None and u_info.origin is None:
            return  # both in the schema itself: compared where they are declared
        if o_info.origin is not None and o_info.origin == u_info.origin:
            return  # the same import on both sides
        sub = self.sub(o_local)
        sub.message(o_info.proto, u_info.proto, o_info.full_name)
        self.found.extend(sub.found)
        if any(not d.compatible for d in sub.found):
            self.add(FIELD_NAMED_TYPE_CHANGED, f"{where}: its message type {o_local} (imported) "
                     "changed incompatibly", o_info.full_name, u_info.full_name)


@dataclass(frozen=True)
class _Type:
    """A field's type: SCALAR (scalars and enums), MESSAGE or MAP."""

    kind: str
    text: str
    scalar_kind: str | None = None
    info: _TypeInfo | None = None
    key: _Type | None = None
    value: _Type | None = None


def _type_of(proto: Any, schema: ProtobufSchema) -> _Type:
    if proto.type in _SCALARS:
        scalar = _SCALARS[proto.type]
        return _Type("SCALAR", scalar, SCALAR_KINDS[scalar])
    name = str(proto.type_name).lstrip(".")
    info = schema.types.get(name)
    if proto.type == _TYPE_ENUM or (info is not None and info.is_enum):
        return _Type("SCALAR", name, "GENERAL_NUMBER", info)
    if info is not None and info.is_map:
        entry = {f.number: f for f in info.proto.field}
        key, value = _type_of(entry[1], schema), _type_of(entry[2], schema)
        return _Type("MAP", f"map<{key.text}, {value.text}>", key=key, value=value)
    return _Type("MESSAGE", name, info=info)


def _local(info: _TypeInfo) -> str:
    prefix = info.package + "." if info.package else ""
    return info.full_name[len(prefix):] if prefix and info.full_name.startswith(prefix) \
        else info.full_name


def _messages(scope: Any) -> list[Any]:
    """Messages declared in a file or message, map entries left out (the text has none)."""
    nested = scope.message_type if hasattr(scope, "message_type") else scope.nested_type
    return [m for m in nested if not m.options.map_entry]


def _fields(message: Any, file: Any) -> list[_Field]:
    syntax = str(file.syntax) or "proto2"
    out = []
    for proto in message.field:
        in_oneof = proto.HasField("oneof_index") and not proto.proto3_optional
        oneof = str(message.oneof_decl[proto.oneof_index].name) if in_oneof else None
        out.append(_Field(proto, None if in_oneof else _label(proto, syntax, message), oneof))
    return out


def _label(proto: Any, syntax: str, message: Any) -> str | None:
    """The label the field's text wrote (Confluent's wire model keeps that, not protoc's)."""
    if proto.label == _LABEL_REPEATED:
        if proto.type == _TYPE_MESSAGE and _is_map_entry(message, str(proto.type_name)):
            return None  # map<K, V> is written without a label
        return "repeated"
    if proto.label == _LABEL_REQUIRED:
        return "required"
    if syntax == "proto2" or proto.proto3_optional:
        return "optional"
    return None


def _is_map_entry(message: Any, type_name: str) -> bool:
    short = type_name.rsplit(".", 1)[-1]
    return any(n.name == short and n.options.map_entry for n in message.nested_type)


def _oneofs(fields: list[_Field]) -> dict[str, list[_Field]]:
    """Real oneofs by name, members in field order (proto3 `optional`'s synthetic ones have no
    members here: `_fields` keeps those fields at the top level)."""
    out: dict[str, list[_Field]] = {}
    for f in fields:
        if f.oneof is not None:
            out.setdefault(f.oneof, []).append(f)
    return out


def _declared(f: _Field) -> str:
    t = f.proto.type
    type_text = _SCALARS.get(t) or str(f.proto.type_name).lstrip(".")
    label = f"{f.label} " if f.label else ""
    return f"{label}{type_text} {f.name} = {f.number}"


def differences(original: ProtobufSchema, update: ProtobufSchema) -> list[Difference]:
    """Every Confluent `Difference` from `original` to `update`, compatible ones included."""
    diff = _Diff(original, update)
    diff.files()
    return diff.found


#: protolock's rules Apicurio applies beyond Confluent's (`registry_rules.RegistryRules`).
FIELD_ID_CHANGED = "FIELD_ID_CHANGED"
RPC_SIGNATURE_CHANGED = "RPC_SIGNATURE_CHANGED"


def protolock_differences(original: ProtobufSchema, update: ProtobufSchema) -> list[Difference]:
    """Apicurio's protolock checks Confluent has no counterpart for: a field keeps its number
    (NoChangingFieldIDs, fields matched by name) and an rpc its request and response types
    (NoChangingRPCSignature). Its renames are Confluent's FIELD_NAME_CHANGED."""
    found: list[Difference] = []
    for name, info in original.types.items():
        other = update.types.get(name)
        if info.origin is not None or info.is_enum or other is None or other.is_enum:
            continue
        numbers = {f.name: f.number for f in other.proto.field}
        for f in info.proto.field:
            if numbers.get(f.name, f.number) != f.number:
                found.append(Difference(
                    FIELD_ID_CHANGED, f"/{_local(info)}/{f.number}",
                    f"message {name}: field {f.name} = {f.number} became {f.name} = "
                    f"{numbers[f.name]} (Apicurio follows protolock: a field keeps its number)"))
    methods = {(s.name, m.name): m for s in update.file.service for m in s.method}
    for service in original.file.service:
        for method in service.method:
            new = methods.get((service.name, method.name))
            if new is not None and (new.input_type, new.output_type) != (
                    method.input_type, method.output_type):
                found.append(Difference(
                    RPC_SIGNATURE_CHANGED, f"/{service.name}/{method.name}",
                    f"rpc {service.name}.{method.name}({method.input_type.lstrip('.')}) returns "
                    f"{method.output_type.lstrip('.')} became ({new.input_type.lstrip('.')}) "
                    f"returns {new.output_type.lstrip('.')} (Apicurio follows protolock: an rpc "
                    "keeps its signature)"))
    return found


def removed_without_reserve(old: ProtobufSchema, new: ProtobufSchema) -> list[Incompatibility]:
    """protolock's NoRemovingFieldsWithoutReserve, which Apicurio applies from the old version
    to the new one at every level: a field removed must leave its number and its name
    reserved. Confluent reports FIELD_REMOVED, a compatible change."""
    found: list[Incompatibility] = []
    for name, info in old.types.items():
        other = new.types.get(name)
        if info.origin is not None or info.is_enum or other is None or other.is_enum:
            continue
        kept = {f.number for f in other.proto.field} | {f.name for f in other.proto.field}
        reserved = set(other.proto.reserved_name)
        for f in info.proto.field:
            if f.number in kept or f.name in kept:
                continue  # kept, or renumbered (FIELD_ID_CHANGED)
            missing = [] if any(r.start <= f.number < r.end
                                for r in other.proto.reserved_range) else [f"{f.number}"]
            missing += [] if f.name in reserved else [f'"{f.name}"']
            if missing:
                found.append(Incompatibility(
                    "FIELD_REMOVED_WITHOUT_RESERVE", f"/{_local(info)}/{f.number}",
                    f"message {name}: field {f.name} = {f.number} was removed without "
                    + " and ".join(f"`reserved {m};`" for m in missing)
                    + " (Apicurio follows protolock: a removed field's number and name stay "
                    "reserved)"))
    return found


def check_reader_writer(reader: ProtobufSchema, writer: ProtobufSchema,
                        rules: RegistryRules = CONFLUENT) -> list[Incompatibility]:
    """Every reason `reader` cannot read data written with `writer`; [] when it can (by
    Confluent's rules, or by `rules` where that registry differs)."""
    found = differences(writer, reader)
    compatible = set(COMPATIBLE_CHANGES)
    if rules.package_change_compatible:
        compatible.add(PACKAGE_CHANGED)
    if rules.protolock_names_numbers_rpcs:
        compatible.discard(FIELD_NAME_CHANGED)
        found += protolock_differences(writer, reader)
    return [
        Incompatibility(kind=d.type, path=d.path, message=d.message,
                        reader_fragment=d.update, writer_fragment=d.original)
        for d in found if d.type not in compatible
    ]


def _under(rules: RegistryRules) -> PairChecker[ProtobufSchema]:
    return PairChecker(parse=parse, check=partial(check_reader_writer, rules=rules),
                       history=removed_without_reserve if rules.protolock_names_numbers_rpcs
                       else None)


CHECKER: PairChecker[ProtobufSchema] = PairChecker(parse=parse, check=check_reader_writer,
                                                   under=_under)
