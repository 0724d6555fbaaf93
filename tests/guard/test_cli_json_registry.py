"""`keyguard encode/decode` with json-registry (and the avro-registry alias) and a file registry."""

import json
from pathlib import Path

from typer.testing import CliRunner

from keyguard.formats.framing import CONFLUENT
from keyguard.formats.registry.file import FileRegistry
from keyguard.guard.cli import app

runner = CliRunner()
COLUMNS = ["--columns", "region STRING, id BIGINT, amount DECIMAL(10, 2)",
           "--primary-key", "region,id", "--topic", "orders"]


def run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_encode_registers_json_schemas_and_decode_reads_them_back(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'schemas'}"
    fmt = ["--key-format", "json-registry", "--value-format", "json-registry"]
    r = run("encode", *COLUMNS, *fmt, "--registry", url, "--json", "--register",
            "--row", '{"region": "EU", "id": 7, "amount": "1000.00"}')
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [(x["role"], x["subject"]) for x in out["registered"]] == [
        ("key", "orders-key"), ("value", "orders-value")]
    key, value = bytes.fromhex(out["key"]["hex"]), bytes.fromhex(out["value"]["hex"])
    registry = FileRegistry(tmp_path / "schemas")
    key_version = registry.get_version("orders-key")
    assert key_version.schema_type == "JSON"
    assert key == CONFLUENT.header_bytes(key_version.schema_id) + b'{"region":"EU","id":7}'
    assert value[5:] == b'{"region":"EU","id":7,"amount":1E+3}'
    assert CONFLUENT.schema_id(value) == registry.get_version("orders-value").schema_id

    back = run("decode", *COLUMNS, *fmt, "--registry", url,
               "--key", key.hex(), "--value", value.hex())
    assert back.exit_code == 0, back.output
    assert json.loads(back.output) == {"op": "+U", "row": {"region": "EU", "id": 7,
                                                           "amount": "1000.00"}}


def test_decode_of_an_unframed_key_is_exit_2_saying_what_to_do(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'schemas'}"
    run("encode", *COLUMNS, "--key-format", "json-registry", "--value-format", "json",
        "--registry", url, "--row", '{"region": "EU", "id": 7}')
    r = run("decode", *COLUMNS, "--key-format", "json-registry", "--value-format", "json",
            "--registry", url, "--key", b'{"region":"EU","id":7}'.hex())
    assert r.exit_code == 2, r.output
    assert "magic byte is 123" in r.output and "json format" in r.output


def test_avro_registry_is_avro_confluent(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'schemas'}"
    outs = []
    for fmt, register in (("avro-registry", ["--register"]), ("avro-confluent", [])):
        r = run("encode", *COLUMNS, "--key-format", fmt, "--value-format", "json", *register,
                "--registry", url, "--json", "--row", '{"region": "EU", "id": 7}')
        assert r.exit_code == 0, r.output
        outs.append(json.loads(r.output)["key"]["hex"])
    assert outs[0] == outs[1]
    assert FileRegistry(tmp_path / "schemas").versions("orders-key") == [1]


def test_formats_lists_json_registry_and_the_aliases() -> None:
    r = run("formats")
    assert r.exit_code == 0
    lines = [line for line in r.output.splitlines() if not line.startswith(" ")]
    assert any(line.startswith("json-registry: ") for line in lines)
    assert any(line.startswith("avro-confluent (also: avro-registry): ") for line in lines)


def test_schema_context_option_reaches_the_file_registry(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'schemas'}"
    r = run("encode", *COLUMNS, "--key-format", "json-registry", "--value-format", "json",
            "--registry", url, "-o", "key.json-registry.schema-context=.flink-dev",
            "--row", '{"region": "EU", "id": 7}', "--register")
    assert r.exit_code == 0, r.output
    assert FileRegistry(tmp_path / "schemas").versions(":.flink-dev:orders-key") == [1]
