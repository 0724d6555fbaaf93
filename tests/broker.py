"""Kafka-protocol brokers for the test suite: started from PyPI wheels, stopped by PID.

`KEYGUARD_TEST_BOOTSTRAP=host:port` points the whole suite at an external broker (a real
Apache Kafka) and starts nothing. Otherwise the suite starts `KEYGUARD_TEST_BROKER` (`tansu`,
the default, or `noida`) on a free loopback port. See ../shared/ENVIRONMENT.md for each broker's
gaps: tansu's ListOffsets and read_committed are wrong and it cannot add partitions; noida gets
those right. Neither compacts.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

# The start/stop core ships in the package (keyguard demo and the benchmarks use it too).
from keyguard.sparkio.embedded import (  # noqa: F401  (re-exported for the tests)
    _QUIET,
    KINDS,
    Broker,
    BrokerMissing,
    BrokerStartError,
    free_port,
    noida_command,
    start_broker,
    start_process,
    stop_process,
    tansu_command,
    wait_until_ready,
)

ENV_BOOTSTRAP = "KEYGUARD_TEST_BOOTSTRAP"
ENV_BROKER = "KEYGUARD_TEST_BROKER"


def external_bootstrap() -> str | None:
    return os.environ.get(ENV_BOOTSTRAP) or None


def default_kind() -> str:
    kind = os.environ.get(ENV_BROKER, "tansu").strip().lower() or "tansu"
    if kind not in KINDS:
        raise BrokerMissing(f"{ENV_BROKER}={kind!r}: use one of {', '.join(KINDS)}")
    return kind


@dataclass
class BrokerPool:
    """Brokers started on demand, one per kind, all stopped by `close`."""

    workdir: Path
    started: dict[str, Broker] = field(default_factory=dict)

    def bootstrap(self) -> str:
        """The suite's broker: the external one, or the default kind started here."""
        return external_bootstrap() or self.get(default_kind()).bootstrap

    def get(self, kind: str) -> Broker:
        external = external_bootstrap()
        if external:
            if kind != default_kind():
                raise BrokerMissing(f"{ENV_BOOTSTRAP} is set: the suite starts no {kind}")
            return Broker(kind, external)
        if kind not in self.started:
            self.started[kind] = start_broker(kind, self.workdir)
        return self.started[kind]

    def close(self) -> None:
        while self.started:
            _, broker = self.started.popitem()
            broker.stop()


def new_topic(
    bootstrap: str,
    partitions: int = 3,
    config: Mapping[str, str] | None = None,
    *,
    prefix: str = "keyguard-test",
    timeout: float = 15.0,
) -> str:
    """Create a uniquely named topic and wait until its partitions have leaders."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    topic = NewTopic(
        name, num_partitions=partitions, replication_factor=-1, config=dict(config or {})
    )
    admin.create_topics([topic], operation_timeout=timeout)[name].result(timeout)
    deadline = time.monotonic() + timeout
    while True:
        try:
            md = admin.list_topics(topic=name, timeout=2.0).topics.get(name)
        except KafkaException:
            md = None
        if (
            md is not None
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return name
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} did not get {partitions} partitions with leaders")
        time.sleep(0.1)
