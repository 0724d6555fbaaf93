"""Protobuf key rules (guard/keys/protobuf.py): each rule with a witness key whose old and new
bytes are what the official protobuf runtime writes, and its SAFE twin.

The protobuf formats (formats/protobuf_format.py) are built in parallel: until they exist, a
stand-in FormatFactory with key_family "protobuf" (bare, and CONFLUENT-framed for
protobuf-registry) shows how the analysis reaches the family without a format-name switch.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry._sync.protobuf import ProtobufSerializer

from keyguard.formats import codec
from keyguard.formats.codec import format_factory, register_format
from keyguard.formats.errors import InvalidOptionError, SchemaError
from keyguard.formats.framing import CONFLUENT
from keyguard.formats.protobuf_schema import parse_proto
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.keys import KeySide, analyze_key_change
from keyguard.guard.keys.protobuf import family_encoders
from keyguard.guard.keys.protobuf_wire import key_message, message_index_bytes
from keyguard.guard.report import Report, Severity

P3 = 'syntax = "proto3";\npackage shop;\n'
P2 = 'syntax = "proto2";\npackage shop;\n'
CORPUS = [c for c in json.loads((Path(__file__).parent / "key_evolutions.json").read_text())
          if c["format"].startswith("protobuf")]


@pytest.fixture(autouse=True)
def protobuf_formats(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real protobuf formats when they exist, else stand-ins of their family and frame."""
    codec.format_names()  # the built-in formats registered before the table is copied
    monkeypatch.setattr(codec, "_FACTORIES", dict(codec._FACTORIES))
    for name, frame in (("protobuf", None), ("protobuf-registry", CONFLUENT)):
        try:
            format_factory(name)
        except InvalidOptionError:
            stand_in = format_factory("raw").replace(name=name, schema_type="PROTOBUF",
                               key_family="protobuf", uses_registry=frame is not None)
            register_format(stand_in.replace(frame=frame) if frame else stand_in)


def side(fmt: str, columns: str, schema: Any, **kw: Any) -> KeySide:
    return KeySide(fmt, parse_columns(columns), schema=schema, **kw)


def analyze(old: str, new: str, *, fmt: str = "protobuf", cols: str = "id BIGINT NOT NULL",
            new_cols: str | None = None, **kw: Any) -> dict[str, Any]:
    findings = analyze_key_change(side(fmt, cols, old, **kw.get("old_side", {})),
                                  side(fmt, new_cols or cols, new, **kw.get("new_side", {})))
    return {f.rule.id: f for f in findings}


def test_message_index_bytes_are_confluents() -> None:
    for indexes in ([0], [1], [0, 2], [3, 1, 4], [70]):
        buf = io.BytesIO()
        ProtobufSerializer._encode_varints(buf, indexes)
        assert message_index_bytes(indexes) == buf.getvalue(), indexes


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_protobuf_corpus_case(case: dict[str, Any]) -> None:
    """The corpus's protobuf cases (tests/guard/test_key_corpus.py runs them once the formats
    exist); every breaking witness differs, and its old bytes are the runtime's for its key."""
    old = side(case["format"], case["old"], options=case["options_old"],
               **_extra(case.get("old_side", {})))
    new = side(case["format"], case["new"], options=case["options_new"],
               **_extra(case.get("new_side", {})))
    findings = analyze_key_change(old, new, topic="orders")
    detail = "\n".join(f"{f.rule.id} {f.path}: {f.message} {f.witness}" for f in findings)
    assert sorted({f.rule.id for f in findings}) == case["rules"], detail
    assert Report.of(findings).verdict.value == case["expected"], detail
    km = key_message(old)
    for f in findings:
        assert f.witness is not None, detail
        w = f.witness
        body = w.old_bytes
        if old.id_in_bytes:  # under a header framing the bytes are the body alone
            assert body is not None and body[:1] == b"\x00"
            body = body[5 + len(message_index_bytes(km.indexes)):]
        assert km.cls.FromString(body).SerializeToString() == body, detail
        if f.effective_severity is Severity.BREAKING:
            assert w.differs, detail
        elif f.rule.severity is Severity.INFO and not old.id_in_bytes:
            assert w.old_bytes == w.new_bytes, detail


def _extra(kw: dict[str, Any]) -> dict[str, Any]:
    out = dict(kw)
    if "key_schema_ids" in out:
        out["key_schema_ids"] = tuple(out["key_schema_ids"])
    return out


# --- each rule, with its bytes --------------------------------------------------------------


def test_renumbering_breaks_renaming_does_not() -> None:
    f = analyze(P3 + "message Key { int64 id = 1; }", P3 + "message Key { int64 id = 2; }")
    w = f["KG421"].witness
    assert (w.key, w.old_bytes, w.new_bytes) == ({"id": 1}, b"\x08\x01", b"\x10\x01")
    safe = analyze(P3 + "message Key { int64 id = 1; }", P3 + "message Key { int64 uid = 1; }",
                   new_cols="uid BIGINT NOT NULL")
    assert set(safe) == {"KG941"}
    assert safe["KG941"].witness.old_bytes == safe["KG941"].witness.new_bytes == b"\x08\x01"


@pytest.mark.parametrize(("old", "new", "rule", "old_bytes", "new_bytes"), [
    # int32 -1 is ten bytes (sign-extended), uint32 cannot hold it.
    ("int32", "uint32", "KG423", b"\x08" + b"\xff" * 9 + b"\x01", None),
    ("int64", "int32", "KG423", b"\x08\x80\x80\x80\x80\x08", None),
    ("uint64", "int64", "KG423", b"\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", None),
    ("int32", "bool", "KG423", b"\x08\x02", None),
    ("int64", "uint64", "KG423", b"\x08" + b"\xff" * 9 + b"\x01", None),
    ("fixed32", "sfixed32", "KG423", b"\x0d\x00\x00\x00\x80", None),
    ("sint64", "sint32", "KG423", b"\x08\x80\x80\x80\x80\x10", None),
    ("int32", "sint32", "KG422", b"\x08\x01", b"\x08\x02"),
    ("sint64", "int64", "KG422", b"\x08\x02", b"\x08\x01"),
    ("fixed32", "fixed64", "KG422", b"\x0d\x01\x00\x00\x00", b"\x09" + b"\x01" + bytes(7)),
    ("sfixed32", "int32", "KG422", b"\x0d\x01\x00\x00\x00", b"\x08\x01"),
    ("float", "double", "KG422", b"\x0d\x00\x00\xc0\x3f", b"\x09" + bytes(6) + b"\xf8\x3f"),
    ("string", "int64", "KG422", b"\x0a\x06user-1", None),
])
def test_scalar_type_changes_that_break(old: str, new: str, rule: str, old_bytes: bytes,
                                        new_bytes: bytes | None) -> None:
    f = analyze(P3 + f"message Key {{ {old} id = 1; }}", P3 + f"message Key {{ {new} id = 1; }}")
    assert set(f) == {rule}, f
    w = f[rule].witness
    assert w.old_bytes == old_bytes
    assert w.new_bytes == new_bytes
    if new_bytes is None:
        assert w.new_error


@pytest.mark.parametrize(("old", "new", "value", "wire"), [
    ("int32", "int64", 1, b"\x08\x01"),
    ("uint32", "uint64", 1, b"\x08\x01"),
    ("uint32", "int64", 1, b"\x08\x01"),
    ("bool", "int32", True, b"\x08\x01"),
    ("bool", "uint64", True, b"\x08\x01"),
    ("sint32", "sint64", 1, b"\x08\x02"),
    ("sfixed32", "sfixed32", None, None),
    ("string", "bytes", "user-1", b"\x0a\x06user-1"),
])
def test_scalar_type_changes_that_keep_bytes(old: str, new: str, value: Any,
                                             wire: bytes | None) -> None:
    f = analyze(P3 + f"message Key {{ {old} id = 1; }}", P3 + f"message Key {{ {new} id = 1; }}")
    if old == new:
        assert f == {}
        return
    assert set(f) == {"KG942"}, f
    w = f["KG942"].witness
    assert w.old_bytes == w.new_bytes == wire


def test_every_old_int32_keeps_its_bytes_as_int64() -> None:
    """The SAFE claim checked by the runtime over the int32 edges (not only the witness)."""
    old = side("protobuf", "id BIGINT NOT NULL", P3 + "message Key { int32 id = 1; }")
    new = side("protobuf", "id BIGINT NOT NULL", P3 + "message Key { int64 id = 1; }")
    enc_old, enc_new = family_encoders(old, new)
    for v in (0, 1, -1, 2**31 - 1, -(2**31), 300):
        assert enc_old({"id": v}) == enc_new({"id": v})


def test_enum_and_int32_share_the_varint_a_closed_enum_narrows() -> None:
    enum = "enum Region { UNKNOWN = 0; EU = 1; US = 2; }\n"
    f = analyze(P3 + enum + "message Key { Region id = 1; }", P3 + "message Key { int32 id = 1; }")
    assert set(f) == {"KG942"} and f["KG942"].witness.old_bytes == b"\x08\x01"
    f = analyze(P3 + "message Key { int32 id = 1; }", P3 + enum + "message Key { Region id = 1; }")
    assert set(f) == {"KG942"}  # proto3 enums are open: any int32 is written as is
    closed = "enum Region { EU = 1; US = 2; }\n"
    f = analyze(P2 + "message Key { optional int32 id = 1; }",
                P2 + closed + "message Key { optional Region id = 1; }")
    assert set(f) == {"KG423"}
    assert f["KG423"].witness.old_bytes == b"\x08" + b"\xff" * 9 + b"\x01"


def test_presence_optional_writes_the_zero_value() -> None:
    f = analyze(P3 + "message Key { int64 id = 1; int32 shard = 2; }",
                P3 + "message Key { int64 id = 1; optional int32 shard = 2; }",
                cols="id BIGINT NOT NULL, shard INT")
    w = f["KG424"].witness
    assert (w.key, w.old_bytes, w.new_bytes) == ({"shard": 0}, b"", b"\x10\x00")
    assert f["KG424"].path == "shard"


def test_packed_and_unpacked() -> None:
    cols = "ids ARRAY<INT NOT NULL> NOT NULL"
    f = analyze(P2 + "message Key { repeated int32 ids = 1; }",
                P3 + "message Key { repeated int32 ids = 1; }", cols=cols)
    w = f["KG425"].witness  # proto2 unpacked by default, proto3 packed by default
    assert (w.old_bytes, w.new_bytes) == (b"\x08\x01\x08\x02", b"\x0a\x02\x01\x02")
    same = analyze(P2 + "message Key { repeated int32 ids = 1 [packed = true]; }",
                   P3 + "message Key { repeated int32 ids = 1; }", cols=cols)
    assert same == {}


def test_added_field_is_safe_with_presence_removed_field_breaks() -> None:
    one, two = (P3 + "message Key { int64 id = 1; }",
                P3 + "message Key { int64 id = 1; Region region = 2; }\n"
                "enum Region { UNKNOWN = 0; EU = 1; }")
    optional = two.replace("Region region = 2;", "optional Region region = 2;")
    f = analyze(one, optional, new_cols="id BIGINT NOT NULL, region STRING")
    assert set(f) == {"KG943"}
    # without presence the new column is NOT NULL: every row fills it, and EU is written
    f = analyze(one, two, new_cols="id BIGINT NOT NULL, region STRING")
    assert set(f) == {"KG101"}
    w = f["KG101"].witness
    assert w.old_bytes != w.new_bytes and w.new_bytes.startswith(w.old_bytes)
    f = analyze(two, one, cols="id BIGINT NOT NULL, region STRING")
    w = f["KG426"].witness
    assert (w.key, w.old_bytes, w.new_bytes) == ({"region": 1}, b"\x10\x01", b"")


def test_required_field_added_cannot_be_written() -> None:
    f = analyze(P2 + "message Key { required int64 id = 1; }",
                P2 + "message Key { required int64 id = 1; required int32 shard = 2; }",
                new_cols="id BIGINT NOT NULL, shard INT NOT NULL")
    w = f["KG427"].witness
    assert w.new_bytes is None and "shard" in str(w.new_error)


def test_proto2_default_is_not_on_the_wire() -> None:
    f = analyze(P2 + "message Key { optional int32 shard = 1 [default = 3]; }",
                P2 + "message Key { optional int32 shard = 1 [default = 4]; }", cols="shard INT")
    assert set(f) == {"KG944"}
    assert f["KG944"].witness.old_bytes == f["KG944"].witness.new_bytes == b""


def test_nested_message_changes_are_located() -> None:
    inner = "message Inner { int64 a = 1; int32 b = 2; }\n"
    f = analyze(P3 + "message Key { Inner n = 1; }\n" + inner,
                P3 + "message Key { Inner n = 1; }\n"
                "message Inner { int64 a = 1; int32 b = 3; }\n",
                cols="n ROW<a BIGINT NOT NULL, b INT NOT NULL> NOT NULL")
    c = f["KG421"]
    assert c.path == "n.b"
    assert (c.witness.key, c.witness.old_bytes, c.witness.new_bytes) == (
        {"n": {"b": 1}}, b"\x0a\x02\x10\x01", b"\x0a\x02\x18\x01")


def test_recursive_message_is_walked_once() -> None:
    tree = "message Key { int64 id = 1; Key parent = 2; }"
    f = analyze(P3 + tree, P3 + tree.replace("int64 id", "sint64 id"))
    assert [c.path for c in f.values()] == ["id"]


def test_oneof_same_presence_keeps_bytes_merge_breaks() -> None:
    f = analyze(P3 + "message Key { optional int64 id = 1; }",
                P3 + "message Key { oneof ref { int64 id = 1; } }", cols="id BIGINT")
    assert set(f) == {"KG946"}
    f = analyze(P3 + "message Key { int64 id = 1; }",
                P3 + "message Key { oneof ref { int64 id = 1; } }", cols="id BIGINT")
    assert set(f) == {"KG424"}  # a oneof member has explicit presence


def test_oneof_merged_in_a_nested_message() -> None:
    f = analyze(P3 + "message Key { Ref ref = 1; }\n"
                "message Ref { optional int64 id = 1; optional string name = 2; }",
                P3 + "message Key { Ref ref = 1; }\n"
                "message Ref { oneof r { int64 id = 1; string name = 2; } }",
                cols="ref ROW<id BIGINT, name STRING> NOT NULL")
    w = f["KG429"].witness
    assert f["KG429"].path == "ref"
    assert w.key == {"ref": {"id": 1, "name": "user-1"}}
    assert w.old_bytes == b"\x0a\x0a\x08\x01\x12\x06user-1" and w.new_bytes is None


def test_enum_numbers() -> None:
    a = "enum Region { UNKNOWN = 0; EU = 1; US = 2; }\nmessage Key { Region r = 1; }"
    f = analyze(P3 + a, P3 + a.replace("EU = 1; US = 2", "EU = 2; US = 1"),
                cols="r STRING NOT NULL")
    w = f["KG428"].witness
    assert (w.old_bytes, w.new_bytes) == (b"\x08\x01", b"\x08\x02")
    f = analyze(P3 + a, P3 + a.replace("EU = 1", "EUROPE = 1"), cols="r STRING NOT NULL")
    assert set(f) == {"KG945"}
    f = analyze(P3 + a, P3 + a.replace(" US = 2;", ""), cols="r STRING NOT NULL")
    assert f["KG428"].witness.new_bytes is None


def test_message_index_under_the_registry_frame_only() -> None:
    key = "message Key { int64 id = 1; }\n"
    other = "message Other { string s = 1; }\n"
    opts = {"options": {"message": "Key"}}
    f = analyze(P3 + key, P3 + other + key, fmt="protobuf-registry",
                old_side={**opts, "schema_id": 7}, new_side={**opts, "schema_id": 9})
    assert set(f) == {"KG430", "KG501"}
    w = f["KG430"].witness
    assert w.key == {"id": 1}
    assert w.old_bytes == b"\x00\x00\x00\x00\x07\x00\x08\x01"  # [0]: one 00 byte
    # [1]: count 1, index 1, both zig-zag
    assert w.new_bytes == b"\x00\x00\x00\x00\x09\x02\x02\x08\x01"
    bare = analyze(P3 + key, P3 + other + key, old_side=opts, new_side=opts)
    assert set(bare) == {"KG947"}
    assert "index [0] -> [1]" in bare["KG947"].message


def test_nested_key_message_index_path() -> None:
    text = P3 + "message A {}\nmessage Outer { message X {} message Key { int64 id = 1; } }"
    km = key_message(side("protobuf-registry", "id BIGINT NOT NULL", text,
                          options={"message": "shop.Outer.Key"}))
    assert km.indexes == (1, 1) and km.full_name == "shop.Outer.Key"
    assert message_index_bytes(km.indexes) == b"\x04\x02\x02"


def test_schema_id_same_schema_is_safe_a_new_one_breaks() -> None:
    k = P3 + "message Key { int64 id = 1; }"
    same = analyze(k, "\n\n" + k.replace("\n", "\n    ") + "  \n", fmt="protobuf-registry",
                   old_side={"schema_id": 7})
    assert set(same) == {"KG911"}
    w = same["KG911"].witness
    # magic byte, id 7, message index [0], then field 1 (varint) of the witness key
    assert w.old_bytes == w.new_bytes and w.old_bytes[:7] == b"\x00\x00\x00\x00\x07\x00\x08"
    new = analyze(k, k + "\nmessage Later { string s = 1; }", fmt="protobuf-registry",
                  old_side={"schema_id": 7})
    assert set(new) == {"KG501"}
    assert new["KG501"].witness.old_bytes[:5] == b"\x00\x00\x00\x00\x07"
    assert new["KG501"].witness.new_bytes[:5] != b"\x00\x00\x00\x00\x07"


def test_schema_from_a_schema_text_and_its_errors() -> None:
    text = SchemaText("PROTOBUF", P3 + "message Key { int64 id = 1; }", "orders-key v1")
    f = analyze(text, P3 + "message Key { int64 id = 2; }")  # type: ignore[arg-type]
    assert set(f) == {"KG421"}
    parsed = parse_proto(P3 + "message Key { int64 id = 1; }")
    assert key_message(side("protobuf", "id BIGINT", parsed)).full_name == "shop.Key"
    with pytest.raises(SchemaError, match="no single message 'Nope'"):
        key_message(side("protobuf", "id BIGINT", parsed, options={"message": "Nope"}))
    with pytest.raises(SchemaError, match="no Protobuf key schema"):
        key_message(side("protobuf", "id BIGINT", None))
    with pytest.raises(SchemaError, match="no Protobuf key schema"):  # the candidate's option
        key_message(side("protobuf", "id BIGINT", None, options={"schema": P3 + "message K {}"}))
    flink = side("protobuf", "id BIGINT", parsed, options={"message-class-name": "shop.Key"})
    assert key_message(flink).full_name == "shop.Key"


def test_kg000_stays_silent_when_the_family_encoders_agree() -> None:
    """The witness search encodes the battery of the row type with the family's encoders."""
    old = side("protobuf", "id BIGINT NOT NULL, r STRING NOT NULL",
               P3 + "message Key { int64 id = 1; string r = 2; }")
    new = side("protobuf", "id BIGINT NOT NULL, r STRING NOT NULL",
               P3 + "message Key { int64 id = 1; string r = 2; }")
    assert analyze_key_change(old, new) == []


@pytest.mark.parametrize(("old", "new", "old_cols", "new_cols"), [
    ("bool", "int32", "id BOOLEAN NOT NULL", "id INT NOT NULL"),
    ("int32", "Region", "id INT NOT NULL", "id STRING NOT NULL"),
    ("Region", "int64", "id STRING NOT NULL", "id BIGINT NOT NULL"),
])
def test_the_battery_carries_keys_as_the_wire_does(old: str, new: str, old_cols: str,
                                                  new_cols: str) -> None:
    """Flink's CAST has no BOOLEAN -> INT or INT -> an enum's name, the wire has: the battery
    falls back to what the old bytes decode to under the new message, so no KG000."""
    enum = "enum Region { UNKNOWN = 0; EU = 1; }\n"
    f = analyze(P3 + enum + f"message Key {{ {old} id = 1; }}",
                P3 + enum + f"message Key {{ {new} id = 1; }}", cols=old_cols,
                new_cols=new_cols)
    assert set(f) == {"KG942"}, f
