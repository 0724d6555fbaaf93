"""`keyguard diff --key`: key stability between schema files, with no registry and no topic.

Each side is a key schema plus how it is written (`KeyWriting`: key format and its options,
key.fields-prefix, the producer's partitioner, the partition count), so every key rule can be
reached from the command line. A Flink DDL can give a side whole (`KeyWriting.of_flink`).

Without a registry, avro-confluent ids are simulated the way a registry assigns them: the
same canonical schema gets the same id, any other schema a new one (`derived_schema_id`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from keyguard.formats.codec import format_factory
from keyguard.formats.errors import InvalidOptionError, SchemaError
from keyguard.formats.registry.options import is_registry_option
from keyguard.formats.schema_identity import derived_schema_id
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.spark_schema import with_declared
from keyguard.formats.types import RowType
from keyguard.guard.keys.analyze import analyze_key_change
from keyguard.guard.keys.side import KeySide
from keyguard.guard.options import KEY_FORMAT, PARTITIONER
from keyguard.guard.plan import (
    BOOTSTRAP_SERVERS,
    KeyEncoding,
    TopicPlan,
    key_columns,
    migration_command,
)
from keyguard.guard.report import Finding, Report, Severity

if TYPE_CHECKING:
    from keyguard.formats.flink_ddl import FlinkTable


@dataclass(frozen=True)
class KeyWriting:
    """How one side writes its keys, all but the schema: what `diff --key`'s flags say."""

    format: str = KEY_FORMAT.default_value
    #: The key format's own options (Flink names without `key.<format>.`).
    options: Mapping[str, Any] = field(default_factory=dict)
    fields_prefix: str = ""
    partitioner: str = PARTITIONER.default_value
    partitions: int | None = None
    #: The columns a Flink DDL declares (their CHAR/VARCHAR/BINARY/VARBINARY lengths, which no
    #: key schema text carries); None for a side given by a schema file.
    declared: RowType | None = None

    @classmethod
    def of_flink(cls, table: FlinkTable, partitions: int | None = None) -> KeyWriting:
        """The side a Flink table writes. Registry connection options (its url) decide no
        bytes, and diff reads no registry: they are left out."""
        options = {k: v for k, v in table.format_options("key").items()
                   if not _registry_option(table.key_format, k)}
        prefix = table.key_fields_prefix
        declared = RowType(fields=tuple(  # the key format's names are without the prefix
            f.replace(name=f.name.removeprefix(prefix)) for f in table.columns.fields))
        return cls(table.key_format, options, prefix, table.producer_partitioner, partitions,
                   declared)

    def side(self, text: SchemaText, *, existing: bool,
             key_schema_ids: tuple[int, ...] = ()) -> KeySide:
        """The `KeySide` of `text` written this way, through `TopicPlan.key_side` (the one place
        that says how a key is written); `existing` keys carry the (simulated) ids."""
        schema_id = derived_schema_id(text.text, text.schema_type)  # what a registry assigns
        plan = TopicPlan("", key_format=self.format, key_options=dict(self.options),
                         key_fields_prefix=self.fields_prefix, partitioner=self.partitioner,
                         old_partitioner=self.partitioner)
        try:
            side = plan.key_side(text, existing=existing, schema_id=schema_id,
                                 key_schema_ids=(key_schema_ids or (schema_id,)) if existing
                                 else (), partitions=self.partitions)
        except SchemaError as exc:
            prefix = f"{text.origin}: "
            if exc.message.startswith(prefix):
                raise
            raise type(exc)(prefix + exc.message, hint=exc.hint) from None
        if self.declared is None:
            return side
        return side.replace(row_type=with_declared(side.row_type, self.declared))


def key_side(text: SchemaText, key_format: str, options: Mapping[str, Any],
             partitions: int | None, *, existing: bool) -> KeySide:
    """A side for a schema file; `existing` keys carry its (simulated) id."""
    return KeyWriting(key_format, dict(options), partitions=partitions).side(
        text, existing=existing)


def diff_sides(old_texts: Sequence[SchemaText], new_text: SchemaText, old: KeyWriting,
               new: KeyWriting, *, all_old_ids: bool = False,
               tables: tuple[FlinkTable | None, FlinkTable | None] = (None, None)) -> Report:
    """The candidate against the keys in the topic today, written by the last of `old_texts`
    (or, `all_old_ids`, by each of them: their keys carry every old id, KG502). `tables`:
    the Flink DDLs of the old and new sides, if any (the migration they suggest names them)."""
    if not old_texts:
        raise InvalidOptionError("diff --key needs the old key schema", hint="give the old "
                                 "schema file, or the old table with --old-flink-ddl")
    for w in (old, new):
        _no_registry_options(w.format, w.options)
    ids = tuple(dict.fromkeys(derived_schema_id(t.text, t.schema_type) for t in old_texts)) \
        if all_old_ids else ()
    last = old_texts[-1]
    # Lengths are declared in DDLs only: a side given by a schema file is taken to keep the
    # other side's, so only two DDLs compare them.
    old, new = replace(old, declared=old.declared or new.declared), \
        replace(new, declared=new.declared or old.declared)
    old_side = old.side(last, existing=True, key_schema_ids=ids)
    new_side = new.side(new_text, existing=False)
    findings = analyze_key_change(old_side, new_side)
    fmt = old.format if old.format == new.format else f"{old.format} -> {new.format}"
    notes = []
    if any(f.effective_severity is Severity.BREAKING for f in findings):
        notes.append(_migration(last, new_text, old, new, tables))
    findings += _value_framing(*tables)  # readers, not keys: no migration for it
    return Report.of(findings, [f"key {fmt}: {last.origin} -> {new_text.origin}"], notes)


def _value_framing(old: FlinkTable | None, new: FlinkTable | None) -> list[Finding]:
    """KG804 when two DDLs give one value format two framings: no key changes, but readers
    of the old framing may not read the new one."""
    if old is None or new is None or not new.value_format or \
            old.value_format != new.value_format:
        return []
    from keyguard.guard.values import framing_findings  # lazy: CLI start-up (two DDLs only)

    return framing_findings(new.value_format, old.format_options("value"),
                            new.format_options("value"), topic=new.topic)


def _migration(old_text: SchemaText, new_text: SchemaText, old: KeyWriting, new: KeyWriting,
               tables: tuple[FlinkTable | None, FlinkTable | None]) -> str:
    """The `keyguard migrate` command for this change: what the schemas and the DDLs say
    (topic, columns, formats and options, brokers), placeholders for the rest."""
    old_table, new_table = tables
    declared = new_table or old_table
    encodings = [KeyEncoding(w.format, key_columns(text, w.fields_prefix), w.options,
                             w.fields_prefix, t.origin if t is not None else None)
                 for w, text, t in ((old, old_text, old_table), (new, new_text, new_table))]
    value = declared.format_options("value") if declared is not None else {}
    urls = [declared.format_options(role).get("url") for role in ("key", "value")] \
        if declared is not None else []
    return migration_command(
        declared.topic if declared is not None else None, *encodings,
        partitions=new.partitions if new.partitions != old.partitions else None,
        value_format=declared.value_format if declared is not None else None,
        value_options=value,
        bootstrap=declared.properties.get(BOOTSTRAP_SERVERS) if declared is not None else None,
        registry=next((u for u in urls if u), None))


def _registry_option(key_format: str, key: str) -> bool:
    return key == "url" or (format_factory(key_format).uses_registry and is_registry_option(key))


def _no_registry_options(key_format: str, options: Mapping[str, Any]) -> None:
    """diff reads no registry: a registry option given to it would be accepted and ignored."""
    unused = sorted(k for k in options if _registry_option(key_format, k))
    if unused:
        raise InvalidOptionError(
            f"diff reads no schema registry: option{'s' if len(unused) > 1 else ''} "
            f"{', '.join(unused)} would not be used",
            hint="drop them; to compare with a registry, use keyguard check --registry")
