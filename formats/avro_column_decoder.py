"""Column-wise decoding of Avro records into Arrow arrays (numpy), the reverse of
`keyguard.formats.avro_vector`.

Records of flat rows of integers, floats, booleans and strings (each maybe nullable) are
decoded field by field over all records at once with numpy, into Arrow arrays. Nothing is
guessed: every record must end exactly where its bytes end, every varint within 64 bits,
every union branch, boolean, integer range and string valid as `AvroWriter.decode` requires; if
any record fails one of these, the batch is decoded record by record instead, so its values and
its errors are `decode`'s own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keyguard.formats.avro_binary import avro_kind, null_split
from keyguard.formats.avro_schema import AvroSchema, expand_named, parse_avro
from keyguard.formats.codec import DecodedColumns
from keyguard.formats.errors import SchemaError
from keyguard.formats.types import (
    BigIntType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegralType,
    IntType,
    RowType,
    SmallIntType,
    StringType,
    TinyIntType,
)

if TYPE_CHECKING:
    import pyarrow as pa


#: The Avro primitives the vectorized decoder reads.
_COLUMN_KINDS = {"int", "long", "float", "double", "boolean", "string"}


def _column_shape(t: DataType, s: AvroSchema) -> tuple[str, int | None, int] | None:
    """(Avro kind, index of the null branch or None, index of the value branch) of a column
    the vectorized decoder reads, or None."""
    if isinstance(s, list):
        if len(s) != 2:
            return None
        try:
            inner, null_idx, value_idx = null_split(s, "")
        except SchemaError:
            return None
    else:
        inner, null_idx, value_idx = s, None, 0
    if isinstance(inner, list):
        return None
    kind, logical, _ = avro_kind(inner)
    if logical is not None or kind not in _COLUMN_KINDS:
        return None
    fits = {"int": (TinyIntType, SmallIntType, IntType), "long": (BigIntType,),
            "float": (FloatType,), "double": (DoubleType,), "boolean": (BooleanType,),
            "string": (StringType,)}[kind]
    if type(t) not in fits:
        return None
    return kind, null_idx, value_idx


_PLANS: dict[tuple[str, str, str], Any] = {}


def decoded_batch(row_type: RowType, schema: AvroSchema, writer: AvroSchema | None,
                  data: Sequence[bytes], skip: int = 0, *, arrow: bool = True,
                  ) -> DecodedColumns | None:
    """`decode_columns` with the column plan of these schemas (cached), as DecodedColumns
    (columns as Arrow arrays, or as Python lists when not `arrow`)."""
    key = (row_type.sql(), json.dumps(schema, sort_keys=True),
           json.dumps(writer, sort_keys=True))
    if key not in _PLANS:
        _PLANS[key] = column_plan(row_type, schema, writer)
    plan = _PLANS[key]
    if plan is None or not data:
        return None
    columns = decode_columns(plan, data, skip, arrow=arrow)
    return None if columns is None else DecodedColumns(dict(columns), [], len(data))


def column_plan(row_type: RowType, schema: AvroSchema, writer: AvroSchema | None = None,
                ) -> list[tuple[str, DataType, tuple[str, int | None, int]]] | None:
    """How to read each column of records written with `writer` (default: `schema`) for the
    vectorized decoder, or None when some column (or a schema resolution) needs `decode`."""
    expanded = expand_named(schema)
    if not isinstance(expanded, Mapping) or expanded.get("type") != "record":
        return None
    if writer is not None:
        w = expand_named(parse_avro(writer))
        if not isinstance(w, Mapping) or w.get("type") != "record":
            return None
        if [(f["name"], json.dumps(f["type"], sort_keys=True)) for f in w["fields"]] != \
                [(f["name"], json.dumps(f["type"], sort_keys=True))
                 for f in expanded["fields"]]:
            return None  # resolution between two schemas: `decode` does it
    fields = expanded["fields"]
    if [f["name"] for f in fields] != list(row_type.names):
        return None
    out = []
    for f, af in zip(row_type.fields, fields, strict=True):
        shape = _column_shape(f.type, af["type"])
        if shape is None:
            return None
        out.append((f.name, f.type, shape))
    return out


def decode_columns(plan: list[tuple[str, DataType, tuple[str, int | None, int]]],
                   bodies: Sequence[bytes], skip: int = 0, *, arrow: bool = True,
                   ) -> dict[str, pa.Array | list[Any]] | None:
    """The records in `bodies` (each after `skip` header bytes) as Arrow columns (Python
    lists when not `arrow`: pyarrow is not imported), or None when any record needs
    `decode`."""
    import numpy as np

    n = len(bodies)
    lengths = np.fromiter(map(len, bodies), dtype=np.int64, count=n)
    if n and lengths.min() < skip:
        return None
    ends = np.cumsum(lengths)
    pos = ends - lengths + skip
    total = int(ends[-1]) if n else 0
    buf = np.frombuffer(b"".join(bodies) + bytes(16), dtype=np.uint8)
    limit = len(buf) - 1
    out: dict[str, pa.Array | list[Any]] = {}
    column_of = _arrow_column if arrow else _list_column
    for name, t, (kind, null_idx, value_idx) in plan:
        if null_idx is None:
            present = None
            at = pos
        else:
            branch, pos = _varints(buf, pos, limit)
            if branch is None:
                return None
            branch = _unzigzag(branch)
            is_value = branch == value_idx
            if not (is_value | (branch == null_idx)).all():
                return None
            present = is_value
            at = pos[is_value]
        got = _read_kind(kind, t, buf, at, limit)
        if got is None:
            return None
        values, new_at = got
        if present is None:
            pos = new_at
        else:
            pos = pos.copy()
            pos[present] = new_at
        if (pos > ends).any():
            return None
        column = column_of(kind, values, present, n, buf)
        if column is None:
            return None
        out[name] = column
    if not (pos == ends).all() or total != int(lengths.sum()):
        return None
    return out


def _varints(buf: Any, pos: Any, limit: int) -> tuple[Any, Any]:
    """Raw (zigzagged) varints at `pos`, 64 bits at most (10 bytes, the last 0 or 1), and the
    positions after them; (None, pos) when one is longer.

    Byte by byte over the varints still going: most are one to three bytes long."""
    import numpy as np

    b = buf[np.minimum(pos, limit)]
    raw = (b & 0x7F).astype(np.uint64)
    size = np.ones(len(pos), dtype=np.int64)
    going = np.flatnonzero(b & 0x80)
    for j in range(1, 10):
        if not len(going):
            return raw, pos + size
        b = buf[np.minimum(pos[going] + j, limit)]
        if j == 9 and (b > 1).any():
            return None, pos
        raw[going] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * j)
        size[going] += 1
        going = going[(b & 0x80) != 0]
    if len(going):
        return None, pos
    return raw, pos + size


def _unzigzag(raw: Any) -> Any:
    import numpy as np

    return ((raw >> np.uint64(1)).astype(np.int64)) ^ -((raw & np.uint64(1)).astype(np.int64))


_INT_DTYPES = {TinyIntType: "int8", SmallIntType: "int16", IntType: "int32",
               BigIntType: "int64"}


def _read_kind(kind: str, t: DataType, buf: Any, at: Any, limit: int) -> tuple[Any, Any] | None:
    """(values, positions after them) of one column's present values."""
    import numpy as np

    if kind in ("int", "long"):
        raw, after = _varints(buf, at, limit)
        if raw is None:
            return None
        values = _unzigzag(raw)
        assert isinstance(t, IntegralType)
        if len(values) and (values.min() < t.min_value or values.max() > t.max_value):
            return None
        return values.astype(_INT_DTYPES[type(t)]), after
    if kind in ("float", "double"):
        width = 4 if kind == "float" else 8
        idx = np.minimum(at[:, None] + np.arange(width), limit)
        return buf[idx].reshape(-1).view("<f4" if width == 4 else "<f8"), at + width
    if kind == "boolean":
        b = buf[np.minimum(at, limit)]
        if (b > 1).any():
            return None
        return b.astype(bool), at + 1
    raw, after = _varints(buf, at, limit)  # string: a long length, then UTF-8
    if raw is None:
        return None
    sizes = _unzigzag(raw)
    if len(sizes) and sizes.min() < 0:
        return None
    return (after, sizes), after + sizes


def _primitive_array(values: Any, present: Any) -> pa.Array:
    """A numpy column as an Arrow array over its buffers (nulls where `present` is False).
    Not `pa.array`: that imports pandas to ask whether the input is a pandas object, some
    50 MB a reader of numbers never needs."""
    import numpy as np
    import pyarrow as pa

    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values))
    validity = None if present is None else pa.py_buffer(
        np.packbits(present, bitorder="little"))
    nulls = 0 if present is None else int(len(values) - np.count_nonzero(present))
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [validity, data], nulls)


def _arrow_column(kind: str, values: Any, present: Any, n: int, buf: Any) -> pa.Array | None:
    """An Arrow array of n rows: `values` at the present rows, nulls elsewhere."""
    import numpy as np
    import pyarrow as pa

    if kind != "string":
        full = values
        if present is not None:
            full = np.zeros(n, dtype=values.dtype)
            full[present] = values
        return _primitive_array(full, present)
    starts, sizes = values
    lens = np.zeros(n, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    if present is None:
        lens[:] = sizes
        first[:] = starts
    else:
        lens[present] = sizes
        first[present] = starts
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    size = int(offsets[-1])
    if size >= 2**31:
        return None
    # The bytes of every string back to back: position of each byte in the records' buffer.
    src = np.repeat(first - offsets[:-1], lens) + np.arange(size, dtype=np.int64)
    data = buf[src]
    validity = None if present is None else pa.py_buffer(
        np.packbits(present, bitorder="little"))
    nulls = 0 if present is None else int(n - present.sum())
    arr = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.astype(np.int32)),
                                      pa.py_buffer(data), validity, nulls)
    try:
        arr.validate(full=True)  # UTF-8, as decode's str requires
    except pa.ArrowInvalid:
        return None
    return arr


def _list_column(kind: str, values: Any, present: Any, n: int, buf: Any) -> list[Any] | None:
    """`_arrow_column(...).to_pylist()`, built without Arrow: None when a string is not
    valid UTF-8, as Arrow's validation refuses it."""
    from itertools import pairwise

    import numpy as np

    at = np.flatnonzero(present).tolist() if present is not None else None
    if kind != "string":
        got = values.tolist()
    else:
        starts, sizes = values
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        size = int(offsets[-1])
        # The bytes of every string back to back, as `_arrow_column` gathers them.
        data = buf[np.repeat(starts - offsets[:-1], sizes)
                   + np.arange(size, dtype=np.int64)].tobytes()
        bounds = offsets.tolist()
        try:
            if data.isascii():  # one decode, then slices: a character is a byte
                text = data.decode("ascii")
                got = [text[a:b] for a, b in pairwise(bounds)]
            else:
                got = [data[a:b].decode("utf-8") for a, b in pairwise(bounds)]
        except UnicodeDecodeError:
            return None
    if at is None:
        return got  # type: ignore[no-any-return]
    out: list[Any] = [None] * n
    for i, v in zip(at, got, strict=True):
        out[i] = v
    return out
