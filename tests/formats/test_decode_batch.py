"""`Codec.decode_batch` is `decode` of every record: the same values, the same skips and the
same first error (its record's index, its type and message), for every format, on valid
encodings and on mutated ones. The column-wise Avro decoder (flat rows of numbers, booleans
and strings) is the one that could part from `decode`; the others fall back record by record.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import values

from keyguard.formats.codec import BatchDecodeError, Codec, CodecContext, create_codec
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import bind_schema_id
from keyguard.formats.sqltypes import parse_columns
from keyguard.formats.types import RowType

_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Every column kind the column-wise Avro decoder reads, nullable and not.
_FLAT = ("s STRING, ns STRING NOT NULL, b BOOLEAN, nb BOOLEAN NOT NULL, t TINYINT, "
         "sm SMALLINT NOT NULL, i INT, ni INT NOT NULL, bi BIGINT, nbi BIGINT NOT NULL, "
         "f FLOAT, d DOUBLE NOT NULL")
#: Columns it leaves to `decode` (the whole batch then goes record by record).
_OTHER = ("s STRING, m DECIMAL(10, 2), dt DATE, ts TIMESTAMP(3), bs BYTES, a ARRAY<INT>, "
          "r ROW<x INT, y STRING>")
_scopes = itertools.count()


def _avro_confluent(row: RowType) -> Codec:
    registry = MockRegistry(f"decode-batch-{next(_scopes)}")
    codec = create_codec("avro-confluent", row, {},
                         CodecContext(role="value", topic="batch", registry=registry))  # type: ignore[arg-type]
    return bind_schema_id(codec)  # type: ignore[no-any-return]


def _json_registry(row: RowType, options: dict[str, str] | None = None) -> Codec:
    registry = MockRegistry(f"decode-batch-{next(_scopes)}")
    codec = create_codec("json-registry", row, options or {},
                         CodecContext(role="value", topic="batch", registry=registry))  # type: ignore[arg-type]
    return bind_schema_id(codec)  # type: ignore[no-any-return]


CODECS: dict[str, tuple[str, Callable[[RowType], Codec]]] = {
    "avro-flat": (_FLAT, lambda r: create_codec("avro", r)),
    "avro-other": (_OTHER, lambda r: create_codec("avro", r)),
    "avro-json-encoding": (_FLAT, lambda r: create_codec("avro", r, {"encoding": "json"})),
    "avro-key": ("k STRING NOT NULL, n INT NOT NULL", lambda r: create_codec(
        "avro", r, context=CodecContext(role="key"))),
    "avro-confluent-flat": (_FLAT, _avro_confluent),
    "avro-confluent-other": (_OTHER, _avro_confluent),
    "json": (_FLAT, lambda r: create_codec("json", r)),
    "json-registry": (_FLAT, _json_registry),
    "json-registry-ignore-errors": (_FLAT, lambda r: _json_registry(
        r, {"ignore-parse-errors": "true"})),
    "json-other": (_OTHER, lambda r: create_codec("json", r)),
    "json-ignore-errors": (_FLAT, lambda r: create_codec(
        "json", r, {"ignore-parse-errors": "true"})),
    "csv": (_FLAT, lambda r: create_codec("csv", r, {"null-literal": "null"})),
    "csv-ignore-errors": (_FLAT, lambda r: create_codec("csv", r, {"ignore-parse-errors":
                                                                     "true"})),
    "raw-string": ("c STRING NOT NULL", lambda r: create_codec("raw", r)),
    "raw-bigint": ("c BIGINT NOT NULL", lambda r: create_codec("raw", r)),
}

_built: dict[str, tuple[RowType, Codec]] = {}


def _codec(name: str) -> tuple[RowType, Codec]:
    if name not in _built:
        columns, build = CODECS[name]
        row = parse_columns(columns)
        _built[name] = (row, build(row))
    return _built[name]


def _same(a: Any) -> Any:
    """Values compared as equal when they are (NaN is NaN, a float's sign of zero counts)."""
    if isinstance(a, float):
        return ("nan",) if math.isnan(a) else (a, math.copysign(1.0, a))
    if isinstance(a, dict):
        return {k: _same(v) for k, v in a.items()}
    if isinstance(a, list):
        return [_same(v) for v in a]
    return a


def _each(codec: Codec, data: Sequence[bytes]) -> Any:
    out = []
    for i, d in enumerate(data):
        try:
            out.append(codec.decode(d))
        except Exception as exc:
            return ("error", i, type(exc).__name__, str(exc))
    return _same(out)


def _batch(codec: Codec, data: Sequence[bytes], arrow: bool = True) -> Any:
    try:
        decoded = codec.decode_batch(data, arrow=arrow)
    except BatchDecodeError as exc:
        return ("error", exc.index, type(exc.error).__name__, str(exc.error))
    assert decoded.length == len(data)
    return _same(decoded.rows())


def _mutated(data: list[bytes], edits: list[tuple[int, str, int]]) -> list[bytes]:
    out = list(data)
    for at, how, where in edits:
        if not out:
            break
        i = at % len(out)
        d = out[i]
        if how == "truncate":
            d = d[: where % (len(d) + 1)]
        elif how == "extend":
            d = d + bytes([where % 256])
        elif d:
            j = where % len(d)
            d = d[:j] + bytes([d[j] ^ (1 << (where % 8))]) + d[j + 1:]
        out[i] = d
    return out


_EDITS = st.lists(st.tuples(st.integers(0, 20), st.sampled_from(["truncate", "extend", "flip"]),
                            st.integers(0, 10_000)), max_size=2)


@pytest.mark.parametrize("arrow", [True, False], ids=["arrow", "lists"])
@pytest.mark.parametrize("name", list(CODECS))
@_SETTINGS
@given(data=st.data())
def test_decode_batch_is_decode_of_each_record(name: str, arrow: bool,
                                               data: st.DataObject) -> None:
    row, codec = _codec(name)
    rows = data.draw(st.lists(values(row), max_size=12))
    encoded = _mutated([codec.encode(r) for r in rows], data.draw(_EDITS))
    assert _batch(codec, encoded, arrow) == _each(codec, encoded)


def test_the_flat_avro_batch_is_decoded_column_wise() -> None:
    """The fast path is taken (Arrow columns), not only the fallback."""
    import pyarrow as pa

    for name in ("avro-flat", "avro-confluent-flat"):
        row, codec = _codec(name)
        rows = [{f.name: None for f in row.fields} | {
            "ns": "é", "nb": True, "sm": -3, "ni": 2**31 - 1, "nbi": -(2**63) + 1, "d": 0.5}] * 3
        decoded = codec.decode_batch([codec.encode(r) for r in rows])
        assert all(isinstance(c, pa.Array) for c in decoded.columns.values()), name
        assert decoded.rows() == [codec.decode(codec.encode(r)) for r in rows]


def test_a_record_with_bytes_left_fails_as_decode_does() -> None:
    _, codec = _codec("avro-flat")
    good = codec.encode({"ns": "a", "nb": False, "sm": 1, "ni": 1, "nbi": 1, "d": 1.0})
    with pytest.raises(BatchDecodeError) as err:
        codec.decode_batch([good, good + b"\x00", good])
    assert err.value.index == 1
    assert "bytes left after the Avro record" in str(err.value.error)


def test_the_flat_avro_batch_as_lists_loads_no_arrow() -> None:
    """`arrow=False` takes the same column-wise path and answers Python lists, in a process
    where pyarrow is never imported (the audit's memory holds no Arrow libraries)."""
    script = """
import sys
from keyguard.formats.codec import CodecContext, create_codec
from keyguard.formats.sqltypes import parse_columns
row = parse_columns("s STRING, ns STRING NOT NULL, i INT, f FLOAT, b BOOLEAN NOT NULL")
codec = create_codec("avro", row, {}, CodecContext(role="value", topic="t"))
rows = [{"s": None, "ns": "é", "i": 7, "f": 0.25, "b": True},
        {"s": "plain", "ns": "", "i": None, "f": None, "b": False}] * 3
decoded = codec.decode_batch([codec.encode(r) for r in rows], arrow=False)
assert all(type(c) is list for c in decoded.columns.values()), decoded.columns
assert decoded.rows() == rows, decoded.rows()
assert "pyarrow" not in sys.modules, "pyarrow was imported"
print("ok")
"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_invalid_utf8_in_a_column_falls_back_to_decode_in_both_forms() -> None:
    _, codec = _codec("avro-flat")
    good = codec.encode({"ns": "ab", "nb": False, "sm": 1, "ni": 1, "nbi": 1, "d": 1.0})
    bad = good.replace(b"ab", b"a\xff")
    assert bad != good
    for arrow in (True, False):
        with pytest.raises(BatchDecodeError) as err:
            codec.decode_batch([good, bad], arrow=arrow)
        assert err.value.index == 1
