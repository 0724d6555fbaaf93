"""The `protobuf` and `protobuf-registry` codecs: traits, options, errors, evolved writers."""

from __future__ import annotations

import datetime as dt
import itertools
import pickle
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import values

from keyguard.formats.codec import CodecContext, create_codec, format_factory
from keyguard.formats.errors import DecodeError, EncodeError, InvalidOptionError, SchemaError
from keyguard.formats.framing import BARE, CONFLUENT_PROTOBUF
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_schema_id, needs_schema_id
from keyguard.formats.sqltypes import parse_type

_SCOPES = itertools.count()
ROW = parse_type("ROW<id BIGINT NOT NULL, name STRING>").not_null()
V1 = ('syntax = "proto3";\npackage shop;\n'
      'message Order { int64 id = 1; optional string name = 2; }\n')
V2 = ('syntax = "proto3";\npackage shop;\nmessage Order { int64 id = 1; optional string name = 2; '
      'repeated string tags = 3; }\n')


def _registry() -> MockRegistry:
    return MockRegistry(f"proto-format-{next(_SCOPES)}")


def _codec(fmt: str, options: dict, registry: MockRegistry | None = None, row=ROW):
    return create_codec(fmt, row, options,
                        CodecContext(role="value", topic="orders", registry=registry))


@pytest.mark.parametrize("name, frame, registry", [
    ("protobuf", BARE, False), ("protobuf-registry", CONFLUENT_PROTOBUF, True)])
def test_the_formats_declare_their_traits(name, frame, registry):
    f = format_factory(name)
    assert (f.schema_type, f.frame, f.key_family, f.uses_registry) == \
        ("PROTOBUF", frame, "protobuf", registry)
    assert not f.writes_avro


def test_bare_protobuf_is_the_runtimes_bytes_and_round_trips():
    codec = _codec("protobuf", {})
    assert codec.encode({"id": 150, "name": None}) == b"\x08\x96\x01"
    assert codec.encode({"id": 0, "name": ""}) == b"\x12\x00"  # optional: present though empty
    assert codec.decode(b"\x08\x96\x01") == {"id": 150, "name": None}
    assert codec.written_schema().schema_type == "PROTOBUF"
    assert pickle.loads(pickle.dumps(codec)).encode({"id": 1, "name": "a"}) == \
        codec.encode({"id": 1, "name": "a"})


def test_the_message_is_taken_by_name_or_by_flinks_java_class_name():
    schema = V1 + "message Other { string name = 1; int64 id = 2; }\n"
    for name in ("Other", "shop.Other", "com.acme.proto.Other", "com.acme.Outer$Other"):
        codec = _codec("protobuf", {"schema": schema, "message-class-name": name})
        assert codec.encode({"id": 1, "name": "a"}) == b"\x0a\x01a\x10\x01"
    with pytest.raises(SchemaError, match="no single message 'Nope'"):
        _codec("protobuf", {"schema": schema, "message": "Nope"})


def test_columns_must_match_the_messages_fields():
    with pytest.raises(SchemaError, match=r"column 'name' has no field in message shop\.K"):
        _codec("protobuf", {"schema": 'syntax = "proto3"; package shop; '
                            'message K { int64 id = 1; }'})
    with pytest.raises(SchemaError, match="a STRING column cannot be field id of type int64"):
        _codec("protobuf", {"schema": V1},
               row=parse_type("ROW<id STRING, name STRING>").not_null())


def test_values_that_do_not_fit_are_encode_errors_naming_the_column():
    codec = _codec("protobuf", {}, row=parse_type("ROW<n INT NOT NULL, s STRING>").not_null())
    with pytest.raises(EncodeError, match="column 'n' is NOT NULL"):
        codec.encode({"n": None, "s": "x"})
    with pytest.raises(EncodeError, match="column 'n'"):
        codec.encode({"n": 2 ** 31, "s": "x"})
    with pytest.raises(EncodeError, match="column 's'"):
        codec.encode({"n": 1, "s": 5})


def test_invalid_bytes_are_decode_errors_or_skipped_with_ignore_parse_errors():
    with pytest.raises(DecodeError, match=r"not a valid shop\.Order message"):
        _codec("protobuf", {"schema": V1}).decode(b"\x0a\xff")
    assert _codec("protobuf", {"schema": V1, "ignore-parse-errors": "true"}).decode(
        b"\x0a\xff") is None


def test_the_registry_format_needs_a_url_and_an_id_before_writing():
    with pytest.raises(InvalidOptionError, match="'url' is missing"):
        _codec("protobuf-registry", {})
    codec = _codec("protobuf-registry", {"url": "mock://x"}, _registry())
    assert needs_schema_id(codec)
    with pytest.raises(Exception, match="before its schema id was given"):
        codec.encode({"id": 1, "name": None})


def test_a_record_of_an_evolved_writer_is_read_by_the_writers_message():
    registry = _registry()
    writer = _codec("protobuf-registry", {"url": registry.name, "schema": V2}, registry,
                    row=parse_type("ROW<id BIGINT NOT NULL, name STRING, "
                                   "tags ARRAY<STRING NOT NULL>>").not_null())
    bind_schema_id(writer)
    data = writer.encode({"id": 3, "name": "n", "tags": ["a"]})
    reader = _codec("protobuf-registry", {"url": registry.name, "schema": V1}, registry)
    assert reader.decode(data) == {"id": 3, "name": "n"}
    assert registry.get_version("orders-value").schema_type == "PROTOBUF"


def test_a_record_of_another_schema_type_or_frame_is_a_decode_error():
    registry = _registry()
    reader = _codec("protobuf-registry", {"url": registry.name}, registry)
    avro_id = registry.register("other", '"string"', "AVRO")
    with pytest.raises(DecodeError, match="is a AVRO schema, not Protobuf"):
        reader.decode(b"\x00" + avro_id.to_bytes(4, "big") + b"\x00")
    with pytest.raises(DecodeError, match="magic byte is 2"):
        reader.decode(b"\x02\x00\x00\x00\x01\x00")
    with pytest.raises(DecodeError, match="message index"):
        reader.decode(b"\x00\x00\x00\x00\x01\x06\x02")


# --- properties: any table protobuf can hold round-trips; any bytes decode or DecodeError ----

_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_SCALARS = st.sampled_from(["STRING", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT",
                            "DOUBLE", "BYTES", "DECIMAL(12, 3)", "DATE", "TIME(6)",
                            "TIMESTAMP(6)", "TIMESTAMP_LTZ(6)"])
_NULL = st.sampled_from(["", " NOT NULL"])


def _json_name(name: str) -> str:
    """protoc's default JSON name of a field (`ToJsonName`): two fields whose JSON names are
    equal do not compile (`a` and `a_`), so a table's columns never draw them both."""
    out, upper = [], False
    for c in name:
        if c == "_":
            upper = True
        else:
            out.append(c.upper() if upper else c)
            upper = False
    return "".join(out)


@st.composite
def _protobuf_columns(draw: st.DrawFn, depth: int = 2) -> str:
    """Column types a Protobuf message holds (arrays and maps NOT NULL: proto has no null
    list; array elements NOT NULL)."""
    names = draw(st.lists(_NAMES, min_size=1, max_size=4, unique_by=_json_name))
    cols = []
    for name in names:
        kind = draw(st.sampled_from(["scalar", "array", "map", "row"] if depth else ["scalar"]))
        if kind == "array":
            element = draw(st.one_of(_SCALARS, _protobuf_columns(depth - 1).map(
                lambda c: f"ROW<{c}>")))
            t = f"ARRAY<{element} NOT NULL> NOT NULL"
        elif kind == "map":  # entry messages: any key, a nullable value stays null
            t = f"MAP<{draw(_SCALARS)} NOT NULL, {draw(_SCALARS)}{draw(_NULL)}> NOT NULL"
        elif kind == "row":
            t = f"ROW<{draw(_protobuf_columns(depth - 1))}>{draw(_NULL)}"
        else:
            t = draw(_SCALARS) + draw(_NULL)
        cols.append(f"`{name}` {t}")
    return ", ".join(cols)


def _utc(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _utc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_utc(v) for v in value]
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc)
    return value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_rows_round_trip_through_the_derived_message(data: st.DataObject) -> None:
    row_type = parse_type(f"ROW<{data.draw(_protobuf_columns())}>").not_null()
    codec = _codec("protobuf", {}, row=row_type)
    for value in data.draw(st.lists(values(row_type), min_size=1, max_size=3)):
        assert codec.decode(codec.encode(value)) == _utc(value)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_any_bytes_decode_or_are_a_decode_error(data: bytes) -> None:
    codec = _ANY_BYTES
    try:
        row = codec.decode(data)
    except DecodeError:
        return
    assert row is not None and set(row) == {"id", "name", "tags", "at"}


_ANY_BYTES = create_codec("protobuf", parse_type(
    "ROW<id BIGINT NOT NULL, name STRING, tags ARRAY<STRING NOT NULL> NOT NULL, "
    "at TIMESTAMP(3)>").not_null(), {})


FLINK_SCHEMA = """syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Event {
  enum Kind { UNKNOWN = 0; CLICK = 1; VIEW = 2; }
  Kind kind = 1;
  Kind kind_name = 2;
  google.protobuf.Timestamp at = 3;
  repeated string words = 4;
  map<string, int64> counts = 5;
  message Inner { int32 v = 1; }
  repeated Inner inners = 6;
}
"""


def test_flinks_mappings_enum_as_int_or_string_and_timestamp_as_seconds_and_nanos():
    row = parse_type("ROW<kind INT NOT NULL, kind_name STRING NOT NULL, "
                     "at ROW<seconds BIGINT NOT NULL, nanos INT NOT NULL>>").not_null()
    codec = _codec("protobuf", {"schema": FLINK_SCHEMA}, row=row)
    value = {"kind": 2, "kind_name": "CLICK", "at": {"seconds": 1_700_000_000, "nanos": 5}}
    data = codec.encode(value)
    assert data == b"\x08\x02\x10\x01\x1a\x08\x08\x80\xe2\xcf\xaa\x06\x10\x05"
    assert codec.decode(data) == value
    with pytest.raises(EncodeError, match="no number 7 in enum"):
        codec.encode({**value, "kind": 7})


def test_nulls_inside_containers_are_flinks_defaults_in_protobuf_and_errors_in_the_registry():
    row = parse_type("ROW<words ARRAY<STRING>, counts MAP<STRING, BIGINT>, "
                     "inners ARRAY<ROW<v INT>>>").not_null()
    value = {"words": ["a", None], "counts": {"k": None}, "inners": [None]}
    flink = _codec("protobuf", {"schema": FLINK_SCHEMA, "write-null-string-literal": "NULL"},
                   row=row)
    assert flink.decode(flink.encode(value)) == {
        "words": ["a", "NULL"], "counts": {"k": 0}, "inners": [{"v": 0}]}
    assert _codec("protobuf", {"schema": FLINK_SCHEMA}, row=row).decode(
        flink.encode({**value, "counts": {}, "inners": []}))["words"] == ["a", "NULL"]
    registry = _registry()
    strict = _codec("protobuf-registry", {"url": registry.name, "schema": FLINK_SCHEMA},
                    registry, row=row).bind_schema_id(1)
    with pytest.raises(EncodeError, match="element 1 is null"):
        strict.encode(value)


def test_a_timestamp_is_cut_to_its_declared_precision() -> None:
    """As Flink's cast to the column's type leaves it, before any format writes it."""
    codec = create_codec("protobuf", parse_type(
        "ROW<t TIMESTAMP(0), l TIMESTAMP_LTZ(3), e TIMESTAMP(1)>").not_null(), {})
    row = {"t": dt.datetime(2024, 2, 29, 12, 0, 0, 999999),
           "l": dt.datetime(2024, 2, 29, 12, 0, 0, 999999, tzinfo=dt.timezone.utc),
           "e": dt.datetime(1969, 12, 31, 23, 59, 59, 999999)}
    assert codec.decode(codec.encode(row)) == {
        "t": dt.datetime(2024, 2, 29, 12),
        "l": dt.datetime(2024, 2, 29, 12, 0, 0, 999000, tzinfo=dt.timezone.utc),
        "e": dt.datetime(1970, 1, 1)}


def test_a_decimal_wider_than_its_column_is_a_decode_error() -> None:
    """A confluent.type.Decimal whose value needs more digits than the column's precision
    (100000000.00 in a DECIMAL(10, 2)) is no value of the row: DecodeError, as a json reader
    refuses it, never a Decimal the column cannot hold."""
    codec = create_codec("protobuf", parse_type("ROW<m DECIMAL(10, 2)>").not_null(), {},
                         CodecContext())
    assert codec.decode(codec.encode({"m": Decimal("99999999.99")})) == \
        {"m": Decimal("99999999.99")}
    with pytest.raises(DecodeError, match="needs more than 10 digits for DECIMAL"):
        # m = confluent.type.Decimal{value: 10000000000 (unscaled), precision: 11, scale: 2}
        codec.decode(b"\x0a\x0b\x0a\x05\x02\x54\x0b\xe4\x00\x10\x0b\x18\x02")
