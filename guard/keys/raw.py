"""Key-byte rules of the raw format: one column, its bare bytes (fixed width, charset, order).

raw writes no names and no nulls (a null key would be a tombstone-like null record), so only the
column's type, its width and the two options decide the bytes.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator

from keyguard.formats.types import (
    BooleanType,
    BytesType,
    DataType,
    DoubleType,
    FloatType,
    IntegralType,
    StringType,
    TinyIntType,
)
from keyguard.guard.keys.side import Change, FamilyContext, KeySide, effective_options
from keyguard.guard.rules import (
    FIELD_BECAME_NULLABLE,
    FIELD_RENAMED_POSITIONAL,
    FLOAT_DOUBLE_CHANGED,
    FORMAT_OPTION_NO_KEY_EFFECT,
    KEY_TYPE_CHANGED,
    KEY_TYPE_NARROWED,
    RAW_CHARSET_CHANGED,
    RAW_ENDIANNESS_CHANGED,
    SAME_BYTES_TYPE_CHANGE,
)

_WIDTH: dict[type, int] = {BooleanType: 1, TinyIntType: 1, FloatType: 4, DoubleType: 8}


def _width(t: DataType) -> int | None:
    if isinstance(t, IntegralType):
        return t.bits // 8
    return _WIDTH.get(type(t))


def _charset(name: object) -> str:
    try:
        return codecs.lookup(str(name)).name
    except LookupError:
        return str(name).lower()


def raw_changes(old: KeySide, new: KeySide) -> Iterator[Change]:
    of, nf = old.row_type.fields, new.row_type.fields
    if len(of) != 1 or len(nf) != 1:
        return  # the codec refuses such a row type; building it reports why
    o, n = of[0], nf[0]
    path = n.name
    oo, no = effective_options(old), effective_options(new)
    old_utf8 = _charset(oo["charset"]) == "utf-8"
    new_utf8 = _charset(no["charset"]) == "utf-8"
    if o.name != n.name:
        yield Change(FIELD_RENAMED_POSITIONAL, path,
                     f"key column '{o.name}' renamed to '{n.name}': raw does not "
                     "write names")
    if n.type.nullable and not o.type.nullable:
        yield Change(FIELD_BECAME_NULLABLE, path,
                     f"'{path}' became nullable: raw writes non-null values the "
                     "same")
    ot, nt = o.type.with_nullable(True), n.type.with_nullable(True)
    if ot != nt:
        yield _type_change(path, ot, nt, old_utf8, new_utf8)
    for key in sorted(set(oo) | set(no)):
        a, b = oo.get(key), no.get(key)
        if a == b or (key == "charset" and _charset(a) == _charset(b)):
            continue
        change = _option_change(key, a, b, ot, nt)
        if change is not None:
            yield change


def _type_change(path: str, ot: DataType, nt: DataType, old_utf8: bool,
                 new_utf8: bool) -> Change:
    """The change of the column's type (both nullable): the bytes raw writes for it."""
    what = f"'{path}' {ot.sql()} -> {nt.sql()}"
    if (type(ot), type(nt)) == (StringType, BytesType) and old_utf8:
        return Change(SAME_BYTES_TYPE_CHANGE, path,
                      f"{what}: a UTF-8 STRING and its BYTES are the same bytes")
    if (type(ot), type(nt)) == (BytesType, StringType) and new_utf8:
        return Change(KEY_TYPE_NARROWED, path,
                      f"{what}: existing keys that are not UTF-8 cannot be written as a STRING")
    if isinstance(ot, (FloatType, DoubleType)) and isinstance(nt, (FloatType, DoubleType)):
        return Change(FLOAT_DOUBLE_CHANGED, path, f"{what}: {_width(ot)} vs {_width(nt)} bytes")
    if isinstance(ot, IntegralType) and isinstance(nt, IntegralType) and nt.bits < ot.bits:
        return Change(KEY_TYPE_NARROWED, path,
                      f"{what}: narrower, and {_width(ot)} vs {_width(nt)} bytes for every key")
    ow, nw = _width(ot), _width(nt)
    why = f"{ow} vs {nw} bytes" if ow and nw else "another byte form"
    return Change(KEY_TYPE_CHANGED, path, f"{what}: raw writes the value as {why}")


def _option_change(key: str, a: object, b: object, ot: DataType,
                   nt: DataType) -> Change | None:
    """A changed raw option (endianness, charset) against the column's old and new type."""
    what = f"option '{key}' {a!r} -> {b!r}"
    if key == "endianness":
        if (_width(ot) or 0) > 1 and (_width(nt) or 0) > 1:
            return Change(RAW_ENDIANNESS_CHANGED, key,
                          f"{what}: the key's {nt.sql()} is written in the other byte order")
    elif key == "charset":
        if isinstance(ot, StringType) and isinstance(nt, StringType):
            return Change(RAW_CHARSET_CHANGED, key,
                          f"{what}: the key's text is encoded in another charset")
    else:
        return None
    return Change(FORMAT_OPTION_NO_KEY_EFFECT, key, f"{what}: no effect on a {nt.sql()} key")


def family_changes(old: KeySide, new: KeySide, ctx: FamilyContext) -> Iterator[Change]:
    """The raw key family's rules (its line in
    `keyguard.guard.catalog.KEY_FAMILIES`)."""
    yield from raw_changes(old, new)
