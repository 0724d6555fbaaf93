"""Bad input to the Spark writer, one row per case: each asserts the exception type and its kind,
and, where the error comes at planning or validation time, that nothing reached the topic.

Planning errors are raised by `resolve_plan_only`, the step the data source's writer(),
write_upsert, serialize and prepare all take before Spark runs anything: those rows need no
Spark job. Rows, null keys, brokers and registries need one.
"""

from __future__ import annotations

from typing import Any

import pytest
from broker import new_topic

from keyguard.formats.errors import (
    BrokerUnavailableError,
    InvalidOptionError,
    KeyguardError,
    NullKeyError,
    RegistryError,
    RegistryUnavailableError,
    SchemaError,
)
from keyguard.sparkio.producer import ChangelogKindError

BASE = {"topic": "t", "primary-key": "id", "key.format": "json", "value.format": "json",
        "properties.bootstrap.servers": "127.0.0.1:9"}
COLUMNS = "id int, v string, op string, n int"
SCHEMA_AVRO = '{"type":"record","name":"k","fields":[{"name":"other","type":"int"}]}'


def struct(ddl: str) -> Any:
    from pyspark.sql.types import (
        DataType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    types: dict[str, DataType] = {"int": IntegerType(), "string": StringType(),
                                  "bigint": LongType()}
    fields = [c.strip().split() for c in ddl.split(",")]
    return StructType([StructField(n, types[t]) for n, t in fields])


def without(key: str) -> dict[str, str]:
    return {k: v for k, v in BASE.items() if k != key}


OPT, SCH = (InvalidOptionError, "invalid-option"), (SchemaError, "invalid-schema")

#: (case, options, DataFrame columns, (error type, kind), words the message must hold)
PLANNING: list[tuple[str, dict[str, str], str, tuple[type[KeyguardError], str], str]] = [
    ("no topic", without("topic"), COLUMNS, OPT, "topic"),
    ("empty topic", {**BASE, "topic": "  "}, COLUMNS, OPT, "topic"),
    ("no primary key", without("primary-key"), COLUMNS, OPT, "primary-key"),
    ("empty primary key", {**BASE, "primary-key": " , "}, COLUMNS, OPT, "primary-key"),
    ("primary key twice", {**BASE, "primary-key": "id,id"}, COLUMNS, OPT, "twice"),
    ("no key format", without("key.format"), COLUMNS, OPT, "key.format"),
    ("unknown key format", {**BASE, "key.format": "xml"}, COLUMNS, OPT, "xml"),
    ("unknown value format", {**BASE, "value.format": "thrift"}, COLUMNS, OPT, "thrift"),
    ("no bootstrap", without("properties.bootstrap.servers"), COLUMNS, OPT,
     "properties.bootstrap.servers"),
    ("misspelt option", {**BASE, "sink.paralelism": "2"}, COLUMNS, OPT,
     "did you mean 'sink.parallelism'"),
    ("unknown guard option", {**BASE, "guard.bogus": "1"}, COLUMNS, OPT, "guard.bogus"),
    ("unknown json option", {**BASE, "key.json.no-such": "1"}, COLUMNS, OPT, "no-such"),
    ("parallelism 0", {**BASE, "sink.parallelism": "0"}, COLUMNS, OPT, "sink.parallelism"),
    ("parallelism text", {**BASE, "sink.parallelism": "many"}, COLUMNS, OPT,
     "sink.parallelism"),
    ("unknown guarantee", {**BASE, "sink.delivery-guarantee": "twice"}, COLUMNS, OPT,
     "sink.delivery-guarantee"),
    ("exactly-once without prefix", {**BASE, "sink.delivery-guarantee": "exactly-once"},
     COLUMNS, OPT, "sink.transactional-id-prefix"),
    ("prefix without exactly-once", {**BASE, "sink.transactional-id-prefix": "p"}, COLUMNS,
     OPT, "only used with"),
    ("acks=1 with at-least-once", {**BASE, "properties.acks": "1"}, COLUMNS, OPT, "acks=all"),
    ("idempotence off", {**BASE, "properties.enable.idempotence": "false"}, COLUMNS, OPT,
     "enable.idempotence"),
    ("own partitioner", {**BASE, "properties.partitioner": "random"}, COLUMNS, OPT,
     "properties.partitioner"),
    ("own transactional.id", {**BASE, "properties.transactional.id": "x"}, COLUMNS, OPT,
     "sink.transactional-id-prefix"),
    ("buffer rows without interval", {**BASE, "sink.buffer-flush.max-rows": "10"}, COLUMNS,
     OPT, "both"),
    ("buffer interval not a duration", {**BASE, "sink.buffer-flush.interval": "soon"},
     COLUMNS, OPT, "sink.buffer-flush.interval"),
    ("negative scan limit", {**BASE, "guard.scan-limit": "-5"}, COLUMNS, OPT,
     "guard.scan-limit"),
    ("allow-breaking not a bool", {**BASE, "guard.allow-breaking": "maybe"}, COLUMNS, OPT,
     "guard.allow-breaking"),
    ("validate-partition not a bool", {**BASE, "sink.validate-partition": "2"}, COLUMNS, OPT,
     "sink.validate-partition"),
    ("delivery timeout not a number", {**BASE, "properties.message.timeout.ms": "30s"},
     COLUMNS, OPT, "properties.message.timeout.ms"),
    ("delivery timeout 0", {**BASE, "properties.message.timeout.ms": "0"}, COLUMNS, OPT,
     "at least 1"),
    ("delivery timeout twice", {**BASE, "properties.message.timeout.ms": "1000",
                                "properties.delivery.timeout.ms": "2000"}, COLUMNS, OPT,
     "same option"),
    ("connection timeout negative",
     {**BASE, "properties.socket.connection.setup.timeout.ms": "-1"}, COLUMNS, OPT,
     "socket.connection.setup.timeout.ms"),
    ("Java JAAS config", {**BASE, "properties.sasl.jaas.config":
                          'PlainLoginModule required username="u" password="hunter2";'},
     COLUMNS, OPT, "sasl.username"),
    ("unknown librdkafka property", {**BASE, "properties.no.such.prop": "1"}, COLUMNS, OPT,
     "no.such.prop"),
    ("librdkafka value not a number", {**BASE, "properties.linger.ms": "soon"}, COLUMNS, OPT,
     "librdkafka rejects"),
    ("unknown fields-include", {**BASE, "value.fields-include": "SOME"}, COLUMNS, OPT,
     "value.fields-include"),
    ("prefix with ALL", {**BASE, "primary-key": "k_id", "key.fields-prefix": "k_"},
     "k_id int, v string", OPT, "key.fields-prefix"),
    ("key column without the prefix",
     {**BASE, "key.fields-prefix": "k_", "value.fields-include": "EXCEPT_KEY"}, COLUMNS, OPT,
     "k_"),
    ("EXCEPT_KEY with only key columns", {**BASE, "value.fields-include": "EXCEPT_KEY"},
     "id int", OPT, "EXCEPT_KEY leaves no value column"),
    ("EXCEPT_KEY over a composite key only",
     {**BASE, "primary-key": "id,n", "value.fields-include": "EXCEPT_KEY"}, "id int, n int",
     OPT, "value.fields-include=ALL"),
    ("EXCEPT_KEY, prefix, key columns only",
     {**BASE, "primary-key": "k_id", "key.fields-prefix": "k_",
      "value.fields-include": "EXCEPT_KEY"}, "k_id int", OPT, "no value column"),
    ("changelog column is the key", {**BASE, "changelog.column": "id"}, COLUMNS, OPT,
     "primary-key column"),
    ("changelog column orders", {**BASE, "changelog.column": "op", "sink.order-by": "op"},
     COLUMNS, OPT, "sink.order-by"),
    ("avro-confluent without url", {**BASE, "key.format": "avro-confluent"}, COLUMNS, OPT,
     "url"),
    ("unknown subject strategy", {**BASE, "key.format": "avro-confluent",
                                  "key.avro-confluent.url": "mock://x",
                                  "key.avro-confluent.subject.name.strategy": "Nope"},
     COLUMNS, OPT, "subject.name.strategy"),
    ("primary key not a column", {**BASE, "primary-key": "user_id"}, COLUMNS, SCH, "user_id"),
    ("changelog column missing", {**BASE, "changelog.column": "kind"}, COLUMNS, SCH, "kind"),
    ("changelog column not a string", {**BASE, "changelog.column": "n"}, COLUMNS, SCH,
     "string column"),
    ("order-by column missing", {**BASE, "sink.order-by": "seq"}, COLUMNS, SCH, "seq"),
    ("avro key schema of other fields",
     {**BASE, "key.format": "avro-confluent", "key.avro-confluent.url": "mock://x",
      "key.avro-confluent.schema": SCHEMA_AVRO}, COLUMNS, (KeyguardError, "invalid-schema"),
     "other"),
]


@pytest.mark.parametrize(("options", "columns", "error", "says"),
                         [pytest.param(*row[1:], id=row[0]) for row in PLANNING])
def test_planning_rejects(options: dict[str, str], columns: str,
                          error: tuple[type[KeyguardError], str], says: str) -> None:
    from keyguard.sparkio.writer import resolve_plan_only

    cls, kind = error
    with pytest.raises(cls) as err:
        resolve_plan_only(struct(columns), options)
    assert err.value.kind == kind, f"{type(err.value).__name__}: {err.value}"
    assert says.lower() in str(err.value).lower()
    assert "Traceback" not in str(err.value) and "hunter2" not in str(err.value)


# -- through Spark: the data source, write_upsert, serialize, prepare ---------------------------


def _opts(bootstrap: str, topic: str, **extra: str) -> dict[str, str]:
    return {**BASE, "topic": topic, "properties.bootstrap.servers": bootstrap, **extra}


def test_a_planning_error_is_the_first_line_spark_prints(spark: Any, kafka_bootstrap: str,
                                                         reader: Any) -> None:
    topic = new_topic(kafka_bootstrap, 2)
    df = spark.createDataFrame([(1,)], "id int")
    opts = _opts(kafka_bootstrap, topic, **{"value.fields-include": "EXCEPT_KEY"})
    with pytest.raises(Exception) as err:  # Spark's AnalysisException
        df.write.format("upsert-kafka").options(**opts).mode("append").save()
    first = str(err.value).splitlines()[0]
    assert "keyguard.formats.errors.InvalidOptionError: topic" in first
    assert "EXCEPT_KEY leaves no value column" in first
    with pytest.raises(InvalidOptionError, match="EXCEPT_KEY leaves no value column"):
        from keyguard import sparkio
        sparkio.write_upsert(df, **opts)
    assert reader.records(topic) == []


BAD_KINDS = ["i", "-d", " +I", None, "+u", "", "UPSERT"]


def test_write_upsert_rejects_every_bad_changelog_kind_before_any_record(
        spark: Any, kafka_bootstrap: str, reader: Any) -> None:
    """One job over all the bad kinds: the count says each of them was caught."""
    import ast
    import re

    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    rows = [(i, f"v{i}", "+I") for i in range(200)] + [
        (999 + n, "bad", kind) for n, kind in enumerate(BAD_KINDS)]
    df = spark.createDataFrame(rows, "id int, v string, op string")
    with pytest.raises(ChangelogKindError) as err:
        sparkio.write_upsert(df, **_opts(kafka_bootstrap, topic, **{"changelog.column": "op"}))
    text = str(err.value)
    assert err.value.kind == "changelog-kind" and "nothing was written" in text
    assert f"topic {topic}: {len(BAD_KINDS)} rows in the DataFrame whose changelog column 'op' " \
        "is not +I, +U, -U or -D" in text
    shown = re.search(r"e\.g\. (.*?) in \{", text)
    assert shown is not None and ast.literal_eval(shown.group(1)) in BAD_KINDS, text
    assert reader.records(topic) == []


@pytest.mark.usefixtures("dead_broker_deadline")
def test_serialize_and_prepare_reject_bad_kinds_at_the_call(spark: Any) -> None:
    from keyguard import sparkio
    df = spark.createDataFrame([(1, "a", "+I"), (2, "b", "-d")], "id int, v string, op string")
    opts = {**BASE, "changelog.column": "op"}
    with pytest.raises(ChangelogKindError, match="1 row in the DataFrame"):
        sparkio.prepare(df, **opts)
    with pytest.raises(BrokerUnavailableError):  # serialize guards first: no broker here
        sparkio.serialize(df, **{**opts, "guard.scan-limit": "0"})


def test_the_data_source_checks_a_whole_partition_before_its_first_record(
        spark: Any, kafka_bootstrap: str, reader: Any) -> None:
    topic = new_topic(kafka_bootstrap, 3)
    rows = [(i, f"v{i}", "+I") for i in range(5000)] + [(5001, "bad", " +I")]
    df = spark.createDataFrame(rows, "id int, v string, op string").coalesce(1)
    opts = _opts(kafka_bootstrap, topic, **{"changelog.column": "op"})
    with pytest.raises(Exception) as err:
        df.write.format("upsert-kafka").options(**opts).mode("append").save()
    lines = str(err.value).splitlines()
    assert "keyguard.sparkio.producer.ChangelogKindError: topic" in "\n".join(lines[:2])
    assert reader.records(topic) == []


@pytest.mark.parametrize("how", ["write_upsert", "prepare"])
def test_null_keys_fail_before_any_record(spark: Any, kafka_bootstrap: str, reader: Any,
                                          how: str) -> None:
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    df = spark.createDataFrame([(1, "a"), (None, "b")], "id int, v string")
    opts = _opts(kafka_bootstrap, topic)
    with pytest.raises(NullKeyError) as err:
        if how == "prepare":
            sparkio.prepare(df, **opts)
        else:
            sparkio.write_upsert(df, **opts)
    assert err.value.kind == "null-key"
    assert reader.records(topic) == []


@pytest.mark.parametrize("how", ["write_upsert", "format"])
def test_a_dead_broker_is_unreachable_not_a_hang(spark: Any, how: str,
                                                 request: pytest.FixtureRequest) -> None:
    from keyguard import sparkio
    from keyguard.sparkio.embedded import free_port

    df = spark.createDataFrame([(1, "a")], "id int, v string")
    opts = _opts(f"127.0.0.1:{free_port()}", "t")
    if how == "write_upsert":
        # The guard runs here: a shorter deadline. The data source's runs in Spark's planner
        # Python and waits out keyguard's own.
        request.getfixturevalue("dead_broker_deadline")
        with pytest.raises(BrokerUnavailableError) as err:
            sparkio.write_upsert(df, **opts)
        assert err.value.kind == "broker-unavailable" and err.value.exit_code == 3
    else:
        with pytest.raises(Exception) as raw:
            df.write.format("upsert-kafka").options(**opts).mode("append").save()
        assert "keyguard.formats.errors.BrokerUnavailableError" in str(raw.value).splitlines()[0]


def test_an_unreachable_registry_stops_the_write(spark: Any, kafka_bootstrap: str,
                                                 reader: Any) -> None:
    from keyguard import sparkio
    from keyguard.sparkio.embedded import free_port

    topic = new_topic(kafka_bootstrap, 3)
    df = spark.createDataFrame([(1, "a")], "id int, v string")
    opts = _opts(kafka_bootstrap, topic, **{
        "key.format": "avro-confluent", "key.avro-confluent.retries": "0",
        "key.avro-confluent.url": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(RegistryUnavailableError) as err:
        sparkio.write_upsert(df, **opts)
    assert err.value.kind == "registry-unavailable" and err.value.exit_code == 3
    assert reader.records(topic) == []


def test_a_schema_that_must_be_registered_already_stops_the_write(
        spark: Any, kafka_bootstrap: str, reader: Any, tmp_path: Any) -> None:
    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    df = spark.createDataFrame([(1, "a")], "id int, v string")
    opts = _opts(kafka_bootstrap, topic, **{
        "value.format": "avro-confluent", "value.avro-confluent.url": f"file://{tmp_path}",
        "value.avro-confluent.auto.register.schemas": "false"})
    with pytest.raises(RegistryError) as err:
        sparkio.write_upsert(df, **opts)
    assert err.value.kind == "registry" and "auto.register.schemas" in str(err.value)
    assert reader.records(topic) == []


def test_a_bad_kind_deep_in_a_large_write_leaves_the_topic_empty(
        spark: Any, kafka_bootstrap: str, reader: Any) -> None:
    """The issue's case: 20,000 rows, a bad kind at row 15,000; it left 10,160 records."""
    from pyspark.sql import functions as F

    from keyguard import sparkio
    topic = new_topic(kafka_bootstrap, 3)
    df = spark.range(20_000).select(
        F.col("id").cast("int").alias("id"), F.lit("v").alias("v"),
        F.when(F.col("id") == 15_000, F.lit("i")).otherwise(F.lit("+I")).alias("op"))
    with pytest.raises(ChangelogKindError, match="1 row in the DataFrame"):
        sparkio.write_upsert(df.repartition(4),
                             **_opts(kafka_bootstrap, topic, **{"changelog.column": "op"}))
    assert reader.records(topic) == []


def test_a_task_against_a_dead_broker_fails_with_its_counts() -> None:
    """What a write task does when the broker dies after the driver's probe: no 5-minute wait,
    a delivery error counting the records not delivered (the timeout shortened for the test,
    as a user would: properties.message.timeout.ms)."""
    import pyarrow as pa

    from keyguard.sparkio.embedded import free_port
    from keyguard.sparkio.producer import TaskDeliveryError
    from keyguard.sparkio.writer import WriteJob, resolve_plan_only

    options = {**BASE, "properties.bootstrap.servers": f"127.0.0.1:{free_port()}",
               "properties.message.timeout.ms": "700", "properties.log_level": "0"}
    conn, plan = resolve_plan_only(struct("id int, v string"), options)
    job = WriteJob(plan.spec, conn, 3)
    batches = [pa.record_batch({"id": pa.array([i, i + 1], pa.int32()), "v": ["a", "b"]})
               for i in (0, 2, 4)]
    with pytest.raises(TaskDeliveryError) as err:
        job.run(iter(batches))
    assert (err.value.delivered, err.value.undelivered) == (0, 6)
    assert err.value.kind == "delivery" and err.value.exit_code == 3
    assert "properties.message.timeout.ms=60000" in str(err.value)
