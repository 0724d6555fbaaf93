"""The logical row type model: the one vocabulary shared by every format, converter and check.

It mirrors Flink's logical types, because the bytes keyguard writes must equal what Flink writes
for the same table. Each type is an immutable value; `nullable` is part of the type, as in Flink
(`INT NOT NULL` and `INT` are different types and, in Avro and JSON, different bytes).

Python values for rows (what encoders take and decoders return):

=================  ==============================================================
STRING             str
BOOLEAN            bool
TINYINT..BIGINT    int
FLOAT, DOUBLE      float
DECIMAL(p, s)      decimal.Decimal (decoders return it quantized to scale s)
DATE               datetime.date
TIME(p)            datetime.time (no tzinfo)
TIMESTAMP(p)       datetime.datetime, naive
TIMESTAMP_LTZ(p)   datetime.datetime, tz-aware (decoders return UTC)
BYTES              bytes
ARRAY<T>           list
MAP<K, V>          dict
ROW<...>           dict of field name -> value
=================  ==============================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TypeVar

from formats.errors import SchemaError

T = TypeVar("T", bound="DataType")


@dataclass(frozen=True, kw_only=True)
class DataType:
    """A logical type. Subclasses only add their parameters."""

    nullable: bool = True

    #: The SQL name (STRING, INT, ...), without parameters.
    sql_name = "?"

    def with_nullable(self: T, nullable: bool) -> T:
        return self if self.nullable == nullable else replace(self, nullable=nullable)

    def not_null(self: T) -> T:
        return self.with_nullable(False)

    def sql(self) -> str:
        """Flink SQL spelling, e.g. `DECIMAL(10, 2) NOT NULL`."""
        return self._sql_body() + ("" if self.nullable else " NOT NULL")

    def _sql_body(self) -> str:
        return self.sql_name

    def __str__(self) -> str:
        return self.sql()


@dataclass(frozen=True, kw_only=True)
class StringType(DataType):
    sql_name = "STRING"


@dataclass(frozen=True, kw_only=True)
class BooleanType(DataType):
    sql_name = "BOOLEAN"


@dataclass(frozen=True, kw_only=True)
class IntegralType(DataType):
    """TINYINT, SMALLINT, INT, BIGINT: two's complement integers of `bits` width."""

    bits = 0

    @property
    def min_value(self) -> int:
        return -(1 << (self.bits - 1))

    @property
    def max_value(self) -> int:
        return (1 << (self.bits - 1)) - 1


@dataclass(frozen=True, kw_only=True)
class TinyIntType(IntegralType):
    sql_name = "TINYINT"
    bits = 8


@dataclass(frozen=True, kw_only=True)
class SmallIntType(IntegralType):
    sql_name = "SMALLINT"
    bits = 16


@dataclass(frozen=True, kw_only=True)
class IntType(IntegralType):
    sql_name = "INT"
    bits = 32


@dataclass(frozen=True, kw_only=True)
class BigIntType(IntegralType):
    sql_name = "BIGINT"
    bits = 64


@dataclass(frozen=True, kw_only=True)
class FloatType(DataType):
    sql_name = "FLOAT"


@dataclass(frozen=True, kw_only=True)
class DoubleType(DataType):
    sql_name = "DOUBLE"


@dataclass(frozen=True, kw_only=True)
class DecimalType(DataType):
    precision: int = 10
    scale: int = 0
    sql_name = "DECIMAL"

    def __post_init__(self) -> None:
        if not 1 <= self.precision <= 38:
            raise SchemaError(f"DECIMAL precision must be between 1 and 38, got {self.precision}")
        if not 0 <= self.scale <= self.precision:
            raise SchemaError(
                f"DECIMAL scale must be between 0 and the precision ({self.precision}), "
                f"got {self.scale}"
            )

    def _sql_body(self) -> str:
        return f"DECIMAL({self.precision}, {self.scale})"


@dataclass(frozen=True, kw_only=True)
class DateType(DataType):
    sql_name = "DATE"


@dataclass(frozen=True, kw_only=True)
class _PrecisionType(DataType):
    """Types with a fractional-seconds precision 0..9."""

    precision: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.precision <= 9:
            raise SchemaError(
                f"{self.sql_name} precision must be between 0 and 9, got {self.precision}"
            )

    def _sql_body(self) -> str:
        return f"{self.sql_name}({self.precision})"


@dataclass(frozen=True, kw_only=True)
class TimeType(_PrecisionType):
    precision: int = 0
    sql_name = "TIME"


@dataclass(frozen=True, kw_only=True)
class TimestampType(_PrecisionType):
    precision: int = 6
    sql_name = "TIMESTAMP"


@dataclass(frozen=True, kw_only=True)
class TimestampLtzType(_PrecisionType):
    precision: int = 6
    sql_name = "TIMESTAMP_LTZ"


@dataclass(frozen=True, kw_only=True)
class BytesType(DataType):
    sql_name = "BYTES"


@dataclass(frozen=True, kw_only=True)
class ArrayType(DataType):
    element: DataType
    sql_name = "ARRAY"

    def _sql_body(self) -> str:
        return f"ARRAY<{self.element.sql()}>"


@dataclass(frozen=True, kw_only=True)
class MapType(DataType):
    key: DataType
    value: DataType
    sql_name = "MAP"

    def _sql_body(self) -> str:
        return f"MAP<{self.key.sql()}, {self.value.sql()}>"


@dataclass(frozen=True, kw_only=True)
class AvroOnlyType(DataType):
    """A legal Avro type that no Flink or Spark column type can hold: a reference back to an
    enclosing record (recursion), or a union of several non-null types. `what` says which.

    No codec accepts it: it exists only so that the guard's structural analysis can judge
    such schemas (by their Avro encoding) instead of rejecting them.
    """

    what: str
    sql_name = "AVRO"

    def _sql_body(self) -> str:
        return f"AVRO<{self.what}>"


def avro_only_parts(t: DataType) -> list[tuple[str, AvroOnlyType]]:
    """Every AvroOnlyType inside `t`, with its path."""
    return [(path, sub) for path, sub in walk(t) if isinstance(sub, AvroOnlyType)]


@dataclass(frozen=True)
class Field:
    """A named column of a ROW."""

    name: str
    type: DataType
    description: str | None = None

    def sql(self) -> str:
        """Flink's spelling: backquotes in the name doubled, the description as a comment."""
        name = self.name.replace("`", "``")
        comment = ""
        if self.description is not None:
            comment = " '" + self.description.replace("'", "''") + "'"
        return f"`{name}` {self.type.sql()}{comment}"


@dataclass(frozen=True, kw_only=True)
class RowType(DataType):
    """A row: an ordered list of uniquely named fields. A table's schema is a RowType."""

    fields: tuple[Field, ...] = ()
    sql_name = "ROW"

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for f in self.fields:
            if f.name in seen:
                raise SchemaError(f"duplicate field name {f.name!r} in {self._sql_body()}")
            seen.add(f.name)

    def _sql_body(self) -> str:
        return "ROW<" + ", ".join(f.sql() for f in self.fields) + ">"

    # Cached (the fields never change): a 200k-column row asks these once per column.
    @cached_property
    def names(self) -> list[str]:
        """The field names in order (one shared list: do not modify it)."""
        return [f.name for f in self.fields]

    @cached_property
    def _by_name(self) -> dict[str, Field]:
        return {f.name: f for f in self.fields}

    def field(self, name: str) -> Field:
        found = self._by_name.get(name)
        if found is not None:
            return found
        raise SchemaError(
            f"no column {name!r}; the columns are: {', '.join(self.names) or '(none)'}"
        )

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)


def row(*fields: Field | tuple[str, DataType], nullable: bool = False) -> RowType:
    """Build a RowType from fields or (name, type) pairs. Top-level rows are NOT NULL."""
    return RowType(
        fields=tuple(f if isinstance(f, Field) else Field(f[0], f[1]) for f in fields),
        nullable=nullable,
    )


def walk(t: DataType, path: str = "") -> Iterable[tuple[str, DataType]]:
    """Every nested type with its path (`a.b`, `a[]`, `m{key}`, `m{value}`), depth first."""
    yield path, t
    if isinstance(t, RowType):
        for f in t.fields:
            yield from walk(f.type, f"{path}.{f.name}" if path else f.name)
    elif isinstance(t, ArrayType):
        yield from walk(t.element, f"{path}[]")
    elif isinstance(t, MapType):
        yield from walk(t.key, f"{path}{{key}}")
        yield from walk(t.value, f"{path}{{value}}")


ATOMIC_TYPES: tuple[type[DataType], ...] = (
    StringType,
    BooleanType,
    TinyIntType,
    SmallIntType,
    IntType,
    BigIntType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimeType,
    TimestampType,
    TimestampLtzType,
    BytesType,
)
