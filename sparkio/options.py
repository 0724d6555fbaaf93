"""The `upsert-kafka` connector's own options, declared once (Flink's names where it has one).

`formats.plan.TABLE_OPTIONS` declares the table options (topic, primary-key, key.format, ...);
`CONNECTOR_OPTIONS` here adds the sink, scan and guard options, and `properties.*` passes
through to librdkafka. `resolve_connector` validates all of them in one pass (via
`resolve_plan(..., extra=CONNECTOR_OPTIONS)`), then checks the combinations Flink rejects too,
so an unknown or conflicting option fails before Spark runs anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from formats.errors import InvalidOptionError
from formats.options import Option, OptionSet, ResolvedOptions, duration_option
from formats.plan import TABLE_OPTIONS, split_options
from formats.secrets import is_secret_key
from guard.selection import selectors

NONE = "none"
AT_LEAST_ONCE = "at-least-once"
EXACTLY_ONCE = "exactly-once"

CHANGELOG = "changelog"
TABLE = "table"
#: scan.fold: per Kafka partition, or all partitions in one task.
PARTITION = "partition"
GLOBAL = "global"

PROPERTIES = "properties."

#: librdkafka timeouts the connector sets lower than librdkafka's defaults (300 s message
#: timeout, 30 s connection setup), so a dead broker fails a task in well under a minute; a
#: healthy broker acknowledges in milliseconds to seconds. Declared here so they are validated,
#: documented and overridable as `properties.*`.
MESSAGE_TIMEOUT = "properties.message.timeout.ms"
PRODUCER_TIMEOUTS = (
    Option(MESSAGE_TIMEOUT, int, 30_000,
           "librdkafka's delivery timeout (alias properties.delivery.timeout.ms): how long a "
           "record may wait for its acknowledgement before the task fails with the records "
           "not delivered. librdkafka's default is 300000 (5 minutes per task with a dead "
           "broker); raise it for brokers that stall longer, e.g. during long leader elections.",
           fallback_keys=("properties.delivery.timeout.ms",)),
    Option("properties.socket.connection.setup.timeout.ms", int, 10_000,
           "How long connecting to a broker (TCP and TLS/SASL handshake) may take "
           "(librdkafka: 30000)."),
)

def _rule_names(raw: str) -> str:
    """guard.ignore: every name a known rule ID or category; canonical, comma-separated."""
    try:
        return ",".join(s.token for s in selectors(raw, where="guard.ignore"))
    except InvalidOptionError as exc:
        raise ValueError(str(exc)) from None


CONNECTOR_OPTIONS = OptionSet(
    "upsert-kafka",
    (
        Option("sink.parallelism", int, None,
               "Tasks that produce: the DataFrame is repartitioned by the primary key into this "
               "many partitions (write_upsert, serialize, prepare). Default: Spark's default "
               "parallelism; under Spark Connect spark.default.parallelism if the server sets "
               "it, else spark.sql.shuffle.partitions as coalesced by adaptive execution."),
        Option("sink.buffer-flush.max-rows", int, 0,
               "Rows buffered per task before a flush; the buffer keeps only the last change of "
               "each key. Buffering is on when this and sink.buffer-flush.interval are both > 0."),
        duration_option("sink.buffer-flush.interval", 0,
                        "Longest time a change waits in the buffer (e.g. 1s); 0 turns buffering "
                        "off."),
        Option("sink.delivery-guarantee", str, AT_LEAST_ONCE,
               "none: fire and forget (acks=1, no idempotence); at-least-once: acks=all, "
               "idempotent producer, every delivery report checked, a failed task is retried "
               "whole; exactly-once: additionally one Kafka transaction per task.",
               choices=(NONE, AT_LEAST_ONCE, EXACTLY_ONCE)),
        Option("sink.transactional-id-prefix", str, None,
               "Prefix of the transactional.id of each task (prefix-<partition id>); required "
               "with exactly-once, and unique per job writing concurrently."),
        Option("sink.order-by", str, None,
               "Comma-separated columns ordering the changes of one key (e.g. an event time or "
               "a sequence number). Default: the DataFrame's input order."),
        Option("sink.summary-file", str, None,
               "A local path where the write's WriteSummary is written as JSON when it "
               "commits: on the Spark driver host for format(\"upsert-kafka\") writes, in "
               "the caller's process for write_upsert (which also returns it)."),
        Option("changelog.column", str, None,
               "A string column holding +I, +U, -U or -D for each row. +I/+U write key and "
               "value, -D a tombstone, -U nothing. Absent: every row is an upsert. On read "
               "with scan.mode=changelog: the name of the column that carries the kind "
               "(default op)."),
        Option("scan.mode", str, TABLE,
               "Reading: table (the last value per key, tombstones removed: the KTable view) "
               "or changelog (Flink's normalized change rows +I, +U, -D; -U too with "
               "changelog.update-before).",
               choices=(TABLE, CHANGELOG)),
        Option("changelog.update-before", bool, False,
               "Reading in changelog mode: emit -U with the previous values before every +U."),
        Option("scan.fold", str, PARTITION,
               "Reading: partition folds each Kafka partition in its own task (a key's records "
               "share a partition under murmur2); global folds all partitions in one task, "
               "the later record timestamp winning across partitions.",
               choices=(PARTITION, GLOBAL)),
        Option("scan.check-partitioning", bool, True,
               "Reading with scan.fold=partition: fail when a key sits on another partition "
               "than murmur2 gives (another partitioner, added partitions), since the fold "
               "would miss duplicates."),
        duration_option("scan.capture-timeout", 30_000,
                        "Reading: how long the driver waits for each partition's end offset."),
        duration_option("scan.stall-timeout", 60_000,
                        "Reading: how long a task waits without progress before its end offset."),
        Option("guard.registry", str, None,
               "Where the registered key (and value) schemas live: http(s)://, file://DIR, "
               "mock://NAME. Default: key.avro-confluent.url, else value.avro-confluent.url. "
               "With a json/csv/raw key the key's JSON Schema is registered here after each "
               "successful write, so the next write is checked against it."),
        Option("guard.allow-breaking", bool, False,
               "Write even when the guard finds a breaking key or value change; the report is "
               "logged at WARNING. For deliberate migrations only."),
        Option("guard.scan-limit", int, 10_000,
               "Keys read from the topic to find the schema ids its keys carry (0: no scan)."),
        Option("guard.require-subject", bool, False,
               "Block the write when the key (or value) subject has no versions (KG015) "
               "instead of treating it as a first registration: for topics in production."),
        Option("guard.ignore", str, None,
               "Rule IDs or categories, comma-separated (KG701,key-placement), whose findings "
               "do not count: they neither block the write nor warn, and the logged report "
               "says what they hid. `keyguard rules` lists them; a retired ID still works.",
               parser=_rule_names),
        Option("sink.validate-partition", bool, True,
               "Before producing, each write task checks its whole partition (changelog kinds, "
               "null keys), holding it in memory up to 64 MiB and on local disk beyond, so a "
               "bad row fails the task before its first record. write_upsert checks in the "
               "shuffle's map stage instead, before any task writes, and turns this off."),
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
    """Validated connector options, and the raw option map they came from (for the tasks)."""

    raw: Mapping[str, str]
    table: ResolvedOptions
    #: librdkafka settings from properties.* (prefix removed), defaults not yet applied.
    properties: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.table[key]

    @property
    def topic(self) -> str:
        return str(self.table["topic"])

    @property
    def bootstrap(self) -> str | None:
        value = self.properties.get("bootstrap.servers")
        return str(value) if value else None

    @property
    def producer_properties(self) -> dict[str, Any]:
        """librdkafka settings for the producer: properties.* with the declared timeouts (their
        defaults unless given)."""
        declared = {o.key[len(PROPERTIES):]: self.table[o.key] for o in PRODUCER_TIMEOUTS}
        return {**{k: v for k, v in declared.items() if v is not None}, **self.properties}

    @property
    def buffering(self) -> bool:
        """Flink's rule: the buffer is on only when both flush settings are positive."""
        return self["sink.buffer-flush.max-rows"] > 0 and self["sink.buffer-flush.interval"] > 0

    @property
    def primary_key(self) -> tuple[str, ...]:
        from formats.projection import parse_primary_key

        return parse_primary_key(self["primary-key"])

    @property
    def order_by(self) -> tuple[str, ...]:
        spec = self["sink.order-by"]
        return tuple(c.strip() for c in spec.split(",") if c.strip()) if spec else ()

    def secrets(self) -> list[str]:
        """Every secret value among the options, to scrub from error text."""
        found = [str(v) for k, v in (*self.raw.items(), *self.properties.items())
                 if v and is_secret_key(k)]
        return list(dict.fromkeys(found))


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
    """Validate table, format and connector options together; reject conflicts by name."""
    raw = normalize(options)
    table, _, _ = split_options(raw, extra=CONNECTOR_OPTIONS)
    from formats.registry.settings import resolve_kafka  # the one settings path

    given = {o.key[len(PROPERTIES):]: table[o.key] for o in PRODUCER_TIMEOUTS
             if any(k in raw for k in (o.key, *o.fallback_keys))}
    conn = ConnectorOptions(raw, table, resolve_kafka(
        explicit={**table.with_prefix(PROPERTIES), **given}))
    problems = list(_conflicts(conn, require_bootstrap))
    if problems:
        raise InvalidOptionError(
            f"upsert-kafka options of topic {conn.topic}: " + "; ".join(problems),
            hint="see the option table in the README (sparkio)")
    return conn


def _conflicts(conn: ConnectorOptions, require_bootstrap: bool) -> list[str]:
    out = []
    props = conn.properties
    if require_bootstrap and not conn.bootstrap:
        out.append("required option 'properties.bootstrap.servers' is missing")
    for key, why in _OWNED_PROPERTIES.items():
        if key in props:
            out.append(f"'properties.{key}' is not allowed: {why}")
    guarantee = conn["sink.delivery-guarantee"]
    prefix = conn["sink.transactional-id-prefix"]
    if guarantee == EXACTLY_ONCE and not (prefix and prefix.strip()):
        out.append("'sink.delivery-guarantee'=exactly-once needs 'sink.transactional-id-prefix'"
                   " (as in Flink)")
    if prefix and guarantee != EXACTLY_ONCE:
        out.append("'sink.transactional-id-prefix' is only used with "
                   "'sink.delivery-guarantee'=exactly-once")
    if guarantee != NONE:
        acks = str(props.get("acks", "all")).lower()
        if acks not in ("all", "-1"):
            out.append(f"'properties.acks'={acks} conflicts with {guarantee}: "
                       "it needs acks=all")
        if str(props.get("enable.idempotence", "true")).lower() == "false":
            out.append(f"'properties.enable.idempotence'=false conflicts with {guarantee}")
    for key in ("sink.parallelism",):
        value = conn[key]
        if value is not None and value < 1:
            out.append(f"'{key}' must be at least 1, got {value}")
    for o in PRODUCER_TIMEOUTS:
        if conn[o.key] < 1:
            out.append(f"'{o.key}' must be at least 1 (milliseconds), got {conn[o.key]}")
    for key in ("sink.buffer-flush.max-rows", "sink.buffer-flush.interval", "guard.scan-limit"):
        if conn[key] < 0:
            out.append(f"'{key}' must not be negative, got {conn[key]}")
    if (conn["sink.buffer-flush.max-rows"] > 0) != (conn["sink.buffer-flush.interval"] > 0):
        out.append("'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval' must both be "
                   "> 0 to buffer, or both 0 (Flink's rule)")
    changelog, order = conn["changelog.column"], conn.order_by
    if changelog and changelog in conn.primary_key:
        out.append(f"'changelog.column'={changelog} is a primary-key column")
    if changelog and changelog in order:
        out.append(f"'changelog.column'={changelog} cannot order the changes (sink.order-by)")
    return out


def markdown_table() -> str:
    """Every option of the connector (table and connector), for the README."""
    return OptionSet("upsert-kafka", TABLE_OPTIONS.options + CONNECTOR_OPTIONS.options
                     ).markdown_table() + (
        "\n| `properties.*` | string | | librdkafka producer/consumer settings, e.g. "
        "`properties.bootstrap.servers` (required), `properties.security.protocol`, "
        "`properties.sasl.*`, `properties.ssl.*`. |\n"
        "| `key.<format>.*`, `value.<format>.*` | | | The key and value formats' own options "
        "(`key.json.ignore-parse-errors`, `value.avro-confluent.url`, ...). |")
