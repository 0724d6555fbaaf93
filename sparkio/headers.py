"""Kafka record headers in a DataFrame, as Spark's own Kafka source and sink carry them.

A column `headers` of type `array<struct<key: string, value: binary>>` holds a record's
headers in order, repeated names and null values kept. The writer sends each row's headers
with its record (a null or empty array: none); the reader with `scan.include-headers` adds the
column, null for a record without headers (Spark's `KafkaRecordToRowConverter`). Headers are
never part of the key: they travel with the record a row comes from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructField, StructType

#: The column's name, Spark's Kafka source's and sink's.
HEADERS_COLUMN = "headers"

#: One record's headers: (name, value or None), in order.
Headers = tuple[tuple[str, bytes | None], ...]


def arrow_type() -> pa.DataType:
    """The column's Arrow type."""
    import pyarrow as pa  # lazy: pyarrow inside a task only

    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def spark_type() -> Any:
    """`array<struct<key: string, value: binary>>`, Spark's Kafka headers type."""
    from pyspark.sql import types as T  # lazy: pyspark.sql.types on use

    return T.ArrayType(T.StructType([T.StructField("key", T.StringType(), True),
                                     T.StructField("value", T.BinaryType(), True)]), True)


def spark_field() -> StructField:
    from pyspark.sql import types as T  # lazy: pyspark.sql.types on use

    return T.StructField(HEADERS_COLUMN, spark_type(), True)


def is_headers_field(field: StructField) -> bool:
    """Whether a DataFrame column is the records' headers: named and typed as Spark's."""
    return field.name == HEADERS_COLUMN and _same_shape(field.dataType)


def _same_shape(t: Any) -> bool:
    from pyspark.sql import types as T  # lazy: pyspark.sql.types on use

    if not isinstance(t, T.ArrayType) or not isinstance(t.elementType, T.StructType):
        return False
    fields = [(f.name, type(f.dataType)) for f in t.elementType.fields]
    return fields == [("key", T.StringType), ("value", T.BinaryType)]


def headers_column(schema: StructType) -> str | None:
    """The headers column of a DataFrame written, if it has one."""
    return next((f.name for f in schema.fields if is_headers_field(f)), None)


def from_arrow(column: pa.Array) -> list[list[tuple[str, bytes | None]] | None]:
    """Each row's headers from the Arrow column (None: a null or empty array). A null header
    name is sent as an empty one, as Spark's sink does with a null key string."""
    out: list[list[tuple[str, bytes | None]] | None] = []
    for entries in column.to_pylist():
        kept = [(str(h.get("key") or ""), h.get("value")) for h in entries or () if h is not None]
        out.append(kept or None)
    return out


def to_rows(headers: Sequence[tuple[str, bytes | None]]) -> list[dict[str, Any]] | None:
    """A record's headers as the column's value: None for none (Spark's reader)."""
    if not headers:
        return None
    return [{"key": k, "value": v} for k, v in headers]
