"""keyguard.guard.request: a run's flags merged with its config file and Flink DDLs, without
the command line."""

from __future__ import annotations

import json

import pytest

from keyguard.formats.errors import InvalidOptionError, UsageError
from keyguard.formats.flink_ddl import read_flink_ddl
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.entry import GuardConfig, TopicEntry
from keyguard.guard.request import (
    CheckRequest,
    DiffRequest,
    kafka_settings,
    key_sides,
    plan_check,
    scan_limit,
    topic_entries,
    topic_plans,
)

DDL = """CREATE TABLE pv (
  region STRING,
  n BIGINT,
  PRIMARY KEY (region) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'pv',
  'key.format' = 'json',
  'value.format' = 'json'
);
"""
KEY = json.dumps({"type": "record", "name": "k", "fields": [{"name": "id", "type": "long"}]})
CFG = GuardConfig(registry="mock://request", topics=(
    TopicEntry("pv", key_format="avro", partitions=3, ignore=("KG701",),
               options={"key.avro.x": "1"}),
    TopicEntry("other")), require_subject=True, scan_limit=50)


def test_the_command_lines_topic_overlays_the_config_files_entry() -> None:
    (entry,) = topic_entries(CheckRequest(topic="pv", key_schema="k.avsc", partitions=6,
                                          options={"key.avro.y": "2",
                                                   "key.fields-prefix": "k_"}), CFG)
    assert (entry.key_format, entry.key_schema, entry.partitions) == ("avro", "k.avsc", 6)
    assert dict(entry.options) == {"key.avro.x": "1", "key.avro.y": "2"}
    assert entry.key_fields_prefix == "k_" and entry.ignore == ("KG701",)


def test_without_a_topic_every_entry_of_the_config_file() -> None:
    assert [e.name for e in topic_entries(CheckRequest(), CFG)] == ["pv", "other"]
    with pytest.raises(UsageError, match="need --topic"):
        topic_entries(CheckRequest(key_schema="k.avsc"), CFG)


def test_a_ddl_says_how_its_topic_is_written_once() -> None:
    table = read_flink_ddl(DDL)
    (entry,) = topic_entries(CheckRequest(), CFG, table)
    assert (entry.key_format, entry.ignore, entry.flink_table) == ("json", ("KG701",), table)
    with pytest.raises(InvalidOptionError, match="drop --key-format"):
        topic_entries(CheckRequest(key_format="avro"), CFG, table)
    with pytest.raises(InvalidOptionError, match="not the DDL's topic"):
        topic_entries(CheckRequest(topic="other"), CFG, table)


def test_plan_check_names_one_registry() -> None:
    run = plan_check(CheckRequest(topic="t", ignore=["KG701"]), GuardConfig(),
                     default_registry="file://schemas")
    assert run.registry.url == "file://schemas" and run.selection is not None
    with pytest.raises(UsageError, match="no --registry given"):
        plan_check(CheckRequest(topic="t"), GuardConfig())


def test_settings_defer_to_the_config_file_unless_given() -> None:
    assert scan_limit(CheckRequest(), CFG) == 50
    assert scan_limit(CheckRequest(scan_limit=7), CFG) == 7
    assert kafka_settings(CheckRequest(), GuardConfig(bootstrap="b:9092")) == ("b:9092", {})
    with pytest.raises(UsageError, match="disagree"):
        kafka_settings(CheckRequest(bootstrap="a:9092",
                                    kafka={"bootstrap.servers": "b:9092"}), GuardConfig())


def test_topic_plans_read_the_candidates_and_name_their_files() -> None:
    entries = (TopicEntry("pv", key_format="avro", value_format=None, key_schema="k.avsc",
                          require_subject=False),)
    plans, files = topic_plans(CheckRequest(), CFG, entries,
                               lambda source: SchemaText("AVRO", KEY, source))
    assert plans[0].candidate_key is not None and plans[0].require_subject is False
    assert files == {"pv-key": "k.avsc"}


def test_key_sides_default_the_new_side_to_the_old() -> None:
    old, new = key_sides(DiffRequest(key_format="avro", options={"a": 1}, partitions=4,
                                     new_partitions=8))
    assert (old.format, dict(old.options), old.partitions) == ("avro", {"a": 1}, 4)
    assert (new.format, dict(new.options), new.partitions) == ("avro", {"a": 1}, 8)
    old, new = key_sides(DiffRequest(key_format="avro", options={"a": 1},
                                     new_key_format="json"))
    assert (new.format, dict(new.options)) == ("json", {})
    with pytest.raises(InvalidOptionError, match="drop --new-key-format"):
        key_sides(DiffRequest(new_key_format="json"), new_table=read_flink_ddl(DDL))
