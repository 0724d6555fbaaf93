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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from keyguard.formats.avro_binary import INT32, INT64, ColumnWriters, Writer, avro_kind, null_split
from keyguard.formats.avro_schema import AvroSchema
from keyguard.formats.avro_vocab import TIMESTAMPS
from keyguard.formats.errors import EncodeError
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


def _column_pieces(
    t: DataType, schema: AvroSchema, arr: pa.Array, where: str, name: str
) -> list[Any]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(arr)
    inner, null_idx, value_idx = null_split(schema, name)
    kind, logical, props = avro_kind(inner)
    valid = np.ones(n, dtype=bool) if arr.null_count == 0 else \
        arr.is_valid().to_numpy(zero_copy_only=False)
    if null_idx is None and arr.null_count:
        raise EncodeError(f"{where}: row {_first(~valid)}: column '{name}' is null, but its "
                          "type is NOT NULL", hint="give every NOT NULL column a value")
    at = arr.type
    head: list[tuple[np.ndarray, np.ndarray | None]] = []
    if null_idx is not None:
        branch = np.where(valid, np.uint8(value_idx * 2), np.uint8(null_idx * 2))
        head.append((branch[:, None], None))

    def ints() -> np.ndarray:
        return arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)

    def varints(v: np.ndarray) -> list[Any]:
        mat, mask = _varint_piece(v)
        return [*head, (mat, mask & valid[:, None] if arr.null_count else mask)]

    def out_of_range(bad: np.ndarray, v: np.ndarray, what: str) -> EncodeError:
        i = _first(bad & valid)
        return EncodeError(f"{where}: row {i}: column '{name}': {v[i]} is out of range for "
                           f"{what}")

    if isinstance(t, BooleanType) and kind == "boolean" and pa.types.is_boolean(at):
        b = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return [*head, (b[:, None], valid[:, None] if arr.null_count else None)]
    if isinstance(t, IntegralType) and logical is None and pa.types.is_integer(at) and (
        kind == "long" or (kind == "int" and t.bits <= 32)
    ):
        if pa.types.is_uint64(at) and pc.max(arr).as_py() is not None and \
                pc.max(arr).as_py() > INT64[1]:
            raise _Fallback
        v = ints()
        lo, hi = t.min_value, t.max_value
        if kind == "int":
            lo, hi = max(lo, INT32[0]), min(hi, INT32[1])
        bad = (v < lo) | (v > hi)
        if (bad & valid).any():
            raise out_of_range(bad, v, f"{t.sql()} ({lo}..{hi})")
        return varints(v)
    if kind in ("float", "double") and isinstance(t, (FloatType, DoubleType)) and \
            pa.types.is_floating(at) and not pa.types.is_float16(at) and \
            (kind == "double" or isinstance(t, FloatType)):
        f = arr.fill_null(0.0).to_numpy(zero_copy_only=False)
        if kind == "float":
            with np.errstate(over="ignore"):
                f32 = f.astype("<f4")
            bad = np.isinf(f32) & ~np.isinf(f)
            if (bad & valid).any():
                i = _first(bad & valid)
                raise EncodeError(f"{where}: row {i}: column '{name}': float value {f[i]!r} "
                                  f"does not fit {t.sql()}")
            raw = f32.view(np.uint8).reshape(n, 4)
        else:
            raw = f.astype("<f8", copy=False).view(np.uint8).reshape(n, 8)
        mask = np.broadcast_to(valid[:, None], raw.shape) if arr.null_count else None
        return [*head, (raw, mask)]
    if (isinstance(t, StringType) and kind == "string" and
            (pa.types.is_string(at) or pa.types.is_large_string(at))) or \
            (isinstance(t, BytesType) and kind == "bytes" and logical is None and
             (pa.types.is_binary(at) or pa.types.is_large_binary(at))):
        lengths = pc.binary_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        payload = arr.cast(pa.large_binary() if pa.types.is_large_string(at) or
                           pa.types.is_large_binary(at) else pa.binary())
        if payload.type != pa.binary():
            payload = payload.cast(pa.binary())
        return [*varints(lengths.astype(np.int64)), *_payload(payload.fill_null(b""))]
    if isinstance(t, DateType) and kind == "int" and logical == "date" and \
            pa.types.is_date32(at):
        return varints(arr.cast(pa.int32()).fill_null(0).to_numpy(
            zero_copy_only=False).astype(np.int64))
    if isinstance(t, TimeType) and (kind, logical) in (("int", "time-millis"),
                                                       ("long", "time-micros")) and \
            pa.types.is_time(at) and at.unit != "ns":
        raw_t = arr.cast(pa.int64() if at.bit_width == 64 else pa.int32()).fill_null(0)
        us = raw_t.to_numpy(zero_copy_only=False).astype(np.int64) * \
            {"s": 1_000_000, "ms": 1000, "us": 1}[at.unit]
        trunc = 10 ** max(0, 6 - t.precision)
        us = us - us % trunc
        return varints(us // 1000 if logical == "time-millis" else us)
    if isinstance(t, (TimestampType, TimestampLtzType)) and kind == "long" and \
            pa.types.is_timestamp(at) and at.unit != "ns" and \
            (at.tz is not None) == isinstance(t, TimestampLtzType) and \
            str(logical).replace("local-", "") in TIMESTAMPS:
        us = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        if at.unit != "us":
            # Python datetimes span years 1..9999, so these products cannot overflow int64.
            us = us * {"s": 1_000_000, "ms": 1000}[at.unit]
        trunc = 10 ** max(0, 6 - t.precision)
        if trunc > 1:
            us = us - us % trunc
        unit = str(logical).rsplit("-", 1)[1]
        if unit == "millis":
            us = us // 1000
        elif unit == "nanos":
            if ((np.abs(us) > INT64[1] // 1000) & valid).any():
                raise _Fallback
            us = us * 1000
        return varints(us)
    if isinstance(t, DecimalType) and kind == "bytes" and logical == "decimal" and \
            pa.types.is_decimal128(at) and at.scale == props.get("scale", 0) and \
            at.precision <= 18:
        precision = props["precision"]
        words = np.frombuffer(arr.buffers()[1], dtype="<i8")[2 * arr.offset: 2 * (arr.offset + n)]
        v = np.where(valid, words[0::2], 0)
        bad = np.abs(v) >= 10**precision
        if (bad & valid).any():
            i = _first(bad & valid)
            raise EncodeError(
                f"{where}: row {i}: column '{name}': {arr[i].as_py()} has more than "
                f"{precision - at.scale} integer digits, too many for "
                f"DECIMAL({precision}, {at.scale})")
        x = np.where(v >= 0, v, ~v)
        nbytes = np.ones(n, dtype=np.int8)
        for k in range(1, 8):
            nbytes += x >= (1 << (8 * k - 1))
        be = v.astype(">i8").view(np.uint8).reshape(n, 8)
        mask = (np.arange(8)[None, :] >= 8 - nbytes[:, None]) & valid[:, None]
        length = (nbytes * 2).astype(np.uint8)[:, None]  # zig-zag varint of 1..8: one byte
        return [*head, (length, valid[:, None] if arr.null_count else None), (be, mask)]
    raise _Fallback


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
