"""`spark.read.format("upsert-kafka")`: an upsert topic as a table, or as its changelog.

The plan is the writer's (`keyguard.formats.plan.resolve_plan` with the same options), so a topic
reads back with the codecs that wrote it. The driver captures each partition's end offset once
(`keyguard.guard.offsets`); one Spark task per Kafka partition reads from the beginning up to it, so
a read ends while producers keep writing, and yields Arrow record batches.

Two views (`scan.mode`):

- `table` (default): the last value per key, tombstones removed: the KTable, what a
  compacted topic converges to.
- `changelog`: the change rows Flink's upsert-kafka source produces after its normalization
  (`ChangelogNormalize`, `DeduplicateFunctionHelper.processLastRowOnChangelog`), with the kind
  in a string column (`changelog.column`, default `op`): the first value of a key is `+I`, a
  later different value `+U` (an identical one is dropped), a tombstone `-D` carrying the
  deleted row's last values (a tombstone for a key not present is dropped). With
  `changelog.update-before=true` every `+U` is preceded by `-U` with the previous values, as
  Flink emits for consumers that need retractions. Flink's source itself tags records INSERT,
  or DELETE when the value is null, and its planner always adds that normalization, since
  the source's upsert changelog carries no UPDATE_BEFORE.

Both folds key on the decoded primary key (as Flink's state does), and run per Kafka
partition inside a task (`scan.fold=partition`): Kafka's default partitioner (murmur2, also
Flink's and Java's) puts all records with the same key bytes on one partition. Keys written with
another partitioner, or before partitions were added, or whose bytes changed (a new key
schema id) can sit on several partitions, and a per-partition fold would then keep one row
per partition. Each key's partition is checked against murmur2 (`scan.check-partitioning`),
which catches the first two; a changed key encoding is what the guard exists to prevent.
`scan.fold=global` folds across partitions in one task: within a partition offset order
decides; across partitions the later record timestamp (then the higher partition) wins.

A per-partition table read (`fold_table`) folds by key bytes first, as records arrive (memory:
the partition's live table), decodes only the survivors column-wise (`Codec.decode_batch`),
folds those by decoded key, and yields Arrow columns; the result is `table(decode_events(...))`
row for row (tests/sparkio/test_reader_fold.py). The changelog and the global fold decode
record by record (`decode_events`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from keyguard.formats.avro_confluent_format import SUBJECT, SUBJECT_STRATEGY, URL
from keyguard.formats.avro_schema import from_avro_schema
from keyguard.formats.codec import BatchDecodeError, DecodedColumns
from keyguard.formats.errors import DecodeError, InvalidOptionError, KeyguardError, SchemaError
from keyguard.formats.flink_ddl import read_flink_ddl
from keyguard.formats.options import OptionSet
from keyguard.formats.partitioner import partitions_for
from keyguard.formats.plan import (
    KEY_FIELDS_PREFIX,
    PRIMARY_KEY,
    TOPIC,
    VALUE_FIELDS_INCLUDE,
    FormatOptions,
    PlanOptions,
    PlanSpec,
    UpsertPlan,
    resolve_options,
)
from keyguard.formats.projection import ALL, parse_primary_key, project
from keyguard.formats.registry.connect import open_for
from keyguard.formats.registry.registration import open_plan_registries
from keyguard.formats.schemafile import version_text
from keyguard.formats.spark_schema import (
    from_spark_schema,
    to_spark_schema,
    with_declared,
)
from keyguard.formats.subjects import TOPIC_NAME, qualified
from keyguard.formats.types import ArrayType, DataType, Field, MapType, RowType
from keyguard.guard.offsets import KafkaRanges, OffsetRange, Record, RecordColumns
from keyguard.sparkio.headers import (
    HEADERS_COLUMN,
    Headers,
    is_headers_field,
    spark_field,
    to_rows,
)
from keyguard.sparkio.options import (
    CAPTURE_TIMEOUT,
    CHANGELOG,
    CHANGELOG_COLUMN,
    CHANGELOG_UPDATE_BEFORE,
    CHECK_PARTITIONING,
    CONNECTOR_OPTIONS,
    FLINK_DDL,
    GLOBAL,
    INCLUDE_HEADERS,
    PARTITION,
    PROPERTIES,
    SCAN_FOLD,
    SCAN_MODE,
    STALL_TIMEOUT,
    ScanFold,
    ScanMode,
    with_flink_ddl,
)
from keyguard.sparkio.schema_ids import (
    PinnedRegistry,
    pinned_references,
    reads_headers,
    registry_factories,
    resolve_read_schemas,
)
from keyguard.sparkio.workers import for_spark

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = "+I", "-U", "+U", "-D"

_BATCH_ROWS = 4096
#: Rows per Arrow batch handed to Spark from a column-wise fold.
_COLUMN_BATCH_ROWS = 65_536


def connector_options() -> OptionSet:
    """The connector's one option set: the writer's options are accepted on reads too, so one
    options dict serves both, as a Flink table's DDL does."""
    return CONNECTOR_OPTIONS


@dataclass(frozen=True)
class ReadSettings:
    """The reader's options, validated once (table, formats, connector): everything a task
    needs, picklable."""

    options: Mapping[str, Any]
    topic: str
    bootstrap: str
    properties: Mapping[str, Any]
    mode: ScanMode
    op_column: str
    update_before: bool
    fold: ScanFold
    check_partitioning: bool
    capture_timeout_s: float
    stall_timeout_s: float
    #: Every option as validated: the plan's codecs are built from these, not re-validated.
    plan_options: PlanOptions
    #: scan.include-headers: a `headers` column (`keyguard.sparkio.headers`).
    include_headers: bool = False
    #: The physical columns a `flink.ddl` declares (None without one): their precisions.
    declared: RowType | None = None

    @staticmethod
    def of(options: Mapping[str, Any]) -> ReadSettings:
        raw, declared = with_flink_ddl(options)
        plan_options = resolve_options(raw, extra=connector_options())
        resolved = plan_options.table
        props = {k[len(PROPERTIES):]: v for k, v in raw.items() if k.startswith(PROPERTIES)}
        bootstrap = props.pop("bootstrap.servers", None)
        if not bootstrap:
            raise InvalidOptionError(
                "required option 'properties.bootstrap.servers' is missing",
                hint="set it to the Kafka brokers, e.g. .option('properties.bootstrap.servers', "
                     "'broker:9092')")
        return ReadSettings(
            options=raw,
            topic=resolved[TOPIC],
            bootstrap=str(bootstrap),
            properties=props,
            mode=resolved[SCAN_MODE],
            op_column=resolved[CHANGELOG_COLUMN] or "op",
            update_before=resolved[CHANGELOG_UPDATE_BEFORE],
            fold=resolved[SCAN_FOLD],
            check_partitioning=resolved[CHECK_PARTITIONING],
            capture_timeout_s=resolved[CAPTURE_TIMEOUT] / 1000,
            stall_timeout_s=resolved[STALL_TIMEOUT] / 1000,
            plan_options=plan_options,
            include_headers=resolved[INCLUDE_HEADERS],
            declared=declared,
        )

    def kafka(self) -> KafkaRanges:
        return KafkaRanges(self.bootstrap, self.properties, timeout_s=self.capture_timeout_s,
                           stall_timeout_s=self.stall_timeout_s)


# --------------------------------------------------------------------------------------------
# Schema inference
# --------------------------------------------------------------------------------------------


def infer_schema(options: Mapping[str, Any]) -> StructType:
    """The output schema when the user gives none: a Flink DDL's columns, or the registered
    schemas.

    Only the registry formats (avro-confluent, json-registry,
    protobuf-registry) carry their schema; the table is
    the value's fields plus the key's fields not in the value (named with key.fields-prefix),
    and in changelog mode the change-kind column first. Other formats need `.schema(...)` (or
    `flink.ddl`).
    """
    settings = ReadSettings.of(options)
    ddl = options.get(FLINK_DDL.key)
    if ddl is not None:  # the table as Flink declares it: its physical columns
        return _with_op_column(
            to_spark_schema(read_flink_ddl(str(ddl), FLINK_DDL.key).columns),
            settings)
    plan_options = settings.plan_options
    resolved = plan_options.table
    prefix = resolved[KEY_FIELDS_PREFIX]
    include = resolved[VALUE_FIELDS_INCLUDE]
    value = _registered_row(plan_options.value, settings.topic, "value")
    key = _registered_row(plan_options.key, settings.topic, "key")
    pk = list(parse_primary_key(resolved[PRIMARY_KEY]))
    if value is None or (key is None and not (include == ALL and all(
            c in value.names for c in pk))):
        missing = [r for r, row in (("value", value), ("key", key)) if row is None]
        fmts = {"key": plan_options.key.name, "value": plan_options.value.name}
        raise SchemaError(
            f"cannot infer the schema of topic {settings.topic!r}: the "
            + " and ".join(f"{r} format {fmts[r]!r}" for r in missing)
            + " carries no schema (only the registry formats do, through their registry)",
            hint="give the table's columns with spark.read.format('upsert-kafka')"
                 ".schema('id BIGINT, name STRING, ...'), the same columns the writer wrote")
    fields = list(value.fields)
    if key is not None:
        names = {f.name for f in fields}
        fields += [Field(prefix + f.name, f.type, f.description) for f in key.fields
                   if prefix + f.name not in names]
    layout = project(RowType(fields=tuple(fields), nullable=False), pk, key_fields_prefix=prefix,
                     value_fields_include=include)
    return _with_op_column(to_spark_schema(layout.table), settings)


def _with_op_column(schema: StructType, settings: ReadSettings) -> StructType:
    """In changelog mode, the change-kind column first; with scan.include-headers, the
    records' headers last."""
    from pyspark.sql import types as T  # lazy: pyspark.sql.types on use

    if settings.include_headers:
        if HEADERS_COLUMN in schema.fieldNames():
            raise SchemaError(
                f"scan.include-headers adds a column {HEADERS_COLUMN!r}, which is also a "
                f"column of topic {settings.topic!r}",
                hint="give .schema(...) with the table's columns and the headers column")
        schema = T.StructType([*schema.fields, spark_field()])
    if settings.mode == CHANGELOG:
        if settings.op_column in schema.fieldNames():
            raise SchemaError(
                f"changelog.column {settings.op_column!r} is also a column of topic "
                f"{settings.topic!r}", hint="set changelog.column to another name")
        schema = T.StructType([T.StructField(settings.op_column, T.StringType(), False),
                               *schema.fields])
    return schema


def _registered_row(fmt: FormatOptions, topic: str, role: str) -> RowType | None:
    """The row type of the latest schema registered for `role` (an Avro record, a JSON Schema
    object, a Protobuf file's first message); None for a format that registers none
    (`FormatFactory.uses_registry`)."""
    if not fmt.factory.uses_registry:
        return None
    where = f"{role} format '{fmt.name}'"
    opts = fmt.resolved
    if not opts[URL]:
        raise InvalidOptionError(f"{where}: required option 'url' is missing",
                                 hint="set url to the schema registry, e.g. http://host:8081")
    subject = opts[SUBJECT]
    if not subject:
        if opts[SUBJECT_STRATEGY] != TOPIC_NAME:
            raise InvalidOptionError(
                f"{where}: the subject of a {opts[SUBJECT_STRATEGY]} cannot be known "
                "before reading a record",
                hint=f"set {role}.{fmt.name}.subject, or give .schema(...)")
        subject = f"{topic}-{role}"
    subject = qualified(str(subject), opts.get("schema-context"))  # json-registry's context
    registry = open_for(opts, lazy=False)
    try:
        latest = registry.get_version(subject, "latest")
        text = version_text(registry, latest)  # its references resolved into it
    except KeyguardError as exc:
        raise type(exc)(f"{where}: latest schema of subject {subject!r}: {exc.message}",
                        hint=exc.hint or "has the writer registered it yet?") from None
    if text.schema_type != fmt.factory.schema_type:
        raise SchemaError(
            f"{where}: subject {subject!r} holds a {text.schema_type} schema, not "
            f"{fmt.factory.schema_type}", hint="check the format, or give .schema(...)")
    if fmt.factory.writes_avro:  # Flink's Avro -> row mapping, as the writer derived it
        row = from_avro_schema(text.standalone)
    else:
        try:
            row = text.row_type()
        except SchemaError as exc:
            raise SchemaError(f"{where}: subject {subject!r}: {exc.message}",
                              hint="give the table's columns with .schema(...)") from None
    if not isinstance(row, RowType):
        raise SchemaError(
            f"{where}: subject {subject!r} holds a {row.sql()} schema, not a record",
            hint="give the table's columns with .schema(...)")
    return row


# --------------------------------------------------------------------------------------------
# The pure core: records -> (key, row) events -> changelog or table
# --------------------------------------------------------------------------------------------

Event = tuple[Any, "dict[str, Any] | None", Record]  # (hashable key, row or None, record)


def decode_events(plan: UpsertPlan, records: Iterable[Record]) -> Iterator[Event]:
    """Decoded records, in order; a null value is a tombstone (row None).

    Records Flink's source would drop are dropped: a null key, and a key or value that a
    format's ignore-parse-errors skipped. Errors name the topic, partition and offset.
    """
    layout = plan.layout
    key_names = layout.key_type.names
    for rec in records:
        if rec.key is None:
            continue
        try:  # the headers: where a header framing carries the schema id
            key_row = plan.key_codec.decode_record(rec.key, rec.headers)
            value_row = None if rec.value is None else \
                plan.value_codec.decode_record(rec.value, rec.headers)
        except Exception as exc:
            raise _located(plan, rec.partition, rec.offset, exc) from None
        if key_row is None or (rec.value is not None and value_row is None):
            continue
        key = hashable(tuple(key_row.get(name) for name in key_names))
        yield key, None if value_row is None else layout.table_row(key_row, value_row), rec


def _located(plan: UpsertPlan, partition: int, offset: int, exc: BaseException) -> Exception:
    """A decoding error naming the topic, partition and offset of its record."""
    where = f"topic {plan.topic!r} partition {partition} offset {offset}"
    if isinstance(exc, KeyguardError):
        return type(exc)(f"{where}: {exc.message}", hint=exc.hint)
    return DecodeError(f"{where}: {type(exc).__name__}: {exc}",
                       hint="check key.format/value.format and the schema")


def last_per_key_bytes(batches: Iterable[RecordColumns],
                       ) -> tuple[list[int], list[bytes], list[bytes | None], list[Headers] | None]:
    """The last record of every key's exact bytes, in offset order: (offsets, keys, values,
    headers; None when the batches carry none).

    Equal key bytes are an equal key, so this cheap fold (a dict of bytes, filled in C) loses
    nothing a fold by decoded key keeps; what it holds is the live table (and the tombstones
    of the partition, which may still delete a key written with other bytes).
    """
    live: dict[bytes | None, tuple[Any, ...]] = {}
    with_headers = False
    for b in batches:
        with_headers = b.headers is not None
        records = zip(b.offsets, b.values, b.headers, strict=True) if b.headers is not None \
            else zip(b.offsets, b.values, strict=True)
        live.update(zip(b.keys, records, strict=True))
    live.pop(None, None)  # no key: dropped, as Flink's source does
    keys: list[bytes] = list(live)  # type: ignore[arg-type]
    kept = list(live.values())
    del live
    offsets = [r[0] for r in kept]
    values = [r[1] for r in kept]
    headers = [r[2] for r in kept] if with_headers else None
    import numpy as np  # lazy: numpy inside a task only

    at = np.array(offsets, dtype=np.int64)
    if len(at) > 1 and bool((at[1:] < at[:-1]).any()):  # a key written again: reorder
        order = np.argsort(at, kind="stable").tolist()
        offsets = [offsets[i] for i in order]
        keys = [keys[i] for i in order]
        values = [values[i] for i in order]
        headers = None if headers is None else [headers[i] for i in order]
    return offsets, keys, values, headers


def fold_table(plan: UpsertPlan, partition: int, batches: Iterable[RecordColumns],
               ) -> dict[str, Sequence[Any]] | None:
    """`_fold_table` with the cyclic garbage collector paused: decoding a partition makes
    millions of short-lived objects and no cycles, and each collection would walk the live
    table again (a third of the decoding time at 200k records)."""
    import gc

    paused = gc.isenabled()
    gc.disable()
    try:
        return _fold_table(plan, partition, batches)
    finally:
        if paused:
            gc.enable()


def _fold_table(plan: UpsertPlan, partition: int, batches: Iterable[RecordColumns],
                ) -> dict[str, Sequence[Any]] | None:
    """The table of one partition, column-wise: `table(decode_events(...))` without the
    tombstones, in the same order, decoding only the survivors of a fold by key bytes.

    The survivors are decoded column-wise (`Codec.decode_batch`) and folded again by decoded
    key, so a key written with two byte encodings still keeps only its last record. None when
    a format skipped a survivor (ignore-parse-errors): an earlier record of that key would
    then count, so the caller folds the partition record by record instead. A record the fold
    by bytes drops is never decoded: a bad record later rewritten does not fail the read.
    """
    offsets, keys, values, headers = last_per_key_bytes(batches)
    layout = plan.layout
    try:
        key_cols = plan.key_codec.decode_batch(keys, headers=headers)
    except BatchDecodeError as exc:
        raise _located(plan, partition, offsets[exc.index], exc.error) from None
    if key_cols.skipped:
        return None
    n = len(keys)
    del keys
    decoded_keys = list(zip(*(_hashable_column(key_cols.column(f.name), f.type)
                              for f in layout.key_type.fields), strict=True))
    last = dict(zip(decoded_keys, range(n), strict=True))
    winners: list[int] | range = range(n) if len(last) == n else sorted(last.values())
    del decoded_keys, last
    if None in values:
        winners = [i for i in winners if values[i] is not None]
    # Every record is a survivor with a value (no tombstone, no phantom): all of them.
    bodies = values if isinstance(winners, range) else [values[i] for i in winners]
    if headers is not None and not isinstance(winners, range):
        headers = [headers[i] for i in winners]
    try:
        value_cols = plan.value_codec.decode_batch(bodies,  # type: ignore[arg-type]
                                                   headers=headers)
    except BatchDecodeError as exc:
        raise _located(plan, partition, offsets[winners[exc.index]], exc.error) from None
    if value_cols.skipped:
        return None
    prefix = layout.key_fields_prefix
    value_names = set(layout.value_columns)
    out: dict[str, Sequence[Any]] = {}
    for f in layout.table.fields:
        if f.name in layout.primary_key:
            out[f.name] = _take(key_cols, f.name[len(prefix):], winners)
        elif f.name in value_names:
            out[f.name] = value_cols.columns[f.name]
        else:
            out[f.name] = [None] * len(winners)
    return out


def _take(cols: DecodedColumns, name: str, rows: list[int] | range) -> Sequence[Any]:
    col = cols.columns[name]
    if isinstance(rows, range) and len(rows) == cols.length:
        return col
    if isinstance(col, list):
        return [col[i] for i in rows]
    import pyarrow as pa  # lazy: pyarrow inside a task only

    return col.take(pa.array(rows, pa.int64()))  # type: ignore[attr-defined,no-any-return]


def _hashable_column(values: list[Any], t: DataType) -> list[Any]:
    """A key column's values as dict keys: ROWs, ARRAYs and MAPs made hashable."""
    if isinstance(t, (RowType, ArrayType, MapType)):
        return [hashable(v) for v in values]
    return values


def hashable(v: Any) -> Any:
    """A dict key for decoded values (ROWs are dicts, ARRAYs lists)."""
    if isinstance(v, dict):
        return tuple((k, hashable(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return tuple(hashable(x) for x in v)
    return v


def changelog(events: Iterable[Event], *, update_before: bool = False,
              ) -> Iterator[tuple[str, dict[str, Any]]]:
    """Flink's ChangelogNormalize over an upsert stream (processLastRowOnChangelog)."""
    return ((kind, row) for kind, row, _ in changes(events, update_before=update_before))


def changes(events: Iterable[Event], *, update_before: bool = False,
            ) -> Iterator[tuple[str, dict[str, Any], Headers]]:
    """`changelog`, each change with the headers of the record that made it (a -U: of the
    record whose values it retracts). Headers are no part of a row: a value written again
    with other headers is no change."""
    state: dict[Any, tuple[dict[str, Any], Headers]] = {}
    for key, row, rec in events:
        prev = state.get(key)
        if row is None:
            if prev is not None:
                del state[key]
                yield DELETE, prev[0], rec.headers
        elif prev is None:
            state[key] = (row, rec.headers)
            yield INSERT, row, rec.headers
        elif prev[0] != row:
            state[key] = (row, rec.headers)
            if update_before:
                yield UPDATE_BEFORE, prev[0], prev[1]
            yield UPDATE_AFTER, row, rec.headers


def table(events: Iterable[Event]) -> dict[Any, tuple[Record, dict[str, Any] | None]]:
    """The last record of every key, tombstones kept (None) so a global fold can use them."""
    last: dict[Any, tuple[Record, dict[str, Any] | None]] = {}
    for key, row, rec in events:
        last.pop(key, None)  # keeps the dict in last-write order
        last[key] = (rec, row)
    return last


def merge_tables(tables: Sequence[dict[Any, tuple[Record, dict[str, Any] | None]]],
                 ) -> Iterator[dict[str, Any]]:
    """Across partitions, the later record timestamp (then the higher partition) wins."""
    return (row for _, row in winners(tables).values() if row is not None)


def winners(tables: Sequence[dict[Any, tuple[Record, dict[str, Any] | None]]],
            ) -> dict[Any, tuple[Record, dict[str, Any] | None]]:
    """`merge_tables`' winning record and row of every key, tombstones kept (None)."""
    won: dict[Any, tuple[Record, dict[str, Any] | None]] = {}
    for t in tables:
        for key, (rec, row) in t.items():
            best = won.get(key)
            if best is None or (rec.timestamp, rec.partition) >= (best[0].timestamp,
                                                                 best[0].partition):
                won[key] = (rec, row)
    return won


def merge_events(streams: Sequence[list[Event]]) -> Iterator[Event]:
    """Partitions interleaved by record timestamp, each partition kept in offset order."""
    return heapq.merge(*streams, key=lambda e: e[2].timestamp)


def check_partitioning(batch: Sequence[Record], num_partitions: int, topic: str) -> None:
    """Every key on the partition murmur2 gives it, else a per-partition fold is unsound."""
    for partition in sorted({r.partition for r in batch}):
        recs = [r for r in batch if r.partition == partition]
        check_key_partitions(RecordColumns(partition, [r.offset for r in recs],
                                           [r.timestamp for r in recs], [r.key for r in recs],
                                           [r.value for r in recs]), num_partitions, topic)


def check_key_partitions(batch: RecordColumns, num_partitions: int, topic: str) -> None:
    """`check_partitioning` of one partition's records, column-wise."""
    if num_partitions <= 1:
        return
    keys = batch.keys
    if None in keys:
        at = [i for i, k in enumerate(keys) if k is not None]
        keyed = [keys[i] for i in at]
    else:
        at, keyed = None, keys
    if not keyed:
        return
    expected = partitions_for(keyed, num_partitions)  # type: ignore[arg-type]
    wrong = (expected != batch.partition).nonzero()[0]
    if len(wrong):
        i = int(wrong[0])
        want = int(expected[i])
        offset = batch.offsets[i if at is None else at[i]]
        partition = batch.partition
        raise DecodeError(
            f"topic {topic!r} partition {partition} offset {offset}: the key is on "
            f"partition {partition}, but Kafka's default partitioner (murmur2) puts it "
            f"on {want} of {num_partitions}: a key written with another partitioner, or "
            "before partitions were added, can sit on several partitions, and a fold per "
            "partition would keep a row for each",
            hint="set scan.fold=global to fold across partitions (in one task), or "
                 "scan.check-partitioning=false if every key stays on one partition")


# --------------------------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------------------------


class KafkaInputPartition(InputPartition):  # type: ignore[misc]
    """The ranges one task reads: one partition, or all of them for a global fold."""

    def __init__(self, ranges: tuple[OffsetRange, ...], num_partitions: int) -> None:
        super().__init__(ranges)
        self.ranges = ranges
        self.num_partitions = num_partitions


class UpsertKafkaReader(DataSourceReader):  # type: ignore[misc]
    """Reads an upsert topic as a table or a changelog; see the module docstring."""

    def __init__(self, options: Mapping[str, Any], schema: StructType) -> None:
        self.settings = ReadSettings.of(options)
        self.schema = schema
        self.table_schema, self.op_index = self._split_schema(schema)
        # Every option and the schema are checked here, once, before any task.
        self.spec: PlanSpec = self.settings.plan_options.project(with_declared(
            from_spark_schema(self.table_schema), self.settings.declared))
        # The registry is opened and asked here, on the driver, once: the tasks decode with
        # these ids.
        plan = self.spec.build(registries=open_plan_registries(self.settings.plan_options))
        self.schemas = resolve_read_schemas(plan)
        #: A registry format reads its records' headers, scan.include-headers or not: a
        #: header framing carries the schema id there.
        self.reads_headers = reads_headers(plan)
        self.references = pinned_references(plan)
        self.fallbacks = registry_factories(plan)

    def _split_schema(self, schema: StructType) -> tuple[StructType, int | None]:
        from pyspark.sql import types as T  # lazy: pyspark.sql.types on use

        table = self._without_headers(schema) if self.settings.include_headers else schema
        if self.settings.mode != CHANGELOG:
            return table, None
        names = schema.fieldNames()
        op = self.settings.op_column
        if op not in names:
            raise SchemaError(
                f"scan.mode=changelog needs a change-kind column {op!r} in the schema",
                hint=f"add '{op} STRING' to .schema(...), or name yours with changelog.column")
        field = schema.fields[names.index(op)]
        if not isinstance(field.dataType, T.StringType):
            raise SchemaError(f"changelog column {op!r} must be STRING, "
                              f"not {field.dataType.simpleString()}")
        return T.StructType([f for f in table.fields if f.name != op]), names.index(op)

    def _without_headers(self, schema: StructType) -> StructType:
        from pyspark.sql import types as T  # lazy: pyspark.sql.types on use

        found = [f for f in schema.fields if f.name == HEADERS_COLUMN]
        if not found or not is_headers_field(found[0]):
            raise SchemaError(
                f"scan.include-headers needs a column {HEADERS_COLUMN!r} of type "
                "array<struct<key:string,value:binary>> in the schema"
                + (f", not {found[0].dataType.simpleString()}" if found else ""),
                hint=f"add '{HEADERS_COLUMN} ARRAY<STRUCT<key: STRING, value: BINARY>>' to "
                     ".schema(...), or leave .schema out to have it added")
        return T.StructType([f for f in schema.fields if f.name != HEADERS_COLUMN])

    def _plan(self, registry: PinnedRegistry | None = None) -> UpsertPlan:
        """The codecs, built from the options as validated on the driver."""
        return self.spec.build(registry)

    def task_plan(self) -> UpsertPlan:
        """The plan a read task decodes with: writer schemas by id from what the driver
        resolved; only an id outside the key and value subjects is fetched, from the task."""
        return self._plan(PinnedRegistry(self.schemas, references=self.references,
                                         fallbacks=self.fallbacks))

    def partitions(self) -> Sequence[KafkaInputPartition]:
        ranges = tuple(self.settings.kafka().capture(self.settings.topic))
        n = len(ranges)
        if self.settings.fold == GLOBAL:
            return [KafkaInputPartition(ranges, n)]
        return [KafkaInputPartition((r,), n) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._read(partition)
        except KeyguardError as exc:
            raise for_spark(exc)  # noqa: B904  (exc itself, printed first)

    def _read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        s = self.settings
        plan = self.task_plan()
        kafka = s.kafka()
        check = s.check_partitioning and s.fold == PARTITION
        with_headers = s.include_headers or self.reads_headers

        def records(r: OffsetRange) -> Iterator[Record]:
            for batch in kafka.read(r, headers=with_headers):
                if check:
                    check_partitioning(batch, partition.num_partitions, r.topic)
                yield from batch

        # Headers come with each record: the column-wise fold keeps none.
        if s.mode != CHANGELOG and len(partition.ranges) == 1 and not s.include_headers:
            (r,) = partition.ranges

            def columns() -> Iterator[RecordColumns]:
                for batch in kafka.read_columns(r, headers=self.reads_headers):
                    if check:
                        check_key_partitions(batch, partition.num_partitions, r.topic)
                    yield batch

            folded = fold_table(plan, r.partition, columns())
            if folded is not None:
                yield from self._column_batches(folded)
                return
            # A survivor was skipped (ignore-parse-errors): fold record by record instead.
        streams = [decode_events(plan, records(r)) for r in partition.ranges]
        rows: Iterable[tuple[str | None, dict[str, Any]]]
        if s.mode == CHANGELOG:
            events = streams[0] if len(streams) == 1 else merge_events(
                [list(st) for st in streams])
            rows = ((kind, self._shown(row, heads))
                    for kind, row, heads in changes(events, update_before=s.update_before))
        else:
            last = table(streams[0]) if len(streams) == 1 else winners(
                [table(st) for st in streams])
            rows = ((None, self._shown(row, rec.headers)) for rec, row in last.values()
                    if row is not None)
        yield from self._batches(rows)

    def _shown(self, row: dict[str, Any], headers: Headers) -> dict[str, Any]:
        """A row as read, with its record's headers when scan.include-headers asks."""
        if not self.settings.include_headers:
            return row
        return {**row, HEADERS_COLUMN: to_rows(headers)}

    def _column_batches(self, columns: Mapping[str, Sequence[Any]],
                        ) -> Iterator[pa.RecordBatch]:
        """A folded table's columns as record batches of the Arrow schema Spark expects."""
        import pyarrow as pa  # lazy: pyarrow and pyspark's pandas types inside a task only
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow = to_arrow_schema(self.schema, timezone="UTC")
        arrays = []
        for name, field in zip(self.schema.fieldNames(), arrow, strict=True):
            values = columns[name]
            try:
                if isinstance(values, pa.Array):
                    if values.type != field.type:
                        values = _retyped(values, field.type)
                    arrays.append(values)
                else:
                    arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                raise self._does_not_fit(name, exc) from None
        data = pa.Table.from_arrays(arrays, schema=arrow)
        yield from data.to_batches(max_chunksize=_COLUMN_BATCH_ROWS)

    def _does_not_fit(self, name: str, exc: Exception) -> DecodeError:
        """A decoded value Arrow refused for the column Spark asked for."""
        return DecodeError(
            f"topic {self.settings.topic!r}: column {name!r}: a decoded value does not fit "
            f"{self.schema[name].dataType.simpleString()}: {exc}")

    def _batches(self, rows: Iterable[tuple[str | None, dict[str, Any]]],
                 ) -> Iterator[pa.RecordBatch]:
        """Rows as record batches of exactly the Arrow schema Spark expects for `schema`."""
        import pyarrow as pa  # lazy: pyarrow and pyspark's pandas types inside a task only
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow = to_arrow_schema(self.schema, timezone="UTC")
        names = self.schema.fieldNames()
        op = self.settings.op_column if self.op_index is not None else None
        chunk: list[tuple[str | None, dict[str, Any]]] = []

        def flush() -> pa.RecordBatch:
            arrays = []
            for name, field in zip(names, arrow, strict=True):
                values = [kind if name == op else row.get(name) for kind, row in chunk]
                try:
                    arrays.append(pa.array(values, type=field.type))
                except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                    raise self._does_not_fit(name, exc) from None
            return pa.RecordBatch.from_arrays(arrays, schema=arrow)

        for item in rows:
            chunk.append(item)
            if len(chunk) >= _BATCH_ROWS:
                yield flush()
                chunk = []
        if chunk:
            yield flush()


def _retyped(values: pa.Array, target: pa.DataType) -> pa.Array:
    """A decoded Arrow column in Spark's Arrow type: a lossless cast between string or
    binary widths, else through Python values as the row path converts them."""
    import pyarrow as pa  # lazy: pyarrow inside a task only

    same_kind = ((pa.types.is_string(values.type) or pa.types.is_large_string(values.type))
                 and (pa.types.is_string(target) or pa.types.is_large_string(target)))
    if same_kind:
        return values.cast(target)
    return pa.array(values.to_pylist(), type=target)
