"""The `protobuf` and `protobuf-registry` codecs: traits, options, errors, evolved writers."""

from __future__ import annotations

import itertools
import pickle

import pytest

from formats.codec import CodecContext, create_codec, format_factory
from formats.errors import DecodeError, EncodeError, InvalidOptionError, SchemaError
from formats.framing import BARE, CONFLUENT_PROTOBUF
from formats.registry.mock import MockRegistry
from formats.registry.registration import bind_schema_id, needs_schema_id
from formats.sqltypes import parse_type

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
    with pytest.raises(DecodeError, match="magic byte is 1"):
        reader.decode(b"\x01\x00\x00\x00\x01\x00")
    with pytest.raises(DecodeError, match="message index"):
        reader.decode(b"\x00\x00\x00\x00\x01\x06\x02")
