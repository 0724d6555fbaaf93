"""sparkio.migrate and `keyguard migrate --spark`: the topic read, planned and written by Spark
tasks, no process holding the table; the same plan, writes, verification and report as
`keyguard migrate`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from broker import new_topic
from confluent_kafka import Producer
from test_migrate import (
    COLS,
    V1,
    V2,
    _row,
    cli,
    cli_args,
    consumer_table,
    migration,
    phantom_topic,
    produce,
    rows,
)

from keyguard import sparkio
from keyguard.formats.errors import DecodeError
from keyguard.guard.offsets import KafkaRanges
from keyguard.sparkio.migrate_report import render_text
from keyguard.sparkio.migrate_spark import run_on_spark
from keyguard.sparkio.migrate_topic import migrate_topic

pytestmark = pytest.mark.slow


def test_spark_migrate_repairs_phantoms_like_the_command(spark: Any, kafka_bootstrap: str,
                                                         tmp_path: Path) -> None:
    topic, expected = phantom_topic(kafka_bootstrap)
    # the plan the command makes, as a dry run, to compare with
    local = migrate_topic(migration(kafka_bootstrap, topic, tmp_path, dry_run=True))
    report = sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=COLS,
                             old=[V1], new=V2, state_path=tmp_path / "spark.json")
    assert report.plan is not None and local.plan is not None
    assert report.plan.held and not report.plan.rewrites  # the writes stayed in the executors
    assert (report.plan.rewrite_count, report.plan.tombstone_count) == \
        (len(local.plan.rewrites), len(local.plan.tombstones))
    assert report.plan.partitions_touched() == local.plan.partitions_touched()
    assert (report.plan.live_keys, report.plan.phantom_keys, report.plan.encodings) == \
        (local.plan.live_keys, local.plan.phantom_keys, local.plan.encodings)
    assert report.records_read == local.records_read == 17
    assert (report.rewrites_acknowledged, report.tombstones_acknowledged) == (3, 9)
    assert report.verification is not None and report.verification.clean
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected
    again = sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=COLS,
                            old=[V1], new=V2, state_path=tmp_path / "spark.json")
    assert again.wrote_nothing and again.resumed_from == "verified"


def test_stretches_of_two_records_and_a_round_trip_keep_every_row(spark: Any,
                                                                  kafka_bootstrap: str,
                                                                  tmp_path: Path) -> None:
    """Every partition cut into stretches of two offsets (one task each, their slots combined
    by the shuffle in whatever order the tasks finish); then back to the old key: every row is
    kept each time, under the last key only."""
    topic, expected = phantom_topic(kafka_bootstrap)
    for new, old, options in ((V2, [V1, V2], V2), (V1, [V1, V2], V1)):
        report = sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=COLS,
                                 old=old, new=new, state_path=tmp_path / "trip.json",
                                 chunk_records=2)
        assert report.verification is not None and report.verification.clean, \
            render_text(report)
        table = rows(consumer_table(kafka_bootstrap, topic, options))
        assert [(r["id"], r["name"]) for r in table] == [(r["id"], r["name"]) for r in expected]


def test_a_write_that_lands_after_the_read_is_carried_by_the_next_round(
        spark: Any, kafka_bootstrap: str, tmp_path: Path) -> None:
    """Producers write while the tasks plan: one on the new key (a newer value of row 7), one
    on the old key (row 1): the next round reads both, and the table ends with both values."""
    topic, expected = phantom_topic(kafka_bootstrap)
    heard: list[str] = []

    def progress(done: int, total: int, elapsed: float, what: str) -> None:
        heard.append(what)
        if heard.count("records read and planned") == 1 and what == "records read and planned":
            produce(kafka_bootstrap, topic, V2, [(_row(7, "newer"), False)])
            produce(kafka_bootstrap, topic, V1, [(_row(1, "again"), False)])

    m = migration(kafka_bootstrap, topic, tmp_path)
    report = run_on_spark(spark, m, chunk_records=3, progress=progress)
    assert any(n.startswith("round 2:") for n in report.notes), report.notes
    assert report.verification is not None and report.verification.clean
    want = {1: _row(1, "again"), 7: _row(7, "newer")}
    assert rows(consumer_table(kafka_bootstrap, topic)) == [want.get(r["id"], r)
                                                            for r in expected]
    assert "rewrites acknowledged" in heard and "tombstones acknowledged" in heard


def test_the_command_on_spark_plans_what_the_command_plans(spark: Any, kafka_bootstrap: str,
                                                           tmp_path: Path) -> None:
    topic, expected = phantom_topic(kafka_bootstrap)
    here = cli(*cli_args(kafka_bootstrap, topic, tmp_path, "--dry-run", "--format", "json"))
    there = cli(*cli_args(kafka_bootstrap, topic, tmp_path, "--dry-run", "--format", "json",
                          "--spark", "local[2]"))
    assert here.exit_code == there.exit_code == 0, there.output
    assert json.loads(there.output)["plan"] == json.loads(here.output)["plan"]
    run = cli(*cli_args(kafka_bootstrap, topic, tmp_path, "--spark", "local[2]"))
    assert run.exit_code == 0, run.output
    assert "wrote 3 rewrites and 9 tombstones, all acknowledged" in run.output
    assert "verified" in run.output
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected
    assert spark.sparkContext._jsc is not None  # the caller's session was left running


def test_a_record_no_declaration_decodes_fails_the_run_as_the_command_does(
        spark: Any, kafka_bootstrap: str, tmp_path: Path) -> None:
    topic, _ = phantom_topic(kafka_bootstrap)
    p = Producer({"bootstrap.servers": kafka_bootstrap, "log_level": 0})
    p.produce(topic, key=b"\x00not json", value=b"{}", partition=1)
    assert p.flush(15) == 0
    with pytest.raises(DecodeError, match="decodes under no declared encoding"):
        sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=COLS, old=[V1],
                        new=V2, state_path=tmp_path / "bad.json")
    end = sum(r.end for r in KafkaRanges(kafka_bootstrap).capture(topic))
    assert end == 17 + 1  # nothing written


def test_a_cut_over_to_a_new_topic_on_spark(spark: Any, kafka_bootstrap: str,
                                            tmp_path: Path) -> None:
    """The target does not exist when the run starts: it is created before the first write,
    read by the next round and the verification, and ends equal to the re-keyed table; the
    source is left as it was."""
    topic, expected = phantom_topic(kafka_bootstrap)
    before = [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)]
    target = f"{topic}-v2"
    report = sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=COLS,
                             old=[V1, V2], new=V2, to_topic=target,
                             state_path=tmp_path / "cut.json", chunk_records=4)
    assert report.verification is not None and report.verification.clean, render_text(report)
    assert not any(n.startswith("round") for n in report.notes), report.notes
    assert rows(consumer_table(kafka_bootstrap, target)) == expected
    assert [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)] == before


def test_a_registry_format_on_spark_new_schema_ids_pinned_for_the_tasks(
        spark: Any, kafka_bootstrap: str, tmp_path: Path) -> None:
    """avro-confluent keys under two registered schemas (the same body, another id): the
    driver registers the new key schema once and the tasks write with its id; the tasks open
    the registry the options name (a file registry every process on this host shares)."""
    from test_registry_formats_repair import TABLE, _produce, _schemas

    from keyguard.formats.registry.registration import open_plan
    from keyguard.guard.audit.scan import audit_topic

    url = f"file://{tmp_path / 'registry'}"
    _, second = _schemas("avro-confluent")
    v1 = {"primary-key": "id", "key.format": "avro-confluent",
          "key.avro-confluent.url": url, "value.format": "json"}
    v2 = {**v1, "key.avro-confluent.schema": second}
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    id1 = _produce(kafka_bootstrap, topic, v1, [{"id": i, "name": "v1"} for i in range(8)])
    id2 = _produce(kafka_bootstrap, topic, v2, [{"id": i, "name": "v2"} for i in range(3)])
    assert id1 != id2
    report = sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=TABLE,
                             old=[v1], new=v2, state_path=tmp_path / "reg.json",
                             chunk_records=3)
    assert report.plan is not None
    assert (report.plan.rewrite_count, report.plan.tombstone_count) == (5, 8)
    assert report.verification is not None and report.verification.clean, render_text(report)
    after = audit_topic(topic, open_plan(TABLE, {**v2, "topic": topic}),
                        bootstrap=kafka_bootstrap)
    assert (after.phantom_keys, after.misplaced_keys, after.missed_deletes) == (0, 0, 0)
    ids = {s["schema_id"] for s in after.data["schema_ids"]["key"]}
    assert id2 in ids


def test_a_framing_change_on_spark_binds_the_new_guids_in_the_tasks(
        spark: Any, kafka_bootstrap: str, tmp_path: Path) -> None:
    """Keys moved from Confluent's wire format to its header framing by Spark tasks: the
    driver resolves the key schema's GUID once, the tasks write it in `__key_schema_id`, and
    the audit ends with one framing."""
    from test_registry_formats_repair import TABLE, _produce

    from keyguard.formats.registry.registration import open_plan
    from keyguard.guard.audit.scan import audit_topic

    url = f"file://{tmp_path / 'registry'}"
    prefix = {"primary-key": "id", "key.format": "avro-confluent",
              "key.avro-confluent.url": url, "value.format": "json"}
    header = {**prefix, "key.avro-confluent.framing": "confluent-header"}
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    _produce(kafka_bootstrap, topic, prefix, [{"id": i, "name": "p"} for i in range(7)])
    report = sparkio.migrate(spark, topic=topic, bootstrap=kafka_bootstrap, table=TABLE,
                             old=[prefix], new=header, state_path=tmp_path / "framing.json",
                             chunk_records=3)
    assert report.plan is not None
    assert (report.plan.rewrite_count, report.plan.tombstone_count) == (7, 7)
    assert report.verification is not None and report.verification.clean, render_text(report)
    plan = open_plan(TABLE, {**header, "topic": topic})
    after = audit_topic(topic, plan, bootstrap=kafka_bootstrap)
    assert after.clean and after.undecodable == 0
    live = after.data["framings"]["key"]["live"]
    assert {k: n for k, n in live.items() if n} == {"header": 7}
