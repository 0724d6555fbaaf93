"""Regenerate golden.jsonl (the bytes Apache Flink 2.3 writes for each case in CASES) and
golden_read.jsonl (what Flink 2.3's csv reader makes of each record in READ_CASES).

Not run by the test suite. Needs PyFlink 2.3 and Java 17 in a separate venv:

    python3 -m venv ../flinkvenv && ../flinkvenv/bin/pip install apache-flink==2.3.0
    ../flinkvenv/bin/python tests/formats/data/flink_golden/capture.py

Each row goes through the format's own SerializationSchema (`JsonRowDataSerializationSchema`,
`CsvRowDataSerializationSchema`, `RawFormatSerializationSchema`, the classes upsert-kafka calls
for keys and values), built in the JVM through PyFlink's Java gateway with the options wired as
the format factories wire them (an option that is not set is not applied). Rows of CHAR(n),
VARCHAR(n), BINARY(n) and VARBINARY(n) columns are first cast to those types by Flink's SQL, as
an INSERT into such a table casts them (`_cast_rows`). The filesystem sink is not used for
csv: its bulk writer (CsvBulkWriter) ignores write-bigdecimal-in-scientific-notation and
always writes `stripTrailingZeros().toString()`, which is not what Kafka topics receive. Rows
are stored as `keyguard.formats.values.coerce_row` reads them (decimals and times as text).

Reads go through `CsvRowDataDeserializationSchema`, built as CsvFormatFactory builds it, once
with csv.ignore-parse-errors off and once on. Each answer is the row (as above), `skipped` (the
schema returned null: Flink drops the record) or `error` (the schema threw: Flink fails the job).

golden_declared.jsonl holds what Flink 2.3 writes for TIME(p), TIMESTAMP(p) and
TIMESTAMP_LTZ(p) columns when an INSERT casts a value to the declared type: each row is built
by Flink's own SQL at run time (`CAST(column AS <declared type>)` over a filesystem source,
converted to RowData by DataStructureConverters) from the value's text (`"source": "text"`: a
STRING column, as a row given as text is) or from a TIMESTAMP(6), TIMESTAMP_LTZ(6) or TIME
column (`"source": "value"`: what a Spark DataFrame holds), then serialized as above and
read back by the format's deserialization schema (`read`, or `read_error` when Flink refuses).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "golden.jsonl"
READ_OUT = HERE / "golden_read.jsonl"
DECLARED_OUT = HERE / "golden_declared.jsonl"

# (group, format, format options, columns, rows)
Group = tuple[str, str, dict[str, str], str, list[dict[str, Any]]]

ASCII = [chr(i) for i in range(128)]

CASES: list[Group] = [
    ("json-time", "json", {}, "t0 TIME(0), t1 TIME(1), t3 TIME(3)", [
        {"t0": "12:34:56", "t1": "12:34:56.7", "t3": "12:34:56.789"},
        {"t0": "00:00:00", "t1": "00:00:00.1", "t3": "00:00:00.001"},
        {"t0": "23:59:59", "t1": "23:59:59.9", "t3": "23:59:59.999"},
        {"t0": "12:00:00", "t1": "12:00:00", "t3": "12:00:00.780"},
        {"t0": "12:00:00", "t1": "12:00:00", "t3": "12:00:00.500"},
        {"t0": None, "t1": None, "t3": "12:00:00.000"},
    ]),
    ("json-decimal", "json", {}, "d DECIMAL(38, 18), s DECIMAL(10, 2), z DECIMAL(38, 0)", [
        {"d": "99999999999999999999.999999999999999999", "s": "12345678.90",
         "z": "99999999999999999999999999999999999999"},
        {"d": "-99999999999999999999.999999999999999999", "s": "-0.50",
         "z": "-99999999999999999999999999999999999999"},
        {"d": "0.000000100000000000", "s": "1000.00", "z": "1000"},
        {"d": "0", "s": "0.00", "z": "0"},
    ]),
    ("json-decimal-plain", "json", {"encode.decimal-as-plain-number": "true"},
     "d DECIMAL(38, 18), s DECIMAL(10, 2)", [
         {"d": "99999999999999999999.999999999999999999", "s": "1000.00"},
         {"d": "0.000000100000000000", "s": "0.00"},
     ]),
    ("csv-decimal", "csv", {}, "d DECIMAL(38, 18), s DECIMAL(10, 2), z DECIMAL(5, 0)", [
        {"d": "0.000000100000000000", "s": "1000.00", "z": "1000"},
        {"d": "0", "s": "0.00", "z": "0"},
        {"d": "-12.5", "s": "-12.50", "z": "-12"},
        {"d": "99999999999999999999.999999999999999999", "s": "12345678.90", "z": "99999"},
        {"d": "-0.5", "s": "0.01", "z": "-99999"},
    ]),
    ("csv-decimal-false", "csv", {"write-bigdecimal-in-scientific-notation": "false"},
     "d DECIMAL(38, 18), s DECIMAL(10, 2)", [
         {"d": "0.000000100000000000", "s": "1000.00"},
         {"d": "0", "s": "0.00"},
     ]),
    ("csv-decimal-scientific", "csv", {"write-bigdecimal-in-scientific-notation": "true"},
     "d DECIMAL(38, 18), s DECIMAL(10, 2), z DECIMAL(5, 0)", [
         {"d": "1000", "s": "1000.00", "z": "1000"},
         {"d": "0", "s": "0.00", "z": "0"},
         {"d": "-12.5", "s": "-12.50", "z": "-12"},
         {"d": "0.0000001", "s": "0.10", "z": "10"},
         {"d": "-0.5", "s": "-0.50", "z": "-99999"},
         {"d": "99999999999999999999.999999999999999999", "s": "12345678.90", "z": "99999"},
     ]),
    ("csv-ascii", "csv", {}, "s STRING, n INT", [
        {"s": f"k{c}b", "n": 13} for c in ASCII
    ] + [{"s": c, "n": 1} for c in ASCII]),
    ("csv-key-row", "csv", {}, "r ROW<a INT, b STRING> NOT NULL, s STRING", [
        {"r": {"a": 1, "b": "k\\b"}, "s": "B1"},
        {"r": {"a": 7, "b": "x,y"}, "s": "a b"},
    ]),
    ("csv-time", "csv", {}, "t0 TIME(0), t3 TIME(3), d DATE", [
        {"t0": "12:34:56", "t3": "12:34:56.789", "d": "2024-01-01"},
        {"t0": "00:00:00", "t3": "12:34:56.780", "d": "1970-01-01"},
    ]),
    ("csv-ascii-escape", "csv", {"escape-character": "\\"}, "s STRING, n INT", [
        {"s": f"k{c}b", "n": 13} for c in "\\\"',;|a -~"
    ]),
    ("csv-row", "csv", {},
     "r ROW<a INT, b STRING, c DECIMAL(10, 2)>, n INT", [
         {"r": {"a": 1, "b": "x", "c": "1.50"}, "n": 1},
         {"r": {"a": 2, "b": "x y", "c": "0.00"}, "n": 2},
         {"r": {"a": None, "b": "k\\b", "c": None}, "n": 3},
         {"r": None, "n": 4},
         {"r": {"a": -5, "b": "", "c": "-1000.00"}, "n": 5},
     ]),
    ("csv-row-options", "csv",
     {"array-element-delimiter": "|", "null-literal": "NULL", "field-delimiter": ";"},
     "r ROW<a INT, b STRING, t TIME(3), d DATE>, n INT", [
         {"r": {"a": 1, "b": "x", "t": "12:34:56.789", "d": "2024-01-01"}, "n": 1},
         {"r": {"a": None, "b": None, "t": None, "d": None}, "n": 2},
         {"r": None, "n": 3},
     ]),
    # Beyond the first corpus: every other type and option, so a difference nobody listed shows up.
    ("json-types", "json", {},
     "b BOOLEAN, ti TINYINT, si SMALLINT, bi BIGINT, f FLOAT, d DOUBLE, s STRING, "
     "dt DATE, ts3 TIMESTAMP(3), ts6 TIMESTAMP(6), ltz TIMESTAMP_LTZ(3), by BYTES", [
         {"b": True, "ti": -128, "si": 32767, "bi": -9223372036854775808, "f": 0.1,
          "d": 1e20, "s": "a\"b\\c/\u0001\u007f\u2028é😀", "dt": "2024-02-29",
          "ts3": "2024-01-01 00:00:00.120", "ts6": "2024-01-01 23:59:59.000001",
          "ltz": "2024-01-01 00:00:00.5Z", "by": "AP/+"},
         {"b": False, "ti": 0, "si": -1, "bi": 0, "f": 3.4028235e38, "d": 1e-5, "s": "",
          "dt": "0001-01-01", "ts3": "2024-01-01 00:00:00", "ts6": "9999-12-31 23:59:59.999999",
          "ltz": "1970-01-01 00:00:00Z", "by": ""},
         {"b": None, "ti": None, "si": None, "bi": None, "f": "NaN", "d": "-Infinity",
          "s": None, "dt": None, "ts3": None, "ts6": None, "ltz": None, "by": None},
         {"f": 1e-45, "d": 4.9e-324, "b": True, "ti": 1, "si": 1, "bi": 1, "s": "\t\n\r\b\f",
          "dt": "1970-01-01", "ts3": "2024-06-30 12:00:00.001", "ts6": "2024-06-30 12:00:00.1",
          "ltz": "2024-06-30 12:00:00.999Z", "by": "AQID"},
         {"f": 1234567.0, "d": 100.0, "b": True, "ti": 1, "si": 1, "bi": 1, "s": "x",
          "dt": "1970-01-01", "ts3": "2024-06-30 12:00:00", "ts6": "2024-06-30 12:00:00",
          "ltz": "2024-06-30 12:00:00Z", "by": "AA=="},
     ]),
    ("json-iso", "json", {"timestamp-format.standard": "ISO-8601"},
     "ts3 TIMESTAMP(3), ts0 TIMESTAMP(0), ltz TIMESTAMP_LTZ(6)", [
         {"ts3": "2024-01-01 00:00:00.120", "ts0": "2024-01-01 10:00:00",
          "ltz": "2024-01-01 00:00:00.000500Z"},
         {"ts3": "2024-01-01 00:00:00", "ts0": "2024-01-01 00:00:00",
          "ltz": "2024-01-01 00:00:00Z"},
     ]),
    ("json-nested", "json", {},
     "a ARRAY<INT>, m MAP<STRING, DOUBLE>, r ROW<x INT, y STRING, z ARRAY<STRING>>", [
         # one entry per MAP: Flink's json reader, which builds these rows, keeps a HashMap
         {"a": [1, None, 3], "m": {"k": 1.5}, "r": {"x": 1, "y": None, "z": ["p"]}},
         {"a": [], "m": {}, "r": None},
         {"a": None, "m": {"n": None}, "r": {"x": None, "y": "é", "z": []}},
     ]),
    ("json-ignore-nulls", "json", {"encode.ignore-null-fields": "true"},
     "a INT, b STRING, r ROW<x INT, y STRING>", [
         {"a": None, "b": "x", "r": {"x": None, "y": "z"}},
         {"a": 1, "b": None, "r": None},
     ]),
    ("csv-types", "csv", {},
     "b BOOLEAN, ti TINYINT, bi BIGINT, f FLOAT, d DOUBLE, s STRING, ts3 TIMESTAMP(3), "
     "ltz TIMESTAMP_LTZ(3), by BYTES, a ARRAY<STRING>, ai ARRAY<DOUBLE>", [
         {"b": True, "ti": -128, "bi": 12345678910, "f": 0.1, "d": 1e20, "s": "é😀 long " * 4,
          "ts3": "2024-01-01 00:00:00.120", "ltz": "2024-01-01 00:00:00.5Z", "by": "+/8=",
          "a": ["a b", "c\"d", "e;f"], "ai": [1.0, None, 1e-5]},
         {"b": False, "ti": 0, "bi": 0, "f": "NaN", "d": "-Infinity", "s": "a" * 24,
          "ts3": "2024-01-01 00:00:00", "ltz": "1970-01-01 00:00:00Z", "by": "AQID",
          "a": [], "ai": [100.0]},
         {"b": True, "ti": 1, "bi": 1, "f": 1.0, "d": 1.0, "s": "a" * 25,
          "ts3": "2024-01-01 00:00:00.001", "ltz": "2024-01-01 00:00:00.001Z", "by": "AA==",
          "a": [""], "ai": [1e7]},
     ]),
    ("csv-quote-escape", "csv", {"quote-character": "'", "escape-character": "\\",
                                 "field-delimiter": "\\t", "array-element-delimiter": "|"},
     "s STRING, a ARRAY<STRING>, n INT", [
         {"s": "it's", "a": ["x'y", "a|b", "t\tu"], "n": 1},
         {"s": "back\\slash", "a": ["\\"], "n": 2},
         {"s": "tab\there, comma", "a": ["q\"r"], "n": 3},
     ]),
    ("csv-edges", "csv", {},
     "s STRING, d DOUBLE, f FLOAT, a ARRAY<DECIMAL(6, 2)>, t ARRAY<TIME(3)>, b ARRAY<BOOLEAN>", [
         {"s": " lead", "d": -1.5, "f": -1.5, "a": ["1.00", "-0.50"], "t": ["12:00:00.100"],
          "b": [True, False]},
         {"s": "trail ", "d": 0.001, "f": 0.001, "a": ["0.00"], "t": ["00:00:00"], "b": [True]},
         {"s": "é" * 25, "d": 9999999.0, "f": 1e7, "a": [], "t": [], "b": []},
         {"s": "#x", "d": 1.0e-4, "f": 123456.79, "a": ["9999.99"], "t": ["23:59:59.999"],
          "b": [False]},
     ]),
    # No DECIMAL here: with one in the row type Flink's json reader (which builds these rows)
    # parses floats as BigDecimal and turns -0.0 into 0.0.
    ("negative-zero-csv", "csv", {}, "d DOUBLE, f FLOAT", [{"d": -0.0, "f": -0.0}]),
    ("negative-zero-json", "json", {}, "d DOUBLE, f FLOAT", [{"d": -0.0, "f": -0.0}]),
    ("csv-edges-scientific", "csv", {"write-bigdecimal-in-scientific-notation": "true"},
     "a ARRAY<DECIMAL(6, 2)>, r ROW<x DECIMAL(6, 2), y INT>", [
         {"a": ["1000.00", "0.00", "-0.50"], "r": {"x": "10.00", "y": 1}},
     ]),
    ("csv-high-quote", "csv", {"quote-character": "|", "field-delimiter": ";"},
     "s STRING, a ARRAY<STRING>", [
         {"s": "abc", "a": ["x", "y"]},
         {"s": "{}~", "a": ["z|w"]},
     ]),
    ("csv-no-quotes", "csv", {"disable-quote-character": "true", "null-literal": "\\N"},
     "s STRING, a ARRAY<STRING>, n INT", [
         {"s": "a,b \"c\"", "a": ["x y", None], "n": None},
         {"s": None, "a": None, "n": 7},
     ]),
    # Length columns: each row is first cast to the declared types by Flink's SQL (CAST from
    # STRING and BYTES, what an INSERT of those columns needs: see _cast_rows), then written.
    ("json-length", "json", {},
     "c CHAR(2), v VARCHAR(3), b BINARY(16), vb VARBINARY(3), s STRING, a ARRAY<CHAR(3)>", [
         {"c": "D", "v": "ab", "b": "AQ==", "vb": "AQI=", "s": "x", "a": ["p", "qrst"]},
         {"c": "DDDD", "v": "abcdef", "b": "AQIDBAUGBwgJCgsMDQ4PEBESExQ=", "vb": "AQIDBAU=",
          "s": "y", "a": []},
         {"c": "", "v": "", "b": "", "vb": "", "s": "", "a": [""]},
         {"c": "\u00e9\U0001F600x", "v": "\u00e9\U0001F600xyz", "b": "AP8=", "vb": "AP8A/w==",
          "s": "\u00e9", "a": ["\U0001F600"]},
         {"c": "D ", "v": "a  ", "b": "AAAA", "vb": "AAAAAA==", "s": " ", "a": [" "]},
         {"c": None, "v": None, "b": None, "vb": None, "s": None, "a": None},
     ]),
    ("csv-length", "csv", {}, "c CHAR(3), v VARCHAR(2), b BINARY(4), vb VARBINARY(2)", [
        {"c": "a", "v": "a", "b": "AQ==", "vb": "AQ=="},
        {"c": "abcd", "v": "abc", "b": "AQIDBAU=", "vb": "AQID"},
        {"c": ",", "v": "\"x", "b": "", "vb": ""},
        {"c": "\U0001F600", "v": "\u00e9\u00e9\u00e9", "b": "/w==", "vb": "/w=="},
    ]),
    ("raw-char", "raw", {}, "c CHAR(4)", [{"c": "ab"}, {"c": "abcdef"}, {"c": "\u00e9"},
                                          {"c": ""}]),
    ("raw-varchar", "raw", {}, "v VARCHAR(2)", [{"v": "a"}, {"v": "abc"}]),
    ("raw-binary", "raw", {}, "b BINARY(4)", [{"b": "AQ=="}, {"b": "AQIDBAU="}, {"b": ""}]),
    ("raw-varbinary", "raw", {}, "vb VARBINARY(2)", [{"vb": "AQ=="}, {"vb": "AQID"}]),
    # A column the row leaves out: Flink's INSERT of the other columns writes it as null.
    ("json-missing", "json", {}, "id INT, tm STRING, c CHAR(2)", [{"id": 1, "c": "D"},
                                                                   {"id": 2}]),
]


def _split_fields(columns: str) -> list[tuple[str, str]]:
    """`a INT, r ROW<x INT, y STRING>` -> [(a, INT), (r, ROW<...>)] (commas inside <> or ())."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(columns + ","):
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == "," and depth == 0:
            name, _, typ = columns[start:i].strip().partition(" ")
            out.append((name.strip("`"), typ.strip()))
            start = i + 1
    return out


def _internal(jvm: Any, sql_type: str, value: Any) -> Any:
    """Flink's internal data (RowData, StringData, DecimalData, int) of a JSON row value."""
    data = jvm.org.apache.flink.table.data
    if value is None:
        return None
    sql_type = sql_type.removesuffix(" NOT NULL")
    if sql_type.startswith("ROW<"):
        fields = _split_fields(sql_type[4:-1])
        row = data.GenericRowData(len(fields))
        for i, (n, t) in enumerate(fields):
            row.setField(i, _internal(jvm, t, value.get(n)))
        return row
    if sql_type == "STRING" or _LENGTH.match(sql_type):
        if "BINARY" in sql_type:
            return bytearray(value)  # bytes as _cast_rows collected them
        return data.StringData.fromString(value)
    if sql_type.startswith("ARRAY<"):
        items = [_internal(jvm, sql_type[6:-1], v) for v in value]
        from pyflink.java_gateway import get_gateway

        array = get_gateway().new_array(jvm.java.lang.Object, len(items))
        for i, v in enumerate(items):
            array[i] = v
        return data.GenericArrayData(array)
    if sql_type.startswith("DECIMAL"):
        p, sc = (int(x) for x in sql_type[8:-1].split(","))
        return data.DecimalData.fromBigDecimal(jvm.java.math.BigDecimal(value), p, sc)
    if sql_type.startswith("TIME("):
        t = dt.time.fromisoformat(value)
        return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000
    if sql_type == "DATE":
        return (dt.date.fromisoformat(value) - dt.date(1970, 1, 1)).days
    if sql_type == "INT":
        return int(value)
    raise ValueError(f"capture.py cannot build {sql_type}; add it to _internal")



_LENGTH = re.compile(r"(CHAR|VARCHAR|BINARY|VARBINARY)\(\d+\)")


def _cast_rows(columns: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as Flink holds them in the declared columns: each STRING or BYTES value (and
    ARRAY of them) CAST to its column's type by Flink's SQL, the cast an INSERT of those
    columns into the table needs (Flink refuses to insert a STRING column into a CHAR(n) one
    without it; a literal is cast implicitly, alike). Other columns pass through."""
    from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    env.get_config().set("parallelism.default", "1")
    fields = _split_fields(columns)
    sources = {"INT": DataTypes.INT(), "STRING": DataTypes.STRING(), "BYTES": DataTypes.BYTES()}

    def source(t: str) -> Any:
        if t.startswith("ARRAY<"):
            return DataTypes.ARRAY(source(t[6:-1]))
        return sources["BYTES" if "BINARY" in t else "INT" if t == "INT" else "STRING"]

    def value(t: str, v: Any) -> Any:
        if v is None or t == "INT":
            return v
        if t.startswith("ARRAY<"):
            return [value(t[6:-1], e) for e in v]
        return bytearray(base64.b64decode(v)) if "BINARY" in t else v

    table = env.from_elements(
        [tuple(value(t, r.get(n)) for n, t in fields) for r in rows],
        DataTypes.ROW([DataTypes.FIELD(n, source(t)) for n, t in fields]))
    env.create_temporary_view("given", table)
    casts = ", ".join(f"CAST(`{n}` AS {t}) AS `{n}`" for n, t in fields)
    out = []
    for got in env.execute_sql(f"SELECT {casts} FROM given").collect():
        out.append({n: (list(got[i]) if isinstance(got[i], (list, tuple)) else got[i])
                    for i, (n, _) in enumerate(fields)})
    return out


def _serializer(jvm: Any, fmt: str, options: dict[str, str], row_type: Any) -> Any:
    if fmt == "raw":  # RawFormatFactory: charset UTF-8, big-endian by default
        schema = jvm.org.apache.flink.formats.raw.RawFormatSerializationSchema(
            row_type.getTypeAt(0), options.get("charset", "UTF-8"),
            options.get("endianness", "big-endian") == "big-endian")
    elif fmt == "json":
        json_pkg = jvm.org.apache.flink.formats.json
        schema = json_pkg.JsonRowDataSerializationSchema(
            row_type,
            jvm.org.apache.flink.formats.common.TimestampFormat.valueOf(
                options.get("timestamp-format.standard", "SQL").replace("-", "_")),
            getattr(json_pkg, "JsonFormatOptions$MapNullKeyMode").valueOf(
                options.get("map-null-key.mode", "FAIL")),
            options.get("map-null-key.literal", "null"),
            options.get("encode.decimal-as-plain-number", "false") == "true",
            options.get("encode.ignore-null-fields", "false") == "true")
    else:  # CsvFormatFactory.configureSerializationSchema
        builder = getattr(jvm.org.apache.flink.formats.csv,
                          "CsvRowDataSerializationSchema$Builder")(row_type)
        unescape = jvm.org.apache.commons.lang3.StringEscapeUtils.unescapeJava
        if "field-delimiter" in options:
            builder.setFieldDelimiter(unescape(options["field-delimiter"])[0])
        if options.get("disable-quote-character") == "true":
            builder.disableQuoteCharacter()
        elif "quote-character" in options:
            builder.setQuoteCharacter(options["quote-character"][0])
        if "array-element-delimiter" in options:
            builder.setArrayElementDelimiter(options["array-element-delimiter"])
        if "escape-character" in options:
            builder.setEscapeCharacter(options["escape-character"][0])
        if "null-literal" in options:
            builder.setNullLiteral(options["null-literal"])
        if "write-bigdecimal-in-scientific-notation" in options:
            builder.setWriteBigDecimalInScientificNotation(
                options["write-bigdecimal-in-scientific-notation"] == "true")
        schema = builder.build()
    schema.open(None)
    return schema


_SIMPLE = re.compile(r"\b(BOOLEAN|TINYINT|SMALLINT|BIGINT|FLOAT|DOUBLE|TIMESTAMP|TIMESTAMP_LTZ|"
                     r"BYTES|ARRAY|MAP)\b")


def _simple(columns: str) -> bool:
    """Types _internal builds by hand (py4j turns a Java Byte, Short, Long or Float into a
    Python number, so other types go through Flink's json reader instead)."""
    return _SIMPLE.search(columns) is None


def _json_reader(jvm: Any, row_type: Any) -> Any:
    reader = jvm.org.apache.flink.formats.json.JsonRowDataDeserializationSchema(
        row_type, jvm.org.apache.flink.table.runtime.typeutils.InternalTypeInfo.of(row_type),
        False, False, jvm.org.apache.flink.formats.common.TimestampFormat.SQL)
    reader.open(None)
    return reader


def capture() -> list[dict[str, Any]]:
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    parse = jvm.org.apache.flink.table.types.logical.utils.LogicalTypeParser.parse
    out: list[dict[str, Any]] = []
    for group, fmt, options, columns, rows in CASES:
        fields = _split_fields(columns)
        row_type = parse(f"ROW<{columns}>", loader)
        schema = _serializer(jvm, fmt, options, row_type)
        lengths = _LENGTH.search(columns) is not None
        reader = _json_reader(jvm, row_type) if not (_simple(columns) or lengths) else None
        cast = _cast_rows(columns, rows) if lengths else None
        for i, r in enumerate(rows):
            if cast is not None:  # Flink's CAST gave the values, as the table holds them
                row = jvm.org.apache.flink.table.data.GenericRowData(len(fields))
                for j, (n, t) in enumerate(fields):
                    row.setField(j, _internal(jvm, t, cast[i][n]))
            elif reader is not None:  # Flink's own json reader builds the RowData, typed right
                row = reader.deserialize(bytearray(json.dumps(r).encode("utf-8")))
            else:
                row = jvm.org.apache.flink.table.data.GenericRowData(len(fields))
                for j, (n, t) in enumerate(fields):
                    row.setField(j, _internal(jvm, t, r.get(n)))
            data = bytes(schema.serialize(row))
            out.append({"case": f"{group}/{i}", "format": fmt, "options": options,
                        "columns": columns, "row": r, "hex": data.hex()})
    return out

# --- reads ------------------------------------------------------------------------------------

# (group, format options, columns, records): each record read with ignore-parse-errors off and on.
ReadGroup = tuple[str, dict[str, str], str, list[bytes]]

_EMPTIES = [b",1", b'"",1', b" ,1"]
_SCALARS: list[tuple[str, str, list[bytes]]] = [
    ("boolean", "BOOLEAN", [b"true,1", b"TRUE,1", b" true ,1", b"false,1", b"yes,1", b"1,1",
                            b"\xc2\xa0true,1", b"\ttrue,1"]),
    ("tinyint", "TINYINT", [b"12,1", b" -7 ,1", b"128,1", b"+5,1"]),
    ("smallint", "SMALLINT", [b"-32768,1", b"1.0,1"]),
    ("int", "INT", [b" 12 ,1", b"+5,1", b"1.0,1", b"2147483648,1", b"0x10,1", b"-0,1",
                    b"\xd9\xa3,1", b"\xc2\xa012,1"]),
    ("bigint", "BIGINT", [b"-9223372036854775808,1", b"1e3,1"]),
    ("float", "FLOAT", [b"NaN,1", b"1e3,1", b"1.5f,1", b" 2.5 ,1", b"-Infinity,1",
                        b"1e40,1", b"0x1p3,1", b"1e-50,1", b"+NaN,1",
                        b"0x1.8p1,1", b"3.4028236e38,1", b"1_0,1",
                        # halfway between two floats as a double, not as a decimal
                        b"1.0000000596046447753906250001,1",
                        b"-1.0000000596046447753906249999,1"]),
    ("double", "DOUBLE", [b"1.5d,1", b"Infinity,1", b"1e400,1", b".5,1", b"1.,1"]),
    ("decimal", "DECIMAL(5, 2)", [b"1.005,1", b"123.4,1", b"1234,1", b"1e2,1", b" 1.5,1",
                                  b"-0.001,1", b"+1.5,1", b".5,1", b"1.,1", b"1E+1,1", b"NaN,1",
                                  b"99.995,1", b"999.995,1", b"\xd9\xa3,1"]),
    ("string", "STRING", [b"x,1", b'" x ",1']),
    ("date", "DATE", [b"2024-01-01,1", b"2024-1-1,1", b" 2024-01-01,1", b"2024-02-30,1",
                      b"2024-13-01,1", b"2024-00-10,1", b"2024-01-32,1", b"0001-01-01,1",
                      b"2024-01-1 ,1", b"2024-+1-01,1", b"1900-02-29,1", b"1500-02-29,1",
                      "\u0663\u0663\u0663\u0663-01-01,1".encode()]),
    ("time", "TIME(3)", [b"12:34,1", b"12:34:56.7891,1", b"1:02:03,1"]),
    ("timestamp", "TIMESTAMP(3)", [b"2024-01-01 00:00:00,1", b"2024-01-01T00:00:00,1",
                                   b"2024-01-01,1", b"2024-01-01 00:00:00.123456,1",
                                   b"2024-01-01 1:00:00,1", b"2024-01-01 00:00,1",
                                   b"2024-01-01 00:00:00.1234567891,1",
                                   b" 2024-01-01 00:00:00 ,1", b"2024-02-30 00:00:00,1",
                                   b"2024-01-01 00:00:00.,1", b"2024-01-01 24:00:00,1"]),
    ("timestamp-ltz", "TIMESTAMP_LTZ(3)", [b"2024-01-01 00:00:00Z,1", b"2024-01-01 00:00:00,1",
                                           b"2024-01-01 00:00:00.5Z,1",
                                           b" 2024-01-01 00:00:00Z ,1",
                                           b"2024-02-30 00:00:00Z,1", b"2024-01-01T00:00:00Z,1",
                                           b"2024-01-01 24:00:00Z,1", b"2024-01-01 00:00:00z,1",
                                           b"2024-01-01 00:00:00.Z,1"]),
    ("bytes", "BYTES", [b"AQID,1", b"AQI,1", b"!!,1", b"AQ==,1", b" AQID,1", b"AQ ID,1",
                        b"AQID ,1", b"AQ=,1", b"AQ==AQ==,1", b"AQ==x,1", b"AQIDBA,1", b"A,1",
                        b"AQ-_,1", b"AQ=A,1"]),
]

READ_CASES: list[ReadGroup] = [
    *[(f"csv-read-{name}", {}, f"c {sql}, n INT", _EMPTIES + records)
      for name, sql, records in _SCALARS],
    *[(f"csv-read-{name}-null-literal", {"null-literal": "N"}, f"c {sql}, n INT",
       [b"N,1", b",1", b'"N",1'])
      for name, sql, _ in _SCALARS],
    ("csv-read-array", {}, "k STRING, a ARRAY<INT>", [
        b",;5", b"x,;5", b"x,5;", b"x,;", b"x,", b'x,""', b"x,1;2", b"x, 1 ; 2 ", b"x,1;y",
        b'x,"1;2"', b"x,5"]),
    ("csv-read-array-string", {}, "k STRING, a ARRAY<STRING>", [
        b"x,", b"x,;", b"x,a;;b", b'x," "', b"x, a ; b ",
        b"x,a; b", b'x," ; "', b"x,\ta"]),
    ("csv-read-array-boolean", {}, "k STRING, a ARRAY<BOOLEAN>", [b"x,;true", b"x,", b"x,yes"]),
    ("csv-read-array-null-literal", {"null-literal": "N"}, "k STRING, a ARRAY<INT>", [
        b"x,N", b"x,1;N", b"x,", b"x,;", b"N,N"]),
    ("csv-read-row", {}, "k STRING, r ROW<x INT, y STRING, z INT>", [
        b",;;", b"x,;;", b"x,", b"x,1;a;2", b"x,1;a", b"x,1;a;2;3", b"x,;a;", b"x,y;a;2",
        b'x,"1;a;2"', b"x,1"]),
    ("csv-read-row-null-literal", {"null-literal": "N"},
     "k STRING, r ROW<x INT, y STRING, z INT>", [b"x,N", b"x,N;N;N", b"x,", b"x,1;N;N"]),
    ("csv-read-empty-null-literal", {"null-literal": ""},
     "b BOOLEAN, i INT, s STRING, a ARRAY<INT>", [b",,,", b'"","","",""', b"true,1,x,1;;2"]),
    ("csv-read-record", {}, "i INT, s STRING", [
        b"", b" ", b"1", b"1,x", b"1,x,y", b"1,x,", b"1,x\n", b"1,x\r\n", b"1,x\n2,y",
        b"\xef\xbb\xbf1,x", b"1,\xef\xbb\xbfx", b"1,a\x00b", b'1,"a\x00b"', b"1,\xff",
        b'1,"abc', b'1,"a"b', b"#1,x", b",", b",,", b"1,x,,", b'1,x,""',
        b"1,x, ", b"\n1,x", b"\r\n", b"\n", b"1,x\r2,y", b'1,"a\nb"', b'1, "x"', b'1,"x" ',
        b"1,x y", b'"\x00",1']),
    ("csv-read-comments", {"allow-comments": "true"}, "i INT, s STRING", [
        b"#1,x", b"1,#x", b" #1,x", b"#c\n1,x", b"\t#1,x", b" 1,x",
        b"#", b"#c\n#d\n1,x"]),
    ("csv-read-key", {}, "k STRING", [
        b"", b"k1", b"\xef\xbb\xbfk1", b"\xef\xbb\xbf", b"k\x00", b"\x00", b"a,b", b",",
        b'"a,b"', b"\\N", b"\xef\xbb\xbf\xef\xbb\xbfk",
        b"\xef\xbb\xbfk", b"k\x00x", b"\x00k", b"\x00\x00\x00k", b"k\x00\x00\x00", b"\xff\xfek\x00",
        b"\xfe\xff\x00k", b"\x00k\x00\x00", b"ab\x00\x00", b"k\x00y", b"\xc0\x80x",
        b"\xff\xfe\x00\xd8", b"\x00\x00\xfe\xff\x00\x00\x00k", b"\x00\x11\x00\x00",
        b"a\x00b\x00,\x00",
        b"k\x00\x00"]),
    ("csv-read-key-int", {}, "k INT", [b"", b"\xef\xbb\xbf7", b"7,8", b"7\x00"]),
    ("csv-read-key-escape", {"escape-character": "\\"}, "k STRING", [
        b"\\N", b"a\\,b", b"\\n", b"\\0", b"\\\\", b"a\\", b'"a\\"b"', b"\\t\\r"]),
    ("csv-read-key-escape-null", {"escape-character": "\\", "null-literal": "\\N"}, "k STRING",
     [b"\\N", b"\\\\N", b'"\\N"', b"N"]),
    ("csv-read-no-quotes", {"disable-quote-character": "true"}, "k STRING, n INT", [
        b'"a",1', b'"a,b",1']),
    ("csv-read-length", {}, "c CHAR(2), v VARCHAR(3), b BINARY(4)", [
        b"D,abcdef,AQ==", b'"D ",a  ,AQIDBAUG', b",,"]),
    ("csv-read-options", {"field-delimiter": "\\t", "quote-character": "'",
                          "array-element-delimiter": "|"},
     "k STRING, a ARRAY<INT>, r ROW<x INT, y STRING>", [
         b"x\t1|2\t1|a", b"'x\ty'\t|\t|", b"x\t\t"]),
]


def _java_value(sql_type: str, v: Any) -> Any:
    """One field of a RowData Flink's csv reader built, as coerce_row reads it."""
    if v is None:
        return None
    sql_type = sql_type.removesuffix(" NOT NULL")
    if sql_type.startswith("ROW<"):
        fields = _split_fields(sql_type[4:-1])
        return {n: None if v.isNullAt(i) else _java_value(t, v.getField(i))
                for i, (n, t) in enumerate(fields)}
    if sql_type.startswith("ARRAY<"):
        element = sql_type[6:-1]
        items = v.toObjectArray()
        return [_java_value(element, items[i]) for i in range(v.size())]
    if _LENGTH.match(sql_type):  # read as the bytes hold it: neither cut nor padded
        return (base64.b64encode(bytes(v)).decode("ascii") if "BINARY" in sql_type
                else str(v.toString()))
    if sql_type in ("STRING", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT"):
        return str(v.toString()) if sql_type == "STRING" else v
    if sql_type in ("FLOAT", "DOUBLE"):
        if math.isnan(v):
            return "NaN"
        return ("Infinity" if v > 0 else "-Infinity") if math.isinf(v) else v
    if sql_type.startswith("DECIMAL"):
        return str(v.toString())
    if sql_type == "DATE":
        return (dt.date(1970, 1, 1) + dt.timedelta(days=v)).isoformat()
    if sql_type.startswith("TIME("):
        t = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=v)
        return t.strftime("%H:%M:%S.%f")
    if sql_type.startswith("TIMESTAMP_LTZ("):
        ms, nanos = v.getMillisecond(), v.getNanoOfMillisecond()
        t = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms, microseconds=nanos // 1000)
        return t.isoformat(sep=" ") + "Z"
    if sql_type.startswith("TIMESTAMP("):
        ms, nanos = v.getMillisecond(), v.getNanoOfMillisecond()
        t = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms, microseconds=nanos // 1000)
        return t.isoformat(sep=" ")
    if sql_type == "BYTES":
        return base64.b64encode(bytes(v)).decode("ascii")
    raise ValueError(f"capture.py cannot read {sql_type}; add it to _java_value")


def _deserializer(jvm: Any, options: dict[str, str], row_type: Any, ignore: bool) -> Any:
    """CsvFormatFactory.configureDeserializationSchema: an option not set is not applied."""
    csv = jvm.org.apache.flink.formats.csv
    builder = getattr(csv, "CsvRowDataDeserializationSchema$Builder")(
        row_type, jvm.org.apache.flink.table.runtime.typeutils.InternalTypeInfo.of(row_type))
    unescape = jvm.org.apache.commons.lang3.StringEscapeUtils.unescapeJava
    if "field-delimiter" in options:
        builder.setFieldDelimiter(unescape(options["field-delimiter"])[0])
    if options.get("disable-quote-character") == "true":
        builder.disableQuoteCharacter()
    elif "quote-character" in options:
        builder.setQuoteCharacter(options["quote-character"][0])
    if "allow-comments" in options:
        builder.setAllowComments(options["allow-comments"] == "true")
    builder.setIgnoreParseErrors(ignore)
    if "array-element-delimiter" in options:
        builder.setArrayElementDelimiter(options["array-element-delimiter"])
    if "escape-character" in options:
        builder.setEscapeCharacter(options["escape-character"][0])
    if "null-literal" in options:
        builder.setNullLiteral(options["null-literal"])
    schema = builder.build()
    schema.open(None)
    return schema


def capture_reads() -> list[dict[str, Any]]:
    from py4j.protocol import Py4JJavaError
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    parse = jvm.org.apache.flink.table.types.logical.utils.LogicalTypeParser.parse
    out: list[dict[str, Any]] = []
    for group, options, columns, records in READ_CASES:
        fields = _split_fields(columns)
        row_type = parse(f"ROW<{columns}>", loader)
        for ignore in (False, True):
            schema = _deserializer(jvm, options, row_type, ignore)
            for i, data in enumerate(records):
                case: dict[str, Any] = {
                    "case": f"{group}/{i}", "options": options, "columns": columns,
                    "ignore-parse-errors": ignore, "hex": data.hex()}
                try:
                    row = schema.deserialize(bytearray(data))
                except Py4JJavaError as exc:
                    cause = exc.java_exception
                    while cause.getCause() is not None:
                        cause = cause.getCause()
                    case["error"] = str(cause.toString()).split("\n")[0]
                else:
                    if row is None:
                        case["skipped"] = True
                    else:
                        case["row"] = {n: None if row.isNullAt(j) else
                                       _java_value(t, row.getField(j))
                                       for j, (n, t) in enumerate(fields)}
                out.append(case)
    return out


# --- declared TIME / TIMESTAMP / TIMESTAMP_LTZ precisions --------------------------------------

_TS = ["2024-02-29 12:00:00.999999", "2024-02-29 23:59:59.123456", "1969-12-31 23:59:59.999999",
       "2024-02-29 12:00:00"]
_TIMES = ["01:02:03.999999", "01:02:03.1235", "23:59:59.999999", "00:00:00"]
_TIME_TEXT = ["01:02:03.1235", "01:02:03.1234", "01:02:03.1225", "01:02:59.9995",
              "00:00:00.0005", "01:02:03.99951", "23:59:59.9994", "23:59:59.9995", "01:02:03"]
_TS_COLUMNS = "t0 TIMESTAMP(0), t1 TIMESTAMP(1), t3 TIMESTAMP(3), t6 TIMESTAMP(6), t9 TIMESTAMP(9)"
_LTZ_COLUMNS = ("l0 TIMESTAMP_LTZ(0), l3 TIMESTAMP_LTZ(3), l6 TIMESTAMP_LTZ(6), "
                "l9 TIMESTAMP_LTZ(9)")
_TIME_COLUMNS = "m0 TIME(0), m1 TIME(1), m3 TIME(3), m6 TIME(6), m9 TIME(9)"

# (group, format, format options, declared columns, source, rows)
DeclaredGroup = tuple[str, str, dict[str, str], str, str, list[dict[str, Any]]]


def _same_value(columns: str, values: list[str], suffix: str = "") -> list[dict[str, Any]]:
    names = [n for n, _ in _split_fields(columns)]
    return [{n: v + suffix for n in names} for v in values]


DECLARED_CASES: list[DeclaredGroup] = [
    *[(f"declared-timestamp-{fmt}", fmt, {}, _TS_COLUMNS, "value",
       _same_value(_TS_COLUMNS, _TS)) for fmt in ("json", "csv")],
    ("declared-timestamp-json-iso", "json", {"timestamp-format.standard": "ISO-8601"},
     _TS_COLUMNS, "value", _same_value(_TS_COLUMNS, _TS[:1])),
    *[(f"declared-ltz-{fmt}", fmt, {}, _LTZ_COLUMNS, "value",
       _same_value(_LTZ_COLUMNS, _TS, "Z")) for fmt in ("json", "csv")],
    *[(f"declared-time-{fmt}", fmt, {}, _TIME_COLUMNS, "value",
       _same_value(_TIME_COLUMNS, _TIMES)) for fmt in ("json", "csv")],
    *[(f"declared-time-text-{fmt}", fmt, {}, _TIME_COLUMNS, "text",
       _same_value(_TIME_COLUMNS, _TIME_TEXT)) for fmt in ("json", "csv")],
]

# Records no Flink wrote (another producer's text), read with the declared types.
DECLARED_READS: list[tuple[str, str, str, list[bytes]]] = [
    ("declared-read-json", "json", "t0 TIMESTAMP(0), m0 TIME(0), l0 TIMESTAMP_LTZ(0), m3 TIME(3)", [
        b'{"t0":"2024-02-29 12:00:00.999","m0":"01:02:03.1235","l0":"2024-02-29 12:00:00.999999Z",'
        b'"m3":"01:02:03.9999"}',
        b'{"t0":"2024-02-29 12:00:00","m0":"01:02:03","l0":"2024-02-29 12:00:00Z",'
        b'"m3":"23:59:59.9995"}']),
    ("declared-read-csv", "csv", "t0 TIMESTAMP(0), m0 TIME(0), l0 TIMESTAMP_LTZ(0), m3 TIME(3)", [
        b'"2024-02-29 12:00:00.999",01:02:03.1235,"2024-02-29 12:00:00.999999Z",01:02:03.9999',
        b'"2024-02-29 12:00:00",01:02:03,"2024-02-29 12:00:00Z",23:59:59.9995']),
]


def _source_type(sql_type: str, source: str) -> str:
    """The type Flink reads the value as before casting it to the declared type: text, or what
    a Spark DataFrame holds (microseconds)."""
    if source == "text":
        return "STRING"
    return re.sub(r"\(\d\)", "(6)", sql_type)


def _cast_row(env: Any, fields: list[tuple[str, str]], source: str, row: dict[str, Any],
              name: str) -> Any:
    """The row as Flink's INSERT casts it to the declared types, at run time (a literal's cast
    is folded by the planner and differs before 1970): read from a one-line csv file by the
    filesystem source, then CAST."""
    import tempfile

    folder = tempfile.mkdtemp()
    Path(folder, "row.csv").write_text(",".join(f'"{row[n]}"' for n, _ in fields) + "\n")
    env.execute_sql(
        f"CREATE TEMPORARY TABLE {name} ("
        + ", ".join(f"`{n}` {_source_type(t, source)}" for n, t in fields)
        + f") WITH ('connector' = 'filesystem', 'path' = '{folder}', 'format' = 'csv')")
    return env._j_tenv.sqlQuery(
        "SELECT " + ", ".join(f"CAST(`{n}` AS {t}) AS `{n}`" for n, t in fields)
        + f" FROM {name}")


def _reader(jvm: Any, fmt: str, options: dict[str, str], row_type: Any) -> Any:
    if fmt == "json":  # JsonFormatFactory.createDecodingFormat
        reader = jvm.org.apache.flink.formats.json.JsonRowDataDeserializationSchema(
            row_type, jvm.org.apache.flink.table.runtime.typeutils.InternalTypeInfo.of(row_type),
            False, False, jvm.org.apache.flink.formats.common.TimestampFormat.valueOf(
                options.get("timestamp-format.standard", "SQL").replace("-", "_")))
        reader.open(None)
        return reader
    return _deserializer(jvm, options, row_type, False)


def _error(exc: Any) -> str:
    cause = exc.java_exception
    while cause.getCause() is not None:
        cause = cause.getCause()
    return str(cause.toString()).split("\n")[0]


def _read(jvm: Any, fmt: str, options: dict[str, str], columns: str, data: bytes,
          reader: Any) -> dict[str, Any]:
    from py4j.protocol import Py4JJavaError

    if isinstance(reader, str):
        return {"read_error": reader}
    try:
        row = reader.deserialize(bytearray(data))
    except Py4JJavaError as exc:
        return {"read_error": _error(exc)}
    return {"read": {n: None if row.isNullAt(j) else _java_value(t, row.getField(j))
                     for j, (n, t) in enumerate(_split_fields(columns))}}


def capture_declared() -> list[dict[str, Any]]:
    from py4j.protocol import Py4JJavaError
    from pyflink.java_gateway import get_gateway
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    env.get_config().set("parallelism.default", "1")
    env.get_config().set("table.local-time-zone", "UTC")
    jvm = get_gateway().jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    parse = jvm.org.apache.flink.table.types.logical.utils.LogicalTypeParser.parse
    converters = jvm.org.apache.flink.table.data.conversion.DataStructureConverters
    out: list[dict[str, Any]] = []

    def reader_of(fmt: str, options: dict[str, str], row_type: Any) -> Any:
        try:
            return _reader(jvm, fmt, options, row_type)
        except Py4JJavaError as exc:  # Flink refuses to read the type at all
            return _error(exc)

    for group, fmt, options, columns, source, rows in DECLARED_CASES:
        fields = _split_fields(columns)
        row_type = parse(f"ROW<{columns}>", loader)
        schema = _serializer(jvm, fmt, options, row_type)
        reader = reader_of(fmt, options, row_type)
        for i, r in enumerate(rows):
            case: dict[str, Any] = {"case": f"{group}/{i}", "format": fmt, "options": options,
                                    "columns": columns, "source": source, "row": r}
            try:
                table = _cast_row(env, fields, source, r, f"src_{len(out)}")
                # In Java, so the job's error arrives (py4j's iterator turns it into the end)
                java_row = jvm.org.apache.flink.util.CollectionUtil.iteratorToList(
                    table.execute().collect()).get(0)
            except Py4JJavaError as exc:  # Flink's cast fails: the INSERT fails
                case["error"] = _error(exc)
                out.append(case)
                continue
            converter = converters.getConverter(
                table.getResolvedSchema().toPhysicalRowDataType())
            converter.open(loader)
            data = bytes(schema.serialize(converter.toInternalOrNull(java_row)))
            case["hex"] = data.hex()
            case.update(_read(jvm, fmt, options, columns, data, reader))
            out.append(case)
    for group, fmt, columns, records in DECLARED_READS:
        row_type = parse(f"ROW<{columns}>", loader)
        reader = reader_of(fmt, {}, row_type)
        for i, data in enumerate(records):
            out.append({"case": f"{group}/{i}", "format": fmt, "options": {}, "columns": columns,
                        "source": "bytes", "hex": data.hex(),
                        **_read(jvm, fmt, {}, columns, data, reader)})
    return out


def main() -> None:
    cases = capture()
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    print(f"wrote {len(cases)} cases to {OUT.relative_to(HERE.parents[3])}")
    reads = capture_reads()
    READ_OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in reads))
    print(f"wrote {len(reads)} cases to {READ_OUT.relative_to(HERE.parents[3])}")
    declared = capture_declared()
    DECLARED_OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in declared))
    print(f"wrote {len(declared)} cases to {DECLARED_OUT.relative_to(HERE.parents[3])}")


if __name__ == "__main__":
    main()
