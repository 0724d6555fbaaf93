"""The Protobuf runtime side of the protobuf key rules (guard/keys/protobuf.py).

A side's key message (its `.proto` schema compiled by protoc, loaded into a fresh
`DescriptorPool`, its class from `message_factory.GetMessageClass`, its index path in the file),
key values in and out of messages, and witnesses: a key set on the old message and carried to
the new one, both encoded by the official runtime and framed as the side's format frames them
(protobuf-registry: magic byte 0, the schema id, Confluent's message-index array, the body).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import EncodeError, Message

from keyguard.formats.errors import SchemaError
from keyguard.formats.framing import CONFLUENT_PROTOBUF
from keyguard.formats.framing import message_index_bytes as message_index_bytes  # importers
from keyguard.formats.protobuf_format import message_name
from keyguard.formats.protobuf_schema import (
    ProtoSchema,
    add_to_pool,
    find_message,
    parse_proto,
    unbundle,
)
from keyguard.guard.keys.side import KeySide, effective_options
from keyguard.guard.keys.witness import place
from keyguard.guard.report import Witness

#: The format option that names the key message in the schema (and Flink's name it accepts).
#: The protobuf formats declare it (formats/protobuf_format.py `MESSAGE`, built in parallel):
#: once merged, read it through that constant.
MESSAGE_OPTIONS = ("message", "message-class-name")

_T = FieldDescriptor

# --- the key message of a side -------------------------------------------------------------


@dataclass(frozen=True)
class KeyMessage:
    """A side's key message: its parsed file, its runtime descriptor and class, its index path
    in the file (what Confluent's message-index array holds)."""

    schema: ProtoSchema
    descriptor: Descriptor
    cls: type[Message]
    indexes: tuple[int, ...]

    @property
    def full_name(self) -> str:
        return str(self.descriptor.full_name)


def side_proto(side: KeySide) -> ProtoSchema:
    """The side's `.proto` schema: `side.schema` (a ProtoSchema, a SchemaText of type PROTOBUF
    or the text).

    Never the format's `schema` option: that is the candidate's, and an existing keys' side
    judged with it would look unchanged.
    """
    given = side.schema
    if isinstance(given, ProtoSchema):
        return given
    if isinstance(given, str):
        text, refs = unbundle(given)
        return _parse(text, "the Protobuf key schema", tuple(sorted(refs.items())))
    own_text = getattr(given, "text", None)
    if isinstance(own_text, str):
        files: dict[str, str] = {}
        for r in getattr(given, "references", ()):
            inner, deeper = unbundle(str(r.standalone))
            files.update(deeper)
            files[str(r.reference.name)] = inner
        return _parse(own_text, str(getattr(given, "origin", "the Protobuf key schema")),
                      tuple(sorted(files.items())))
    raise SchemaError(f"no Protobuf key schema for the {side.format} key side",
                      hint="give the key's .proto schema (a schema file or the registered "
                      "version)")


@functools.lru_cache(maxsize=64)
def _parse(text: str, origin: str, refs: tuple[tuple[str, str], ...]) -> ProtoSchema:
    return parse_proto(text, origin, references=dict(refs) or None)


@functools.lru_cache(maxsize=64)
def _pool(files: tuple[bytes, ...]) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    add_to_pool(pool, [descriptor_pb2.FileDescriptorProto.FromString(raw) for raw in files])
    return pool


def key_message(side: KeySide) -> KeyMessage:
    """The key message: the one the format's options name, else the file's first message,
    chosen as the format chooses the message it writes (`keyguard.formats.protobuf_format`)."""
    schema = side_proto(side)
    files = tuple(f.SerializeToString() for f in (*schema.dependencies, schema.file))  # type: ignore[attr-defined]
    pool = _pool(files)
    file = pool.FindFileByName(schema.file.name)  # type: ignore[attr-defined]
    options = effective_options(side)
    wanted = next((str(options[k]) for k in MESSAGE_OPTIONS if options.get(k)), None)
    try:
        _, indexes = find_message(schema, message_name(schema, wanted))
    except SchemaError as exc:
        raise SchemaError(f"the Protobuf key schema: {exc.message}", hint=exc.hint) from None
    desc = list(file.message_types_by_name.values())[indexes[0]]
    for i in indexes[1:]:
        desc = desc.nested_types[i]
    return KeyMessage(schema, desc, message_factory.GetMessageClass(desc), indexes)


# --- witnesses: keys encoded by the runtime -------------------------------------------------


class _Absent:
    """The new side leaves the field out (it was removed, or its value is not carried)."""


ABSENT = _Absent()


@dataclass(frozen=True)
class Unwritable:
    """The new side cannot hold the old key's value: why (and what a reader would make of it)."""

    why: str


@dataclass(frozen=True)
class Step:
    """One field on the way to a change: old and new descriptor (new None: removed)."""

    old: FieldDescriptor | None
    new: FieldDescriptor | None


@dataclass
class Encoding:
    """How each side frames a key: the side, its key message, its schema id."""

    side: KeySide
    message: KeyMessage
    schema_id: int | None
    partitions: int

    def frame(self, body: bytes) -> bytes:
        if not self.side.id_in_bytes:  # bare, or the id (and index) in a header
            return body
        prefix = CONFLUENT_PROTOBUF.header_bytes(
            self.schema_id if self.schema_id is not None else 1, self.message.indexes)
        return prefix + body

    def place(self, data: bytes | None) -> int | None:
        if data is None:
            return None
        return place(self.side.partitioner_family, data, self.partitions)


def sample(f: FieldDescriptor) -> Any:
    """A typical value of the field that is not its zero value (so every side writes it)."""
    if f.is_repeated and not is_map(f):
        return [scalar_sample(f), scalar_sample(f, second=True)] if packable(f) \
            else [scalar_sample(f)]
    if is_map(f):
        k, v = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        return {scalar_sample(k): scalar_sample(v)}
    return scalar_sample(f)


def scalar_sample(f: FieldDescriptor, second: bool = False) -> Any:
    t = f.type
    if t in (_T.TYPE_MESSAGE, _T.TYPE_GROUP):
        return {}
    if t == _T.TYPE_ENUM:
        numbers = [v.number for v in f.enum_type.values]
        nonzero = [n for n in numbers if n != 0] or numbers
        return nonzero[min(int(second), len(nonzero) - 1)]
    if t == _T.TYPE_BOOL:
        return True
    if t in (_T.TYPE_FLOAT, _T.TYPE_DOUBLE):
        return 2.5 if second else 1.5
    if t == _T.TYPE_STRING:
        return "user-2" if second else "user-1"
    if t == _T.TYPE_BYTES:
        return b"\x03" if second else b"\x01\x02"
    return 2 if second else 1


def is_map(f: FieldDescriptor) -> bool:
    return bool(f.type == _T.TYPE_MESSAGE and f.is_repeated and
                f.message_type.GetOptions().map_entry)


def packable(f: FieldDescriptor) -> bool:
    return f.type not in (_T.TYPE_STRING, _T.TYPE_BYTES, _T.TYPE_MESSAGE, _T.TYPE_GROUP)


def _assign(msg: Message, f: FieldDescriptor, value: Any) -> None:
    """Set field `f` of `msg` to `value` (a dict fills a sub-message)."""
    if is_map(f):
        if not isinstance(value, Mapping):
            raise TypeError(f"{f.full_name} is a map, not {value!r}")
        target = getattr(msg, f.name)
        vf = f.message_type.fields_by_name["value"]
        for k, v in value.items():
            if vf.type == _T.TYPE_MESSAGE:
                fill(target[k], v)
            else:
                target[k] = _coerce(vf, v)
    elif f.is_repeated:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{f.full_name} is repeated, not {value!r}")
        target = getattr(msg, f.name)
        for v in value:
            if f.type in (_T.TYPE_MESSAGE, _T.TYPE_GROUP):
                fill(target.add(), v)
            else:
                target.append(_coerce(f, v))
    elif f.type in (_T.TYPE_MESSAGE, _T.TYPE_GROUP):
        if not isinstance(value, Mapping):
            raise TypeError(f"{f.full_name} is a message, not {value!r}")
        sub = getattr(msg, f.name)
        sub.SetInParent()
        fill(sub, value)
    else:
        setattr(msg, f.name, _coerce(f, value))


def _coerce(f: FieldDescriptor, v: Any) -> Any:
    """Python's bool is an int to us, as on the wire; the runtime keeps them apart. An enum
    value may be given by name (a table's STRING column)."""
    if f.type == _T.TYPE_ENUM and isinstance(v, str):
        found = f.enum_type.values_by_name.get(v)
        if found is None:
            raise ValueError(f"{f.enum_type.full_name} has no value {v!r}")
        return found.number
    if f.type == _T.TYPE_BOOL and isinstance(v, int) and not isinstance(v, bool):
        if v not in (0, 1):
            raise ValueError(f"{v} is no bool")
        return bool(v)
    if f.type not in (_T.TYPE_BOOL, _T.TYPE_FLOAT, _T.TYPE_DOUBLE) and isinstance(v, bool):
        return int(v)
    return v


def fill(msg: Message, values: Mapping[str, Any]) -> Message:
    """Set the fields of `msg` named in `values` (nested dicts for messages, lists, maps)."""
    if not isinstance(values, Mapping):
        raise TypeError(f"{msg.DESCRIPTOR.full_name} is a message, not {values!r}")
    fields = msg.DESCRIPTOR.fields_by_name
    for name, v in values.items():
        f = fields.get(name)
        if f is None:
            raise KeyError(f"{msg.DESCRIPTOR.full_name} has no field {name!r}")
        if v is not None:
            _assign(msg, f, v)
    return msg


def _nest(steps: Sequence[FieldDescriptor], leaf: Any) -> dict[str, Any]:
    out: Any = leaf
    for f in reversed(steps):
        if is_map(f):
            k = scalar_sample(f.message_type.fields_by_name["key"])
            out = {f.name: {k: out}}
        elif f.is_repeated:
            out = {f.name: [out]}
        else:
            out = {f.name: out}
    return dict(out)


class Witnesses:
    """Builds a witness: a key set on the old message and carried to the new one."""

    def __init__(self, old: Encoding, new: Encoding) -> None:
        self.old, self.new = old, new
        # proto2 required fields of the key message: set in every key (the runtime insists).
        od, nd = old.message.descriptor, new.message.descriptor
        self.old_base = {f.name: sample(f) for f in od.fields if f.is_required}
        self.new_base = {k: v for k, v in self.old_base.items() if k in nd.fields_by_name}

    def encode(self, enc: Encoding, values: Mapping[str, Any]) -> bytes:
        msg = fill(enc.message.cls(), values)
        return enc.frame(msg.SerializeToString())

    def typical(self) -> Witness | None:
        """A key with a typical value in each top-level scalar field the new message writes
        alike (same name, number and type): the witness of a change to the whole key."""
        od, nd = self.old.message.descriptor, self.new.message.descriptor
        pairs, _, _ = pair_proto_fields(list(od.fields), list(nd.fields))
        def alike(f: FieldDescriptor, g: FieldDescriptor) -> bool:
            return (f.name, f.number, f.type, f.is_repeated, f.has_presence, f.is_packed) == \
                (g.name, g.number, g.type, g.is_repeated, g.has_presence, g.is_packed)

        key = {f.name: sample(f) for f, g in pairs if alike(f, g) and
               f.type not in (_T.TYPE_MESSAGE, _T.TYPE_GROUP, _T.TYPE_ENUM)}
        return self.pair([], key)

    def pair(self, path: Sequence[Step], old_value: Any, new_value: Any = None,
             *, same: bool = True) -> Witness | None:
        """The key holding `old_value` at `path`; the new side's value is `new_value` (`same`:
        the old one, carried), ABSENT (left out) or Unwritable (no new bytes)."""
        if same:
            new_value = old_value
        old_steps = [s.old for s in path]
        if any(f is None for f in old_steps):
            old_key: dict[str, Any] = {}
        elif old_steps:
            old_key = _nest(old_steps[:-1],  # type: ignore[arg-type]
                            {old_steps[-1].name: old_value})  # type: ignore[union-attr]
        else:
            old_key = dict(old_value)
        old_key = {**self.old_base, **old_key}
        try:
            old_bytes = self.encode(self.old, old_key)
        except (ValueError, TypeError, KeyError, EncodeError):
            return None
        new_bytes, error = None, None
        new_steps = [s.new for s in path]
        if isinstance(new_value, Unwritable):
            error = new_value.why
        else:
            try:
                if any(f is None for f in new_steps[:-1]):
                    raise KeyError("the enclosing field is gone")
                if not new_steps:
                    new_key = dict(new_value)
                elif new_steps[-1] is None or new_value is ABSENT:
                    new_key = _nest(new_steps[:-1], {}) if len(new_steps) > 1 else {}  # type: ignore[arg-type]
                else:
                    new_key = _nest(new_steps[:-1],  # type: ignore[arg-type]
                                    {new_steps[-1].name: new_value})
                new_bytes = self.encode(self.new, {**self.new_base, **new_key})
            except (ValueError, TypeError, KeyError, EncodeError) as exc:
                error = f"the new message cannot write it: {exc}"
        return Witness(old_key, old_bytes, new_bytes, error, self.old.place(old_bytes),
                       self.new.place(new_bytes))


def pair_proto_fields(old: list[FieldDescriptor], new: list[FieldDescriptor]
                 ) -> tuple[list[tuple[FieldDescriptor, FieldDescriptor]],
                            list[FieldDescriptor], list[FieldDescriptor]]:
    """Pairs by number and name, then by name (renumbered), then by number (renamed)."""
    pairs: list[tuple[FieldDescriptor, FieldDescriptor]] = []
    free_old, free_new = list(old), list(new)

    def match(same: Callable[[FieldDescriptor, FieldDescriptor], bool]) -> None:
        for f in list(free_old):
            g = next((g for g in free_new if same(f, g)), None)
            if g is not None:
                pairs.append((f, g))
                free_old.remove(f)
                free_new.remove(g)

    match(lambda f, g: f.number == g.number and f.name == g.name)
    match(lambda f, g: f.name == g.name)
    match(lambda f, g: f.number == g.number)
    pairs.sort(key=lambda p: p[1].number)
    return pairs, free_old, free_new



def as_values(msg: Message) -> dict[str, Any]:
    """The set fields of a message as values `fill` takes back (enums as numbers)."""
    out: dict[str, Any] = {}
    for f, v in msg.ListFields():
        if is_map(f):
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = {k: as_values(x) if vf.type == _T.TYPE_MESSAGE else x
                           for k, x in v.items()}
        elif f.is_repeated:
            out[f.name] = [as_values(x) if f.type in (_T.TYPE_MESSAGE, _T.TYPE_GROUP) else x
                           for x in v]
        elif f.type in (_T.TYPE_MESSAGE, _T.TYPE_GROUP):
            out[f.name] = as_values(v)
        else:
            out[f.name] = v
    return out
