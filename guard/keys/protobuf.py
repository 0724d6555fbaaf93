"""Key-byte rules of protobuf and protobuf-registry: the Protobuf wire encoding, and for the
registry format Confluent's schema id and message index.

What identifies a Protobuf key is its encoding: each set field as its number and wire type, then
its value, in field-number order, with implicit-presence zero values left out (the official
runtime's output, which Confluent's serializer and Flink write). Names, packages, comments and
defaults are not on the wire. So the walk pairs the fields of the old and the new key message by
number and name, and asks of each pair whether every value an existing key can hold is written
to the same bytes by the new message: the same number, an encoding that agrees on every value
the old type holds (int32 -> int64 keeps the varint; int32 -> uint32 cannot hold -1; sint32 is
zig-zag; fixed32 is 4 bytes and fixed64 8), the same presence (explicit presence writes a zero
that implicit presence leaves out) and the same packing of repeated scalars.

Every change carries its witness: a concrete key encoded under the old and under the new
descriptor by the official protobuf runtime (`message_factory.GetMessageClass` over a fresh
`DescriptorPool`), framed as the side's format frames it. protobuf-registry keys start with
magic byte 0, the 4-byte schema id and the key message's index in its file (Confluent's
message-index array), so moving the key message in the file, or any change the registry sees
as a new schema, changes every key. The runtime side (messages, values, witnesses) is
`guard/keys/protobuf_wire.py`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import DecodeError, EncodeError

from keyguard.formats.errors import SchemaError
from keyguard.guard.keys.confluent import Ids, resolve_ids
from keyguard.guard.keys.protobuf_wire import (
    ABSENT,
    Encoding,
    Step,
    Unwritable,
    Witnesses,
    as_values,
    fill,
    is_map,
    key_message,
    packable,
    pair_proto_fields,
    sample,
    scalar_sample,
)
from keyguard.guard.keys.side import Change, FamilyContext, KeySide
from keyguard.guard.keys.witness import (
    ILLUSTRATIVE_PARTITIONS,
    Carry,
    CarryError,
    Encoder,
    carry_row,
)
from keyguard.guard.rules import (
    KEY_FIELD_ADDED,
    PROTOBUF_DEFAULT_CHANGED,
    PROTOBUF_ENUM_NUMBER_CHANGED,
    PROTOBUF_ENUM_VALUES_COMPATIBLE,
    PROTOBUF_FIELD_ADDED,
    PROTOBUF_FIELD_NUMBER_CHANGED,
    PROTOBUF_FIELD_REMOVED,
    PROTOBUF_FIELD_RENAMED,
    PROTOBUF_FIELD_REQUIRED,
    PROTOBUF_MESSAGE_INDEX_CHANGED,
    PROTOBUF_MESSAGE_RENAMED,
    PROTOBUF_ONEOF_CHANGED,
    PROTOBUF_ONEOF_MERGED,
    PROTOBUF_PACKED_CHANGED,
    PROTOBUF_PRESENCE_CHANGED,
    PROTOBUF_SAME_WIRE_ENCODING,
    PROTOBUF_TYPE_NARROWED,
    PROTOBUF_WIRE_ENCODING_CHANGED,
)

_T = FieldDescriptor

# --- scalar types: encodings and what each can hold ------------------------------------------

#: Per scalar type: the wire encoding of its values, and the integers it holds (None: not an
#: integer type). Types of one encoding write every value both hold to the same bytes: all
#: varint types write v mod 2^64 as a varint, both zig-zag types zig-zag it, fixed types write
#: little-endian two's complement of their width.
_SCALARS: dict[int, tuple[str, tuple[int, int] | None]] = {
    _T.TYPE_INT32: ("varint", (-(1 << 31), (1 << 31) - 1)),
    _T.TYPE_INT64: ("varint", (-(1 << 63), (1 << 63) - 1)),
    _T.TYPE_UINT32: ("varint", (0, (1 << 32) - 1)),
    _T.TYPE_UINT64: ("varint", (0, (1 << 64) - 1)),
    _T.TYPE_BOOL: ("varint", (0, 1)),
    _T.TYPE_ENUM: ("varint", (-(1 << 31), (1 << 31) - 1)),
    _T.TYPE_SINT32: ("zigzag", (-(1 << 31), (1 << 31) - 1)),
    _T.TYPE_SINT64: ("zigzag", (-(1 << 63), (1 << 63) - 1)),
    _T.TYPE_FIXED32: ("fixed32", (0, (1 << 32) - 1)),
    _T.TYPE_SFIXED32: ("fixed32", (-(1 << 31), (1 << 31) - 1)),
    _T.TYPE_FIXED64: ("fixed64", (0, (1 << 64) - 1)),
    _T.TYPE_SFIXED64: ("fixed64", (-(1 << 63), (1 << 63) - 1)),
    _T.TYPE_FLOAT: ("float32", None),
    _T.TYPE_DOUBLE: ("float64", None),
    _T.TYPE_STRING: ("length-delimited", None),
    _T.TYPE_BYTES: ("length-delimited", None),
    _T.TYPE_MESSAGE: ("message", None),
    _T.TYPE_GROUP: ("group", None),
}

_TYPE_NAMES = {getattr(_T, n): n[5:].lower() for n in dir(_T) if n.startswith("TYPE_")}


def type_name(f: FieldDescriptor) -> str:
    if f.type == _T.TYPE_ENUM:
        return f"enum {f.enum_type.full_name}"
    if f.type in (_T.TYPE_MESSAGE, _T.TYPE_GROUP):
        if is_map(f):
            k, v = (f.message_type.fields_by_name[n] for n in ("key", "value"))
            return f"map<{type_name(k)}, {type_name(v)}>"
        return f"message {f.message_type.full_name}"
    name = _TYPE_NAMES.get(f.type, str(f.type))
    return f"repeated {name}" if f.is_repeated else name


def _domain(f: FieldDescriptor) -> tuple[int, int] | frozenset[int] | None:
    """The integers an existing key can hold in the field (a closed enum: its numbers)."""
    if f.type == _T.TYPE_ENUM and f.enum_type.is_closed:
        return frozenset(v.number for v in f.enum_type.values)
    return _SCALARS[f.type][1]


def _outside(old: tuple[int, int] | frozenset[int],
             new: tuple[int, int] | frozenset[int]) -> int | None:
    """An integer `old` holds and `new` does not; None when `new` holds all of `old`."""
    def holds(d: tuple[int, int] | frozenset[int], v: int) -> bool:
        return v in d if isinstance(d, frozenset) else d[0] <= v <= d[1]

    if isinstance(old, frozenset):
        cands = sorted(old, key=lambda v: (abs(v), v))
    else:
        lo, hi = old
        near = [-1, 1, 2, 0, lo, hi]
        if isinstance(new, tuple):
            near = [new[1] + 1, new[0] - 1, *near]
        else:
            near += list(range(lo, min(hi, lo + 64) + 1))
            near += [v + d for v in new for d in (-1, 1)]
        cands = [v for v in near if lo <= v <= hi]
    return next((v for v in cands if not holds(new, v)), None)


def _reads_as(f: FieldDescriptor, v: int) -> int:
    """What a reader with type `f` makes of the varint / fixed value an int `v` is written as."""
    u = v & ((1 << 64) - 1)
    if f.type in (_T.TYPE_INT32, _T.TYPE_ENUM, _T.TYPE_SFIXED32, _T.TYPE_SINT32):
        u &= 0xFFFFFFFF
        return u - (1 << 32) if u >> 31 else u
    if f.type in (_T.TYPE_UINT32, _T.TYPE_FIXED32):
        return u & 0xFFFFFFFF
    if f.type == _T.TYPE_BOOL:
        return int(u != 0)
    if f.type in (_T.TYPE_INT64, _T.TYPE_SFIXED64, _T.TYPE_SINT64):
        return u - (1 << 64) if u >> 63 else u
    return u


# --- the walk ----------------------------------------------------------------------------------


def _proto3_optional(d: Descriptor) -> frozenset[str]:
    proto = descriptor_pb2.DescriptorProto()
    d.CopyToProto(proto)
    return frozenset(f.name for f in proto.field if f.proto3_optional)


def _oneof(f: FieldDescriptor) -> str | None:
    """The field's real oneof (not the synthetic one of a proto3 `optional`)."""
    o = f.containing_oneof
    if o is None or f.name in _proto3_optional(f.containing_type):
        return None
    return str(o.name)


def _show(path: Sequence[Step], new: bool = True) -> str:
    names = [(s.new if new and s.new is not None else s.old) for s in path]
    return ".".join(f.name for f in names if f is not None) or "$"


@dataclass
class ProtoWalk:
    """One comparison of the old and the new key message, by their wire encodings.

    Like Avro's SchemaCompatibility, one recursive walk yields every change with its location;
    a pair of message types already being compared further up is not compared again.
    """

    witnesses: Witnesses
    in_progress: set[tuple[str, str]]

    def message(self, o: Descriptor, n: Descriptor, path: list[Step]) -> Iterator[Change]:
        pair = (o.full_name, n.full_name)
        if pair in self.in_progress:
            return
        self.in_progress.add(pair)
        try:
            yield from self._message(o, n, path)
        finally:
            self.in_progress.discard(pair)

    def _message(self, o: Descriptor, n: Descriptor, path: list[Step]) -> Iterator[Change]:
        pairs, removed, added = pair_proto_fields(list(o.fields), list(n.fields))
        for f in removed:
            yield from self._removed(path, f)
        for g in added:
            yield from self._added(path, g)
        for f, g in pairs:
            yield from self._field(f, g, [*path, Step(f, g)])
        yield from self._oneofs(pairs, path)

    def _removed(self, path: list[Step], f: FieldDescriptor) -> Iterator[Change]:
        where = _show([*path, Step(f, None)])
        yield Change(PROTOBUF_FIELD_REMOVED, where,
                     f"field '{where}' = {f.number} ({type_name(f)}) removed: existing keys that "
                     "set it hold its bytes, the new message writes none",
                     witness=self.witnesses.pair([*path, Step(f, None)], sample(f), ABSENT,
                                                 same=False))

    def _added(self, path: list[Step], g: FieldDescriptor) -> Iterator[Change]:
        where = _show([*path, Step(None, g)])
        w = self.witnesses.pair(path, {}, {}) if path else self.witnesses.typical()
        if g.is_required:
            yield Change(PROTOBUF_FIELD_REQUIRED, where,
                         f"required field '{where}' = {g.number} added: existing keys lack it, "
                         "and the new message cannot be written without it",
                         witness=self.witnesses.pair(
                             [*path, Step(None, g)], None,
                             Unwritable(f"required field '{where}' is not set"), same=False))
            return
        if not g.has_presence:
            # Implicit presence (a proto3 scalar, a repeated field): the column is NOT NULL, so
            # the writer fills it for every existing row, and a value that is not the default
            # is written: another key. Only a field that can be unset (null) keeps old keys.
            yield Change(KEY_FIELD_ADDED, where,
                         f"field '{where}' = {g.number} ({type_name(g)}) added without presence: "
                         "every existing row gets a value for it, and any value but the default "
                         "is written into the key", witness=self.witnesses.pair(
                             [*path, Step(None, g)], None, sample(g), same=False))
            return
        yield Change(PROTOBUF_FIELD_ADDED, where,
                     f"field '{where}' = {g.number} ({type_name(g)}) added with presence: "
                     "existing rows have it unset (null), and an unset field is not written "
                     "(a key that sets it is another key)",
                     witness=w)

    def _field(self, f: FieldDescriptor, g: FieldDescriptor, path: list[Step]) -> Iterator[Change]:
        where = _show(path)
        what = f"'{where}'"
        w = self.witnesses
        if f.number != g.number:
            yield Change(PROTOBUF_FIELD_NUMBER_CHANGED, where,
                         f"{what} field number {f.number} -> {g.number}: the number is written "
                         "before every value", witness=w.pair(path, sample(f)))
            return
        if f.name != g.name:
            yield Change(PROTOBUF_FIELD_RENAMED, where,
                         f"field '{_show(path, new=False)}' renamed to '{where}' (number "
                         f"{f.number}): Protobuf writes numbers, not names",
                         witness=w.pair(path, sample(f)))
        if f.is_required and not g.is_required:
            pass  # a required field is always set: written the same as an explicit optional
        elif g.is_required and not f.is_required:
            yield Change(PROTOBUF_FIELD_REQUIRED, where,
                         f"{what} became required: existing keys without it cannot be written",
                         witness=w.pair(path[:-1], {},
                                        Unwritable(f"required field {what} is not set"),
                                        same=False))
            return
        if (f.is_repeated, is_map(f)) != (g.is_repeated, is_map(g)):
            yield Change(PROTOBUF_WIRE_ENCODING_CHANGED, where,
                         f"{what} {type_name(f)} -> {type_name(g)}: a singular value, a "
                         "repeated one and a map are written differently",
                         witness=w.pair(path, sample(f)))
            return
        yield from self._type(f, g, path)
        yield from self._field_settings(f, g, path)

    def _field_settings(self, f: FieldDescriptor, g: FieldDescriptor,
                        path: list[Step]) -> Iterator[Change]:
        """What else of a kept field decides its bytes: presence, packing, the default."""
        where = _show(path)
        what = f"'{where}'"
        w = self.witnesses
        if not f.is_repeated and f.has_presence != g.has_presence:
            zero = _zero(f)
            yield Change(PROTOBUF_PRESENCE_CHANGED, where,
                         f"{what} {_presence(f)} -> {_presence(g)}: explicit presence writes a "
                         "set zero value that implicit presence leaves out, so keys holding "
                         f"{zero!r} change", witness=w.pair(path, zero))
        if f.is_repeated and not is_map(f) and packable(f) and packable(g) and \
                f.is_packed != g.is_packed:
            yield Change(PROTOBUF_PACKED_CHANGED, where,
                         f"{what} {_packing(f)} -> {_packing(g)}: a packed field is one "
                         "length-delimited record, an unpacked one a record per element",
                         witness=w.pair(path, sample(f)))
        if not f.is_repeated and f.has_presence and g.has_presence and \
                f.type not in (_T.TYPE_MESSAGE, _T.TYPE_GROUP) and \
                f.type == g.type and f.default_value != g.default_value:
            yield Change(PROTOBUF_DEFAULT_CHANGED, where,
                         f"{what} default {f.default_value!r} -> {g.default_value!r}: defaults "
                         "are not written (only readers of an unset field see them)",
                         witness=w.pair(path[:-1], {}))

    def _type(self, f: FieldDescriptor, g: FieldDescriptor, path: list[Step],
              leaf: Callable[[Any], Any] | None = None) -> Iterator[Change]:
        """A pair of field types; `leaf` makes the path's value of one of `f`'s values (a
        repeated field's list, a map's entry)."""
        where = _show(path)
        what = f"'{where}' {type_name(f)} -> {type_name(g)}"
        w = self.witnesses
        put = leaf or functools.partial(_wrap, f)
        if is_map(f) and is_map(g):
            yield from self._field_pair_in(f.message_type, g.message_type, path)
            return
        ok, nk = _SCALARS[f.type][0], _SCALARS[g.type][0]
        if ok == nk == "message" or ok == nk == "group":
            yield from self.message(f.message_type, g.message_type, path)
            return
        if f.type == g.type == _T.TYPE_ENUM:
            yield from self._enum(f, g, path, put)
            return
        if ok != nk:
            v = _common_value(f, g)
            yield Change(PROTOBUF_WIRE_ENCODING_CHANGED, where,
                         f"{what}: {ok} vs {nk} encoding, other bytes for the same value",
                         witness=w.pair(path, put(v)))
            return
        if ok == "length-delimited":
            if (f.type, g.type) == (_T.TYPE_BYTES, _T.TYPE_STRING):
                not_utf8 = b"\xff\xfe"
                yield Change(PROTOBUF_TYPE_NARROWED, where,
                             f"{what}: existing keys that are not UTF-8 cannot be a string",
                             witness=w.pair(path, put(not_utf8), put(Unwritable(
                                 f"{not_utf8!r} is not UTF-8: no string holds it")),
                                 same=False))
            elif f.type != g.type:
                yield Change(PROTOBUF_SAME_WIRE_ENCODING, where,
                             f"{what}: both are written as length + bytes (and a string is "
                             "always UTF-8)", witness=w.pair(
                                 path, put(b"user-1" if f.type == _T.TYPE_BYTES else "user-1"),
                                 put(b"user-1"), same=False))
            return
        if f.type == g.type:
            return
        od, nd = _domain(f), _domain(g)
        if od is None or nd is None:  # float32 / float64 of one type: equal types returned
            return
        bad = _outside(od, nd)
        if bad is not None:
            seen = _reads_as(g, bad)
            yield Change(PROTOBUF_TYPE_NARROWED, where,
                         f"{what}: existing keys holding {bad} cannot be written (a reader of "
                         f"the new type sees {seen})",
                         witness=w.pair(path, put(bad), put(Unwritable(
                             f"{bad} does not fit {type_name(g)}: read under the new schema it "
                             f"is {seen}")), same=False))
            return
        v = _common_value(f, g)
        yield Change(PROTOBUF_SAME_WIRE_ENCODING, where,
                     f"{what}: the same {ok} encoding, and the new type holds every value of "
                     "the old", witness=w.pair(path, put(v)))

    def _field_pair_in(self, o: Descriptor, n: Descriptor, path: list[Step]) -> Iterator[Change]:
        """A map's key and value types (its entry message's fields), each value in an entry."""
        (ok, ov), (nk, nv) = ((d.fields_by_name["key"], d.fields_by_name["value"]) for d in (o, n))
        where = f"{_show(path)}{{key}}"
        k = scalar_sample(ok)
        if ok.type != nk.type:
            yield Change(PROTOBUF_WIRE_ENCODING_CHANGED, where,
                         f"'{where}' {type_name(ok)} -> {type_name(nk)}: the map's key type "
                         "changed, and each entry is written with its key",
                         witness=self.witnesses.pair(path, {k: scalar_sample(ov)}))
            return
        if ov.type in (_T.TYPE_MESSAGE, _T.TYPE_GROUP) and ov.type == nv.type:
            yield from self.message(ov.message_type, nv.message_type, path)
            return

        def entry(v: Any) -> Any:
            return v if isinstance(v, Unwritable) else {k: v}

        for c in self._type(ov, nv, path, entry):
            yield c.replace(path=f"{_show(path)}{{value}}")

    def _enum(self, f: FieldDescriptor, g: FieldDescriptor, path: list[Step],
              put: Callable[[Any], Any]) -> Iterator[Change]:
        oe: EnumDescriptor = f.enum_type
        where = _show(path)
        d = _EnumChanges.of(oe, g.enum_type)
        w = self.witnesses
        if d.moved:
            _, a, b = d.moved[0]
            yield Change(PROTOBUF_ENUM_NUMBER_CHANGED, where,
                         f"'{where}' enum {oe.full_name}: " + ", ".join(
                             f"{n} {x} -> {y}" for n, x, y in d.moved)
                         + ": an enum is written as its number",
                         witness=w.pair(path, put(a), put(b), same=False))
        if d.gone:
            name, a = d.gone[0]
            yield Change(PROTOBUF_ENUM_NUMBER_CHANGED, where,
                         f"'{where}' enum {oe.full_name}: " + ", ".join(n for n, _ in d.gone)
                         + " removed: existing keys holding it cannot be written",
                         witness=w.pair(path, put(a), put(Unwritable(
                             f"{oe.full_name} value {name} = {a} is gone")), same=False))
        if (d.renamed or d.added) and not (d.moved or d.gone):
            yield Change(PROTOBUF_ENUM_VALUES_COMPATIBLE, where,
                         f"'{where}' enum {oe.full_name}: {d.compatible()}"
                         ": every existing value keeps its number",
                         witness=w.pair(path, put(scalar_sample(f))))

    def _oneofs(self, pairs: list[tuple[FieldDescriptor, FieldDescriptor]],
                path: list[Step]) -> Iterator[Change]:
        into: dict[str, list[tuple[FieldDescriptor, FieldDescriptor]]] = {}
        for f, g in pairs:
            if f.number != g.number:
                continue
            o1, o2 = _oneof(f), _oneof(g)
            if o2 is not None:
                into.setdefault(o2, []).append((f, g))
            if o1 != o2 and f.has_presence == g.has_presence:
                where = _show([*path, Step(f, g)])
                yield Change(PROTOBUF_ONEOF_CHANGED, where,
                             f"'{where}' moved " + (f"out of oneof {o1}" if o1 else "")
                             + (" and " if o1 and o2 else "") + (f"into oneof {o2}" if o2 else "")
                             + ": the same number, type and presence write the same bytes",
                             witness=self.witnesses.pair([*path, Step(f, g)], sample(f)))
        for name, members in into.items():
            groups = {_oneof(f) or f"#{f.number}" for f, _ in members}
            if len(groups) > 1:
                (f1, g1), (f2, g2) = members[0], next(
                    m for m in members[1:] if (_oneof(m[0]) or f"#{m[0].number}") !=
                    (_oneof(members[0][0]) or f"#{members[0][0].number}"))
                where = _show(path)
                both = {f1.name: sample(f1), f2.name: sample(f2)}
                yield Change(PROTOBUF_ONEOF_MERGED, where,
                             f"fields {f1.name} and {f2.name} of '{where}' moved into oneof "
                             f"{name}: existing keys that set both cannot be written (a oneof "
                             "holds one of them)",
                             witness=self.witnesses.pair(path, both, Unwritable(
                                 f"oneof {name} holds one of {g1.name}, {g2.name}"),
                                 same=False))


@dataclass(frozen=True)
class _EnumChanges:
    """How an enum's values changed between the old and the new enum, by name and number."""

    #: (name, old number, new number) of each value kept by name under another number.
    moved: list[tuple[str, int, int]]
    #: (name, number) of each value gone by name and by number.
    gone: list[tuple[str, int]]
    #: Old names whose number the new enum keeps under another name.
    renamed: list[str]
    #: New names of numbers the old enum did not have.
    added: list[str]

    @classmethod
    def of(cls, oe: EnumDescriptor, ne: EnumDescriptor) -> _EnumChanges:
        new_by_name = {v.name: v.number for v in ne.values}
        new_numbers = {v.number for v in ne.values}
        old_numbers = {v.number for v in oe.values}
        kept = [v for v in oe.values if v.name in new_by_name]
        lost = [v for v in oe.values if v.name not in new_by_name]
        return cls(
            moved=[(v.name, v.number, new_by_name[v.name]) for v in kept
                   if new_by_name[v.name] != v.number],
            gone=[(v.name, v.number) for v in lost if v.number not in new_numbers],
            renamed=[v.name for v in lost if v.number in new_numbers],
            added=[v.name for v in ne.values if v.number not in old_numbers],
        )

    def compatible(self) -> str:
        """`renamed: A; added: B`, the parts that apply."""
        parts = []
        if self.renamed:
            parts.append("renamed: " + ", ".join(self.renamed))
        if self.added:
            parts.append("added: " + ", ".join(self.added))
        return "; ".join(parts)


def _zero(f: FieldDescriptor) -> Any:
    if f.type == _T.TYPE_ENUM:
        return f.enum_type.values[0].number
    return {_T.TYPE_BOOL: False, _T.TYPE_STRING: "", _T.TYPE_BYTES: b"",
            _T.TYPE_FLOAT: 0.0, _T.TYPE_DOUBLE: 0.0}.get(f.type, 0)


def _presence(f: FieldDescriptor) -> str:
    return "explicit presence" if f.has_presence else "implicit presence"


def _packing(f: FieldDescriptor) -> str:
    return "packed" if f.is_packed else "unpacked"


def _wrap(f: FieldDescriptor, v: Any) -> Any:
    """A repeated field's witness holds a list."""
    return [v] if f.is_repeated and not isinstance(v, Unwritable) else v


def _common_value(f: FieldDescriptor, g: FieldDescriptor) -> Any:
    """A value both types hold, to show their encodings side by side."""
    if f.type == _T.TYPE_BOOL or g.type == _T.TYPE_BOOL:
        return True if f.type == _T.TYPE_BOOL else 1
    if _SCALARS[f.type][1] is not None or f.type == _T.TYPE_ENUM:
        return scalar_sample(f) if f.type == _T.TYPE_ENUM else 1
    return scalar_sample(f)


# --- the family ---------------------------------------------------------------------------------


def _encodings(old: KeySide, new: KeySide) -> tuple[Encoding, Encoding, Ids | None]:
    ids = resolve_ids(old, new) if (old.carries_schema_id or new.carries_schema_id) else None
    n_old = old.partitions or new.partitions or ILLUSTRATIVE_PARTITIONS
    n_new = new.partitions or old.partitions or ILLUSTRATIVE_PARTITIONS
    return (Encoding(old, key_message(old), ids.old_id if ids else None, n_old),
            Encoding(new, key_message(new), ids.new_id if ids else None, n_new), ids)


def message_changes(old: Encoding, new: Encoding) -> Iterator[Change]:
    """The key message itself: its name and its place in the file (the message index)."""
    w = Witnesses(old, new)
    om, nm = old.message, new.message
    framed = old.side.id_in_bytes and new.side.id_in_bytes  # the index is in the key bytes
    if framed and om.indexes != nm.indexes:
        yield Change(PROTOBUF_MESSAGE_INDEX_CHANGED, "$",
                     f"the key message {nm.full_name} is at index {list(nm.indexes)} of its file, "
                     f"the existing keys' {om.full_name} at {list(om.indexes)}: the message "
                     "index follows the schema id in every key",
                     witness=w.typical())
    if om.full_name != nm.full_name or (not framed and om.indexes != nm.indexes):
        moved = "" if om.indexes == nm.indexes else \
            f", index {list(om.indexes)} -> {list(nm.indexes)}"
        yield Change(PROTOBUF_MESSAGE_RENAMED, "$",
                     f"key message {om.full_name} -> {nm.full_name}{moved}: the body carries "
                     "no names" + (" (the registry still sees a new schema)" if framed else ""),
                     witness=w.typical())
    yield from ProtoWalk(w, set()).message(om.descriptor, nm.descriptor, [])


def family_changes(old: KeySide, new: KeySide, ctx: FamilyContext) -> Iterator[Change]:
    """The protobuf key family's rules (its line in
    `keyguard.guard.catalog.KEY_FAMILIES`)."""
    o, n, _ = _encodings(old, new)
    yield from message_changes(o, n)
    # The schema id (KG501, KG502, KG911): guard/keys/confluent.py, as for every framed format.


def family_encoders(old: KeySide, new: KeySide, topic: str | None = None
                    ) -> tuple[Encoder, Encoder]:
    """Both sides' key encoders over key rows (column name -> value, nested rows as dicts): the
    runtime's message of the side, framed with the side's id and message index. The witness
    search and its catch-all (KG000) encode with these."""
    o, n, _ = _encodings(old, new)

    def encoder(enc: Encoding) -> Encoder:
        def encode(row: Mapping[str, Any]) -> bytes:
            try:
                return enc.frame(fill(enc.message.cls(), row).SerializeToString())
            except (ValueError, TypeError, KeyError, EncodeError) as exc:
                raise SchemaError(f"key {dict(row)!r} has no {enc.message.full_name} "
                                  f"message: {exc}") from None
        return encode

    return encoder(o), encoder(n)



def family_carry(old: KeySide, new: KeySide) -> Carry:
    """How the witness search carries an old key to the new message: Flink's CAST of the
    columns, and where it has none the new message takes (a bool to an int32, an integer to an
    enum's name), what the old key's bytes decode to under the new message: the question for
    Protobuf is whether those bytes are written again."""
    o, n, _ = _encodings(old, new)

    def carry(key: Mapping[str, Any]) -> dict[str, Any]:
        try:
            carried = carry_row(key, old.row_type, new.row_type)
            fill(n.message.cls(), carried)
            return carried
        except (CarryError, ValueError, TypeError, KeyError) as exc:
            why = exc
        try:
            read = n.message.cls.FromString(fill(o.message.cls(), key).SerializeToString())
        except (ValueError, TypeError, KeyError, EncodeError, DecodeError):
            raise CarryError(str(why)) from None
        read.DiscardUnknownFields()
        return as_values(read)

    return carry
