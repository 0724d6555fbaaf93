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
from typing import TYPE_CHECKING, ClassVar, Final, TypeAlias

from keyguard.formats.catalog import frame as named_frame
from keyguard.formats.errors import DecodeError, InvalidOptionError
from keyguard.formats.immutable import Value

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


class Wrapping(Value):
    """What a frame adds to every body of one schema id: the bytes before it, the headers."""

    __slots__ = ("headers", "prefix")
    FIELDS = ("prefix", "headers")
    prefix: Final[bytes]
    headers: Final[tuple[tuple[str, bytes], ...]]

    def __init__(self, prefix: bytes, headers: tuple[tuple[str, bytes], ...] = ()) -> None:
        self.prefix = prefix
        self.headers = headers


_NO_WRAPPING = Wrapping(b"")

#: Where a record carries its schema id, as `Frame.locate` tells it: nowhere, in a record
#: header, in the bytes as an integer id (magic byte 0), in the bytes as a GUID (magic byte 1),
#: or the same id both in the header and in the bytes. Indices into `PLACEMENTS`.
NOWHERE, IN_HEADER, IN_BYTES_ID, IN_BYTES_GUID, IN_BOTH = range(5)
#: The placements' names, as reports show them.
PLACEMENTS = ("none", "header", "id", "guid", "both")


class Frame(Value):
    """A record framing. This one is bare: the record is the body, and carries no schema id.

    Frames are values (`keyguard.formats.immutable`): equal when of one class with equal fields,
    hashable, picklable (a Spark task gets its side's), and never changed (`replace` makes
    another).
    """

    __slots__ = ("name",)
    FIELDS: ClassVar[tuple[str, ...]] = ("name",)

    def __init__(self, name: str) -> None:
        self.name: Final = name

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

    @property
    def id_in_header(self) -> bool:
        """The writer puts the schema id in a record header, the bytes are the bare body."""
        return False

    @property
    def needs_guid(self) -> bool:
        """The writer writes the schema's GUID (not its integer registry id)."""
        return False

    def for_role(self, role: str) -> Frame:
        """The frame of a key or a value: a frame whose header is named by side (Confluent's
        `__key_schema_id`, Apicurio's `apicurio.key.globalId`) names its side's."""
        return self

    def with_message_index(self) -> Frame:
        """The same framing with Confluent's Protobuf message index after the id; ValueError
        for a framing that has none (Apicurio's)."""
        if self.indexed:
            return self
        raise ValueError(f"{self.name} framing carries no Protobuf message index")

    def wrapping(self, schema_id: SchemaId | None,
                 message_index: tuple[int, ...] = (0,)) -> Wrapping:
        """The prefix and headers of every record of `schema_id`: computed once per codec."""
        return _NO_WRAPPING

    def wrap(self, schema_id: SchemaId | None, body: bytes,
             message_index: tuple[int, ...] = (0,)) -> tuple[bytes, tuple[tuple[str, bytes], ...]]:
        """The record's bytes and the headers to add to it."""
        wrapping = self.wrapping(schema_id, message_index)
        return wrapping.prefix + body, wrapping.headers

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

    def locate(self, data: bytes | None, headers: Headers = None
               ) -> tuple[SchemaId | None, int]:
        """The schema id a record carries (as `schema_id`) and where it carries it: one of
        NOWHERE, IN_HEADER, IN_BYTES_ID, IN_BYTES_GUID, IN_BOTH (the same id in the side's
        header and in the bytes: a reader that takes the header first reads the id's bytes as
        the body). Never raises."""
        return None, NOWHERE

    def id_headers(self, headers: Headers) -> tuple[tuple[str, bytes | None], ...]:
        """The record's headers this frame reads a schema id from (its side's), in order:
        what tells a record written in a header framing from one written without."""
        return ()

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


class PrefixFrame(Frame):
    """The schema id in the record's first bytes: a magic byte, the id as `id_bytes` bytes
    big-endian, then (when `indexed`) the message index, then the body. `title` is how
    messages name the frame ("not Confluent-framed")."""

    __slots__ = ("id_bytes", "magic", "title", "with_index")
    FIELDS: ClassVar[tuple[str, ...]] = ("name", "title", "magic", "id_bytes", "with_index")


    def __init__(self, name: str, title: str = "Confluent", magic: int = MAGIC_BYTE,
                 id_bytes: int = 4, with_index: bool = False) -> None:
        super().__init__(name)
        self.title: Final = title
        self.magic: Final = magic
        self.id_bytes: Final = id_bytes
        self.with_index: Final = with_index

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

    def schema_id(self, data: bytes | None, headers: Headers = None) -> SchemaId | None:
        return self.registry_id(data)  # the id in these bytes is always an integer id

    def locate(self, data: bytes | None, headers: Headers = None
               ) -> tuple[SchemaId | None, int]:
        schema_id = self.registry_id(data)
        return schema_id, NOWHERE if schema_id is None else IN_BYTES_ID

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


def named_id(schema_id: SchemaId) -> str:
    """A schema id for a message: "id 7", or "GUID 0f1e...": what a record names."""
    return f"id {schema_id}" if isinstance(schema_id, int) else f"GUID {schema_id}"


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

    __slots__ = ("header_name", "payload", "title")
    FIELDS = ("name", "title", "header_name", "payload")


    def __init__(self, name: str, title: str = "Apicurio", header_name: str = "",
                 payload: PrefixFrame | None = None) -> None:
        super().__init__(name)
        self.title: Final = title
        self.header_name: Final = header_name
        self.payload: Final = payload

    @property
    def carries_schema_id(self) -> bool:
        return True

    @property
    def id_in_header(self) -> bool:
        return True

    def for_role(self, role: str) -> Frame:
        return _sided(self, role)

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

    def locate(self, data: bytes | None, headers: Headers = None
               ) -> tuple[SchemaId | None, int]:
        value = self._header(headers)
        in_bytes = None if self.payload is None else self.payload.registry_id(data)
        if value is None:
            return in_bytes, NOWHERE if in_bytes is None else IN_BYTES_ID
        try:
            schema_id = self._read(value)
        except ValueError:
            return None, NOWHERE
        return schema_id, IN_BOTH if in_bytes == schema_id else IN_HEADER

    def id_headers(self, headers: Headers) -> tuple[tuple[str, bytes | None], ...]:
        return tuple((n, v) for n, v in headers or () if n == self.header_name)

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


def _sided(frame: HeaderFrame | ConfluentFrame, role: str) -> Frame:
    """`frame` with its header named for `role`, when its name is a `{role}` template."""
    if "{role}" not in frame.header_name:
        return frame
    return frame.replace(header_name=frame.header_name.format(role=role))


#: Confluent's magic bytes: 0 before a 4-byte integer id, 1 before a 16-byte GUID.
_GUID_MAGIC = 1
_ID_SIZES = {MAGIC_BYTE: 4, _GUID_MAGIC: 16}


def _read_confluent_id(data: bytes) -> tuple[SchemaId, int]:
    """The id at the start of `data` (a record's bytes or a header's value) and where what
    follows starts: magic byte 0 and a 4-byte id, or magic byte 1 and a 16-byte GUID
    (confluent-kafka's `SchemaId.from_bytes`, Java's `SchemaId.fromBytes`); ValueError."""
    if not data:
        return _cut(data)
    size = _ID_SIZES.get(data[0])
    if size is None:
        raise ValueError(f"magic byte is {data[0]}, not {MAGIC_BYTE} (a schema id) or "
                         f"{_GUID_MAGIC} (a schema GUID)")
    if len(data) < 1 + size:
        return _cut(data)
    if size == 4:
        return int.from_bytes(data[1:5], "big"), 5
    from uuid import UUID  # lazy: CLI start-up (a GUID is only read from a record)

    return UUID(bytes=bytes(data[1:17])), 17


def _cut(data: bytes) -> tuple[SchemaId, int]:
    what = ("the 5-byte header (magic byte 0, a 4-byte schema id)" if data[:1] != b"\x01" else
            "the 17-byte header (magic byte 1, a 16-byte schema GUID)")
    raise ValueError(f"{len(data)} bytes, shorter than {what}")


def _guid(frame: str, schema_id: SchemaId | None) -> bytes:
    """The 16 bytes of `schema_id`, a schema GUID; ValueError otherwise."""
    from uuid import UUID  # lazy: CLI start-up (a GUID is only written by a header framing)

    if not isinstance(schema_id, UUID):
        raise ValueError(f"{frame} framing needs the schema's GUID, not {schema_id!r}")
    return schema_id.bytes


class ConfluentFrame(PrefixFrame):
    """Confluent's framings, as its clients write and read them.

    Written: the id in the bytes (`prefix_schema_id_serializer`, Java's
    `PrefixSchemaIdSerializer`: magic byte 0, the 4-byte id) or, `in_header`, the schema's GUID
    in the record header `__key_schema_id` / `__value_schema_id` (`header_schema_id_serializer`,
    Java's `HeaderSchemaIdSerializer`: magic byte 1 and the 16 GUID bytes, then Protobuf's
    message index), the bytes the bare body. Read either way, as `dual_schema_id_deserializer`
    (Java's `DualSchemaIdDeserializer`) reads: the side's header first, then the bytes, each
    with magic byte 0 (an id) or 1 (a GUID). confluent-kafka-python 2.16:
    schema_registry/__init__.py (the two serializers, the dual deserializer: the first header
    of the name wins, a header with a null value is absent), schema_registry/common/serde.py
    (`SchemaId`: `from_bytes`, `id_to_bytes`, `guid_to_bytes`).
    `header_name` is the header of the side's id; `{role}` is "key" or "value" (`for_role`).
    """

    __slots__ = ("header_name", "in_header")
    FIELDS = (*PrefixFrame.FIELDS, "header_name", "in_header")

    def __init__(self, name: str, title: str = "Confluent", magic: int = MAGIC_BYTE,
                 id_bytes: int = 4, with_index: bool = False,
                 header_name: str = "__{role}_schema_id", in_header: bool = False) -> None:
        super().__init__(name, title, magic, id_bytes, with_index)
        self.header_name: Final = header_name
        self.in_header: Final = in_header

    @property
    def id_in_header(self) -> bool:
        return self.in_header

    @property
    def needs_guid(self) -> bool:
        return self.in_header

    @property
    def header(self) -> int:
        return 0 if self.in_header else 1 + self.id_bytes

    def for_role(self, role: str) -> Frame:
        return _sided(self, role)

    def with_message_index(self) -> Frame:
        if self.with_index:
            return self
        return self.replace(name=self.name.replace("confluent", "confluent-protobuf", 1),
                            with_index=True)

    def wrapping(self, schema_id: SchemaId | None,
                 message_index: tuple[int, ...] = (0,)) -> Wrapping:
        if not self.in_header:
            return PrefixFrame.wrapping(self, schema_id, message_index)
        value = bytes([_GUID_MAGIC]) + _guid(self.name, schema_id)
        if self.with_index:
            value += message_index_bytes(message_index)
        return Wrapping(b"", ((self.header_name, value),))

    def _header_value(self, headers: Headers) -> bytes | None:
        """The side's header value: the first header of the name (confluent-kafka's
        `dual_schema_id_deserializer`); None when there is none or its value is null."""
        for name, value in headers or ():
            if name == self.header_name:
                return value
        return None

    def _read(self, data: bytes) -> tuple[SchemaId, tuple[int, ...] | None, int]:
        """Id, message index and where the rest starts, of bytes that begin with an id."""
        schema_id, pos = _read_confluent_id(data)
        if not self.with_index:
            return schema_id, None, pos
        try:
            index, pos = read_message_index(data, pos)
        except ValueError as exc:
            raise ValueError(f"schema id {schema_id}: {exc}") from None
        return schema_id, index, pos

    def unwrap(self, data: bytes, headers: Headers = None, *, where: Where,
               hint: str | None = None) -> Unwrapped:
        value = self._header_value(headers) if headers else None
        if value is None and not self.with_index and data[:1] == b"\x00" and len(data) >= 5:
            return int.from_bytes(data[1:5], "big"), None, data[5:]  # the common case, fast
        try:
            if value is not None:
                schema_id, index, _ = self._read(value)
                return schema_id, index, data
            schema_id, index, start = self._read(data)
        except ValueError as exc:
            inside = f"header {self.header_name!r}: " if value is not None else ""
            raise FrameError(f"{_named(where)}: not {self.title}-framed: {inside}{exc}",
                             hint=hint or self._hint(value is None)) from None
        return schema_id, index, data[start:]

    def _hint(self, read_bytes: bool) -> str:
        if not read_bytes or "{" in self.header_name:
            return _HINT
        return (f"{_HINT}; or it carries its schema id in the record header "
                f"{self.header_name!r} (a header framing) and was read without its headers")

    def schema_id(self, data: bytes | None, headers: Headers = None) -> SchemaId | None:
        value = self._header_value(headers) if headers else None
        try:
            return _read_confluent_id(value if value is not None else data or b"")[0]
        except ValueError:
            return None

    def registry_id(self, data: bytes | None, headers: Headers = None) -> int | None:
        schema_id = self.schema_id(data, headers)
        return schema_id if type(schema_id) is int else None

    def locate(self, data: bytes | None, headers: Headers = None
               ) -> tuple[SchemaId | None, int]:
        value = self._header_value(headers) if headers else None
        try:
            in_bytes: SchemaId | None = _read_confluent_id(data or b"")[0]
        except ValueError:
            in_bytes = None
        if value is None:
            if in_bytes is None:
                return None, NOWHERE
            return in_bytes, IN_BYTES_ID if type(in_bytes) is int else IN_BYTES_GUID
        try:
            schema_id = _read_confluent_id(value)[0]
        except ValueError:
            return None, NOWHERE
        return schema_id, IN_BOTH if in_bytes == schema_id else IN_HEADER

    def id_headers(self, headers: Headers) -> tuple[tuple[str, bytes | None], ...]:
        return tuple((n, v) for n, v in headers or () if n == self.header_name)

    def body(self, data: bytes) -> bytes:
        """The body after the frame in the bytes (ValueError when the bytes hold none)."""
        return data[self._read(data)[2]:]

    def message_index(self, data: bytes) -> tuple[int, ...]:
        if not self.with_index:
            raise ValueError(f"{self.name} framing carries no message index")
        index = self._read(data)[1]
        assert index is not None
        return index

    def common_id(self, data: Sequence[bytes], headers: Sequence[Headers] | None = None,
                  ) -> tuple[SchemaId, int] | None:
        if self.with_index or not data:
            return None
        if headers is not None and any(headers):
            if len(headers) != len(data):
                return None
            values = {self._header_value(h) for h in headers}
            if len(values) != 1:
                return None
            value = next(iter(values))
            if value is not None:
                found = self.schema_id(b"", ((self.header_name, value),))
                return None if found is None else (found, 0)
        size = _ID_SIZES.get(data[0][0]) if data[0] else None
        if size is None:
            return None
        heads = {d[:1 + size] for d in data}
        if len(heads) != 1:
            return None
        found = self.schema_id(next(iter(heads)))
        return None if found is None else (found, 1 + size)


def side_frame(default: Frame, chosen: str | None, role: str, *, where: str) -> Frame:
    """The frame of one side: its `framing` option's (else the format's `default`), with the
    message index when the format's default has one, its header named for `role`."""
    frame = named_frame(chosen) if chosen else default
    if default.indexed:
        try:
            frame = frame.with_message_index()
        except ValueError:
            raise InvalidOptionError(
                f"{where}: option 'framing' is {chosen!r}, which carries no Protobuf message "
                "index", hint="use framing 'confluent' or 'confluent-header'") from None
    return frame.for_role(role)


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
#: Confluent's wire format: magic byte 0, the schema id as 4 bytes big-endian, then the body;
#: read as Confluent's dual deserializer reads (the side's header first, magic byte 0 or 1).
CONFLUENT = ConfluentFrame("confluent")
#: Confluent's Protobuf wire format: the CONFLUENT header, then the message index, then the body.
CONFLUENT_PROTOBUF = CONFLUENT.with_message_index()
#: Confluent's header framing: the schema's GUID (magic byte 1) in `__key_schema_id` or
#: `__value_schema_id`, the record's bytes the bare body (`header_schema_id_serializer`).
CONFLUENT_HEADER = ConfluentFrame("confluent-header", in_header=True)
#: The same for Protobuf: the header holds the message index after the GUID.
CONFLUENT_PROTOBUF_HEADER = CONFLUENT_HEADER.with_message_index()

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
#: The two header framings as a format's `framing` option names them, for either side
#: (`Frame.for_role` names the side's header).
APICURIO_HEADER_GLOBAL_ID = HeaderFrame("apicurio-header-global-id",
                                        header_name="apicurio.{role}.globalId",
                                        payload=APICURIO_LEGACY)
APICURIO_HEADER_CONTENT_ID = HeaderFrame("apicurio-header-content-id",
                                         header_name="apicurio.{role}.contentId", payload=APICURIO)
