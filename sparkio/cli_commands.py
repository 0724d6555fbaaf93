"""sparkio's commands of the `keyguard` script: `demo`, `broker` and `migrate` (the
`keyguard.commands` entry points name them through `keyguard.sparkio.cli`). A module of their
own, imported when one of them is invoked or `--help` lists them: a `keyguard check` does not
compile them."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from keyguard.formats.immutable import Value
from keyguard.formats.secrets import redact_url
from keyguard.guard.cli.common import (
    FORMAT_CHOICES,
    DdlConnectionsOpt,
    RegistryOpt,
    at_least,
    echo,
    fail,
    format_help,
    handles_errors,
    note_ddls,
    one_of,
    parse_kv,
)
from keyguard.guard.cli.progress import Progress
from keyguard.guard.options import VALUE_FORMAT, default_registry


@handles_errors
def demo(
    broker: Annotated[str, typer.Option("--broker", help="Embedded broker: tansu or noida.")]
    = "tansu",
    partitions: Annotated[int, typer.Option("--partitions")] = 6,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary registry.")] = False,
) -> None:
    """Write a table with Spark, read it back, and watch the guard block a breaking key change.

    Contacts only what it starts: an embedded broker on loopback and a file registry in a
    temporary directory."""
    from keyguard.sparkio.demo import run  # lazy: the CLI starts without Spark and the broker

    raise typer.Exit(run(broker=broker, partitions=partitions, keep=keep))


@handles_errors
def broker(
    kind: Annotated[str, typer.Option(
        "--broker", help="Embedded broker: tansu (data in memory) or noida (on disk).",
        callback=one_of(("tansu", "noida"), "--broker"))] = "tansu",
    port: Annotated[int | None, typer.Option(
        "--port", help="The loopback port; default: a free one.")] = None,
    topic: Annotated[list[str] | None, typer.Option(
        "--topic", help="NAME[:PARTITIONS] to create once it is up (repeatable; 1 partition "
        "by default; cleanup.policy=compact).")] = None,
) -> None:
    """Run an embedded broker on loopback until Ctrl-C, to try audit and migrate locally.

    The first line on stdout is its bootstrap address; it never compacts.

    Contacts nothing: it starts a broker on loopback."""
    # lazy: the Kafka client and the broker's start-up, only when the command runs
    from keyguard.sparkio.local_broker import serve, topic_specs

    raise typer.Exit(serve(kind, port=port, topics=topic_specs(topic or [])))


@handles_errors(formats=("text", "json"), formats_why="migrate reports a migration, not a guard "
                "Report (keyguard audit of the topic renders every report format)")
def migrate(
    bootstrap: Annotated[str, typer.Option("--bootstrap", help="Kafka bootstrap servers.")],
    topic: Annotated[str | None, typer.Option(
        "--topic", help="The compacted topic to re-key (default: the --flink-ddl table's).")]
    = None,
    columns: Annotated[str | None, typer.Option(
        "--columns", help="The table's columns, Flink SQL: 'id BIGINT, region STRING, ...' "
        "(or those of --flink-ddl).")] = None,
    primary_key: Annotated[str | None, typer.Option(
        "--primary-key", help="Key columns of both sides unless an option says otherwise "
        "(primary-key=... in --old-option or --new-option).")] = None,
    old_key_format: Annotated[list[str] | None, typer.Option(
        "--old-key-format", help="A key format the topic holds now; repeat it once per "
        f"encoding (phantom topics hold several): {FORMAT_CHOICES}.")] = None,
    old_option: Annotated[list[str] | None, typer.Option(
        "--old-option", help="[N:]K=V for the old encodings (N: the Nth --old-key-format, "
        "else all): primary-key, key.fields-prefix, key.<format>.*, "
        "value.<format>.framing.")] = None,
    new_key_format: Annotated[str | None, typer.Option(
        "--new-key-format", help="The key format to write; default: the first old one.")] = None,
    new_option: Annotated[list[str] | None, typer.Option(
        "--new-option", help="K=V for the new encoding: primary-key, key.fields-prefix, "
        "key.<format>.* (key.<format>.framing moves the key's schema id between the bytes "
        "and a header), value.<format>.framing (the value's).")] = None,
    new_partitions: Annotated[int | None, typer.Option(
        "--new-partitions", help="Partition count of the target; default: its own.",
        callback=at_least(1, "--new-partitions"))] = None,
    value_format: Annotated[str | None, typer.Option(
        "--value-format", help="The same on both sides. " + format_help("value"))] = None,
    value_option: Annotated[list[str] | None, typer.Option(
        "--value-option", help="K=V: value.fields-include, value.<format>.*.")] = None,
    registry: RegistryOpt = None,
    to_topic: Annotated[str | None, typer.Option(
        "--to-topic", help="Cut over: write the re-keyed table here (created when missing) "
        "and leave the topic as it is.")] = None,
    kafka_config: Annotated[list[str] | None, typer.Option(
        "--kafka-config", help="K=V librdkafka settings (security, timeouts).")] = None,
    state: Annotated[Path | None, typer.Option(
        "--state", help="Progress file (JSON); default: <topic>-<cluster>.json in "
        "$XDG_STATE_HOME/keyguard/migrate (~/.local/state/keyguard/migrate).")]
    = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the plan and write nothing.")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or json: a migration's own "
                                     "report, not a guard Report, so not junit, sarif or "
                                     "github (keyguard audit of the topic renders those).")
                   ] = "text",
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Write without asking (on a terminal, the plan is shown and "
        "confirmed before the first write; scripts and CI never ask).")] = False,
    flink_ddl: Annotated[str | None, typer.Option(
        "--flink-ddl", help="The NEW table as a Flink CREATE TABLE (.sql): columns, topic, "
        "key and value formats and options; replaces --columns, --new-key-format, "
        "--value-format (--new-option goes on top). Its connection options count only with "
        "--flink-ddl-connections.")] = None,
    old_flink_ddl: Annotated[list[str] | None, typer.Option(
        "--old-flink-ddl", help="An encoding the topic holds now, as the Flink CREATE TABLE "
        "that wrote it (repeatable, beside or instead of --old-key-format); its connection "
        "options count only with --flink-ddl-connections.")] = None,
    spark: Annotated[str | None, typer.Option(
        "--spark", help="Run on Spark, this master (local[*], spark://host:7077, yarn): no "
        "process holds the table, Spark's shuffles spill to disk; for tables larger than "
        "memory. Needs keyguard[spark] and Java.")] = None,
    ddl_connections: DdlConnectionsOpt = False,
) -> None:
    """Re-key a compacted topic without orphaning records (the fix for a key change).

    Every live row is written under the new key and acknowledged, then every old key gets a
    tombstone; verified at the end by an audit (exit 1 when a row is still under two keys).

    Contacts: the broker (--bootstrap): it reads the topic, then writes the rewrites and
    tombstones to it (or to --to-topic), nothing with --dry-run; the schema registry for a
    registry format: the new schemas are looked up and registered (only looked up with --dry-
    run). A Flink DDL's connection options are used only with --flink-ddl-connections."""
    # lazy: CLI start-up (the migration loads the Kafka client and the codecs)
    from keyguard.sparkio.migrate_report import as_json, exit_code, render_text
    from keyguard.sparkio.migrate_topic import Migration, migrate_topic

    for flag, value in (("--new-key-format", new_key_format), ("--value-format", value_format),
                        ("--to-topic", to_topic), ("--topic", topic)):
        if value is not None and not value.strip():
            raise fail(f"{flag} is empty: give a value, or leave the flag out")
    ddl = ddl_declarations(flink_ddl, old_flink_ddl or [], registry=registry, given={
        "--columns": columns, "--new-key-format": new_key_format,
        "--value-format": value_format}, use_connections=ddl_connections)
    table, topic = _table_and_topic(ddl, columns, topic)
    ddl_value_format, ddl_value_options = _ddl_value(ddl)
    olds, new = migration_options(
        old_key_formats=old_key_format or [], old_options=old_option or [],
        new_key_format=new_key_format, new_options=parse_kv(new_option, what="--new-option"),
        value_format=value_format or ddl_value_format,
        value_options={**ddl_value_options, **parse_kv(value_option, what="--value-option")},
        primary_key=primary_key, registry=registry or default_registry(),
        ddl_new=None if ddl is None else ddl.new, ddl_olds=() if ddl is None else ddl.olds)
    show = Progress("migrate")
    m = Migration(topic=topic, bootstrap=bootstrap, table=table, old=olds, new=new,
                  to_topic=to_topic, partitions=new_partitions,
                  properties=_kafka_properties(kafka_config, bootstrap, _ddl_kafka(
                      [flink_ddl, *(old_flink_ddl or [])], ddl_connections)),
                  state_path=state, dry_run=dry_run)
    confirm = None if yes or not asks() else \
        lambda plan: confirmed(plan, to_topic or topic, bootstrap)
    if spark is None:
        report = migrate_topic(m, progress=show, confirm=confirm)
    else:
        report = on_spark(spark, m, progress=show, confirm=confirm)
    echo(json.dumps(as_json(report), indent=2) if fmt == "json" else render_text(report))
    raise typer.Exit(exit_code(report))


def _ddl_value(ddl: Any) -> tuple[str, dict[str, str]]:
    """The value format and its options of the encodings the flags declare: the new DDL's
    (a topic's values keep their format across a key change), else the default value format."""
    if ddl is None or ddl.new is None:
        return DEFAULT_VALUE_FORMAT, {}
    return ddl.new["value.format"], {k: v for k, v in ddl.new.items()
                                     if k.startswith("value.") and k != "value.format"}


def _table_and_topic(ddl: Any, columns: str | None, topic: str | None) -> tuple[Any, str]:
    """The table's columns and the topic: --flink-ddl's, or --columns and --topic."""
    from keyguard.formats.sqltypes import parse_columns  # lazy: CLI start-up (the SQL types)

    if ddl is not None:
        table, topic = ddl.table, topic or ddl.topic
    elif columns is None:
        raise fail("--columns is required: the table's columns (or --flink-ddl)")
    else:
        table = parse_columns(columns)
    if topic is None:
        raise fail("--topic is required: the topic to re-key (or --flink-ddl, which names it)")
    return table, topic


def _ddl_kafka(paths: list[str | None], use_connections: bool) -> dict[str, Any]:
    """The DDLs' Kafka properties with --flink-ddl-connections (`--bootstrap` names the
    servers), else none."""
    if not use_connections or not any(paths):
        return {}
    # lazy: CLI start-up (only with a DDL)
    from keyguard.formats.flink_ddl import load_flink_ddl
    from keyguard.guard.request import ddl_kafka

    found = ddl_kafka([load_flink_ddl(p) for p in paths if p], True)
    found.pop("bootstrap.servers", None)
    return found


def _kafka_properties(kafka_config: list[str] | None, bootstrap: str,
                      ddl: dict[str, Any] | None = None) -> dict[str, Any]:
    """--kafka-config over the DDLs' properties (`ddl`) over KEYGUARD_KAFKA_* (as audit reads
    them); the servers given once."""
    # lazy: CLI start-up (the settings path loads the registry backends)
    from keyguard.formats.registry.settings import reject_unused_kafka, resolve_kafka

    explicit = parse_kv(kafka_config, what="--kafka-config")
    properties = resolve_kafka(explicit=explicit, configured=ddl)
    reject_unused_kafka(explicit, properties)
    in_props = properties.pop("bootstrap.servers", None)
    if in_props and str(in_props) != bootstrap:
        raise fail("bootstrap.servers in the Kafka properties and --bootstrap disagree: give "
                   "the servers once")
    return properties


def on_spark(master: str, m: Any, **kwargs: Any) -> Any:
    """`m` run by Spark (`keyguard.sparkio.migrate_spark.run_on_spark`) on a session this
    command starts and stops."""
    if not master.strip():
        raise fail("--spark is empty: give a master (local[*], spark://host:7077, yarn)")
    if importlib.util.find_spec("pyspark") is None:
        raise fail("--spark needs pyspark, which is not installed: pip install "
                   "'keyguard[spark]' (and Java 17), or leave --spark out to run in this "
                   "process")
    if master.startswith("local") and not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise fail("--spark needs Java (17) for a local Spark, and none is on the PATH or in "
                   "JAVA_HOME: install one, or leave --spark out to run in this process")
    from pyspark.sql import SparkSession  # lazy: pyspark

    from keyguard.sparkio.migrate_spark import run_on_spark  # lazy: pyspark
    from keyguard.sparkio.workers import quiet_session  # lazy: pyspark

    ours = SparkSession.getActiveSession() is None  # else the caller's, left running
    session = quiet_session(master, f"keyguard migrate {m.topic}")
    try:
        return run_on_spark(session, m, **kwargs)
    finally:
        if ours:
            session.stop()


def asks() -> bool:
    """Whether `migrate` asks before its first write: stdin and stderr are a terminal, not CI."""
    if os.environ.get("CI", "").lower() in ("true", "1"):
        return False
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def confirmed(plan: Any, topic: str, bootstrap: str) -> bool:
    """The plan in one line on stderr, and the user's answer (y or yes: write)."""
    sys.stderr.write(f"keyguard migrate: {plan.live_keys} rows; write {plan.rewrite_count} "
                     f"rewrites, then {plan.tombstone_count} tombstones, to topic {topic!r} at "
                     f"{redact_url(bootstrap)}? [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def migration_options(*, old_key_formats: list[str], old_options: list[str],
                      new_key_format: str | None, new_options: dict[str, str],
                      value_format: str, value_options: dict[str, str],
                      primary_key: str | None, registry: str | None,
                      ddl_new: dict[str, str] | None = None,
                      ddl_olds: tuple[dict[str, str], ...] = (),
                      ) -> tuple[tuple[dict[str, str], ...], dict[str, str]]:
    """The flags (and Flink DDLs) as upsert-kafka table options: one set per old encoding, and
    the new one. `registry` is the url of each registry format whose options name none."""
    from keyguard.formats.codec import format_factory  # lazy: CLI start-up (loads the codecs)

    if not old_key_formats and not ddl_olds:
        raise fail("give the key format the topic holds now: --old-key-format FORMAT "
                   "(once per encoding), or --old-flink-ddl FILE")
    shared: dict[str, str] = {}
    own: list[dict[str, str]] = [{} for _ in old_key_formats]
    for item in old_options:
        index, sep, pair = item.partition(":")
        if sep and index.isdigit() and "=" not in index:
            n = int(index)
            if not 1 <= n <= len(old_key_formats):
                raise fail(f"--old-option {item!r}: there is no --old-key-format number {n}")
            own[n - 1].update(parse_kv([pair], what="--old-option"))
        else:
            shared.update(parse_kv([item], what="--old-option"))

    def with_registry(out: dict[str, str]) -> dict[str, str]:
        """--registry for each registry format of a table (a DDL's own url was dropped)."""
        if registry:
            for role in ("key", "value"):
                fmt = out.get(f"{role}.format")
                if fmt and format_factory(fmt).uses_registry:
                    out.setdefault(f"{role}.{fmt}.url", registry)
        return out

    def table(key_format: str, given: dict[str, str]) -> dict[str, str]:
        out = {"key.format": key_format, "value.format": value_format, **value_options}
        if primary_key:
            out["primary-key"] = primary_key
        out.update(given)
        return with_registry(out)

    olds = tuple(table(f, {**shared, **o}) for f, o in zip(old_key_formats, own, strict=True))
    olds += tuple(with_registry({**o, **shared}) for o in ddl_olds)
    if ddl_new is not None:
        return olds, with_registry({**ddl_new, **new_options})
    return olds, table(new_key_format or old_key_formats[0]
                       if old_key_formats else olds[0]["key.format"], new_options)


class DdlDeclarations(Value):
    """What --flink-ddl and --old-flink-ddl declare: the table, its topic, the new table's
    options and the old encodings' (each without its topic: the migration names it)."""

    __slots__ = ("new", "olds", "table", "topic")
    FIELDS = ("table", "topic", "new", "olds")
    table: Final[Any]
    topic: Final[str | None]
    new: Final[dict[str, str] | None]
    olds: Final[tuple[dict[str, str], ...]]

    def __init__(self, table: Any, topic: str | None, new: dict[str, str] | None,
                 olds: tuple[dict[str, str], ...]) -> None:
        self.table = table
        self.topic = topic
        self.new = new
        self.olds = olds


def ddl_declarations(new: str | None, olds: list[str], *, registry: str | None,
                     given: dict[str, str | None],
                     use_connections: bool = False) -> DdlDeclarations | None:
    """The Flink DDLs of a migration; the flags a DDL replaces must not be given beside it.
    Their registry connection options count only with `use_connections` and no --registry."""
    if new is None and not olds:
        note_ddls([], use_connections)  # --flink-ddl-connections needs a DDL
        return None
    # lazy: CLI start-up (only with a DDL)
    from keyguard.formats.flink_ddl import load_flink_ddl
    from keyguard.formats.registry.options import is_registry_table_option  # lazy: CLI start-up

    def options(t: Any) -> dict[str, str]:
        # the run's --registry wins over the DDL's (Flink's production) registry, used only
        # with --flink-ddl-connections
        drop = registry or not use_connections
        return {k: v for k, v in t.options.items()
                if k != "topic" and not (drop and is_registry_table_option(k))}

    tables = [load_flink_ddl(p) for p in ([new] if new else []) + olds]
    note_ddls(tables, use_connections)
    def shape(t: Any) -> list[tuple[str, Any]]:
        # a key column is NOT NULL in its own table (Flink's PRIMARY KEY): not a difference
        return [(f.name, f.type.with_nullable(True)) for f in t.columns.fields]

    first = tables[0]
    for t in tables[1:]:
        if shape(t) != shape(first):
            raise fail(f"{t.origin}: its columns ({t.columns.sql()}) are not those of "
                       f"{first.origin} ({first.columns.sql()}): a migration re-keys one "
                       "table", kind="invalid-option")
    if new is not None:
        clash = [flag for flag, v in given.items() if v is not None]
        if clash:
            raise fail(f"--flink-ddl gives the new table's columns and formats: drop "
                       f"{', '.join(clash)}", kind="invalid-option")
    return DdlDeclarations(
        table=first.columns, topic=first.topic,
        new=options(tables[0]) if new is not None else None,
        olds=tuple(options(t) for t in tables[(1 if new is not None else 0):]))


#: The value format of `keyguard migrate` when none is given: every command's
#: (`keyguard.guard.options`; Flink's upsert-kafka has none).
DEFAULT_VALUE_FORMAT = VALUE_FORMAT.default_value
