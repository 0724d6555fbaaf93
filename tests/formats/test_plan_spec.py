"""The resolved plan: options validated once into a frozen, picklable PlanSpec; codecs built
from it validate nothing again and write the same bytes."""

from __future__ import annotations

import pickle

import pytest

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.json_format import TIMESTAMP_FORMAT, TimestampStandard
from keyguard.formats.plan import (
    KEY_FORMAT,
    TOPIC,
    VALUE_FIELDS_INCLUDE,
    FieldsInclude,
    resolve_options,
    resolve_plan,
)
from keyguard.formats.raw_format import ENDIANNESS, Endianness
from keyguard.formats.sqltypes import parse_columns

TABLE = parse_columns("id INT, region STRING, ts TIMESTAMP(3), v STRING")
OPTIONS = {"topic": "t", "primary-key": "region, id", "key.format": "json",
           "value.format": "csv", "value.fields-include": "except_key",
           "key.json.timestamp-format.standard": "iso-8601", "value.csv.field-delimiter": "\\t"}
ROW = {"id": 7, "region": "EMEA", "ts": None, "v": "x"}


def test_options_are_validated_once_each(validations: list[str]) -> None:
    spec = resolve_options(OPTIONS).project(TABLE)
    assert validations == ["upsert-kafka", "json", "csv"]
    spec.build()
    spec.build()
    assert validations == ["upsert-kafka", "json", "csv"], "building codecs validated again"


def test_the_spec_pickles_and_builds_the_same_bytes() -> None:
    spec = resolve_options(OPTIONS).project(TABLE)
    back = pickle.loads(pickle.dumps(spec))
    assert back == spec
    assert back.build().encode(ROW) == resolve_plan(TABLE, OPTIONS).encode(ROW)
    assert back.build().encode(ROW) == (b'{"region":"EMEA","id":7}', b"\tx")


def test_options_read_back_typed_by_their_declaration() -> None:
    opts = resolve_options(OPTIONS)
    assert opts.table[TOPIC] == "t" and opts.table[KEY_FORMAT] == "json"
    assert opts.table[VALUE_FIELDS_INCLUDE] is FieldsInclude.EXCEPT_KEY
    assert opts.key.resolved[TIMESTAMP_FORMAT] is TimestampStandard.ISO_8601
    given = {k: v for k, v in OPTIONS.items() if not k.startswith("value.csv.")}
    raw = resolve_options({**given, "value.format": "raw",
                           "value.raw.endianness": "LITTLE-ENDIAN"})
    assert raw.value.resolved[ENDIANNESS] is Endianness.LITTLE
    # The plan still speaks the old vocabulary: members equal their option text.
    assert raw.value.resolved[ENDIANNESS] == "little-endian"


def test_an_enum_option_rejects_other_values_naming_the_choices() -> None:
    with pytest.raises(InvalidOptionError) as err:
        resolve_options({**OPTIONS, "key.json.timestamp-format.standard": "RFC"})
    assert "must be one of SQL, ISO-8601, got 'RFC'" in str(err.value)
