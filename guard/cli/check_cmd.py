"""`keyguard check`: the guard on the command line (its report formats and options, which
`keyguard diff` and `keyguard audit` share).

No `from __future__ import annotations` here: typer reads the command's parameters, and an
annotation written as text is compiled again by `eval` each run (~0.2 ms per parameter, ~30
of them); as objects they are built with the module.
"""

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from keyguard.formats.errors import EXIT_BREAKING, EXIT_OK, SchemaError
from keyguard.formats.schemafile import SchemaText, guess_schema_type, read_schema_source
from keyguard.formats.secrets import redact
from keyguard.guard.cli.common import (
    DdlConnectionsOpt,
    FormatOpt,
    KeyFormatOpt,
    ReferenceOpt,
    RegistryOpt,
    SchemaTypeOpt,
    ValueFormatOpt,
    at_least,
    echo,
    fail,
    handles_errors,
    note_ddls,
    one_of,
    parse_kv,
    write_output,
)
from keyguard.guard.options import (
    KEY_FORMAT,
    PARTITIONER,
    RULES_OF,
    SCAN_LIMIT,
    VALUE_FORMAT,
    default_registry,
)
from keyguard.guard.report import Report, Verdict

if TYPE_CHECKING:
    from keyguard.guard.entry import GuardConfig
    from keyguard.guard.request import CheckRequest, CheckRun
    from keyguard.guard.selection import RuleSelection

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

RulesOfOpt = Annotated[
    str | None,
    typer.Option("--rules-of", help=RULES_OF.description + " Default: confluent (a config "
                 "file's rules-of).", callback=one_of(RULES_OF.choices or (), "--rules-of"))
]


def reading_as(rules: str | None, read: Callable[..., SchemaText]) -> Callable[..., SchemaText]:
    """`read` (a schema file or source), or under rules that guess a JSON Schema's draft from
    its content (Redpanda's) a `read` that retries a refused JSON Schema file under the draft
    it fits: such a file is refused by every other command, which read it as draft-07."""
    from keyguard.guard.compat import rules_of  # lazy: CLI start-up (the checkers' package)

    if not rules_of(rules).draft_from_content:
        return read

    def guessing(source: str | Path, schema_type: str | None = None, **kw: Any) -> SchemaText:
        try:
            return read(source, schema_type=schema_type, **kw)
        except SchemaError:
            path = Path(source)
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            if not text or guess_schema_type(path, text, schema_type) != "JSON":
                raise
            # lazy: CLI start-up (the JSON Schema checker, only under Redpanda's rules)
            from keyguard.guard.compat.jsonschema.variations import with_guessed_draft

            guessed = with_guessed_draft(text)
            if guessed == text:
                raise
            return SchemaText("JSON", guessed, str(path))

    return guessing


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
    registry: RegistryOpt = None,
    key_schema: Annotated[
        str | None, typer.Option("--key-schema", help="Candidate key schema: file or "
                                 "subject:NAME[:VERSION].")
    ] = None,
    value_schema: Annotated[
        str | None, typer.Option("--value-schema", help="Candidate value schema.")
    ] = None,
    key_format: KeyFormatOpt = KEY_FORMAT.default_value,
    value_format: ValueFormatOpt = VALUE_FORMAT.default_value,
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
                     "/--value-schema). -o options go on top. Its connection options count "
                     "only with --flink-ddl-connections."),
    ] = None,
    ddl_connections: DdlConnectionsOpt = False,
    rules_of: RulesOfOpt = None,
) -> None:
    """Check candidate key and value schemas of one topic, or of every topic in a config file.

    Contacts: the schema registry (--registry; ./schemas by default), read-only; a broker only
    with --bootstrap, to read the topic's settings and sample its keys. Writes nothing. A Flink
    DDL's connection options are used only with --flink-ddl-connections."""
    # lazy: CLI start-up (the TOML config and the settings merge load the registry backends)
    from keyguard.guard.entry import GuardConfig
    from keyguard.guard.request import CheckRequest, plan_check

    if config:
        from keyguard.guard.config import load_config  # lazy: CLI start-up (the TOML reader)

        cfg = load_config(config, ddl_connections=ddl_connections)
    else:
        cfg = GuardConfig()
    request = CheckRequest(
        topic=topic, key_schema=key_schema, value_schema=value_schema, key_format=key_format,
        value_format=value_format, options=parse_kv(option), partitions=partitions,
        partitioner=partitioner, registry=registry, bootstrap=bootstrap,
        scan_limit=scan_limit, require_subject=require_subject, ignore=ignore, select=select,
        config_path=str(config) if config else None, ddl_connections=ddl_connections,
        rules_of=rules_of)
    table = _flink_table(flink_ddl)
    note_ddls([table, *(e.flink_table for e in cfg.topics)], ddl_connections)
    run = plan_check(request, cfg, table, default_registry=default_registry())
    if against is not None:
        report, files = _gate(against, run)
        _emit(report, fmt, output, files, run.selection)
        return
    if not run.entries:
        raise fail("nothing to check: give --topic, or --config with [[topics]]")
    report, files = _check(request.replace(kafka=parse_kv(kafka_config, what="--kafka-config")),
                           cfg, run, schema_type=schema_type, reference=reference)
    _emit(report, fmt, output, files, run.selection)


def _gate(against: str, run: "CheckRun") -> tuple[Report, dict[str, str]]:
    """`--against git:REF`: the file registry against itself as committed at REF."""
    if not against.startswith("git:"):
        raise fail(f"--against must be git:REF, got {against!r}")
    # lazy: CLI start-up (only --against loads the git gate)
    from keyguard.guard.gate import candidate_files, gate, registry_at_ref

    directory = run.registry.url.removeprefix("file://")
    if "://" in directory:
        raise fail("--against git:REF compares a file registry (file://DIR) with git")
    old = registry_at_ref(directory, against[4:])
    new = run.registry.open()
    report = gate(old, new, run.entries, rules_of=run.rules_of)
    return report, candidate_files(directory, new, report)


def _check(request: "CheckRequest", cfg: "GuardConfig", run: "CheckRun", *,
           schema_type: str | None, reference: list[str] | None
           ) -> tuple[Report, dict[str, str]]:
    """Read the candidates, gather the facts, judge: the report and the files it names."""
    # lazy: CLI start-up (the analysis, loaded when there is something to check)
    from keyguard.guard.check import check_many
    from keyguard.guard.request import kafka_settings, scan_limit, topic_plans

    servers, props = kafka_settings(request, cfg, run.entries)
    reg = run.registry.open()
    refs: tuple[Any, ...] = ()
    if reference:
        # lazy: CLI start-up (schema references, only with --reference)
        from keyguard.formats.registry.references import parse_reference_option

        refs = tuple(map(parse_reference_option, reference))
    read = reading_as(run.rules_of, read_schema_source)
    specs, files = topic_plans(request, cfg, run.entries, lambda source: read(
        source, registry=reg, schema_type=schema_type, references=refs))
    inspector = None
    if servers:
        # lazy: confluent_kafka, only with a bootstrap server
        from keyguard.guard.topic import KafkaTopicInspector

        inspector = KafkaTopicInspector(servers, props)
    report = check_many(specs, registry=reg, inspector=inspector,
                        scan_limit=scan_limit(request, cfg))
    return report, files


def _flink_table(path: Path | str | None) -> Any:
    """A Flink DDL file (its notes: `note_ddls`)."""
    if path is None:
        return None
    from keyguard.formats.flink_ddl import load_flink_ddl  # lazy: CLI start-up (only with a DDL)

    return load_flink_ddl(path)

