"""Well-formed bytes whose values no row can hold, and types nested past the limit: typed
errors (exit 2), never a crash (exit 4)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from keyguard.formats.codec import create_codec
from keyguard.formats.errors import DecodeError, SchemaError
from keyguard.formats.schemajson import MAX_SCHEMA_DEPTH
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.cli import app


@pytest.mark.parametrize(("columns", "value_hex", "says"), [
    ("k STRING, tm TIME", "0a016112020822", "hour must be in 0..23"),  # TIME of hour 34
    ("k STRING, d DATE", "0a0161120708e80f100d1801", "month must be in 1..12"),  # month 13
])
def test_a_protobuf_value_out_of_range_is_a_decode_error(columns: str, value_hex: str,
                                                         says: str) -> None:
    codec = create_codec("protobuf", parse_columns(columns), {})
    with pytest.raises(DecodeError, match=says):
        codec.decode(bytes.fromhex(value_hex))
    lenient = create_codec("protobuf", parse_columns(columns), {"ignore-parse-errors": "true"})
    assert lenient.decode(bytes.fromhex(value_hex)) is None
    result = CliRunner().invoke(app, [
        "decode", "--columns", columns, "--primary-key", "k", "--key-format", "json",
        "--value-format", "protobuf", "--key", b'{"k":"a"}'.hex(), "--value", value_hex])
    assert result.exit_code == 2 and says in result.output, result.output


@pytest.mark.parametrize("shape", ["ARRAY<{}>", "ROW<a {}>", "MAP<STRING, {}>"])
@pytest.mark.parametrize("depth", [MAX_SCHEMA_DEPTH + 1, 5000])
def test_types_nested_past_the_limit_are_refused(shape: str, depth: int) -> None:
    inner = "INT"
    for _ in range(depth):
        inner = shape.format(inner)
    with pytest.raises(SchemaError, match=f"nested more than {MAX_SCHEMA_DEPTH} levels"):
        parse_columns(f"k STRING, v {inner}")


def test_types_nested_up_to_the_limit_are_read() -> None:
    inner = "INT"
    for _ in range(MAX_SCHEMA_DEPTH - 1):
        inner = f"ARRAY<{inner}>"
    assert parse_columns(f"k STRING, v {inner}").names == ["k", "v"]


def test_a_proto_message_too_large_for_the_runtime_is_a_schema_error(tmp_path) -> None:
    """protoc compiles a message of 5,000 fields; the protobuf runtime cannot lay it out."""
    fields = "\n".join(f"  string f{i} = {i + 1};" for i in range(5000))
    old, new = tmp_path / "k1.proto", tmp_path / "k2.proto"
    old.write_text(f'syntax = "proto3";\nmessage K {{\n{fields}\n}}\n')
    new.write_text(f'syntax = "proto3";\nmessage K {{\n{fields}\n  string extra = 6000;\n}}\n')
    result = CliRunner().invoke(app, ["diff", str(old), str(new), "--key", "--key-format",
                                      "protobuf-registry"])
    assert result.exit_code == 2, result.output
    assert "the protobuf runtime cannot load this schema" in result.output
    assert "split the message" in result.output
