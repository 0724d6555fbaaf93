"""Confluent's header framing and its dual reading, against confluent-kafka's own functions.

confluent-kafka (2.16) is the oracle: `header_schema_id_serializer` writes the schema GUID in
`__key_schema_id` / `__value_schema_id`, `prefix_schema_id_serializer` the id in the bytes, and
`dual_schema_id_deserializer` reads the header first, then the bytes with magic byte 0 or 1.
keyguard's frames must write the same bytes and headers and read back the same id, message
index and body, for any GUID, id, message index and body.
"""

from __future__ import annotations

import io
import uuid

import pytest
from confluent_kafka.schema_registry import (
    dual_schema_id_deserializer,
    header_schema_id_serializer,
    prefix_schema_id_serializer,
)
from confluent_kafka.schema_registry.common.serde import SchemaId
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats import catalog
from keyguard.formats.framing import (
    CONFLUENT,
    CONFLUENT_HEADER,
    CONFLUENT_PROTOBUF,
    CONFLUENT_PROTOBUF_HEADER,
    FrameError,
)

ROLES = {"key": MessageField.KEY, "value": MessageField.VALUE}
guids = st.uuids()
indexes = st.lists(st.integers(0, 2**20), min_size=1, max_size=4).map(tuple)
bodies = st.binary(max_size=40)
roles = st.sampled_from(sorted(ROLES))


def _context(role: str, headers: list[tuple[str, bytes | None]] | None = None,
             ) -> SerializationContext:
    return SerializationContext("t", ROLES[role], headers if headers is not None else [])


def _schema_id(schema_type: str, *, guid: uuid.UUID | None = None, id_: int | None = None,
               index: tuple[int, ...] | None = None) -> SchemaId:
    return SchemaId(schema_type, id_, str(guid) if guid else None,
                    list(index) if index is not None else None)


@settings(max_examples=200, deadline=None)
@given(guid=guids, body=bodies, role=roles)
def test_header_framing_writes_what_header_schema_id_serializer_writes(
        guid: uuid.UUID, body: bytes, role: str) -> None:
    headers: list[tuple[str, bytes | None]] = []
    theirs = header_schema_id_serializer(body, _context(role, headers),
                                         _schema_id("AVRO", guid=guid))
    frame = CONFLUENT_HEADER.for_role(role)
    assert frame.wrap(guid, body) == (theirs, tuple(headers))
    assert theirs == body and headers == [(f"__{role}_schema_id", b"\x01" + guid.bytes)]


@settings(max_examples=200, deadline=None)
@given(guid=guids, index=indexes, body=bodies, role=roles)
def test_protobuf_header_framing_puts_the_message_index_in_the_header(
        guid: uuid.UUID, index: tuple[int, ...], body: bytes, role: str) -> None:
    headers: list[tuple[str, bytes | None]] = []
    theirs = header_schema_id_serializer(body, _context(role, headers),
                                         _schema_id("PROTOBUF", guid=guid, index=index))
    frame = CONFLUENT_PROTOBUF_HEADER.for_role(role)
    assert frame.wrap(guid, body, index) == (theirs, tuple(headers))
    assert frame.unwrap(theirs, headers, where="here") == (guid, index, body)


@settings(max_examples=200, deadline=None)
@given(id_=st.integers(0, 2**31 - 1), index=indexes, body=bodies)
def test_prefix_framing_writes_what_prefix_schema_id_serializer_writes(
        id_: int, index: tuple[int, ...], body: bytes) -> None:
    assert CONFLUENT.wrap(id_, body) == \
        (prefix_schema_id_serializer(body, None, _schema_id("AVRO", id_=id_)), ())
    assert CONFLUENT_PROTOBUF.wrap(id_, body, index) == \
        (prefix_schema_id_serializer(body, None, _schema_id("PROTOBUF", id_=id_, index=index)),
         ())


def _dual(schema_type: str, data: bytes, headers: list[tuple[str, bytes | None]], role: str,
          ) -> tuple[object, tuple[int, ...] | None, bytes]:
    """What `dual_schema_id_deserializer` reads: the id (or GUID), the index, the body."""
    found = SchemaId(schema_type)
    rest = dual_schema_id_deserializer(data, _context(role, headers), found)
    assert isinstance(rest, io.BytesIO)
    schema_id = found.guid if found.guid is not None else found.id
    index = tuple(found.message_indexes) if found.message_indexes is not None else None
    return schema_id, index, rest.read()


records = st.one_of(
    # the GUID in the side's header, the bytes bare
    st.tuples(guids, bodies).map(lambda g: ("header", g[0], g[1])),
    # the id in the bytes, magic byte 0
    st.tuples(st.integers(0, 2**32 - 1), bodies).map(lambda g: ("id", g[0], g[1])),
    # the GUID in the bytes, magic byte 1
    st.tuples(guids, bodies).map(lambda g: ("guid", g[0], g[1])),
)


def _record(kind: str, schema_id: int | uuid.UUID, body: bytes, role: str, other: bytes | None,
            ) -> tuple[bytes, list[tuple[str, bytes | None]]]:
    # the other side's header and an unrelated one are always there: they must not be read
    headers: list[tuple[str, bytes | None]] = [("trace", b"x")]
    if other is not None:
        headers.append(("__key_schema_id" if role == "value" else "__value_schema_id", other))
    if kind == "header":
        assert isinstance(schema_id, uuid.UUID)
        headers.append((f"__{role}_schema_id", b"\x01" + schema_id.bytes))
        return body, headers
    if kind == "id":
        assert isinstance(schema_id, int)
        return b"\x00" + schema_id.to_bytes(4, "big") + body, headers
    assert isinstance(schema_id, uuid.UUID)
    return b"\x01" + schema_id.bytes + body, headers


@settings(max_examples=300, deadline=None)
@given(record=records, role=roles, other=st.one_of(st.none(), st.binary(max_size=20)))
def test_every_confluent_frame_reads_as_the_dual_deserializer_reads(
        record: tuple[str, int | uuid.UUID, bytes], role: str, other: bytes | None) -> None:
    kind, schema_id, body = record
    data, headers = _record(kind, schema_id, body, role, other)
    expected = _dual("AVRO", data, headers, role)
    assert expected == (schema_id, None, body)
    for frame in (CONFLUENT, CONFLUENT_HEADER):
        sided = frame.for_role(role)
        assert sided.unwrap(data, headers, where="here") == expected
        assert sided.schema_id(data, headers) == schema_id
        assert sided.common_id([data, data], [headers, headers]) == \
            (schema_id, len(data) - len(body))


def test_a_null_header_is_absent_and_the_first_of_two_is_read() -> None:
    """As confluent-kafka's dual deserializer: a null-valued header falls back to the bytes;
    of two headers of the side's name, the first is read."""
    one, two = uuid.UUID(int=1), uuid.UUID(int=2)
    frame = CONFLUENT.for_role("value")
    data = b"\x00\x00\x00\x00\x09body"
    nulled: list[tuple[str, bytes | None]] = [("__value_schema_id", None)]
    assert frame.unwrap(data, nulled, where="x") == _dual("AVRO", data, nulled, "value") \
        == (9, None, b"body")
    both: list[tuple[str, bytes | None]] = [("__value_schema_id", b"\x01" + one.bytes),
                                            ("__value_schema_id", b"\x01" + two.bytes)]
    assert frame.unwrap(b"body", both, where="x") == _dual("AVRO", b"body", both, "value") \
        == (one, None, b"body")


def test_a_header_in_prefix_form_is_read_too() -> None:
    """A header holding magic byte 0 and a 4-byte id (not what the serializer writes, but what
    `SchemaId.from_bytes` reads) is read as the id."""
    headers: list[tuple[str, bytes | None]] = [("__key_schema_id", b"\x00\x00\x00\x00\x2a")]
    assert CONFLUENT.for_role("key").unwrap(b"b", headers, where="x") == \
        _dual("AVRO", b"b", headers, "key") == (42, None, b"b")


@pytest.mark.parametrize("value, message", [
    (b"\x02" + bytes(16), "header '__key_schema_id': magic byte is 2, not 0"),
    (b"\x01" + bytes(3), "header '__key_schema_id': 4 bytes, shorter than the 17-byte header"),
    (b"", "header '__key_schema_id': 0 bytes, shorter than"),
])
def test_a_bad_header_is_a_frame_error_naming_it(value: bytes, message: str) -> None:
    with pytest.raises(FrameError) as err:
        CONFLUENT.for_role("key").unwrap(b"body", [("__key_schema_id", value)], where="codec X")
    assert err.value.message.startswith("codec X: not Confluent-framed: ")
    assert message in err.value.message and err.value.exit_code == 2


def test_the_header_framing_writes_a_guid_only() -> None:
    with pytest.raises(ValueError, match="needs the schema's GUID, not 7"):
        CONFLUENT_HEADER.for_role("key").wrapping(7)
    with pytest.raises(ValueError, match="integer schema id"):
        CONFLUENT.wrapping(uuid.UUID(int=7))


def test_the_catalog_names_the_header_framings() -> None:
    assert catalog.frame("confluent-header") is CONFLUENT_HEADER
    assert catalog.frame("confluent-protobuf-header") is CONFLUENT_PROTOBUF_HEADER
    assert CONFLUENT_HEADER.id_in_header and CONFLUENT_HEADER.needs_guid
    assert not CONFLUENT.id_in_header and CONFLUENT.header == 5 and CONFLUENT_HEADER.header == 0
    assert CONFLUENT.with_message_index() == CONFLUENT_PROTOBUF
    assert CONFLUENT_HEADER.for_role("key").wrapping(uuid.UUID(int=3)).headers[0][0] == \
        "__key_schema_id"
    sided = catalog.frame("apicurio-header-global-id").for_role("value")
    assert sided.wrapping(5).headers == (("apicurio.value.globalId", bytes(7) + b"\x05"),)
    with pytest.raises(ValueError, match="carries no Protobuf message index"):
        catalog.frame("apicurio").with_message_index()
