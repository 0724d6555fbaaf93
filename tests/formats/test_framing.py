"""Each format answers for itself: its schema type, its framing, its key family."""

import json

import pytest

from keyguard.formats.codec import CodecContext, create_codec, format_factory
from keyguard.formats.framing import BARE, CONFLUENT
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.sqltypes import parse_type


def test_confluent_frame_wraps_and_reads_the_id() -> None:
    data = CONFLUENT.wrap(100017, b"\x02")
    assert data == b"\x00\x00\x01\x86\xb1\x02"
    assert CONFLUENT.schema_id(data) == 100017
    assert CONFLUENT.body(data) == b"\x02"
    assert CONFLUENT.schema_id(b"\x01\x00\x00\x00\x01") is None  # not magic byte 0
    assert CONFLUENT.schema_id(b"\x00\x00") is None  # too short
    with pytest.raises(ValueError):
        CONFLUENT.wrap(None, b"")


def test_bare_frame_is_the_body() -> None:
    assert BARE.wrap(None, b"ab") == b"ab"
    assert BARE.schema_id(b"\x00\x00\x00\x00\x01") is None
    assert not BARE.carries_schema_id


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
