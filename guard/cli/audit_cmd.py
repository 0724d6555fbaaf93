"""`keyguard audit`: a compacted topic's health from its bytes, on the command line."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from keyguard.guard.cli.bytes_cmd import (
    ColumnsOpt,
    FlinkDdlOpt,
    KeySchemaOpt,
    OptionOpt,
    PkOpt,
    ValueSchemaOpt,
    _build_plan,
    _flink_table,
)
from keyguard.guard.cli.check_cmd import IgnoreOpt, OutputOpt, SelectOpt, _emit
from keyguard.guard.cli.common import (
    REPORT_FORMATS,
    DdlConnectionsOpt,
    FormatOpt,
    ReferenceOpt,
    RegistryOpt,
    SchemaTypeOpt,
    at_least,
    fail,
    format_help,
    handles_errors,
    parse_kv,
)
from keyguard.guard.cli.progress import Progress
from keyguard.guard.options import KEY_FORMAT, VALUE_FORMAT

if TYPE_CHECKING:
    from keyguard.formats.plan import UpsertPlan
    from keyguard.guard.selection import RuleSelection

#: The report formats of `keyguard audit`: every format a Report renders in.
AUDIT_FORMATS = REPORT_FORMATS


@handles_errors(formats=AUDIT_FORMATS)
def audit_cmd(
    topic: Annotated[str | None, typer.Option(
        "--topic", help="The topic to audit (or the one --flink-ddl names).")] = None,
    bootstrap: Annotated[str | None, typer.Option(
        "--bootstrap", help="Kafka bootstrap servers (host:port,...).")] = None,
    registry: RegistryOpt = None,
    columns: ColumnsOpt = None,
    primary_key: PkOpt = None,
    key_schema: KeySchemaOpt = None,
    value_schema: ValueSchemaOpt = None,
    key_format: Annotated[str | None, typer.Option(
        "--key-format", help=format_help("key"))] = None,
    value_format: Annotated[str | None, typer.Option(
        "--value-format", help=format_help("value"))] = None,
    option: OptionOpt = None,
    schema_type: SchemaTypeOpt = None,
    reference: ReferenceOpt = None,
    flink_ddl: FlinkDdlOpt = None,
    ddl_connections: DdlConnectionsOpt = False,
    kafka_config: Annotated[
        list[str] | None,
        typer.Option("--kafka-config", help="librdkafka property KEY=VALUE (security.protocol,"
                     " sasl.mechanism...). Passwords: KEYGUARD_KAFKA_SASL_PASSWORD."),
    ] = None,
    sample: Annotated[int | None, typer.Option(
        "--sample", help="Read at most N records (the first of each partition, a fair share "
        "each) for a bounded look; default: the whole topic.",
        callback=at_least(1, "--sample"))] = None,
    fmt: FormatOpt = "text",
    output: OutputOpt = None,
    ignore: IgnoreOpt = None,
    select: SelectOpt = None,
) -> None:
    """Audit a compacted topic's bytes: phantom keys, misplaced keys, ids, compaction.

    Records, tombstones, live keys, schema ids and where records carry them (in the bytes, in
    a record header), phantom keys (one logical key live under several byte encodings),
    misplaced keys (not where murmur2 puts them), undecodable records, null keys and
    compaction settings against the consumer groups' lag.

    Exit 1 when phantom keys, missed deletes or misplaced keys exist, or when live keys or
    values carry their schema id in two framings (producers that disagree), 0 when the topic
    is clean.

    Contacts: the broker (--bootstrap), read-only: the topic's records, offsets and settings
    and its consumer groups' lag; the schema registry for a registry format, read-only. A Flink
    DDL's connection options are used only with --flink-ddl-connections."""
    # lazy: CLI start-up (registry and Kafka settings)
    from keyguard.formats.registry.settings import reject_unused_kafka, resolve_kafka
    from keyguard.guard.selection import RuleSelection

    if topic is None and flink_ddl is None:
        raise fail("--topic is required: the topic to audit (or --flink-ddl, whose table "
                   "names it)")
    # lazy: CLI start-up (the DDLs' Kafka properties, used with --flink-ddl-connections)
    from keyguard.guard.request import ddl_kafka

    explicit = parse_kv(kafka_config, what="--kafka-config")
    ddl = ddl_kafka([_flink_table(flink_ddl)] if flink_ddl else [], ddl_connections)
    if bootstrap:  # --bootstrap names the servers: the DDL's yield
        ddl.pop("bootstrap.servers", None)
    props = resolve_kafka(explicit=explicit, configured=ddl)
    reject_unused_kafka(explicit, props)
    in_props = props.pop("bootstrap.servers", None)
    if in_props and bootstrap and str(in_props) != bootstrap:
        raise fail("bootstrap.servers in the Kafka properties and --bootstrap disagree: "
                   "give the servers once")
    servers = bootstrap or (str(in_props) if in_props else None)
    if not servers:
        raise fail("--bootstrap is required: the audit reads the topic from the brokers")
    selection = RuleSelection.of(ignore=ignore, select=select)
    # The table options (topic, primary-key, formats and their options) resolved into the
    # plan as `encode` does; a Flink DDL gives the same table and options mapping, and
    # `keyguard.formats.registry.registration.open_plan(table, options)` the same plan.
    plan = _build_plan(columns=columns, primary_key=primary_key, key_schema=key_schema,
                       value_schema=value_schema, topic=topic,
                       key_format=_or_default(key_format, KEY_FORMAT, flink_ddl),
                       value_format=_or_default(value_format, VALUE_FORMAT, flink_ddl),
                       option=option, registry=registry,
                       schema_type=schema_type, reference=reference, flink_ddl=flink_ddl,
                       ddl_connections=ddl_connections)
    run_audit(plan, servers, props, sample=sample, fmt=fmt, output=output,
              selection=selection)


def _or_default(given: str | None, declared: Any, flink_ddl: str | None) -> str | None:
    """A format flag as given (an empty one is reported as an unknown format), else the
    declared default, or None when a DDL names the formats."""
    if given is not None:
        return given
    return None if flink_ddl else str(declared.default_value)


def run_audit(plan: UpsertPlan, bootstrap: str, properties: Mapping[str, Any], *,
              sample: int | None, fmt: str, output: Path | None,
              selection: RuleSelection | None = None) -> None:
    """Audit the topic `plan` names, render the report and exit (1 phantom keys, missed
    deletes, misplaced keys or mixed framings, else 0): what `keyguard audit` runs once it
    has a plan, however the plan was declared."""
    from keyguard.guard.audit.scan import audit_topic  # lazy: CLI start-up (confluent_kafka)

    result = audit_topic(plan.topic, plan, bootstrap=bootstrap, properties=properties,
                         sample=sample, progress=progress_line())
    _emit(result.report, fmt, output, {}, selection)


def progress_line() -> Callable[[int, int, float], None]:
    """The audit's progress on stderr (`keyguard.guard.cli.progress`)."""
    show = Progress("audit")
    return lambda read, total, elapsed: show(read, total, elapsed, "records read")


__all__ = ["AUDIT_FORMATS", "audit_cmd", "run_audit"]
