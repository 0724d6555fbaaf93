"""The type model, option declarations and secret redaction."""

import pytest

from keyguard.formats.errors import InvalidOptionError, SchemaError
from keyguard.formats.options import Option, OptionSet, duration_option
from keyguard.formats.secrets import redact, redact_options, redact_url
from keyguard.formats.types import (
    ArrayType,
    DecimalType,
    IntType,
    MapType,
    RowType,
    StringType,
    TimestampType,
    row,
    walk,
)


def test_sql_spelling_carries_nullability_and_parameters():
    t = row(("d", DecimalType(precision=10, scale=2).not_null()),
            ("m", MapType(key=StringType(nullable=False), value=ArrayType(element=IntType()))))
    assert t.sql() == (
        "ROW<`d` DECIMAL(10, 2) NOT NULL, `m` MAP<STRING NOT NULL, ARRAY<INT>>> NOT NULL"
    )


def test_nullability_is_part_of_type_equality():
    assert IntType() != IntType(nullable=False)
    assert IntType().not_null() == IntType(nullable=False)


@pytest.mark.parametrize("p,s", [(0, 0), (39, 2), (5, 6), (5, -1)])
def test_decimal_parameters_are_checked(p, s):
    with pytest.raises(SchemaError, match="DECIMAL"):
        DecimalType(precision=p, scale=s)


def test_timestamp_precision_is_checked():
    with pytest.raises(SchemaError, match="TIMESTAMP precision"):
        TimestampType(precision=10)


def test_duplicate_field_names_are_rejected():
    with pytest.raises(SchemaError, match="duplicate field name 'a'"):
        row(("a", IntType()), ("a", StringType()))


def test_walk_yields_paths_of_nested_types():
    t = row(("r", RowType(fields=(), nullable=True)), ("xs", ArrayType(element=IntType())))
    assert [p for p, _ in walk(t)] == ["", "r", "xs", "xs[]"]


OPTS = OptionSet(
    "test format",
    (
        Option("flag", bool, False, "a flag"),
        Option("mode", str, "SQL", "a mode", choices=("SQL", "ISO-8601")),
        Option("count", int, 3, "a count"),
        Option("basic-auth.user-info", str, None, "credentials"),
        duration_option("interval", 1000, "a duration"),
    ),
    passthrough_prefixes=("properties.",),
)


def test_validate_types_values_and_fills_defaults():
    r = OPTS.validate({"flag": "TRUE", "mode": "iso-8601", "interval": "2 min",
                       "properties.acks": "all"})
    assert r["flag"] is True and r["mode"] == "ISO-8601" and r["count"] == 3
    assert r["interval"] == 120_000
    assert r.with_prefix("properties.") == {"acks": "all"}


def test_unknown_options_are_all_named_with_a_suggestion():
    with pytest.raises(InvalidOptionError) as exc:
        OPTS.validate({"flagg": "true", "nope": "1"})
    msg = str(exc.value)
    assert "'flagg' (did you mean 'flag'?)" in msg and "'nope'" in msg
    assert "supported options: flag, mode" in msg


def test_bad_choice_and_bad_bool_name_the_option():
    with pytest.raises(InvalidOptionError, match="'mode' must be one of SQL, ISO-8601"):
        OPTS.validate({"mode": "RFC"})
    with pytest.raises(InvalidOptionError, match="'flag' has an invalid value 'yes'"):
        OPTS.validate({"flag": "yes"})


def test_invalid_secret_value_is_not_echoed():
    opts = OptionSet("x", (Option("basic-auth.user-info", int, None, "n"),))
    with pytest.raises(InvalidOptionError) as exc:
        opts.validate({"basic-auth.user-info": "alice:s3cret"})
    assert "s3cret" not in str(exc.value)


def test_markdown_table_lists_every_option():
    table = OPTS.markdown_table()
    assert table.count("\n") == 2 + len(OPTS.options) - 1
    assert "| `mode` | SQL \\| ISO-8601 | SQL |" in table


def test_redaction_of_urls_options_and_text():
    assert redact_url("https://alice:pw@reg:8081/x") == "https://***@reg:8081/x"
    safe = redact_options({"basic-auth.user-info": "a:b", "properties.sasl.password": "p",
                           "url": "http://u:p@h", "topic": "t"})
    assert safe == {"basic-auth.user-info": "***", "properties.sasl.password": "***",
                    "url": "http://***@h", "topic": "t"}
    assert redact("token abc123 failed", ["abc123"]) == "token *** failed"


def test_resolved_options_repr_hides_secrets():
    opts = OptionSet("x", (Option("basic-auth.user-info", str, None, "creds"),),
                     passthrough_prefixes=("properties.",))
    r = opts.validate({"basic-auth.user-info": "alice:s3cret", "properties.sasl.password": "pw"})
    assert "s3cret" not in repr(r) and "'pw'" not in repr(r)
