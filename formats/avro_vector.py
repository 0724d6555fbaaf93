"""Column-wise Avro encoding of Arrow batches with numpy: where the avro formats' speed comes from.

Each column becomes segments: fixed-width uint8 matrices (one row per record) with a mask of
the bytes in use; short strings and bytes become such a matrix too (their Arrow data gathered,
padded to the longest value), long ones stay Arrow arrays. The header, the columns and the
strings of a record are so written into one matrix, compacted into one buffer with its offsets
in a single numpy pass; only a string longer than `_DENSE_WIDTH` bytes splits the record in
parts that `binary_join_element_wise` concatenates in C++. Columns numpy cannot write (nested
types, rare logical types) fall back to the row writer, so the bytes always equal
`AvroWriter.encode` row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keyguard.formats.avro_binary import INT32, INT64, ColumnWriters, Writer, avro_kind, null_split
from keyguard.formats.avro_schema import AvroSchema
from keyguard.formats.avro_vocab import TIMESTAMPS
from keyguard.formats.errors import EncodeError
from keyguard.formats.flink_casts import truncate_ticks
from keyguard.formats.types import (
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


def _first(bad: np.ndarray) -> int:
    import numpy as np

    return int(np.flatnonzero(bad)[0])


def _varint_piece(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints of int64 `v`: an (n, k) byte matrix and the mask of bytes in use."""
    import numpy as np

    zz = ((v << 1) ^ (v >> 63)).view(np.uint64)
    length = np.ones(len(v), dtype=np.int8)
    k = 1
    while k < 10:
        more = zz >= np.uint64(1 << (7 * k))
        if not more.any():
            break
        length += more
        k += 1
    mat = np.empty((len(v), k), dtype=np.uint8)
    for j in range(k):
        byte = ((zz >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8)
        if j < k - 1:
            byte |= np.where(length > j + 1, np.uint8(0x80), np.uint8(0))
        mat[:, j] = byte
    return mat, np.arange(k)[None, :] < length[:, None]


def _pieces_array(n: int, pieces: list[tuple[np.ndarray, np.ndarray | None]]) -> pa.Array:
    """The records of one run of matrix segments: (bytes, mask of the bytes in use or None
    when all are) side by side in one matrix, compacted row by row into one buffer."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    width = sum(p[0].shape[1] for p in pieces)
    mat = np.empty((n, width), dtype=np.uint8)
    mask = np.ones((n, width), dtype=bool)
    at = 0
    for piece, used in pieces:
        k = piece.shape[1]
        mat[:, at: at + k] = piece
        if used is not None:
            mask[:, at: at + k] = used
        at += k
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(mask.sum(axis=1, dtype=np.int32), out=offsets[1:])
    # Arrow's filter compacts the row-major bytes faster than numpy's boolean indexing.
    flat_mask = mask.reshape(-1)
    keep = pa.Array.from_buffers(pa.bool_(), len(flat_mask), [
        None, pa.py_buffer(np.packbits(flat_mask, bitorder="little"))])
    data = pc.filter(pa.array(mat.reshape(-1)), keep)
    return pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(offsets), data.buffers()[1]]
    )


class _Fallback(Exception):
    """This column is written value by value with its Python writer."""


@dataclass
class _Column:
    """One Arrow column on its way to Avro: its row type, its Avro type, its nulls, and the
    union branch index that starts each record's bytes when the column is nullable."""

    t: DataType
    arr: pa.Array
    kind: str
    logical: str | None
    props: Mapping[str, Any]
    valid: np.ndarray
    head: list[tuple[np.ndarray, np.ndarray | None]]
    where: str
    name: str

    @property
    def n(self) -> int:
        return len(self.arr)

    @property
    def has_nulls(self) -> bool:
        return bool(self.arr.null_count)

    def ints(self) -> np.ndarray:
        import numpy as np

        return self.arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)

    def varints(self, v: np.ndarray) -> list[Any]:
        mat, mask = _varint_piece(v)
        return [*self.head, (mat, mask & self.valid[:, None] if self.has_nulls else mask)]

    def null_mask(self) -> np.ndarray | None:
        """The mask of a one-byte-per-record piece: its null records write nothing."""
        return self.valid[:, None] if self.has_nulls else None

    def first_bad(self, bad: np.ndarray) -> int | None:
        """The first non-null record that `bad` marks, or None."""
        bad = bad & self.valid
        return _first(bad) if bad.any() else None

    def out_of_range(self, i: int, v: np.ndarray, what: str) -> EncodeError:
        return EncodeError(f"{self.where}: row {i}: column '{self.name}': {v[i]} is out of "
                           f"range for {what}")


def _column(t: DataType, schema: AvroSchema, arr: pa.Array, where: str, name: str) -> _Column:
    import numpy as np

    inner, null_idx, value_idx = null_split(schema, name)
    kind, logical, props = avro_kind(inner)
    valid = np.ones(len(arr), dtype=bool) if arr.null_count == 0 else \
        arr.is_valid().to_numpy(zero_copy_only=False)
    if null_idx is None and arr.null_count:
        raise EncodeError(f"{where}: row {_first(~valid)}: column '{name}' is null, but its "
                          "type is NOT NULL", hint="give every NOT NULL column a value")
    head: list[tuple[np.ndarray, np.ndarray | None]] = []
    if null_idx is not None:
        branch = np.where(valid, np.uint8(value_idx * 2), np.uint8(null_idx * 2))
        head.append((branch[:, None], None))
    return _Column(t, arr, kind, logical, props, valid, head, where, name)


def _column_pieces(
    t: DataType, schema: AvroSchema, arr: pa.Array, where: str, name: str
) -> list[Any]:
    """A column's segments, by the first writer that takes its row, Avro and Arrow types;
    `_Fallback` when none does."""
    c = _column(t, schema, arr, where, name)
    for write in _COLUMN_WRITERS:
        pieces = write(c)
        if pieces is not None:
            return pieces
    raise _Fallback


# Each writer below returns None when the column is not its kind.

def _boolean(c: _Column) -> list[Any] | None:
    import numpy as np
    import pyarrow as pa

    if not (isinstance(c.t, BooleanType) and c.kind == "boolean"
            and pa.types.is_boolean(c.arr.type)):
        return None
    b = c.arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
    return [*c.head, (b[:, None], c.null_mask())]


def _integral(c: _Column) -> list[Any] | None:
    import pyarrow as pa
    import pyarrow.compute as pc

    t, at = c.t, c.arr.type
    if not (isinstance(t, IntegralType) and c.logical is None and pa.types.is_integer(at)
            and (c.kind == "long" or (c.kind == "int" and t.bits <= 32))):
        return None
    if pa.types.is_uint64(at) and pc.max(c.arr).as_py() is not None and \
            pc.max(c.arr).as_py() > INT64[1]:
        raise _Fallback
    v = c.ints()
    lo, hi = t.min_value, t.max_value
    if c.kind == "int":
        lo, hi = max(lo, INT32[0]), min(hi, INT32[1])
    i = c.first_bad((v < lo) | (v > hi))
    if i is not None:
        raise c.out_of_range(i, v, f"{t.sql()} ({lo}..{hi})")
    return c.varints(v)


def _floating(c: _Column) -> list[Any] | None:
    import numpy as np
    import pyarrow as pa

    t, at = c.t, c.arr.type
    if not (c.kind in ("float", "double") and isinstance(t, (FloatType, DoubleType))
            and pa.types.is_floating(at) and not pa.types.is_float16(at)
            and (c.kind == "double" or isinstance(t, FloatType))):
        return None
    f = c.arr.fill_null(0.0).to_numpy(zero_copy_only=False)
    if c.kind == "float":
        with np.errstate(over="ignore"):
            f32 = f.astype("<f4")
        i = c.first_bad(np.isinf(f32) & ~np.isinf(f))
        if i is not None:
            raise EncodeError(f"{c.where}: row {i}: column '{c.name}': float value {f[i]!r} "
                              f"does not fit {t.sql()}")
        raw = f32.view(np.uint8).reshape(c.n, 4)
    else:
        raw = f.astype("<f8", copy=False).view(np.uint8).reshape(c.n, 8)
    mask = np.broadcast_to(c.valid[:, None], raw.shape) if c.has_nulls else None
    return [*c.head, (raw, mask)]


def _string_or_bytes(c: _Column) -> list[Any] | None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    at = c.arr.type
    string = isinstance(c.t, StringType) and c.kind == "string" and \
        (pa.types.is_string(at) or pa.types.is_large_string(at))
    binary = isinstance(c.t, BytesType) and c.kind == "bytes" and c.logical is None and \
        (pa.types.is_binary(at) or pa.types.is_large_binary(at))
    if not (string or binary):
        return None
    lengths = pc.binary_length(c.arr).fill_null(0).to_numpy(zero_copy_only=False)
    payload = c.arr.cast(pa.large_binary() if pa.types.is_large_string(at) or
                         pa.types.is_large_binary(at) else pa.binary())
    if payload.type != pa.binary():
        payload = payload.cast(pa.binary())
    return [*c.varints(lengths.astype(np.int64)), *_payload(payload.fill_null(b""))]


def _date(c: _Column) -> list[Any] | None:
    import numpy as np
    import pyarrow as pa

    if not (isinstance(c.t, DateType) and c.kind == "int" and c.logical == "date"
            and pa.types.is_date32(c.arr.type)):
        return None
    return c.varints(c.arr.cast(pa.int32()).fill_null(0).to_numpy(
        zero_copy_only=False).astype(np.int64))


def _time(c: _Column) -> list[Any] | None:
    import numpy as np
    import pyarrow as pa

    t, at = c.t, c.arr.type
    if not (isinstance(t, TimeType)
            and (c.kind, c.logical) in (("int", "time-millis"), ("long", "time-micros"))
            and pa.types.is_time(at) and at.unit != "ns"):
        return None
    raw_t = c.arr.cast(pa.int64() if at.bit_width == 64 else pa.int32()).fill_null(0)
    us = raw_t.to_numpy(zero_copy_only=False).astype(np.int64) * \
        {"s": 1_000_000, "ms": 1000, "us": 1}[at.unit]
    trunc = 10 ** max(0, 6 - t.precision)
    us = us - us % trunc
    return c.varints(us // 1000 if c.logical == "time-millis" else us)


def _timestamp(c: _Column) -> list[Any] | None:
    import numpy as np
    import pyarrow as pa

    t, at = c.t, c.arr.type
    if not (isinstance(t, (TimestampType, TimestampLtzType)) and c.kind == "long"
            and pa.types.is_timestamp(at) and at.unit != "ns"
            and (at.tz is not None) == isinstance(t, TimestampLtzType)
            and str(c.logical).replace("local-", "") in TIMESTAMPS):
        return None
    us = c.arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if at.unit != "us":
        # Python datetimes span years 1..9999, so these products cannot overflow int64.
        us = us * {"s": 1_000_000, "ms": 1000}[at.unit]
    us = truncate_ticks(us, 6, t.precision)  # Flink's cast to the declared precision
    unit = str(c.logical).rsplit("-", 1)[1]
    if unit == "millis":
        us = us // 1000
    elif unit == "nanos":
        if ((np.abs(us) > INT64[1] // 1000) & c.valid).any():
            raise _Fallback
        us = us * 1000
    return c.varints(us)


def _decimal(c: _Column) -> list[Any] | None:
    import numpy as np
    import pyarrow as pa

    at, n = c.arr.type, c.n
    if not (isinstance(c.t, DecimalType) and c.kind == "bytes" and c.logical == "decimal"
            and pa.types.is_decimal128(at) and at.scale == c.props.get("scale", 0)
            and at.precision <= 18):
        return None
    precision = c.props["precision"]
    arr = c.arr
    words = np.frombuffer(arr.buffers()[1], dtype="<i8")[2 * arr.offset: 2 * (arr.offset + n)]
    v = np.where(c.valid, words[0::2], 0)
    i = c.first_bad(np.abs(v) >= 10**precision)
    if i is not None:
        raise EncodeError(
            f"{c.where}: row {i}: column '{c.name}': {arr[i].as_py()} has more than "
            f"{precision - at.scale} integer digits, too many for "
            f"DECIMAL({precision}, {at.scale})")
    x = np.where(v >= 0, v, ~v)
    nbytes = np.ones(n, dtype=np.int8)
    for k in range(1, 8):
        nbytes += x >= (1 << (8 * k - 1))
    be = v.astype(">i8").view(np.uint8).reshape(n, 8)
    mask = (np.arange(8)[None, :] >= 8 - nbytes[:, None]) & c.valid[:, None]
    length = (nbytes * 2).astype(np.uint8)[:, None]  # zig-zag varint of 1..8: one byte
    return [*c.head, (length, c.null_mask()), (be, mask)]


_COLUMN_WRITERS: tuple[Callable[[_Column], list[Any] | None], ...] = (
    _boolean, _integral, _floating, _string_or_bytes, _date, _time, _timestamp, _decimal)


def encode_arrow(
    w: ColumnWriters, batch: pa.RecordBatch | pa.Table, prefix: bytes | Callable[[], bytes]
) -> pa.Array:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    segments: list[Any] = []
    names = batch.schema.names
    for f, schema, write in w.columns:
        if f.name not in names:
            raise EncodeError(f"{w.where}: the batch has no column '{f.name}'",
                              hint="the batch columns are: " + ", ".join(names))
        arr = batch.column(f.name)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        try:
            segments.extend(_column_pieces(f.type, schema, arr, w.where, f.name))
        except _Fallback:
            segments.append(_column_fallback(arr, write, w.where))
    head = (prefix() if callable(prefix) else prefix) + w.row_prefix
    if head:
        row = np.frombuffer(head, dtype=np.uint8)[None, :]
        segments.insert(0, (np.broadcast_to(row, (n, len(head))), None))
    parts: list[Any] = []
    group: list[tuple[np.ndarray, np.ndarray | None]] = []
    for segment in segments:  # neighbouring matrices: one matrix, one compaction
        if isinstance(segment, tuple):
            group.append(segment)
            continue
        if group:
            parts.append(_pieces_array(n, group))
            group = []
        parts.append(segment)
    if group:
        parts.append(_pieces_array(n, group))
    if not parts:
        return pa.array([b""] * n, pa.binary())
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, b"")


#: The longest string or bytes value written through a padded matrix; a batch holding a
#: longer one keeps that column as an Arrow array (its rows are then joined in parts).
_DENSE_WIDTH = 64


def _payload(arr: pa.Array) -> list[Any]:
    """The bytes of a binary column (no nulls) as a segment: a padded matrix when short."""
    import numpy as np

    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=n + 1, offset=4 * arr.offset)
    lens = np.diff(offs)
    width = int(lens.max()) if n else 0
    if width == 0:
        return []
    if width > _DENSE_WIDTH:
        return [arr]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)
    mask = np.arange(width)[None, :] < lens[:, None]
    mat = np.zeros((n, width), dtype=np.uint8)
    mat[mask] = data[offs[0]: offs[-1]]  # row-major order of the mask is the data's order
    return [(mat, mask)]


def _column_fallback(arr: pa.Array, write: Writer, where: str) -> pa.Array:
    import pyarrow as pa

    out = []
    for i, v in enumerate(arr.to_pylist(maps_as_pydicts="strict")):
        buf = bytearray()
        try:
            write(buf, v)
        except EncodeError as exc:
            raise type(exc)(f"{where}: row {i}: {exc.message}", hint=exc.hint) from None
        out.append(bytes(buf))
    return pa.array(out, pa.binary())
