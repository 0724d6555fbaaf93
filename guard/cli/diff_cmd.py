"""`keyguard diff`: the guard's judgement of schema files (and Flink DDLs), without a registry.

Its own module so that a `check` does not compile it (guard/cli/__init__ builds each command
when asked for)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from keyguard.formats.registry import SchemaVersion
from keyguard.formats.schemafile import read_schema_file
from keyguard.guard.cli.check_cmd import (
    IgnoreOpt,
    OutputOpt,
    RulesOfOpt,
    SelectOpt,
    _emit,
    _flink_table,
    reading_as,
)
from keyguard.guard.cli.common import (
    FILE_REGISTRY_IDS,
    FormatOpt,
    SchemaTypeOpt,
    at_least,
    fail,
    format_help,
    handles_errors,
    note_ddls,
    one_of,
    parse_kv,
)
from keyguard.guard.options import KEY_FORMAT
from keyguard.guard.render import UNSCOPED
from keyguard.guard.report import Report


@handles_errors
def diff_cmd(
    files: Annotated[list[Path] | None, typer.Argument(
        help="Schema files, oldest first; the last one is the candidate. With --flink-ddl the "
             "DDL is the candidate; with --old-flink-ddl the DDL is the old side (with "
             "--level, each DDL gives the value schema its columns register).")] = None,
    key: Annotated[bool, typer.Option(
        "--key", help="Judge key stability (bytes, ids). A registry format's schema ids are, "
        f"as in a file registry, {FILE_REGISTRY_IDS}.")] = False,
    key_format: Annotated[str | None, typer.Option(
        "--key-format", help="Of the old side, and of the new one unless --new-key-format. "
        + format_help("key", default=f"a Flink DDL's, else {KEY_FORMAT.default_value}")
    )] = None,
    new_key_format: Annotated[str | None, typer.Option(
        "--new-key-format", help="Key format of the candidate, when it changes (KG601).")] = None,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", "-o", help="Key format option KEY=VALUE (no prefix) of the old "
                     "side, and of the candidate too while the key format stays. Repeatable."),
    ] = None,
    new_option: Annotated[
        list[str] | None,
        typer.Option("--new-option", help="Key format option for the candidate only."),
    ] = None,
    fields_prefix: Annotated[str | None, typer.Option(
        "--fields-prefix", help="key.fields-prefix of the old side (and of the candidate "
        "unless --new-fields-prefix); the schemas name the key fields without it.")] = None,
    new_fields_prefix: Annotated[str | None, typer.Option(
        "--new-fields-prefix", help="key.fields-prefix of the candidate (KG309).")] = None,
    partitioner: Annotated[str | None, typer.Option(
        "--partitioner", help="The old producer's partitioner: murmur2 (Java, Flink's "
        "default), murmur2_random, consistent_random (librdkafka's default), fnv1a, "
        "round-robin, fixed, ... (default murmur2).")] = None,
    new_partitioner: Annotated[str | None, typer.Option(
        "--new-partitioner", help="The candidate producer's partitioner (KG603).")] = None,
    partitions: Annotated[int | None, typer.Option(
        "--partitions", help="The topic's partition count.",
        callback=at_least(1, "--partitions"))] = None,
    new_partitions: Annotated[int | None, typer.Option(
        "--new-partitions", help="The partition count after the change (default: the same).",
        callback=at_least(1, "--new-partitions"))] = None,
    keys_written_by: Annotated[str, typer.Option(
        "--keys-written-by", help="Which old schemas wrote the keys in the topic today: last "
        "(the one before the candidate) or all (avro-confluent keys then carry each one's id: "
        "KG502).", callback=one_of(("last", "all"), "--keys-written-by"))] = "last",
    flink_ddl: Annotated[Path | None, typer.Option(
        "--flink-ddl", help="A Flink CREATE TABLE (.sql) giving the candidate side: its key "
        "columns, key format and options, key.fields-prefix, sink.partitioner (with --level: "
        "the value schema its value format registers). diff connects to nothing: the DDL's "
        "connection options are ignored (noted on stderr).")] = None,
    old_flink_ddl: Annotated[Path | None, typer.Option(
        "--old-flink-ddl", help="A Flink CREATE TABLE giving the old side (its connection "
        "options ignored, as --flink-ddl's).")] = None,
    level: Annotated[
        str | None,
        typer.Option("--level", help="Value compatibility: BACKWARD, FORWARD, FULL, "
                     "their _TRANSITIVE forms, or NONE."),
    ] = None,
    schema_type: SchemaTypeOpt = None,
    fmt: FormatOpt = "text",
    output: OutputOpt = None,
    ignore: IgnoreOpt = None,
    select: SelectOpt = None,
    rules_of: RulesOfOpt = None,
) -> None:
    """Compare schema files directly: --key for key stability, --level for value compatibility.

    Contacts nothing: it compares files."""
    files = files or []
    ddls = [d for d in (old_flink_ddl, flink_ddl) if d is not None]
    _check_usage(key, level, len(files) + len(ddls), key_flags={
        "--partitions": partitions, "--new-partitions": new_partitions, "--option": option,
        "--new-option": new_option, "--key-format": key_format,
        "--new-key-format": new_key_format, "--fields-prefix": fields_prefix,
        "--new-fields-prefix": new_fields_prefix, "--partitioner": partitioner,
        "--new-partitioner": new_partitioner,
        "--keys-written-by": None if keys_written_by == "last" else keys_written_by})
    if rules_of is not None and level is None:
        raise fail("--rules-of says how --level judges value schemas; key stability (--key) "
                   "is the same under every registry's rules: drop --rules-of",
                   kind="invalid-option")
    if new_partitions is not None and partitions is None:
        raise fail("--new-partitions needs --partitions, the topic's partition count today, "
                   "to judge the change", kind="invalid-option")
    selection = _selection(ignore, select)
    read = reading_as(rules_of, read_schema_file)
    texts = [read(f, schema_type) for f in files]
    shown = {str(f): str(f) for f in (*files, *ddls)}
    shown[UNSCOPED] = str(flink_ddl or files[-1])  # the candidate, where key findings point
    if level is not None:
        names, texts = _value_sides(files, texts, old_flink_ddl, flink_ddl)
        selection = _accepting(selection, texts[-1] if texts else None)
        _emit(_diff_values(names, texts, level, rules_of), fmt, output, shown, selection)
        return
    if old_flink_ddl is not None and len(texts) > (0 if flink_ddl else 1):
        raise fail("--old-flink-ddl gives the old side: give at most the candidate schema "
                   "file" + (", none with --flink-ddl too" if flink_ddl else ""))
    # lazy: CLI start-up (the settings merge and the key analysis)
    from keyguard.guard.request import DiffRequest, diff_keys

    old_table, new_table = (_flink_table(d) for d in (old_flink_ddl, flink_ddl))
    note_ddls([old_table, new_table], False, connects=False)
    request = DiffRequest(
        key_format=key_format, new_key_format=new_key_format, options=parse_kv(option),
        new_options=parse_kv(new_option, what="--new-option"), fields_prefix=fields_prefix,
        new_fields_prefix=new_fields_prefix, partitioner=partitioner,
        new_partitioner=new_partitioner, partitions=partitions, new_partitions=new_partitions,
        all_old_ids=keys_written_by == "all")
    selection = _accepting(selection, None if new_table or not texts else texts[-1], new_table)
    _emit(diff_keys(request, texts, old_table, new_table), fmt, output, shown, selection)


def _selection(ignore: list[str] | None, select: list[str] | None) -> Any:
    """--ignore/--select; None when nothing is ignored."""
    if not (ignore or select):
        return None
    from keyguard.guard.selection import RuleSelection  # lazy: CLI start-up (~4 ms, when ignoring)

    return RuleSelection.of(ignore=ignore, select=select)


def _accepting(selection: Any, candidate: Any, table: Any = None) -> Any:
    """The selection with what the candidate (its schema file, or its Flink DDL) accepts in
    its own text: `keyguard: ignore` (`keyguard.guard.suppress`)."""
    text = table.text if table is not None else candidate.text if candidate is not None else ""
    if "keyguard" not in text:
        return selection
    # lazy: CLI start-up (only for a candidate that accepts something)
    from keyguard.guard.selection import RuleSelection
    from keyguard.guard.suppress import in_flink_ddl, in_schema

    found = in_flink_ddl(table) if table is not None else in_schema(candidate)
    return (selection or RuleSelection()).accepting(found) if found else selection


def _check_usage(key: bool, level: str | None, sides: int, *,
                 key_flags: dict[str, Any]) -> None:
    """Say what to judge, with flags that mean something for it, on at least two sides."""
    if key == (level is not None):
        raise fail("say what to judge: --key (key stability) or --level LEVEL (values)")
    key_only = [name for name, given in key_flags.items() if given is not None]
    if level is not None and key_only:
        raise fail(f"{', '.join(key_only)} judge{'s' if len(key_only) == 1 else ''} keys and "
                   "mean nothing with --level: drop them, or use --key", kind="invalid-option")
    if sides < 2:
        raise fail("diff needs at least two files: the old schema(s) and the candidate"
                   + (" (a Flink DDL gives one side)" if key else ""))


def _value_sides(files: list[Path], texts: list[Any], old_ddl: Path | None,
                 new_ddl: Path | None) -> tuple[list[str], list[Any]]:
    """`diff --level`'s schemas, oldest first: the old DDL's value schema, the files, the
    candidate DDL's; a DDL gives the value schema its columns register."""
    from keyguard.guard.cli.schema_cmd import registered_schema  # lazy: CLI start-up (DDLs only)

    def value_of(path: Path) -> Any:
        table = _flink_table(path)
        return registered_schema(table.value_format, table.written_schemas()[1], "value",
                                 where=str(path), judged="to judge at --level")

    old = [(str(old_ddl), value_of(old_ddl))] if old_ddl is not None else []
    new = [(str(new_ddl), value_of(new_ddl))] if new_ddl is not None else []
    sides = [*old, *zip(map(str, files), texts, strict=True), *new]
    return [name for name, _ in sides], [text for _, text in sides]


def _diff_values(files: list[str], texts: list[Any], level: str,
                 rules: str | None = None) -> Report:
    """`diff --level`: the last file against the others, at the compatibility level, by
    `rules` (Confluent's by default) where the registries differ."""
    # lazy: CLI start-up (guard.values + guard.compat, ~4 ms; only diff --level)
    from keyguard.formats.schema_identity import derived_schema_id
    from keyguard.guard.compat import rules_of
    from keyguard.guard.values import check_value

    history = [SchemaVersion("diff", i + 1, derived_schema_id(t.text, t.schema_type),
                             t.text, t.schema_type) for i, t in enumerate(texts[:-1])]
    findings = check_value(str(files[-1]), texts[-1], history, level.upper(), rules=rules)
    return Report.of(findings, [f"{' -> '.join(files)} at {level.upper()} by {rules_of(rules)}"])
