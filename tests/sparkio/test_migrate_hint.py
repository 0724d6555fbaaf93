"""The `keyguard migrate` command a breaking key change suggests (`diff --key`, `check`) is
filled in from the Flink DDLs: run as printed, with --dry-run, it plans against the topic."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from broker import new_topic
from confluent_kafka import Producer
from typer.testing import CliRunner

from keyguard.formats.flink_ddl import load_flink_ddl
from keyguard.formats.partitioner import partition_for
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.guard.cli import app as guard_app
from keyguard.sparkio.cli_commands import migrate

ROWS = [{"id": i, "region": "eu", "name": f"n{i}"} for i in range(8)]


def ddl(path: Path, topic: str, bootstrap: str, pk: str, fmt: str, url: str = "") -> Path:
    """The orders table as Flink declares it: key `pk`, key and value format `fmt`."""
    registry = f",\n  'key.{fmt}.url' = '{url}', 'value.{fmt}.url' = '{url}'" if url else ""
    path.write_text(f"""CREATE TABLE orders (
  id BIGINT, region STRING, name STRING,
  PRIMARY KEY ({pk}) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = '{topic}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = '{fmt}',
  'value.format' = '{fmt}'{registry}
);
""")
    return path


def produce(table_ddl: Path) -> None:
    """The rows, written as the DDL's Flink job writes them (its schemas registered)."""
    table = load_flink_ddl(table_ddl)
    plan = open_plan(table.columns, dict(table.options))
    bind_plan_schema_ids(plan)
    p = Producer({"bootstrap.servers": table.properties["properties.bootstrap.servers"],
                  "log_level": 0})
    for row in ROWS:
        key, value = plan.encode(row)
        p.produce(table.topic, key=key, value=value, partition=partition_for(key, 3))
    assert p.flush(15) == 0


def suggested(report: str) -> list[str]:
    """The arguments of the `keyguard migrate` command a JSON report's notes suggest."""
    notes = [n for n in json.loads(report)["notes"] if "keyguard migrate" in n]
    assert len(notes) == 1, notes
    return shlex.split(notes[0].split("keyguard migrate ", 1)[1])


def run_migrate(args: list[str]) -> Any:
    app = typer.Typer()
    app.command("migrate")(migrate)
    app.command("other")(lambda: None)  # two commands: typer keeps `migrate` as a subcommand
    return CliRunner().invoke(app, ["migrate", *args])


def assert_plans(args: list[str], state: Path) -> None:
    assert not [a for a in args if a.startswith("<")], args  # every placeholder filled in
    dry = run_migrate([*args, "--state", str(state), "--dry-run", "--format", "json"])
    assert dry.exit_code == 0, dry.output
    doc = json.loads(dry.stdout)  # stderr: notes on the DDLs
    assert doc["dry_run"] is True
    assert doc["plan"]["rewrites"] == len(ROWS) and doc["plan"]["tombstones"] == len(ROWS)


def test_diff_of_two_ddls_suggests_a_migration_that_plans(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    old = ddl(Path("old orders.sql"), topic, kafka_bootstrap, "id", "json")
    new = ddl(Path("new.sql"), topic, kafka_bootstrap, "id, region", "json")
    produce(old)
    r = CliRunner().invoke(guard_app, ["diff", "--key", "--old-flink-ddl", str(old),
                                       "--flink-ddl", str(new), "-f", "json"])
    assert r.exit_code == 1, r.output
    args = suggested(r.stdout)
    assert args[:4] == ["--flink-ddl", "new.sql", "--bootstrap", kafka_bootstrap]
    assert args[4:] == ["--old-flink-ddl", "old orders.sql"]  # quoted in the note
    assert "'old orders.sql'" in json.loads(r.stdout)["notes"][0]
    assert_plans(args, tmp_path / "state.json")


def test_check_of_a_ddl_suggests_a_migration_that_plans(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The old key columns come from the registered key schema, the registry from the run."""
    monkeypatch.chdir(tmp_path)
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    url = f"file://{tmp_path / 'reg'}"
    produce(ddl(tmp_path / "old.sql", topic, kafka_bootstrap, "id", "avro-confluent", url))
    new = ddl(Path("new.sql"), topic, kafka_bootstrap, "id, region", "avro-confluent", url)
    r = CliRunner().invoke(guard_app, ["check", "--flink-ddl", str(new), "--registry", url,
                                       "-f", "json"])
    assert r.exit_code == 1, r.output
    args = suggested(r.stdout)
    assert args == ["--flink-ddl", "new.sql", "--bootstrap", kafka_bootstrap,
                    "--old-key-format", "avro-confluent", "--old-option", "primary-key=id",
                    "--registry", url]
    assert_plans(args, tmp_path / "state.json")
