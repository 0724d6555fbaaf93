"""`keyguard encode/decode` with the protobuf formats: .proto schema files, the file registry."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from keyguard.guard.cli import app

runner = CliRunner()
KEY = ('syntax = "proto3";\npackage shop;\n// the key\n'
       'message OrderKey { int64 id = 1; string region = 2; }\n')
VALUE = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string region = 2;
  optional string note = 3;
  google.protobuf.Timestamp at = 4;
}
"""
ROW = '{"id": 7, "region": "eu", "note": null, "at": "2024-01-01T00:00:00Z"}'


def run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def _files(tmp_path):
    (tmp_path / "key.proto").write_text(KEY)
    (tmp_path / "value.proto").write_text(VALUE)
    (tmp_path / "reg/subjects").mkdir(parents=True)
    return ["--topic", "orders", "--key-schema", str(tmp_path / "key.proto"),
            "--value-schema", str(tmp_path / "value.proto"),
            "--key-format", "protobuf-registry", "--value-format", "protobuf-registry",
            "--registry", f"file://{tmp_path / 'reg'}"]


def test_encode_registers_proto_subjects_and_decode_reads_the_row_back(tmp_path):
    common = _files(tmp_path)
    r = run("encode", *common, "--row", ROW, "--json", "--register")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    key, value = bytes.fromhex(out["key"]["hex"]), bytes.fromhex(out["value"]["hex"])
    # magic byte, the id, message index [0] as one byte, then the runtime's body
    assert key[0] == 0 and key[5] == 0 and key[6:] == b"\x08\x07\x12\x02eu"
    assert value[6:] == b"\x08\x07\x12\x02eu\x22\x06\x08\x80\x81\xc8\xac\x06"
    assert (tmp_path / "reg/subjects/orders-key/v1.proto").read_text().strip() == KEY.strip()
    assert (tmp_path / "reg/subjects/orders-value/v1.proto").exists()
    r = run("decode", *common, "--key", out["key"]["hex"], "--value", out["value"]["hex"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["row"] == {"id": 7, "region": "eu", "note": None,
                                          "at": "2024-01-01T00:00:00+00:00"}
    # Encoding again, read-only, finds the same ids: the registered schemas are the same.
    again = json.loads(run("encode", *common, "--row", ROW, "--json").output)
    assert again == {**out, "registered": []}


def test_bare_protobuf_from_columns_and_its_errors():
    columns = ["--topic", "t", "--columns", "id BIGINT, name STRING, tags ARRAY<STRING>",
               "--primary-key", "id", "--key-format", "protobuf", "--value-format", "protobuf"]
    r = run("encode", *columns, "--row", '{"id": 150, "name": null, "tags": ["a"]}', "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["key"]["hex"] == "089601"
    assert out["value"]["hex"] == "0896011a0161"
    # A null element: Flink's protobuf writes the string default ("" or the literal option).
    r = run("encode", *columns, "--row", '{"id": 1, "name": "x", "tags": ["a", null]}',
            "-o", "value.protobuf.write-null-string-literal=N", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["value"]["hex"].endswith("1a01611a014e")
    r = run("encode", *columns, "--row", '{"id": "x"}')
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_formats_lists_both_protobuf_formats():
    r = run("formats")
    assert r.exit_code == 0
    assert "\nprotobuf: " in r.output
    assert "\nprotobuf-registry (also: proto-registry): " in r.output


def test_bare_protobuf_writes_the_schema_files_field_numbers(tmp_path):
    (tmp_path / "key.proto").write_text(
        'syntax = "proto3";\nmessage K { string region = 5; int64 id = 2; }\n')
    (tmp_path / "value.proto").write_text(
        'syntax = "proto3";\nmessage V { string region = 5; int64 id = 2; bool ok = 9; }\n')
    r = run("encode", "--topic", "t", "--key-schema", str(tmp_path / "key.proto"),
            "--value-schema", str(tmp_path / "value.proto"),
            "--key-format", "protobuf", "--value-format", "protobuf",
            "--row", '{"id": 1, "region": "eu", "ok": true}', "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["key"]["hex"] == "10012a026575"  # id = 2 first, then region = 5
    assert out["value"]["hex"] == "10012a0265754801"
