"""The check's own settings, declared once: the defaults of `keyguard check` and `diff`, of a
config file's `[[topics]]` entries, and of the Spark connector's `guard.*` options.

The command line, the TOML config and the connector all read these declarations rather than
repeating a literal default, so a topic means the same thing wherever it is described. Names are
the config file's (`key-format`); the table options (`key.format`, `keyguard.formats.plan`) are
Flink's.
"""

from __future__ import annotations

from pathlib import Path

from keyguard.formats.options import Option, OptionSet

KEY_FORMAT: Option[str] = Option(
    "key-format", str, "avro-confluent", "Format of the key (see `keyguard formats`).")
VALUE_FORMAT: Option[str] = Option(
    "value-format", str, "avro-confluent",
    "Format of the value; false in the config file: the topic's values are not checked.")
PARTITIONS: Option[int | None] = Option(
    "partitions", int, None, "The partition count producers will see.", minimum=1)
PARTITIONER: Option[str] = Option("partitioner", str, "murmur2", "The producer's partitioner.")
KEY_FIELDS_PREFIX: Option[str] = Option(
    "key-fields-prefix", str, "", "Prefix of the key columns in the table (key.fields-prefix).")
SCAN_LIMIT: Option[int] = Option(
    "scan-limit", int, 10_000,
    "Keys read from the topic to find the schema ids its keys carry (0: no scan).")
REQUIRE_SUBJECT: Option[bool] = Option(
    "require-subject", bool, False,
    "A subject with no versions is breaking (KG015), not a first registration: for gates of "
    "existing topics.")

#: The registries whose rules `--rules-of` names (`keyguard.guard.compat.registry_rules`, kept
#: equal by a test): spelled out, so that `--help` does not load the checkers.
_RULES = ("confluent", "apicurio", "karapace", "redpanda")
RULES_OF: Option[str] = Option(
    "rules-of", str, "confluent",
    "Whose compatibility rules judge value schemas where the registries differ: "
    f"{', '.join(_RULES)}. Everywhere else all of them agree.", choices=tuple(_RULES))

REGISTRY: Option[str] = Option(
    "registry", str, "file://schemas",
    "The schema registry of every command when none is named (no --registry, no config "
    "file's registry, no format url): the file registry ./schemas, when that directory exists.")


def default_registry() -> str | None:
    """`REGISTRY`'s default when ./schemas is a directory here, else None (nothing to read)."""
    return REGISTRY.default_value if Path("schemas").is_dir() else None


#: The settings of one topic to check (a `[[topics]]` entry, or --topic with its flags).
TOPIC_OPTIONS = OptionSet(
    "keyguard check", (KEY_FORMAT, VALUE_FORMAT, PARTITIONS, PARTITIONER, KEY_FIELDS_PREFIX,
                       REQUIRE_SUBJECT))
