"""`keyguard schema` prints the schema a table writes, byte for byte what `encode --register`
registers, and never opens a registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keyguard.formats.registry.file import FileRegistry
from keyguard.guard.cli import app

runner = CliRunner()

ORDERS = """CREATE TABLE orders (
  region STRING,
  id BIGINT,
  amount DECIMAL(10, 2),
  placed TIMESTAMP(3),
  note STRING,
  PRIMARY KEY (region, id) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'orders',
  'key.format' = '{fmt}',
  'key.{fmt}.url' = '{url}',
  'value.format' = '{fmt}',
  'value.{fmt}.url' = '{url}'
);
"""
ROW = '{"region": "eu", "id": 3, "amount": "12.50", "placed": "2024-01-01 00:00:00", "note": null}'


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def registered(workdir: Path, fmt: str) -> FileRegistry:
    """A file registry holding what `encode --register` registered for the DDL."""
    (workdir / "orders.sql").write_text(ORDERS.format(fmt=fmt, url=f"file://{workdir}/reg"))
    r = run("encode", "--flink-ddl", "orders.sql", "--flink-ddl-connections", "--row", ROW,
            "--register")
    assert r.exit_code == 0, r.output
    return FileRegistry(workdir / "reg")


@pytest.mark.parametrize("side", ["key", "value"])
def test_the_printed_avro_is_what_encode_register_registers(workdir: Path, side: str) -> None:
    reg = registered(workdir, "avro-confluent")
    r = run("schema", "--flink-ddl", "orders.sql", "--side", side, "--type", "avro")
    assert r.exit_code == 0, r.output
    version = reg.get_version(f"orders-{side}")
    assert r.stdout == version.schema + "\n"
    assert version.schema_type.upper() == "AVRO"
    names = [f["name"] for f in json.loads(r.stdout)["fields"]]
    assert names == (["region", "id"] if side == "key"
                     else ["region", "id", "amount", "placed", "note"])


def test_the_printed_json_schema_is_what_json_registry_registers(workdir: Path) -> None:
    reg = registered(workdir, "json-registry")
    r = run("schema", "--flink-ddl", "orders.sql")  # the value side by default
    assert r.exit_code == 0, r.output
    assert r.stdout == reg.get_version("orders-value").schema + "\n"


def test_schema_never_opens_the_registry_it_names(workdir: Path) -> None:
    """The DDL's registry is an unreachable address; no registry at all for --columns."""
    (workdir / "orders.sql").write_text(ORDERS.format(fmt="avro-confluent",
                                                      url="http://127.0.0.1:9"))
    by_ddl = run("schema", "--flink-ddl", "orders.sql", "--side", "key")
    assert by_ddl.exit_code == 0, by_ddl.output
    by_columns = run("schema", "--columns", "region STRING, id BIGINT, amount DECIMAL(10, 2), "
                     "placed TIMESTAMP(3), note STRING", "--primary-key", "region,id",
                     "--topic", "orders", "--key-format", "avro-confluent", "--side", "key")
    assert by_columns.exit_code == 0, by_columns.output
    assert by_columns.stdout == by_ddl.stdout


def test_a_type_the_format_does_not_write_is_a_usage_error(workdir: Path) -> None:
    (workdir / "orders.sql").write_text(ORDERS.format(fmt="avro-confluent", url="mock://x"))
    r = run("schema", "--flink-ddl", "orders.sql", "--type", "json")
    assert r.exit_code == 2
    assert "--type json: the value format avro-confluent of orders.sql registers AVRO " \
           "schemas, not JSON" in r.output
    assert "--type avro" in r.output and r.stdout == ""


def test_a_format_without_a_schema_says_so(workdir: Path) -> None:
    r = run("schema", "--columns", "id BIGINT, name STRING", "--primary-key", "id",
            "--value-format", "csv")
    assert r.exit_code == 2
    assert "the value format csv writes the row as text and registers no schema" in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize(("args", "message"), [
    ((), "give the table: --flink-ddl orders.sql, or --columns with --primary-key"),
    (("--flink-ddl", "orders.sql", "--key-format", "avro"), "drop --key-format"),
    (("--flink-ddl", "orders.sql", "--side", "both"), "--side"),
    (("--flink-ddl", "missing.sql"), "cannot read Flink DDL file missing.sql"),
])
def test_schema_usage_errors(workdir: Path, args: tuple[str, ...], message: str) -> None:
    (workdir / "orders.sql").write_text(ORDERS.format(fmt="avro-confluent", url="mock://x"))
    r = run("schema", *args)
    assert r.exit_code == 2
    assert message in r.output
