"""schemas/: the sample file registry is what Flink derives for the pageviews_per_region table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from keyguard.formats.registry.file import FileRegistry

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
# Flink's docs: CREATE TABLE pageviews_per_region (user_region STRING, pv BIGINT, uv BIGINT,
# PRIMARY KEY (user_region) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', ...).
COLUMNS = "user_region STRING, pv BIGINT, uv BIGINT"


def test_layout():
    reg = FileRegistry(SCHEMAS)
    assert reg.subjects() == ["pageviews_per_region-key", "pageviews_per_region-value"]
    assert reg.compatibility("pageviews_per_region-key") == "BACKWARD"
    key = reg.get_version("pageviews_per_region-key")
    assert json.loads(key.schema) == {
        "type": "record", "name": "record", "namespace": "org.apache.flink.avro.generated",
        "fields": [{"name": "user_region", "type": "string"}]}
    value = json.loads(reg.get_version("pageviews_per_region-value").schema)
    assert value["fields"][1] == {"name": "pv", "type": ["null", "long"], "default": None}


def test_equal_to_what_the_converter_derives():
    avro_schema = pytest.importorskip("keyguard.formats.avro_schema")
    sqltypes = pytest.importorskip("keyguard.formats.sqltypes")
    from keyguard.formats.projection import project

    layout = project(sqltypes.parse_columns(COLUMNS), "user_region")  # value.fields-include=ALL
    reg = FileRegistry(SCHEMAS)
    for subject, row_type in (("pageviews_per_region-key", layout.key_type),
                              ("pageviews_per_region-value", layout.value_type)):
        derived = avro_schema.to_avro_json(avro_schema.to_avro_schema(row_type))
        assert reg.get_version(subject).schema == derived  # byte for byte, as Java prints it
