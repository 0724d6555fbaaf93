from __future__ import annotations

import pytest
from hypothesis import given, settings
from strategies import data_types, row_types

from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.sqltypes import TypeSyntaxError, parse_columns, parse_type
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
    row,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("STRING", StringType()),
        ("string not null", StringType(nullable=False)),
        ("VARCHAR(20)", StringType(length=20)),
        ("CHAR", StringType(length=1, fixed=True)),
        ("CHAR(3) NOT NULL", StringType(nullable=False, length=3, fixed=True)),
        ("VARBINARY(8)", BytesType(length=8)),
        ("BINARY", BytesType(length=1, fixed=True)),
        ("VARCHAR(2147483647)", StringType()),
        ("VARBINARY(2147483647)", BytesType()),
        ("BYTES", BytesType()),
        ("BOOLEAN", BooleanType()),
        ("TINYINT", TinyIntType()),
        ("SMALLINT", SmallIntType()),
        ("INT", IntType()),
        ("INTEGER NOT NULL", IntType(nullable=False)),
        ("BIGINT NULL", BigIntType()),
        ("FLOAT", FloatType()),
        ("DOUBLE", DoubleType()),
        ("DOUBLE PRECISION", DoubleType()),
        ("DECIMAL", DecimalType(precision=10, scale=0)),
        ("DECIMAL(10, 2) NOT NULL", DecimalType(precision=10, scale=2, nullable=False)),
        ("DEC(5)", DecimalType(precision=5, scale=0)),
        ("NUMERIC(38,38)", DecimalType(precision=38, scale=38)),
        ("DATE", DateType()),
        ("TIME", TimeType(precision=0)),
        ("TIME(3) WITHOUT TIME ZONE", TimeType(precision=3)),
        ("TIMESTAMP", TimestampType(precision=6)),
        ("TIMESTAMP(3)", TimestampType(precision=3)),
        ("TIMESTAMP(9) WITHOUT TIME ZONE", TimestampType(precision=9)),
        ("TIMESTAMP WITH LOCAL TIME ZONE", TimestampLtzType(precision=6)),
        (
            "TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL",
            TimestampLtzType(precision=3, nullable=False),
        ),
        ("TIMESTAMP_LTZ(0)", TimestampLtzType(precision=0)),
        ("ARRAY<INT NOT NULL>", ArrayType(element=IntType(nullable=False))),
        ("INT ARRAY", ArrayType(element=IntType())),
        (
            "INT NOT NULL ARRAY NOT NULL",
            ArrayType(element=IntType(nullable=False), nullable=False),
        ),
        ("MAP<STRING, BIGINT>", MapType(key=StringType(), value=BigIntType())),
        (
            "ARRAY<ROW<a INT, `b c` STRING>>",
            ArrayType(element=RowType(fields=(Field("a", IntType()), Field("b c", StringType())))),
        ),
        ("ROW(a INT, b STRING)", RowType(fields=(Field("a", IntType()), Field("b", StringType())))),
        ("ROW<>", RowType()),
        ("ROW<`x``y` INT> NOT NULL", RowType(fields=(Field("x`y", IntType()),), nullable=False)),
        (
            "ROW<a INT 'the a', b: STRING>",
            RowType(fields=(Field("a", IntType(), "the a"), Field("b", StringType()))),
        ),
        (
            "  map < string ,\n array<date> >  ",
            MapType(key=StringType(), value=ArrayType(element=DateType())),
        ),
    ],
)
def test_parse_type(text: str, expected: DataType) -> None:
    assert parse_type(text) == expected


def test_parse_columns() -> None:
    got = parse_columns("user_region STRING, pv BIGINT NOT NULL, ts TIMESTAMP(3)")
    assert got == row(
        ("user_region", StringType()),
        ("pv", BigIntType(nullable=False)),
        ("ts", TimestampType(precision=3)),
    )
    assert not got.nullable


def test_parse_columns_keywords_as_names_and_comments() -> None:
    got = parse_columns("date DATE COMMENT 'the day', `select` INT, `my col` ROW<x INT>")
    assert got.names == ["date", "select", "my col"]
    assert got.fields[0].description == "the day"
    assert parse_columns("") == row()


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("ARRAY<INT", 9, "expected '>'"),
        ("MAP<STRING>", 10, "expected ','"),
        ("DECIMAL(40, 2)", 8, "precision must be between 1 and 38"),
        ("DECIMAL(5, 6)", 8, "scale"),
        ("TIMESTAMP(10)", 10, "precision must be between 0 and 9"),
        ("FOO", 0, "unknown type 'FOO'"),
        ("INT NOT", 7, "expected NULL"),
        ("STRING #", 7, "unexpected character '#'"),
        ("ROW<a INT, a STRING>", 11, "duplicate field name 'a'"),
        ("ROW<`a INT>", 4, "unterminated quote"),
        ("INT INT", 4, "after a complete type"),
        ("VARCHAR(0)", 8, "length must be at least 1"),
        ("CHAR(2147483648)", 5, "CHAR length must be between 1 and 2147483647"),
        ("ROW<a>", 5, "expected a type"),
    ],
)
def test_errors_point_at_the_text(text: str, position: int, fragment: str) -> None:
    with pytest.raises(TypeSyntaxError) as info:
        parse_type(text)
    err = info.value
    assert isinstance(err, SchemaError)
    assert err.position == position
    assert fragment in err.message
    # The message shows the text with a caret under the offending character.
    lines = err.message.splitlines()
    assert lines[-1].index("^") - 2 == position


@pytest.mark.parametrize(
    "text",
    ["INTERVAL DAY", "INT MULTISET", "MULTISET<INT>", "RAW('x', 'y')", "TIMESTAMP WITH TIME ZONE"],
)
def test_unsupported_types(text: str) -> None:
    with pytest.raises(UnsupportedTypeError) as info:
        parse_type(text)
    assert info.value.hint


@pytest.mark.parametrize("text", ["REAL", "real", "ARRAY<REAL>", "ROW<x REAL NOT NULL>"])
def test_real_is_refused_as_flink_2_3_refuses_it(text: str) -> None:
    """Flink 2.3's parser takes REAL and its planner refuses it: "Type is not supported:
    REAL" (FLOAT and DOUBLE PRECISION pass; FLOAT(p), FLOAT4 and FLOAT8 do not parse)."""
    with pytest.raises(UnsupportedTypeError, match="Type is not supported: REAL") as info:
        parse_type(text)
    assert "FLOAT" in (info.value.hint or "")
    assert parse_type("DOUBLE PRECISION") == parse_type("DOUBLE")
    for other in ("FLOAT(5)", "FLOAT4", "FLOAT8"):
        with pytest.raises(SchemaError):
            parse_type(other)


def test_column_list_rejects_constraints_with_a_hint() -> None:
    with pytest.raises(TypeSyntaxError) as info:
        parse_columns("a INT, PRIMARY KEY (a) NOT ENFORCED")
    assert info.value.position == 7
    assert "primary-key option" in (info.value.hint or "")


# --- round trip -------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(data_types())
def test_round_trip(t: DataType) -> None:
    assert parse_type(t.sql()) == t


@settings(max_examples=60, deadline=None)
@given(row_types())
def test_round_trip_columns(t: DataType) -> None:
    assert isinstance(t, RowType)
    text = ", ".join(f.sql() for f in t.fields)
    assert parse_columns(text) == t.with_nullable(False)


@pytest.mark.parametrize("text", ["CHAR(2)", "VARCHAR(3) NOT NULL", "BINARY(16)",
                                  "VARBINARY(1)", "ARRAY<CHAR(3)>", "ROW<`c` CHAR(2), `b` BYTES>"])
def test_lengths_are_kept_and_spelled_as_flink_does(text: str) -> None:
    t = parse_type(text)
    assert t.sql() == text
    assert parse_type(t.sql()) == t
    assert t != parse_type(text.replace("(3)", "(4)").replace("(2)", "(5)")
                           .replace("(16)", "(15)").replace("(1)", "(9)"))
