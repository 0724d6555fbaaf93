"""Differential soundness of the Protobuf key rules (hypothesis).

Generated proto3 key messages, generated small mutations of them (renumber, retype, rename,
add, remove, toggle `optional` or `repeated`, toggle packing, reorder the messages of the file,
change the package) and generated key values, drawn independently of the rules' own witnesses:

- SAFE (no breaking change) implies every key encodes to identical bytes under the old and the
  new descriptor with the official runtime; under protobuf-registry (one schema id on both
  sides) the message index too;
- each breaking change's witness really differs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from keyguard.formats import codec
from keyguard.formats.codec import format_factory, register_format
from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.framing import CONFLUENT
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.keys.protobuf import family_changes
from keyguard.guard.keys.protobuf_wire import fill, key_message, message_index_bytes
from keyguard.guard.keys.side import FamilyContext, KeySide
from keyguard.guard.report import Severity

EXAMPLES = int(os.environ.get("KEYGUARD_SOUNDNESS_EXAMPLES", "150"))
DERANDOMIZE = not os.environ.get("KEYGUARD_SOUNDNESS_RANDOM")

INTS = {
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
    "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
    "sint32": (-(2**31), 2**31 - 1), "sint64": (-(2**63), 2**63 - 1),
    "fixed32": (0, 2**32 - 1), "fixed64": (0, 2**64 - 1),
    "sfixed32": (-(2**31), 2**31 - 1), "sfixed64": (-(2**63), 2**63 - 1),
}
MAPS = ["map<string, int32>", "map<string, int64>", "map<string, sint32>", "map<int32, string>"]
TYPES = [*INTS, "bool", "float", "double", "string", "bytes", "Region", *MAPS, "Inner"]
NAMES = ["id", "region", "shard", "code", "ts", "seq"]
ENUM = "UNKNOWN = 0; EU = 1; US = 2;"
#: Mutations of enum Region's values: swap two numbers, rename one, add one, remove one.
ENUMS = ["UNKNOWN = 0; EU = 2; US = 1;", "UNKNOWN = 0; EUROPE = 1; US = 2;",
         "UNKNOWN = 0; EU = 1; US = 2; APAC = 3;", "UNKNOWN = 0; EU = 1;"]


@dataclass(frozen=True)
class ProtoField:
    name: str
    number: int
    type: str
    label: str = ""  # "", "optional" or "repeated"
    packed: bool | None = None

    def line(self) -> str:
        opt = "" if self.packed is None else f" [packed = {str(self.packed).lower()}]"
        label = f"{self.label} " if self.label else ""
        return f"  {label}{self.type} {self.name} = {self.number}{opt};"


@dataclass(frozen=True)
class KeySchema:
    fields: tuple[ProtoField, ...]
    package: str = "shop"
    other_first: bool = False
    #: The fields of message Inner (a key field of type Inner is a nested message).
    inner: tuple[ProtoField, ...] = (ProtoField("a", 1, "int32"), ProtoField("b", 2, "string"))
    enum: str = ENUM
    #: new field name -> the old field it carries (renames), for the mutated side.
    carried: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        key = "message Key {\n" + "\n".join(f.line() for f in self.fields) + "\n}"
        other = "message Other { string s = 1; }"
        inner = "message Inner {\n" + "\n".join(f.line() for f in self.inner) + "\n}"
        body = [other, key] if self.other_first else [key, other]
        body.append(inner)
        enum = f"enum Region {{ {self.enum} }}"
        return "\n".join(['syntax = "proto3";', f"package {self.package};", enum, *body]) + "\n"


def _packable(t: str) -> bool:
    return t not in ("string", "bytes", "Inner") and t not in MAPS


def _labels(t: str) -> list[str]:
    return [""] if t in MAPS else ["", "optional", "repeated"]


@st.composite
def proto_fields(draw: st.DrawFn) -> tuple[ProtoField, ...]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    numbers = draw(st.lists(st.integers(1, 8), min_size=len(names), max_size=len(names),
                            unique=True))
    out = []
    for name, number in zip(names, numbers, strict=True):
        t = draw(st.sampled_from(TYPES))
        label = draw(st.sampled_from(_labels(t)))
        packed = draw(st.sampled_from([None, True, False])) \
            if label == "repeated" and _packable(t) else None
        out.append(ProtoField(name, number, t, label, packed))
    return tuple(out)


@st.composite
def mutated(draw: st.DrawFn, old: KeySchema) -> KeySchema:
    fields = list(old.fields)
    carried = {f.name: f.name for f in fields}
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["renumber", "retype", "rename", "add", "remove",
                                     "optional", "repeated", "packed", "reorder", "package",
                                     "inner", "enum"]))
        i = draw(st.integers(0, len(fields) - 1)) if fields else 0
        used = {f.number for f in fields}
        free_numbers = [n for n in range(1, 10) if n not in used]
        if kind == "renumber" and fields and free_numbers:
            fields[i] = replace(fields[i], number=draw(st.sampled_from(free_numbers)))
        elif kind == "retype" and fields:
            t = draw(st.sampled_from(TYPES))
            packed = fields[i].packed if _packable(t) else None
            label = fields[i].label if fields[i].label in _labels(t) else ""
            fields[i] = replace(fields[i], type=t, packed=packed, label=label)
        elif kind == "rename" and fields:
            free = [n for n in [*NAMES, "ref", "key_part"] if n not in carried]
            if free:
                new_name = draw(st.sampled_from(free))
                carried[new_name] = carried.pop(fields[i].name)
                fields[i] = replace(fields[i], name=new_name)
        elif kind == "add" and free_numbers:
            free = [n for n in [*NAMES, "ref", "key_part"] if n not in carried]
            if free:
                name = draw(st.sampled_from(free))
                t = draw(st.sampled_from(TYPES))
                label = draw(st.sampled_from(_labels(t)))
                fields.append(ProtoField(name, draw(st.sampled_from(free_numbers)), t, label))
                carried[name] = ""  # nothing carried: existing keys lack it
        elif kind == "remove" and len(fields) > 1:
            gone = fields.pop(i)
            carried.pop(gone.name)
        elif kind == "optional" and fields and fields[i].label != "repeated" and \
                fields[i].type not in MAPS:
            fields[i] = replace(fields[i], label="" if fields[i].label else "optional")
        elif kind == "repeated" and fields and fields[i].type not in MAPS:
            f = fields[i]
            fields[i] = replace(f, label="" if f.label == "repeated" else "repeated", packed=None)
        elif kind == "packed" and fields and fields[i].label == "repeated" and \
                _packable(fields[i].type):
            fields[i] = replace(fields[i], packed=draw(st.sampled_from([None, True, False])))
        elif kind == "enum":
            old = replace(old, enum=draw(st.sampled_from(ENUMS)))
        elif kind == "inner":
            j = draw(st.integers(0, len(old.inner) - 1))
            inner = list(old.inner)
            change = draw(st.sampled_from(["retype", "renumber", "optional"]))
            if change == "retype":
                t = draw(st.sampled_from(TYPES[:-1]))
                label = inner[j].label if inner[j].label in _labels(t) else ""
                inner[j] = replace(inner[j], type=t, label=label)
            elif change == "renumber":
                free_inner = [n for n in (3, 4) if n not in {f.number for f in inner}]
                inner[j] = replace(inner[j], number=draw(st.sampled_from(free_inner)))
            elif inner[j].type not in MAPS:
                inner[j] = replace(inner[j], label="" if inner[j].label else "optional")
            old = replace(old, inner=tuple(inner))
        elif kind == "reorder":
            return replace(old, fields=tuple(fields), other_first=not old.other_first,
                           carried={k: v for k, v in carried.items() if v})
        elif kind == "package":
            return replace(old, fields=tuple(fields), package="shop.v2",
                           carried={k: v for k, v in carried.items() if v})
    return replace(old, fields=tuple(fields), carried={k: v for k, v in carried.items() if v})


def scalar_values(t: str, inner: tuple[ProtoField, ...] = ()) -> st.SearchStrategy[Any]:
    if t == "Inner":
        return st.fixed_dictionaries({f.name: field_values(f) for f in inner})
    if t in MAPS:
        k, v = (x.strip() for x in t[4:-1].split(","))
        return st.dictionaries(scalar_values(k), scalar_values(v), max_size=2)
    if t in INTS:
        lo, hi = INTS[t]
        return st.one_of(st.sampled_from([0, 1, -1, lo, hi, 2**31, 2**32]).filter(
            lambda v: lo <= v <= hi), st.integers(lo, hi))
    return {
        "bool": st.booleans(),
        "float": st.floats(width=32, allow_nan=False),
        "double": st.floats(allow_nan=False),
        "string": st.text(max_size=4),
        "bytes": st.binary(max_size=4),
        "Region": st.sampled_from([0, 1, 2]),
    }[t]


def field_values(f: ProtoField, inner: tuple[ProtoField, ...] = ()) -> st.SearchStrategy[Any]:
    v = scalar_values(f.type, inner)
    if f.label == "repeated":
        return st.lists(v, max_size=3)
    if f.label == "optional":
        return st.none() | v
    return v


@pytest.fixture(autouse=True, scope="module")
def protobuf_formats() -> Any:
    """The real protobuf formats when they exist, else stand-ins of their family and frame."""
    codec.format_names()
    saved = dict(codec._FACTORIES)
    for name, frame in (("protobuf", None), ("protobuf-registry", CONFLUENT)):
        try:
            format_factory(name)
        except InvalidOptionError:
            stand_in = format_factory("raw").replace(name=name, schema_type="PROTOBUF",
                               key_family="protobuf", uses_registry=frame is not None)
            register_format(stand_in.replace(frame=frame) if frame else stand_in)
    yield
    codec._FACTORIES.clear()
    codec._FACTORIES.update(saved)


def _no_option_battery(*_: Any) -> Any:
    raise AssertionError("the protobuf family judges no option by example")


def _frame(side: KeySide, body: bytes) -> bytes:
    if not side.carries_schema_id:
        return body
    return CONFLUENT.wrap(7, message_index_bytes(key_message(side).indexes) + body)[0]


@pytest.mark.parametrize("fmt", ["protobuf", "protobuf-registry"])
@settings(max_examples=EXAMPLES, deadline=None, derandomize=DERANDOMIZE,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_safe_means_identical_bytes(fmt: str, data: st.DataObject) -> None:
    old_schema = KeySchema(data.draw(proto_fields(), label="old fields"))
    new_schema = data.draw(mutated(old_schema), label="new schema")
    row = parse_columns("x INT")
    old = KeySide(fmt, row, options={"message": "Key"}, schema=old_schema.text(),
                  schema_id=7)
    new = KeySide(fmt, row, options={"message": "Key"}, schema=new_schema.text(),
                  schema_id=7)
    note(old_schema.text())
    note(new_schema.text())
    changes = list(family_changes(old, new, FamilyContext(None, True, _no_option_battery)))
    note("\n".join(f"{c.rule.id} {c.path}: {c.message}" for c in changes))
    breaking = [c for c in changes if c.rule.severity is Severity.BREAKING]
    for c in breaking:
        if c.witness is not None:
            assert c.witness.differs, c
    event("breaking" if breaking else "safe")
    if breaking:
        return
    old_cls, new_cls = key_message(old).cls, key_message(new).cls
    for _ in range(5):
        values = {f.name: data.draw(field_values(f, old_schema.inner), label=f.name)
                  for f in old_schema.fields}
        old_bytes = _frame(old, fill(old_cls(), values).SerializeToString())
        carried = {n: values[o] for n, o in new_schema.carried.items() if o in values}
        try:
            new_bytes = _frame(new, fill(new_cls(), carried).SerializeToString())
        except (ValueError, TypeError, KeyError) as exc:
            raise AssertionError(f"SAFE, but the new message cannot write {values}: {exc}") \
                from None
        assert old_bytes == new_bytes, (values, old_bytes.hex(), new_bytes.hex())
