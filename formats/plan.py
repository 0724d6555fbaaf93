"""From table options to a resolved upsert plan: the layout of key and value, and their codecs.

This is the first step of the one-way flow (options -> plan -> guard -> serialize -> produce).
The options are Flink's upsert-kafka names: `key.format`, `value.format`, their prefixed
format options (`key.json.*`, `value.avro-confluent.url`, ...), `key.fields-prefix`,
`value.fields-include`, plus keyguard's `primary-key` (Spark has no primary-key constraint).
The CLI and the Spark connector both resolve through here, so they cannot disagree.

Resolution is staged so each step happens once: `resolve_options` validates every option
(`PlanOptions`), `PlanOptions.project` lays out a table (`PlanSpec`: frozen, picklable, what a
Spark task receives), and `PlanSpec.build` makes the codecs without validating anything again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keyguard.formats.codec import (
    Codec,
    CodecContext,
    FormatFactory,
    canonical_format,
    format_factory,
)
from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.framing import Headers
from keyguard.formats.lengths import fit_row
from keyguard.formats.options import OptionSet, ResolvedOptions, strip_prefix
from keyguard.formats.projection import UpsertLayout, project
from keyguard.formats.registry import Registry
from keyguard.formats.schemajson import paused_gc
from keyguard.formats.table_options import (  # noqa: F401 (the table options, declared there)
    FORMAT_PREFIXES,
    KEY_FIELDS_PREFIX,
    KEY_FORMAT,
    PRIMARY_KEY,
    TABLE_OPTIONS,
    TOPIC,
    VALUE_FIELDS_INCLUDE,
    VALUE_FORMAT,
    FieldsInclude,
)
from keyguard.formats.types import RowType


@dataclass(frozen=True)
class FormatOptions:
    """One side's format: its name, its options as given (prefix removed) and as validated."""

    name: str
    given: Mapping[str, Any]
    resolved: ResolvedOptions

    @property
    def factory(self) -> FormatFactory:
        return format_factory(self.name)


@dataclass(frozen=True)
class PlanOptions:
    """Every option of a table, validated once: the table's own (and any `extra` declared
    with them, e.g. the Spark connector's) and both formats'. Plain values, picklable."""

    table: ResolvedOptions
    key: FormatOptions
    value: FormatOptions

    @property
    def topic(self) -> str:
        return self.table[TOPIC]

    def project(self, table: RowType) -> PlanSpec:
        """The layout of `table` under these options (checks the columns, not the options)."""
        layout = project(
            table,
            self.table[PRIMARY_KEY],
            key_fields_prefix=self.table[KEY_FIELDS_PREFIX],
            value_fields_include=self.table[VALUE_FIELDS_INCLUDE],
        )
        return PlanSpec(self, layout)


@dataclass(frozen=True)
class PlanSpec:
    """The declarative part of an UpsertPlan: validated options and the layout, no codecs.

    Frozen and picklable: resolved once (on the Spark driver), handed to whoever builds the
    codecs (every task), which then validates nothing again.
    """

    options: PlanOptions
    layout: UpsertLayout

    @property
    def topic(self) -> str:
        return self.options.topic

    def build(self, registry: Registry | None = None, *,
              registries: Mapping[str, Registry] | None = None) -> UpsertPlan:
        """Both codecs, from the options as validated (`FormatFactory.build`, no `validate`).

        The codecs get `registry`, or their role's in `registries` (the edge opens them from
        the options: `keyguard.formats.registry.registration.open_plan_registries`); none opens
        one."""
        layout, opts = self.layout, self.options
        by_role = registries or {}
        with paused_gc():  # a wide row builds an encoder per column: no collector rescans
            key_codec = opts.key.factory.build(
                layout.key_type, opts.key.resolved,
                CodecContext(role="key", topic=self.topic,
                             registry=registry or by_role.get("key")))
            value_codec = opts.value.factory.build(
                layout.value_type, opts.value.resolved,
                CodecContext(role="value", topic=self.topic,
                             registry=registry or by_role.get("value")))
        return UpsertPlan(self, key_codec, value_codec)


@dataclass(frozen=True)
class UpsertPlan:
    """Everything needed to turn table rows into Kafka keys and values, resolved and validated."""

    spec: PlanSpec
    key_codec: Codec
    value_codec: Codec

    @property
    def topic(self) -> str:
        return self.spec.topic

    @property
    def layout(self) -> UpsertLayout:
        return self.spec.layout

    @property
    def key_format(self) -> str:
        return self.spec.options.key.name

    @property
    def value_format(self) -> str:
        return self.spec.options.value.name

    @property
    def key_options(self) -> Mapping[str, Any]:
        """The key format's options as given (no `key.<format>.` prefix)."""
        return self.spec.options.key.given

    @property
    def value_options(self) -> Mapping[str, Any]:
        return self.spec.options.value.given

    def encode(self, table_row: Mapping[str, Any], *, where: str = "") -> tuple[bytes, bytes]:
        """Key and value bytes of one upsert row, its length columns cast as Flink casts
        them (`keyguard.formats.lengths`)."""
        table_row = fit_row(self.layout.table, table_row)
        key = self.key_codec.encode(self.layout.key_row(table_row, where=where))
        return key, self.value_codec.encode(self.layout.value_row(table_row))

    def record_headers(self, *, tombstone: bool = False) -> tuple[tuple[str, bytes], ...]:
        """The headers the key's and the value's framings add to a record (a header framing's
        schema id; none in Confluent's wire format); a tombstone has no value, so no value
        header, as Confluent's serializers write it."""
        key = self.key_codec.record_headers()
        return key if tombstone else key + self.value_codec.record_headers()

    def decode(self, key: bytes, value: bytes | None, headers: Headers = None,
               ) -> dict[str, Any] | None:
        """The table row of a record (value None: a tombstone, value columns None), its
        headers read where a side's framing may carry the schema id there.

        None when a format skipped the key or the value (`ignore-parse-errors`).
        """
        key_row = self.key_codec.decode_record(key, headers)
        if key_row is None:
            return None
        if value is None:
            return self.layout.table_row(key_row, None)
        value_row = self.value_codec.decode_record(value, headers)
        if value_row is None:
            return None
        return self.layout.table_row(key_row, value_row)


def split_options(
    options: Mapping[str, Any], *, extra: OptionSet | None = None
) -> tuple[ResolvedOptions, dict[str, Any], dict[str, Any]]:
    """Table options (validated), key format options and value format options (as given).

    `extra` declares further table-level options (the Spark connector's `sink.*`, ...), so
    one validation pass rejects every unknown key, wherever it belongs.
    """
    table_keys = {o.key for o in TABLE_OPTIONS} | ({o.key for o in extra} if extra else set())
    key_fmt = options.get(KEY_FORMAT.key)
    value_fmt = options.get(VALUE_FORMAT.key)
    key_opts = strip_prefix(options, f"key.{key_fmt}.") if key_fmt else {}
    value_opts = strip_prefix(options, f"value.{value_fmt}.") if value_fmt else {}
    table_raw = {
        k: v
        for k, v in options.items()
        if k in table_keys
        or not (
            (key_fmt and k.startswith(f"key.{key_fmt}."))
            or (value_fmt and k.startswith(f"value.{value_fmt}."))
        )
    }
    declared = OptionSet(
        TABLE_OPTIONS.owner,
        TABLE_OPTIONS.options + (extra.options if extra else ()),
        extra.passthrough_prefixes if extra else (),
    )
    resolved = declared.validate(
        table_raw, where=f"table options of {options.get(TOPIC.key, '?')}")
    for fmt in (resolved[KEY_FORMAT], resolved[VALUE_FORMAT]):
        format_factory(fmt)  # unknown format names fail here, before anything else
    return resolved, key_opts, value_opts


def resolve_options(options: Mapping[str, Any], *, extra: OptionSet | None = None
                    ) -> PlanOptions:
    """Validate every option once: the table's (with `extra`) and both formats'."""
    table, key_opts, value_opts = split_options(options, extra=extra)
    if not table[TOPIC].strip():
        raise InvalidOptionError("option 'topic' is empty")

    def side(role: str, name: str, given: dict[str, Any]) -> FormatOptions:
        resolved = format_factory(name).options.validate(
            given, where=f"{role} format '{name}'")
        # An alias (avro-registry) gave its option prefix; the plan names the format itself.
        return FormatOptions(canonical_format(name), given, resolved)

    return PlanOptions(table, side("key", table[KEY_FORMAT], key_opts),
                       side("value", table[VALUE_FORMAT], value_opts))


def resolve_plan(
    table: RowType,
    options: Mapping[str, Any],
    *,
    registry: Registry | None = None,
    registries: Mapping[str, Registry] | None = None,
    extra: OptionSet | None = None,
) -> UpsertPlan:
    """Validate every option, project the table and build both codecs, before any row moves.

    A format that uses a registry is handed `registry`, else its role's in `registries`."""
    return resolve_options(options, extra=extra).project(table).build(
        registry, registries=registries)
