"""Column-wise JSON encoding of Arrow batches: the json format's rows, built per column.

The bytes are `JsonCodec.encode`'s, row for row. Strings, integers, booleans, doubles,
timestamps and decimals are turned into JSON text with pyarrow.compute and numpy; nested values
and the rare values needing Java's rules go through the row writer's encoder, one value at a
time. One element-wise join then lays each row out, field names and all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from keyguard.formats import flink_casts, javatext
from keyguard.formats.errors import EncodeError
from keyguard.formats.json_text import json_string
from keyguard.formats.types import (
    BooleanType,
    DataType,
    DecimalType,
    DoubleType,
    IntegralType,
    RowType,
    StringType,
    TimestampLtzType,
    TimestampType,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from keyguard.formats.json_format import Encoder, JsonSettings

__all__ = ["encode_rows"]

#: The quotes still to put around each non-null value of a column's text.
Quotes = tuple[str, str]


def encode_rows(row_type: RowType, batch: pa.RecordBatch | pa.Table,
                prefix: bytes | Callable[[], bytes], settings: JsonSettings,
                per_value: Callable[[DataType], Encoder]) -> pa.Array:
    """Every row of `batch`, each after `prefix`, as one Arrow binary array; `per_value(t)`
    is the row writer's encoder of a value of type t.

    A callable prefix (a registry frame's header) is asked for only once every value has
    been checked, as `encode` checks the row before the frame.
    """
    import pyarrow as pa

    n = batch.num_rows
    if n == 0:
        return pa.array([], pa.binary())
    texts = []
    for f in row_type.fields:
        try:
            column = batch.column(f.name)
        except KeyError:
            column = pa.nulls(n, pa.string())
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        texts.append((f.name, *_column_json(f.name, f.type, column, settings, per_value)))
    head = prefix() if callable(prefix) else prefix
    if settings.ignore_nulls:
        return _join_skipping_nulls(n, head, texts)
    return _join(n, head, texts)


def _join(n: int, head: bytes, texts: list[tuple[str, Any, Quotes | None]]) -> Any:
    """One element-wise join: literal field names between the columns' texts; a column
    without nulls gets its quotes from the literals around it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts: list[Any] = []
    lit = head + b"{"
    for name, text, wrap in texts:
        if wrap is not None and text.null_count:
            text = pc.binary_join_element_wise(wrap[0], text, wrap[1], "")
            wrap = None
        lit += json_string(name).encode("utf-8") + b":" + (wrap[0].encode() if wrap else b"")
        if text.null_count:
            text = pc.fill_null(text, "null")
        parts += [_repeated(lit, n), text.cast(pa.binary())]
        lit = (wrap[1].encode() if wrap else b"") + b","
    parts.append(_repeated(lit[:-1] + b"}", n))
    return pc.binary_join_element_wise(*parts, b"")


def _column_json(name: str, t: DataType, column: Any, settings: JsonSettings,
                 per_value: Callable[[DataType], Encoder]) -> tuple[Any, Quotes | None]:
    """The JSON text of each value of one column (null where the value is null), and the
    quotes still to put around each non-null value (None: the text is complete)."""
    bulk = _bulk_json(t, column, settings, per_value)
    if bulk is not None:
        return bulk
    return _per_value_json(name, column, per_value(t)), None


def _bulk_json(t: DataType, column: Any, s: JsonSettings,
               per_value: Callable[[DataType], Encoder]) -> tuple[Any, Quotes | None] | None:
    """`_column_json` with pyarrow.compute and numpy, where the column's Arrow type is one
    the bulk path of t reads; else None."""
    import pyarrow as pa

    typ = column.type
    if isinstance(t, StringType) and (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
        return _arrow_strings(column), ('"', '"')
    if isinstance(t, BooleanType) and pa.types.is_boolean(typ):
        return column.cast(pa.string()), None
    if isinstance(t, IntegralType) and pa.types.is_integer(typ):
        return _arrow_integers(t, column)
    if _is_timestamp_column(t, typ):
        return _arrow_timestamps(column, t, s.iso), \
            ('"', 'Z"' if isinstance(t, TimestampLtzType) else '"')
    if isinstance(t, DecimalType) and pa.types.is_decimal(typ) and typ.scale == t.scale \
            and typ.precision <= t.precision:
        return _arrow_decimals(column, s.plain_decimals, per_value(t)), None
    if isinstance(t, DoubleType) and pa.types.is_float64(typ):
        return _arrow_doubles(column), None
    return None


def _is_timestamp_column(t: DataType, typ: Any) -> bool:
    """An Arrow timestamp column for a TIMESTAMP (zone-less) or TIMESTAMP_LTZ (any zone)."""
    import pyarrow as pa

    if not pa.types.is_timestamp(typ):
        return False
    return (isinstance(t, TimestampType) and typ.tz is None) or isinstance(t, TimestampLtzType)


def _arrow_integers(t: IntegralType, column: Any) -> tuple[Any, None] | None:
    """An integer column's text when all its values are in the type's range; else None (the
    per-value path then names the value out of range)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lo_hi = pc.min_max(column)
    lo, hi = lo_hi["min"].as_py(), lo_hi["max"].as_py()
    if lo is None or (t.min_value <= lo and hi <= t.max_value):
        return column.cast(pa.string()), None
    return None


def _per_value_json(name: str, column: Any, enc: Encoder) -> Any:
    """The column's text through the row writer's encoder, one value at a time."""
    import pyarrow as pa

    out: list[str | None] = []
    for i, v in enumerate(column.to_pylist()):
        try:
            out.append(None if v is None else enc(v, name))
        except EncodeError as exc:  # as the row-by-row path: say which row
            raise type(exc)(f"row {i}: {exc.message}", hint=exc.hint) from None
    return pa.array(out, pa.string())


def _repeated(value: bytes, n: int) -> Any:
    """`value` n times, as an Arrow binary array built from two numpy buffers (no Python loop;
    Arrow's join is faster with arrays than with scalars)."""
    import numpy as np
    import pyarrow as pa

    # The joined rows hold these bytes and more, within Arrow binary's 2 GiB as before.
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(value))
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                 pa.py_buffer(value * n)])


def _join_skipping_nulls(n: int, head: bytes, texts: list[tuple[str, Any, Any]]) -> Any:
    """Rows without their null fields (encode.ignore-null-fields): each field its own piece."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pieces = []
    for name, text, wrap in texts:
        key = "," + json_string(name) + ":"
        if wrap is not None:
            pieces.append(pc.binary_join_element_wise(key + wrap[0], text, wrap[1], ""))
        else:
            pieces.append(pc.binary_join_element_wise(key, text, ""))
    pieces = [pc.fill_null(p, "") for p in pieces]
    if not pieces:
        return _repeated(head + b"{}", n)
    joined = pc.binary_join_element_wise(*pieces, "") if len(pieces) > 1 else pieces[0]
    body = pc.utf8_slice_codeunits(joined, 1)
    return pc.binary_join_element_wise(head + b"{", body.cast(pa.binary()), b"}", b"")


def _offsets(arr: Any) -> tuple[Any, Any]:
    """(offsets as int64, the data buffer as uint8) of a string or binary array."""
    import numpy as np

    offs = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1,
                         offset=4 * arr.offset).astype(np.int64)
    buf = arr.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    return offs, data


def _trailing_zeros(values: Any, most: int) -> Any:
    """How many trailing decimal zeros each non-negative int64 value has (0 has `most`), up to
    `most`: one modulo over all values, then only over the shrinking rest that ends in 0."""
    import numpy as np

    zeros = np.where(values == 0, most, 0)
    rows = np.flatnonzero((values != 0) & (values % 10 == 0))
    rest = values[rows] // 10
    for _ in range(most):
        if not rows.size:
            break
        zeros[rows] += 1
        ends_in_0 = rest % 10 == 0
        rows, rest = rows[ends_in_0], rest[ends_in_0] // 10
    return np.minimum(zeros, most)


def _compact(mat: Any, mask: Any) -> Any:
    """The bytes of `mat` where `mask` is true, row-major: Arrow's filter on a bit-packed mask
    (faster than numpy's boolean indexing)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    flat = mask.reshape(-1)
    keep = pa.Array.from_buffers(pa.bool_(), len(flat), [
        None, pa.py_buffer(np.packbits(flat, bitorder="little"))])
    return pc.filter(pa.array(mat.reshape(-1)), keep).buffers()[1]

def _trim_ends(arr: Any, cut: Any) -> Any:
    """A string array with the last cut[i] bytes of each value left off (cut is 0 for nulls)."""
    import numpy as np
    import pyarrow as pa

    n = len(arr)
    if arr.offset:
        arr = pa.concat_arrays([arr])
    offs, data = _offsets(arr)
    lens = np.diff(offs)
    keep_len = lens - cut
    width = int(lens[0]) if n else 0
    if n and (lens == width).all():  # fixed width (a timestamp's text): one 2-D mask
        mat = data[offs[0]: offs[0] + n * width].reshape(n, width)
        out = _compact(mat, np.arange(width)[None, :] < keep_len[:, None])
    else:
        total = int(offs[-1] - offs[0])
        pos = np.arange(total, dtype=np.int64) - np.repeat(offs[:-1] - offs[0], lens)
        out = data[offs[0]: offs[-1]][pos < np.repeat(keep_len, lens)]
    new_offs = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(keep_len, out=new_offs[1:])
    data_out = out if isinstance(out, pa.Buffer) else pa.py_buffer(out)
    return pa.Array.from_buffers(pa.string(), n, [arr.buffers()[0], pa.py_buffer(new_offs),
                                                 data_out], arr.null_count)


def _doubles_text(values: list[float | None], jdk: int | None = None) -> list[str | None]:
    """Java text of an Arrow float64 column's values (already floats: no checks needed)."""
    java = javatext.DEFAULT_JDK if jdk is None else jdk

    def to_text(v: float) -> str:
        return javatext.double_to_string(v, jdk=java)
    return [None if v is None else to_text(v) if v - v == 0 else f'"{to_text(v)}"'
            for v in values]


_ARROW_DOUBLES_OK: list[bool] = []
_MANTISSA = (1 << 52) - 1


def _arrow_prints_like_repr() -> bool:
    """Whether this pyarrow prints doubles as `_arrow_doubles` expects: the shortest digits
    (as `repr`), plain from 1e-3 up to 1e7 (the window's edges probed), integers bare."""
    import pyarrow as pa

    if not _ARROW_DOUBLES_OK:
        probe = [4739.33, 0.001234, 1234567.891, 0.1, 2.5e-3, 9999999.999999998, 1.1, -123.456,
                 0.001, 0.0010000000000000002, 0.0019999999999999996, 9999999.5]
        wholes = [1.0, -0.0, 0.0, 1000000.0, 9999999.0, -42.0]
        arrow_text = pa.array(probe + wholes).cast(pa.string()).to_pylist()
        java = [javatext.double_to_string(x) for x in probe]
        java += [javatext.double_to_string(x).removesuffix(".0") for x in wholes]
        _ARROW_DOUBLES_OK.append(arrow_text == java)
    return _ARROW_DOUBLES_OK[0]


def _arrow_doubles(column: Any, jdk: int | None = None) -> Any:
    """Java text of a float64 column (`Double.toString` of JDK `jdk`), from Arrow's text.

    Arrow prints the shortest round-trip digits, as `repr`; from 1e-3 up to 1e7 that is also
    Java's text (JDK 19+ by definition; JDK 17's FloatingDecimal too, see below), with two
    layout fixes done here in bulk: an integral value gets `.0` (`1234` -> `1234.0`, `-0` ->
    `-0.0`). Per value through javatext go only: values outside that window (Java's exponent
    form), NaN and the infinities, one-digit values (JDK 19+ may then print two digits), and
    powers of two (FloatingDecimal's one asymmetric case).

    JDK 17: `javatext._legacy_fast` shows FloatingDecimal and `repr` agree but for values of
    1 digit, powers of two, subnormals, integers >= 2^53, and a k-digit neighbour exactly half
    an ulp away or x exactly midway between two: with x = m*2^q (2^52 <= m < 2^53) and the text
    D*10^-k (k >= 1 fraction digits, D < 10^17), the first needs D = (2m+-1)*5^k*2^(q+k-1), so
    x >= 2^52*5/10 > 1e7 at k = 1 and more digits than 17 beyond; the second needs
    2D+-1 = m*5^k, so x >= 2^52*5/20 > 1e14. Neither happens in the window.
    tests/formats/test_json_doubles.py checks this against the full port.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not _arrow_prints_like_repr():
        return pa.array(_doubles_text(column.to_pylist(), jdk), pa.string())
    text = column.cast(pa.string())
    x = column.fill_null(0.0).to_numpy(zero_copy_only=False)
    valid = np.ones(len(x), dtype=bool) if column.null_count == 0 else \
        column.is_valid().to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(x)
        window = (a >= 1e-3) & (a < 1e7)
        whole = valid & (a < 1e7) & (x == np.trunc(x))  # zeros included
        fractional = valid & window & ~whole
        power_of_two = (x.view(np.uint64) & np.uint64(_MANTISSA)) == 0
        one_digit = np.zeros(len(x), dtype=bool)
        for scale in (10.0, 100.0, 1000.0):  # 0.d, 0.0d, 0.00d: the only 1-digit fractions
            d = np.rint(a * scale)
            one_digit |= (d >= 1) & (d <= 9) & (d / scale == a)
    plain = fractional & ~power_of_two & ~one_digit
    slow = valid & ~plain & ~whole
    if whole.any():
        mask = pa.array(whole)
        text = pc.replace_with_mask(text, mask, pc.binary_join_element_wise(
            pc.filter(text, mask), ".0", ""))
    if slow.any():
        mask = pa.array(slow)
        values = _doubles_text(pc.filter(column, mask).to_pylist(), jdk)
        text = pc.replace_with_mask(text, mask, pa.array(values, pa.string()))
    return text


def _arrow_strings(column: Any) -> Any:
    """The escaped text of a string column, without its quotes (null where null).

    One numpy pass over the UTF-8 bytes finds the values that need escaping at all: `"` and
    `\\` are escaped in bulk, control characters and characters beyond U+FFFF (4-byte
    sequences) per value with json_string.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.cast(pa.string())
    n = len(column)
    offs, data = _offsets(column)
    body = data[offs[0]: offs[-1]]
    special = (body < 0x20) | (body >= 0xF0)
    quoting = (body == 0x22) | (body == 0x5C)
    text = column
    if quoting.any():
        text = pc.replace_substring(text, "\\", "\\\\")
        text = pc.replace_substring(text, '"', '\\"')
    if special.any():
        rows = np.searchsorted(offs, np.flatnonzero(special) + offs[0], side="right") - 1
        mask = np.zeros(n, dtype=bool)
        mask[rows] = True
        if column.null_count:
            mask &= column.is_valid().to_numpy(zero_copy_only=False)
        arrow_mask = pa.array(mask)
        slow = [json_string(v)[1:-1] for v in pc.filter(column, arrow_mask).to_pylist()]
        text = pc.replace_with_mask(text, arrow_mask, pa.array(slow, pa.string()))
    return text


def _arrow_timestamps(column: Any, t: DataType, iso: bool) -> Any:
    """The text of a timestamp column without its quotes (and without LTZ's `Z`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    precision = t.precision  # type: ignore[attr-defined]
    typ = column.type
    if typ.tz is not None:
        column = column.cast(pa.timestamp(typ.unit))  # the UTC wall clock
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[typ.unit]
    if column.offset:
        column = pa.concat_arrays([column])
    ticks = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if precision < digits:  # Flink's cast to the precision, in integer ticks (no ns overflow)
        ticks = flink_casts.truncate_ticks(ticks, digits, precision)
        column = pa.Array.from_buffers(pa.timestamp(typ.unit), len(column),
                                       [column.buffers()[0], pa.py_buffer(ticks)],
                                       column.null_count)
    text = column.cast(pa.string())  # `yyyy-MM-dd HH:mm:ss[.ffffff]`, faster than strftime
    if iso:
        text = pc.replace_substring(text, " ", "T", max_replacements=1)
    if digits:
        # Trailing fractional zeros trimmed, and the point with them when all are zeros.
        cut = _trailing_zeros(ticks % 10**digits, digits)
        cut += cut == digits  # no fraction left: the point goes too
        if text.null_count:
            cut = np.where(text.is_valid().to_numpy(zero_copy_only=False), cut, 0)
        text = _trim_ends(text, cut)
    return text


def _arrow_decimals(column: Any, plain: bool, enc: Encoder) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if not plain and pa.types.is_decimal128(column.type) and column.type.precision <= 18:
        text, slow_rows = _decimals_text(column, plain)
        slow = pa.array(slow_rows)
    else:
        raw = column.cast(pa.string())  # plain at the column's scale, but `1E-8` when tiny
        text = raw
        slow = pc.match_substring(raw, "E")
        if not plain:
            if column.type.scale > 0:
                text = pc.replace_substring_regex(text, "0+$", "")
                text = pc.replace_substring_regex(text, "\\.$", "")
            # Integers ending in 0 need an exponent, tiny values may: Java's rules for those.
            slow = pc.or_(slow, pc.or_(pc.match_substring_regex(text, "0$"),
                                       pc.match_substring_regex(text, "^-?0\\.000000")))
            slow = pc.and_(slow, pc.not_equal(text, "0"))
    if pc.any(slow).as_py():
        mask = pc.fill_null(slow, False)
        values = [enc(v, "") for v in pc.filter(column, mask).to_pylist()]
        text = pc.replace_with_mask(text, mask, pa.array(values, pa.string()))
    return text


def _decimals_text(column: Any, plain: bool) -> tuple[Any, Any]:
    """The text of a decimal128 column of precision <= 18 (unscaled values fit int64), written
    digit by digit into one byte matrix, and the rows left to Java's rules: with
    `stripTrailingZeros().toString()` an integer ending in 0 (`1E+3`) and an adjusted exponent
    below -6 (`1E-7`). Plain keeps the scale: `toPlainString()` never has an exponent."""
    import numpy as np
    import pyarrow as pa

    n = len(column)
    scale, precision = column.type.scale, column.type.precision
    words = np.frombuffer(column.buffers()[1], dtype="<i8")[2 * column.offset:
                                                            2 * (column.offset + n)]
    valid = np.ones(n, dtype=bool) if column.null_count == 0 else \
        column.is_valid().to_numpy(zero_copy_only=False)
    u = np.where(valid, words[0::2], 0)
    a = np.abs(u)
    whole, frac = a // 10**scale, a % 10**scale
    int_width = max(1, precision - scale)
    int_digits = np.ones(n, dtype=np.int64)
    for k in range(1, int_width):
        int_digits += whole >= 10**k
    keep_frac = np.full(n, scale, dtype=np.int64)
    slow = np.zeros(n, dtype=bool)
    if not plain:
        keep_frac -= _trailing_zeros(frac, scale)
        digits_of_u = np.where(whole > 0, int_digits + scale, 0)
        for k in range(scale):  # the digits of a fraction-only value: frac < 10^scale
            digits_of_u += (whole == 0) & (frac >= 10**k)
        adjusted = digits_of_u - 1 - scale
        slow = valid & (u != 0) & (((frac == 0) & (whole % 10 == 0)) | (adjusted < -6))
    width = 1 + int_width + (1 + scale if scale else 0)
    mat = np.empty((n, width), dtype=np.uint8)
    mask = np.empty((n, width), dtype=bool)
    mat[:, 0] = ord("-")
    mask[:, 0] = u < 0
    cols = np.arange(int_width)
    for j in range(int_width):
        mat[:, 1 + j] = 48 + (whole // 10 ** (int_width - 1 - j)) % 10
    mask[:, 1: 1 + int_width] = cols[None, :] >= int_width - int_digits[:, None]
    if scale:
        at = 1 + int_width
        mat[:, at] = ord(".")
        mask[:, at] = keep_frac > 0
        for k in range(scale):
            mat[:, at + 1 + k] = 48 + (frac // 10 ** (scale - 1 - k)) % 10
        mask[:, at + 1:] = np.arange(scale)[None, :] < keep_frac[:, None]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(mask.sum(axis=1, dtype=np.int32), out=offsets[1:])
    data = _compact(mat, mask)
    validity = None if column.null_count == 0 else pa.array(valid).buffers()[1]
    text = pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offsets), data],
                                 column.null_count)
    return text, slow
