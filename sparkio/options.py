"""The `upsert-kafka` connector's own options, declared once (Flink's names where it has one).

`keyguard.formats.plan.TABLE_OPTIONS` declares the table options (topic, primary-key, key.format,
...);
`CONNECTOR_OPTIONS` here adds the sink, scan and guard options, and `properties.*` passes
through to librdkafka. Each option is a constant (`SCAN_LIMIT`, `DELIVERY`, ...) and is read
back through it (`conn[SCAN_LIMIT]`), typed; enum-like options read back as enum members.
`resolve_connector` validates all of them once, with both formats' options (via
`keyguard.formats.plan.resolve_options`), then checks the combinations Flink rejects too, so an
unknown or conflicting option fails before Spark runs anything. The result, `ConnectorOptions`, is
the plan the tasks receive: they never validate again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.flink_ddl import read_flink_ddl
from keyguard.formats.options import (
    Option,
    OptionEnum,
    OptionSet,
    ResolvedOptions,
    duration_option,
    enum_option,
)
from keyguard.formats.plan import PRIMARY_KEY, TABLE_OPTIONS, TOPIC, PlanOptions, resolve_options
from keyguard.formats.projection import parse_primary_key
from keyguard.formats.registry.settings import resolve_kafka
from keyguard.formats.secrets import is_secret_key, register_options
from keyguard.formats.types import RowType
from keyguard.guard import options as guard_options
from keyguard.guard.selection import selectors

V = TypeVar("V")


class DeliveryGuarantee(OptionEnum):
    NONE = "none"
    AT_LEAST_ONCE = "at-least-once"
    EXACTLY_ONCE = "exactly-once"


class ScanMode(OptionEnum):
    TABLE = "table"
    CHANGELOG = "changelog"


class ScanFold(OptionEnum):
    """scan.fold: per Kafka partition, or all partitions in one task."""

    PARTITION = "partition"
    GLOBAL = "global"


NONE = DeliveryGuarantee.NONE
AT_LEAST_ONCE = DeliveryGuarantee.AT_LEAST_ONCE
EXACTLY_ONCE = DeliveryGuarantee.EXACTLY_ONCE
CHANGELOG = ScanMode.CHANGELOG
TABLE = ScanMode.TABLE
PARTITION = ScanFold.PARTITION
GLOBAL = ScanFold.GLOBAL

PROPERTIES = "properties."

#: librdkafka timeouts the connector sets lower than librdkafka's defaults (300 s message
#: timeout, 30 s connection setup), so a dead broker fails a task in well under a minute; a
#: healthy broker acknowledges in milliseconds to seconds. Declared here so they are validated,
#: documented and overridable as `properties.*`.
MESSAGE_TIMEOUT = "properties.message.timeout.ms"
MESSAGE_TIMEOUT_MS: Option[int] = Option(
    MESSAGE_TIMEOUT, int, 30_000,
    "librdkafka's delivery timeout (alias properties.delivery.timeout.ms): how long a "
    "record may wait for its acknowledgement before the task fails with the records "
    "not delivered. librdkafka's default is 300000 (5 minutes per task with a dead "
    "broker); raise it for brokers that stall longer, e.g. during long leader elections.",
    fallback_keys=("properties.delivery.timeout.ms",))
CONNECTION_SETUP_TIMEOUT_MS: Option[int] = Option(
    "properties.socket.connection.setup.timeout.ms", int, 10_000,
    "How long connecting to a broker (TCP and TLS/SASL handshake) may take "
    "(librdkafka: 30000).")
PRODUCER_TIMEOUTS = (MESSAGE_TIMEOUT_MS, CONNECTION_SETUP_TIMEOUT_MS)

SINK_PARALLELISM: Option[int | None] = Option(
    "sink.parallelism", int, None,
    "Tasks that produce: the DataFrame is repartitioned by the primary key into this "
    "many partitions (write_upsert, serialize, prepare). Default: Spark's default "
    "parallelism; under Spark Connect spark.default.parallelism if the server sets "
    "it, else spark.sql.shuffle.partitions as coalesced by adaptive execution.")
BUFFER_FLUSH_MAX_ROWS: Option[int] = Option(
    "sink.buffer-flush.max-rows", int, 0,
    "Rows buffered per task before a flush; the buffer keeps only the last change of "
    "each key. Buffering is on when this and sink.buffer-flush.interval are both > 0.")
BUFFER_FLUSH_INTERVAL: Option[int] = duration_option(
    "sink.buffer-flush.interval", 0,
    "Longest time a change waits in the buffer (e.g. 1s); 0 turns buffering off.")
DELIVERY: Option[DeliveryGuarantee] = enum_option(
    "sink.delivery-guarantee", DeliveryGuarantee, AT_LEAST_ONCE,
    "none: fire and forget (acks=1, no idempotence); at-least-once: acks=all, "
    "idempotent producer, every delivery report checked, a failed task is retried "
    "whole; exactly-once: additionally one Kafka transaction per task.")
PRODUCER_REUSE: Option[bool] = Option(
    "sink.producer-reuse", bool, True,
    "A Spark Python worker keeps the producer of a write task that ended with every "
    "record acknowledged, for its next task with the same producer settings (as Spark's "
    "own Kafka sink keeps its producers): no new connection and no wait for an "
    "idempotent producer id per task. Never a transactional producer; an idle one is "
    "dropped after 5 minutes. false: every task makes its own producer.")
TRANSACTIONAL_ID_PREFIX: Option[str | None] = Option(
    "sink.transactional-id-prefix", str, None,
    "Prefix of the transactional.id of each task (prefix-<partition id>); required "
    "with exactly-once, and unique per job writing concurrently.")
ORDER_BY: Option[str | None] = Option(
    "sink.order-by", str, None,
    "Comma-separated columns ordering the changes of one key (e.g. an event time or "
    "a sequence number). Default: the DataFrame's input order.")
SUMMARY_FILE: Option[str | None] = Option(
    "sink.summary-file", str, None,
    "A local path where the write's WriteSummary is written as JSON when it "
    "commits: on the Spark driver host for format(\"upsert-kafka\") writes, in "
    "the caller's process for write_upsert (which also returns it).")
CHANGELOG_COLUMN: Option[str | None] = Option(
    "changelog.column", str, None,
    "A string column holding +I, +U, -U or -D for each row. +I/+U write key and "
    "value, -D a tombstone, -U nothing. Absent: every row is an upsert. On read "
    "with scan.mode=changelog: the name of the column that carries the kind "
    "(default op).")
SCAN_MODE: Option[ScanMode] = enum_option(
    "scan.mode", ScanMode, TABLE,
    "Reading: table (the last value per key, tombstones removed: the KTable view) "
    "or changelog (Flink's normalized change rows +I, +U, -D; -U too with "
    "changelog.update-before).")
CHANGELOG_UPDATE_BEFORE: Option[bool] = Option(
    "changelog.update-before", bool, False,
    "Reading in changelog mode: emit -U with the previous values before every +U.")
SCAN_FOLD: Option[ScanFold] = enum_option(
    "scan.fold", ScanFold, PARTITION,
    "Reading: partition folds each Kafka partition in its own task (a key's records "
    "share a partition under murmur2); global folds all partitions in one task, "
    "the later record timestamp winning across partitions.")
CHECK_PARTITIONING: Option[bool] = Option(
    "scan.check-partitioning", bool, True,
    "Reading with scan.fold=partition: fail when a key sits on another partition "
    "than murmur2 gives (another partitioner, added partitions), since the fold "
    "would miss duplicates.")
INCLUDE_HEADERS: Option[bool] = Option(
    "scan.include-headers", bool, False,
    "Reading: add a column `headers` array<struct<key string, value binary>> with the Kafka "
    "headers of the record each row comes from (the one that won the fold; in changelog mode "
    "the record of each change), null for none: Spark's Kafka source's includeHeaders. "
    "Headers are no part of the key. Writing takes such a column from the DataFrame (a header "
    "framing's schema-id headers follow the row's). The registry formats read each record's "
    "headers either way (the schema id may be there): this option only adds the column.")
CAPTURE_TIMEOUT: Option[int] = duration_option(
    "scan.capture-timeout", 30_000,
    "Reading: how long the driver waits for each partition's end offset.")
STALL_TIMEOUT: Option[int] = duration_option(
    "scan.stall-timeout", 60_000,
    "Reading: how long a task waits without progress before its end offset.")
GUARD_REGISTRY: Option[str | None] = Option(
    "guard.registry", str, None,
    "Where the registered key (and value) schemas live: http(s)://, file://DIR, "
    "mock://NAME. Default: key.avro-confluent.url, else value.avro-confluent.url. "
    "With a json/csv/raw key the key's JSON Schema is registered here once the guard "
    "passed and the executors were probed, before the first record, so the next write "
    "is checked against it (a write that fails later, on a null key or an unreachable "
    "broker, leaves it registered).")
ALLOW_BREAKING: Option[bool] = Option(
    "guard.allow-breaking", bool, False,
    "Write even when the guard finds a breaking key or value change; the report is "
    "logged at WARNING. For deliberate migrations only.")
SCAN_LIMIT: Option[int] = Option(
    "guard.scan-limit", int, guard_options.SCAN_LIMIT.default, guard_options.SCAN_LIMIT.description)
GUARD_RULES_OF: Option[str] = Option(
    "guard.rules-of", str, guard_options.RULES_OF.default, guard_options.RULES_OF.description,
    choices=guard_options.RULES_OF.choices)
REQUIRE_SUBJECT: Option[bool] = Option(
    "guard.require-subject", bool, guard_options.REQUIRE_SUBJECT.default,
    "Block the write when the key (or value) subject has no versions (KG015) "
    "instead of treating it as a first registration: for topics in production.")


def _rule_names(raw: str) -> str:
    """guard.ignore: every name a known rule ID or category; canonical, comma-separated."""
    try:
        return ",".join(s.token for s in selectors(raw, where="guard.ignore"))
    except InvalidOptionError as exc:
        raise ValueError(str(exc)) from None


GUARD_IGNORE: Option[str] = Option(
    "guard.ignore", str, None,
    "Rule IDs or categories, comma-separated (KG701,key-placement), whose findings "
    "do not count: they neither block the write nor warn, and the logged report "
    "says what they hid. `keyguard rules` lists them; a retired ID still works.",
    parser=_rule_names)
VALIDATE_PARTITION: Option[bool] = Option(
    "sink.validate-partition", bool, True,
    "Before producing, each write task checks its whole partition (changelog kinds, "
    "null keys), holding it in memory up to 64 MiB and on local disk beyond, so a "
    "bad row fails the task before its first record. write_upsert checks in the "
    "shuffle's map stage instead, before any task writes, and turns this off.")


FLINK_DDL: Option[str | None] = Option(
    "flink.ddl", str, None,
    "A Flink CREATE TABLE statement (upsert-kafka, or kafka with a key format): its topic, "
    "primary key, formats and their options, properties.* and sink.* become this table's "
    "options; options given beside it win (as Flink's OPTIONS hint does). Reading without "
    ".schema(...) takes its physical columns.")


def with_flink_ddl(options: Mapping[str, Any]) -> tuple[dict[str, Any], RowType | None]:
    """The options with `flink.ddl` expanded into the options its statement gives (the
    explicit ones on top), so every later step sees plain options; and the physical columns
    the DDL declares (None: no DDL), with their lengths and TIME/TIMESTAMP precisions."""
    raw = {str(k): v for k, v in options.items()}
    ddl = raw.pop(FLINK_DDL.key, None)
    if ddl is None:
        return raw, None
    table = read_flink_ddl(str(ddl), FLINK_DDL.key)
    if table.producer_partitioner != "murmur2":
        raise InvalidOptionError(
            f"option '{FLINK_DDL.key}': sink.partitioner '{table.partitioner}' puts keys where "
            "the connector's producer (murmur2 of the key bytes) would not",
            hint="drop sink.partitioner from the DDL, or set it to 'default'")
    return {**table.connector_settings(), **raw}, table.columns


CONNECTOR_OPTIONS = OptionSet(
    "upsert-kafka",
    (
        FLINK_DDL, SINK_PARALLELISM, BUFFER_FLUSH_MAX_ROWS, BUFFER_FLUSH_INTERVAL, DELIVERY,
        PRODUCER_REUSE, TRANSACTIONAL_ID_PREFIX, ORDER_BY, SUMMARY_FILE, CHANGELOG_COLUMN,
        SCAN_MODE, CHANGELOG_UPDATE_BEFORE, SCAN_FOLD, CHECK_PARTITIONING, INCLUDE_HEADERS,
        CAPTURE_TIMEOUT,
        STALL_TIMEOUT, GUARD_REGISTRY, ALLOW_BREAKING, SCAN_LIMIT, REQUIRE_SUBJECT, GUARD_IGNORE,
        GUARD_RULES_OF,
        VALIDATE_PARTITION,
        *PRODUCER_TIMEOUTS,
    ),
    passthrough_prefixes=(PROPERTIES,),
)

# librdkafka settings the connector owns: giving them would silently break a guarantee.
_OWNED_PROPERTIES = {
    "partitioner": "records go to murmur2(key) % partitions, the partition Java and Flink "
                   "producers choose; the connector sets partitioner=murmur2_random itself",
    "transactional.id": "use sink.transactional-id-prefix (one transactional.id per task)",
    "key.serializer": "key.format chooses the key bytes",
    "value.serializer": "value.format chooses the value bytes",
}


@dataclass(frozen=True)
class ConnectorOptions:
    """The connector's resolved plan: every option validated once (table, formats, connector),
    the raw option map they came from, and the librdkafka settings. Frozen and picklable: the
    driver resolves it and hands it to the tasks, which validate nothing again."""

    raw: Mapping[str, str]
    resolved: PlanOptions
    #: librdkafka settings from properties.* (prefix removed), defaults not yet applied.
    properties: Mapping[str, str] = field(default_factory=dict)
    #: The physical columns a `flink.ddl` declares: the table written (None: the DataFrame's),
    #: with its lengths and TIME/TIMESTAMP precisions.
    declared: RowType | None = None

    @overload
    def __getitem__(self, key: Option[V]) -> V: ...
    @overload
    def __getitem__(self, key: str) -> Any: ...

    def __getitem__(self, key: str | Option[Any]) -> Any:
        return self.table[key]

    @property
    def table(self) -> ResolvedOptions:
        """The table's and the connector's options, typed."""
        return self.resolved.table

    @property
    def topic(self) -> str:
        return self[TOPIC]

    @property
    def bootstrap(self) -> str | None:
        value = self.properties.get("bootstrap.servers")
        return str(value) if value else None

    @property
    def producer_properties(self) -> dict[str, Any]:
        """librdkafka settings for the producer: properties.* with the declared timeouts (their
        defaults unless given)."""
        declared = {o.key[len(PROPERTIES):]: self[o] for o in PRODUCER_TIMEOUTS}
        return {**{k: v for k, v in declared.items() if v is not None}, **self.properties}

    @property
    def primary_key(self) -> tuple[str, ...]:
        return parse_primary_key(self[PRIMARY_KEY])

    @property
    def order_by(self) -> tuple[str, ...]:
        spec = self[ORDER_BY]
        return tuple(c.strip() for c in spec.split(",") if c.strip()) if spec else ()

    def secrets(self) -> list[str]:
        """Every secret value among the options, to scrub from error text."""
        found = [str(v) for k, v in (*self.raw.items(), *self.properties.items())
                 if v and is_secret_key(k)]
        return list(dict.fromkeys(found))

    def register_secrets(self) -> None:
        """In a task (which validates nothing): the credentials, before anything can print
        them (`keyguard.formats.secrets`), as validation registers them on the driver."""
        register_options(self.raw)
        register_options({PROPERTIES + k: v for k, v in self.properties.items()})


def normalize(options: Mapping[str, Any]) -> dict[str, str]:
    """Spark hands options case-insensitively (lower-cased keys); Flink's names are lower case.

    Values become strings, as Spark's option maps hold them.
    """
    out: dict[str, str] = {}
    for k, v in options.items():
        key = str(k)
        out[key] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def resolve_connector(options: Mapping[str, Any], *, require_bootstrap: bool = True
                      ) -> ConnectorOptions:
    """Validate table, format and connector options together, once; reject conflicts by name."""
    expanded, declared = with_flink_ddl(options)
    raw = normalize(expanded)
    resolved = resolve_options(raw, extra=CONNECTOR_OPTIONS)
    table = resolved.table
    given = {o.key[len(PROPERTIES):]: table[o] for o in PRODUCER_TIMEOUTS
             if any(k in raw for k in (o.key, *o.fallback_keys))}
    conn = ConnectorOptions(raw, resolved, resolve_kafka(  # the one settings path
        explicit={**table.with_prefix(PROPERTIES), **given}), declared)
    problems = list(_conflicts(conn, require_bootstrap))
    if problems:
        raise InvalidOptionError(
            f"upsert-kafka options of topic {conn.topic}: " + "; ".join(problems),
            hint="see the Spark options in the docs (docs/reference/spark-options.md)")
    return conn


def _conflicts(conn: ConnectorOptions, require_bootstrap: bool) -> list[str]:
    """Every option that conflicts with another, or with what the connector owns, named."""
    out = []
    if require_bootstrap and not conn.bootstrap:
        out.append("required option 'properties.bootstrap.servers' is missing")
    out += [f"'properties.{key}' is not allowed: {why}"
            for key, why in _OWNED_PROPERTIES.items() if key in conn.properties]
    return [*out, *_delivery_conflicts(conn), *_range_conflicts(conn),
            *_changelog_conflicts(conn)]


def _delivery_conflicts(conn: ConnectorOptions) -> list[str]:
    """The delivery guarantee against its transactional-id prefix and the producer's acks."""
    out = []
    props = conn.properties
    guarantee = conn[DELIVERY]
    prefix = conn[TRANSACTIONAL_ID_PREFIX]
    if guarantee == EXACTLY_ONCE and not (prefix and prefix.strip()):
        out.append("'sink.delivery-guarantee'=exactly-once needs 'sink.transactional-id-prefix'"
                   " (as in Flink)")
    if prefix and guarantee != EXACTLY_ONCE:
        out.append("'sink.transactional-id-prefix' is only used with "
                   "'sink.delivery-guarantee'=exactly-once")
    if guarantee == NONE:
        return out
    acks = str(props.get("acks", "all")).lower()
    if acks not in ("all", "-1"):
        out.append(f"'properties.acks'={acks} conflicts with {guarantee}: it needs acks=all")
    if str(props.get("enable.idempotence", "true")).lower() == "false":
        out.append(f"'properties.enable.idempotence'=false conflicts with {guarantee}")
    return out


def _range_conflicts(conn: ConnectorOptions) -> list[str]:
    """Counts and durations out of range, and buffering half turned on."""
    out = []
    parallelism = conn[SINK_PARALLELISM]
    if parallelism is not None and parallelism < 1:
        out.append(f"'{SINK_PARALLELISM.key}' must be at least 1, got {parallelism}")
    out += [f"'{o.key}' must be at least 1 (milliseconds), got {conn[o]}"
            for o in PRODUCER_TIMEOUTS if conn[o] < 1]
    out += [f"'{count.key}' must not be negative, got {conn[count]}"
            for count in (BUFFER_FLUSH_MAX_ROWS, BUFFER_FLUSH_INTERVAL, SCAN_LIMIT)
            if conn[count] < 0]
    if (conn[BUFFER_FLUSH_MAX_ROWS] > 0) != (conn[BUFFER_FLUSH_INTERVAL] > 0):
        out.append("'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval' must both be "
                   "> 0 to buffer, or both 0 (Flink's rule)")
    return out


def _changelog_conflicts(conn: ConnectorOptions) -> list[str]:
    """The changelog column cannot be a key column, nor order the changes."""
    changelog = conn[CHANGELOG_COLUMN]
    if not changelog:
        return []
    out = []
    if changelog in conn.primary_key:
        out.append(f"'changelog.column'={changelog} is a primary-key column")
    if changelog in conn.order_by:
        out.append(f"'changelog.column'={changelog} cannot order the changes (sink.order-by)")
    return out


def markdown_table() -> str:
    """Every option of the connector (table and connector), for the docs' Spark options page."""
    return OptionSet("upsert-kafka", TABLE_OPTIONS.options + CONNECTOR_OPTIONS.options
                     ).markdown_table() + (
        "\n| `properties.*` | string | | librdkafka producer/consumer settings, e.g. "
        "`properties.bootstrap.servers` (required), `properties.security.protocol`, "
        "`properties.sasl.*`, `properties.ssl.*`. |\n"
        "| `key.<format>.*`, `value.<format>.*` | | | The key and value formats' own options "
        "(`key.json.ignore-parse-errors`, `value.avro-confluent.url`, ...). |")
