"""Key/value projection follows Flink's upsert-kafka rules."""

import pytest

from keyguard.formats.errors import InvalidOptionError, NullKeyError, SchemaError
from keyguard.formats.projection import parse_primary_key, project
from keyguard.formats.types import BigIntType, IntType, StringType, row

TABLE = row(("a", IntType()), ("b", StringType()), ("c", BigIntType()))


def test_key_follows_primary_key_declaration_order_not_column_order():
    layout = project(TABLE, "b, a")
    assert layout.key_type.names == ["b", "a"]
    assert layout.key_row({"a": 1, "b": "B1", "c": 3}) == {"b": "B1", "a": 1}


def test_primary_key_columns_become_not_null_everywhere():
    layout = project(TABLE, ["a"])
    assert layout.key_type.field("a").type == IntType(nullable=False)
    assert layout.value_type.field("a").type == IntType(nullable=False)
    assert layout.table.field("b").type.nullable  # non-key columns keep their nullability


def test_value_fields_include_all_and_except_key():
    assert project(TABLE, "a").value_type.names == ["a", "b", "c"]
    assert project(TABLE, "a", value_fields_include="except_key").value_type.names == ["b", "c"]


def test_key_fields_prefix_is_stripped_for_the_key_format():
    table = row(("k_id", IntType()), ("name", StringType()))
    layout = project(table, "k_id", key_fields_prefix="k_", value_fields_include="EXCEPT_KEY")
    assert layout.key_type.names == ["id"]
    assert layout.key_row({"k_id": 7, "name": "x"}) == {"id": 7}
    assert layout.table_row({"id": 7}, {"name": "x"}) == {"k_id": 7, "name": "x"}


def test_prefix_with_value_fields_include_all_is_rejected_like_flink():
    table = row(("k_id", IntType()), ("name", StringType()))
    with pytest.raises(InvalidOptionError, match="EXCEPT_KEY"):
        project(table, "k_id", key_fields_prefix="k_")


def test_prefix_must_start_every_key_column():
    with pytest.raises(InvalidOptionError, match="do not start with"):
        project(TABLE, "a", key_fields_prefix="k_", value_fields_include="EXCEPT_KEY")


def test_unknown_primary_key_column_names_the_columns():
    with pytest.raises(SchemaError, match="zz") as exc:
        project(TABLE, "a,zz")
    assert "a, b, c" in str(exc.value)


def test_null_key_value_is_a_typed_error_naming_the_column():
    with pytest.raises(NullKeyError, match="'b' is null"):
        project(TABLE, "a,b").key_row({"a": 1, "b": None}, where="row 3")


def test_tombstone_reassembles_key_columns_only():
    layout = project(TABLE, "a", value_fields_include="EXCEPT_KEY")
    assert layout.table_row({"a": 5}, None) == {"a": 5, "b": None, "c": None}


@pytest.mark.parametrize("spec", ["", " , ", []])
def test_empty_primary_key_is_rejected(spec):
    with pytest.raises(InvalidOptionError, match="primary key"):
        parse_primary_key(spec)


def test_duplicate_primary_key_column_is_rejected():
    with pytest.raises(InvalidOptionError, match="twice"):
        parse_primary_key("a,b,a")
