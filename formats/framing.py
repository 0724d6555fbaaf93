"""How a format frames its body in a Kafka record: bare, or Confluent's magic byte and schema id.

The frame is the format's, the id is not: a framed codec is given its schema id from outside
(resolved once, on the driver or by the CLI) and never asks a registry for it while encoding.

Confluent's Protobuf serializer adds the message index after the id (CONFLUENT_PROTOBUF): which
message of the schema's file the body is, as the path of positions (`[0]` the file's first
message, `[1, 0]` the first nested message of the second), written as a zigzag varint count
and zigzag varint positions, with `[0]` shortened to the single byte 0 (confluent-kafka's
`ProtobufSerializer._encode_varints`, Java's `MessageIndexes.toByteArray`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC_BYTE = 0
_CONFLUENT = struct.Struct(">bI")


@dataclass(frozen=True, slots=True)
class Frame:
    """A record framing: `header` bytes before the body, carrying a schema id when framed."""

    name: str
    header: int = 0
    #: The header goes on with a message index (Confluent's Protobuf framing).
    indexed: bool = False

    @property
    def carries_schema_id(self) -> bool:
        return self.header > 0

    def wrap(self, schema_id: int | None, body: bytes,
             message_index: tuple[int, ...] = (0,)) -> bytes:
        if not self.header:
            return body
        if schema_id is None:
            raise ValueError(f"{self.name} framing needs a schema id")
        return self.header_bytes(schema_id, message_index) + body

    def header_bytes(self, schema_id: int, message_index: tuple[int, ...] = (0,)) -> bytes:
        if not self.header:
            return b""
        head = _CONFLUENT.pack(MAGIC_BYTE, schema_id)
        return head + message_index_bytes(message_index) if self.indexed else head

    def schema_id(self, data: bytes | None) -> int | None:
        """The schema id a framed record carries; None when unframed or not framed so."""
        if not self.header or data is None or len(data) < self.header or data[0] != MAGIC_BYTE:
            return None
        return int.from_bytes(data[1:self.header], "big")

    def body(self, data: bytes) -> bytes:
        """The body after the header (and the message index: ValueError when it is cut)."""
        if self.indexed:
            return data[read_message_index(data, self.header)[1]:]
        return data[self.header:]

    def message_index(self, data: bytes) -> tuple[int, ...]:
        """The message index a CONFLUENT_PROTOBUF record carries (ValueError when malformed)."""
        if not self.indexed:
            raise ValueError(f"{self.name} framing carries no message index")
        return read_message_index(data, self.header)[0]


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


#: No framing: the record is the body (json, csv, raw, avro).
BARE = Frame("bare")
#: Confluent's wire format: magic byte 0, the schema id as 4 bytes big-endian, then the body.
CONFLUENT = Frame("confluent", header=5)
#: Confluent's Protobuf wire format: the CONFLUENT header, then the message index, then the body.
CONFLUENT_PROTOBUF = Frame("confluent-protobuf", header=5, indexed=True)
