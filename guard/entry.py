"""What a config file (or the command line) declares: its topics and its run-wide settings,
as written; `keyguard.guard.config` reads them from TOML. Light on purpose: `keyguard check --topic`
builds them without loading the TOML reader and its checks."""

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

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


class TopicEntry(NamedTuple):
    """A `[[topics]]` entry as written (or the command line's topic): what the TOML says, with
    schema sources still unread. `keyguard.guard.plan.TopicPlan.of_entry` turns it into the guard's
    plan once the candidates are read."""

    name: str
    key_format: str = KEY_FORMAT.default_value
    value_format: str | None = VALUE_FORMAT.default_value
    key_schema: str | None = None
    value_schema: str | None = None
    partitions: int | None = None
    partitioner: str = PARTITIONER.default_value
    key_fields_prefix: str = KEY_FIELDS_PREFIX.default_value
    #: (A default `{}` is one empty mapping all instances share: a Mapping, never written.)
    options: Mapping[str, Any] = {}
    #: None: the config's (or the command line's) choice.
    require_subject: bool | None = None
    #: Rule IDs and categories ignored for this topic only (`keyguard.guard.selection`).
    ignore: tuple[str, ...] = ()
    #: Its `ignore` tables: a rule accepted with a reason (`keyguard.guard.suppress`).
    suppressions: "tuple[Suppression, ...]" = ()
    #: The Flink table the entry was read from (`flink-ddl`, `--flink-ddl`): its key and value
    #: schemas are the candidates unless key-schema / value-schema name others.
    flink_table: "FlinkTable | None" = None

    def format_options(self, role: str, fmt: str | None) -> dict[str, Any]:
        return strip_prefix(self.options, f"{role}.{fmt}.") if fmt else {}


class GuardConfig(NamedTuple):
    """A config file's settings (`keyguard.guard.config.load_config`), or the defaults of a run
    without one: the registry, the broker, the topics."""

    registry: str | None = None
    #: Registry connection options from a [registry] table (REGISTRY_OPTIONS names).
    registry_options: Mapping[str, Any] = {}
    require_subject: bool = REQUIRE_SUBJECT.default_value
    bootstrap: str | None = None
    kafka: Mapping[str, Any] = {}
    topics: tuple[TopicEntry, ...] = ()
    scan_limit: int = SCAN_LIMIT.default_value
    #: Whose compatibility rules judge the value schemas (`rules-of`).
    rules_of: str = RULES_OF.default_value
    #: Rule IDs and categories ignored for every topic (`keyguard.guard.selection`).
    ignore: tuple[str, ...] = ()
    #: Its `ignore` tables: a rule accepted with a reason (`keyguard.guard.suppress`).
    suppressions: "tuple[Suppression, ...]" = ()
    #: Directory the file was read from: relative schema paths resolve against it.
    base: Path = Path(".")
