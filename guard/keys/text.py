"""Key-byte rules of the text formats, json and csv: one recursive walk over the key row types.

JSON writes field names and nests rows; csv is positional and flat. Both write numbers as
Java's text (`Double.toString`, `BigDecimal.toString`), so the rules here follow Flink's
encoders as described in ENVIRONMENT.md, and the witness search checks them against the codecs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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
    walk,
)
from keyguard.guard.keys.side import (
    Change,
    FamilyContext,
    KeySide,
    effective_options,
    pair_fields,
    reordered,
)
from keyguard.guard.rules import (
    CSV_FIELD_DELIMITER_CHANGED,
    CSV_NULL_LITERAL_CHANGED,
    CSV_QUOTING_CHANGED,
    DECIMAL_PRECISION_NARROWED,
    DECIMAL_PRECISION_WIDENED,
    DECIMAL_SCALE_CHANGED,
    DECIMAL_SCALE_WIDENED_JSON,
    FIELD_BECAME_NULLABLE,
    FIELD_RENAMED_POSITIONAL,
    FLOAT_DOUBLE_CHANGED,
    FORMAT_OPTION_NO_KEY_EFFECT,
    INTEGER_WIDENED,
    JSON_DECIMAL_PLAIN_NUMBER_CHANGED,
    JSON_IGNORE_NULL_FIELDS_CHANGED,
    JSON_TIMESTAMP_STANDARD_CHANGED,
    KEY_FIELD_ADDED,
    KEY_FIELD_NOT_NULL,
    KEY_FIELD_REMOVED,
    KEY_FIELD_RENAMED,
    KEY_FIELDS_PREFIX_CHANGED,
    KEY_FIELDS_REORDERED,
    KEY_LENGTH_CHANGED,
    KEY_TYPE_CHANGED,
    KEY_TYPE_NARROWED,
    NULLABLE_FIELD_ADDED_IGNORED,
    SAME_BYTES_TYPE_CHANGE,
    TIME_PRECISION_CHANGED,
    TIME_PRECISION_WIDENED,
)

_TEMPORAL = (TimeType, TimestampType, TimestampLtzType)
_FLOATS = (FloatType, DoubleType)


@dataclass(frozen=True)
class TextRules:
    """The format and the options that decide which type changes keep the bytes."""

    fmt: str
    #: json.encode.ignore-null-fields on the new side: an added nullable field is left out.
    ignore_nulls: bool = False
    #: json.encode.decimal-as-plain-number on either side: the scale is in the bytes.
    plain_decimals: bool = False

    @classmethod
    def of(cls, old: KeySide, new: KeySide) -> TextRules:
        oo, no = effective_options(old), effective_options(new)
        if new.key_family != "json":
            return cls(new.key_family)
        return cls(
            "json",
            ignore_nulls=bool(no.get("encode.ignore-null-fields")),
            plain_decimals=bool(oo.get("encode.decimal-as-plain-number"))
            or bool(no.get("encode.decimal-as-plain-number")),
        )


def fields_changes(r: TextRules, old: RowType, new: RowType, path: str = "") -> Iterator[Change]:
    """Added, removed, reordered and renamed fields, then each kept field's type."""
    fmt, ignore_nulls = r.fmt, r.ignore_nulls
    pairs = pair_fields(old.fields, new.fields)
    prefix = f"{path}." if path else ""
    for p in pairs:
        where = prefix + p.path
        if p.old is None and p.new is not None:
            if fmt == "json" and ignore_nulls and p.new.type.nullable:
                yield Change(NULLABLE_FIELD_ADDED_IGNORED, where,
                             f"nullable field '{where}' added; existing keys have "
                             "no value for it and json.encode.ignore-null-fields leaves it out")
            else:
                yield Change(KEY_FIELD_ADDED, where,
                             f"field '{where}' ({p.new.type.sql()}) added to the "
                             "key: every existing key lacks it, so the new writer emits other "
                             "bytes for the same entity")
        elif p.new is None and p.old is not None:
            yield Change(KEY_FIELD_REMOVED, where,
                         f"field '{where}' removed from the key: existing keys "
                         "hold it in their bytes, the new writer leaves it out")
    if reordered(pairs):
        order_old = ", ".join(f.name for f in old.fields)
        order_new = ", ".join(f.name for f in new.fields)
        yield Change(KEY_FIELDS_REORDERED, path or "$", f"key fields reordered ({order_old}) -> "
                     f"({order_new}): {fmt} writes them in PRIMARY KEY order")
    for p in pairs:
        if p.old is None or p.new is None:
            continue
        where = prefix + p.new.name
        if p.renamed:
            if fmt == "json":
                yield Change(KEY_FIELD_RENAMED, where,
                             f"key field '{prefix}{p.old.name}' renamed to "
                             f"'{where}': json writes the name into every key")
            else:
                yield Change(FIELD_RENAMED_POSITIONAL, where,
                             f"key field '{prefix}{p.old.name}' renamed to "
                             f"'{where}': {fmt} does not write field names")
        yield from type_changes(r, p.old.type, p.new.type, where)


def type_changes(r: TextRules, old: DataType, new: DataType, path: str) -> Iterator[Change]:
    fmt = r.fmt
    if old.nullable and not new.nullable:
        yield Change(KEY_FIELD_NOT_NULL, path,
                     f"'{path}' became NOT NULL: existing keys with a null "
                     "there cannot be written by the new schema")
    elif new.nullable and not old.nullable:
        yield Change(FIELD_BECAME_NULLABLE, path,
                     f"'{path}' became nullable: {fmt} writes non-null values "
                     "the same")
    o, n = old.with_nullable(True), new.with_nullable(True)
    if o == n:
        return
    if isinstance(o, RowType) and isinstance(n, RowType):
        yield from fields_changes(r, o, n, path)
        return
    if isinstance(o, ArrayType) and isinstance(n, ArrayType):
        yield from type_changes(r, o.element, n.element, f"{path}[]")
        return
    if isinstance(o, MapType) and isinstance(n, MapType):
        yield from type_changes(r, o.key, n.key, f"{path}{{key}}")
        yield from type_changes(r, o.value, n.value, f"{path}{{value}}")
        return
    yield from _atomic(fmt, o, n, path, r.plain_decimals)


def _atomic(fmt: str, o: DataType, n: DataType, path: str, plain: bool) -> Iterator[Change]:
    what = f"'{path}' {_bare(o)} -> {_bare(n)}"
    if isinstance(o, DecimalType) and isinstance(n, DecimalType):
        yield from _decimal(fmt, o, n, path, what, plain)
        return
    change = _within_kind(fmt, o, n, path, what)
    yield change if change is not None else _across_kinds(fmt, o, n, path, what, plain)


def _within_kind(fmt: str, o: DataType, n: DataType, path: str, what: str) -> Change | None:
    """An integer, a float or a time kept its kind, at another width or precision; None for
    any other change."""
    if isinstance(o, IntegralType) and isinstance(n, IntegralType):
        if n.bits >= o.bits:
            return Change(INTEGER_WIDENED, path, f"{what} widened: {fmt} writes the same digits")
        return Change(KEY_TYPE_NARROWED, path, f"{what} narrowed: existing keys above "
                      f"{n.max_value} or below {n.min_value} cannot be written")
    if isinstance(o, _FLOATS) and isinstance(n, _FLOATS):
        return Change(FLOAT_DOUBLE_CHANGED, path,
                      f"{what}: Java's Float.toString and Double.toString write "
                      "most values differently")
    if type(o) is type(n) and isinstance(o, _TEMPORAL):
        assert isinstance(n, _TEMPORAL)
        if n.precision < o.precision:
            return Change(TIME_PRECISION_CHANGED, path,
                          f"{what}: the fraction is truncated, so keys that "
                          "differ below the new precision change bytes")
        return Change(TIME_PRECISION_WIDENED, path,
                      f"{what}: {fmt} trims trailing fractional zeros")
    if type(o) is type(n) and isinstance(o, (StringType, BytesType)):
        return Change(KEY_LENGTH_CHANGED, path,
                      f"{what}: Flink casts each value to the declared length before {fmt} "
                      "writes it (cut when longer, CHAR and BINARY padded), so keys change "
                      "bytes")
    return None


def _across_kinds(fmt: str, o: DataType, n: DataType, path: str, what: str,
                  plain: bool) -> Change:
    """A value written as another kind of type: its text the same, narrower, or other."""
    if fmt == "csv" and isinstance(o, IntegralType) and isinstance(n, StringType):
        return Change(SAME_BYTES_TYPE_CHANGE, path,
                      f"{what}: csv writes the digits as unquoted text either way")
    if fmt == "csv" and isinstance(o, StringType) and isinstance(n, IntegralType):
        return Change(KEY_TYPE_NARROWED, path, f"{what}: existing keys that are not {_bare(n)} "
                      "numbers cannot be written")
    if isinstance(n, StringType) and not isinstance(o, (BytesType, BooleanType)):
        # A column cast to STRING keeps its text (CAST); whether the format writes that text
        # the same as the typed value (quotes, trimmed zeros, exponents) is judged by example.
        return Change(KEY_TYPE_CHANGED, path, f"{what}: {fmt} writes the {_bare(o)} value and "
                      "its STRING cast differently", by_example=True,
                      safe_rule=SAME_BYTES_TYPE_CHANGE)
    if isinstance(o, DecimalType) and isinstance(n, _FLOATS):
        # BigDecimal.toString and Double.toString agree on some small scales (0.5, 1.5).
        return Change(KEY_TYPE_CHANGED, path,
                      f"{what}: decimals and Java's Double.toString differ in "
                      "zeros and exponents", by_example=True, safe_rule=SAME_BYTES_TYPE_CHANGE)
    if isinstance(o, IntegralType) and isinstance(n, DecimalType) and n.scale == 0 and (
            fmt == "csv" or plain):
        if n.precision >= len(str(o.max_value)):
            return Change(SAME_BYTES_TYPE_CHANGE, path,
                          f"{what}: a DECIMAL of scale 0 is written with the same digits")
        return Change(KEY_TYPE_NARROWED, path,
                      f"{what}: existing keys with more than {n.precision} "
                      "digits cannot be written")
    return Change(KEY_TYPE_CHANGED, path, f"{what}: the same value is written differently "
                  f"({_example(fmt, o)} vs {_example(fmt, n)})")


def _decimal(fmt: str, o: DecimalType, n: DecimalType, path: str, what: str,
             plain: bool) -> Iterator[Change]:
    found = False
    if n.precision - n.scale < o.precision - o.scale:
        found = True
        yield Change(DECIMAL_PRECISION_NARROWED, path,
                     f"{what}: {n.precision - n.scale} integer digits instead of "
                     f"{o.precision - o.scale}; larger existing keys cannot be written")
    if n.scale < o.scale:
        found = True
        yield Change(DECIMAL_SCALE_CHANGED, path, f"{what}: a smaller scale rounds existing keys "
                     "(and folds distinct ones together)")
    elif n.scale > o.scale:
        found = True
        if fmt == "json" and not plain:
            yield Change(DECIMAL_SCALE_WIDENED_JSON, path, f"{what}: Flink's json writes "
                         "BigDecimal.stripTrailingZeros(), the same text at any scale")
        else:
            how = "json.encode.decimal-as-plain-number" if fmt == "json" else "csv"
            yield Change(DECIMAL_SCALE_CHANGED, path,
                         f"{what}: {how} writes every digit of the scale "
                         "(12.50 becomes 12.500)")
    if not found:
        yield Change(DECIMAL_PRECISION_WIDENED, path, f"{what}: precision only bounds the range")


def _bare(t: DataType) -> str:
    return t.with_nullable(True).sql()


_EXAMPLES: dict[type, str] = {
    StringType: '"5"', BooleanType: "true", DoubleType: "5.0", FloatType: "5.0",
    DecimalType: "5", DateType: '"2024-01-01"', BytesType: "base64", TimestampType: "no Z",
    TimestampLtzType: "a Z suffix", TimeType: '"10:00:00"',
}


def _example(fmt: str, t: DataType) -> str:
    if isinstance(t, IntegralType):
        return "5"
    return _EXAMPLES.get(type(t), t.sql_name)


# --- format options ----------------------------------------------------------------------

#: Options that only affect reading: a change never touches key bytes.
DECODE_ONLY = {
    "json": {"fail-on-missing-field", "ignore-parse-errors", "decode.json-parser.enabled",
             "map-null-key.mode", "map-null-key.literal"},
    "csv": {"allow-comments", "ignore-parse-errors"},
}


def _types(rt: RowType) -> list[DataType]:
    return [t for _, t in walk(rt)][1:]


def _arbitrary_text(old: RowType, new: RowType) -> bool:
    """Whether existing keys may carry any text into a quoted csv field (STRING to STRING)."""
    def text(t: DataType) -> bool:
        return isinstance(t, StringType) or (isinstance(t, ArrayType) and
                                             isinstance(t.element, StringType)) or (
            isinstance(t, RowType) and any(isinstance(f.type, StringType) for f in t.fields))
    return any(p.old is not None and p.new is not None and text(p.old.type) and text(p.new.type)
               for p in pair_fields(old.fields, new.fields))


#: csv options whose unset value behaves as a set one (the codec's fallbacks).
_CSV_DEFAULTS = {"null-literal": "", "quote-character": '"'}


def option_changes(old: KeySide, new: KeySide) -> Iterator[tuple[str, Any, Any, Change | None]]:
    """(option, old value, new value, change) for every option that differs.

    The change is None for options without a specific rule; the caller decides them by
    encoding representative keys (KG310 or KG909).
    """
    oo, no = effective_options(old), effective_options(new)
    types = _types(old.row_type) + _types(new.row_type)
    #: Only existing keys (the old row type) can hold a null that an option writes differently.
    old_nulls = any(t.nullable for t in _types(old.row_type))
    fmt = new.key_family  # json-registry keys are json text: the json family's rules
    for key in sorted(set(oo) | set(no)):
        a, b = oo.get(key), no.get(key)
        if fmt == "csv" and key in _CSV_DEFAULTS:
            a = _CSV_DEFAULTS[key] if a is None else a
            b = _CSV_DEFAULTS[key] if b is None else b
        if a == b:
            continue
        yield key, a, b, _option_change(fmt, key, a, b, types, old_nulls, old.row_type,
                                        new.row_type)


def _option_change(fmt: str, key: str, a: Any, b: Any, types: list[DataType],
                   old_nulls: bool, old_rt: RowType, new_rt: RowType) -> Change | None:
    what = f"option '{key}' {a!r} -> {b!r}"
    if key in DECODE_ONLY.get(fmt, ()):
        return Change(FORMAT_OPTION_NO_KEY_EFFECT, key, f"{what}: only affects reading")
    options = _OptionChange(key, what, types, old_nulls)
    if fmt == "json":
        return options.json()
    if fmt == "csv":
        return options.csv(old_rt, new_rt)
    return None


@dataclass(frozen=True)
class _OptionChange:
    """One changed option of a text format, against the types the old and new keys hold.

    Its rule when the option writes these keys' bytes otherwise; FORMAT_OPTION_NO_KEY_EFFECT
    when it cannot; None when only example keys can tell (the caller encodes them).
    """

    key: str
    what: str
    types: list[DataType]
    #: Existing keys (the old row type) may hold a null that the option writes differently.
    old_nulls: bool

    def no_effect(self) -> Change:
        return Change(FORMAT_OPTION_NO_KEY_EFFECT, self.key,
                      f"{self.what}: no effect on these keys' bytes")

    def has(self, *cls: type) -> bool:
        return any(isinstance(t, cls) for t in self.types)

    def json(self) -> Change | None:
        key, what = self.key, self.what
        if key == "timestamp-format.standard":
            if not self.has(TimestampType, TimestampLtzType):
                return self.no_effect()
            return Change(JSON_TIMESTAMP_STANDARD_CHANGED, key,
                          f"{what}: timestamps in the key are written as "
                          "`2024-01-01 10:00:00` (SQL) or `2024-01-01T10:00:00` (ISO-8601)")
        if key == "encode.decimal-as-plain-number":
            # DECIMAL(1, 0) is one digit either way.
            if not any(isinstance(t, DecimalType) and (t.scale or t.precision > 1)
                       for t in self.types):
                return self.no_effect()
            return Change(JSON_DECIMAL_PLAIN_NUMBER_CHANGED, key,
                          f"{what}: decimals in the key are written with or "
                          "without trailing zeros (`1000.00` vs `1E+3`)")
        if key == "encode.ignore-null-fields":
            if not self.old_nulls:
                return self.no_effect()
            return Change(JSON_IGNORE_NULL_FIELDS_CHANGED, key,
                          f"{what}: a null key field is written as `null` or left out")
        return None

    def csv(self, old_rt: RowType, new_rt: RowType) -> Change | None:
        key, what = self.key, self.what
        # Any text may hold a delimiter, quote or escape: STRING keys always change. Other
        # types write a small alphabet; whether Jackson quotes it depends on the characters'
        # codes, so those are judged by example keys.
        texts = _arbitrary_text(old_rt, new_rt)
        maybe = self.has(StringType, DateType, TimeType, TimestampType, TimestampLtzType,
                         BytesType, ArrayType, RowType)
        if key == "field-delimiter":
            if texts or len(old_rt) > 1 or len(new_rt) > 1:
                return Change(CSV_FIELD_DELIMITER_CHANGED, key,
                              f"{what}: the delimiter separates the key's fields "
                              "and decides which strings are quoted")
            return Change(CSV_FIELD_DELIMITER_CHANGED, key,
                          f"{what}: decides which of the key's values are quoted",
                          by_example=True) if maybe else self.no_effect()
        if key in ("quote-character", "disable-quote-character", "escape-character"):
            if texts:
                return Change(CSV_QUOTING_CHANGED, key,
                              f"{what}: strings that need quoting are written "
                              "differently")
            return Change(CSV_QUOTING_CHANGED, key, f"{what}: values that need quoting are written "
                          "differently", by_example=True) if maybe else self.no_effect()
        if key == "null-literal":
            return Change(CSV_NULL_LITERAL_CHANGED, key,
                          f"{what}: null key fields are written as the literal") \
                if self.old_nulls else self.no_effect()
        if key == "write-bigdecimal-in-scientific-notation":  # 1000.00 vs 1E+3: by example
            return None if self.has(DecimalType) else self.no_effect()
        if key == "array-element-delimiter":  # joins ARRAY elements and nested ROW fields
            return None if self.has(ArrayType, RowType) else self.no_effect()
        return None


def text_family_changes(old: KeySide, new: KeySide, ctx: FamilyContext) -> Iterator[Change]:
    """The rules of the json and csv key families (`guard/keys/json.py`, `guard/keys/csv.py`)."""
    family = new.key_family
    yield from fields_changes(TextRules.of(old, new), old.row_type, new.row_type)
    for key, a, b, change in option_changes(old, new):
        yield change or ctx.battery_option(old, key, a, b)
    if old.fields_prefix != new.fields_prefix:
        what = f"key.fields-prefix {old.fields_prefix!r} -> {new.fields_prefix!r}"
        if family == "json" and old.row_type.names != new.row_type.names:
            yield Change(KEY_FIELDS_PREFIX_CHANGED,
                         "key.fields-prefix", f"{what}: the key format sees the "
                         f"fields as {', '.join(new.row_type.names)} instead of "
                         f"{', '.join(old.row_type.names)}")
        else:
            yield Change(FORMAT_OPTION_NO_KEY_EFFECT,
                         "key.fields-prefix", f"{what}: the key format sees the same "
                         "field names" if family == "json" else f"{what}: csv writes no names")
