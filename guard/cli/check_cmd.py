"""`keyguard check`: the guard on the command line (its report formats and options, which
`keyguard diff` and `keyguard audit` share).

No `from __future__ import annotations` here: typer reads the command's parameters, and an
annotation written as text is compiled again by `eval` each run (~0.2 ms per parameter, ~30
of them); as objects they are built with the module.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from keyguard.formats.errors import EXIT_BREAKING, EXIT_OK, InvalidOptionError
from keyguard.formats.schemafile import read_schema_source
from keyguard.formats.secrets import redact
from keyguard.guard.cli.common import (
    ReferenceOpt,
    at_least,
    echo,
    fail,
    handles_errors,
    one_of,
    parse_kv,
    write_output,
)
from keyguard.guard.options import (
    KEY_FIELDS_PREFIX,
    KEY_FORMAT,
    PARTITIONER,
    SCAN_LIMIT,
    VALUE_FORMAT,
)
from keyguard.guard.report import Report, Verdict

if TYPE_CHECKING:
    from keyguard.guard.selection import RuleSelection

FormatOpt = Annotated[
    str, typer.Option("--format", "-f", help="text, json, junit, sarif or github.")
]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", help="Write the report to this file instead of stdout.")
]
IgnoreOpt = Annotated[
    list[str] | None,
    typer.Option("--ignore", help="A rule ID or category whose findings do not count toward the "
                 "verdict (KG701, key-placement); repeatable and comma-separated. `keyguard "
                 "rules` lists them.")
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option("--select", help="Only these rule IDs or categories count; the findings of "
                 "the others are ignored. Repeatable and comma-separated.")
]
SchemaTypeOpt = Annotated[
    str | None, typer.Option("--schema-type", help="avro or json, when the extension does not say.",
                             callback=one_of(("avro", "json"), "--schema-type"))
]


def _emit(report: Report, fmt: str, output: Path | None, files: dict[str, str],
          selection: "RuleSelection | None" = None) -> None:
    # The catalogue imports every rule (~8 ms); only SARIF and JUnit describe every rule.
    from keyguard.guard.render import render, uses_catalogue  # lazy: CLI start-up (when rendering)

    if selection is not None:  # ignored findings leave the verdict (and the exit code)
        report = selection.apply(report)
    rules: tuple[Any, ...] = ()
    if uses_catalogue(fmt):
        from keyguard.guard import rules_catalogue  # lazy: CLI start-up (see above)

        rules = tuple(rules_catalogue.catalogue())
    # Renderers redact their free text; this catches a credential in any other field too.
    text = redact(render(report, fmt, files=files, rules=rules))
    if output is not None:
        write_output(output, text)
        typer.echo(f"keyguard: {report.verdict.value}: report written to {output}", err=True)
    else:
        echo(text.rstrip("\n"))
    raise typer.Exit(EXIT_BREAKING if report.verdict is Verdict.BREAKING else EXIT_OK)


@handles_errors
def check_cmd(
    topic: Annotated[str | None, typer.Option("--topic", help="The topic to check.")] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="A TOML file listing many topics.")
    ] = None,
    registry: Annotated[
        str | None,
        typer.Option("--registry", help="http(s)://..., file://DIR (default ./schemas), "
                     "mock://NAME. Credentials: KEYGUARD_REGISTRY_USER_INFO / _BEARER_TOKEN."),
    ] = None,
    key_schema: Annotated[
        str | None, typer.Option("--key-schema", help="Candidate key schema: file or "
                                 "subject:NAME[:VERSION].")
    ] = None,
    value_schema: Annotated[
        str | None, typer.Option("--value-schema", help="Candidate value schema.")
    ] = None,
    key_format: Annotated[str, typer.Option("--key-format")] = KEY_FORMAT.default_value,
    value_format: Annotated[str, typer.Option("--value-format")] = VALUE_FORMAT.default_value,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", "-o", help="Table option KEY=VALUE, Flink names "
                     "(key.json.timestamp-format.standard=ISO-8601). Repeatable."),
    ] = None,
    partitions: Annotated[
        int | None, typer.Option("--partitions", help="Partition count producers will see.",
                                 callback=at_least(1, "--partitions"))
    ] = None,
    partitioner: Annotated[
        str, typer.Option("--partitioner", help=PARTITIONER.description)
    ] = PARTITIONER.default_value,
    bootstrap: Annotated[
        str | None,
        typer.Option("--bootstrap", help="Kafka bootstrap servers: scan the topic for the key "
                     "schema ids its keys carry, its partitions and cleanup.policy."),
    ] = None,
    kafka_config: Annotated[
        list[str] | None,
        typer.Option("--kafka-config", help="librdkafka property KEY=VALUE (security.protocol,"
                     " sasl.mechanism...). Passwords: KEYGUARD_KAFKA_SASL_PASSWORD."),
    ] = None,
    scan_limit: Annotated[int, typer.Option("--scan-limit", help="Keys to scan at most.",
                                            callback=at_least(1, "--scan-limit"))
                      ] = SCAN_LIMIT.default_value,
    against: Annotated[
        str | None,
        typer.Option("--against", help="git:REF: compare the file registry with itself as "
                     "committed at REF (a CI gate with no registry server)."),
    ] = None,
    schema_type: SchemaTypeOpt = None,
    reference: ReferenceOpt = None,
    fmt: FormatOpt = "text",
    output: OutputOpt = None,
    require_subject: Annotated[
        bool, typer.Option("--require-subject", help="A subject with no versions is breaking "
                           "(KG015), not a first registration: for gates of existing topics.")
    ] = False,
    ignore: IgnoreOpt = None,
    select: SelectOpt = None,
    flink_ddl: Annotated[
        Path | None,
        typer.Option("--flink-ddl", help="The topic as a Flink CREATE TABLE (.sql): topic, "
                     "formats and options, key.fields-prefix, sink.partitioner, and the key "
                     "and value schemas its columns write (the candidates, unless --key-schema"
                     "/--value-schema). -o options go on top."),
    ] = None,
) -> None:
    """Check candidate key and value schemas of one topic, or of every topic in a config file."""
    # lazy: CLI start-up (registry settings and the TOML config load the registry backends)
    from keyguard.formats.registry.settings import reject_unused_kafka, resolve_kafka
    from keyguard.formats.table_options import KEY_FIELDS_PREFIX as TABLE_KEY_FIELDS_PREFIX
    from keyguard.guard.entry import GuardConfig, TopicEntry

    if config:
        from keyguard.guard.config import load_config  # lazy: CLI start-up (the TOML reader)

        cfg = load_config(config)
    else:
        cfg = GuardConfig()
    options = parse_kv(option)
    entries = list(cfg.topics)
    if flink_ddl is not None:
        topic = _ddl_entry(flink_ddl, topic, entries, options,
                           registry_given=bool(registry or cfg.registry), key_format=key_format,
                           value_format=value_format, partitioner=partitioner,
                           key_schema=key_schema, value_schema=value_schema,
                           partitions=partitions)
    elif topic:
        cli = TopicEntry(
            name=topic, key_format=key_format, value_format=value_format or None,
            key_schema=key_schema, value_schema=value_schema, partitions=partitions,
            partitioner=partitioner, key_fields_prefix=options.pop(
                TABLE_KEY_FIELDS_PREFIX.key, KEY_FIELDS_PREFIX.default_value),
            options=options)
        found = [e for e in entries if e.name == topic]
        entries = [_overlay(found[0], cli) if found else cli]
    elif key_schema or value_schema:
        raise fail("--key-schema/--value-schema need --topic")
    elif options or partitions is not None:
        raise fail("-o/--option and --partitions apply to --topic; for the topics of a config "
                   "file, set them in its [[topics]] entries")
    for e in entries:
        _check_table_options(e)
    selection = _selection(ignore, select, cfg, entries, config)
    settings = _registry_settings(registry, cfg, entries, config)

    if against is not None:
        if not against.startswith("git:"):
            raise fail(f"--against must be git:REF, got {against!r}")
        # lazy: CLI start-up (only --against loads the git gate)
        from keyguard.guard.gate import candidate_files, gate, registry_at_ref

        directory = settings.url.removeprefix("file://")
        if "://" in directory:
            raise fail("--against git:REF compares a file registry (file://DIR) with git")
        old = registry_at_ref(directory, against[4:])
        new = settings.open()
        report = gate(old, new, entries)
        _emit(report, fmt, output, candidate_files(directory, new, report), selection)
        return

    if not entries:
        raise fail("nothing to check: give --topic, or --config with [[topics]]")
    # lazy: CLI start-up (the analysis, loaded when there is something to check)
    from keyguard.guard.check import check_many
    from keyguard.guard.plan import TopicPlan

    servers = bootstrap or cfg.bootstrap
    explicit_kafka = parse_kv(kafka_config, what="--kafka-config")
    props = resolve_kafka(explicit=explicit_kafka, configured=cfg.kafka)
    reject_unused_kafka({**cfg.kafka, **explicit_kafka}, props)
    in_props = props.pop("bootstrap.servers", None)
    if in_props and servers and str(in_props) != servers:
        raise fail("bootstrap.servers in the Kafka properties and --bootstrap disagree: "
                   "give the servers once")
    servers = servers or (str(in_props) if in_props else None)
    if (explicit_kafka or cfg.kafka) and not servers:
        raise fail("--kafka-config (or the config file's [kafka]) is used only to scan a topic: "
                   "give --bootstrap (or bootstrap = \"...\" in the config file)")
    reg = settings.open()
    files: dict[str, str] = {}
    specs = []
    refs: tuple[Any, ...] = ()
    if reference:
        # lazy: CLI start-up (schema references, only with --reference)
        from keyguard.formats.registry.references import parse_reference_option

        refs = tuple(map(parse_reference_option, reference))
    for e in entries:
        ks = read_schema_source(e.key_schema, registry=reg, schema_type=schema_type,
                                references=refs) if e.key_schema else None
        vs = read_schema_source(e.value_schema, registry=reg, schema_type=schema_type,
                                references=refs) if e.value_schema and e.value_format else None
        required = require_subject or (e.require_subject if e.require_subject is not None
                                       else cfg.require_subject)
        if e.flink_table is not None:  # the DDL's columns write the other candidates
            ddl_key, ddl_value = e.flink_table.written_schemas()
            ks = ks or ddl_key
            vs = vs or (ddl_value if e.value_format else None)
        spec = TopicPlan.of_entry(e, candidate_key=ks, candidate_value=vs,
                                  require_subject=required)
        specs.append(spec)
        for role, src, text in (("key", e.key_schema, ks), ("value", e.value_schema, vs)):
            src = src or (e.flink_table.origin if e.flink_table is not None else None)
            if src and text and not src.startswith("subject:"):
                files[spec.subject(role, text)] = src
    inspector = None
    if servers:
        # lazy: confluent_kafka, only with a bootstrap server
        from keyguard.guard.topic import KafkaTopicInspector

        inspector = KafkaTopicInspector(servers, props)
    # --scan-limit's default defers to the config file's scan-limit.
    limit = cfg.scan_limit if scan_limit == SCAN_LIMIT.default_value else scan_limit
    report = check_many(specs, registry=reg, inspector=inspector, scan_limit=limit)
    _emit(report, fmt, output, files, selection)


def _ddl_entry(path: Path, topic: str | None, entries: list[Any], options: dict[str, Any], *,
               registry_given: bool, key_format: str, value_format: str, partitioner: str,
               key_schema: str | None, value_schema: str | None, partitions: int | None) -> str:
    """`check --flink-ddl`: the DDL's topic replaces (or overlays) the entries' one; returns
    its name. What the DDL says cannot be given again by a flag."""
    from dataclasses import replace

    # lazy: CLI start-up (the config module, only with a DDL)
    from keyguard.guard.config import entry_of_flink_table

    table = _flink_table(path)
    clash = [flag for flag, value, default in (
        ("--key-format", key_format, KEY_FORMAT.default_value),
        ("--value-format", value_format, VALUE_FORMAT.default_value),
        ("--partitioner", partitioner, PARTITIONER.default_value)) if value != default]
    if clash:
        raise fail(f"--flink-ddl says how the topic is written: drop {', '.join(clash)}, or "
                   "change the DDL", kind="invalid-option")
    if topic and topic != table.topic:
        raise fail(f"--topic {topic} is not the DDL's topic {table.topic!r}: drop --topic",
                   kind="invalid-option")
    entry = entry_of_flink_table(table, options=options, registry_given=registry_given,
                                 key_schema=key_schema,
                                 value_schema=value_schema, partitions=partitions)
    found = [e for e in entries if e.name == table.topic]  # keeps its ignore, require-subject
    entries[:] = [replace(entry, ignore=found[0].ignore, require_subject=found[0].require_subject)
                  if found else entry]
    return table.topic


def _selection(ignore: list[str] | None, select: list[str] | None, cfg: Any,
               entries: list[Any], config: Path | None) -> "RuleSelection | None":
    """--ignore/--select, then the config file's global and per-topic `ignore` (validated when
    the file was read), for the topics this run checks; None when nothing is ignored."""
    if not (ignore or select or cfg.ignore or any(e.ignore for e in entries)):
        return None
    from keyguard.guard.selection import RuleSelection  # lazy: CLI start-up (~4 ms, when checking)

    selection = RuleSelection.of(ignore=ignore, select=select)
    where = f"{config}" if config else "config file"
    selection = selection.plus(RuleSelection.of(ignore=cfg.ignore, source=where))
    for e in entries:
        selection = selection.plus(RuleSelection.of(ignore=e.ignore, source=where, topic=e.name))
    return selection


def _overlay(entry: Any, cli: Any) -> Any:
    """A config file's topic with what the command line gave explicitly on top (explicit wins)."""
    from dataclasses import replace

    changes: dict[str, Any] = {"options": {**entry.options, **cli.options}}
    for name in ("key_schema", "value_schema", "partitions", "key_fields_prefix"):
        if getattr(cli, name):
            changes[name] = getattr(cli, name)
    for name, default in (("key_format", KEY_FORMAT.default_value),
                          ("value_format", VALUE_FORMAT.default_value),
                          ("partitioner", PARTITIONER.default_value)):
        if getattr(cli, name) != default:
            changes[name] = getattr(cli, name)
    return replace(entry, **changes)


def _registry_settings(registry: str | None, cfg: Any, entries: list[Any],
                       config: Path | None = None) -> Any:
    """The one registry of this run, through the one settings path (explicit > config file >
    environment > default): --registry, the avro-confluent url and connection options of the
    topics (-o key.avro-confluent.timeout=5s), the config file's registry / [registry]."""
    # lazy: CLI start-up (registry settings load the registry backends)
    from keyguard.formats.codec import format_factory
    from keyguard.formats.registry.settings import registry_options_of, resolve_registry

    url, reg_options, sources = registry_options_of(
        (f"topic {e.name}: {role}.{fmt}.", e.format_options(role, fmt))
        for e in entries for role, fmt in (("key", e.key_format), ("value", e.value_format))
        if fmt and format_factory(fmt).uses_registry)
    if url and registry and url != registry.strip():
        raise InvalidOptionError(
            "--registry and the avro-confluent url option name two registries",
            hint="give the registry once (--registry)")
    default = "file://schemas" if Path("schemas").is_dir() else None
    if not (registry or url or cfg.registry or default):
        raise fail("no --registry given and no ./schemas directory: say where the schemas are")
    return resolve_registry(explicit_url=registry or url, explicit_options=reg_options,
                            explicit_sources=sources, configured_url=cfg.registry,
                            configured_options=cfg.registry_options, default_url=default,
                            configured_where=f"{config} [registry]")


def _check_table_options(e: Any) -> None:
    """Reject table options that belong to neither format, naming them."""
    # lazy: CLI start-up (the format registry and its option declarations)
    from keyguard.formats.codec import format_factory

    prefixes = tuple(f"{r}.{f}." for r, f in (("key", e.key_format), ("value", e.value_format))
                     if f)
    stray = [k for k in e.options if not k.startswith(prefixes)]
    if stray:
        raise InvalidOptionError(
            f"topic {e.name}: option{'s' if len(stray) > 1 else ''} {', '.join(stray)} "
            "belong to no format of this topic",
            hint=f"format options are named {' or '.join(p + '*' for p in prefixes)}",
        )
    for role, fmt in (("key", e.key_format), ("value", e.value_format)):
        if fmt:
            format_factory(fmt).options.validate(e.format_options(role, fmt),
                                                 where=f"topic {e.name}: {role} format {fmt}")


def _flink_table(path: Path | None) -> Any:
    """A Flink DDL file, its ignored parts noted on stderr."""
    if path is None:
        return None
    from keyguard.formats.flink_ddl import load_flink_ddl  # lazy: CLI start-up (only with a DDL)

    table = load_flink_ddl(path)
    for part in table.ignored:
        typer.echo(f"keyguard: note: {part}", err=True)
    return table
