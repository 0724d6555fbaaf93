"""How a format frames its body in a Kafka record: where the schema id lives, and what goes with it.

A `Frame` is a value a format is given (`FormatFactory.frame`, the codec's `frame`): it wraps a
body with a schema id into the record's bytes and the headers to add, and unwraps a record's
bytes and headers into the schema id, the message index and the body, or raises `FrameError`,
the one decode error of a record outside its frame. Nothing else in keyguard parses a frame.

The frame is the format's, the id is not: a framed codec is given its schema id from outside
(resolved once, on the driver or by the CLI) and never asks a registry for it while encoding.
A schema id is an `int` (Confluent's and Apicurio's ids) or a `uuid.UUID` (a schema GUID);
`Frame.unwrap` takes the record's headers, so a frame may read its id from the bytes, from a
record header, or from either.

The frames of today put the id in the bytes (`PrefixFrame`): Confluent's wire format, a magic
byte 0 and the id as 4 bytes big-endian before the body (confluent-kafka's
`SchemaId.id_to_bytes`, Java's `AbstractKafkaSchemaSerDe`). Confluent's Protobuf serializer adds
the message index after the id (CONFLUENT_PROTOBUF): which message of the schema's file the body
is, as the path of positions (`[0]` the file's first message, `[1, 0]` the first nested message
of the second), written as a zigzag varint count and zigzag varint positions, with `[0]`
shortened to the single byte 0 (confluent-kafka's `SchemaId._encode_varints`, Java's
`MessageIndexes.toByteArray`).

Apicurio Registry's serdes frame a record one of two ways (`apicurio.registry.headers.enabled`).
In the bytes: the magic byte 0 and the id big-endian, 4 bytes (`Default4ByteIdHandler`, Apicurio
3.x's default, the content id; 2.x's `Legacy4ByteIdHandler`) or 8 bytes (2.x's default
`DefaultIdHandler`, the global id; 3.x's `Legacy8ByteIdHandler`): APICURIO, APICURIO_LEGACY. In
a record header (`HeaderFrame`): the id as an 8-byte big-endian long under `apicurio.key.globalId`,
`apicurio.value.contentId`, ... (`DefaultHeadersHandler`, `KafkaSerdeHeaders`), the record's
bytes the bare body; their deserializers read that header first and the bytes' frame when the
header is absent. Which id the bytes hold (global or content id, `apicurio.registry.use-id`) the
bytes do not say.

The hot paths never unwrap record by record: a writer asks once for the `Wrapping` of its id
(the bytes before every body, the headers of every record), and a batch reader asks once for
the id all of a batch's records carry (`Frame.common_id`) and slices the bodies at its offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from keyguard.formats.errors import DecodeError

if TYPE_CHECKING:
    from uuid import UUID

MAGIC_BYTE = 0
_CONFLUENT = struct.Struct(">bI")

#: A registry's schema id: an int (Confluent, Apicurio) or a schema GUID (`uuid.UUID`; named
#: for type checkers only, so that start-up does not import uuid).
SchemaId: TypeAlias = "int | UUID"
#: A Kafka record's headers as confluent-kafka gives them: (name, value) pairs, or None.
Headers = Sequence[tuple[str, bytes | None]] | None

#: Who reads the record, for an error: its text, or a function giving it (a codec's
#: `describe`, so that no record that unwraps pays for the text).
Where = str | Callable[[], str]

_HINT = "the record was not written by a schema-registry serializer in this framing"


def _named(where: Where) -> str:
    return where if isinstance(where, str) else where()


class FrameError(DecodeError):
    """A record that is not in its format's frame: too short, another magic byte, a cut
    message index. Says where (the codec), what the frame expected and what was found."""


#: A record taken out of its frame: (the schema id it carries, None in a frame that carries
#: none; the message index of Confluent's Protobuf framing, else None; the body). A plain tuple:
#: a NamedTuple would cost every record unwrapped one by one 0.3 µs.
Unwrapped: TypeAlias = "tuple[SchemaId | None, tuple[int, ...] | None, bytes]"


class Wrapping(NamedTuple):
    """What a frame adds to every body of one schema id: the bytes before it, the headers."""

    prefix: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


_NO_WRAPPING = Wrapping(b"")


@dataclass(frozen=True, slots=True)
class Frame:
    """A record framing. This one is bare: the record is the body, and carries no schema id."""

    name: str

    @property
    def carries_schema_id(self) -> bool:
        return False

    @property
    def indexed(self) -> bool:
        """The frame carries a message index (Confluent's Protobuf framing)."""
        return False

    @property
    def header(self) -> int:
        """The bytes before every body (0 when the id is not in the bytes)."""
        return 0

    def wrapping(self, schema_id: SchemaId | None,
                 message_index: tuple[int, ...] = (0,)) -> Wrapping:
        """The prefix and headers of every record of `schema_id`: computed once per codec."""
        return _NO_WRAPPING

    def wrap(self, schema_id: SchemaId | None, body: bytes,
             message_index: tuple[int, ...] = (0,)) -> tuple[bytes, tuple[tuple[str, bytes], ...]]:
        """The record's bytes and the headers to add to it."""
        prefix, headers = self.wrapping(schema_id, message_index)
        return prefix + body, headers

    def header_bytes(self, schema_id: SchemaId,
                     message_index: tuple[int, ...] = (0,)) -> bytes:
        """The bytes before every body of `schema_id`."""
        return self.wrapping(schema_id, message_index).prefix

    def unwrap(self, data: bytes, headers: Headers = None, *, where: Where,
               hint: str | None = None) -> Unwrapped:
        """The schema id, message index and body of a record; FrameError, naming `where`
        (the codec, or a function that names it: asked only for an error) and the frame,
        when the record is not in this frame."""
        return None, None, data

    def schema_id(self, data: bytes | None, headers: Headers = None) -> SchemaId | None:
        """The schema id a record carries; None when it carries none in this frame."""
        return None

    def registry_id(self, data: bytes | None, headers: Headers = None) -> int | None:
        """The integer registry id a record carries; None when it carries none (or a GUID):
        what is looked up in a registry that numbers its schemas."""
        schema_id = self.schema_id(data, headers)
        return schema_id if type(schema_id) is int else None

    def body(self, data: bytes) -> bytes:
        """The body after the frame (ValueError when a message index is cut)."""
        return data

    def message_index(self, data: bytes) -> tuple[int, ...]:
        """The message index a record carries (ValueError when malformed or not indexed)."""
        raise ValueError(f"{self.name} framing carries no message index")

    def common_id(self, data: Sequence[bytes], headers: Sequence[Headers] | None = None,
                  ) -> tuple[SchemaId, int] | None:
        """The schema id every record of a batch carries and the offset of each body; None
        when they carry several, none, or a message index (then unwrap record by record)."""
        return None


@dataclass(frozen=True, slots=True)
class PrefixFrame(Frame):
    """The schema id in the record's first bytes: a magic byte, the id as `id_bytes` bytes
    big-endian, then (when `indexed`) the message index, then the body."""

    #: How messages name the frame ("not Confluent-framed").
    title: str = "Confluent"
    magic: int = MAGIC_BYTE
    id_bytes: int = 4
    with_index: bool = False

    @property
    def carries_schema_id(self) -> bool:
        return True

    @property
    def indexed(self) -> bool:
        return self.with_index

    @property
    def header(self) -> int:
        return 1 + self.id_bytes

    def wrapping(self, schema_id: SchemaId | None,
                 message_index: tuple[int, ...] = (0,)) -> Wrapping:
        registry_id = _integer_id(self.name, schema_id, 8 * self.id_bytes)
        if self.id_bytes == 4:
            head = _CONFLUENT.pack(self.magic, registry_id)
        else:
            head = bytes([self.magic]) + registry_id.to_bytes(self.id_bytes, "big")
        return Wrapping(head + message_index_bytes(message_index) if self.with_index else head)

    def unwrap(self, data: bytes, headers: Headers = None, *, where: Where,
               hint: str | None = None) -> Unwrapped:
        n = 1 + self.id_bytes
        if len(data) < n or data[0] != self.magic:
            raise FrameError(f"{_named(where)}: {self._not_framed(data)}", hint=hint or _HINT)
        schema_id = int.from_bytes(data[1:n], "big")
        if not self.with_index:
            return schema_id, None, data[n:]
        try:
            index, start = read_message_index(data, n)
        except ValueError as exc:
            raise FrameError(f"{_named(where)}: not {self.title}-framed: schema id {schema_id}: "
                             f"{exc}", hint=hint or _HINT) from None
        return schema_id, index, data[start:]

    def _not_framed(self, data: bytes) -> str:
        n = 1 + self.id_bytes
        article = "an" if self.id_bytes == 8 else "a"
        what = (f"the {n}-byte header (magic byte {self.magic}, {article} {self.id_bytes}-byte "
                f"schema id)")
        if len(data) < n:
            return f"not {self.title}-framed: {len(data)} bytes, shorter than {what}"
        return f"not {self.title}-framed: magic byte is {data[0]}, not {self.magic}"

    def registry_id(self, data: bytes | None, headers: Headers = None) -> int | None:
        n = 1 + self.id_bytes
        if data is None or len(data) < n or data[0] != self.magic:
            return None
        return int.from_bytes(data[1:n], "big")

    schema_id = registry_id  # the id in the bytes is always a registry's integer id

    def body(self, data: bytes) -> bytes:
        if self.with_index:
            return data[read_message_index(data, self.header)[1]:]
        return data[self.header:]

    def message_index(self, data: bytes) -> tuple[int, ...]:
        if not self.with_index:
            raise ValueError(f"{self.name} framing carries no message index")
        return read_message_index(data, self.header)[0]

    def common_id(self, data: Sequence[bytes], headers: Sequence[Headers] | None = None,
                  ) -> tuple[SchemaId, int] | None:
        if self.with_index:
            return None
        n = 1 + self.id_bytes
        heads = {d[:n] for d in data}
        if len(heads) != 1:
            return None
        schema_id = self.schema_id(next(iter(heads)))
        return None if schema_id is None else (schema_id, n)


def _integer_id(frame: str, schema_id: SchemaId | None, bits: int) -> int:
    """`schema_id`, an integer id that fits `bits` unsigned bits; ValueError otherwise."""
    if not isinstance(schema_id, int) or isinstance(schema_id, bool):
        raise ValueError(f"{frame} framing needs an integer schema id, not {schema_id!r}")
    if not 0 <= schema_id < 1 << bits:
        raise ValueError(f"{frame} framing holds a schema id of 0 to {(1 << bits) - 1}, "
                         f"not {schema_id}")
    return schema_id


#: Apicurio's header id: a Java long, written by `ByteBuffer.putLong` (big-endian, signed).
_LONG = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class HeaderFrame(Frame):
    """The schema id in a record header, `header_name`, as an 8-byte big-endian long; the
    record's bytes are the bare body. A record without that header is read in the `payload`
    frame (when given), as Apicurio's deserializers do.

    Apicurio Registry 3.x: serdes/kafka/serde-kafka-common/.../serde/kafka/headers/
    DefaultHeadersHandler.java (`writeHeaders`: `ByteBuffer.allocate(8).putLong(id)` under the
    global id's or the content id's header name; `readHeaders`: `headers.lastHeader(name)`),
    KafkaSerdeHeaders.java (the names), kafka/KafkaSerializer.java (with a headers handler the
    bytes are the body alone) and kafka/KafkaDeserializer.java (the header first, else the bytes
    when they start with the magic byte); 2.x: serdes/serde-common/.../serde/headers/
    DefaultHeadersHandler.java, SerdeHeaders.java, AbstractKafkaSerializer.java, the same bytes.
    """

    title: str = "Apicurio"
    header_name: str = ""
    payload: PrefixFrame | None = None

    @property
    def carries_schema_id(self) -> bool:
        return True

    def wrapping(self, schema_id: SchemaId | None,
                 message_index: tuple[int, ...] = (0,)) -> Wrapping:
        registry_id = _integer_id(self.name, schema_id, 63)  # a Java long's non-negative ids
        return Wrapping(b"", ((self.header_name, _LONG.pack(registry_id)),))

    def _header(self, headers: Headers) -> bytes | None:
        """The value of the record's last `header_name` header (Kafka's `lastHeader`), b"" for
        a null value; None when the record has none."""
        found = None
        for name, value in headers or ():
            if name == self.header_name:
                found = value or b""
        return found

    def _read(self, value: bytes) -> int:
        """The id in a header value; ValueError saying why it is none."""
        if len(value) != _LONG.size:
            raise ValueError(f"header {self.header_name!r} holds {len(value)} bytes, not the "
                             f"{_LONG.size}-byte id")
        schema_id: int = _LONG.unpack(value)[0]
        if schema_id < 0:
            raise ValueError(f"header {self.header_name!r} holds a negative id {schema_id}")
        return schema_id

    def unwrap(self, data: bytes, headers: Headers = None, *, where: Where,
               hint: str | None = None) -> Unwrapped:
        value = self._header(headers)
        if value is None and self.payload is not None and data[:1] == bytes([self.payload.magic]):
            return self.payload.unwrap(data, headers, where=where, hint=hint)
        if value is None:
            also = (f", nor starts with magic byte {self.payload.magic}"
                    if self.payload is not None else "")
            raise FrameError(f"{_named(where)}: not {self.title}-framed: no header "
                             f"{self.header_name!r}{also}", hint=hint or _HINT)
        try:
            return self._read(value), None, data
        except ValueError as exc:
            raise FrameError(f"{_named(where)}: not {self.title}-framed: {exc}",
                             hint=hint or _HINT) from None

    def schema_id(self, data: bytes | None, headers: Headers = None) -> SchemaId | None:
        value = self._header(headers)
        if value is None:
            return None if self.payload is None else self.payload.schema_id(data)
        try:
            return self._read(value)
        except ValueError:
            return None

    def body(self, data: bytes) -> bytes:
        """The record's bytes, the body of a record that has the header: its headers alone say
        whether it does (an Avro body may start with byte 0), so `unwrap` reads the rest."""
        return data

    def common_id(self, data: Sequence[bytes], headers: Sequence[Headers] | None = None,
                  ) -> tuple[SchemaId, int] | None:
        values = {None} if headers is None else {self._header(h) for h in headers}
        if (headers is not None and len(headers) != len(data)) or len(values) != 1:
            return None
        value = next(iter(values))
        if value is None:
            return None if self.payload is None else self.payload.common_id(data)
        try:
            return self._read(value), 0
        except ValueError:
            return None


def _zigzag(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def message_index_bytes(message_index: tuple[int, ...]) -> bytes:
    """The message index as Confluent writes it: `[0]` -> 0x00, else count and positions."""
    if not message_index:
        raise ValueError("a message index has at least one position")
    if tuple(message_index) == (0,):
        return b"\x00"
    return _zigzag(len(message_index)) + b"".join(_zigzag(i) for i in message_index)


def _read_zigzag(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("the message index is cut off or too long")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), pos


def read_message_index(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    """The message index at `pos` and where the body starts; a count of 0 means `[0]`."""
    count, pos = _read_zigzag(data, pos)
    if count == 0:
        return (0,), pos
    if count < 0 or count > len(data) - pos:
        raise ValueError(f"the message index claims {count} positions")
    out = []
    for _ in range(count):
        i, pos = _read_zigzag(data, pos)
        if i < 0:
            raise ValueError(f"the message index has a negative position {i}")
        out.append(i)
    return tuple(out), pos


#: No framing: the record is the body (json, csv, raw, avro, protobuf).
BARE = Frame("bare")
#: Confluent's wire format: magic byte 0, the schema id as 4 bytes big-endian, then the body.
CONFLUENT = PrefixFrame("confluent")
#: Confluent's Protobuf wire format: the CONFLUENT header, then the message index, then the body.
CONFLUENT_PROTOBUF = PrefixFrame("confluent-protobuf", with_index=True)

# Apicurio Registry's framings. Its prefix is Confluent's layout with its own ids (the
# magic byte: BaseSerde.MAGIC_BYTE, 3.x; AbstractKafkaSerDe.MAGIC_BYTE, 2.x; both 0).
#: Apicurio 3.x's default: magic byte 0, the content id as 4 bytes big-endian, the body
#: (serdes/generic/serde-common/.../serde/Default4ByteIdHandler.java; SerdeConfig's
#: ID_HANDLER_DEFAULT and USE_ID_DEFAULT = contentId). 2.x writes it under
#: `apicurio.registry.as-confluent` (Legacy4ByteIdHandler, the global id).
APICURIO = PrefixFrame("apicurio", title="Apicurio")
#: Apicurio 2.x's default in the bytes: magic byte 0, the global id as 8 bytes big-endian, the
#: body (serdes/serde-common/.../serde/DefaultIdHandler.java, `putLong`; 3.x:
#: serdes/generic/serde-common/.../serde/Legacy8ByteIdHandler.java).
APICURIO_LEGACY = PrefixFrame("apicurio-legacy", title="Apicurio", id_bytes=8)
#: Apicurio's header ids (`apicurio.registry.headers.enabled`, 2.x's default): the global id
#: (2.x's default `use-id`) or the content id (3.x's) as an 8-byte long in the key's or the
#: value's header; a record without it is read as the deserializer's id handler reads it
#: (2.x's default DefaultIdHandler, 8 bytes; 3.x's Default4ByteIdHandler, 4 bytes).
APICURIO_KEY_GLOBAL_ID = HeaderFrame("apicurio-key-global-id", header_name="apicurio.key.globalId",
                                     payload=APICURIO_LEGACY)
APICURIO_VALUE_GLOBAL_ID = HeaderFrame("apicurio-value-global-id",
                                       header_name="apicurio.value.globalId",
                                       payload=APICURIO_LEGACY)
APICURIO_KEY_CONTENT_ID = HeaderFrame("apicurio-key-content-id",
                                      header_name="apicurio.key.contentId", payload=APICURIO)
APICURIO_VALUE_CONTENT_ID = HeaderFrame("apicurio-value-content-id",
                                        header_name="apicurio.value.contentId", payload=APICURIO)
