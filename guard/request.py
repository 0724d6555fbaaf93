"""What a `keyguard check` or `keyguard diff` run is asked: the command line's flags, merged
with the config file and the Flink DDLs into the topics to check (or the two key sides to
compare), before any schema is read or any registry opened.

The command line parses its flags into a `CheckRequest` (or a `DiffRequest`) and hands it here
with the config file and the DDL it loaded; what comes back is plain data for the library.
Explicit wins: a flag over the config file, the config file over the environment, over the
defaults. A setting given twice in ways that disagree exits 2, naming both.

An edge module: the registry and Kafka settings are resolved here, through the one settings
path (`keyguard.formats.registry.settings`), which reads the environment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from keyguard.formats.errors import InvalidOptionError, UsageError
from keyguard.formats.immutable import Value
from keyguard.guard.entry import GuardConfig, TopicEntry
from keyguard.guard.options import (
    KEY_FIELDS_PREFIX,
    KEY_FORMAT,
    PARTITIONER,
    RULES_OF,
    SCAN_LIMIT,
    VALUE_FORMAT,
)

if TYPE_CHECKING:
    from keyguard.formats.flink_ddl import FlinkTable
    from keyguard.formats.registry.settings import RegistrySettings
    from keyguard.formats.schemafile import SchemaText
    from keyguard.guard.diff import KeyWriting
    from keyguard.guard.plan import TopicPlan
    from keyguard.guard.report import Report
    from keyguard.guard.selection import RuleSelection
    from keyguard.guard.suppress import Suppression

#: The flags that say how a topic is written, with their defaults: a Flink DDL says it too.
_WRITING_FLAGS = (("--key-format", "key_format", KEY_FORMAT.default_value),
                  ("--value-format", "value_format", VALUE_FORMAT.default_value),
                  ("--partitioner", "partitioner", PARTITIONER.default_value))


class CheckRequest(Value):
    """`keyguard check`'s command line, parsed: None (or the option's default) where a flag
    was not given, so that the config file's setting stands."""

    __slots__ = ("bootstrap", "config_path", "ddl_connections", "ignore", "kafka", "key_format",
                 "key_schema", "options", "partitioner", "partitions", "registry",
                 "require_subject", "rules_of", "scan_limit", "select", "topic", "value_format",
                 "value_schema")
    FIELDS = ("topic", "key_schema", "value_schema", "key_format", "value_format", "options",
              "partitions", "partitioner", "registry", "bootstrap", "kafka", "scan_limit",
              "require_subject", "ignore", "select", "config_path", "ddl_connections", "rules_of")
    topic: Final[str | None]
    key_schema: Final[str | None]
    value_schema: Final[str | None]
    key_format: Final[str]
    value_format: Final[str]
    #: Table options (`-o`), Flink names. (A default `{}` is one empty mapping all instances
    #: share: a Mapping, never written.)
    options: Final[Mapping[str, Any]]
    partitions: Final[int | None]
    partitioner: Final[str]
    registry: Final[str | None]
    bootstrap: Final[str | None]
    #: librdkafka properties (`--kafka-config`).
    kafka: Final[Mapping[str, Any]]
    scan_limit: Final[int]
    require_subject: Final[bool]
    ignore: Final[Sequence[str] | None]
    select: Final[Sequence[str] | None]
    #: The config file's path, named in messages about its settings.
    config_path: Final[str | None]
    #: --flink-ddl-connections: a DDL's registry and Kafka connection options count
    #: (`ddl_notes`); else the command's flags, the config file and the defaults decide.
    ddl_connections: Final[bool]
    #: --rules-of: whose compatibility rules judge values (None: the config file's choice).
    rules_of: Final[str | None]

    def __init__(self, topic: str | None = None, key_schema: str | None = None,
                 value_schema: str | None = None, key_format: str = KEY_FORMAT.default_value,
                 value_format: str = VALUE_FORMAT.default_value,
                 options: Mapping[str, Any] = {}, partitions: int | None = None,
                 partitioner: str = PARTITIONER.default_value, registry: str | None = None,
                 bootstrap: str | None = None, kafka: Mapping[str, Any] = {},
                 scan_limit: int = SCAN_LIMIT.default_value, require_subject: bool = False,
                 ignore: Sequence[str] | None = None, select: Sequence[str] | None = None,
                 config_path: str | None = None, ddl_connections: bool = False,
                 rules_of: str | None = None) -> None:
        self.topic = topic
        self.key_schema = key_schema
        self.value_schema = value_schema
        self.key_format = key_format
        self.value_format = value_format
        self.options = options
        self.partitions = partitions
        self.partitioner = partitioner
        self.registry = registry
        self.bootstrap = bootstrap
        self.kafka = kafka
        self.scan_limit = scan_limit
        self.require_subject = require_subject
        self.ignore = ignore
        self.select = select
        self.config_path = config_path
        self.ddl_connections = ddl_connections
        self.rules_of = rules_of


class CheckRun(Value):
    """What a check run covers: its topics, the rules ignored, its one registry, and whose
    compatibility rules judge its value schemas."""

    __slots__ = ("entries", "registry", "rules_of", "selection")
    FIELDS = ("entries", "selection", "registry", "rules_of")
    entries: Final[tuple[TopicEntry, ...]]
    selection: Final[RuleSelection | None]
    registry: Final[RegistrySettings]
    rules_of: Final[str]

    def __init__(self, entries: tuple[TopicEntry, ...], selection: RuleSelection | None,
                 registry: RegistrySettings, rules_of: str = RULES_OF.default_value) -> None:
        self.entries = entries
        self.selection = selection
        self.registry = registry
        self.rules_of = rules_of


def plan_check(request: CheckRequest, cfg: GuardConfig, table: FlinkTable | None = None, *,
               default_registry: str | None = None) -> CheckRun:
    """The topics, rule selection and registry of a run: the config file's, the command line's
    on top, a Flink DDL's table (`--flink-ddl`) for its topic. `default_registry`: the registry
    when nothing names one (`file://schemas` when that directory exists)."""
    entries = topic_entries(request, cfg, table)
    for e in entries:
        check_table_options(e)
    return CheckRun(entries=entries,
                    selection=rule_selection(request, cfg, entries),
                    registry=registry_settings(request, cfg, entries, default_registry),
                    rules_of=rules_of(request, cfg))


def rules_of(request: CheckRequest, cfg: GuardConfig) -> str:
    """--rules-of, else the config file's `rules-of`, else Confluent's."""
    where = "--rules-of" if request.rules_of else request.config_path or "config file"
    return RULES_OF.parse(request.rules_of or cfg.rules_of, where=where)


def topic_entries(request: CheckRequest, cfg: GuardConfig,
                  table: FlinkTable | None = None) -> tuple[TopicEntry, ...]:
    """The topics to check: a DDL's or `--topic`'s (over the config file's entry of that name,
    explicit settings winning), else every topic of the config file."""
    if table is not None:
        return (_ddl_entry(request, cfg, table),)
    if request.topic:
        options = dict(request.options)
        from keyguard.formats.table_options import (  # lazy: CLI start-up (the table options)
            KEY_FIELDS_PREFIX as TABLE_KEY_FIELDS_PREFIX,
        )

        cli = TopicEntry(
            name=request.topic, key_format=request.key_format,
            value_format=request.value_format or None, key_schema=request.key_schema,
            value_schema=request.value_schema, partitions=request.partitions,
            partitioner=request.partitioner, key_fields_prefix=options.pop(
                TABLE_KEY_FIELDS_PREFIX.key, KEY_FIELDS_PREFIX.default_value),
            options=options)
        found = _named(cfg.topics, request.topic)
        return (overlay(found, cli) if found else cli,)
    if request.key_schema or request.value_schema:
        raise UsageError("--key-schema/--value-schema need --topic")
    if request.options or request.partitions is not None:
        raise UsageError("-o/--option and --partitions apply to --topic; for the topics of a "
                         "config file, set them in its [[topics]] entries")
    return tuple(cfg.topics)


def _ddl_entry(request: CheckRequest, cfg: GuardConfig, table: FlinkTable) -> TopicEntry:
    """`check --flink-ddl`: the DDL's topic, keeping the config file's `ignore` and
    `require-subject` for it. What the DDL says cannot be given again by a flag."""
    # lazy: CLI start-up (the config module, only with a DDL)
    from keyguard.guard.config import entry_of_flink_table

    clash = [flag for flag, name, default in _WRITING_FLAGS
             if getattr(request, name) != default]
    if clash:
        raise InvalidOptionError(f"--flink-ddl says how the topic is written: drop "
                                 f"{', '.join(clash)}, or change the DDL")
    if request.topic and request.topic != table.topic:
        raise InvalidOptionError(f"--topic {request.topic} is not the DDL's topic "
                                 f"{table.topic!r}: drop --topic")
    entry = entry_of_flink_table(table, options=request.options,
                                 registry_given=bool(request.registry or cfg.registry),
                                 use_connections=request.ddl_connections,
                                 key_schema=request.key_schema,
                                 value_schema=request.value_schema,
                                 partitions=request.partitions)
    found = _named(cfg.topics, table.topic)
    if found is None:
        return entry
    return entry.replace(ignore=found.ignore, suppressions=found.suppressions,
                          require_subject=found.require_subject)


def _named(entries: Sequence[TopicEntry], name: str) -> TopicEntry | None:
    return next((e for e in entries if e.name == name), None)


def overlay(entry: TopicEntry, cli: TopicEntry) -> TopicEntry:
    """A config file's topic with what the command line gave explicitly on top (explicit wins)."""
    changes: dict[str, Any] = {"options": {**entry.options, **cli.options}}
    for name in ("key_schema", "value_schema", "partitions", "key_fields_prefix"):
        if getattr(cli, name):
            changes[name] = getattr(cli, name)
    for _, name, default in _WRITING_FLAGS:
        if getattr(cli, name) != default:
            changes[name] = getattr(cli, name)
    return entry.replace(**changes)


def check_table_options(e: TopicEntry) -> None:
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


def rule_selection(request: CheckRequest, cfg: GuardConfig,
                   entries: Sequence[TopicEntry]) -> RuleSelection | None:
    """--ignore/--select, then the config file's global and per-topic `ignore` (validated when
    the file was read), for the topics this run checks, and the rules accepted with a reason
    (`accepted`); None when nothing is ignored."""
    accepts = accepted(cfg, entries)
    if not (request.ignore or request.select or cfg.ignore or any(e.ignore for e in entries)
            or accepts):
        return None
    from keyguard.guard.selection import RuleSelection  # lazy: CLI start-up (~4 ms, when checking)

    selection = RuleSelection.of(ignore=request.ignore, select=request.select)
    where = request.config_path or "config file"
    selection = selection.plus(RuleSelection.of(ignore=cfg.ignore, source=where))
    for e in entries:
        selection = selection.plus(RuleSelection.of(ignore=e.ignore, source=where, topic=e.name))
    return selection.accepting(accepts)


def accepted(cfg: GuardConfig, entries: Sequence[TopicEntry]) -> tuple[Suppression, ...]:
    """The rules accepted with a reason: the config file's `ignore` tables (global, then each
    topic's), and the `keyguard: ignore` comments of the topics' Flink DDLs."""
    ddls = [e for e in entries if e.flink_table is not None and "keyguard" in e.flink_table.text]
    if not (cfg.suppressions or ddls or any(e.suppressions for e in entries)):
        return ()
    # lazy: CLI start-up (only when something is accepted)
    from keyguard.guard.suppress import in_flink_ddl

    out = list(cfg.suppressions)
    for e in entries:
        out += [replace(s, topic=e.name) for s in e.suppressions]
        if e.flink_table is not None:
            out += in_flink_ddl(e.flink_table, topic=e.name)
    return tuple(out)


def registry_settings(request: CheckRequest, cfg: GuardConfig, entries: Sequence[TopicEntry],
                      default_url: str | None = None) -> RegistrySettings:
    """The one registry of this run, through the one settings path (explicit > config file >
    environment > default): --registry, the avro-confluent url and connection options of the
    topics (-o key.avro-confluent.timeout=5s), the config file's registry / [registry]."""
    # lazy: CLI start-up (registry settings load the registry backends)
    from keyguard.formats.codec import format_factory
    from keyguard.formats.registry.settings import registry_options_of, resolve_registry

    registry = request.registry
    url, reg_options, sources = registry_options_of(
        (f"topic {e.name}: {role}.{fmt}.", e.format_options(role, fmt))
        for e in entries for role, fmt in (("key", e.key_format), ("value", e.value_format))
        if fmt and format_factory(fmt).uses_registry)
    if url and registry and url != registry.strip():
        raise InvalidOptionError(
            "--registry and the avro-confluent url option name two registries",
            hint="give the registry once (--registry)")
    if not (registry or url or cfg.registry or default_url):
        raise UsageError("no --registry given and no ./schemas directory: say where the "
                         "schemas are")
    return resolve_registry(explicit_url=registry or url, explicit_options=reg_options,
                            explicit_sources=sources, configured_url=cfg.registry,
                            configured_options=cfg.registry_options, default_url=default_url,
                            configured_where=f"{request.config_path} [registry]")


def kafka_settings(request: CheckRequest, cfg: GuardConfig,
                   entries: Sequence[TopicEntry] = ()) -> tuple[str | None, dict[str, Any]]:
    """The bootstrap servers (None: no topic is scanned) and the other librdkafka properties:
    --kafka-config > the config file's [kafka] > with --flink-ddl-connections a DDL's
    properties.* (`ddl_kafka`) > KEYGUARD_KAFKA_*."""
    # lazy: CLI start-up (registry settings load the registry backends)
    from keyguard.formats.registry.settings import reject_unused_kafka, resolve_kafka

    servers = request.bootstrap or cfg.bootstrap
    ddl = ddl_kafka([e.flink_table for e in entries], request.ddl_connections)
    if servers:  # --bootstrap (or the config file's) names the servers: the DDL's yield
        ddl.pop("bootstrap.servers", None)
    props = resolve_kafka(explicit=request.kafka, configured={**ddl, **cfg.kafka})
    reject_unused_kafka({**cfg.kafka, **request.kafka}, props)
    in_props = props.pop("bootstrap.servers", None)
    if in_props and servers and str(in_props) != servers:
        raise UsageError("bootstrap.servers in the Kafka properties and --bootstrap disagree: "
                         "give the servers once")
    servers = servers or (str(in_props) if in_props else None)
    if (request.kafka or cfg.kafka) and not servers:
        raise UsageError("--kafka-config (or the config file's [kafka]) is used only to scan a "
                         "topic: give --bootstrap (or bootstrap = \"...\" in the config file)")
    return servers, props


def ddl_notes(tables: Sequence[FlinkTable | None], use_connections: bool, *,
              connects: bool = True) -> tuple[str, ...]:
    """What a run's Flink DDLs say that it does not use, each line once (a DDL given for both
    sides of a diff or a migration is one DDL): the parts that write no bytes (metadata and
    computed columns, watermarks) and, unless `use_connections`, the connection options.

    The one rule of every command that takes a DDL: a DDL's connection options (a registry
    format's url and credentials, the Kafka client's properties.*) say where Flink's job
    connects; a command uses them only with --flink-ddl-connections (`use_connections`), and
    otherwise its own flags, the config file and the defaults decide. `connects`: False for a
    command that connects to nothing (diff)."""
    notes: list[str] = []
    for table in tables:
        if table is None:
            continue
        notes += [str(part) for part in table.ignored]
        names = table.connection_options()
        if names and not use_connections:
            why = ("diff reads no registry and no broker" if not connects else
                   "the command's own flags and defaults say where to connect "
                   "(--flink-ddl-connections uses them)")
            notes.append(f"{table.origin}: connection option{'s' if len(names) > 1 else ''} "
                         f"{', '.join(names)} ignored: {why}")
    return tuple(dict.fromkeys(notes))


def ddl_kafka(tables: Sequence[FlinkTable | None], use_connections: bool) -> dict[str, Any]:
    """The Kafka client properties of the DDLs (`properties.*`, prefix dropped) when the run
    uses their connection options, else none."""
    if not use_connections:
        return {}
    return {k.removeprefix("properties."): v
            for t in tables if t is not None for k, v in t.properties.items()}


def scan_limit(request: CheckRequest, cfg: GuardConfig) -> int:
    """--scan-limit; its default defers to the config file's scan-limit."""
    return cfg.scan_limit if request.scan_limit == SCAN_LIMIT.default_value \
        else request.scan_limit


def topic_plans(request: CheckRequest, cfg: GuardConfig, entries: Sequence[TopicEntry],
                read: Callable[[str], SchemaText]
                ) -> tuple[list[TopicPlan], dict[str, str]]:
    """The guard's plan of each topic, its candidates read by `read` (a schema file or
    `subject:NAME[:VERSION]`), and the file each candidate subject came from (for reports)."""
    from keyguard.guard.plan import TopicPlan  # lazy: CLI start-up (the analysis)

    plans = []
    files: dict[str, str] = {}
    for e in entries:
        ks = read(e.key_schema) if e.key_schema else None
        vs = read(e.value_schema) if e.value_schema and e.value_format else None
        if e.flink_table is not None:  # the DDL's columns write the other candidates
            ddl_key, ddl_value = e.flink_table.written_schemas()
            ks = ks or ddl_key
            vs = vs or (ddl_value if e.value_format else None)
        plan = TopicPlan.of_entry(e, candidate_key=ks, candidate_value=vs,
                                  require_subject=_require_subject(request, cfg, e)
                                  ).replace(rules_of=rules_of(request, cfg))
        plans.append(plan)
        origin = e.flink_table.origin if e.flink_table is not None else None
        for role, src, text in (("key", e.key_schema, ks), ("value", e.value_schema, vs)):
            src = src or origin
            if src and text and not src.startswith("subject:"):
                files[plan.subject(role, text)] = src
    return plans, files


def _require_subject(request: CheckRequest, cfg: GuardConfig, e: TopicEntry) -> bool:
    """--require-subject, else the topic's own choice, else the config file's."""
    if request.require_subject:
        return True
    return e.require_subject if e.require_subject is not None else cfg.require_subject


class DiffRequest(Value):
    """`keyguard diff --key`'s command line, parsed: how each side writes its keys, None where
    a flag was not given (the new side then writes as the old one, the old one as the
    candidate's DDL)."""

    __slots__ = ("all_old_ids", "fields_prefix", "key_format", "new_fields_prefix",
                 "new_key_format", "new_options", "new_partitioner", "new_partitions", "options",
                 "partitioner", "partitions")
    FIELDS = ("key_format", "new_key_format", "options", "new_options", "fields_prefix",
              "new_fields_prefix", "partitioner", "new_partitioner", "partitions", "new_partitions",
              "all_old_ids")
    key_format: Final[str | None]
    new_key_format: Final[str | None]
    #: Key format options (no prefix) of the old side, and of the new while the format stays.
    options: Final[Mapping[str, Any]]
    new_options: Final[Mapping[str, Any]]
    fields_prefix: Final[str | None]
    new_fields_prefix: Final[str | None]
    partitioner: Final[str | None]
    new_partitioner: Final[str | None]
    partitions: Final[int | None]
    new_partitions: Final[int | None]
    #: The old keys were written by the last old schema, or by all of them (KG502).
    all_old_ids: Final[bool]

    def __init__(self, key_format: str | None = None, new_key_format: str | None = None,
                 options: Mapping[str, Any] = {}, new_options: Mapping[str, Any] = {},
                 fields_prefix: str | None = None, new_fields_prefix: str | None = None,
                 partitioner: str | None = None, new_partitioner: str | None = None,
                 partitions: int | None = None, new_partitions: int | None = None,
                 all_old_ids: bool = False) -> None:
        self.key_format = key_format
        self.new_key_format = new_key_format
        self.options = options
        self.new_options = new_options
        self.fields_prefix = fields_prefix
        self.new_fields_prefix = new_fields_prefix
        self.partitioner = partitioner
        self.new_partitioner = new_partitioner
        self.partitions = partitions
        self.new_partitions = new_partitions
        self.all_old_ids = all_old_ids


def diff_keys(request: DiffRequest, texts: Sequence[SchemaText],
              old_table: FlinkTable | None = None, new_table: FlinkTable | None = None
              ) -> Report:
    """`diff --key`: the schema files `texts` (oldest first, the candidate last unless a DDL
    gives it), a DDL for either side, judged for key stability."""
    from keyguard.guard.diff import diff_sides  # lazy: CLI start-up (the key analysis)

    old, new = key_sides(request, old_table, new_table)
    old_texts = [old_table.written_schemas()[0]] if old_table else \
        (texts if new_table else texts[:-1])
    new_text = new_table.written_schemas()[0] if new_table else texts[-1]
    return diff_sides(old_texts, new_text, old, new, all_old_ids=request.all_old_ids,
                      tables=(old_table, new_table))


def key_sides(request: DiffRequest, old_table: FlinkTable | None = None,
              new_table: FlinkTable | None = None) -> tuple[KeyWriting, KeyWriting]:
    """The two `KeyWriting`s: a DDL gives its side whole; flags give the others, the new side
    defaulting to the old one's (and the old one to the candidate DDL's)."""
    from keyguard.guard.diff import KeyWriting  # lazy: CLI start-up (the key analysis)

    r = request
    _no_flags_beside(old_table, "--old-flink-ddl", (
        ("--key-format", r.key_format), ("--option", r.options),
        ("--fields-prefix", r.fields_prefix), ("--partitioner", r.partitioner)))
    _no_flags_beside(new_table, "--flink-ddl", (
        ("--new-key-format", r.new_key_format), ("--new-option", r.new_options),
        ("--new-fields-prefix", r.new_fields_prefix), ("--new-partitioner", r.new_partitioner)))
    base = KeyWriting.of_flink(new_table) if new_table is not None else KeyWriting()
    if old_table is not None:
        old = KeyWriting.of_flink(old_table, r.partitions)
    else:
        old = _written_as(base, r.key_format, r.options, r.fields_prefix, r.partitioner,
                          r.partitions)
    if new_table is not None:
        return old, KeyWriting.of_flink(new_table, r.new_partitions or r.partitions)
    return old, _written_as(old, r.new_key_format, r.new_options, r.new_fields_prefix,
                            r.new_partitioner, r.new_partitions or r.partitions)


def _no_flags_beside(table: FlinkTable | None, flag: str,
                     given: Sequence[tuple[str, Any]]) -> None:
    clash = [name for name, value in given if value]
    if table is not None and clash:
        raise InvalidOptionError(f"{flag} gives that side's key format, options, "
                                 f"key.fields-prefix and partitioner: drop {', '.join(clash)}")


def _written_as(base: KeyWriting, key_format: str | None, options: Mapping[str, Any],
                fields_prefix: str | None, partitioner: str | None,
                partitions: int | None) -> KeyWriting:
    """`base` with the flags given on top; its options kept only while the format stays."""
    fmt = key_format or base.format
    return type(base)(
        fmt, {**(base.options if fmt == base.format else {}), **options},
        base.fields_prefix if fields_prefix is None else fields_prefix,
        partitioner or base.partitioner, partitions)
