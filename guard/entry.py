"""What a config file (or the command line) declares: its topics and its run-wide settings,
as written; `keyguard.guard.config` reads them from TOML. Light on purpose: `keyguard check --topic`
builds them without loading the TOML reader and its checks."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from keyguard.formats.immutable import Value
from keyguard.formats.options import strip_prefix
from keyguard.guard.options import (
    KEY_FIELDS_PREFIX,
    KEY_FORMAT,
    PARTITIONER,
    REQUIRE_SUBJECT,
    RULES_OF,
    SCAN_LIMIT,
    VALUE_FORMAT,
)

if TYPE_CHECKING:
    from keyguard.formats.flink_ddl import FlinkTable
    from keyguard.guard.suppress import Suppression


class TopicEntry(Value):
    """A `[[topics]]` entry as written (or the command line's topic): what the TOML says, with
    schema sources still unread. `keyguard.guard.plan.TopicPlan.of_entry` turns it into the guard's
    plan once the candidates are read."""

    __slots__ = ("flink_table", "ignore", "key_fields_prefix", "key_format", "key_schema", "name",
                 "options", "partitioner", "partitions", "require_subject", "suppressions",
                 "value_format", "value_schema")
    FIELDS = ("name", "key_format", "value_format", "key_schema", "value_schema", "partitions",
              "partitioner", "key_fields_prefix", "options", "require_subject", "ignore",
              "suppressions", "flink_table")
    name: Final[str]
    key_format: Final[str]
    value_format: Final[str | None]
    key_schema: Final[str | None]
    value_schema: Final[str | None]
    partitions: Final[int | None]
    partitioner: Final[str]
    key_fields_prefix: Final[str]
    #: (A default `{}` is one empty mapping all instances share: a Mapping, never written.)
    options: Final[Mapping[str, Any]]
    #: None: the config's (or the command line's) choice.
    require_subject: Final[bool | None]
    #: Rule IDs and categories ignored for this topic only (`keyguard.guard.selection`).
    ignore: Final[tuple[str, ...]]
    #: Its `ignore` tables: a rule accepted with a reason (`keyguard.guard.suppress`).
    suppressions: Final[tuple[Suppression, ...]]
    #: The Flink table the entry was read from (`flink-ddl`, `--flink-ddl`): its key and value
    #: schemas are the candidates unless key-schema / value-schema name others.
    flink_table: Final[FlinkTable | None]

    def __init__(self, name: str, key_format: str = KEY_FORMAT.default_value,
                 value_format: str | None = VALUE_FORMAT.default_value,
                 key_schema: str | None = None, value_schema: str | None = None,
                 partitions: int | None = None, partitioner: str = PARTITIONER.default_value,
                 key_fields_prefix: str = KEY_FIELDS_PREFIX.default_value,
                 options: Mapping[str, Any] = {}, require_subject: bool | None = None,
                 ignore: tuple[str, ...] = (), suppressions: tuple[Suppression, ...] = (),
                 flink_table: FlinkTable | None = None) -> None:
        self.name = name
        self.key_format = key_format
        self.value_format = value_format
        self.key_schema = key_schema
        self.value_schema = value_schema
        self.partitions = partitions
        self.partitioner = partitioner
        self.key_fields_prefix = key_fields_prefix
        self.options = options
        self.require_subject = require_subject
        self.ignore = ignore
        self.suppressions = suppressions
        self.flink_table = flink_table

    def format_options(self, role: str, fmt: str | None) -> dict[str, Any]:
        return strip_prefix(self.options, f"{role}.{fmt}.") if fmt else {}


class GuardConfig(Value):
    """A config file's settings (`keyguard.guard.config.load_config`), or the defaults of a run
    without one: the registry, the broker, the topics."""

    __slots__ = ("base", "bootstrap", "ignore", "kafka", "registry", "registry_options",
                 "require_subject", "rules_of", "scan_limit", "suppressions", "topics")
    FIELDS = ("registry", "registry_options", "require_subject", "bootstrap", "kafka", "topics",
              "scan_limit", "rules_of", "ignore", "suppressions", "base")
    registry: Final[str | None]
    #: Registry connection options from a [registry] table (REGISTRY_OPTIONS names).
    registry_options: Final[Mapping[str, Any]]
    require_subject: Final[bool]
    bootstrap: Final[str | None]
    kafka: Final[Mapping[str, Any]]
    topics: Final[tuple[TopicEntry, ...]]
    scan_limit: Final[int]
    #: Whose compatibility rules judge the value schemas (`rules-of`).
    rules_of: Final[str]
    #: Rule IDs and categories ignored for every topic (`keyguard.guard.selection`).
    ignore: Final[tuple[str, ...]]
    #: Its `ignore` tables: a rule accepted with a reason (`keyguard.guard.suppress`).
    suppressions: Final[tuple[Suppression, ...]]
    #: Directory the file was read from: relative schema paths resolve against it.
    base: Final[Path]

    def __init__(self, registry: str | None = None, registry_options: Mapping[str, Any] = {},
                 require_subject: bool = REQUIRE_SUBJECT.default_value,
                 bootstrap: str | None = None, kafka: Mapping[str, Any] = {},
                 topics: tuple[TopicEntry, ...] = (),
                 scan_limit: int = SCAN_LIMIT.default_value,
                 rules_of: str = RULES_OF.default_value, ignore: tuple[str, ...] = (),
                 suppressions: tuple[Suppression, ...] = (), base: Path = Path(".")) -> None:
        self.registry = registry
        self.registry_options = registry_options
        self.require_subject = require_subject
        self.bootstrap = bootstrap
        self.kafka = kafka
        self.topics = topics
        self.scan_limit = scan_limit
        self.rules_of = rules_of
        self.ignore = ignore
        self.suppressions = suppressions
        self.base = base
