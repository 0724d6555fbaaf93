"""Every decoder, fed mutated valid encodings and random bytes: a row or a typed error.

A decoder reads bytes that someone else wrote (a foreign producer, a corrupted topic, a
different format). Whatever the bytes, it returns a row (or None: a record skipped with
ignore-parse-errors) or raises a KeyguardError naming what is wrong; never another exception,
never a hang. Mutations: bit flips, truncation, extension, byte insertion and deletion.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import values

from keyguard.formats.codec import Codec, CodecContext, create_codec
from keyguard.formats.errors import KeyguardError
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.sqltypes import parse_columns
from keyguard.formats.types import (
    ArrayType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegralType,
    MapType,
    RowType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
)

_FUZZ = settings(max_examples=40, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_ALL = ("s STRING, b BOOLEAN, t TINYINT, sm SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE, "
        "m DECIMAL(10, 2), w DECIMAL(38, 0), dt DATE, tm TIME(3), ts TIMESTAMP(3), "
        "ltz TIMESTAMP_LTZ(6), bs BYTES")
_NESTED = _ALL + ", a ARRAY<INT>, mp MAP<STRING, DOUBLE>, r ROW<x INT, y STRING>"
_CSV = _ALL + ", a ARRAY<INT>, r ROW<x INT, y STRING, z DECIMAL(38, 18)>"
_scopes = itertools.count()
_AVRO = {"timestamp_mapping.legacy": "false"}  # TIMESTAMP_LTZ has no legacy Avro type


def _registry_framed(fmt: str, options: dict[str, str] | None = None,
                     ) -> Callable[[RowType], Codec]:
    def build(row: RowType) -> Codec:
        registry = MockRegistry(f"decoder-fuzz-{next(_scopes)}")
        return create_codec(fmt, row, options or {},
                            CodecContext(role="value", topic="fuzz", registry=registry))  # type: ignore[arg-type]
    return build


_avro_confluent = _registry_framed("avro-confluent")


#: name -> (row type, codec factory)
CODECS: dict[str, tuple[str, Callable[[RowType], Codec]]] = {
    "json": (_NESTED, lambda r: create_codec("json", r)),
    "json-iso": (_NESTED, lambda r: create_codec(
        "json", r, {"timestamp-format.standard": "ISO-8601"})),
    "json-ignore-errors": (_NESTED, lambda r: create_codec(
        "json", r, {"ignore-parse-errors": "true"})),
    "csv": (_CSV, lambda r: create_codec("csv", r, {"null-literal": "null"})),
    "csv-ignore-errors": (_CSV, lambda r: create_codec("csv", r, {"ignore-parse-errors": "true"})),
    "avro": (_NESTED, lambda r: create_codec("avro", r, dict(_AVRO))),
    "avro-json-encoding": (_NESTED, lambda r: create_codec(
        "avro", r, {**_AVRO, "encoding": "json"})),
    "avro-confluent": (_NESTED.replace(", ltz TIMESTAMP_LTZ(6)", ""), _avro_confluent),
    "json-registry": (_NESTED, _registry_framed("json-registry")),
    "protobuf": (_NESTED, lambda r: create_codec("protobuf", r)),
    "protobuf-ignore-errors": (_NESTED, lambda r: create_codec(
        "protobuf", r, {"ignore-parse-errors": "true"})),
    "protobuf-registry": (_NESTED, _registry_framed("protobuf-registry")),
    "avro-key": ("k STRING NOT NULL, n INT NOT NULL", lambda r: create_codec(
        "avro", r, context=CodecContext(role="key"))),
    **{f"raw-{t.split('(')[0].lower()}": (f"c {t}", lambda r: create_codec("raw", r))
       for t in ("STRING", "BYTES", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT",
                 "DOUBLE")},
    "raw-string-utf16": ("c STRING", lambda r: create_codec("raw", r, {"charset": "UTF-16"})),
}

_built: dict[str, tuple[RowType, Codec]] = {}


def _codec(name: str) -> tuple[RowType, Codec]:
    if name not in _built:
        columns, build = CODECS[name]
        row = parse_columns(columns)
        _built[name] = (row, build(row))
    return _built[name]


def _decodes_or_rejects(codec: Codec, data: bytes) -> None:
    """The one property: a row, None (skipped), or a KeyguardError; nothing else."""
    try:
        out = codec.decode(data)
    except KeyguardError as exc:
        assert str(exc), "an error with no message"
        return
    assert out is None or isinstance(out, dict), f"decoded to {type(out).__name__}"
    if out is not None:
        assert_fits(codec.row_type, out, "")
    if out is not None and codec.format_name == "json" and \
            not codec.options["ignore-parse-errors"]:
        _assert_no_silent_nulls(data, out)


def _assert_no_silent_nulls(data: bytes, out: dict[str, Any]) -> None:
    """A JSON column given a value decodes to a value: only `null` reads as null."""
    try:
        given_ = json.loads(data)
    except ValueError:
        return
    for name, v in given_.items():
        if name in out and v is not None:
            assert out[name] is not None, f"{name}: {v!r} decoded to null"


def assert_fits(t: DataType, v: Any, path: str) -> None:
    """A decoded value lies inside its declared type (no 70-digit DECIMAL(10, 2), no INT 2^40)."""
    if v is None:
        return
    where = f"{path or '(row)'} {t.sql()}: {v!r}"
    if isinstance(t, StringType):
        assert isinstance(v, str), where
    elif isinstance(t, BooleanType):
        assert isinstance(v, bool), where
    elif isinstance(t, IntegralType):
        assert isinstance(v, int) and not isinstance(v, bool), where
        assert t.min_value <= v <= t.max_value, where
    elif isinstance(t, (FloatType, DoubleType)):
        assert isinstance(v, float), where
    elif isinstance(t, DecimalType):
        assert isinstance(v, Decimal) and v.is_finite(), where
        _sign, digits, exponent = v.as_tuple()
        assert exponent == -t.scale, where
        assert len(digits) <= t.precision, where
    elif isinstance(t, (TimestampType, TimestampLtzType)):
        assert isinstance(v, dt.datetime), where
    elif isinstance(t, DateType):
        assert isinstance(v, dt.date) and not isinstance(v, dt.datetime), where
    elif isinstance(t, TimeType):
        assert isinstance(v, dt.time), where
    elif isinstance(t, BytesType):
        assert isinstance(v, bytes), where
    elif isinstance(t, ArrayType):
        assert isinstance(v, list), where
        for i, x in enumerate(v):
            assert_fits(t.element, x, f"{path}[{i}]")
    elif isinstance(t, MapType):
        assert isinstance(v, dict), where
        for k, x in v.items():
            assert_fits(t.key, k, f"{path}{{key}}")
            assert_fits(t.value, x, f"{path}[{k!r}]")
    elif isinstance(t, RowType):
        assert isinstance(v, dict) and list(v) == t.names, where
        for f in t.fields:
            assert_fits(f.type, v[f.name], f"{path}.{f.name}" if path else f.name)


def _encoding_options() -> Any:
    return st.sampled_from(sorted(CODECS))


@st.composite
def _valid_encoding(draw: st.DrawFn, name: str) -> bytes:
    row, codec = _codec(name)
    value = draw(values(row))
    try:
        return codec.encode(value)
    except KeyguardError:  # a value the format cannot write (a null in raw, ...): any bytes do
        return draw(st.binary(max_size=64))


@st.composite
def _mutated(draw: st.DrawFn, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "extend", "insert", "delete", "set"]))
        if op == "flip" and buf:
            i = draw(st.integers(0, len(buf) - 1))
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate" and buf:
            del buf[draw(st.integers(0, len(buf) - 1)):]
        elif op == "extend":
            buf += draw(st.binary(min_size=1, max_size=16))
        elif op == "insert":
            i = draw(st.integers(0, len(buf)))
            buf[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and buf:
            i = draw(st.integers(0, len(buf) - 1))
            del buf[i:i + draw(st.integers(1, 4))]
        elif op == "set" and buf:  # a byte that means something in text formats
            i = draw(st.integers(0, len(buf) - 1))
            buf[i] = ord(draw(st.sampled_from(list('",:{}[]\\0-9eE.+- \n\x00\x80\xff'))))
    return bytes(buf)


@pytest.mark.parametrize("name", sorted(CODECS))
@_FUZZ
@given(data=st.data())
def test_mutated_encodings_decode_or_raise_a_typed_error(name: str, data: st.DataObject) -> None:
    valid = data.draw(_valid_encoding(name))
    _decodes_or_rejects(_codec(name)[1], data.draw(_mutated(valid)))


@pytest.mark.parametrize("name", sorted(CODECS))
@_FUZZ
@given(blob=st.binary(max_size=200))
def test_random_bytes_decode_or_raise_a_typed_error(name: str, blob: bytes) -> None:
    _decodes_or_rejects(_codec(name)[1], blob)


def _nested_text_has(row: dict[str, Any], char: str) -> bool:
    """Whether a string inside an ARRAY, MAP or ROW column contains `char`."""
    def texts(v: Any) -> Any:
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for k, x in v.items():
                yield from texts(k)
                yield from texts(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                yield from texts(x)
    return any(char in t for v in row.values() if isinstance(v, (dict, list, tuple))
               for t in texts(v))


@pytest.mark.parametrize("name", sorted(CODECS))
# csv leaves out the rows Flink cannot read back either (below): a null ARRAY or ROW and a
# nested ';' are frequent draws, so a run may leave out many
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_valid_encodings_decode(name: str, data: st.DataObject) -> None:
    """The control: unmutated bytes that the codec wrote decode to a row."""
    row, codec = _codec(name)
    value = data.draw(values(row))
    # Flink's csv writes a nested element holding the element delimiter unescaped, so neither
    # Flink nor keyguard can read it back (README, csv format): not a valid encoding to test.
    assume(not (name == "csv" and _nested_text_has(value, ";")))
    # A null ARRAY or ROW is written as the null literal, which Flink's csv reader splits into
    # one null element (README, csv format): for a ROW too few fields, not the row written.
    assume(not (name == "csv" and (value.get("a") is None or value.get("r") is None)))
    try:
        encoded = codec.encode(value)
    except KeyguardError:
        return
    # A NUL byte makes Flink's csv reader (Jackson's encoding detection) read the record as
    # UTF-16 or UTF-32 (the captured reads show it), and keyguard's reads it as Flink does:
    # not a valid encoding to test.
    assume(not (name == "csv" and b"\x00" in encoded))
    decoded = codec.decode(encoded)
    assert isinstance(decoded, dict)
    assert_fits(row, decoded, "")


@pytest.mark.parametrize("name", ["json", "json-ignore-errors", "avro-json-encoding", "csv"])
def test_absurd_nesting_is_a_typed_error(name: str) -> None:
    deep = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _decodes_or_rejects(_codec(name)[1], deep)

