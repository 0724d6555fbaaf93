"""How a format frames its body in a Kafka record: bare, or Confluent's magic byte and schema id.

The frame is the format's, the id is not: a framed codec is given its schema id from outside
(resolved once, on the driver or by the CLI) and never asks a registry for it while encoding.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC_BYTE = 0
_CONFLUENT = struct.Struct(">bI")


@dataclass(frozen=True)
class Frame:
    """A record framing: `header` bytes before the body, carrying a schema id when framed."""

    name: str
    header: int = 0

    @property
    def carries_schema_id(self) -> bool:
        return self.header > 0

    def wrap(self, schema_id: int | None, body: bytes) -> bytes:
        if not self.header:
            return body
        if schema_id is None:
            raise ValueError(f"{self.name} framing needs a schema id")
        return _CONFLUENT.pack(MAGIC_BYTE, schema_id) + body

    def header_bytes(self, schema_id: int) -> bytes:
        return _CONFLUENT.pack(MAGIC_BYTE, schema_id) if self.header else b""

    def schema_id(self, data: bytes | None) -> int | None:
        """The schema id a framed record carries; None when unframed or not framed so."""
        if not self.header or data is None or len(data) < self.header or data[0] != MAGIC_BYTE:
            return None
        return int.from_bytes(data[1:self.header], "big")

    def body(self, data: bytes) -> bytes:
        return data[self.header:]


#: No framing: the record is the body (json, csv, raw, avro).
BARE = Frame("bare")
#: Confluent's wire format: magic byte 0, the schema id as 4 bytes big-endian, then the body.
CONFLUENT = Frame("confluent", header=5)
