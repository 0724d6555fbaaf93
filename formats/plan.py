"""From table options to a resolved upsert plan: the layout of key and value, and their codecs.

This is the first step of the one-way flow (options -> plan -> guard -> serialize -> produce).
The options are Flink's upsert-kafka names: `key.format`, `value.format`, their prefixed
format options (`key.json.*`, `value.avro-confluent.url`, ...), `key.fields-prefix`,
`value.fields-include`, plus keyguard's `primary-key` (Spark has no primary-key constraint).
The CLI and the Spark connector both resolve through here, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from formats.codec import Codec, CodecContext, create_codec, format_factory
from formats.errors import InvalidOptionError
from formats.options import Option, OptionSet, ResolvedOptions, strip_prefix
from formats.projection import ALL, EXCEPT_KEY, UpsertLayout, project
from formats.registry import Registry
from formats.schemajson import paused_gc
from formats.types import RowType

TABLE_OPTIONS = OptionSet(
    "upsert-kafka",
    (
        Option("topic", str, None, "The Kafka topic to write to and read from.", required=True),
        Option(
            "primary-key",
            str,
            None,
            "Comma-separated primary-key columns in declaration order; they make the key.",
            required=True,
        ),
        Option("key.format", str, None, "Format of the key: json, csv, raw, avro, "
               "avro-confluent.", required=True),
        Option("value.format", str, None, "Format of the value: json, csv, raw, avro, "
               "avro-confluent.", required=True),
        Option("key.fields-prefix", str, "", "Prefix of the key columns in the table; the key "
               "format sees the names without it. Requires value.fields-include=EXCEPT_KEY."),
        Option(
            "value.fields-include",
            str,
            ALL,
            "ALL puts every column in the value, key columns too; EXCEPT_KEY leaves them out.",
            choices=(ALL, EXCEPT_KEY),
        ),
    ),
)

#: Option-key prefixes handled by the formats (`key.json.*`) rather than the table.
FORMAT_PREFIXES = ("key.", "value.")


@dataclass(frozen=True)
class UpsertPlan:
    """Everything needed to turn table rows into Kafka keys and values, resolved and validated."""

    topic: str
    layout: UpsertLayout
    key_format: str
    value_format: str
    key_options: Mapping[str, Any]
    value_options: Mapping[str, Any]
    key_codec: Codec
    value_codec: Codec

    def encode(self, table_row: Mapping[str, Any], *, where: str = "") -> tuple[bytes, bytes]:
        """Key and value bytes of one upsert row."""
        key = self.key_codec.encode(self.layout.key_row(table_row, where=where))
        return key, self.value_codec.encode(self.layout.value_row(table_row))

    def decode(self, key: bytes, value: bytes | None) -> dict[str, Any] | None:
        """The table row of a record (value None: a tombstone, value columns None).

        None when a format skipped the key or the value (`ignore-parse-errors`).
        """
        key_row = self.key_codec.decode(key)
        if key_row is None:
            return None
        if value is None:
            return self.layout.table_row(key_row, None)
        value_row = self.value_codec.decode(value)
        if value_row is None:
            return None
        return self.layout.table_row(key_row, value_row)


def split_options(
    options: Mapping[str, Any], *, extra: OptionSet | None = None
) -> tuple[ResolvedOptions, dict[str, Any], dict[str, Any]]:
    """Table options (validated), key format options and value format options.

    `extra` declares further table-level options (the Spark connector's `sink.*`, ...), so
    one validation pass rejects every unknown key, wherever it belongs.
    """
    table_keys = {o.key for o in TABLE_OPTIONS} | ({o.key for o in extra} if extra else set())
    key_fmt = options.get("key.format")
    value_fmt = options.get("value.format")
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
    resolved = declared.validate(table_raw, where=f"table options of {options.get('topic', '?')}")
    for fmt in (resolved["key.format"], resolved["value.format"]):
        format_factory(fmt)  # unknown format names fail here, before anything else
    return resolved, key_opts, value_opts


def resolve_plan(
    table: RowType,
    options: Mapping[str, Any],
    *,
    registry: Registry | None = None,
    extra: OptionSet | None = None,
) -> UpsertPlan:
    """Validate every option, project the table and build both codecs, before any row moves."""
    resolved, key_opts, value_opts = split_options(options, extra=extra)
    layout = project(
        table,
        resolved["primary-key"],
        key_fields_prefix=resolved["key.fields-prefix"],
        value_fields_include=resolved["value.fields-include"],
    )
    topic = resolved["topic"]
    if not topic.strip():
        raise InvalidOptionError("option 'topic' is empty")
    with paused_gc():  # a wide row builds an encoder per column: no collector rescans
        key_codec = create_codec(
            resolved["key.format"], layout.key_type, key_opts,
            CodecContext(role="key", topic=topic, registry=registry),
        )
        value_codec = create_codec(
            resolved["value.format"], layout.value_type, value_opts,
            CodecContext(role="value", topic=topic, registry=registry),
        )
    return UpsertPlan(
        topic=topic,
        layout=layout,
        key_format=resolved["key.format"],
        value_format=resolved["value.format"],
        key_options=key_opts,
        value_options=value_opts,
        key_codec=key_codec,
        value_codec=value_codec,
    )
