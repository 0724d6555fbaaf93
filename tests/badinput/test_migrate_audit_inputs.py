"""Bad input to `keyguard migrate` and `keyguard audit` (and their library calls) is exit 2
with a message that names it, before any broker is asked; no traceback, no exit 4."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.audit.scan import audit_topic
from keyguard.guard.cli import app
from keyguard.sparkio.migrate_topic import Migration, _count, migrate_topic

DEAD = "127.0.0.1:1"
MIGRATE = ["migrate", "--topic", "t", "--bootstrap", DEAD, "--columns",
           "id BIGINT, name STRING", "--old-key-format", "json", "--value-format", "json",
           "--primary-key", "id", "--yes"]
AUDIT = ["audit", "--topic", "t", "--bootstrap", DEAD, "--columns", "id BIGINT, name STRING",
         "--primary-key", "id", "--key-format", "json", "--value-format", "json"]


def _run(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env=env)
    return result.exit_code, result.output


@pytest.mark.parametrize("base", [MIGRATE, AUDIT], ids=["migrate", "audit"])
@pytest.mark.parametrize(("prop", "says"), [
    ("no.such.property=1", "'no.such.property'"),
    ("sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
     "password=\"s3cr3t-jaas\";", "sasl.jaas.config"),
    ("socket.timeout.ms=soon", "'socket.timeout.ms'"),
])
def test_a_property_librdkafka_refuses_is_exit_2_naming_it(base: list[str], prop: str,
                                                           says: str) -> None:
    code, out = _run([*base, "--kafka-config", prop])
    assert code == 2, out
    assert says in out and "Traceback" not in out and "s3cr3t-jaas" not in out


@pytest.mark.parametrize("name", ["bad name", "x" * 250, "..", "t/1", "ümlaut"])
def test_a_topic_kafka_would_refuse_is_exit_2(name: str) -> None:
    code, out = _run([*MIGRATE, "--to-topic", name])
    assert code == 2, out
    assert "a Kafka topic name is 1 to 249" in out


def test_a_long_topic_is_refused_before_a_file_registry_is_touched(tmp_path) -> None:
    code, out = _run(["encode", "--columns", "id BIGINT", "--primary-key", "id",
                      "--key-format", "avro-confluent", "--value-format", "json",
                      "--registry", f"file://{tmp_path}", "--topic", "x" * 300,
                      "--row", '{"id": 1}'])
    assert code == 2 and "topic name" in out, out
    assert not any(tmp_path.iterdir())


@pytest.mark.usefixtures("dead_broker_deadline")
def test_migrate_reads_the_kafka_password_from_the_environment() -> None:
    """KEYGUARD_KAFKA_SASL_PASSWORD is sasl.password, as for audit and check: given with a
    PLAINTEXT connection it is unused, which is an error for an option but not for the
    environment (it may be for other brokers), so the run goes on to the (dead) broker."""
    code, out = _run(MIGRATE, env={"KEYGUARD_KAFKA_SASL_PASSWORD": "env-secret-123"})
    assert code == 3, out
    assert "env-secret-123" not in out
    code, out = _run([*MIGRATE, "--kafka-config", "sasl.password=opt-secret-456"])
    assert code == 2 and "sasl.password" in out and "opt-secret-456" not in out, out


def test_a_sample_of_nothing_and_zero_partitions_are_refused_before_any_broker() -> None:
    from keyguard.formats.plan import resolve_plan

    plan = resolve_plan(parse_columns("id BIGINT, v STRING"),
                        {"topic": "t", "primary-key": "id", "key.format": "json",
                         "value.format": "json"})
    for sample in (0, -1, True, 2.5):
        with pytest.raises(InvalidOptionError, match="at least 1"):
            audit_topic("t", plan, bootstrap=DEAD, sample=sample)  # type: ignore[arg-type]
    m = Migration(topic="t", bootstrap=DEAD, table=parse_columns("id BIGINT, v STRING"),
                  old=({"key.format": "json", "value.format": "json", "primary-key": "id"},),
                  new={"key.format": "json", "value.format": "json", "primary-key": "id"},
                  partitions=0)
    with pytest.raises(InvalidOptionError, match="partitions must be a whole number"):
        migrate_topic(m)
    code, out = _run([*AUDIT, "--sample", "0"])
    assert code == 2, out


def test_a_state_file_edited_by_hand_is_read_as_far_as_it_makes_sense() -> None:
    assert [_count(v) for v in (3, "x", None, -1, True, 2.0)] == [3, 0, 0, 0, 0, 0]
