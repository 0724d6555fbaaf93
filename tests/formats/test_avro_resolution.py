"""Avro record-name resolution as Avro Java does it (formats/avro_resolution.py).

The golden cases (data/avro_resolution/golden.jsonl) hold what Avro Java's
GenericDatumReader(writer, reader), Flink's avro-confluent reader, read from bytes written with
the writer schema: the datum, or its error. Regenerate them with
data/avro_resolution/capture.py (needs a JDK and Avro's jar).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from test_avro_format import typed_rows

from keyguard.formats.avro_resolution import as_reader_names
from keyguard.formats.avro_schema import canonical_form, to_avro_schema
from keyguard.formats.errors import DecodeError
from keyguard.formats.types import BigIntType, StringType, row

GOLDEN = Path(__file__).parent / "data" / "avro_resolution" / "golden.jsonl"
CASES = [json.loads(line) for line in GOLDEN.read_text().splitlines()]

#: Where keyguard cannot read as Java does, it fails instead of reading something else.
KNOWN_DIFFERENCES = {
    # The reader union has two records with the short name A (r1.A, r2.A). Java's
    # firstMatchingBranch takes the last structural match with the writer's short name (r2.A);
    # fastavro matches short names, so it would take r1.A and fill r1.A's defaults. keyguard
    # fails to read that branch rather than read it into the wrong record.
    "union_last_short_name_wins_tagged",
}


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return list(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _read(writer: Any, reader: Any, data: bytes) -> Any:
    w = fastavro.parse_schema(as_reader_names(writer, reader), named_schemas={})
    r = fastavro.parse_schema(reader, named_schemas={})
    buf = io.BytesIO(data)
    value = fastavro.schemaless_reader(buf, w, r)
    assert buf.tell() == len(data)
    return _plain(value)


def test_the_golden_file_covers_each_rule() -> None:
    names = {c["name"] for c in CASES}
    assert len(CASES) == len(names) >= 50
    for rule in ("top_level_record_renamed", "nested_record_renamed", "recursive_renamed",
                 "union_structure_match_picks_first_fitting", "enum_renamed_field",
                 "fixed_renamed_field", "reader_alias_rename", "union_no_structure_match",
                 "field_alias_in_renamed_record", "union_shallow_fit_picks_failing_branch"):
        assert rule in names
    assert KNOWN_DIFFERENCES <= names
    assert sum("java" in c for c in CASES) > sum("java_error" in c for c in CASES) > 10


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_reads_as_avro_java_reads(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    if "java" in case and case["name"] not in KNOWN_DIFFERENCES:
        assert _read(case["writer"], case["reader"], data) == case["java"]
    else:
        with pytest.raises(Exception):  # noqa: B017 - fastavro raises several types
            _read(case["writer"], case["reader"], data)


def test_names_are_untouched_where_they_already_match() -> None:
    schema = to_avro_schema(row(("id", BigIntType().not_null()), ("name", StringType())))
    renamed = as_reader_names(schema, schema)
    assert canonical_form(renamed) == canonical_form(schema)
    assert '"name":"org.apache.flink.avro.generated.record"' in canonical_form(renamed)


def test_a_confluent_producer_record_reads_as_flinks_derived_record() -> None:
    """The avro-confluent codec reads a com.acme.Order (a Java producer's) with the schema
    Flink derives (org.apache.flink.avro.generated.record, nested record_ship)."""
    from keyguard.formats.avro_confluent_format import AVRO_CONFLUENT_FORMAT
    from keyguard.formats.codec import CodecContext
    from keyguard.formats.registry.mock import MockRegistry

    order = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
        {"name": "id", "type": "long"},
        {"name": "ship", "type": ["null", {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": "string"}]}], "default": None}]}
    t = row(("id", BigIntType().not_null()),
            ("ship", row(("street", StringType().not_null()))))
    registry = MockRegistry()
    schema_id = registry.register("orders-value", json.dumps(order))
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(order, named_schemas={}),
                               {"id": 7, "ship": {"street": "Main"}})
    data = b"\0" + schema_id.to_bytes(4, "big") + buf.getvalue()
    options = AVRO_CONFLUENT_FORMAT.options.validate({"url": "mock://unused"})
    codec = AVRO_CONFLUENT_FORMAT.build(
        t, options, CodecContext(role="value", topic="orders", registry=registry))
    assert codec.avro_schema["name"] == "record"  # type: ignore[attr-defined]
    assert codec.decode(data) == {"id": 7, "ship": {"street": "Main"}}
    # A writer whose fields do not fit stays a DecodeError, as Java's is an AvroTypeException.
    other = {"type": "record", "name": "Order", "namespace": "com.acme",
             "fields": [{"name": "id", "type": "string"}]}
    bad_id = registry.register("other-value", json.dumps(other))
    with pytest.raises(DecodeError, match="not a valid Avro record"):
        codec.decode(b"\0" + bad_id.to_bytes(4, "big") + b"\x02x")


def _renamed(schema: Any, seen: list[str]) -> Any:
    """`schema` with every record, enum and fixed renamed, as a Java producer would name them."""
    if isinstance(schema, list):
        return [_renamed(s, seen) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("type") in ("record", "enum", "fixed"):
        seen.append(out["name"])
        out["name"], out["namespace"] = f"Type{len(seen)}", "com.acme"
    if "fields" in out:
        out["fields"] = [{**f, "type": _renamed(f["type"], seen)} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = _renamed(out[key], seen)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_rows())
def test_records_renamed_by_the_writer_read_back_as_written(table: Any) -> None:
    """Any table's rows, written under other record names, read as written with Flink's schema."""
    from keyguard.formats.avro_format import AvroWriter

    t, rows = table
    schema = to_avro_schema(t)
    writer = AvroWriter(t, schema)
    renamed = _renamed(schema, [])
    for r in rows:
        data = writer.encode(r)
        assert writer.decode(data, as_reader_names(renamed, schema)) == writer.decode(data)
