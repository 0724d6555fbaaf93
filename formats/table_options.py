"""The upsert-kafka table options, declared once: Flink's names, plus keyguard's `primary-key`.

Apart from the plan (`keyguard.formats.plan`) so that the CLI and the TOML config read these
declarations without loading the formats.
"""

from __future__ import annotations

import re

from keyguard.formats.options import Option, OptionEnum, OptionSet, enum_option

#: value.fields-include: every column in the value, or all but the key columns.
ALL = "ALL"
EXCEPT_KEY = "EXCEPT_KEY"


class FieldsInclude(OptionEnum):
    """value.fields-include: which table columns the value carries."""

    ALL = ALL
    EXCEPT_KEY = EXCEPT_KEY


def topic_name(raw: str) -> str:
    """A Kafka topic name as the brokers accept it (Kafka's `Topic.validate`), else ValueError."""
    if not 1 <= len(raw) <= 249 or raw in (".", "..") or not _TOPIC_CHARS.fullmatch(raw):
        raise ValueError("a Kafka topic name is 1 to 249 ASCII letters, digits, '.', '_' and "
                         "'-' (and not '.' or '..')")
    return raw


_TOPIC_CHARS = re.compile(r"[A-Za-z0-9._-]+")

TOPIC: Option[str] = Option("topic", str, None, "The Kafka topic to write to and read from.",
                            required=True, parser=topic_name)
PRIMARY_KEY: Option[str] = Option(
    "primary-key", str, None,
    "Comma-separated primary-key columns in declaration order; they make the key.",
    required=True)
KEY_FORMAT: Option[str] = Option("key.format", str, None, "Format of the key: json, csv, raw, "
                                 "avro, avro-confluent, json-registry (or an alias: "
                                 "avro-registry).", required=True)
VALUE_FORMAT: Option[str] = Option("value.format", str, None, "Format of the value: json, csv, "
                                   "raw, avro, avro-confluent, json-registry (or an alias: "
                                   "avro-registry).", required=True)
KEY_FIELDS_PREFIX: Option[str] = Option(
    "key.fields-prefix", str, "", "Prefix of the key columns in the table; the key format sees "
    "the names without it. Requires value.fields-include=EXCEPT_KEY.")
VALUE_FIELDS_INCLUDE: Option[FieldsInclude] = enum_option(
    "value.fields-include", FieldsInclude, FieldsInclude.ALL,
    "ALL puts every column in the value, key columns too; EXCEPT_KEY leaves them out.")

TABLE_OPTIONS = OptionSet(
    "upsert-kafka",
    (TOPIC, PRIMARY_KEY, KEY_FORMAT, VALUE_FORMAT, KEY_FIELDS_PREFIX, VALUE_FIELDS_INCLUDE),
)

#: Option-key prefixes handled by the formats (`key.json.*`) rather than the table.
FORMAT_PREFIXES = ("key.", "value.")
