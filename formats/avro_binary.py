"""What the row writer (`keyguard.formats.avro_format`) and the column writer
(`keyguard.formats.avro_vector`) share about Avro's binary encoding: value ranges, how a schema node
reads, and the shape of a compiled writer. Both import it; neither imports the other's internals.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from keyguard.formats.errors import SchemaError

if TYPE_CHECKING:
    from keyguard.formats.avro_schema import AvroSchema
    from keyguard.formats.types import Field

#: The range of an Avro `int` and of an Avro `long`.
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)

#: A compiled writer of one value: appends its binary encoding to the buffer.
Writer = Callable[[bytearray, Any], None]


class ColumnWriters(Protocol):
    """A row type compiled against its record schema, column by column (`AvroWriter`)."""

    #: Where errors say they happened ("avro value format of topic 'orders'").
    where: str
    #: (field, its Avro schema, its compiled writer), in the record's field order.
    columns: list[tuple[Field, AvroSchema, Writer]]
    #: The bytes before every record: the union branch of a nullable row, else none.
    row_prefix: bytes


def null_split(s: AvroSchema, path: str) -> tuple[AvroSchema, int | None, int]:
    """(non-null branch, index of the null branch or None, index of the non-null branch)."""
    if not isinstance(s, list):
        return s, None, 0
    nulls = [i for i, b in enumerate(s) if b == "null" or (isinstance(b, Mapping)
                                                            and b.get("type") == "null")]
    others = [i for i in range(len(s)) if i not in nulls]
    if len(others) != 1 or len(nulls) > 1:
        raise SchemaError(
            f"column '{path}': Avro union {json.dumps(s)} is not a nullable type",
            hint="unions must be [\"null\", T]; Flink supports no other unions",
        )
    return s[others[0]], (nulls[0] if nulls else None), others[0]


def avro_kind(s: AvroSchema) -> tuple[str, str | None, Mapping[str, Any]]:
    """(type name, logical type or None, the node's properties) of a non-union schema node."""
    if isinstance(s, str):
        return s, None, {}
    typ = s["type"]
    if isinstance(typ, (dict, list)):
        return avro_kind(typ)
    return typ, s.get("logicalType"), s
