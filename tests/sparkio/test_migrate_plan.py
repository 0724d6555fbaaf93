"""keyguard.sparkio.migrate_plan: the migration's pure half, from folded records (no broker)."""

from __future__ import annotations

from typing import Any

import pytest

from keyguard.formats.errors import DecodeError
from keyguard.formats.partitioner import partition_for
from keyguard.formats.plan import UpsertPlan, resolve_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.offsets import Record
from keyguard.sparkio.migrate_plan import (
    NEW,
    Declarations,
    Entry,
    Fold,
    Write,
    classify,
    plan_migration,
    verify_entries,
)

TABLE = parse_columns("id BIGINT, region STRING, name STRING")
VALUE = {"topic": "t", "value.format": "json"}
V1 = resolve_plan(TABLE, {**VALUE, "key.format": "json", "primary-key": "id"})
V2 = resolve_plan(TABLE, {**VALUE, "key.format": "json", "primary-key": "id,region"})
DECL = Declarations(V2, (V1,), ("v1",))


def entry(plan: UpsertPlan, row: dict[str, Any], *, partition: int = 0, offset: int = 0,
          ts: int = 0, delete: bool = False) -> Entry:
    key, value = plan.encode(row)
    return Entry(partition, offset, ts, key, None if delete else value)


def row(i: int, name: str = "a") -> dict[str, Any]:
    return {"id": i, "region": "eu", "name": name}


def plan(*entries: Entry, partitions: int = 1, target: list[Entry] | None = None) -> Any:
    return plan_migration([classify(e, DECL, "t") for e in entries], partitions,
                          target=None if target is None else
                          [classify(e, DECL, "t2") for e in target])


def test_the_fold_keeps_the_last_record_per_key_bytes() -> None:
    recs = [Record(0, 0, 1, b"a", b"1"), Record(0, 1, 2, b"b", b"2"), Record(0, 2, 3, None, b"x"),
            Record(0, 3, 4, b"a", None), Record(0, 4, 5, b"b", b"3")]
    fold = Fold().add(recs)
    assert (fold.records, fold.null_keys) == (5, 1)
    assert {k: (e.offset, e.value) for k, e in fold.entries.items()} == {
        b"a": (3, None), b"b": (4, b"3")}


def test_classify_names_the_encoding_and_the_new_key() -> None:
    old = classify(entry(V1, row(1)), DECL, "t")
    new = classify(entry(V2, row(1)), DECL, "t")
    assert (old.encoding, new.encoding) == ("v1", NEW)
    assert old.new_key == new.new_key == b'{"id":1,"region":"eu"}'
    assert old.new_value == new.new_value
    gone = classify(entry(V1, row(1), delete=True), DECL, "t")
    assert gone.encoding == "v1" and gone.new_key is None  # region is not in a v1 key


def test_an_undecodable_record_names_its_offset() -> None:
    bad = Entry(2, 41, 0, b"\xff\x00", b"{}")
    with pytest.raises(DecodeError, match=r"partition 2 offset 41.*no declared encoding"):
        classify(bad, DECL, "t")


def bare(writes: tuple[Write, ...]) -> list[tuple[int, bytes, bytes | None]]:
    return [(w.partition, w.key, w.value) for w in writes]


def test_log_order_decides_within_a_partition_whatever_the_timestamps() -> None:
    p = plan(entry(V1, row(1, "old"), offset=0, ts=5), entry(V2, row(1, "new"), offset=1, ts=3))
    # v2 is later in the log: it holds the row, although its timestamp is earlier
    assert p.phantom_keys == 1 and p.live_keys == 1
    assert p.rewrites == () and p.in_place == 1
    assert bare(p.tombstones) == [(0, b'{"id":1}', None)]
    assert p.tombstones[0].header == ("keyguard.migrate", b"retire 0")


def test_across_partitions_the_later_timestamp_wins() -> None:
    key = b'{"id":1,"region":"eu"}'
    here = partition_for(key, 2)
    p = plan(entry(V1, row(1, "old"), partition=1 - here, offset=0, ts=5),
             entry(V2, row(1, "new"), partition=here, offset=0, ts=3), partitions=2)
    assert bare(p.rewrites) == [(here, key, b'{"id":1,"region":"eu","name":"old"}')]
    assert bare(p.tombstones) == [(1 - here, b'{"id":1}', None)]


def test_equal_timestamps_go_to_the_higher_offset() -> None:
    p = plan(entry(V1, row(1, "old"), offset=0, ts=5), entry(V2, row(1, "new"), offset=1, ts=5))
    assert p.rewrites == () and p.in_place == 1
    assert bare(p.tombstones) == [(0, b'{"id":1}', None)]


def test_a_later_delete_under_the_new_key_deletes_the_row() -> None:
    """A delete that missed the old key: the row is gone, the old key gets its tombstone."""
    p = plan(entry(V1, row(1), offset=0, ts=1), entry(V2, row(1), offset=1, ts=2, delete=True))
    assert (p.live_keys, p.deleted_keys, p.rewrites) == (0, 1, ())
    assert bare(p.tombstones) == [(0, b'{"id":1}', None)]


def test_a_new_partition_count_moves_rows() -> None:
    key = b'{"id":1,"region":"eu"}'
    want = partition_for(key, 4)
    elsewhere = (want + 1) % 4
    p = plan(entry(V2, row(1), partition=elsewhere), partitions=4)
    assert bare(p.rewrites) == [(want, key, b'{"id":1,"region":"eu","name":"a"}')]
    assert bare(p.tombstones) == [(elsewhere, key, None)]
    assert p.rewrites[0].header is not None and p.rewrites[0].header[1].startswith(b"copy ")


def test_a_migrated_topic_plans_nothing_and_verifies_clean() -> None:
    entries = [entry(V2, row(i), partition=0) for i in range(3)]
    assert plan(*entries).empty
    v = verify_entries("t", [classify(e, DECL, "t") for e in entries], 1)
    assert v.clean and v.live_keys == 3


def test_verification_counts_phantoms_and_old_keys() -> None:
    entries = [entry(V1, row(1)), entry(V2, row(1), offset=1), entry(V1, row(2), offset=2)]
    v = verify_entries("t", [classify(e, DECL, "t") for e in entries], 1)
    assert (v.phantom_keys, v.old_encoded, v.misplaced, v.clean) == (1, 2, 0, False)
    assert v.examples[0][0] == b'{"id":1,"region":"eu"}'


def test_a_cut_over_leaves_the_source_and_keeps_rows_written_to_the_target() -> None:
    """A row only in the target was written there by a producer on the new key: kept."""
    target_row = entry(V2, row(7), offset=0)
    p = plan(entry(V1, row(1)), target=[target_row])
    assert [w.key for w in p.rewrites] == [b'{"id":1,"region":"eu"}']
    assert p.tombstones == () and p.in_place == 1


# --- the command's flags, as table options (no broker) -------------------------------------------


def test_flags_become_one_option_set_per_encoding() -> None:
    from keyguard.sparkio.cli_commands import migration_options

    olds, new = migration_options(
        old_key_formats=["json", "avro-confluent"],
        old_options=["primary-key=id", "2:key.avro-confluent.subject=orders-key"],
        new_key_format="avro-confluent", new_options={"primary-key": "id,region"},
        value_format="json", value_options={"value.fields-include": "ALL"},
        primary_key=None, registry="http://registry:8081")
    assert olds[0] == {"key.format": "json", "value.format": "json",
                       "value.fields-include": "ALL", "primary-key": "id"}
    assert olds[1]["key.avro-confluent.subject"] == "orders-key"
    assert olds[1]["key.avro-confluent.url"] == "http://registry:8081"
    assert "key.avro-confluent.url" not in olds[0]
    assert new["primary-key"] == "id,region" and new["key.format"] == "avro-confluent"
    assert new["key.avro-confluent.url"] == "http://registry:8081"


def test_the_command_help_lists_its_flags() -> None:
    import typer
    from typer.testing import CliRunner

    from keyguard.guard.cli import EXIT_CODES_HELP
    from keyguard.sparkio.cli_commands import migrate

    app = typer.Typer()
    # As keyguard.guard.cli loads entry points:
    app.command("migrate", epilog=EXIT_CODES_HELP)(migrate)
    app.command("other")(lambda: None)
    result = CliRunner().invoke(app, ["migrate", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for flag in ("--topic", "--old-key-format", "--old-option", "--new-key-format",
                 "--new-option", "--new-partitions", "--to-topic", "--state", "--dry-run",
                 "--format"):
        assert flag in result.output
    assert " ".join(result.output.split()).endswith(" ".join(EXIT_CODES_HELP.split()))


def test_bad_flags_exit_2_before_any_broker() -> None:
    import typer
    from typer.testing import CliRunner

    from keyguard.sparkio.cli_commands import migrate

    app = typer.Typer()
    app.command("migrate")(migrate)
    app.command("other")(lambda: None)
    base = ["migrate", "--topic", "t", "--bootstrap", "127.0.0.1:1", "--columns", "id BIGINT",
            "--value-format", "json"]
    for extra, said in ((["--old-key-format", "json", "--format", "yaml"], "--format"),
                        (["--old-key-format", "json", "--old-option", "nokv"], "KEY=VALUE"),
                        ([], "--old-key-format"),
                        (["--old-key-format", "json", "--new-partitions", "0"],
                         "--new-partitions must be at least 1")):
        result = CliRunner().invoke(app, base + extra)
        assert result.exit_code == 2, result.output
        assert said in result.output and "Traceback" not in result.output


@pytest.mark.usefixtures("dead_broker_deadline")
def test_an_unreachable_broker_exits_3() -> None:
    import typer
    from typer.testing import CliRunner

    from keyguard.sparkio.cli_commands import migrate

    app = typer.Typer()
    app.command("migrate")(migrate)
    app.command("other")(lambda: None)
    result = CliRunner().invoke(app, [
        "migrate", "--topic", "t", "--bootstrap", "127.0.0.1:1", "--columns", "id BIGINT",
        "--old-key-format", "json", "--value-format", "json", "--primary-key", "id",
        "--kafka-config",
        "socket.connection.setup.timeout.ms=2000"])
    assert result.exit_code == 3, result.output
    assert "127.0.0.1:1" in result.output and "Traceback" not in result.output


def test_a_new_key_row_in_other_value_bytes_is_not_rewritten() -> None:
    key = b'{"id":1,"region":"eu"}'
    spaced = Entry(0, 0, 0, key, b'{"id": 1, "region": "eu", "name": "a"}')
    p = plan(spaced)
    assert p.empty and p.in_place == 1


def test_a_new_char_key_is_padded_as_flink_writes_it_rows_and_tombstones_alike() -> None:
    """Re-keyed into a CHAR(4) key column: Flink pads 'eu' to 'eu  ' (CHAR(n) values are cast
    to n characters), in the key of a live row and of a tombstone."""
    old_table = parse_columns("region STRING NOT NULL, name STRING")
    new_table = parse_columns("region CHAR(4) NOT NULL, name STRING")
    v1 = resolve_plan(old_table, {**VALUE, "key.format": "json", "primary-key": "region"})
    v2 = resolve_plan(new_table, {**VALUE, "key.format": "json", "primary-key": "region"})
    decl = Declarations(v2, (v1,), ("v1",))
    live = classify(entry(v1, {"region": "eu", "name": "a"}), decl, "t")
    gone = classify(entry(v1, {"region": "eu", "name": "a"}, delete=True), decl, "t")
    assert live.new_key == gone.new_key == b'{"region":"eu  "}'
    assert live.new_value == b'{"region":"eu  ","name":"a"}'


def test_a_dry_run_to_an_unregistered_header_framing_binds_placeholders() -> None:
    """A dry run registers nothing: a new header-framed key schema the registry does not
    have yet is planned with a placeholder id and GUID, and the report says so."""
    import uuid

    from keyguard.formats.registry.mock import MockRegistry
    from keyguard.sparkio.migrate_report import MigrationReport
    from keyguard.sparkio.migrate_topic import Migration, bind_new_ids, declarations

    scope = f"dry-framing-{uuid.uuid4().hex[:8]}"
    url = {"key.avro-confluent.url": f"mock://{scope}", "value.format": "json",
           "primary-key": "id"}
    m = Migration(topic="t", bootstrap="127.0.0.1:1", table=parse_columns("id BIGINT, v STRING"),
                  old=({**url, "key.format": "avro-confluent"},),
                  new={**url, "key.format": "avro-confluent",
                       "key.avro-confluent.framing": "confluent-header"}, dry_run=True)
    try:
        report = MigrationReport("t", "t", dry_run=True)
        decl = declarations(m, None, report, bind=False)
        bind_new_ids(decl, m, None, report)
        assert decl.new.key_codec.record_headers() == (
            ("__key_schema_id", b"\x01" + bytes(16)),)
        assert any("not registered yet" in n for n in report.notes)
        assert MockRegistry(scope).subjects() == []  # nothing registered
    finally:
        MockRegistry.drop_scope(scope)
