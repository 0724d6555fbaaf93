"""Apicurio Registry's framings, byte for byte as its serdes write them.

Each golden case is what Apicurio's serializer writes for the schema id and body, read off its
source: in the bytes, `out.write(MAGIC_BYTE)` (0) then the id handler's `writeId`:
`Default4ByteIdHandler` (3.x's default, the content id) `ByteBuffer.allocate(4).putInt((int) id)`,
`Legacy8ByteIdHandler` (3.x) and `DefaultIdHandler` (2.x's default, the global id)
`ByteBuffer.allocate(8).putLong(id)`, both big-endian; in a header, `DefaultHeadersHandler`'s
`headers.add(name, ByteBuffer.allocate(8).putLong(id).array())` under `KafkaSerdeHeaders`' names
(`apicurio.key.globalId`, `apicurio.value.contentId`, ...), the record's bytes the body alone.
"""

import uuid

import pytest

from keyguard.formats import catalog
from keyguard.formats.errors import EXIT_INVALID
from keyguard.formats.framing import (
    APICURIO,
    APICURIO_KEY_CONTENT_ID,
    APICURIO_KEY_GLOBAL_ID,
    APICURIO_LEGACY,
    APICURIO_VALUE_CONTENT_ID,
    APICURIO_VALUE_GLOBAL_ID,
    CONFLUENT,
    FrameError,
    HeaderFrame,
)

HEADER_FRAMES = [APICURIO_KEY_GLOBAL_ID, APICURIO_VALUE_GLOBAL_ID, APICURIO_KEY_CONTENT_ID,
                 APICURIO_VALUE_CONTENT_ID]


@pytest.mark.parametrize("frame, schema_id, golden", [
    # Default4ByteIdHandler: putInt of the content id after the magic byte 0
    (APICURIO, 1, "00 00000001"),
    (APICURIO, 100017, "00 000186b1"),
    (APICURIO, 2**31 - 1, "00 7fffffff"),
    # Legacy8ByteIdHandler / 2.x DefaultIdHandler: putLong of the global id
    (APICURIO_LEGACY, 1, "00 0000000000000001"),
    (APICURIO_LEGACY, 100017, "00 00000000000186b1"),
    (APICURIO_LEGACY, 2**32, "00 0000000100000000"),  # past 4 bytes: only a long holds it
    (APICURIO_LEGACY, 2**63 - 1, "00 7fffffffffffffff"),  # Long.MAX_VALUE
])
def test_prefix_frames_golden_bytes(frame, schema_id, golden):
    data, headers = frame.wrap(schema_id, b"\x02body")
    assert (data, headers) == (bytes.fromhex(golden) + b"\x02body", ())
    assert frame.header_bytes(schema_id) == bytes.fromhex(golden)
    assert frame.unwrap(data, None, where="here") == (schema_id, None, b"\x02body")
    assert frame.schema_id(data) == frame.registry_id(data) == schema_id
    assert frame.body(data) == b"\x02body"
    assert frame.common_id([data, data]) == (schema_id, len(bytes.fromhex(golden)))
    assert frame.carries_schema_id and not frame.indexed


def test_apicurio_default_prefix_is_confluents_layout():
    """3.x's default writes Confluent's 5 bytes (its content id where Confluent has its id)."""
    assert APICURIO.wrap(42, b"x") == CONFLUENT.wrap(42, b"x")
    assert APICURIO.header == 5 and APICURIO_LEGACY.header == 9


@pytest.mark.parametrize("frame, name", [
    (APICURIO_KEY_GLOBAL_ID, "apicurio.key.globalId"),
    (APICURIO_VALUE_GLOBAL_ID, "apicurio.value.globalId"),
    (APICURIO_KEY_CONTENT_ID, "apicurio.key.contentId"),
    (APICURIO_VALUE_CONTENT_ID, "apicurio.value.contentId"),
])
@pytest.mark.parametrize("schema_id, golden", [
    (1, "0000000000000001"),
    (100017, "00000000000186b1"),
    (2**63 - 1, "7fffffffffffffff"),
])
def test_header_frames_golden_bytes(frame, name, schema_id, golden):
    """DefaultHeadersHandler.writeHeaders: the id as putLong under the side's header name; the
    serializer then writes the body alone (no magic byte)."""
    data, headers = frame.wrap(schema_id, b"\x00body")
    assert data == b"\x00body"  # the body as it is, even one starting with byte 0
    assert headers == ((name, bytes.fromhex(golden)),)
    assert frame.header_bytes(schema_id) == b"" and frame.header == 0
    assert frame.unwrap(data, headers, where="here") == (schema_id, None, b"\x00body")
    assert frame.schema_id(data, headers) == frame.registry_id(data, headers) == schema_id
    assert frame.body(data) == data
    assert frame.carries_schema_id and not frame.indexed


def test_the_header_comes_before_the_bytes_and_the_last_header_wins():
    """KafkaDeserializer reads the header first (`lastHeader`); the bytes only without one."""
    confluent_like = b"\x00\x00\x00\x00\x09body"
    headers = [("apicurio.value.contentId", bytes.fromhex("0000000000000003")),
               ("other", b"x"),
               ("apicurio.value.contentId", bytes.fromhex("0000000000000004"))]
    assert APICURIO_VALUE_CONTENT_ID.unwrap(confluent_like, headers, where="here") == \
        (4, None, confluent_like)
    # no header: the deserializer's id handler reads the bytes (3.x: 4 bytes, 2.x: 8 bytes)
    assert APICURIO_VALUE_CONTENT_ID.unwrap(confluent_like, [("other", b"x")], where="here") \
        == (9, None, b"body")
    legacy = bytes.fromhex("00 0000000000000009") + b"body"
    assert APICURIO_VALUE_GLOBAL_ID.unwrap(legacy, None, where="here") == (9, None, b"body")
    assert APICURIO_VALUE_GLOBAL_ID.schema_id(legacy) == 9
    # the key's header is not the value's
    assert APICURIO_KEY_CONTENT_ID.unwrap(confluent_like, headers, where="here") == \
        (9, None, b"body")


def test_header_frames_common_id():
    headers = [("apicurio.key.globalId", bytes.fromhex("0000000000000005"))]
    assert APICURIO_KEY_GLOBAL_ID.common_id([b"a", b"bb"], [headers, headers]) == (5, 0)
    other = [("apicurio.key.globalId", bytes.fromhex("0000000000000006"))]
    assert APICURIO_KEY_GLOBAL_ID.common_id([b"a", b"bb"], [headers, other]) is None
    assert APICURIO_KEY_GLOBAL_ID.common_id([b"a", b"bb"], [headers, None]) is None
    assert APICURIO_KEY_GLOBAL_ID.common_id([b"a"], [headers, headers]) is None
    bad = [("apicurio.key.globalId", b"\x05")]
    assert APICURIO_KEY_GLOBAL_ID.common_id([b"a"], [bad]) is None
    # without headers, the records' bytes: the payload frame's common id
    legacy = bytes.fromhex("00 0000000000000007")
    assert APICURIO_KEY_GLOBAL_ID.common_id([legacy + b"a", legacy + b"b"]) == (7, 9)
    assert APICURIO_KEY_GLOBAL_ID.common_id([legacy + b"a"], [None]) == (7, 9)
    assert HeaderFrame("h", header_name="h").common_id([b"a"], [None]) is None


@pytest.mark.parametrize("frame, data, message", [
    (APICURIO, b"\x00\x00\x01", "not Apicurio-framed: 3 bytes, shorter than the 5-byte header "
                                "(magic byte 0, a 4-byte schema id)"),
    (APICURIO, b"", "not Apicurio-framed: 0 bytes, shorter than the 5-byte header"),
    (APICURIO, b"\x01\x00\x00\x00\x01", "not Apicurio-framed: magic byte is 1, not 0"),
    (APICURIO_LEGACY, b"\x00\x00\x00\x00\x01body"[:8],
     "not Apicurio-framed: 8 bytes, shorter than the 9-byte header (magic byte 0, an 8-byte "
     "schema id)"),
    (APICURIO_LEGACY, b"{\"a\": 1}xx", "not Apicurio-framed: magic byte is 123, not 0"),
])
def test_prefix_frames_refuse_records_outside_them(frame, data, message):
    with pytest.raises(FrameError) as caught:
        frame.unwrap(data, None, where="avro key format of topic 't'")
    assert str(caught.value).startswith(f"avro key format of topic 't': {message}")
    assert caught.value.exit_code == EXIT_INVALID
    assert "serializer" in (caught.value.hint or "")
    assert frame.schema_id(data) is None and frame.registry_id(data) is None


@pytest.mark.parametrize("frame, headers, data, message", [
    (APICURIO_VALUE_GLOBAL_ID, None, b"{}",
     "no header 'apicurio.value.globalId', nor starts with magic byte 0"),
    (APICURIO_VALUE_GLOBAL_ID, [("apicurio.key.globalId", bytes(8))], b"",
     "no header 'apicurio.value.globalId', nor starts with magic byte 0"),
    (HeaderFrame("h", header_name="apicurio.value.globalId"), None, b"\x00" * 12,
     "no header 'apicurio.value.globalId'"),
    (APICURIO_VALUE_GLOBAL_ID, None, b"\x00\x00\x00\x00\x01",  # a 4-byte id where 8 are read
     "5 bytes, shorter than the 9-byte header (magic byte 0, an 8-byte schema id)"),
    (APICURIO_KEY_CONTENT_ID, [("apicurio.key.contentId", bytes(4))], b"body",
     "header 'apicurio.key.contentId' holds 4 bytes, not the 8-byte id"),
    (APICURIO_KEY_CONTENT_ID, [("apicurio.key.contentId", bytes(9))], b"body",
     "header 'apicurio.key.contentId' holds 9 bytes, not the 8-byte id"),
    (APICURIO_KEY_CONTENT_ID, [("apicurio.key.contentId", None)], b"body",
     "header 'apicurio.key.contentId' holds 0 bytes, not the 8-byte id"),
    (APICURIO_KEY_CONTENT_ID, [("apicurio.key.contentId", b"\xff" * 8)], b"body",
     "header 'apicurio.key.contentId' holds a negative id -1"),
])
def test_header_frames_refuse_records_outside_them(frame, headers, data, message):
    with pytest.raises(FrameError) as caught:
        frame.unwrap(data, headers, where=lambda: "the value format")
    assert str(caught.value).startswith(f"the value format: not Apicurio-framed: {message} (")
    assert caught.value.exit_code == EXIT_INVALID
    assert frame.schema_id(data, headers) is None


@pytest.mark.parametrize("frame", [APICURIO, APICURIO_LEGACY, *HEADER_FRAMES])
@pytest.mark.parametrize("bad", [None, "7", 7.0, True, uuid.UUID(int=7)])
def test_frames_need_an_integer_id(frame, bad):
    with pytest.raises(ValueError, match=f"{frame.name} framing needs an integer schema id"):
        frame.wrap(bad, b"")


@pytest.mark.parametrize("frame, bad, most", [
    (APICURIO, -1, 2**32 - 1),
    (APICURIO, 2**32, 2**32 - 1),
    (APICURIO_LEGACY, -1, 2**64 - 1),
    (APICURIO_LEGACY, 2**64, 2**64 - 1),
    (APICURIO_VALUE_CONTENT_ID, -1, 2**63 - 1),
    (APICURIO_VALUE_CONTENT_ID, 2**63, 2**63 - 1),  # past Long.MAX_VALUE
])
def test_frames_refuse_ids_they_cannot_hold(frame, bad, most):
    with pytest.raises(ValueError, match=f"holds a schema id of 0 to {most}, not {bad}"):
        frame.wrap(bad, b"")


@pytest.mark.parametrize("frame", [APICURIO, APICURIO_LEGACY, *HEADER_FRAMES])
def test_round_trip(frame):
    """Whatever a frame wraps it unwraps to the same id and body."""
    for schema_id in (0, 1, 255, 256, 65535, 2**24 + 3, 2**31 - 1):
        for body in (b"", b"\x00", b"\x00\x00\x00\x00\x00\x01", bytes(range(256))):
            data, headers = frame.wrap(schema_id, body)
            assert frame.unwrap(data, headers, where="here") == (schema_id, None, body)
            assert frame.schema_id(data, headers) == schema_id


def test_catalog_lists_every_apicurio_frame():
    named = {f.name: f for f in (APICURIO, APICURIO_LEGACY, *HEADER_FRAMES)}
    assert set(named) == {"apicurio", "apicurio-legacy", "apicurio-key-global-id",
                          "apicurio-value-global-id", "apicurio-key-content-id",
                          "apicurio-value-content-id"}
    for name, frame in named.items():
        assert catalog.frame(name) is frame
