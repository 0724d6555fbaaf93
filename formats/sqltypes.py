"""Flink SQL type text -> the logical type model.

Users describe tables the way they would in Flink DDL (`user_region STRING, pv BIGINT NOT NULL`),
so keyguard reads that spelling, aliases included, and points at the exact character when the
text is wrong. `parse_type(t.sql()) == t` holds for every type of the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn

from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.schemajson import MAX_SCHEMA_DEPTH
from keyguard.formats.sqltokens import Tok, TokenCursor, tokenize
from keyguard.formats.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    BytesType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    Field,
    FloatType,
    IntType,
    MapType,
    RowType,
    SmallIntType,
    StringType,
    TimestampLtzType,
    TimestampType,
    TimeType,
    TinyIntType,
)

__all__ = ["TypeSyntaxError", "UnsupportedSqlTypeError", "parse_columns", "parse_type"]


class TypeSyntaxError(SchemaError):
    """Type text that does not parse; `position` is the 0-based offset of the offending token."""

    def __init__(self, message: str, text: str, position: int, *, hint: str | None = None):
        self.text = text
        self.position = position
        super().__init__(
            f"{message} at position {position + 1}:\n{_caret(text, position)}", hint=hint
        )


class UnsupportedSqlTypeError(UnsupportedTypeError):
    """A valid Flink type that keyguard's model has no place for (INTERVAL, MULTISET, ...)."""

    def __init__(self, message: str, text: str, position: int, *, hint: str | None = None):
        self.text = text
        self.position = position
        super().__init__(
            f"{message} at position {position + 1}:\n{_caret(text, position)}", hint=hint
        )


def _caret(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start : None if line_end < 0 else line_end]
    return f"  {line}\n  {' ' * (pos - line_start)}^"


def parse_type(text: str) -> DataType:
    """One Flink SQL type, e.g. `DECIMAL(10, 2) NOT NULL` or `ARRAY<ROW<a INT, `b c` STRING>>`."""
    p = _Parser(text)
    t = p.data_type()
    p.expect_end()
    return t


def parse_columns(text: str) -> RowType:
    """A column list as in a CREATE TABLE, e.g. `user_region STRING, pv BIGINT NOT NULL`.

    Returns a NOT NULL RowType (a table's row). A column may carry `COMMENT '...'`.
    """
    p = _Parser(text)
    fields = p.fields(end=None)
    p.expect_end()
    return p.make_row(fields, nullable=False, at=0)


# --- tokens -------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<string>'(?:[^']|'')*')
  | (?P<int>[0-9]+)
  | (?P<punct>[<>(),:])
    """,
    re.VERBOSE,
)


def _tokenize(text: str) -> list[Tok]:
    toks, stuck = tokenize(text, _TOKEN)
    if stuck is not None:
        ch = text[stuck]
        what = "unterminated quote" if ch in "`'" else f"unexpected character {ch!r}"
        raise TypeSyntaxError(what, text, stuck)
    return toks


# --- grammar -------------------------------------------------------------------------------

_SIMPLE: dict[str, type[DataType]] = {
    "STRING": StringType,
    "BOOLEAN": BooleanType,
    "BYTES": BytesType,
    "TINYINT": TinyIntType,
    "SMALLINT": SmallIntType,
    "INT": IntType,
    "INTEGER": IntType,
    "BIGINT": BigIntType,
    "FLOAT": FloatType,
    "DATE": DateType,
}
#: Flink's length types: the model type and whether the length is fixed (CHAR, BINARY).
_LENGTH_TYPES: dict[str, tuple[type[StringType] | type[BytesType], bool]] = {
    "CHAR": (StringType, True),
    "VARCHAR": (StringType, False),
    "BINARY": (BytesType, True),
    "VARBINARY": (BytesType, False),
}
_UNSUPPORTED = {
    "INTERVAL": "INTERVAL types have no Kafka format encoding in keyguard",
    "MULTISET": "MULTISET is not supported",
    "RAW": "RAW types are opaque Java serializations",
    "NULL": "the NULL type has no values to write",
    "VARIANT": "VARIANT is not supported",
    # Flink's SQL parser knows REAL, but its planner refuses the type (FlinkTypeFactory).
    "REAL": "Flink 2.3 refuses it: \"Type is not supported: REAL\"",
    "STRUCTURED": "structured (class-backed) types are not supported",
}
_UNSUPPORTED_HINTS = {"REAL": "declare FLOAT (4 bytes, what REAL means elsewhere) or DOUBLE"}


class _Parser(TokenCursor):
    def __init__(self, text: str) -> None:
        self.text = text
        self.depth = 0
        self.toks = _tokenize(text)
        self.i = 0

    def expect_end(self) -> None:
        if self.tok.kind != "end":
            self.fail(f"unexpected {self.found()} after a complete type")

    def fail(self, message: str, pos: int | None = None, *,
             hint: str | None = None) -> NoReturn:
        raise TypeSyntaxError(message, self.text, self.tok.pos if pos is None else pos,
                              hint=hint)

    def integer(self, what: str) -> int:
        if self.tok.kind != "int":
            self.fail(f"expected {what} (a number) but found {self.found()}")
        return int(self.advance().text)

    # grammar
    def data_type(self) -> DataType:
        self.depth += 1
        try:
            if self.depth > MAX_SCHEMA_DEPTH:
                self.fail(f"types nested more than {MAX_SCHEMA_DEPTH} levels deep",
                          hint=f"keyguard accepts types nested up to {MAX_SCHEMA_DEPTH} levels "
                               "(ROW, ARRAY, MAP); flatten the type")
            return self._data_type()
        finally:
            self.depth -= 1

    def _data_type(self) -> DataType:
        t = self.base_type().with_nullable(self.nullability())
        # Flink's suffix notation: `INT ARRAY`, `INT NOT NULL ARRAY NOT NULL`.
        while self.at_word("ARRAY", "MULTISET"):
            if self.at_word("MULTISET"):
                self.unsupported("MULTISET")
            self.advance()
            t = ArrayType(element=t, nullable=self.nullability())
        return t

    def nullability(self) -> bool:
        if self.accept_word("NOT"):
            self.expect_word("NULL")
            return False
        self.accept_word("NULL")
        return True

    def unsupported(self, name: str) -> NoReturn:
        pos = self.tok.pos
        raise UnsupportedSqlTypeError(
            f"unsupported type {name}: {_UNSUPPORTED.get(name, 'not in keyguard model')}",
            self.text,
            pos,
            hint=_UNSUPPORTED_HINTS.get(
                name, "use a supported type, e.g. BIGINT for durations or STRING for opaque "
                "values"),
        )

    def base_type(self) -> DataType:
        tok = self.tok
        name = tok.upper
        if tok.kind != "word":
            self.fail(f"expected a type but found {self.found()}")
        if name in _UNSUPPORTED:
            self.unsupported(name)
        self.advance()
        if name in _SIMPLE:
            return _SIMPLE[name]()
        if name in _LENGTH_TYPES:
            make, fixed = _LENGTH_TYPES[name]
            length, at = self.optional_length(name, tok)
            return self.build(lambda: make(length=length, fixed=fixed), at)
        if name == "DOUBLE":
            self.accept_word("PRECISION")
            return DoubleType()
        if name in ("DECIMAL", "DEC", "NUMERIC"):
            return self.decimal(tok)
        if name == "TIME":
            p, at = self.optional_precision(0, tok)
            self.time_zone_suffix(tok, allow_local=False)
            return self.build(lambda: TimeType(precision=p), at)
        if name == "TIMESTAMP":
            p, at = self.optional_precision(6, tok)
            if self.time_zone_suffix(tok, allow_local=True):
                return self.build(lambda: TimestampLtzType(precision=p), at)
            return self.build(lambda: TimestampType(precision=p), at)
        if name == "TIMESTAMP_LTZ":
            p, at = self.optional_precision(6, tok)
            return self.build(lambda: TimestampLtzType(precision=p), at)
        if name == "ARRAY":
            self.expect_punct("<")
            element = self.data_type()
            self.expect_punct(">")
            return ArrayType(element=element)
        if name == "MAP":
            self.expect_punct("<")
            key = self.data_type()
            self.expect_punct(",")
            value = self.data_type()
            self.expect_punct(">")
            return MapType(key=key, value=value)
        if name == "ROW":
            close = ">" if self.accept_punct("<") else None
            if close is None:
                self.expect_punct("(")
                close = ")"
            fields = self.fields(end=close)
            self.expect_punct(close)
            return self.make_row(fields, nullable=True, at=tok.pos)
        self.fail(
            f"unknown type {tok.text!r}",
            tok.pos,
            hint="types are Flink SQL names: STRING, INT, BIGINT, DECIMAL(p, s), TIMESTAMP(p), "
            "TIMESTAMP_LTZ(p), ARRAY<T>, MAP<K, V>, ROW<name T, ...>, ...",
        )

    def build(self, make: Callable[[], DataType], at: int) -> DataType:
        """Run a model constructor, re-pointing its range errors at the text."""
        try:
            return make()
        except SchemaError as e:
            raise TypeSyntaxError(e.message, self.text, at, hint=e.hint) from None

    def optional_length(self, name: str, tok: Tok) -> tuple[int, int]:
        """The length in `(n)`, or Flink's default 1 (`CHAR` is CHAR(1)); with its offset."""
        if not self.accept_punct("("):
            return 1, tok.pos
        at = self.tok.pos
        length = self.integer(f"a {name} length")
        if length < 1:
            self.fail(f"{name} length must be at least 1", at)
        self.expect_punct(")")
        return length, at

    def optional_precision(self, default: int, tok: Tok) -> tuple[int, int]:
        """The precision in `(p)`, or the default; with the offset to blame if out of range."""
        if not self.accept_punct("("):
            return default, tok.pos
        at = self.tok.pos
        p = self.integer(f"a {tok.upper} precision")
        self.expect_punct(")")
        return p, at

    def time_zone_suffix(self, tok: Tok, *, allow_local: bool) -> bool:
        """`WITHOUT TIME ZONE` -> False; `WITH LOCAL TIME ZONE` -> True."""
        if self.accept_word("WITHOUT"):
            self.expect_word("TIME")
            self.expect_word("ZONE")
            return False
        if self.at_word("WITH"):
            at = self.advance().pos
            if not self.accept_word("LOCAL"):
                raise UnsupportedSqlTypeError(
                    f"{tok.upper} WITH TIME ZONE is not supported (Flink has no such type either)",
                    self.text,
                    at,
                    hint="use TIMESTAMP_LTZ(p) (an instant) or TIMESTAMP(p) (a wall-clock time)",
                )
            if not allow_local:
                self.fail(f"{tok.upper} WITH LOCAL TIME ZONE does not exist", at)
            self.expect_word("TIME")
            self.expect_word("ZONE")
            return True
        return False

    def decimal(self, tok: Tok) -> DataType:
        precision, scale, at = 10, 0, tok.pos
        if self.accept_punct("("):
            at = self.tok.pos
            precision = self.integer("a DECIMAL precision")
            if self.accept_punct(","):
                scale = self.integer("a DECIMAL scale")
            self.expect_punct(")")
        return self.build(lambda: DecimalType(precision=precision, scale=scale), at)

    def fields(self, end: str | None) -> list[tuple[Field, int]]:
        out: list[tuple[Field, int]] = []
        if (end is not None and self.at_punct(end)) or (end is None and self.tok.kind == "end"):
            return out
        while True:
            if end is None and self.at_word("PRIMARY", "WATERMARK", "CONSTRAINT"):
                clause = "PRIMARY KEY" if self.at_word("PRIMARY") else self.tok.upper
                self.fail(
                    f"{clause} clauses are not part of a column list",
                    hint="list only the columns; give the key with the primary-key option",
                )
            at = self.tok.pos
            name, _ = self.identifier("a field name", empty="empty field name")
            self.accept_punct(":")
            t = self.data_type()
            description = None
            if self.accept_word("COMMENT") or self.tok.kind == "string":
                if self.tok.kind != "string":
                    self.fail(f"expected a quoted comment but found {self.found()}")
                description = self.advance().string_value
            out.append((Field(name, t, description), at))
            if not self.accept_punct(","):
                return out

    def make_row(self, fields: list[tuple[Field, int]], *, nullable: bool, at: int) -> RowType:
        seen: set[str] = set()
        for f, pos in fields:
            if f.name in seen:
                self.fail(f"duplicate field name {f.name!r}", pos)
            seen.add(f.name)
        return RowType(fields=tuple(f for f, _ in fields), nullable=nullable)
