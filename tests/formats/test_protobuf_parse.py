"""`.proto` text is compiled by protoc; errors carry protoc's line and column."""

import pytest

from keyguard.formats.errors import SchemaError
from keyguard.formats.protobuf_schema import parse_proto

SCHEMA = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "common/money.proto";
message OrderKey { int64 id = 1; string region = 2; }
message Order { OrderKey key = 1; common.Money total = 2; google.protobuf.Timestamp at = 3; }
"""
MONEY = 'syntax = "proto3"; package common; message Money { int64 units = 1; }'


def test_messages_in_file_order_with_references_and_well_known_types():
    schema = parse_proto(SCHEMA, references={"common/money.proto": MONEY})
    assert schema.syntax == "proto3"
    assert [m.name for m in schema.file.message_type] == ["OrderKey", "Order"]
    assert schema.file.package == "shop"
    assert {d.name for d in schema.dependencies} == {
        "google/protobuf/timestamp.proto", "common/money.proto"}
    fields = {f.name: f.number for f in schema.file.message_type[1].field}
    assert fields == {"key": 1, "total": 2, "at": 3}


def test_a_syntax_error_names_origin_line_and_column():
    with pytest.raises(SchemaError) as err:
        parse_proto('syntax = "proto3";\nmessage K {\n  strin x = 1;\n}\n', "orders-key v2")
    assert "line 3, column 3 of orders-key v2" in str(err.value)
    assert '"strin" is not defined' in str(err.value)


def test_a_missing_import_is_an_error_not_a_crash():
    with pytest.raises(SchemaError, match=r"missing\.proto"):
        parse_proto('syntax = "proto3";\nimport "missing.proto";\nmessage K { int32 a = 1; }\n')


@pytest.mark.parametrize("text", ["", "   \n"])
def test_empty_text_is_rejected(text):
    with pytest.raises(SchemaError, match="empty"):
        parse_proto(text)


def test_a_reference_cannot_escape_its_directory():
    with pytest.raises(SchemaError, match="leaves its directory"):
        parse_proto('syntax = "proto3";\nmessage K { int32 a = 1; }\n',
                    references={"../../etc/x.proto": MONEY})
