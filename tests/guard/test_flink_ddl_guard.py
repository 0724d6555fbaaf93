"""A Flink DDL wherever the guard takes options: `check --flink-ddl`, `diff --key --flink-ddl`,
the TOML's `flink-ddl`. A DDL and the equivalent options give identical reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keyguard.formats.flink_ddl import read_flink_ddl
from keyguard.guard.cli import app
from keyguard.guard.config import load_config

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()

PV = """-- the pageviews sink, as the Flink job declares it
CREATE TABLE pageviews_per_region (
  user_region STRING,
  {extra}pv BIGINT,
  uv BIGINT,
  updated TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  PRIMARY KEY (user_region{pk}) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'pageviews_per_region',
  'properties.bootstrap.servers' = 'kafka:9092',
  'key.format' = 'avro-confluent',
  'key.avro-confluent.url' = 'http://sr.example:8081',
  'value.format' = 'avro-confluent',
  'value.avro-confluent.url' = 'http://sr.example:8081'{more}
);
"""


def ddl(extra: str = "", pk: str = "", more: str = "") -> str:
    return PV.format(extra=extra, pk=pk, more=more)


#: The key gains a column: KG101, KG501 on the key, KG801 on the value.
KEY_ADDED = ddl(extra="region_id INT,\n  ", pk=", region_id")


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def findings(output: str) -> list[dict[str, Any]]:
    """The JSON report's findings without the file each came from (a DDL or a schema file)."""
    doc = json.loads(output)
    return [{k: v for k, v in f.items() if k != "file"} for f in doc["findings"]]


def written_files(text: str, where: Path) -> tuple[Path, Path]:
    """The key and value schemas a DDL's columns write, as files."""
    key, value = read_flink_ddl(text).written_schemas()
    (where / "key.avsc").write_text(key.text)
    (where / "value.avsc").write_text(value.text)
    return where / "key.avsc", where / "value.avsc"


def test_check_with_a_ddl_equals_check_with_its_options(workdir: Path) -> None:
    (workdir / "pv.sql").write_text(KEY_ADDED)
    by_ddl = run("check", "--flink-ddl", "pv.sql", "--registry", "file://schemas", "-f", "json")
    key, value = written_files(KEY_ADDED, workdir)
    by_options = run("check", "--topic", "pageviews_per_region", "--key-format",
                     "avro-confluent", "--value-format", "avro-confluent", "--key-schema",
                     str(key), "--value-schema", str(value), "--registry", "file://schemas",
                     "-f", "json")
    assert by_ddl.exit_code == by_options.exit_code == 1, by_ddl.output
    assert findings(by_ddl.stdout) == findings(by_options.stdout)
    assert {f["rule"]["id"] for f in findings(by_ddl.stdout)} >= {"KG101", "KG501", "KG801"}
    assert {f["file"] for f in json.loads(by_ddl.stdout)["findings"]} == {"pv.sql"}
    assert "note: pv.sql:7:3: metadata column updated ignored" in by_ddl.stderr


def test_check_an_unchanged_ddl_is_safe(workdir: Path) -> None:
    (workdir / "pv.sql").write_text(ddl())
    r = run("check", "--flink-ddl", "pv.sql", "--registry", "file://schemas")
    assert r.exit_code == 0, r.output


def test_the_config_files_flink_ddl_equals_the_flag(workdir: Path) -> None:
    (workdir / "flink").mkdir()
    (workdir / "flink" / "pv.sql").write_text(KEY_ADDED)
    (workdir / "keyguard.toml").write_text(
        'registry = "file://schemas"\n[[topics]]\nflink-ddl = "flink/pv.sql"\n'
        'ignore = ["KG801"]\n')
    cfg = load_config(workdir / "keyguard.toml")
    (entry,) = cfg.topics
    assert entry.name == "pageviews_per_region"
    assert entry.key_format == "avro-confluent"
    assert entry.options == {}  # the DDL's registry url yields to the config's registry
    assert entry.flink_table is not None
    by_config = run("check", "--config", "keyguard.toml", "-f", "json")
    by_flag = run("check", "--flink-ddl", "flink/pv.sql", "--registry", "file://schemas",
                  "--ignore", "KG801", "-f", "json")
    assert by_config.exit_code == by_flag.exit_code == 1
    assert json.loads(by_config.stdout)["findings"] == json.loads(by_flag.stdout)["findings"]


@pytest.mark.parametrize(("toml", "message"), [
    ('[[topics]]\nflink-ddl = "pv.sql"\nkey-format = "json"\n',
     "key-format and flink-ddl both say how the topic is written"),
    ('[[topics]]\nname = "other"\nflink-ddl = "pv.sql"\n', "is not the DDL's topic"),
    ('[[topics]]\nflink_ddl = "pv.sql"\n', "did you mean flink-ddl"),
    ('[[topics]]\nflink-ddl = "missing.sql"\n', "cannot read Flink DDL file"),
])
def test_config_flink_ddl_errors(workdir: Path, toml: str, message: str) -> None:
    (workdir / "pv.sql").write_text(ddl())
    (workdir / "keyguard.toml").write_text('registry = "file://schemas"\n' + toml)
    r = run("check", "--config", "keyguard.toml")
    assert r.exit_code == 2
    assert message in r.output


@pytest.mark.parametrize(("args", "message"), [
    (("--key-format", "json"), "drop --key-format"),
    (("--topic", "other"), "is not the DDL's topic"),
])
def test_check_flags_cannot_say_what_the_ddl_says(workdir: Path, args: tuple[str, ...],
                                                  message: str) -> None:
    (workdir / "pv.sql").write_text(ddl())
    r = run("check", "--flink-ddl", "pv.sql", "--registry", "file://schemas", *args)
    assert r.exit_code == 2
    assert message in r.output


def test_a_ddl_error_names_file_line_and_column(workdir: Path) -> None:
    (workdir / "pv.sql").write_text(ddl(more=",\n  'key.avro-confluent.subjekt' = 'x'"))
    r = run("check", "--flink-ddl", "pv.sql", "--registry", "file://schemas")
    assert r.exit_code == 2
    assert "pv.sql:16:3: option 'key.avro-confluent.subjekt' is not an option" in r.output


def test_diff_of_two_ddls_equals_diff_of_their_key_schemas(workdir: Path) -> None:
    (workdir / "old.sql").write_text(ddl())
    (workdir / "new.sql").write_text(KEY_ADDED)
    by_ddl = run("diff", "--key", "--old-flink-ddl", "old.sql", "--flink-ddl", "new.sql",
                 "-f", "json")
    old_key, _ = written_files(ddl(), workdir)
    new_key = workdir / "new-key.avsc"
    new_key.write_text(read_flink_ddl(KEY_ADDED).written_schemas()[0].text)
    by_files = run("diff", "--key", str(old_key), str(new_key), "--key-format",
                   "avro-confluent", "-f", "json")
    assert by_ddl.exit_code == by_files.exit_code == 1
    assert findings(by_ddl.stdout) == findings(by_files.stdout)
    assert {f["rule"]["id"] for f in findings(by_ddl.stdout)} == {"KG101", "KG501"}


def test_diff_a_schema_file_against_a_ddl_defaults_the_old_side_to_the_ddl(
        workdir: Path) -> None:
    """The DDL is the candidate; the old side is written as the DDL writes unless flags say
    otherwise: here a librdkafka producer wrote the old keys."""
    (workdir / "pv.sql").write_text(ddl(more=",\n  'sink.partitioner' = 'default'"))
    old = REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc"
    same = run("diff", "--key", str(old), "--flink-ddl", "pv.sql", "-f", "json")
    assert same.exit_code == 0, same.output
    moved = run("diff", "--key", str(old), "--flink-ddl", "pv.sql", "--partitioner",
                "consistent_random", "--partitions", "6", "-f", "json")
    assert moved.exit_code == 1
    assert {f["rule"]["id"] for f in findings(moved.stdout)} == {"KG603", "KG911"}


JSON_KEY = """CREATE TABLE orders (
  code {code},
  amount DOUBLE,
  PRIMARY KEY (code) NOT ENFORCED
) WITH ('connector' = 'upsert-kafka', 'topic' = 'orders', 'key.format' = 'json',
        'value.format' = 'json');
"""


@pytest.mark.parametrize(("old", "new", "breaking"), [
    ("STRING", "CHAR(3)", True),          # short codes padded: 'D' -> 'D  '
    ("VARCHAR(10)", "VARCHAR(5)", True),  # long codes cut
    ("CHAR(3)", "STRING", True),          # the padding no longer written
    ("CHAR(3)", "CHAR(3)", False),
])
def test_diff_of_two_ddls_sees_a_key_length_change(workdir: Path, old: str, new: str,
                                                   breaking: bool) -> None:
    """Flink casts each value to the declared length before the format writes it, so a key
    column's CHAR/VARCHAR length is part of the key's bytes; no key schema text carries it."""
    (workdir / "old.sql").write_text(JSON_KEY.format(code=old))
    (workdir / "new.sql").write_text(JSON_KEY.format(code=new))
    r = run("diff", "--key", "--old-flink-ddl", "old.sql", "--flink-ddl", "new.sql", "-f", "json")
    got = findings(r.stdout)
    if not breaking:
        assert r.exit_code == 0 and got == [], r.output
        return
    assert r.exit_code == 1, r.output
    (f,) = got
    assert (f["rule"]["id"], f["path"]) == ("KG207", "code")
    assert f["witness"]["old_hex"] != f["witness"]["new_hex"]


def test_a_schema_file_side_keeps_the_ddl_sides_lengths(workdir: Path) -> None:
    """A key schema file says nothing of lengths: against a DDL it is taken to keep the DDL's,
    so a CHAR key declared the same way as before is no change."""
    (workdir / "new.sql").write_text(JSON_KEY.format(code="CHAR(3)"))
    key, _ = read_flink_ddl(JSON_KEY.format(code="CHAR(3)")).written_schemas()
    (workdir / "key.json").write_text(key.text)
    r = run("diff", "--key", "key.json", "--flink-ddl", "new.sql", "-f", "json")
    assert r.exit_code == 0 and findings(r.stdout) == [], r.output


def test_diff_flags_cannot_say_what_the_ddl_says(workdir: Path) -> None:
    (workdir / "pv.sql").write_text(ddl())
    old = REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc"
    r = run("diff", "--key", str(old), "--flink-ddl", "pv.sql", "--new-key-format", "json")
    assert r.exit_code == 2
    assert "drop --new-key-format" in r.output
    r = run("diff", "--key", "--old-flink-ddl", "pv.sql", str(old), str(old))
    assert r.exit_code == 2
    assert "at most the candidate schema file" in r.output


ORDERS = """CREATE TABLE orders (
  region STRING,
  id BIGINT,
  amount DECIMAL(10, 2),
  ts TIMESTAMP(3),
  note AS UPPER(region),
  PRIMARY KEY (region, id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'orders',
  'key.format' = 'csv',
  'key.csv.field-delimiter' = '|',
  'value.format' = 'json',
  'value.json.timestamp-format.standard' = 'ISO-8601'
)
"""
ROW = '{"region": "eu", "id": 3, "amount": "1000.00", "ts": "2024-01-01 00:00:00.12"}'


def test_encode_and_decode_with_a_ddl_equal_its_options(workdir: Path) -> None:
    (workdir / "orders.sql").write_text(ORDERS)
    by_ddl = run("encode", "--flink-ddl", "orders.sql", "--row", ROW, "--json")
    by_options = run("encode", "--topic", "orders", "--columns",
                     "region STRING NOT NULL, id BIGINT NOT NULL, amount DECIMAL(10, 2), "
                     "ts TIMESTAMP(3)", "--primary-key", "region,id", "--key-format", "csv",
                     "--value-format", "json", "-o", "key.csv.field-delimiter=|",
                     "-o", "value.json.timestamp-format.standard=ISO-8601", "--row", ROW,
                     "--json")
    assert by_ddl.exit_code == by_options.exit_code == 0, by_ddl.output
    assert json.loads(by_ddl.stdout) == json.loads(by_options.stdout)
    encoded = json.loads(by_ddl.stdout)
    assert bytes.fromhex(encoded["key"]["hex"]).endswith(b"|3")  # the DDL's delimiter
    assert "note: orders.sql:6:3: computed column note ignored" in by_ddl.stderr
    back = run("decode", "--flink-ddl", "orders.sql", "--key", encoded["key"]["hex"],
               "--value", encoded["value"]["hex"])
    assert back.exit_code == 0, back.output
    assert json.loads(back.stdout)["row"]["amount"] == "1000.00"


def test_encode_flags_cannot_say_what_the_ddl_says(workdir: Path) -> None:
    (workdir / "orders.sql").write_text(ORDERS)
    r = run("encode", "--flink-ddl", "orders.sql", "--row", ROW, "--key-format", "raw")
    assert r.exit_code == 2
    assert "drop --key-format" in r.output


#: The value's uv column changes type: neither reader reads the other's uv (FULL breaks).
UV_RETYPED = PV.replace("uv BIGINT", "uv STRING").format(extra="", pk="", more="")


def value_findings(output: str) -> list[dict[str, Any]]:
    """The findings without what names the inputs (the file, the subject it stands for)."""
    return [{k: v for k, v in f.items() if k != "subject"} for f in findings(output)]


def test_diff_level_of_two_ddls_equals_diff_of_their_value_schemas(workdir: Path) -> None:
    (workdir / "old.sql").write_text(ddl())
    (workdir / "new.sql").write_text(UV_RETYPED)
    by_ddl = run("diff", "--level", "FULL", "--old-flink-ddl", "old.sql", "--flink-ddl",
                 "new.sql", "-f", "json")
    _, old_value = written_files(ddl(), workdir)
    new_value = workdir / "new-value.avsc"
    new_value.write_text(read_flink_ddl(UV_RETYPED).written_schemas()[1].text)
    by_files = run("diff", "--level", "FULL", str(old_value), str(new_value), "-f", "json")
    assert by_ddl.exit_code == by_files.exit_code == 1, by_ddl.output
    assert value_findings(by_ddl.stdout) == value_findings(by_files.stdout)
    assert {f["rule"]["id"] for f in findings(by_ddl.stdout)} == {"KG801"}
    assert {f["file"] for f in json.loads(by_ddl.stdout)["findings"]} == {"new.sql"}
    assert json.loads(by_ddl.stdout)["checked"] == [
        "old.sql -> new.sql at FULL by Confluent's rules"]


def test_diff_level_of_a_compatible_ddl_change_is_safe(workdir: Path) -> None:
    """A nullable value column added: FULL compatible (it has a default)."""
    (workdir / "old.sql").write_text(ddl())
    (workdir / "new.sql").write_text(ddl(extra="referrer STRING,\n  "))
    r = run("diff", "--level", "FULL", "--old-flink-ddl", "old.sql", "--flink-ddl", "new.sql")
    assert r.exit_code == 0, r.output
    assert "SAFE" in r.stdout


def test_diff_level_takes_a_ddl_beside_schema_files(workdir: Path) -> None:
    """The files are the history, the DDL the candidate (as with --key)."""
    (workdir / "new.sql").write_text(UV_RETYPED)
    _, old_value = written_files(ddl(), workdir)
    r = run("diff", "--level", "BACKWARD", str(old_value), "--flink-ddl", "new.sql")
    assert r.exit_code == 1, r.output
    assert "KG801" in r.stdout and "value.avsc -> new.sql at BACKWARD" in r.stdout


def test_diff_level_of_a_ddl_whose_value_format_has_no_schema_says_so(workdir: Path) -> None:
    (workdir / "orders.sql").write_text(ORDERS)
    (workdir / "new.sql").write_text(ORDERS.replace("amount DECIMAL(10, 2)", "amount INT"))
    r = run("diff", "--level", "FULL", "--old-flink-ddl", "orders.sql", "--flink-ddl",
            "new.sql")
    assert r.exit_code == 2
    assert "orders.sql: the value format json writes the row as text and registers no " \
           "schema" in r.output
    assert "avro-confluent" in r.output and "diff --key" in r.output
    assert "Traceback" not in r.output
