"""`Frame.locate`: where a record carries its schema id, as the audit counts it; and
`Frame.id_headers`, the side's headers a frame reads an id from."""

from __future__ import annotations

import uuid

from keyguard.formats.framing import (
    APICURIO_HEADER_CONTENT_ID,
    BARE,
    CONFLUENT,
    CONFLUENT_HEADER,
    CONFLUENT_PROTOBUF,
    IN_BOTH,
    IN_BYTES_GUID,
    IN_BYTES_ID,
    IN_HEADER,
    NOWHERE,
)

GUID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
KEY = CONFLUENT.for_role("key")


def test_confluent_framings_are_told_apart() -> None:
    body = b"\x02\x0aorder"
    prefixed = CONFLUENT.wrap(7, body)[0]
    bare, headers = CONFLUENT_HEADER.for_role("key").wrap(GUID, body)
    assert KEY.locate(prefixed) == (7, IN_BYTES_ID)
    assert KEY.locate(bare, headers) == (GUID, IN_HEADER)
    assert KEY.locate(b"\x01" + GUID.bytes + body) == (GUID, IN_BYTES_GUID)
    assert KEY.locate(bare) == (None, NOWHERE)
    assert KEY.locate(None) == (None, NOWHERE)
    same = (("__key_schema_id", b"\x00" + (7).to_bytes(4, "big")),)
    assert KEY.locate(prefixed, same) == (7, IN_BOTH)
    # another id in the header than in the bytes: the header is what the dual reader reads
    assert KEY.locate(prefixed, headers) == (GUID, IN_HEADER)
    # the value's header says nothing about the key
    assert KEY.locate(bare, (("__value_schema_id", headers[0][1]),)) == (None, NOWHERE)
    # a header with a null value is absent, as confluent-kafka reads it
    assert KEY.locate(prefixed, (("__key_schema_id", None),)) == (7, IN_BYTES_ID)


def test_a_short_bare_body_starting_with_byte_zero_is_no_frame() -> None:
    assert KEY.locate(b"\x00\x02x") == (None, NOWHERE)
    assert CONFLUENT_PROTOBUF.for_role("value").locate(b"\x00\x00\x00\x00\x03\x00\x08") == \
        (3, IN_BYTES_ID)


def test_apicurio_headers_and_bare_frames() -> None:
    frame = APICURIO_HEADER_CONTENT_ID.for_role("value")
    bare, headers = frame.wrap(42, b"body")
    assert frame.locate(bare, headers) == (42, IN_HEADER)
    assert frame.locate(b"\x00\x00\x00\x00\x2abody") == (42, IN_BYTES_ID)
    assert frame.locate(b"\x00\x00\x00\x00\x2abody", headers) == (42, IN_BOTH)
    assert BARE.locate(b"\x00\x00\x00\x00\x01") == (None, NOWHERE)


def test_id_headers_are_the_sides_own() -> None:
    headers = (("__value_schema_id", b"\x01"), ("keyguard.migrate", b"retire 3"),
               ("__key_schema_id", b"\x01" + GUID.bytes))
    assert KEY.id_headers(headers) == (("__key_schema_id", b"\x01" + GUID.bytes),)
    assert CONFLUENT.for_role("value").id_headers(headers) == (("__value_schema_id", b"\x01"),)
    assert BARE.id_headers(headers) == () and KEY.id_headers(None) == ()
