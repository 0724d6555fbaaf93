"""Regenerate golden.jsonl: the bytes Apache Flink 2.3 writes for each case in CASES.

Not run by the test suite. Needs PyFlink 2.3 and Java 17 in a separate venv:

    python3 -m venv /work/flinkvenv && /work/flinkvenv/bin/pip install apache-flink==2.3.0
    /work/flinkvenv/bin/python tests/formats/data/flink_golden/capture.py

Each row goes through the format's own SerializationSchema (`JsonRowDataSerializationSchema`,
`CsvRowDataSerializationSchema`, the classes upsert-kafka calls for keys and values), built in
the JVM through PyFlink's Java gateway with the options wired as the format factories wire them
(an option that is not set is not applied). The filesystem sink is not used for csv: its bulk
writer (CsvBulkWriter) ignores write-bigdecimal-in-scientific-notation and always writes
`stripTrailingZeros().toString()`, which is not what Kafka topics receive. Rows are stored as
`formats.values.coerce_row` reads them (decimals and times as text).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "golden.jsonl"

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
    if sql_type == "STRING":
        return data.StringData.fromString(value)
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


def _serializer(jvm: Any, fmt: str, options: dict[str, str], row_type: Any) -> Any:
    if fmt == "json":
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


def capture() -> list[dict[str, Any]]:
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    parse = jvm.org.apache.flink.table.types.logical.utils.LogicalTypeParser.parse
    out: list[dict[str, Any]] = []
    for group, fmt, options, columns, rows in CASES:
        fields = _split_fields(columns)
        schema = _serializer(jvm, fmt, options, parse(f"ROW<{columns}>", loader))
        for i, r in enumerate(rows):
            row = jvm.org.apache.flink.table.data.GenericRowData(len(fields))
            for j, (n, t) in enumerate(fields):
                row.setField(j, _internal(jvm, t, r.get(n)))
            data = bytes(schema.serialize(row))
            out.append({"case": f"{group}/{i}", "format": fmt, "options": options,
                        "columns": columns, "row": r, "hex": data.hex()})
    return out


def main() -> None:
    cases = capture()
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    print(f"wrote {len(cases)} cases to {OUT.relative_to(HERE.parents[3])}")


if __name__ == "__main__":
    main()
