"""Table <-> message: the proto3 message derived from a row type, the row type of a message,
the PROTOBUF schema type (files, subjects, identity) and the message-index framing."""

from __future__ import annotations

import pickle

import pytest

from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.framing import CONFLUENT_PROTOBUF, message_index_bytes, read_message_index
from keyguard.formats.protobuf_schema import (
    find_message,
    message_row_type,
    parse_proto,
    to_proto,
)
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.schema_identity import canonical_form, derived_schema_id
from keyguard.formats.schemafile import SchemaText, read_schema_file, read_schema_source
from keyguard.formats.sqltypes import parse_type

TABLE = parse_type(
    "ROW<id BIGINT NOT NULL, name STRING, tags ARRAY<STRING NOT NULL>, "
    "counts MAP<STRING, INT NOT NULL>, at TIMESTAMP(3), day DATE, amount DECIMAL(10, 2), "
    "address ROW<street STRING, no INT NOT NULL>, raw BYTES NOT NULL, tiny TINYINT>").not_null()


def test_the_derived_message_is_confluents_row_with_optional_nullables_and_entry_maps():
    text = to_proto(TABLE)
    assert text.startswith('syntax = "proto3";\npackage io.confluent.protobuf.generated;\n')
    body = [line.strip() for line in text.splitlines() if line.startswith("  ")]
    meta = "(.confluent.field_meta) = {params: "
    assert body == [
        "int64 id = 1;",
        "optional string name = 2;",
        "repeated string tags = 3;",
        "repeated CountsEntry counts = 4;",
        "optional .google.protobuf.Timestamp at = 5;",
        "optional .google.type.Date day = 6;",
        f'optional .confluent.type.Decimal amount = 7 [{meta}[{{key: "precision", value: "10"}}, '
        '{key: "scale", value: "2"}]}];',
        "optional address_Row address = 8;",
        "bytes raw = 9;",
        f'optional int32 tiny = 10 [{meta}[{{key: "connect.type", value: "int8"}}]}}];',
        "message CountsEntry {",
        "optional string key = 1;",
        "int32 value = 2;",
        "}",
        "message address_Row {",
        "optional string street = 1;",
        "int32 no = 2;",
        "}",
    ]
    for imported in ("google/protobuf/timestamp.proto", "google/type/date.proto",
                     "confluent/type/decimal.proto", "confluent/meta.proto"):
        assert f'import "{imported}";' in text


def test_not_null_messages_carry_flinks_not_null_and_read_back_not_null():
    row = parse_type("ROW<at TIMESTAMP_LTZ(3) NOT NULL, r ROW<x INT> NOT NULL>").not_null()
    text = to_proto(row)
    assert 'params: [{key: "flink.version", value: "1"}, {key: "flink.notNull", value: ' \
        '"true"}]' in text
    assert message_row_type(parse_proto(text)).sql() == \
        "ROW<`at` TIMESTAMP_LTZ(9) NOT NULL, `r` ROW<`x` INT> NOT NULL> NOT NULL"


def test_the_row_type_of_the_derived_message_gives_the_table_back_up_to_protobufs_types():
    back = message_row_type(parse_proto(to_proto(TABLE)))
    assert back.sql() == (
        "ROW<`id` BIGINT NOT NULL, `name` STRING, `tags` ARRAY<STRING NOT NULL> NOT NULL, "
        "`counts` MAP<STRING NOT NULL, INT NOT NULL> NOT NULL, `at` TIMESTAMP_LTZ(9), "
        "`day` DATE, `amount` DECIMAL(10, 2), `address` ROW<`street` STRING, `no` INT NOT "
        "NULL>, `raw` BYTES NOT NULL, `tiny` TINYINT> NOT NULL")


def test_protocs_maps_read_as_maps_too():
    schema = parse_proto('syntax = "proto3"; message M { map<string, int64> m = 1; }')
    assert message_row_type(schema).sql() == \
        "ROW<`m` MAP<STRING NOT NULL, BIGINT NOT NULL> NOT NULL> NOT NULL"


def test_a_message_reads_enums_as_strings_unsigned_as_bigint_and_wrappers_as_nullable():
    schema = parse_proto("""syntax = "proto3";
        import "google/protobuf/wrappers.proto";
        message K {
          enum Kind { A = 0; B = 1; }
          Kind kind = 1; uint32 u = 2; sint64 s = 3; fixed32 f = 4;
          google.protobuf.StringValue label = 5;
          oneof pick { string x = 6; int32 y = 7; }
        }""")
    assert message_row_type(schema).sql() == (
        "ROW<`kind` STRING NOT NULL, `u` BIGINT NOT NULL, `s` BIGINT NOT NULL, "
        "`f` BIGINT NOT NULL, `label` STRING, `x` STRING, `y` INT> NOT NULL")


def test_a_recursive_message_has_no_row_type():
    schema = parse_proto('syntax = "proto3"; message Node { Node next = 1; int32 v = 2; }')
    with pytest.raises(UnsupportedTypeError, match="refers back to itself"):
        message_row_type(schema)


@pytest.mark.parametrize("columns", ["a ARRAY<ARRAY<INT NOT NULL>>",
                                     "m MAP<STRING, ARRAY<INT NOT NULL>>", "`a b` INT"])
def test_columns_without_a_protobuf_field_are_refused(columns: str):
    with pytest.raises(UnsupportedTypeError):
        to_proto(parse_type(f"ROW<{columns}>").not_null())


def test_messages_are_found_by_simple_dotted_or_full_name_with_their_index():
    schema = parse_proto("""syntax = "proto3"; package p;
        message A { message Inner { int32 x = 1; } int32 a = 1; }
        message B { int32 b = 1; }""")
    assert find_message(schema)[1] == (0,)
    assert find_message(schema, "B")[1] == (1,)
    assert find_message(schema, "p.B")[1] == (1,)
    assert find_message(schema, "A.Inner")[1] == (0, 0)
    with pytest.raises(SchemaError, match=r"messages: A, A\.Inner, B"):
        find_message(schema, "C")


def test_schema_type_protobuf_reads_files_and_is_located_when_broken(tmp_path):
    path = tmp_path / "key.proto"
    path.write_text('syntax = "proto3";\nmessage K { int64 id = 1; string r = 2; }\n')
    text = read_schema_file(path)
    assert text.schema_type == "PROTOBUF"
    assert text.row_type().sql() == "ROW<`id` BIGINT NOT NULL, `r` STRING NOT NULL> NOT NULL"
    with pytest.raises(SchemaError, match=r"bad\.proto.*line 2"):
        SchemaText("PROTOBUF", 'syntax = "proto3";\nmessage K { in x = 1; }\n', "bad.proto")


def test_identity_ignores_comments_and_layout_but_not_field_numbers():
    one = 'syntax = "proto3";\nmessage K { int64 id = 1; }\n'
    same = '// the key\nsyntax = "proto3";\n\nmessage K {\n  int64 id = 1; // id\n}\n'
    renumbered = 'syntax = "proto3";\nmessage K { int64 id = 2; }\n'
    assert canonical_form(one, "PROTOBUF") == canonical_form(same, "PROTOBUF")
    assert derived_schema_id(one, "PROTOBUF") == derived_schema_id(same, "PROTOBUF")
    assert canonical_form(one, "PROTOBUF") != canonical_form(renumbered, "PROTOBUF")


def test_the_file_registry_registers_and_reads_protobuf_subjects(tmp_path):
    (tmp_path / "subjects").mkdir()
    registry = FileRegistry(tmp_path)
    text = 'syntax = "proto3";\nmessage K { int64 id = 1; }\n'
    schema_id = registry.register("t-key", text, "PROTOBUF")
    assert (tmp_path / "subjects/t-key/v1.proto").exists()
    assert registry.register("t-key", "// same\n" + text, "PROTOBUF") == schema_id
    assert registry.get_by_id(schema_id) == ("PROTOBUF", text.strip())
    read = read_schema_source("subject:t-key", registry=registry)
    assert read.row_type().names == ["id"]


@pytest.mark.parametrize("index, encoded", [
    ((0,), b"\x00"), ((1,), b"\x02\x02"), ((0, 0), b"\x04\x00\x00"), ((1, 0), b"\x04\x02\x00"),
    ((64,), b"\x02\x80\x01"),
])
def test_message_index_bytes_as_confluent_writes_them(index, encoded):
    assert message_index_bytes(index) == encoded
    assert read_message_index(b"x" + encoded + b"body", 1) == (index, 1 + len(encoded))
    framed, _ = CONFLUENT_PROTOBUF.wrap(7, b"body", index)
    assert framed == b"\x00\x00\x00\x00\x07" + encoded + b"body"
    assert CONFLUENT_PROTOBUF.schema_id(framed) == 7
    assert CONFLUENT_PROTOBUF.message_index(framed) == index
    assert CONFLUENT_PROTOBUF.body(framed) == b"body"


@pytest.mark.parametrize("data", [b"\x00\x00\x00\x00\x07", b"\x00\x00\x00\x00\x07\x04\x02",
                                  b"\x00\x00\x00\x00\x07\x03\x02"])
def test_a_cut_or_negative_message_index_is_an_error(data):
    with pytest.raises(ValueError):
        CONFLUENT_PROTOBUF.body(data)


def test_parsed_schemas_pickle():
    schema = parse_proto(to_proto(TABLE))
    assert pickle.loads(pickle.dumps(schema)).file == schema.file
