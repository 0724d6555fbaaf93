"""Spark schemas <-> the logical type model.

The Spark writer derives the table's row type from the DataFrame, and the reader hands Spark a
StructType for what it decodes. Spark's TimestampType is an instant (TIMESTAMP_LTZ);
TimestampNTZType is a wall-clock time (TIMESTAMP). Both carry microseconds, so they map to
precision 6. Spark map keys are never null, so maps from Spark have NOT NULL keys.

pyspark is imported lazily: importing this module never needs it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from keyguard.formats.errors import SchemaError, UnsupportedTypeError
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

if TYPE_CHECKING:
    from pyspark.sql import types as T

__all__ = [
    "from_spark_ddl",
    "from_spark_schema",
    "from_spark_type",
    "to_spark_schema",
    "to_spark_type",
    "with_declared",
]


def from_spark_schema(schema: T.StructType) -> RowType:
    """A DataFrame's schema as a table row type (NOT NULL at the top, like every table row)."""
    from pyspark.sql import types as T

    if not isinstance(schema, T.StructType):
        raise SchemaError(f"expected a Spark StructType, got {schema.simpleString()}")
    row = from_spark_type(schema)
    assert isinstance(row, RowType)
    return row.with_nullable(False)


def from_spark_type(dt: T.DataType, nullable: bool = True, path: str = "") -> DataType:
    """One Spark type; `path` names the column in errors (`a.b`, `a[]`, `m{value}`)."""
    from pyspark.sql import types as T

    simple = _simple_from_spark(dt)
    if simple is not None:
        return simple.with_nullable(nullable)
    if isinstance(dt, T.DecimalType):
        return DecimalType(precision=dt.precision, scale=dt.scale, nullable=nullable)
    if isinstance(dt, T.ArrayType):
        element = from_spark_type(dt.elementType, dt.containsNull, f"{path}[]")
        return ArrayType(element=element, nullable=nullable)
    if isinstance(dt, T.MapType):
        key = from_spark_type(dt.keyType, False, f"{path}{{key}}")
        value = from_spark_type(dt.valueType, dt.valueContainsNull, f"{path}{{value}}")
        return MapType(key=key, value=value, nullable=nullable)
    if isinstance(dt, T.StructType):
        fields = tuple(
            Field(
                f.name,
                from_spark_type(f.dataType, f.nullable, f"{path}.{f.name}" if path else f.name),
                (f.metadata or {}).get("comment"),
            )
            for f in dt.fields
        )
        return RowType(fields=fields, nullable=nullable)
    time_type = getattr(T, "TimeType", None)  # Spark 4.1+
    if time_type is not None and isinstance(dt, time_type):
        return TimeType(precision=dt.precision, nullable=nullable)
    raise _unsupported(dt, path)


def _simple_from_spark(dt: T.DataType) -> DataType | None:
    from pyspark.sql import types as T

    # TimestampNTZType is not a TimestampType subclass; both are checked explicitly below.
    table: list[tuple[type, type[DataType]]] = [
        (T.StringType, StringType),
        (T.BooleanType, BooleanType),
        (T.ByteType, TinyIntType),
        (T.ShortType, SmallIntType),
        (T.IntegerType, IntType),
        (T.LongType, BigIntType),
        (T.FloatType, FloatType),
        (T.DoubleType, DoubleType),
        (T.DateType, DateType),
        (T.BinaryType, BytesType),
    ]
    if isinstance(dt, (T.CharType, T.VarcharType)):  # written as Flink's CHAR(n), VARCHAR(n)
        return StringType(length=dt.length, fixed=isinstance(dt, T.CharType))
    for spark_cls, model_cls in table:
        if isinstance(dt, spark_cls):
            return model_cls()
    if isinstance(dt, T.TimestampNTZType):
        return TimestampType(precision=6)
    if isinstance(dt, T.TimestampType):
        return TimestampLtzType(precision=6)
    return None


def _unsupported(dt: T.DataType, path: str) -> UnsupportedTypeError:
    from pyspark.sql import types as T

    where = f"column '{path}'" if path else "the schema"
    top = re.split(r"[.\[{]", path, maxsplit=1)[0]
    if top != path:
        how = f"rebuild the enclosing column '{top}' with the part cast (F.transform, F.struct)"
    else:
        how = f"F.col('{path}').cast('string')"
    if isinstance(dt, (T.DayTimeIntervalType, T.YearMonthIntervalType, T.CalendarIntervalType)):
        hint = f"cast it before writing, e.g. {how}, or store a number of seconds (BIGINT)"
    elif isinstance(dt, T.NullType):
        hint = "give it a type, e.g. F.lit(None).cast('string')"
    elif isinstance(dt, T.UserDefinedType):
        hint = f"convert it to its SQL type ({dt.sqlType().simpleString()}) before writing"
    else:
        hint = f"cast it to a supported type before writing, e.g. {how}"
    return UnsupportedTypeError(
        f"{where} has Spark type {dt.simpleString()}, which keyguard cannot write to Kafka "
        "(supported: string, boolean, tinyint..bigint, float, double, decimal, date, "
        "timestamp, timestamp_ntz, binary, array, map, struct)",
        hint=hint,
    )


def to_spark_schema(row: RowType) -> T.StructType:
    """The StructType a reader declares for rows of `row`."""
    st = to_spark_type(row)
    from pyspark.sql import types as T

    assert isinstance(st, T.StructType)
    return st


def to_spark_type(t: DataType, path: str = "") -> T.DataType:
    """One model type as a Spark type (nullability goes to the enclosing field/array/map).

    TIMESTAMP(p) and TIMESTAMP_LTZ(p) become Spark's microsecond types whatever p is; a map
    key's nullability has no Spark counterpart (Spark keys are never null).
    """
    from pyspark.sql import types as T

    simple: dict[type[DataType], type[T.DataType]] = {
        StringType: T.StringType,
        BooleanType: T.BooleanType,
        TinyIntType: T.ByteType,
        SmallIntType: T.ShortType,
        IntType: T.IntegerType,
        BigIntType: T.LongType,
        FloatType: T.FloatType,
        DoubleType: T.DoubleType,
        DateType: T.DateType,
        TimestampType: T.TimestampNTZType,
        TimestampLtzType: T.TimestampType,
        BytesType: T.BinaryType,
    }
    spark_cls = simple.get(type(t))
    if spark_cls is not None:
        return spark_cls()
    if isinstance(t, DecimalType):
        return T.DecimalType(t.precision, t.scale)
    if isinstance(t, TimeType):
        time_type = getattr(T, "TimeType", None)
        if time_type is None:
            raise UnsupportedTypeError(
                f"column '{path}' is {t.sql()}, but this Spark version has no TIME type",
                hint="use Spark 4.1 or later, or read the column as STRING",
            )
        return time_type(min(t.precision, 6))
    if isinstance(t, ArrayType):
        return T.ArrayType(to_spark_type(t.element, f"{path}[]"), t.element.nullable)
    if isinstance(t, MapType):
        return T.MapType(
            to_spark_type(t.key, f"{path}{{key}}"),
            to_spark_type(t.value, f"{path}{{value}}"),
            t.value.nullable,
        )
    if isinstance(t, RowType):
        return T.StructType(
            [
                T.StructField(
                    f.name,
                    to_spark_type(f.type, f"{path}.{f.name}" if path else f.name),
                    f.type.nullable,
                    {"comment": f.description} if f.description else None,
                )
                for f in t.fields
            ]
        )
    raise UnsupportedTypeError(f"column '{path}' has type {t.sql()}, which Spark cannot hold")


def from_spark_ddl(ddl: str) -> RowType:
    """A Spark DDL column list (`a INT, b STRING`) as a row type.

    Spark parses DDL in the JVM, so this needs an active SparkSession; without one, use
    `keyguard.formats.sqltypes.parse_columns` (Flink's spelling, which differs from Spark's for
    TIMESTAMP: in Spark it is an instant, in Flink a wall-clock time).
    """
    from pyspark.sql import types as T

    try:
        dt = T.DataType.fromDDL(ddl)
    except Exception as e:
        if "SESSION_OR_CONTEXT_NOT_EXISTS" in str(e):
            raise SchemaError(
                "parsing Spark DDL needs an active SparkSession",
                hint="start one first, or give the schema in Flink SQL (keyguard.formats.sqltypes)",
            ) from e
        raise SchemaError(f"cannot parse Spark DDL {ddl!r}: {e}") from e
    if not isinstance(dt, T.StructType):
        raise SchemaError(
            f"Spark DDL {ddl!r} is a single type, not a column list",
            hint="name the columns, e.g. 'id BIGINT, name STRING'",
        )
    return from_spark_schema(dt)


_TEMPORAL = (TimeType, TimestampType, TimestampLtzType)


def with_declared(table: RowType, declared: RowType | None) -> RowType:
    """`table` (a DataFrame's columns: Spark keeps microseconds and declares no TIME or
    TIMESTAMP precision, and no CHAR, VARCHAR, BINARY or VARBINARY length) with the precision
    `declared` (the Flink table) gives each TIME, TIMESTAMP and TIMESTAMP_LTZ, and the length
    it gives each string and bytes column, of the same name and kind, nested ones too;
    whatever else differs (nullability) stays the DataFrame's.

    The codecs then write what Flink writes once its INSERT has cast a value to the column's
    type (the cast truncates: 12:00:00.999999 is 12:00:00 in a TIMESTAMP(0); lengths cut and
    pad: `keyguard.formats.lengths`) and read as Flink's readers read that type."""
    if declared is None:
        return table
    out = _declared(table, declared)
    assert isinstance(out, RowType)
    return out


def _declared(t: DataType, d: DataType) -> DataType:
    if isinstance(t, _TEMPORAL) and type(d) is type(t):
        return t.replace(precision=d.precision)  # nullability stays the DataFrame's
    if isinstance(t, (StringType, BytesType)) and type(d) is type(t):
        assert isinstance(d, (StringType, BytesType))
        return t.replace(length=d.length, fixed=d.fixed)
    if isinstance(t, RowType) and isinstance(d, RowType):
        by_name = {f.name: f.type for f in d.fields}
        return t.replace(fields=tuple(
            Field(f.name, _declared(f.type, by_name[f.name]), f.description)
            if f.name in by_name else f for f in t.fields))
    if isinstance(t, ArrayType) and isinstance(d, ArrayType):
        return t.replace(element=_declared(t.element, d.element))
    if isinstance(t, MapType) and isinstance(d, MapType):
        return t.replace(key=_declared(t.key, d.key), value=_declared(t.value, d.value))
    return t
