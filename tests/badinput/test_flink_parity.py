"""Bad input around Flink byte parity: csv ROW columns, full-width DECIMALs, TIME fractions and
the csv decimal option. Each row is one CLI line that must exit 2 with the named error kind and
no traceback; a value is never written rounded, nor read back as null."""

from __future__ import annotations

import json

import pytest
from badinput import assert_rejected, run_cli

KEY = "7b226b223a2261227d"  # the json key {"k":"a"}


def _hex(text: str) -> str:
    return text.encode("utf-8").hex()


def _columns(sql_type: str) -> list[str]:
    return ["--columns", f"k STRING, c {sql_type}", "--primary-key", "k"]


# (column type, key or value format, extra options): types Flink's csv cannot carry either,
# refused at plan time for encode and decode alike.
CSV_PLAN = [
    ("MAP<STRING, INT>", "value", []),
    ("ROW<a ARRAY<INT>>", "value", []),
    ("ROW<a ROW<b INT>>", "value", []),
    ("ROW<a MAP<STRING, INT>>", "value", []),
    ("ARRAY<ROW<a INT>>", "value", []),
    ("ARRAY<ARRAY<INT>>", "value", []),
    ("ROW<a ARRAY<INT>>", "key", []),
    ("ROW<a ROW<b INT>>", "key", []),
]


@pytest.mark.parametrize(("sql_type", "role", "extra"), CSV_PLAN)
def test_csv_refuses_deeper_nesting_at_plan_time(sql_type: str, role: str,
                                                 extra: list[str]) -> None:
    pk = "c" if role == "key" else "k"
    args = ["--columns", f"k STRING, c {sql_type}", "--primary-key", pk,
            f"--{role}-format", "csv", *extra]
    out = assert_rejected(["encode", "--key-format", "json", "--value-format", "json",
                           *args, "--row", '{"k":"a","c":null}'], 2,
                          "unsupported-type", says="csv")
    assert "'c'" in out.stderr


# (column type, format, extra options, the value as JSON text): outside the column's type.
ENCODE = [
    ("ROW<a INT, b STRING>", "csv", [], '{"a":1,"b":"x","z":2}'),
    ("ROW<a INT, b STRING>", "csv", [], '"1;x"'),
    ("ROW<a INT, b STRING>", "csv", [], "[1, \"x\"]"),
    ("ROW<a INT, b STRING>", "csv", [], '{"a":"one","b":"x"}'),
    ("ROW<a INT, b STRING>", "csv", [], '{"a":2147483648,"b":"x"}'),
    ("ROW<a INT, b STRING>", "csv", [], '{"a":1,"b":"\\ud800"}'),
    ("ROW<a INT NOT NULL, b STRING>", "csv", [], '{"a":null,"b":"x"}'),
    ("ROW<a DECIMAL(4, 2), b STRING>", "csv", [], '{"a":"100.00","b":"x"}'),
    ("ROW<a DATE, b STRING>", "csv", [], '{"a":"2024-02-30","b":"x"}'),
    ("ROW<a TIME(3), b STRING>", "csv", [], '{"a":"25:00:00","b":"x"}'),
    ("DECIMAL(38, 18)", "json", [], "100000000000000000000"),
    ("DECIMAL(38, 18)", "json", [], "999999999999999999999.99"),
    ("DECIMAL(38, 18)", "json", [], '"100000000000000000000.000000000000000000"'),
    ("DECIMAL(38, 18)", "csv", [], "100000000000000000000"),
    ("DECIMAL(38, 18)", "csv", ["-o", "value.csv.write-bigdecimal-in-scientific-notation=true"],
     "1e20"),
    ("DECIMAL(38, 0)", "json", [], "1e38"),
    ("DECIMAL(38, 18)", "json", [], "1e400"),
    ("TIME(3)", "json", [], '"12:34:56.789x"'),
    ("TIME(3)", "json", [], '"24:00:00.000"'),
    ("TIME(3)", "json", [], '"23:59:59.9995"'),  # Flink's cast: Hour out of range: [24]
    ("TIME(0)", "csv", [], '"23:59:59.99951"'),
    ("TIME(3)", "csv", [], '"12:34:56.789.1"'),
]


@pytest.mark.parametrize(("sql_type", "fmt", "extra", "value"), ENCODE)
def test_encode_refuses(sql_type: str, fmt: str, extra: list[str], value: str) -> None:
    args = ["encode", "--key-format", "json", *_columns(sql_type), "--value-format", fmt, *extra,
            "--row", f'{{"k":"a","c":{value}}}']
    out = assert_rejected(args, 2, "encode")
    assert "c" in out.stderr and len(out.stderr) < 2000


# (column type, format, extra options, value bytes): what no Flink writer of the type writes.
DECODE = [
    ("ROW<a INT, b STRING>", "csv", [], _hex("a,1")),
    ("ROW<a INT, b STRING>", "csv", [], _hex("a,one;x")),
    ("ROW<a INT, b STRING>", "csv", [], _hex("a,2147483648;x")),
    ("ROW<a INT, b STRING>", "csv", [], _hex("a,;x")),
    ("ROW<a INT, b STRING>", "csv", [], _hex('a,"1;x')),
    ("ROW<a INT, b STRING>", "csv", ["-o", "value.csv.array-element-delimiter=|"],
     _hex("a,1;x")),
    ("DECIMAL(38, 18) NOT NULL", "json", [], _hex('{"k":"a","c":100000000000000000000}')),
    ("DECIMAL(38, 18)", "json", [],
     _hex('{"k":"a","c":99999999999999999999.9999999999999999995}')),
    ("DECIMAL(38, 18)", "json", [], _hex('{"k":"a","c":"1E+20"}')),
    ("TIME(3)", "json", [], _hex('{"k":"a","c":"12:34:56.7890000000"}')),
    ("TIME(3)", "json", [], _hex('{"k":"a","c":"12:34:56."}')),
    ("TIME(3)", "json", [], _hex('{"k":"a","c":"12:34:60.5"}')),
    ("TIME(3)", "csv", [], _hex("a,12:34:56.")),
]


# (column type, value bytes, what keyguard decode prints for c): csv records Flink's csv reader
# reads without an error -- extra nested fields dropped, a too wide DECIMAL as null,
# Boolean.parseBoolean, java.sql.Date's roll-over -- so keyguard reads them the same.
CSV_READ_AS_FLINK = [
    ("ROW<a INT, b STRING>", _hex("a,1;x;y"), '"c": {"a": 1, "b": "x"}'),
    ("ROW<a DECIMAL(4, 2), b STRING>", _hex("a,100.00;x"), '"c": {"a": null, "b": "x"}'),
    ("ROW<a BOOLEAN, b STRING>", _hex("a,yes;x"), '"c": {"a": false, "b": "x"}'),
    ("ROW<a DATE, b STRING>", _hex("a,2024-02-30;x"), '"c": {"a": "2024-03-01", "b": "x"}'),
    ("DECIMAL(38, 18)", _hex("a,100000000000000000000"), '"c": null'),
    ("DECIMAL(38, 0)", _hex("a,1E+38"), '"c": null'),
]


@pytest.mark.parametrize(("sql_type", "value", "shown"), CSV_READ_AS_FLINK)
def test_csv_decode_reads_what_flinks_reader_reads(sql_type: str, value: str,
                                                  shown: str) -> None:
    out = run_cli(["decode", *_columns(sql_type), "--key-format", "json", "--value-format",
                   "csv", "--key", KEY, "--value", value])
    assert out.code == 0, out.output
    assert shown in out.stdout, out.stdout


@pytest.mark.parametrize(("sql_type", "value", "written"), [
    ("TIME(6)", '"01:02:03.1235"', b"a,01:02:03.124"),
    ("TIME(9)", '"01:02:03.999999"', b"a,01:02:04"),
    ("ROW<a TIME(6), b INT>", '{"a": "01:02:03.1", "b": 1}', b"a,01:02:03.1;1"),
])
def test_csv_writes_time_6_and_9_as_flink_and_refuses_to_read_them(
        sql_type: str, value: str, written: bytes) -> None:
    """Flink 2.3's csv writer writes any TIME precision (the milliseconds it holds); its reader
    refuses TIME(4) and above, so decode does too, naming the column and what to do."""
    out = run_cli(["encode", "--key-format", "json", *_columns(sql_type), "--value-format",
                   "csv", "--json", "--row", f'{{"k":"a","c":{value}}}'])
    assert out.code == 0, out.output
    assert bytes.fromhex(json.loads(out.stdout)["value"]["hex"]) == written
    out = assert_rejected(["decode", "--key-format", "json", *_columns(sql_type),
                           "--value-format", "csv", "--key", KEY, "--value", written.hex()],
                          2, "unsupported-type", says="Flink's csv reader refuses it")
    assert "'c'" in out.stderr and "TIME(3)" in out.stderr


@pytest.mark.parametrize(("sql_type", "fmt", "extra", "value"), DECODE)
def test_decode_refuses(sql_type: str, fmt: str, extra: list[str], value: str) -> None:
    out = assert_rejected(["decode", "--key-format", "json",
                           *_columns(sql_type), "--value-format", fmt, *extra,
                           "--key", KEY, "--value", value], 2, "decode")
    assert "'c'" in out.stderr  # names the column


@pytest.mark.parametrize("value", ["maybe", "1", "yes", "", "TRUE!"])
def test_the_csv_decimal_option_takes_a_boolean(value: str) -> None:
    assert_rejected(["encode", "--key-format", "json",
                     *_columns("DECIMAL(10, 2)"), "--value-format", "csv",
                     "-o", f"value.csv.write-bigdecimal-in-scientific-notation={value}",
                     "--row", '{"k":"a","c":"1.00"}'], 2, "invalid-option",
                    says="write-bigdecimal-in-scientific-notation")


def test_encode_writes_a_full_width_decimal_given_as_a_json_number() -> None:
    from badinput import run_cli

    full = "99999999999999999999.999999999999999999"
    for fmt in ("json", "csv"):
        out = run_cli(["encode", "--value-format", "json",
                       "--columns", "k DECIMAL(38, 18) NOT NULL, v INT",
                       "--primary-key", "k", "--key-format", fmt, "--json",
                       "--row", f'{{"k": {full}, "v": 1}}'])
        assert out.code == 0, out.output
        key = bytes.fromhex(json.loads(out.stdout)["key"]["hex"])
        assert key == (b'{"k":' + full.encode() + b"}" if fmt == "json" else full.encode())
