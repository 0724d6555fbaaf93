"""Bad input to encode/decode/diff: values outside their type, bad bytes, nonsense options.

Every row is one CLI line that must exit 2 with the named error kind and no traceback: a value
that does not fit its column is refused on encode (`encode`) and on decode (`decode`), never
written, rounded into another value or read as null.
"""

from __future__ import annotations

import base64
import json

import pytest
from badinput import assert_rejected

KEY = "7b226b223a2261227d"  # the json key {"k":"a"}
DEEP = "[" * 100_000 + "]" * 100_000


def _hex(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").hex()


def _columns(sql_type: str) -> list[str]:
    return ["--columns", f"k STRING, c {sql_type}", "--primary-key", "k"]


# (column type, the value as JSON text): each is outside the column's type.
OUT_OF_TYPE = [
    ("TINYINT", "128"),
    ("TINYINT", "-129"),
    ("TINYINT", '"1e2"'),
    ("SMALLINT", "32768"),
    ("SMALLINT", "-32769"),
    ("INT", "2147483648"),
    ("INT", "-2147483649"),
    ("INT", "1.5"),
    ("INT", '"1_000"'),
    ("INT", '"0x10"'),
    ("INT", "true"),
    ("INT", '"' + "9" * 100_000 + '"'),
    ("BIGINT", "9223372036854775808"),
    ("BIGINT", '"12a"'),
    ("FLOAT", "1e39"),
    ("FLOAT", '"-3.5e38"'),
    ("DOUBLE", '"1e999"'),
    ("DOUBLE", "1e999"),
    ("DOUBLE", '"inf"'),
    ("DOUBLE", '"nan"'),
    ("DOUBLE", "true"),
    ("DOUBLE", '"' + "9" * 400 + '"'),
    ("DECIMAL(10, 2)", '"1e400"'),
    ("DECIMAL(10, 2)", '"123456789"'),
    ("DECIMAL(10, 2)", '"99999999.995"'),
    ("DECIMAL(10, 2)", '"NaN"'),
    ("DECIMAL(10, 2)", '"Infinity"'),
    ("DECIMAL(10, 2)", '"1_0"'),
    ("DECIMAL(10, 2)", "[1]"),
    ("DECIMAL(38, 0)", '"1e38"'),
    ("STRING", '"\\ud800"'),
    ("STRING", '"a\\udfffb"'),
    ("STRING", "5"),
    ("STRING", "{}"),
    ("BYTES", '"abc"'),
    ("BYTES", '"!!!!"'),
    ("BYTES", "5"),
    ("BOOLEAN", '"true"'),
    ("BOOLEAN", "1"),
    ("DATE", '"2024-02-30"'),
    ("DATE", '"20240101"'),
    ("DATE", '"2024-W01-1"'),
    ("DATE", "5"),
    ("TIME(3)", '"25:00:00"'),
    ("TIME(3)", '"12:60"'),
    ("TIME(3)", '"noon"'),
    ("TIMESTAMP(3)", '"2024-13-01 00:00:00"'),
    ("TIMESTAMP(3)", '"2024-01-01 10:00:00+02:00"'),
    ("TIMESTAMP(3)", '"yesterday"'),
    ("TIMESTAMP_LTZ(3)", '"0001-01-01 00:00:00+05:00"'),
    ("TIMESTAMP_LTZ(3)", '"9999-12-31 23:00:00-05:00"'),
    ("ARRAY<INT>", "[2147483648]"),
    ("ARRAY<INT>", '"x"'),
    ("ARRAY<STRING>", '["\\ud800"]'),
    ("MAP<STRING, INT>", '{"a": 1e10}'),
    ("MAP<STRING, INT>", '{"\\ud800": 1}'),
    ("ROW<x INT>", '{"y": 1}'),
    ("ROW<x INT>", '{"x": 2147483648}'),
]


@pytest.mark.parametrize(("sql_type", "value"), OUT_OF_TYPE)
def test_encode_refuses_a_value_outside_its_type(sql_type: str, value: str) -> None:
    out = assert_rejected(["encode", "--key-format", "json", "--value-format", "json",
                           *_columns(sql_type), "--row", f'{{"k":"a","c":{value}}}'],
                          2, "encode")
    assert "c" in out.stderr and len(out.stderr) < 2000  # names the column, short message


# The same values through the other formats (each has its own writer).
OTHER_FORMATS = [
    ("csv", [], "TINYINT", "128"),
    ("csv", [], "DOUBLE", '"1e999"'),
    ("csv", [], "DECIMAL(10, 2)", '"1e400"'),
    ("csv", [], "STRING", '"\\ud800"'),
    ("csv", [], "ARRAY<STRING>", '["\\udc00"]'),
    ("csv", [], "BYTES", '"abc"'),
    ("avro", [], "INT", "2147483648"),
    ("avro", [], "FLOAT", "1e39"),
    ("avro", [], "DECIMAL(10, 2)", '"1e400"'),
    ("avro", [], "STRING", '"\\ud800"'),
    ("avro", [], "DATE", '"2024-02-30"'),
    ("avro", ["-o", "value.avro.timestamp_mapping.legacy=false"],
     "TIMESTAMP_LTZ(3)", '"0001-01-01 00:00:00+05:00"'),
    ("avro", ["-o", "value.avro.encoding=json"], "DECIMAL(10, 2)", '"1e400"'),
    ("avro", ["-o", "value.avro.encoding=json"], "SMALLINT", "40000"),
    ("raw", ["-o", "value.fields-include=EXCEPT_KEY"], "TINYINT", "128"),
    ("raw", ["-o", "value.fields-include=EXCEPT_KEY"], "FLOAT", "1e39"),
    ("raw", ["-o", "value.fields-include=EXCEPT_KEY"], "STRING", '"\\ud800"'),
    ("raw", ["-o", "value.fields-include=EXCEPT_KEY"], "BIGINT", "9223372036854775808"),
]


@pytest.mark.parametrize(("fmt", "extra", "sql_type", "value"), OTHER_FORMATS)
def test_every_format_refuses_a_value_outside_its_type(
        fmt: str, extra: list[str], sql_type: str, value: str) -> None:
    assert_rejected(["encode", "--key-format", "json",
                     *_columns(sql_type), "--value-format", fmt, *extra,
                     "--row", f'{{"k":"a","c":{value}}}'], 2, "encode")


def test_a_lone_surrogate_in_the_key_is_refused_in_a_raw_key() -> None:
    assert_rejected(["encode", "--value-format", "json",
                     "--columns", "k STRING, v INT", "--primary-key", "k",
                     "--key-format", "raw", "--row", '{"k":"\\ud800","v":1}'], 2, "encode",
                    says="surrogate")


# (column type, value format, extra options, value bytes as hex): bytes no writer of this
# schema produces, or values outside the column's type.
_AVRO_JSON = ["-o", "value.avro.encoding=json"]
_RAW = ["-o", "value.fields-include=EXCEPT_KEY"]
BAD_BYTES = [
    ("TINYINT", "json", [], _hex('{"k":"a","c":128}')),
    ("INT", "json", [], _hex('{"k":"a","c":[1]}')),
    ("INT", "json", [], _hex('{"k":"a","c":1e300}')),
    ("DOUBLE", "json", [], _hex('{"k":"a","c":"1e999"}')),
    ("DOUBLE", "json", [], _hex('{"k":"a","c":1e999}')),
    ("FLOAT", "json", [], _hex('{"k":"a","c":1e39}')),
    ("DECIMAL(10, 2)", "json", [], _hex('{"k":"a","c":123456789.5}')),
    ("DECIMAL(10, 2)", "json", [], _hex('{"k":"a","c":"1e400"}')),
    ("STRING", "json", [], _hex('{"k":"a","c":"\\ud800"}')),
    ("MAP<STRING, INT>", "json", [], _hex('{"k":"a","c":{"\\udc00":1}}')),
    ("BOOLEAN", "json", [], _hex('{"k":"a","c":"yes"}')),
    ("BOOLEAN", "json", [], _hex('{"k":"a","c":1}')),
    ("BYTES", "json", [], _hex('{"k":"a","c":"abc"}')),
    ("DATE", "json", [], _hex('{"k":"a","c":"2024-02-30"}')),
    ("INT", "json", [], _hex("not json")),
    ("INT", "json", [], _hex('{"k":')),
    ("INT", "json", [], _hex("[1]")),
    ("INT", "json", [], "7bff7d"),  # not UTF-8
    ("TINYINT", "csv", [], _hex("a,128")),
    ("INT", "csv", [], _hex('a,"1')),
    ("INT", "csv", [], _hex("a,1,2")),
    ("STRING", "csv", [], "612cff"),  # not UTF-8
    ("INT", "avro", [], "0261028080808010"),  # an int of 2**31
    ("INT", "avro", [], "0261"),  # truncated
    ("INT", "avro", [], "02610202ff"),  # a byte left over
    ("INT", "avro", [], "02610402"),  # a union branch the schema lacks
    ("DECIMAL(10, 2)", "avro", [], "0261023c" + "7f" * 30),  # a 70-digit DECIMAL(10, 2)
    ("DECIMAL(10, 2)", "avro", _AVRO_JSON,
     _hex(json.dumps({"k": "a", "c": {"bytes": "\x7f" * 30}}))),
    ("DECIMAL(10, 2)", "avro", _AVRO_JSON, _hex('{"k": "a", "c": {"bytes": "1e400"}}')),
    ("INT", "avro", _AVRO_JSON, _hex('{"k": "a", "c": {"int": 2147483648}}')),
    ("INT", "avro", _AVRO_JSON, _hex('{"k": "a"')),
    ("TINYINT", "raw", _RAW, "0102"),
    ("INT", "raw", _RAW, "010203"),
    ("BOOLEAN", "raw", _RAW, ""),
    ("DOUBLE", "raw", _RAW, "00"),
    ("STRING", "raw", _RAW, "61ff"),  # not UTF-8: Java would read U+FFFD
    ("STRING", "raw", [*_RAW, "-o", "value.raw.charset=UTF-16"], "feff00"),  # odd length
]


@pytest.mark.parametrize(("sql_type", "fmt", "extra", "value"), BAD_BYTES)
def test_decode_refuses_bytes_outside_the_type(
        sql_type: str, fmt: str, extra: list[str], value: str) -> None:
    assert_rejected(["decode", "--key-format", "json",
                     *_columns(sql_type), "--value-format", fmt, *extra,
                     "--key", KEY, "--value", value], 2, "decode")


CONFLUENT = ["--columns", "k STRING, c INT", "--primary-key", "k",
             "--value-format", "avro-confluent", "--registry", "mock://values-badinput"]


def test_an_avro_decode_error_names_the_column_and_offset() -> None:
    assert_rejected(["decode", "--key-format", "json",
                     *_columns("INT"), "--value-format", "avro", "--key", KEY,
                     "--value", "0261"], 2, "decode", says="column 'c' at byte offset 2")


@pytest.mark.parametrize("value", ["", "00", "0000", "0100000001020304", "ff00000001"])
def test_decode_refuses_bytes_that_are_not_confluent_framed(value: str) -> None:
    assert_rejected(["decode", "--key-format", "json",
                     *CONFLUENT, "--key", KEY, "--value", value], 2, "decode")


# Bytes that are not in the --encoding named: usage of decode, not a decode of the record.
@pytest.mark.parametrize(("encoding", "value"), [
    ("hex", "abc"),  # odd length
    ("hex", "zz"),
    ("hex", "7g"),
    ("base64", "eyJ"),  # truncated
    ("base64", "e$Jr"),
    ("base64", "eyJrIjoiYSJ9=="),  # padding where none belongs
])
def test_decode_refuses_text_that_is_not_the_encoding(encoding: str, value: str) -> None:
    key = KEY if encoding == "hex" else base64.b64encode(bytes.fromhex(KEY)).decode()
    assert_rejected(["decode", "--key-format", "json", "--value-format", "json",
                     *_columns("INT"), "--encoding", encoding, "--key", key,
                     "--value", value], 2, "invalid-option")


ROW_OK = ["--columns", "k STRING, v INT", "--primary-key", "k"]
SCHEMA = '{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}'

# (command line after the verb, error kind): options that make no sense.
NONSENSE = [
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--partitions", "-3"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--partitions", "0"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--encoding", "xyz"], "invalid-option"),
    (["decode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--key", KEY, "--encoding", "b64"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--schema-type", "xml"], "invalid-option"),
    (["decode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--key", KEY, "--schema-type", "protobuf"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--schema-type", "avro"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--registry", "file:///nonexistent"],
     "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--registry", "http://bob:pw@localhost:1"],
     "invalid-option"),
    (["decode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--key", KEY, "--registry", "mock://x"], "invalid-option"),
    (["encode", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--key-format", "jsn"], "invalid-option"),
    (["encode", "--key-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--value-format", "xml"], "invalid-option"),
    (["decode", "--value-format", "json",
      *ROW_OK, "--key", KEY, "--key-format", "thrift"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "-o", "key.json.fail-on-missing-field=maybe"],
     "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "-o", "value.json.ignore-parse-errors=1"],
     "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "-o",
      "value.json.timestamp-format.standard=XML"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "-o", "value.json.map-null-key.mode=IGNORE"],
     "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "-o", "key.json.bogus=1"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "-o", "nokv"], "usage"),
    (["encode", "--key-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--value-format", "raw", *_RAW, "-o",
      "value.raw.endianness=middle-endian"], "invalid-option"),
    (["encode", "--key-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--value-format", "raw", *_RAW, "-o",
      "value.raw.charset=klingon"], "invalid-option"),
    (["encode", "--key-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--value-format", "avro", "-o",
      "value.avro.encoding=xml"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "-o", "value.json.fail-on-missing-field=true",
      "-o", "value.json.ignore-parse-errors=true"], "invalid-option"),
    (["encode", "--key-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--value-format", "avro-confluent",
      "--registry", "mock://values-badinput", "-o", "value.avro-confluent.retries=-1"],
     "invalid-option"),
    (["encode", "--key-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--value-format", "avro-confluent",
      "--registry", "mock://values-badinput", "-o", "value.avro-confluent.timeout=-5s"],
     "invalid-option"),
    (["encode", "--key-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--value-format", "avro-confluent",
      "--registry", "mock://values-badinput", "-o",
      "value.avro-confluent.auto.register.schemas=yes"], "invalid-option"),
    (["encode", "--key-format", "json",
      *ROW_OK, "--row", '{"k":"a"}', "--value-format", "avro-confluent",
      "--registry", "mock://values-badinput", "-o",
      "value.avro-confluent.subject.name.strategy=ByColour"], "invalid-option"),
    (["encode", "--key-format", "json", "--value-format", "json", *ROW_OK, "--row", DEEP], "usage"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a","k":"b"}'], "usage"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a","v":NaN}'], "usage"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a","v":Infinity}'], "usage"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", "[1]"], "usage"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", "not json"], "usage"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":"a","w":1}'], "encode"),
    (["encode", "--key-format", "json", "--value-format", "json",
      *ROW_OK, "--row", '{"k":null}'], ("encode", "null-key")),
    (["check", "--topic", "t", "--scan-limit", "-5"], "invalid-option"),
    (["check", "--topic", "t", "--scan-limit", "0"], "invalid-option"),
    (["check", "--topic", "t", "--partitions", "0"], "invalid-option"),
    (["check", "--topic", "t", "--schema-type", "xml"], "invalid-option"),
]


@pytest.mark.parametrize(("args", "kind"), NONSENSE)
def test_nonsense_options_are_refused(args: list[str], kind: str | tuple[str, ...]) -> None:
    assert_rejected(args, 2, kind)


def test_a_deep_row_from_stdin_is_refused() -> None:
    assert_rejected(["encode", "--key-format", "json", "--value-format", "json",
                     *ROW_OK, "--row", "-"], 2, "usage", input=DEEP, says="deeply")


def test_a_refused_registry_url_keeps_its_password_secret() -> None:
    out = assert_rejected(["encode", "--key-format", "json", "--value-format", "json",
                           *ROW_OK, "--row", '{"k":"a"}',
                           "--registry", "http://bob:s3cret-pw@localhost:1"], 2, "invalid-option")
    assert "s3cret-pw" not in out.output


@pytest.mark.parametrize(("option", "value"), [
    ("--new-partitions", "0"),
    ("--new-partitions", "-2"),
    ("--partitions", "-1"),
    ("--partitions", "0"),
])
def test_diff_refuses_partition_counts_below_one(tmp_path, option: str, value: str) -> None:
    old, new = tmp_path / "v1.avsc", tmp_path / "v2.avsc"
    old.write_text(SCHEMA)
    new.write_text(SCHEMA)
    assert_rejected(["diff", str(old), str(new), "--key", option, value], 2, "invalid-option",
                    says=option)


@pytest.mark.parametrize("extra", [
    ["--level", "BACKWARD", "--partitions", "3"],
    ["--level", "FULL", "--new-partitions", "3"],
    ["--level", "FORWARD", "-o", "subject.name.strategy=RecordNameStrategy"],
    ["--level", "NONE", "--new-option", "subject=x"],
    ["--key", "--new-partitions", "4"],  # a change from an unknown count
    ["--key", "-f", "xml"],
    ["--level", "bogus"],
    ["--key", "--key-format", "thrift"],
    ["--key", "--key-format", "json", "-o", "timestamp-format.standard=XML"],
    ["--key", "--key-format", "json", "--new-option", "fail-on-missing-fields=true"],
])
def test_diff_refuses_nonsense_options(tmp_path, extra: list[str]) -> None:
    old = tmp_path / "v1.avsc"
    old.write_text(SCHEMA)
    assert_rejected(["diff", str(old), str(old), *extra], 2, "invalid-option")


def test_diff_refuses_an_unknown_schema_type(tmp_path) -> None:
    old = tmp_path / "v1.avsc"
    old.write_text(SCHEMA)
    assert_rejected(["diff", str(old), str(old), "--key", "--schema-type", "yaml"], 2,
                    "invalid-option", says="--schema-type")
