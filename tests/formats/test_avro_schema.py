"""Avro schema derivation against Flink's AvroSchemaConverter, and Avro -> row type."""

from __future__ import annotations

import json

import pytest

from keyguard.formats.avro_schema import (
    DEFAULT_RECORD_NAME,
    canonical_form,
    fingerprint,
    from_avro_schema,
    parse_avro,
    record_full_name,
    to_avro_json,
    to_avro_schema,
)
from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    BytesType,
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

N = {"default": None}  # the `"default": null` Flink puts on every nullable field


def opt(t: object) -> list[object]:
    return ["null", t]


EVERY_TYPE = row(
    ("id", BigIntType().not_null()),
    ("s", StringType()),
    ("b", BooleanType()),
    ("ti", TinyIntType()),
    ("si", SmallIntType()),
    ("i", IntType().not_null()),
    ("f", FloatType()),
    ("d", DoubleType()),
    ("dec", DecimalType(precision=10, scale=2)),
    ("dt", DateType()),
    ("tm", TimeType(precision=3)),
    ("ts", TimestampType(precision=3)),
    ("raw", BytesType().not_null()),
    ("arr", ArrayType(element=IntType())),
    ("m", MapType(key=StringType().not_null(), value=StringType())),
    ("r", RowType(fields=(Field("x", IntType().not_null()), Field("y", StringType())))),
    ("rows", ArrayType(element=RowType(fields=(Field("z", DoubleType()),)), nullable=False)),
)

# Expected from flink-formats/flink-avro/src/main/java/org/apache/flink/formats/avro/typeutils/
# AvroSchemaConverter.java (convertToSchema(LogicalType, String rowName, boolean), Flink 2.x):
# record name "org.apache.flink.avro.generated.record", nested rows "<rowName>_<field>", ROWs in
# an ARRAY named after the array's field, nullable -> ["null", T] with "default": null,
# TINYINT/SMALLINT -> int, DECIMAL -> bytes+decimal, TIME -> time-millis, TIMESTAMP(3) ->
# timestamp-millis (legacy mapping, the default). Key order is Avro Java's Schema.toString(), as
# in the expected strings of Flink's AvroSchemaConverterTest.
EVERY_TYPE_SCHEMA = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.flink.avro.generated",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "s", "type": opt("string"), **N},
        {"name": "b", "type": opt("boolean"), **N},
        {"name": "ti", "type": opt("int"), **N},
        {"name": "si", "type": opt("int"), **N},
        {"name": "i", "type": "int"},
        {"name": "f", "type": opt("float"), **N},
        {"name": "d", "type": opt("double"), **N},
        {"name": "dec", "type": opt({"type": "bytes", "logicalType": "decimal", "precision": 10,
                                     "scale": 2}), **N},
        {"name": "dt", "type": opt({"type": "int", "logicalType": "date"}), **N},
        {"name": "tm", "type": opt({"type": "int", "logicalType": "time-millis"}), **N},
        {"name": "ts", "type": opt({"type": "long", "logicalType": "timestamp-millis"}), **N},
        {"name": "raw", "type": "bytes"},
        {"name": "arr", "type": opt({"type": "array", "items": opt("int")}), **N},
        {"name": "m", "type": opt({"type": "map", "values": opt("string")}), **N},
        {"name": "r", "type": opt({
            "type": "record", "name": "record_r",
            "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": opt("string"), **N}],
        }), **N},
        {"name": "rows", "type": {"type": "array", "items": opt({
            "type": "record", "name": "record_rows",
            "fields": [{"name": "z", "type": opt("double"), **N}],
        })}},
    ],
}


def test_every_type_matches_flink() -> None:
    schema = to_avro_schema(EVERY_TYPE)
    assert schema == EVERY_TYPE_SCHEMA
    # Same key order as Avro Java prints, so the registered text is Flink's.
    assert to_avro_json(schema) == json.dumps(EVERY_TYPE_SCHEMA, separators=(",", ":"))
    parse_avro(schema)  # and fastavro accepts it


def test_flink_nested_row_naming() -> None:
    """AvroSchemaConverterTest.testRowTypeAvroSchemaConversion, expected text verbatim."""
    t = row(
        ("row1", RowType(fields=(Field("a", StringType()),))),
        ("row2", RowType(fields=(Field("b", StringType()),))),
        ("row3", RowType(fields=(Field("row3", RowType(fields=(Field("c", StringType()),))),))),
    )

    def rec(name: str, fields: list[object]) -> object:
        return opt({"type": "record", "name": name, "fields": fields})

    expected = {
        "type": "record", "name": "record", "namespace": "org.apache.flink.avro.generated",
        "fields": [
            {"name": "row1", "type": rec("record_row1", [{"name": "a", "type": opt("string"),
                                                          **N}]), **N},
            {"name": "row2", "type": rec("record_row2", [{"name": "b", "type": opt("string"),
                                                          **N}]), **N},
            {"name": "row3", "type": rec("record_row3", [
                {"name": "row3", "type": rec("record_row3_row3", [
                    {"name": "c", "type": opt("string"), **N}]), **N}]), **N},
        ],
    }
    assert to_avro_schema(t) == expected


def test_top_level_nullability() -> None:
    t = row(("a", IntType().not_null()))
    assert to_avro_schema(t)["type"] == "record"
    nullable = to_avro_schema(t.with_nullable(True))
    assert nullable[0] == "null" and nullable[1]["name"] == "record"


def test_record_name_and_namespace() -> None:
    t = row(("a", IntType().not_null()), ("r", RowType(fields=(Field("b", IntType()),))))
    s = to_avro_schema(t, record_name="Order", namespace="com.shop")
    assert (s["name"], s["namespace"]) == ("Order", "com.shop")
    assert s["fields"][1]["type"][1]["name"] == "Order_r"
    assert "namespace" not in s["fields"][1]["type"][1]
    assert to_avro_schema(t, record_name="a.b.Key")["namespace"] == "a.b"
    plain = to_avro_schema(t, record_name="Key")
    assert "namespace" not in plain and record_full_name(plain) == "Key"
    assert record_full_name(to_avro_schema(t)) == DEFAULT_RECORD_NAME


@pytest.mark.parametrize(
    ("t", "logical"),
    [
        (TimestampType(precision=0), "local-timestamp-millis"),
        (TimestampType(precision=3), "local-timestamp-millis"),
        (TimestampType(precision=6), "local-timestamp-micros"),
        (TimestampType(precision=9), "local-timestamp-nanos"),
        (TimestampLtzType(precision=3), "timestamp-millis"),
        (TimestampLtzType(precision=6), "timestamp-micros"),
        (TimestampLtzType(precision=9), "timestamp-nanos"),
    ],
)
def test_non_legacy_timestamp_mapping(t: object, logical: str) -> None:
    s = to_avro_schema(row(("ts", t.not_null())), legacy_timestamp_mapping=False)  # type: ignore[attr-defined]
    assert s["fields"][0]["type"] == {"type": "long", "logicalType": logical}


def test_arrays_and_maps_keep_the_legacy_mapping() -> None:
    """Flink's ARRAY/MAP branches call the overload that defaults to the legacy mapping."""
    t = row(("a", ArrayType(element=TimestampType(precision=3).not_null()).not_null()))
    s = to_avro_schema(t, legacy_timestamp_mapping=False)
    assert s["fields"][0]["type"]["items"] == {"type": "long", "logicalType": "timestamp-millis"}
    with pytest.raises(UnsupportedTypeError, match=r"a\[\]"):
        to_avro_schema(row(("a", ArrayType(element=TimestampType(precision=6)))),
                       legacy_timestamp_mapping=False)


@pytest.mark.parametrize(
    ("t", "message"),
    [
        (TimestampType(precision=6), "TIMESTAMP precision up to 3"),
        (TimestampLtzType(precision=3), "no Avro type for TIMESTAMP_LTZ"),
        (TimeType(precision=6), "TIME precision up to 3"),
        (MapType(key=IntType(), value=IntType()), "string keys only"),
    ],
)
def test_what_flink_cannot_derive(t: object, message: str) -> None:
    with pytest.raises(UnsupportedTypeError, match=message) as info:
        to_avro_schema(row(("c", t)))  # type: ignore[arg-type]
    assert "column 'c'" in str(info.value)


def test_legacy_error_says_what_to_do() -> None:
    with pytest.raises(UnsupportedTypeError) as info:
        to_avro_schema(row(("ts", TimestampType(precision=6))))
    assert info.value.hint and "timestamp_mapping.legacy=false" in info.value.hint


def test_round_trip_through_avro() -> None:
    """As Flink's testDataTypeToSchemaToDataType*: derivable types come back unchanged."""
    t = row(*[(f.name, f.type) for f in EVERY_TYPE.fields if f.name not in ("ti", "si")])
    assert from_avro_schema(to_avro_schema(t)) == t
    ltz = row(("a", TimestampLtzType(precision=3)), ("b", TimestampType(precision=6)))
    assert from_avro_schema(to_avro_schema(ltz, legacy_timestamp_mapping=False),
                            legacy_timestamp_mapping=False) == ltz


def test_registered_schema_to_row_type() -> None:
    schema = {
        "type": "record", "name": "User", "namespace": "ex",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["R", "G"]}},
            {"name": "color2", "type": ["null", "Color"]},
            {"name": "hash", "type": {"type": "fixed", "name": "H", "size": 4}},
            {"name": "amount", "type": {"type": "fixed", "name": "A", "size": 8,
                                        "logicalType": "decimal", "precision": 12, "scale": 3}},
            {"name": "tags", "type": {"type": "map", "values": "long"}},
            {"name": "at", "type": [{"type": "long", "logicalType": "timestamp-micros"}, "null"]},
            {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
            {"name": "tmu", "type": {"type": "long", "logicalType": "time-micros"}},
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        ],
    }
    t = from_avro_schema(json.dumps(schema))
    assert isinstance(t, RowType) and not t.nullable
    types = {f.name: f.type for f in t.fields}
    assert types["name"] == StringType(nullable=False)
    assert types["color"] == StringType(nullable=False)
    assert types["color2"] == StringType()
    assert types["hash"] == BytesType(nullable=False)
    assert types["amount"] == DecimalType(precision=12, scale=3, nullable=False)
    assert types["tags"] == MapType(key=StringType(nullable=False),
                                    value=BigIntType(nullable=False), nullable=False)
    assert types["at"] == TimestampType(precision=6)
    assert types["local"] == TimestampType(precision=3, nullable=False)
    assert types["tmu"] == TimeType(precision=6, nullable=False)
    assert types["id"] == StringType(nullable=False)
    legacy_off = from_avro_schema(schema, legacy_timestamp_mapping=False)
    assert legacy_off.field("at").type == TimestampLtzType(precision=6)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ('["null", "int", "string"]', "has no column type"),
        ('{"type": "record", "name": "R", "fields": [{"name": "n", "type": "null"}]}',
         "null type at 'n'"),
        ("{not json", "not a valid Avro schema"),
        ('{"type": "record", "name": "R"}', "needs .fields."),
    ],
)
def test_schemas_without_a_row_type(schema: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        from_avro_schema(schema)


def test_canonical_form_ignores_formatting_and_docs() -> None:
    a = to_avro_json(to_avro_schema(EVERY_TYPE))
    b = json.dumps(json.loads(a), indent=2, sort_keys=True)
    doc = json.loads(a)
    doc["doc"] = "orders"
    assert canonical_form(a) == canonical_form(b) == canonical_form(doc)
    assert fingerprint(a) == fingerprint(b)
    other = to_avro_schema(EVERY_TYPE, record_name="other")
    assert canonical_form(other) != canonical_form(a)
    assert canonical_form('"string"') == '"string"'
