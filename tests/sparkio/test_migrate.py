"""keyguard migrate against a broker: phantom keys repaired, kills and reruns, dry runs,
cut-overs. Every table is checked the way a consumer sees it: the topic folded by key bytes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from broker import new_topic
from confluent_kafka import Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyguard.formats.partitioner import partition_for
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.offsets import KafkaRanges
from keyguard.sparkio.migrate_report import exit_code, render_text
from keyguard.sparkio.migrate_topic import Migration, migrate_topic, read_folds

COLS = "id BIGINT, region STRING, name STRING"
TABLE = parse_columns(COLS)
VALUE = {"value.format": "json", "value.fields-include": "ALL"}
V1 = {"key.format": "json", "primary-key": "id", **VALUE}
V2 = {"key.format": "json", "primary-key": "id,region", **VALUE}

Row = dict[str, Any]


def _row(i: int, name: str = "a", region: str = "eu") -> Row:
    return {"id": i, "region": region, "name": name}


def produce(bootstrap: str, topic: str, options: Mapping[str, str],
            changes: Sequence[tuple[Row, bool]], *, partitions: int = 3) -> None:
    """What a writer with these options does (murmur2 partitions); (row, True) deletes."""
    plan = open_plan(TABLE, {**options, "topic": topic})
    bind_plan_schema_ids(plan)
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                  "linger.ms": 5, "log_level": 0})
    for row, delete in changes:
        key, value = plan.encode(row)
        p.produce(topic, key=key, value=None if delete else value,
                  partition=partition_for(key, partitions))
    assert p.flush(15) == 0


def consumer_table(bootstrap: str, topic: str, options: Mapping[str, str] = V2,
                   table: Any = TABLE) -> dict[bytes, Row]:
    """What a consumer folding the topic sees: the last value per key bytes, decoded."""
    plan = open_plan(table, {**options, "topic": topic})
    out: dict[bytes, Row] = {}
    for fold in read_folds(KafkaRanges(bootstrap), topic):
        for e in fold.entries.values():
            if e.value is not None:
                assert e.key not in out, "one key bytes on two partitions"
                row = plan.decode(e.key, e.value)
                assert row is not None
                out[e.key] = row
    return out


def rows(table: Mapping[bytes, Row]) -> list[Row]:
    return sorted(table.values(), key=lambda r: (r["id"], r["region"]))


def phantom_topic(bootstrap: str) -> tuple[str, list[Row]]:
    """Keys v1 (id), then v2 (id, region) for some of the same rows: phantoms; the expected
    table after the migration (the latest write of each row)."""
    topic = new_topic(bootstrap, 3, {"cleanup.policy": "compact"})
    produce(bootstrap, topic, V1, [(_row(i, "v1"), False) for i in range(10)]
            + [(_row(9, "v1"), True)])  # a delete under v1: row 9 gone
    produce(bootstrap, topic, V2, [(_row(i, "v2"), False) for i in range(0, 6)])
    expected = [_row(i, "v2") for i in range(6)] + [_row(i, "v1") for i in range(6, 9)]
    return topic, expected


def migration(bootstrap: str, topic: str, tmp_path: Path, **kw: Any) -> Migration:
    return Migration(topic=topic, bootstrap=bootstrap, table=TABLE, old=(V1,), new=V2,
                     state_path=tmp_path / "state.json", **kw)


class FailAfter:
    """A producer factory whose producers raise after `n` produced records in all."""

    def __init__(self, n: int) -> None:
        self.left = n

    def __call__(self, config: dict[str, Any]) -> Any:
        real = Producer(config)
        outer = self

        class Dying:
            def produce(self, *a: Any, **k: Any) -> None:
                if outer.left <= 0:
                    raise RuntimeError("killed")
                outer.left -= 1
                real.produce(*a, **k)

            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def __len__(self) -> int:
                return len(real)

        return Dying()


def test_migrate_repairs_phantom_keys(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic, expected = phantom_topic(kafka_bootstrap)
    before = consumer_table(kafka_bootstrap, topic, V2)
    assert len(before) == 9 + 6  # rows 0..5 live under both keys

    report = migrate_topic(migration(kafka_bootstrap, topic, tmp_path))
    plan = report.plan
    assert plan is not None
    assert plan.phantom_keys == 6
    assert plan.live_keys == 9
    assert dict(plan.encodings) == {"json(id)": 9, "new": 6}
    assert len(plan.rewrites) == 3  # rows 6..8: only under v1
    assert len(plan.tombstones) == 9  # every v1 key still live
    assert report.rewrites_acknowledged == 3 and report.tombstones_acknowledged == 9
    assert report.verification is not None and report.verification.clean
    assert exit_code(report) == 0
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["phase"] == "verified"
    assert "verified" in render_text(report)

    again = migrate_topic(migration(kafka_bootstrap, topic, tmp_path))
    assert again.wrote_nothing and again.plan is not None and again.plan.empty
    assert again.resumed_from == "verified"
    assert "already migrated" in render_text(again)
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected


@pytest.mark.parametrize("after", [1, 3, 5])
def test_a_killed_migration_rerun_converges(kafka_bootstrap: str, tmp_path: Path,
                                            after: int) -> None:
    """Killed during the rewrites (1), at their end (3) or among the tombstones (5)."""
    topic, expected = phantom_topic(kafka_bootstrap)
    with pytest.raises(RuntimeError, match="killed"):
        migrate_topic(migration(kafka_bootstrap, topic, tmp_path),
                      producer_factory=FailAfter(after))
    phase = json.loads((tmp_path / "state.json").read_text())["phase"]
    assert phase == ("rewriting" if after < 3 else "tombstoning")
    report = migrate_topic(migration(kafka_bootstrap, topic, tmp_path))
    assert report.resumed_from == phase
    assert report.verification is not None and report.verification.clean
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected


def test_dry_run_writes_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic, _ = phantom_topic(kafka_bootstrap)
    ends = [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)]
    report = migrate_topic(migration(kafka_bootstrap, topic, tmp_path, dry_run=True))
    assert report.plan is not None
    assert (len(report.plan.rewrites), len(report.plan.tombstones)) == (3, 9)
    text = render_text(report)
    assert "3 rows to rewrite" in text and "9 tombstones" in text
    assert "both the old and the new key" in text
    assert report.wrote_nothing and report.verification is None
    assert [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)] == ends
    assert not (tmp_path / "state.json").exists()


def test_cut_over_to_a_new_topic(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic, expected = phantom_topic(kafka_bootstrap)
    source_ends = [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)]
    target = f"keyguard-test-cut-{uuid.uuid4().hex[:8]}"
    report = migrate_topic(migration(kafka_bootstrap, topic, tmp_path, to_topic=target,
                                     partitions=4))
    assert report.plan is not None
    assert len(report.plan.rewrites) == 9 and not report.plan.tombstones
    assert report.verification is not None and report.verification.clean
    assert len(KafkaRanges(kafka_bootstrap).capture(target)) == 4
    assert rows(consumer_table(kafka_bootstrap, target)) == expected
    assert [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)] == source_ends
    again = migrate_topic(migration(kafka_bootstrap, topic, tmp_path, to_topic=target,
                                    partitions=4))
    assert again.wrote_nothing


# --- the command ---------------------------------------------------------------------------------


def cli(*args: str) -> Any:
    """`keyguard migrate ARGS` through its typer command (entry points need an install)."""
    import typer
    from typer.testing import CliRunner

    from keyguard.sparkio.cli_commands import migrate

    app = typer.Typer()
    app.command("migrate")(migrate)
    app.command("other")(lambda: None)  # two commands: typer keeps `migrate` as a subcommand
    return CliRunner().invoke(app, ["migrate", *args])


def cli_args(bootstrap: str, topic: str, tmp_path: Path, *extra: str) -> list[str]:
    return ["--topic", topic, "--bootstrap", bootstrap, "--columns", COLS,
            "--old-key-format", "json", "--old-option", "primary-key=id",
            "--new-key-format", "json", "--new-option", "primary-key=id,region",
            "--value-format", "json", "--state", str(tmp_path / "cli.json"), *extra]


def test_the_command_plans_migrates_and_reruns(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic, expected = phantom_topic(kafka_bootstrap)
    dry = cli(*cli_args(kafka_bootstrap, topic, tmp_path, "--dry-run", "--format", "json"))
    assert dry.exit_code == 0, dry.output
    doc = json.loads(dry.output)
    assert doc["dry_run"] is True
    assert (doc["plan"]["rewrites"], doc["plan"]["tombstones"]) == (3, 9)
    assert doc["plan"]["phantom_keys"] == 6
    assert doc["written"] == {"rewrites": 0, "tombstones": 0}

    run = cli(*cli_args(kafka_bootstrap, topic, tmp_path))
    assert run.exit_code == 0, run.output
    assert "wrote 3 rewrites and 9 tombstones" in run.output
    assert "verified" in run.output
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected

    again = cli(*cli_args(kafka_bootstrap, topic, tmp_path))
    assert again.exit_code == 0, again.output
    assert "nothing written: the topic is already migrated" in again.output


def _ddl(tmp_path: Path, name: str, topic: str, pk: str) -> str:
    path = tmp_path / f"{name}.sql"
    path.write_text(f"""CREATE TABLE {name} (
      id BIGINT, region STRING, name STRING,
      PRIMARY KEY ({pk}) NOT ENFORCED
    ) WITH ('connector' = 'upsert-kafka', 'topic' = '{topic}',
      'properties.bootstrap.servers' = 'localhost:9092',
      'key.format' = 'json', 'value.format' = 'json')""")
    return str(path)


def test_flink_ddls_declare_the_same_migration_as_the_flags(kafka_bootstrap: str,
                                                            tmp_path: Path) -> None:
    topic, expected = phantom_topic(kafka_bootstrap)
    new, old = _ddl(tmp_path, "v2", topic, "id, region"), _ddl(tmp_path, "v1", topic, "id")
    by_flags = cli(*cli_args(kafka_bootstrap, topic, tmp_path, "--dry-run", "--format", "json"))
    by_ddl = cli("--flink-ddl", new, "--old-flink-ddl", old, "--bootstrap", kafka_bootstrap,
                 "--state", str(tmp_path / "cli.json"), "--dry-run", "--format", "json")
    assert by_ddl.exit_code == by_flags.exit_code == 0, by_ddl.output
    assert json.loads(by_ddl.stdout)["plan"] == json.loads(by_flags.stdout)["plan"]
    # the DDLs' bootstrap.servers is Flink's: --bootstrap decides, and the note says so
    assert "connection option properties.bootstrap.servers ignored" in by_ddl.stderr
    run = cli("--flink-ddl", new, "--old-flink-ddl", old, "--bootstrap", kafka_bootstrap,
              "--state", str(tmp_path / "ddl.json"))
    assert run.exit_code == 0, run.output
    assert "wrote 3 rewrites and 9 tombstones" in run.output
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected
    # the DDL gives the columns and formats: the flags it replaces are refused beside it
    clash = cli("--flink-ddl", new, "--old-flink-ddl", old, "--bootstrap", kafka_bootstrap,
                "--columns", COLS)
    assert clash.exit_code == 2 and "drop --columns" in clash.output
    other = tmp_path / "other.sql"
    other.write_text(Path(old).read_text().replace("name STRING,", "name STRING, n INT,"))
    differ = cli("--flink-ddl", new, "--old-flink-ddl", str(other),
                 "--bootstrap", kafka_bootstrap)
    assert differ.exit_code == 2 and "re-keys one table" in differ.output


def test_the_command_reports_bad_input_with_exit_2(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic, _ = phantom_topic(kafka_bootstrap)
    no_old = cli("--topic", topic, "--bootstrap", kafka_bootstrap, "--columns", COLS,
                 "--primary-key", "id")
    assert no_old.exit_code == 2
    assert "--old-key-format" in no_old.output
    wrong = cli(*cli_args(kafka_bootstrap, topic, tmp_path, "--old-option", "3:x=y"))
    assert wrong.exit_code == 2 and "number 3" in wrong.output
    # raw reads any key bytes as the name column, but the value says otherwise: not the
    # encoding, and nothing else is declared
    undecodable = cli("--topic", topic, "--bootstrap", kafka_bootstrap, "--columns", COLS,
                      "--old-key-format", "raw", "--old-option", "primary-key=name",
                      "--new-option", "primary-key=id,region", "--new-key-format", "json",
                      "--value-format", "json", "--state", str(tmp_path / "x.json"))
    assert undecodable.exit_code == 2, undecodable.output
    assert "decodes under no declared encoding" in undecodable.output
    assert "Traceback" not in undecodable.output


def test_verification_failure_exits_1(kafka_bootstrap: str, tmp_path: Path) -> None:
    """A verifier that still sees a phantom (a producer wrote an old key meanwhile)."""
    from keyguard.sparkio.migrate_plan import Verification

    topic, _ = phantom_topic(kafka_bootstrap)
    report = migrate_topic(migration(kafka_bootstrap, topic, tmp_path),
                           verify=lambda t, d, n: Verification(t, 9, 1, 1, 0))
    assert exit_code(report) == 1
    assert "VERIFICATION FAILED" in render_text(report)
    assert json.loads((tmp_path / "state.json").read_text())["phase"] == "written"


def test_avro_confluent_keys_under_two_schema_ids(kafka_bootstrap: str, tmp_path: Path) -> None:
    """The issue's case: key v1 registered and written, then key v2 (a new key field, a new
    schema id) written over the same rows: phantoms, repaired; the keys carry v2's id only."""
    from keyguard.formats.registry.mock import MockRegistry

    scope = f"migrate-{uuid.uuid4().hex[:8]}"
    url = {"key.avro-confluent.url": f"mock://{scope}"}
    a1 = {**V1, "key.format": "avro-confluent", **url}
    a2 = {**V2, "key.format": "avro-confluent", **url}
    topic = new_topic(kafka_bootstrap, 3, {"cleanup.policy": "compact"})
    produce(kafka_bootstrap, topic, a1, [(_row(i, "v1"), False) for i in range(4)])
    produce(kafka_bootstrap, topic, a2, [(_row(i, "v2"), False) for i in range(2)])
    m = Migration(topic=topic, bootstrap=kafka_bootstrap, table=TABLE, old=(a1,), new=a2,
                  state_path=tmp_path / "avro.json")
    report = migrate_topic(m)
    assert report.plan is not None
    assert (report.plan.phantom_keys, len(report.plan.rewrites),
            len(report.plan.tombstones)) == (2, 2, 4)
    assert report.verification is not None and report.verification.clean
    table = consumer_table(kafka_bootstrap, topic, a2)
    assert rows(table) == [_row(0, "v2"), _row(1, "v2"), _row(2, "v1"), _row(3, "v1")]
    registry = MockRegistry(scope)
    latest = registry.get_version(f"{topic}-key", "latest")
    assert {k[1:5] for k in table} == {latest.schema_id.to_bytes(4, "big")}


def test_a_new_key_write_that_races_the_rewrite_is_never_reverted(kafka_bootstrap: str,
                                                                   tmp_path: Path) -> None:
    """A producer writes a row under the new key after the migration read it, before its
    rewrite lands: the rewrite does not claim to supersede it, so the next round writes the
    newer value again and the table ends with it."""
    topic, expected = phantom_topic(kafka_bootstrap)
    kafka = KafkaRanges(kafka_bootstrap)
    reads: list[str] = []

    def racing(name: str) -> list[Any]:
        folds = read_folds(kafka, name)
        reads.append(name)
        if len(reads) == 1:  # row 7 gets a newer value under the new key, once
            produce(kafka_bootstrap, topic, V2, [(_row(7, "newer"), False)])
        return folds

    report = migrate_topic(migration(kafka_bootstrap, topic, tmp_path), reader=racing)
    assert any(n.startswith("round 2:") for n in report.notes), report.notes
    assert report.verification is not None and report.verification.clean
    want = [_row(7, "newer") if r["id"] == 7 else r for r in expected]
    assert rows(consumer_table(kafka_bootstrap, topic)) == want


def test_an_old_key_write_during_the_run_is_carried_over(kafka_bootstrap: str,
                                                         tmp_path: Path) -> None:
    """A producer still on the old key updates a row after the read: the retirement of the old
    key covers only what was read, so the update is copied in the next round."""
    topic, expected = phantom_topic(kafka_bootstrap)
    kafka = KafkaRanges(kafka_bootstrap)
    reads: list[str] = []

    def busy(name: str) -> list[Any]:
        folds = read_folds(kafka, name)
        reads.append(name)
        if len(reads) == 1:
            produce(kafka_bootstrap, topic, V1, [(_row(1, "again"), False)])
        return folds

    report = migrate_topic(migration(kafka_bootstrap, topic, tmp_path), reader=busy)
    assert report.verification is not None and report.verification.clean
    want = [_row(1, "again") if r["id"] == 1 else r for r in expected]
    assert rows(consumer_table(kafka_bootstrap, topic)) == want


def test_every_record_a_migration_writes_is_marked(kafka_bootstrap: str,
                                                   tmp_path: Path) -> None:
    topic, _ = phantom_topic(kafka_bootstrap)
    ends = [r.end for r in KafkaRanges(kafka_bootstrap).capture(topic)]
    migrate_topic(migration(kafka_bootstrap, topic, tmp_path))
    kafka = KafkaRanges(kafka_bootstrap)
    written = [rec for r in kafka.capture(topic)
               for batch in kafka.read(replace(r, start=ends[r.partition]), headers=True)
               for rec in batch]
    assert len(written) == 3 + 9
    kinds = sorted(dict(rec.headers)["keyguard.migrate"].split(b" ")[0] for rec in written)
    assert kinds == [b"copy"] * 3 + [b"retire"] * 9
    assert all((rec.value is None) == (dict(rec.headers)["keyguard.migrate"][:6] == b"retire")
               for rec in written)


def test_a_new_partition_count_in_place_on_noida(kafka_brokers: Any, kafka_bootstrap: str,
                                                 tmp_path: Path) -> None:
    """Same key, 2 -> 4 partitions (noida can add partitions; tansu cannot): every row whose
    murmur2 partition changes is written there, then its old record is tombstoned."""
    from broker import BrokerMissing

    try:
        bootstrap = kafka_brokers.get("noida").bootstrap
    except BrokerMissing as e:
        pytest.skip(str(e))
    topic = new_topic(bootstrap, 2, {"cleanup.policy": "compact"})
    produce(bootstrap, topic, V2, [(_row(i), False) for i in range(12)], partitions=2)
    m = Migration(topic=topic, bootstrap=bootstrap, table=TABLE, old=(V2,), new=V2,
                  partitions=4, state_path=tmp_path / "grow.json")
    moved = sum(partition_for(plan_key, 4) != partition_for(plan_key, 2) for plan_key in (
        f'{{"id":{i},"region":"eu"}}'.encode() for i in range(12)))
    report = migrate_topic(m)
    assert report.plan is not None
    assert len(report.plan.rewrites) == len(report.plan.tombstones) == moved > 0
    assert report.verification is not None and report.verification.clean
    assert len(KafkaRanges(bootstrap).capture(topic)) == 4
    assert rows(consumer_table(bootstrap, topic)) == [_row(i) for i in range(12)]


_KILLED_RUN = """
import os, signal, sys
from pathlib import Path
from confluent_kafka import Producer
sys.path[:0] = [{root!r}, {tests!r}, {here!r}]
from test_migrate import migration
from keyguard.sparkio.migrate_topic import migrate_topic

left = {after}

def dying(config):
    real = Producer(config)

    class P:
        def produce(self, *a, **k):
            global left
            if left == 0:
                real.flush(10)  # what was sent is acknowledged, then the process dies
                os.kill(os.getpid(), signal.SIGKILL)
            left -= 1
            real.produce(*a, **k)

        def __getattr__(self, name):
            return getattr(real, name)

        def __len__(self):
            return len(real)

    return P()

migrate_topic(migration({bootstrap!r}, {topic!r}, Path({tmp!r})), producer_factory=dying)
"""


def test_a_process_killed_among_the_tombstones_reruns_to_the_same_table(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """SIGKILL, not an exception: no cleanup runs, the state file stays as last replaced."""
    import subprocess
    import sys

    topic, expected = phantom_topic(kafka_bootstrap)
    here = str(Path(__file__).parent)
    script = _KILLED_RUN.format(root=str(Path(here).parents[1]), tests=str(Path(here).parent),
                                here=here, after=5,
                                bootstrap=kafka_bootstrap, topic=topic, tmp=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["phase"] == "tombstoning" and state["rewrites_acknowledged"] == 3
    report = migrate_topic(migration(kafka_bootstrap, topic, tmp_path))
    assert report.resumed_from == "tombstoning"
    assert report.plan is not None and not report.plan.rewrites
    assert len(report.plan.tombstones) == 9 - 2  # two were acknowledged before the kill
    assert report.verification is not None and report.verification.clean
    assert rows(consumer_table(kafka_bootstrap, topic)) == expected


def test_a_dead_broker_fails_the_writes_in_under_a_minute_and_says_which_setting(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """migrate's producer gets the writer's timeouts (not librdkafka's 300 s), and the error
    speaks to a command-line user: the flag, not a Spark option."""
    from keyguard.sparkio.migrate_topic import MIGRATE_PRODUCER_TIMEOUTS
    from keyguard.sparkio.producer import TaskDeliveryError

    assert MIGRATE_PRODUCER_TIMEOUTS["message.timeout.ms"] <= 30_000
    topic, _ = phantom_topic(kafka_bootstrap)
    seen: list[dict[str, Any]] = []

    def unreachable(config: dict[str, Any]) -> Any:
        seen.append(dict(config))
        return Producer({**config, "bootstrap.servers": "127.0.0.1:1",
                         "message.timeout.ms": 1500})

    with pytest.raises(TaskDeliveryError) as err:
        migrate_topic(migration(kafka_bootstrap, topic, tmp_path), producer_factory=unreachable)
    assert seen[0]["message.timeout.ms"] == MIGRATE_PRODUCER_TIMEOUTS["message.timeout.ms"]
    assert "3 undelivered" in str(err.value) and "--kafka-config message.timeout.ms" in \
        (err.value.hint or "")
    assert "Spark" not in (err.value.hint or "")
    assert rows(consumer_table(kafka_bootstrap, topic, V1)) != []  # the old rows: untouched


# --- the model, on the broker, in bounded form ------------------------------------------------

MODEL_TABLE = parse_columns("id BIGINT, tenant STRING, name STRING")
MODEL_ENCODINGS = {
    fmt: {"key.format": fmt, "value.format": "json", "primary-key": "id"}
    for fmt in ("json", "csv")
}


def _model_write(producer: Producer, topic: str, fmt: str, row_id: int, name: str | None,
                 truth: dict[int, str], clock: list[int]) -> None:
    """One producer write; `clock` gives each write its own millisecond (CreateTime), as
    producers whose writes of one row are ordered in time."""
    plan = open_plan(MODEL_TABLE, {**MODEL_ENCODINGS[fmt], "topic": topic})
    key, value = plan.encode({"id": row_id, "tenant": None, "name": name or "x"})
    clock[0] += 1
    producer.produce(topic, key=key, value=None if name is None else value,
                     partition=partition_for(key, 3), timestamp=clock[0])
    assert producer.flush(15) == 0
    if name is None:
        truth.pop(row_id, None)
    else:
        truth[row_id] = name


@pytest.mark.slow
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(writes=st.lists(st.tuples(st.sampled_from(["json", "csv"]), st.integers(10, 14),
                                 st.one_of(st.none(), st.sampled_from("ab"))),
                       min_size=1, max_size=12),
       later=st.lists(st.tuples(st.sampled_from(["json", "csv"]), st.integers(10, 14),
                                st.one_of(st.none(), st.sampled_from("cd"))), max_size=4),
       kill_after=st.one_of(st.none(), st.integers(0, 8)),
       new=st.sampled_from(["json", "csv"]))
def test_the_model_holds_on_the_broker(kafka_bootstrap: str, writes: list[Any],
                                       later: list[Any], kill_after: int | None,
                                       new: str) -> None:
    """Writes under both encodings, a migration killed after any record (or not), more
    writes, a rerun: the topic holds the producers' table, once, under the new key."""
    import tempfile
    import time

    topic = new_topic(kafka_bootstrap, 3)
    truth: dict[int, str] = {}
    clock = [int(time.time() * 1000) - 60_000]
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "log_level": 0,
                         "linger.ms": 0})
    for fmt, row_id, name in writes:
        _model_write(producer, topic, fmt, row_id, name, truth, clock)
    with tempfile.TemporaryDirectory() as tmp:
        m = Migration(topic=topic, bootstrap=kafka_bootstrap, table=MODEL_TABLE,
                      old=tuple(MODEL_ENCODINGS.values()), new=MODEL_ENCODINGS[new],
                      state_path=Path(tmp) / "state.json")
        if kill_after is not None:
            try:
                migrate_topic(m, producer_factory=FailAfter(kill_after))
            except RuntimeError:
                pass
        for fmt, row_id, name in later:
            _model_write(producer, topic, fmt, row_id, name, truth, clock)
        report = migrate_topic(m)
    assert report.verification is not None and report.verification.clean
    table = consumer_table(kafka_bootstrap, topic, MODEL_ENCODINGS[new], MODEL_TABLE)
    assert {row["id"]: row["name"] for row in table.values()} == truth
