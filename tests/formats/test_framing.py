"""Each format answers for itself: its schema type, its framing, its key family."""

import copy
import json
import pickle
import uuid

import pytest

from keyguard.formats.codec import CodecContext, create_codec, format_factory
from keyguard.formats.errors import DecodeError
from keyguard.formats.framing import (
    APICURIO_HEADER_GLOBAL_ID,
    APICURIO_LEGACY,
    BARE,
    CONFLUENT,
    CONFLUENT_HEADER,
    CONFLUENT_PROTOBUF,
    CONFLUENT_PROTOBUF_HEADER,
    Frame,
    FrameError,
    HeaderFrame,
)
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.sqltypes import parse_type


def test_confluent_frame_wraps_and_reads_the_id() -> None:
    data, headers = CONFLUENT.wrap(100017, b"\x02")
    assert (data, headers) == (b"\x00\x00\x01\x86\xb1\x02", ())
    assert CONFLUENT.unwrap(data, None, where="here") == (100017, None, b"\x02")
    assert CONFLUENT.schema_id(data) == 100017
    assert CONFLUENT.body(data) == b"\x02"
    assert CONFLUENT.schema_id(b"\x01\x00\x00\x00\x01") is None  # not magic byte 0
    assert CONFLUENT.schema_id(b"\x00\x00") is None  # too short
    assert CONFLUENT.unwrap(b"\x00\x00\x00\x00\x07", [("h", b"v")], where="here") == \
        (7, None, b"")  # the header only: an empty body; headers do not matter
    with pytest.raises(ValueError, match="integer schema id"):
        CONFLUENT.wrap(None, b"")


def test_bare_frame_is_the_body() -> None:
    assert BARE.wrap(None, b"ab") == (b"ab", ())
    assert BARE.unwrap(b"\x00\x00\x00\x00\x01", None, where="here") == \
        (None, None, b"\x00\x00\x00\x00\x01")
    assert BARE.schema_id(b"\x00\x00\x00\x00\x01") is None
    assert BARE.common_id([b"\x00\x00\x00\x00\x01"]) is None
    assert not BARE.carries_schema_id and not BARE.indexed and BARE.header == 0


@pytest.mark.parametrize("schema_id, index, golden", [
    (1, (0,), "00 00000001 00"),  # [0] is the single byte 0
    (7, (1,), "00 00000007 02 02"),  # count 1, position 1 (zigzag)
    (7, (1, 0), "00 00000007 04 02 00"),
    (2**32 - 1, (3, 2, 1), "00 ffffffff 06 06 04 02"),
    (300, (64,), "00 0000012c 02 8001"),  # a position past one varint byte
])
def test_confluent_protobuf_frame_golden_bytes(schema_id: int, index: tuple[int, ...],
                                              golden: str) -> None:
    """The bytes confluent-kafka's `SchemaId.id_to_bytes` writes for each message index."""
    data, headers = CONFLUENT_PROTOBUF.wrap(schema_id, b"body", index)
    assert data == bytes.fromhex(golden) + b"body" and headers == ()
    assert CONFLUENT_PROTOBUF.unwrap(data, None, where="here") == \
        (schema_id, index, b"body")
    assert CONFLUENT_PROTOBUF.header_bytes(schema_id, index) == bytes.fromhex(golden)
    assert CONFLUENT_PROTOBUF.common_id([data]) is None  # read record by record


@pytest.mark.parametrize("frame, data, message", [
    (CONFLUENT, b"", "codec X: not Confluent-framed: 0 bytes, shorter than the 5-byte header "
                     "(magic byte 0, a 4-byte schema id)"),
    (CONFLUENT, b"\x00\x00\x01", "codec X: not Confluent-framed: 3 bytes, shorter than"),
    (CONFLUENT, b"{\"id\":1}", "codec X: not Confluent-framed: magic byte is 123, not 0"),
    (CONFLUENT, b"\x02" + bytes(16), "codec X: not Confluent-framed: magic byte is 2, not 0 "
                                      "(a schema id) or 1 (a schema GUID)"),
    (CONFLUENT, b"\x01" + bytes(15), "codec X: not Confluent-framed: 16 bytes, shorter than "
                                      "the 17-byte header (magic byte 1, a 16-byte schema GUID)"),
    (CONFLUENT_PROTOBUF, b"\x00\x00\x00", "codec X: not Confluent-framed: 3 bytes"),
    (CONFLUENT_PROTOBUF, b"\x00\x00\x00\x00\x09",
     "codec X: not Confluent-framed: schema id 9: the message index is cut off"),
    (CONFLUENT_PROTOBUF, b"\x00\x00\x00\x00\x09\x06\x02",
     "codec X: not Confluent-framed: schema id 9: the message index claims 3 positions"),
    (CONFLUENT_PROTOBUF, b"\x00\x00\x00\x00\x09\x02\x01",
     "codec X: not Confluent-framed: schema id 9: the message index has a negative position"),
    (CONFLUENT_PROTOBUF, b"\x00\x00\x00\x00\x09" + b"\xff" * 11,
     "the message index is cut off or too long"),
])
def test_unwrap_errors_name_where_and_what(frame: Frame, data: bytes, message: str) -> None:
    with pytest.raises(FrameError) as err:
        frame.unwrap(data, None, where="codec X")
    assert err.value.message.startswith(message) or message in err.value.message
    assert isinstance(err.value, DecodeError) and err.value.exit_code == 2
    assert "schema-registry serializer" in (err.value.hint or "")
    with pytest.raises(FrameError) as own:
        frame.unwrap(data, None, where="codec X", hint="read it with json")
    assert own.value.hint == "read it with json"


def test_a_frame_refuses_an_id_it_cannot_write() -> None:
    with pytest.raises(ValueError, match="integer schema id"):
        CONFLUENT.wrapping(uuid.UUID(int=1))
    with pytest.raises(ValueError, match="at least one position"):
        CONFLUENT_PROTOBUF.wrapping(1, ())


def test_common_id_of_a_batch() -> None:
    one = [CONFLUENT.wrap(5, b)[0] for b in (b"a", b"bc", b"")]
    assert CONFLUENT.common_id(one) == (5, 5)
    assert CONFLUENT.common_id([*one, CONFLUENT.wrap(6, b"a")[0]]) is None
    assert CONFLUENT.common_id([b"\x01\x00\x00\x00\x05a"]) is None  # another magic byte
    assert CONFLUENT.common_id([b"\x00\x00"]) is None


def test_the_codecs_unwrap_with_their_frame() -> None:
    """A codec's frame is its factory's, its header named for its side, and a record outside
    it is the frame's error."""
    row = parse_type("ROW<id BIGINT NOT NULL>").not_null()
    registry = MockRegistry("framing-codecs")
    for name in ("avro-confluent", "json-registry"):
        codec = create_codec(name, row, {"url": "mock://framing-codecs"},
                             CodecContext(role="key", topic="t", registry=registry))
        assert format_factory(name).frame is CONFLUENT
        assert codec.frame == CONFLUENT.for_role("key") == \
            format_factory(name).frame_of({}, "key")  # type: ignore[attr-defined]
        assert codec.frame.header_name == "__key_schema_id"  # type: ignore[attr-defined]
        with pytest.raises(FrameError, match=f"^{name} key format of topic 't': not "
                                             "Confluent-framed: magic byte is 7, not 0"):
            codec.decode(b"\x07\x00\x00\x00\x01\x02")


@pytest.mark.parametrize("name, schema_type, frame, family", [
    ("json", "JSON", BARE, "json"), ("csv", "JSON", BARE, "csv"), ("raw", "JSON", BARE, "raw"),
    ("avro", "AVRO", BARE, "avro"), ("avro-confluent", "AVRO", CONFLUENT, "avro"),
])
def test_formats_declare_their_traits(name: str, schema_type: str, frame: object,
                                      family: str) -> None:
    f = format_factory(name)
    assert (f.schema_type, f.frame, f.key_family) == (schema_type, frame, family)
    assert f.uses_registry is (name == "avro-confluent")


@pytest.mark.parametrize("name", ["json", "avro", "avro-confluent"])
def test_written_schema_is_what_the_codec_writes(name: str) -> None:
    row = parse_type("ROW<id BIGINT NOT NULL, name STRING>").not_null()
    opts = {"url": "mock://framing"} if name == "avro-confluent" else {}
    codec = create_codec(name, row, opts, CodecContext(role="key", topic="t",
                                                        registry=MockRegistry("framing")))
    schema = codec.written_schema()
    assert schema.schema_type == format_factory(name).schema_type
    doc = json.loads(schema.text)
    names = [f["name"] for f in doc["fields"]] if schema.schema_type == "AVRO" else \
        list(doc["properties"])
    assert names == ["id", "name"]
    assert codec.written_schema("here").origin == "here"


@pytest.mark.parametrize("frame", [BARE, CONFLUENT, CONFLUENT_PROTOBUF_HEADER, APICURIO_LEGACY,
                                   APICURIO_HEADER_GLOBAL_ID.for_role("value")],
                         ids=lambda f: f.name)
def test_a_frame_is_a_value_that_pickles(frame: Frame) -> None:
    # A Spark task gets its side's frame pickled; equal frames are one frame to every reader.
    for copied in (pickle.loads(pickle.dumps(frame)), copy.copy(frame), frame.replace()):
        assert copied == frame and hash(copied) == hash(frame) and copied is not frame
        assert repr(copied) == repr(frame)


def test_frames_differ_by_any_field_and_by_class() -> None:
    assert CONFLUENT != CONFLUENT_HEADER != CONFLUENT_PROTOBUF_HEADER
    assert CONFLUENT.replace(in_header=True) == CONFLUENT_HEADER.replace(name="confluent")
    assert CONFLUENT != Frame("confluent")  # same name, another class
    sided = APICURIO_HEADER_GLOBAL_ID.for_role("key")
    assert isinstance(sided, HeaderFrame) and sided.header_name == "apicurio.key.globalId"
    assert sided.replace(header_name="apicurio.{role}.globalId") == APICURIO_HEADER_GLOBAL_ID
    assert repr(CONFLUENT).startswith("ConfluentFrame(name='confluent', title='Confluent'")
