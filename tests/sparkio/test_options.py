"""Option validation: every unknown or conflicting option is named before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.plan import resolve_plan
from keyguard.formats.sqltypes import parse_columns
from keyguard.sparkio.options import CONNECTOR_OPTIONS, markdown_table, resolve_connector

BASE = {"topic": "t", "primary-key": "id", "key.format": "json", "value.format": "json",
        "properties.bootstrap.servers": "localhost:9092"}


def resolve(**extra: Any) -> Any:
    return resolve_connector({**BASE, **extra})


def test_defaults_follow_flink() -> None:
    conn = resolve()
    assert conn["sink.delivery-guarantee"] == "at-least-once"
    assert conn["sink.buffer-flush.max-rows"] == 0
    assert conn["scan.mode"] == "table" and conn.bootstrap == "localhost:9092"


def test_flink_durations_and_buffering() -> None:
    conn = resolve(**{"sink.buffer-flush.max-rows": "100", "sink.buffer-flush.interval": "1s"})
    assert conn["sink.buffer-flush.max-rows"] == 100 and conn["sink.buffer-flush.interval"] == 1000


@pytest.mark.parametrize(("extra", "named"), [
    ({"sink.paralelism": "2"}, "'sink.paralelism' (did you mean 'sink.parallelism'?)"),
    ({"guard.bogus": "x", "scan.bogus": "y"}, "'guard.bogus'"),
    ({"key.json.no-such-option": "1"}, "no-such-option"),
    ({"sink.delivery-guarantee": "twice"}, "sink.delivery-guarantee"),
    ({"scan.mode": "stream"}, "scan.mode"),
])
def test_unknown_options_are_named(extra: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidOptionError, match=r".*") as err:
        resolve_plan(parse_columns("id INT, v STRING"), {**BASE, **extra},
                     extra=CONNECTOR_OPTIONS)
    assert named in str(err.value)


@pytest.mark.parametrize(("extra", "named"), [
    ({"sink.delivery-guarantee": "exactly-once"}, "sink.transactional-id-prefix"),
    ({"sink.transactional-id-prefix": "p"}, "only used with"),
    ({"properties.partitioner": "consistent_random"}, "properties.partitioner"),
    ({"properties.transactional.id": "x"}, "properties.transactional.id"),
    ({"properties.acks": "1"}, "acks=all"),
    ({"properties.enable.idempotence": "false"}, "enable.idempotence"),
    ({"sink.buffer-flush.max-rows": "10"}, "both"),
    ({"sink.parallelism": "0"}, "sink.parallelism"),
    ({"changelog.column": "id"}, "primary-key column"),
])
def test_conflicting_options_are_named(extra: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        resolve(**extra)
    assert named in str(err.value)


def test_all_problems_are_reported_at_once() -> None:
    with pytest.raises(InvalidOptionError) as err:
        resolve(**{"properties.partitioner": "random", "properties.acks": "0"})
    assert "partitioner" in str(err.value) and "acks" in str(err.value)


def test_bootstrap_is_required_for_writes() -> None:
    options = {k: v for k, v in BASE.items() if not k.startswith("properties.")}
    with pytest.raises(InvalidOptionError, match=r"properties\.bootstrap\.servers"):
        resolve_connector(options)


def test_exactly_once_with_prefix_and_properties_pass_through() -> None:
    conn = resolve(**{"sink.delivery-guarantee": "exactly-once",
                      "sink.transactional-id-prefix": "job1",
                      "properties.security.protocol": "SASL_SSL",
                      "properties.sasl.password": "s3cret"})
    assert conn.properties["security.protocol"] == "SASL_SSL"
    assert conn.secrets() == ["s3cret"]


def test_secret_values_are_not_echoed_in_errors() -> None:
    with pytest.raises(InvalidOptionError) as err:
        resolve(**{"properties.sasl.password": "s3cret", "properties.acks": "0"})
    assert "s3cret" not in str(err.value)


def test_readme_table_lists_every_option() -> None:
    table = markdown_table()
    for key in ("topic", "primary-key", "sink.delivery-guarantee", "guard.allow-breaking",
                "scan.mode", "changelog.column", "properties.*"):
        assert f"`{key}`" in table


def test_options_are_validated_before_spark_runs(spark: Any) -> None:
    """The data source rejects a typo when the write is planned: no task runs."""
    from keyguard import sparkio
    df = spark.createDataFrame([(1, "a")], "id int, v string")
    with pytest.raises(Exception, match=r"sink\.paralelism"):
        df.write.format("upsert-kafka").options(**BASE, **{"sink.paralelism": "2"}) \
            .mode("append").save()
    with pytest.raises(InvalidOptionError, match=r"sink\.paralelism"):
        sparkio.write_upsert(df, **BASE, **{"sink.paralelism": "2"})
    with pytest.raises(Exception, match="append mode only"):
        df.write.format("upsert-kafka").options(**BASE).mode("overwrite").save()
