"""`keyguard encode` looks, never writes: a registry format's ids are looked up unless
`--register` asks for registration, which the guard checks first."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from keyguard.formats.registry.file import FileRegistry
from keyguard.guard.cli import app

runner = CliRunner()
COLUMNS = ["--topic", "orders", "--columns", "id BIGINT, region STRING, amount INT",
           "--primary-key", "id,region"]
AVRO = ["--key-format", "avro-confluent", "--value-format", "avro-confluent"]
ROW = '{"id": 7, "region": "EU", "amount": 3}'


def run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), catch_exceptions=False)


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_encode_without_register_writes_nothing_and_says_how_to_register(tmp_path: Path
                                                                        ) -> None:
    registry = tmp_path / "schemas"
    (registry / "subjects").mkdir(parents=True)
    before = tree(registry)
    r = run("encode", *COLUMNS, *AVRO, "--registry", f"file://{registry}", "--row", ROW)
    assert r.exit_code == 2, r.output
    assert "orders-key" in r.output and "--register" in r.output
    assert "Traceback" not in r.output
    assert tree(registry) == before  # nothing registered


def test_register_registers_after_the_guard_then_encode_looks_the_ids_up(tmp_path: Path
                                                                         ) -> None:
    url = f"file://{tmp_path / 'schemas'}"
    r = run("encode", *COLUMNS, *AVRO, "--registry", url, "--row", ROW, "--json", "--register")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    reg = FileRegistry(tmp_path / "schemas")
    key_id = reg.get_version("orders-key").schema_id
    assert out["registered"] == [
        {"role": "key", "subject": "orders-key", "id": key_id},
        {"role": "value", "subject": "orders-value",
         "id": reg.get_version("orders-value").schema_id}]
    assert bytes.fromhex(out["key"]["hex"])[1:5] == key_id.to_bytes(4, "big")
    again = run("encode", *COLUMNS, *AVRO, "--registry", url, "--row", ROW, "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.output) == {**out, "registered": []}


def test_register_refuses_a_key_change_that_would_orphan_records(tmp_path: Path) -> None:
    """A key schema in another namespace is FULL compatible to the registry, and changes every
    key's bytes: the guard refuses it, exit 1, and nothing is registered."""
    url = f"file://{tmp_path / 'schemas'}"
    assert run("encode", *COLUMNS, *AVRO, "--registry", url, "--row", ROW,
               "--register").exit_code == 0
    before = tree(tmp_path / "schemas")
    moved = ["-o", "key.avro-confluent.schema=" + json.dumps({
        "type": "record", "name": "Key", "namespace": "com.acme.v2",
        "fields": [{"name": "id", "type": "long"}, {"name": "region", "type": "string"}]})]
    r = run("encode", *COLUMNS, *AVRO, *moved, "--registry", url, "--row", ROW, "--register")
    assert r.exit_code == 1, r.output
    assert "nothing was registered" in r.output
    assert tree(tmp_path / "schemas") == before


def test_register_on_formats_without_a_registry_is_a_usage_error() -> None:
    r = run("encode", *COLUMNS, "--key-format", "json", "--value-format", "json", "--row", ROW,
            "--register")
    assert r.exit_code == 2 and "drop --register" in r.output


def test_header_framing_prints_the_guid_headers_and_decode_reads_them_back(tmp_path: Path,
                                                                          ) -> None:
    """Under framing=confluent-header the key and value are bare Avro bodies and each side's
    schema GUID is a header; `decode --header` reads them back, and without the headers the
    record is not readable (exit 2, saying the id may be in a header)."""
    url = f"file://{tmp_path / 'schemas'}"
    framing = ["-o", "key.avro-confluent.framing=confluent-header",
               "-o", "value.avro-confluent.framing=confluent-header"]
    r = run("encode", *COLUMNS, *AVRO, *framing, "--registry", url, "--row", ROW, "--json",
            "--register")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    reg = FileRegistry(tmp_path / "schemas")
    guids = {side: reg.get_version(f"orders-{side}").guid for side in ("key", "value")}
    assert [x.get("guid") for x in out["registered"]] == [guids["key"], guids["value"]]
    assert out["headers"] == [
        {"name": f"__{side}_schema_id", "bytes": 17,
         "hex": "01" + guids[side].replace("-", "")} for side in ("key", "value")]
    prefixed = json.loads(run("encode", *COLUMNS, *AVRO, "--registry", url, "--row", ROW,
                              "--json", "--register").output)
    assert bytes.fromhex(prefixed["key"]["hex"])[5:] == bytes.fromhex(out["key"]["hex"])
    assert prefixed["headers"] == []
    args = [*COLUMNS, *AVRO, "--registry", url, "--key", out["key"]["hex"],
            "--value", out["value"]["hex"]]
    headers = [a for h in out["headers"] for a in ("--header", f"{h['name']}={h['hex']}")]
    back = run("decode", *args, *headers)
    assert back.exit_code == 0, back.output
    assert json.loads(back.output)["row"] == json.loads(ROW)
    bare = run("decode", *args)
    assert bare.exit_code == 2 and "'__key_schema_id'" in bare.output
    assert "read without its headers" in bare.output
