"""The logical row type model: the one vocabulary shared by every format, converter and check.

It mirrors Flink's logical types, because the bytes keyguard writes must equal what Flink writes
for the same table. Each type is an immutable value; `nullable` is part of the type, as in Flink
(`INT NOT NULL` and `INT` are different types and, in Avro and JSON, different bytes).

Python values for rows (what encoders take and decoders return):

=================  ==============================================================
STRING             str (CHAR(n), VARCHAR(n) too)
BOOLEAN            bool
TINYINT..BIGINT    int
FLOAT, DOUBLE      float
DECIMAL(p, s)      decimal.Decimal (decoders return it quantized to scale s)
DATE               datetime.date
TIME(p)            datetime.time (no tzinfo)
TIMESTAMP(p)       datetime.datetime, naive
TIMESTAMP_LTZ(p)   datetime.datetime, tz-aware (decoders return UTC)
BYTES              bytes (BINARY(n), VARBINARY(n) too)
ARRAY<T>           list
MAP<K, V>          dict
ROW<...>           dict of field name -> value
=================  ==============================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import FrozenInstanceError
from functools import cached_property
from typing import Any, ClassVar, TypeVar

from keyguard.formats.errors import SchemaError
from keyguard.formats.immutable import Value

T = TypeVar("T", bound="DataType")
C = TypeVar("C", bound=type)

#: Sets an attribute of an immutable value (in its __init__), as a frozen dataclass's does.
_set = object.__setattr__


class _Value(Value):
    """The logical types' base: an immutable `keyguard.formats.immutable.Value`.

    Each class that adds fields declares them as annotations and is decorated `@_value()`,
    which lists them in `FIELDS` (the inherited first, in declaration order); it writes its own
    `__init__` (keyword arguments, by field name), and its `__eq__` and `__hash__`: equal when of
    the same class with equal fields, hashed by the fields, compared as a tuple at once (types
    are compared and hashed on the codecs' paths). Assigning a field raises
    FrozenInstanceError. `replace` makes a changed copy.
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


def _value() -> Callable[[C], C]:
    """Declare a `_Value` class that adds fields (see `_Value`): its `FIELDS` are the inherited
    ones, then its own annotations that are not ClassVars. A subclass that adds no field needs
    no decorator."""

    def declare(cls: C) -> C:
        inherited: tuple[str, ...] = getattr(cls, "FIELDS", ())
        own = tuple(n for n, a in vars(cls).get("__annotations__", {}).items()
                    if not str(a).startswith("ClassVar") and n not in inherited)
        cls.FIELDS = (*inherited, *own)  # type: ignore[attr-defined]
        missing = [m for m in ("__init__", "__eq__", "__hash__") if m not in vars(cls)]
        if own and missing:  # inherited ones would miss the new fields
            raise TypeError(f"{cls.__name__} adds fields: write its {', '.join(missing)}")
        return cls

    return declare


@_value()
class DataType(_Value):
    """A logical type. Subclasses only add their parameters."""

    nullable: bool = True

    def __init__(self, *, nullable: bool = True) -> None:
        _set(self, "nullable", nullable)

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.nullable,) == (other.nullable,)

    def __hash__(self) -> int:
        return hash((self.nullable,))

    #: The SQL name (STRING, INT, ...), without parameters.
    sql_name = "?"

    def with_nullable(self: T, nullable: bool) -> T:
        return self if self.nullable == nullable else self.replace(nullable=nullable)

    def not_null(self: T) -> T:
        return self.with_nullable(False)

    def sql(self) -> str:
        """Flink SQL spelling, e.g. `DECIMAL(10, 2) NOT NULL`."""
        return self._sql_body() + ("" if self.nullable else " NOT NULL")

    def _sql_body(self) -> str:
        return self.sql_name

    def __str__(self) -> str:
        return self.sql()


#: The length Flink's STRING and BYTES stand for: VARCHAR(2147483647), VARBINARY(2147483647).
MAX_LENGTH = 2**31 - 1


@_value()
class _LengthType(DataType):
    """Character and binary strings with Flink's declared length: `length` None is STRING or
    BYTES (no limit); `fixed` is CHAR(n) or BINARY(n), else VARCHAR(n) or VARBINARY(n).

    The length is what Flink casts a value to before any format writes it (its
    `CharVarCharTrimPadCastRule`, `BinaryToBinaryCastRule`): longer values are cut to n, and
    CHAR(n) and BINARY(n) values shorter than n are padded (spaces, zero bytes). Every
    format then writes that value as it writes STRING or BYTES (`keyguard.formats.lengths`).
    """

    length: int | None = None
    fixed: bool = False
    #: Flink's names: (fixed, variable).
    _names_by_fixed: ClassVar[tuple[str, str]] = ("?", "?")

    def __init__(self, *, nullable: bool = True, length: int | None = None,
                 fixed: bool = False) -> None:
        if length is not None and not fixed and length >= MAX_LENGTH:
            length = None  # VARCHAR(2147483647) is STRING, as Flink spells it
        _set(self, "nullable", nullable)
        _set(self, "length", length)
        _set(self, "fixed", fixed)
        self.__post_init__()

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return ((self.nullable, self.length, self.fixed)
                == (other.nullable, other.length, other.fixed))

    def __hash__(self) -> int:
        return hash((self.nullable, self.length, self.fixed))

    def __post_init__(self) -> None:
        name = self._names_by_fixed[0 if self.fixed else 1]
        if self.fixed and self.length is None:
            raise SchemaError(f"{name} needs a length")
        if self.length is not None and not 1 <= self.length <= MAX_LENGTH:
            raise SchemaError(
                f"{name} length must be between 1 and {MAX_LENGTH}, got {self.length}")

    def _sql_body(self) -> str:
        if self.length is None:
            return self.sql_name
        return f"{self._names_by_fixed[0 if self.fixed else 1]}({self.length})"


@_value()
class StringType(_LengthType):
    sql_name = "STRING"
    _names_by_fixed = ("CHAR", "VARCHAR")

    def __init__(self, *, nullable: bool = True, length: int | None = None,
                 fixed: bool = False) -> None:
        super().__init__(nullable=nullable, length=length, fixed=fixed)


class BooleanType(DataType):
    sql_name = "BOOLEAN"


class IntegralType(DataType):
    """TINYINT, SMALLINT, INT, BIGINT: two's complement integers of `bits` width."""

    bits = 0

    @property
    def min_value(self) -> int:
        return -(1 << (self.bits - 1))

    @property
    def max_value(self) -> int:
        return (1 << (self.bits - 1)) - 1


class TinyIntType(IntegralType):
    sql_name = "TINYINT"
    bits = 8


class SmallIntType(IntegralType):
    sql_name = "SMALLINT"
    bits = 16


class IntType(IntegralType):
    sql_name = "INT"
    bits = 32


class BigIntType(IntegralType):
    sql_name = "BIGINT"
    bits = 64


class FloatType(DataType):
    sql_name = "FLOAT"


class DoubleType(DataType):
    sql_name = "DOUBLE"


@_value()
class DecimalType(DataType):
    precision: int = 10
    scale: int = 0
    sql_name = "DECIMAL"

    def __init__(self, *, nullable: bool = True, precision: int = 10, scale: int = 0) -> None:
        _set(self, "nullable", nullable)
        _set(self, "precision", precision)
        _set(self, "scale", scale)
        self.__post_init__()

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return ((self.nullable, self.precision, self.scale)
                == (other.nullable, other.precision, other.scale))

    def __hash__(self) -> int:
        return hash((self.nullable, self.precision, self.scale))

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


class DateType(DataType):
    sql_name = "DATE"


@_value()
class _PrecisionType(DataType):
    """Types with a fractional-seconds precision 0..9."""

    precision: int = 0

    def __init__(self, *, nullable: bool = True, precision: int = 0) -> None:
        _set(self, "nullable", nullable)
        _set(self, "precision", precision)
        self.__post_init__()

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.nullable, self.precision) == (other.nullable, other.precision)

    def __hash__(self) -> int:
        return hash((self.nullable, self.precision))

    def __post_init__(self) -> None:
        if not 0 <= self.precision <= 9:
            raise SchemaError(
                f"{self.sql_name} precision must be between 0 and 9, got {self.precision}"
            )

    def _sql_body(self) -> str:
        return f"{self.sql_name}({self.precision})"


@_value()
class TimeType(_PrecisionType):
    precision: int = 0
    sql_name = "TIME"

    def __init__(self, *, nullable: bool = True, precision: int = 0) -> None:
        super().__init__(nullable=nullable, precision=precision)


@_value()
class TimestampType(_PrecisionType):
    precision: int = 6
    sql_name = "TIMESTAMP"

    def __init__(self, *, nullable: bool = True, precision: int = 6) -> None:
        super().__init__(nullable=nullable, precision=precision)


@_value()
class TimestampLtzType(_PrecisionType):
    precision: int = 6
    sql_name = "TIMESTAMP_LTZ"

    def __init__(self, *, nullable: bool = True, precision: int = 6) -> None:
        super().__init__(nullable=nullable, precision=precision)


@_value()
class BytesType(_LengthType):
    sql_name = "BYTES"
    _names_by_fixed = ("BINARY", "VARBINARY")

    def __init__(self, *, nullable: bool = True, length: int | None = None,
                 fixed: bool = False) -> None:
        super().__init__(nullable=nullable, length=length, fixed=fixed)


@_value()
class ArrayType(DataType):
    element: DataType
    sql_name = "ARRAY"

    def __init__(self, *, nullable: bool = True, element: DataType) -> None:
        _set(self, "nullable", nullable)
        _set(self, "element", element)

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.nullable, self.element) == (other.nullable, other.element)

    def __hash__(self) -> int:
        return hash((self.nullable, self.element))

    def _sql_body(self) -> str:
        return f"ARRAY<{self.element.sql()}>"


@_value()
class MapType(DataType):
    key: DataType
    value: DataType
    sql_name = "MAP"

    def __init__(self, *, nullable: bool = True, key: DataType, value: DataType) -> None:
        _set(self, "nullable", nullable)
        _set(self, "key", key)
        _set(self, "value", value)

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.nullable, self.key, self.value) == (other.nullable, other.key, other.value)

    def __hash__(self) -> int:
        return hash((self.nullable, self.key, self.value))

    def _sql_body(self) -> str:
        return f"MAP<{self.key.sql()}, {self.value.sql()}>"


@_value()
class AvroOnlyType(DataType):
    """A legal Avro type that no Flink or Spark column type can hold: a reference back to an
    enclosing record (recursion), or a union of several non-null types. `what` says which.

    No codec accepts it: it exists only so that the guard's structural analysis can judge
    such schemas (by their Avro encoding) instead of rejecting them.
    """

    what: str
    sql_name = "AVRO"

    def __init__(self, *, nullable: bool = True, what: str) -> None:
        _set(self, "nullable", nullable)
        _set(self, "what", what)

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.nullable, self.what) == (other.nullable, other.what)

    def __hash__(self) -> int:
        return hash((self.nullable, self.what))

    def _sql_body(self) -> str:
        return f"AVRO<{self.what}>"


def avro_only_parts(t: DataType) -> list[tuple[str, AvroOnlyType]]:
    """Every AvroOnlyType inside `t`, with its path."""
    return [(path, sub) for path, sub in walk(t) if isinstance(sub, AvroOnlyType)]


@_value()
class Field(_Value):
    """A named column of a ROW."""

    name: str
    type: DataType
    description: str | None = None

    def __init__(self, name: str, type: DataType, description: str | None = None) -> None:
        _set(self, "name", name)
        _set(self, "type", type)
        _set(self, "description", description)

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return ((self.name, self.type, self.description)
                == (other.name, other.type, other.description))

    def __hash__(self) -> int:
        return hash((self.name, self.type, self.description))

    def sql(self) -> str:
        """Flink's spelling: backquotes in the name doubled, the description as a comment."""
        name = self.name.replace("`", "``")
        comment = ""
        if self.description is not None:
            comment = " '" + self.description.replace("'", "''") + "'"
        return f"`{name}` {self.type.sql()}{comment}"


@_value()
class RowType(DataType):
    """A row: an ordered list of uniquely named fields. A table's schema is a RowType."""

    fields: tuple[Field, ...] = ()
    sql_name = "ROW"

    def __init__(self, *, nullable: bool = True, fields: tuple[Field, ...] = ()) -> None:
        _set(self, "nullable", nullable)
        _set(self, "fields", fields)
        self.__post_init__()

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.nullable, self.fields) == (other.nullable, other.fields)

    def __hash__(self) -> int:
        return hash((self.nullable, self.fields))

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
