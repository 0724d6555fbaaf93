"""The `keyguard` console script: guard's commands plus those sparkio contributes (demo,
migrate).

guard/ depends on nothing above it, so the script is assembled here, above both: `main` adds
sparkio's commands to `guard.cli.app` and runs it, and `keyguard --help` lists them without
reading any package metadata. They are also in pyproject.toml's `keyguard.commands`
entry-point group, which `python -m guard.cli` looks up when a name is not registered. This
module imports neither Spark nor the embedded broker; a command imports them only when it runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from guard import cli as guard_cli
from guard.cli.common import at_least, fail, handles_errors, parse_kv


@handles_errors
def demo(
    broker: Annotated[str, typer.Option("--broker", help="Embedded broker: tansu or noida.")]
    = "tansu",
    partitions: Annotated[int, typer.Option("--partitions")] = 6,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary registry.")] = False,
) -> None:
    """Write a table with Spark, read it back, and watch the guard block a breaking key change."""
    from sparkio.demo import run  # lazy: the CLI starts without Spark and the broker

    raise typer.Exit(run(broker=broker, partitions=partitions, keep=keep))


@handles_errors(formats=("text", "json"))
def migrate(
    topic: Annotated[str, typer.Option("--topic", help="The compacted topic to re-key.")],
    bootstrap: Annotated[str, typer.Option("--bootstrap", help="Kafka bootstrap servers.")],
    columns: Annotated[str, typer.Option(
        "--columns", help="The table's columns, Flink SQL: 'id BIGINT, region STRING, ...'.")],
    primary_key: Annotated[str | None, typer.Option(
        "--primary-key", help="Key columns of both sides unless an option says otherwise "
        "(primary-key=... in --old-option or --new-option).")] = None,
    old_key_format: Annotated[list[str] | None, typer.Option(
        "--old-key-format", help="A key format the topic holds now; repeat it once per "
        "encoding (phantom topics hold several).")] = None,
    old_option: Annotated[list[str] | None, typer.Option(
        "--old-option", help="[N:]K=V for the old encodings (N: the Nth --old-key-format, "
        "else all): primary-key, key.fields-prefix, key.<format>.*.")] = None,
    new_key_format: Annotated[str | None, typer.Option(
        "--new-key-format", help="The key format to write; default: the first old one.")] = None,
    new_option: Annotated[list[str] | None, typer.Option(
        "--new-option", help="K=V for the new key: primary-key, key.fields-prefix, "
        "key.<format>.*.")] = None,
    new_partitions: Annotated[int | None, typer.Option(
        "--new-partitions", help="Partition count of the target; default: its own.",
        callback=at_least(1, "--new-partitions"))] = None,
    value_format: Annotated[str, typer.Option(
        "--value-format", help="The value format (the same on both sides).")] = "json",
    value_option: Annotated[list[str] | None, typer.Option(
        "--value-option", help="K=V: value.fields-include, value.<format>.*.")] = None,
    registry: Annotated[str | None, typer.Option(
        "--registry", help="Schema registry URL for the formats that use one.")] = None,
    to_topic: Annotated[str | None, typer.Option(
        "--to-topic", help="Cut over: write the re-keyed table here (created when missing) "
        "and leave the topic as it is.")] = None,
    kafka_config: Annotated[list[str] | None, typer.Option(
        "--kafka-config", help="K=V librdkafka settings (security, timeouts).")] = None,
    state: Annotated[Path | None, typer.Option(
        "--state", help="Progress file (JSON); default: ./keyguard-migrate-<topic>.json.")]
    = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the plan and write nothing.")] = False,
    fmt: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
) -> None:
    """Re-key a compacted topic: every live row under the new key, acknowledged, then a
    tombstone for every old key; verified at the end (exit 1 when a row is still under two)."""
    # lazy: CLI start-up (the migration loads the Kafka client and the codecs)
    from formats.sqltypes import parse_columns
    from sparkio.migrate_topic import Migration, as_json, exit_code, migrate_topic, render_text

    olds, new = migration_options(
        old_key_formats=old_key_format or [], old_options=old_option or [],
        new_key_format=new_key_format, new_options=parse_kv(new_option, what="--new-option"),
        value_format=value_format, value_options=parse_kv(value_option, what="--value-option"),
        primary_key=primary_key, registry=registry)
    report = migrate_topic(Migration(
        topic=topic, bootstrap=bootstrap, table=parse_columns(columns), old=olds, new=new,
        to_topic=to_topic, partitions=new_partitions,
        properties=parse_kv(kafka_config, what="--kafka-config"), state_path=state,
        dry_run=dry_run))
    typer.echo(json.dumps(as_json(report), indent=2) if fmt == "json" else render_text(report))
    raise typer.Exit(exit_code(report))


def migration_options(*, old_key_formats: list[str], old_options: list[str],
                      new_key_format: str | None, new_options: dict[str, str],
                      value_format: str, value_options: dict[str, str],
                      primary_key: str | None, registry: str | None,
                      ) -> tuple[tuple[dict[str, str], ...], dict[str, str]]:
    """The flags as upsert-kafka table options: one set per old encoding, and the new one."""
    # lazy: CLI start-up (the format registry loads the codecs)
    from formats.codec import format_factory

    if not old_key_formats:
        raise fail("give the key format the topic holds now: --old-key-format FORMAT "
                   "(once per encoding)")
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

    def table(key_format: str, given: dict[str, str]) -> dict[str, str]:
        out = {"key.format": key_format, "value.format": value_format, **value_options}
        if primary_key:
            out["primary-key"] = primary_key
        out.update(given)
        if registry:
            for role, fmt in (("key", key_format), ("value", value_format)):
                if format_factory(fmt).uses_registry:
                    out.setdefault(f"{role}.{fmt}.url", registry)
        return out

    olds = tuple(table(f, {**shared, **o}) for f, o in zip(old_key_formats, own, strict=True))
    return olds, table(new_key_format or old_key_formats[0], new_options)


#: sparkio's commands, as `keyguard <name>`.
COMMANDS = {"demo": demo, "migrate": migrate}


def main() -> None:
    """The `keyguard` console script."""
    for name, command in COMMANDS.items():
        guard_cli.app.command(name, epilog=guard_cli.EXIT_CODES_HELP)(command)
    guard_cli.main()


if __name__ == "__main__":
    main()
