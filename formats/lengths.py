"""Values as Flink holds them in CHAR(n), VARCHAR(n), BINARY(n) and VARBINARY(n) columns.

Flink never writes a string into a length column as it came: the value is cast to the
column's type first (an INSERT of a STRING or a literal into the table), and that cast cuts
a longer value to n characters or bytes and pads a shorter CHAR(n) value with spaces and a
shorter BINARY(n) value with zero bytes (`CharVarCharTrimPadCastRule`,
`BinaryToBinaryCastRule`). Checked with Flink 2.3: CHAR(2) 'D' is written `"D "`,
BINARY(16) X'01' as 01 and fifteen zero bytes, VARCHAR(3) 'abcdef' as `"abc"`; lengths
count characters (code points), not UTF-16 units. `table.exec.sink.type-length-enforcer`
(IGNORE by default, or TRIM_PAD) changes none of it.

Every format then writes the value as it writes STRING or BYTES, so the fitting happens once,
here, before a row or an Arrow batch reaches a codec (`UpsertPlan.encode`, the Spark writer's
`ChangeEncoder`). Reading keeps what the bytes hold, trailing spaces included, as Flink's
readers do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from keyguard.formats.types import (
    ArrayType,
    BytesType,
    DataType,
    MapType,
    RowType,
    StringType,
)

if TYPE_CHECKING:
    import pyarrow as pa


def has_lengths(t: DataType) -> bool:
    """Whether `t` holds a length column anywhere (nested ones too)."""
    if isinstance(t, (StringType, BytesType)):
        return t.length is not None
    if isinstance(t, RowType):
        return any(has_lengths(f.type) for f in t.fields)
    if isinstance(t, ArrayType):
        return has_lengths(t.element)
    if isinstance(t, MapType):
        return has_lengths(t.key) or has_lengths(t.value)
    return False


def fit(t: DataType, v: Any) -> Any:
    """`v` cast to `t` as Flink casts it: cut to the length, CHAR and BINARY padded."""
    if v is None:
        return None
    if isinstance(t, (StringType, BytesType)):
        n = t.length
        if n is None:
            return v
        v = v[:n]
        if t.fixed and len(v) < n:
            v = v.ljust(n) if isinstance(t, StringType) else bytes(v).ljust(n, b"\0")
        return v
    if isinstance(t, RowType):
        return fit_row(t, v)
    if isinstance(t, ArrayType):
        return [fit(t.element, e) for e in v]
    if isinstance(t, MapType):
        return {fit(t.key, k): fit(t.value, e) for k, e in v.items()}
    return v


def fit_row(row_type: RowType, row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row with its length columns fitted (`row` itself when it has none)."""
    if not has_lengths(row_type):
        return row
    out = dict(row)
    for f in row_type.fields:
        if f.name in out and has_lengths(f.type):
            out[f.name] = fit(f.type, out[f.name])
    return out


def fit_batch(row_type: RowType, batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its length columns fitted; columns already fitting are kept as they are."""
    import pyarrow as pa

    if not has_lengths(row_type):
        return batch
    columns = list(batch.columns)
    changed = False
    for i, name in enumerate(batch.schema.names):
        if name not in row_type.names:
            continue
        t = row_type.field(name).type
        if has_lengths(t) and not _fits(t, columns[i]):
            columns[i] = pa.array([fit(t, v) for v in columns[i].to_pylist()],
                                  type=columns[i].type)
            changed = True
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema) if changed else batch


def _fits(t: DataType, column: pa.Array) -> bool:
    """A top-level CHAR/VARCHAR/BINARY/VARBINARY column whose values need no cast, found
    without a Python loop; nested length types are always fitted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(t, (StringType, BytesType)) or t.length is None:
        return False
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        lengths = pc.utf8_length(column)
    elif pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        lengths = pc.binary_length(column)
    else:
        return False
    if lengths.null_count == len(lengths):
        return True
    low, high = pc.min_max(lengths).values()
    return bool(high.as_py() <= t.length and (not t.fixed or low.as_py() == t.length))
