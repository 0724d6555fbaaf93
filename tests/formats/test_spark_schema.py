from __future__ import annotations

import pytest

T = pytest.importorskip("pyspark.sql.types")

from keyguard.formats.errors import SchemaError, UnsupportedTypeError  # noqa: E402
from keyguard.formats.spark_schema import (  # noqa: E402
    from_spark_ddl,
    from_spark_schema,
    from_spark_type,
    to_spark_schema,
    to_spark_type,
    with_declared,
)
from keyguard.formats.sqltypes import parse_columns, parse_type  # noqa: E402
from keyguard.formats.types import RowType  # noqa: E402


@pytest.mark.parametrize(
    ("spark", "sql"),
    [
        (T.StringType(), "STRING"),
        (T.StringType("UTF8_LCASE"), "STRING"),
        (T.VarcharType(10), "VARCHAR(10)"),
        (T.CharType(2), "CHAR(2)"),
        (T.BooleanType(), "BOOLEAN"),
        (T.ByteType(), "TINYINT"),
        (T.ShortType(), "SMALLINT"),
        (T.IntegerType(), "INT"),
        (T.LongType(), "BIGINT"),
        (T.FloatType(), "FLOAT"),
        (T.DoubleType(), "DOUBLE"),
        (T.DecimalType(10, 2), "DECIMAL(10, 2)"),
        (T.DecimalType(38, 0), "DECIMAL(38, 0)"),
        (T.DateType(), "DATE"),
        (T.TimestampNTZType(), "TIMESTAMP(6)"),
        (T.TimestampType(), "TIMESTAMP_LTZ(6)"),
        (T.BinaryType(), "BYTES"),
        (T.ArrayType(T.IntegerType(), True), "ARRAY<INT>"),
        (T.ArrayType(T.IntegerType(), False), "ARRAY<INT NOT NULL>"),
        (T.MapType(T.StringType(), T.LongType(), True), "MAP<STRING NOT NULL, BIGINT>"),
        (
            T.MapType(T.StringType(), T.LongType(), False),
            "MAP<STRING NOT NULL, BIGINT NOT NULL>",
        ),
        (
            T.StructType(
                [
                    T.StructField("a", T.IntegerType(), False),
                    T.StructField("b c", T.StringType(), True),
                ]
            ),
            "ROW<a INT NOT NULL, `b c` STRING>",
        ),
    ],
)
def test_from_spark_type(spark: T.DataType, sql: str) -> None:
    assert from_spark_type(spark) == parse_type(sql)
    assert from_spark_type(spark, nullable=False) == parse_type(sql).not_null()


def test_from_spark_schema_is_a_not_null_table_row() -> None:
    schema = T.StructType(
        [
            T.StructField("user_region", T.StringType(), False),
            T.StructField("pv", T.LongType(), True),
            T.StructField("ts", T.TimestampType(), True, {"comment": "event time"}),
        ]
    )
    got = from_spark_schema(schema)
    assert got == parse_columns(
        "user_region STRING NOT NULL, pv BIGINT, ts TIMESTAMP_LTZ(6) COMMENT 'event time'"
    )
    assert not got.nullable
    assert got.field("ts").description == "event time"


@pytest.mark.parametrize(
    ("spark", "path"),
    [
        (T.StructType([T.StructField("d", T.DayTimeIntervalType())]), "d"),
        (
            T.StructType([T.StructField("s", T.StructType([T.StructField("v", T.VariantType())]))]),
            "s.v",
        ),
        (T.StructType([T.StructField("a", T.ArrayType(T.YearMonthIntervalType()))]), "a[]"),
        (
            T.StructType([T.StructField("m", T.MapType(T.StringType(), T.CalendarIntervalType()))]),
            "m{value}",
        ),
        (T.StructType([T.StructField("n", T.NullType())]), "n"),
    ],
)
def test_unsupported_types_name_the_column(spark: T.StructType, path: str) -> None:
    with pytest.raises(UnsupportedTypeError) as info:
        from_spark_schema(spark)
    assert f"column '{path}'" in info.value.message
    assert info.value.hint and ("cast" in info.value.hint or "type" in info.value.hint)


def test_unsupported_top_level_hint_is_runnable_code() -> None:
    schema = T.StructType([T.StructField("dur", T.DayTimeIntervalType())])
    with pytest.raises(UnsupportedTypeError) as info:
        from_spark_schema(schema)
    assert "F.col('dur').cast('string')" in (info.value.hint or "")


def test_from_spark_schema_rejects_non_struct() -> None:
    with pytest.raises(SchemaError):
        from_spark_schema(T.IntegerType())  # type: ignore[arg-type]


def test_to_spark_schema() -> None:
    row = parse_columns(
        "id BIGINT NOT NULL, name STRING, amount DECIMAL(12, 2), ts TIMESTAMP(3), "
        "at TIMESTAMP_LTZ(3) NOT NULL, day DATE, raw BYTES, flag BOOLEAN, t TINYINT, s SMALLINT, "
        "i INT, f FLOAT, d DOUBLE, tags ARRAY<STRING NOT NULL>, "
        "attrs MAP<STRING, INT NOT NULL>, addr ROW<city STRING NOT NULL, zip INT>"
    )
    got = to_spark_schema(row)
    expected = T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("name", T.StringType(), True),
            T.StructField("amount", T.DecimalType(12, 2), True),
            T.StructField("ts", T.TimestampNTZType(), True),
            T.StructField("at", T.TimestampType(), False),
            T.StructField("day", T.DateType(), True),
            T.StructField("raw", T.BinaryType(), True),
            T.StructField("flag", T.BooleanType(), True),
            T.StructField("t", T.ByteType(), True),
            T.StructField("s", T.ShortType(), True),
            T.StructField("i", T.IntegerType(), True),
            T.StructField("f", T.FloatType(), True),
            T.StructField("d", T.DoubleType(), True),
            T.StructField("tags", T.ArrayType(T.StringType(), False), True),
            T.StructField("attrs", T.MapType(T.StringType(), T.IntegerType(), False), True),
            T.StructField(
                "addr",
                T.StructType(
                    [
                        T.StructField("city", T.StringType(), False),
                        T.StructField("zip", T.IntegerType(), True),
                    ]
                ),
                True,
            ),
        ]
    )
    assert got == expected


def test_round_trip_through_spark() -> None:
    """model -> Spark -> model is the identity when precisions are Spark's (6), keys NOT NULL."""
    row = parse_columns(
        "a ARRAY<ROW<x DECIMAL(38, 10) NOT NULL, y TIMESTAMP(6)>> NOT NULL, "
        "m MAP<STRING NOT NULL, ARRAY<TIMESTAMP_LTZ(6)>>, b BYTES"
    )
    assert from_spark_schema(to_spark_schema(row)) == row


def test_descriptions_travel_as_comments() -> None:
    row = parse_columns("a INT COMMENT 'the a'")
    spark = to_spark_schema(row)
    assert spark.fields[0].metadata == {"comment": "the a"}
    assert from_spark_schema(spark) == row


def test_time_type_if_spark_has_it() -> None:
    if not hasattr(T, "TimeType"):
        pytest.skip("this Spark has no TimeType")
    assert to_spark_type(parse_type("TIME(3)")) == T.TimeType(3)
    assert from_spark_type(T.TimeType(6)) == parse_type("TIME(6)")


def test_from_spark_ddl_without_a_session_says_so() -> None:
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        pytest.skip("a SparkSession is active")
    with pytest.raises(SchemaError, match="active SparkSession"):
        from_spark_ddl("a INT")


def test_nested_struct_is_row_type() -> None:
    got = from_spark_type(T.StructType([T.StructField("a", T.IntegerType())]))
    assert isinstance(got, RowType)
    assert got.nullable


def test_a_declared_table_gives_the_dataframe_its_time_precisions() -> None:
    """Spark declares no TIME or TIMESTAMP precision: the Flink table's go on each column of
    the same name and kind, nested too; the DataFrame's nullability and other columns stay."""
    frame = from_spark_schema(T.StructType([
        T.StructField("k", T.LongType(), False),
        T.StructField("t", T.TimestampNTZType(), False),
        T.StructField("l", T.TimestampType()),
        T.StructField("a", T.ArrayType(T.TimestampNTZType())),
        T.StructField("r", T.StructType([T.StructField("x", T.TimestampType())])),
        T.StructField("m", T.MapType(T.StringType(), T.TimestampNTZType())),
        T.StructField("kind", T.TimestampNTZType()),
        T.StructField("free", T.TimestampNTZType()),
    ]))
    declared = parse_columns(
        "k BIGINT, t TIMESTAMP(0), l TIMESTAMP_LTZ(3), a ARRAY<TIMESTAMP(1)>, "
        "r ROW<x TIMESTAMP_LTZ(9)>, m MAP<STRING, TIMESTAMP(2)>, kind TIMESTAMP_LTZ(0)")
    got = with_declared(frame, declared)
    assert got.sql() == (
        "ROW<`k` BIGINT NOT NULL, `t` TIMESTAMP(0) NOT NULL, `l` TIMESTAMP_LTZ(3), "
        "`a` ARRAY<TIMESTAMP(1)>, `r` ROW<`x` TIMESTAMP_LTZ(9)>, "
        "`m` MAP<STRING NOT NULL, TIMESTAMP(2)>, `kind` TIMESTAMP(6), `free` TIMESTAMP(6)> "
        "NOT NULL")
    assert with_declared(frame, None) is frame
