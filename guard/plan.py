"""`TopicPlan`: the guard's one plan of a topic, however the topic was described.

Three sources describe a topic to the guard: a `[[topics]]` entry of the TOML config (and the
command line, which overlays one), and the Spark writer's resolved `UpsertPlan`. Each has one
constructor here (`TopicPlan.of_entry`, `TopicPlan.of_upsert`), so the guard judges one shape.
`key_side` turns the plan and one key schema (a registered version, or the candidate) into the
`KeySide` the key analysis compares: the one place that says how a key is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from keyguard.formats.avro_schema import record_full_name
from keyguard.formats.codec import format_factory
from keyguard.formats.errors import SchemaError
from keyguard.formats.immutable import Value
from keyguard.formats.registry.options import is_registry_option
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.secrets import redact_url
from keyguard.formats.subjects import (
    TOPIC_NAME,
    parse_context,
    parse_strategy,
    qualified,
    subject_name,
)
from keyguard.guard.keys.side import KeySide
from keyguard.guard.options import KEY_FORMAT, RULES_OF, VALUE_FORMAT

if TYPE_CHECKING:
    from keyguard.formats.framing import Frame
    from keyguard.formats.plan import UpsertPlan
    from keyguard.guard.config import TopicEntry


class TopicPlan(Value):
    """One topic to judge: its key and value formats, and the candidate schemas.

    Options are the formats' own (Flink names without `key.<format>.`). A candidate left None
    means "unchanged": placement and topic facts are still checked.
    """

    __slots__ = ("bootstrap", "candidate_key", "candidate_value", "flink_ddl", "key_fields_prefix",
                 "key_format", "key_options", "old_key_format", "old_key_options",
                 "old_partitioner", "partitioner", "partitions", "require_subject", "rules_of",
                 "topic", "value_format", "value_options")
    FIELDS = ("topic", "key_format", "value_format", "key_options", "value_options",
              "candidate_key", "candidate_value", "key_fields_prefix", "partitions", "partitioner",
              "old_key_format", "old_key_options", "old_partitioner", "require_subject",
              "flink_ddl", "bootstrap", "rules_of")
    topic: Final[str]
    key_format: Final[str]
    value_format: Final[str | None]
    #: (A default `{}` is one empty mapping all instances share: a Mapping, never written.)
    key_options: Final[Mapping[str, Any]]
    value_options: Final[Mapping[str, Any]]
    candidate_key: Final[SchemaText | None]
    candidate_value: Final[SchemaText | None]
    key_fields_prefix: Final[str]
    #: Partition count the producer will write to; None: the topic's own.
    partitions: Final[int | None]
    partitioner: Final[str]
    #: How the existing keys were written, when that differs from the candidate's format.
    old_key_format: Final[str | None]
    old_key_options: Final[Mapping[str, Any] | None]
    old_partitioner: Final[str]
    #: A subject with no versions is breaking (KG015) instead of a first registration (KG011).
    require_subject: Final[bool]
    #: The Flink DDL file that declares the topic, and the brokers it names (for the
    #: `keyguard migrate` command a breaking key change suggests).
    flink_ddl: Final[str | None]
    bootstrap: Final[str | None]
    #: Whose compatibility rules judge the value schema where the registries differ.
    rules_of: Final[str]

    def __init__(self, topic: str, key_format: str = KEY_FORMAT.default_value,
                 value_format: str | None = VALUE_FORMAT.default_value,
                 key_options: Mapping[str, Any] = {}, value_options: Mapping[str, Any] = {},
                 candidate_key: SchemaText | None = None,
                 candidate_value: SchemaText | None = None, key_fields_prefix: str = "",
                 partitions: int | None = None, partitioner: str = "murmur2",
                 old_key_format: str | None = None,
                 old_key_options: Mapping[str, Any] | None = None,
                 old_partitioner: str = "murmur2", require_subject: bool = False,
                 flink_ddl: str | None = None, bootstrap: str | None = None,
                 rules_of: str = RULES_OF.default_value) -> None:
        self.topic = topic
        self.key_format = key_format
        self.value_format = value_format
        self.key_options = key_options
        self.value_options = value_options
        self.candidate_key = candidate_key
        self.candidate_value = candidate_value
        self.key_fields_prefix = key_fields_prefix
        self.partitions = partitions
        self.partitioner = partitioner
        self.old_key_format = old_key_format
        self.old_key_options = old_key_options
        self.old_partitioner = old_partitioner
        self.require_subject = require_subject
        self.flink_ddl = flink_ddl
        self.bootstrap = bootstrap
        self.rules_of = rules_of

    # -- the sources -----------------------------------------------------------------------

    @classmethod
    def of_entry(
        cls,
        entry: TopicEntry,
        *,
        candidate_key: SchemaText | None = None,
        candidate_value: SchemaText | None = None,
        require_subject: bool = False,
    ) -> TopicPlan:
        """The plan of a config file's `[[topics]]` entry (or the command line's topic)."""
        table = entry.flink_table
        return cls(
            topic=entry.name,
            key_format=entry.key_format,
            value_format=entry.value_format,
            key_options=entry.format_options("key", entry.key_format),
            value_options=entry.format_options("value", entry.value_format),
            candidate_key=candidate_key,
            candidate_value=candidate_value,
            key_fields_prefix=entry.key_fields_prefix,
            partitions=entry.partitions,
            partitioner=entry.partitioner,
            require_subject=require_subject,
            flink_ddl=table.origin if table is not None else None,
            bootstrap=table.properties.get(BOOTSTRAP_SERVERS) if table is not None else None,
        )

    @classmethod
    def of_upsert(cls, plan: UpsertPlan, partitions: int | None = None, *,
                  origin: str = "the Spark DataFrame's") -> TopicPlan:
        """The plan of a resolved upsert write: the candidates are what its codecs write."""
        return cls(
            topic=plan.topic,
            key_format=plan.key_format,
            value_format=plan.value_format,
            key_options=dict(plan.key_options),
            value_options=dict(plan.value_options),
            candidate_key=plan.key_codec.written_schema(f"{origin} key ({plan.key_format})"),
            candidate_value=plan.value_codec.written_schema(
                f"{origin} value ({plan.value_format})"),
            key_fields_prefix=plan.layout.key_fields_prefix,
            partitions=partitions,
        )

    # -- what follows from it --------------------------------------------------------------

    def candidates_naming_keyguard(self) -> tuple[tuple[str, SchemaText], ...]:
        """The candidate schemas ("key" or "value", text) whose text names keyguard: only they
        can carry an inline `keyguard: ignore` (`keyguard.guard.suppress.in_plan`)."""
        return tuple((role, text) for role, text in (("key", self.candidate_key),
                                                      ("value", self.candidate_value))
                     if text is not None and "keyguard" in text.text)

    def subject(self, role: str, schema: SchemaText | None) -> str:
        """The registry subject of the key or value, by the format's subject options."""
        opts = self.key_options if role == "key" else self.value_options
        context = parse_context(str(opts["schema-context"])) if opts.get("schema-context") \
            else None  # json-registry's: the subject in a Schema Registry context
        if opts.get("subject"):
            return qualified(str(opts["subject"]), context)
        strategy = parse_strategy(str(opts.get("subject.name.strategy", TOPIC_NAME)))
        record = _record_name(schema) if strategy != TOPIC_NAME and schema is not None else None
        return qualified(subject_name(strategy, topic=self.topic, role=role, record_name=record),
                         context)

    @property
    def existing_key_format(self) -> str:
        """The format the keys already in the topic were written with."""
        return self.old_key_format or self.key_format

    def key_frame(self, *, existing: bool = True) -> Frame:
        """The frame of the (existing) keys: the key format's `framing` option's, else the
        format's own (`FormatFactory.frame_of`), named for the key side."""
        fmt = self.existing_key_format if existing else self.key_format
        options = self.old_key_options if existing and self.old_key_options is not None \
            else self.key_options
        frame: Frame = format_factory(fmt).frame_of(options, "key")
        return frame

    def keys_carry_schema_ids(self, *, existing: bool = True) -> bool:
        """Whether the (existing) keys carry a registry schema id in their frame."""
        return bool(self.key_frame(existing=existing).carries_schema_id)

    def key_ids_in_bytes(self, *, existing: bool = True) -> bool:
        """Whether the (existing) keys carry their schema id in their bytes, not a header."""
        frame = self.key_frame(existing=existing)
        return bool(frame.carries_schema_id and not frame.id_in_header)

    def key_side(
        self,
        schema: SchemaText,
        *,
        existing: bool,
        schema_id: int | None,
        key_schema_ids: tuple[int, ...] = (),
        partitions: int | None = None,
    ) -> KeySide:
        """How keys under `schema` are written: the existing keys' side (`existing`, a
        registered version) or the candidate's. `schema` is in standalone form for Avro."""
        fmt = self.existing_key_format if existing else self.key_format
        if existing:
            options = self.old_key_options if self.old_key_options is not None \
                else self.key_options
        else:
            options = self.key_options
            writes = format_factory(fmt)
            if writes.uses_registry and schema.schema_type != writes.schema_type:
                raise SchemaError(
                    f"{schema.origin}: a {schema.schema_type} key schema, but the key format "
                    f"{fmt} registers {writes.schema_type} schemas: the candidate is not what "
                    "the writer would register",
                    hint=f"give the key schema as {writes.schema_type}, or the key format that "
                         f"writes {schema.schema_type}")
        return KeySide(
            format=fmt,
            row_type=schema.row_type(avro_only=True),
            options=dict(options),
            avro_schema=schema.standalone if schema.schema_type == "AVRO" else None,
            schema=schema if schema.schema_type != "AVRO" else None,
            schema_id=schema_id,
            key_schema_ids=key_schema_ids,
            fields_prefix=self.key_fields_prefix,
            partitioner=self.old_partitioner if existing else self.partitioner,
            partitions=partitions,
        )


def _record_name(schema: SchemaText) -> str | None:
    """The record name of a Record strategy: an Avro record's full name, a JSON Schema's
    `title` (as Confluent's JSON Schema serializers and json-registry name it)."""
    if schema.schema_type == "AVRO":
        return record_full_name(schema.text)
    if schema.schema_type == "JSON":
        try:
            doc = json.loads(schema.text)
        except ValueError:
            return None
        title = doc.get("title") if isinstance(doc, dict) else None
        return title if isinstance(title, str) else None
    return None


#: The name the guard has used since its first release; same class.
TopicCheck = TopicPlan


class KeyEncoding(Value):
    """One side of a key change as `keyguard migrate` takes it; None where it is unknown."""

    __slots__ = ("fields_prefix", "flink_ddl", "format", "key_columns", "options")
    FIELDS = ("format", "key_columns", "options", "fields_prefix", "flink_ddl")
    format: Final[str]
    #: The table's key columns (key.fields-prefix included).
    key_columns: Final[tuple[str, ...] | None]
    #: The key format's own options (Flink names without `key.<format>.`).
    options: Final[Mapping[str, Any]]
    fields_prefix: Final[str]
    #: The Flink DDL file that declares this side whole (its columns, formats and options).
    flink_ddl: Final[str | None]

    def __init__(self, format: str, key_columns: tuple[str, ...] | None = None,
                 options: Mapping[str, Any] = {}, fields_prefix: str = "",
                 flink_ddl: str | None = None) -> None:
        self.format = format
        self.key_columns = key_columns
        self.options = options
        self.fields_prefix = fields_prefix
        self.flink_ddl = flink_ddl


def key_columns(schema: SchemaText | None, fields_prefix: str = "") -> tuple[str, ...] | None:
    """The table's key columns a key schema names (None: no schema, or not a record)."""
    if schema is None:
        return None
    try:
        return tuple(fields_prefix + name for name in schema.row_type().names)
    except SchemaError:
        return None


def migration_command(topic: str | None, old: KeyEncoding, new: KeyEncoding, *,
                      partitions: int | None = None, columns: str | None = None,
                      value_format: str | None = None,
                      value_options: Mapping[str, Any] | None = None,
                      bootstrap: str | None = None, registry: str | None = None) -> str:
    """The `keyguard migrate` command that makes a breaking key change safely, named in the
    guard's reports: what the inputs know filled in (a DDL file gives its side whole), quoted
    for a POSIX shell; a <placeholder> only for what they do not say."""
    from shlex import quote as q  # lazy: CLI start-up (only for a breaking key change)

    old, new = _framings_named(old, new)
    args: list[str] = []
    if new.flink_ddl:
        args += ["--flink-ddl", q(new.flink_ddl)]
    elif not old.flink_ddl:  # a DDL names the topic and declares the columns
        args += ["--topic", q(topic) if topic else "<topic>",
                 "--columns", q(columns) if columns else "'<table columns>'"]
    args += ["--bootstrap", q(bootstrap) if bootstrap else "<servers>"]
    args += (["--old-flink-ddl", q(old.flink_ddl)] if old.flink_ddl
             else _encoding_args("--old-key-format", "--old-option", old, "old"))
    if not new.flink_ddl:
        args += _encoding_args("--new-key-format", "--new-option", new, "new")
        if value_format:
            args += ["--value-format", q(value_format)]
            args += [a for k, v in (value_options or {}).items()
                     for a in ("--value-option", q(f"value.{value_format}.{k}={v}"))
                     if k in _schema_options(value_options or {})]
    written = [side.format for side in (old, new) if not side.flink_ddl]
    if not new.flink_ddl and value_format:
        written.append(value_format)
    if any(format_factory(f).uses_registry for f in written):  # a DDL names its own
        args += ["--registry", q(redact_url(registry)) if registry else "<registry url>"]
    if partitions is not None:
        args += ["--new-partitions", str(partitions)]
    return ("to make this key change without orphaning records, switch the producers to the "
            "new key, then re-key the topic (--dry-run first shows the plan): keyguard migrate "
            + " ".join(args))


def _framings_named(old: KeyEncoding, new: KeyEncoding) -> tuple[KeyEncoding, KeyEncoding]:
    """Both sides with their `framing` option written out when either names one: a framing
    change is then explicit on both sides of the command, the default's side included."""
    if "framing" not in old.options and "framing" not in new.options:
        return old, new
    return _framing_named(old), _framing_named(new)


def _framing_named(side: KeyEncoding) -> KeyEncoding:
    if "framing" in side.options:
        return side
    declared = next((o for o in format_factory(side.format).options if o.key == "framing"), None)
    if declared is None:
        return side
    return side.replace(options={**side.options, "framing": declared.default})


def _encoding_args(format_flag: str, option_flag: str, side: KeyEncoding,
                   which: str) -> list[str]:
    """One side's key format and options as migrate's flags."""
    from shlex import quote as q  # lazy: CLI start-up (only for a breaking key change)

    pk = q("primary-key=" + ",".join(side.key_columns)) if side.key_columns \
        else f"primary-key=<{which} key columns>"
    args = [format_flag, q(side.format), option_flag, pk]
    if side.fields_prefix:
        args += [option_flag, q(f"key.fields-prefix={side.fields_prefix}")]
    for k, v in _schema_options(side.options).items():
        args += [option_flag, q(f"key.{side.format}.{k}={v}")]
    return args


def _schema_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A format's options but those that say how to reach its registry (--registry says it;
    credentials are never printed)."""
    return {k: v for k, v in options.items() if not (k == "url" or is_registry_option(k))}


#: The Flink DDL's option naming the Kafka brokers (`FlinkTable.properties`, prefix kept).
BOOTSTRAP_SERVERS = "properties.bootstrap.servers"
