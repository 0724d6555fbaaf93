"""Suite-wide fixtures: the Kafka-protocol broker (see tests/broker.py for the env vars)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker import BrokerMissing, BrokerPool

from keyguard.formats.options import OptionSet

_BROKER_FIXTURES = {"kafka_bootstrap", "kafka_brokers"}


@pytest.fixture(scope="session", autouse=True)
def _state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Migrations that name no --state record their progress under the suite's own state
    directory, never the user's home."""
    home = tmp_path_factory.mktemp("state-home")
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(home)
    try:
        yield home
    finally:
        if before is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = before


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use a broker fixture get the `broker` marker: `-m "not broker"` skips them."""
    for item in items:
        if _BROKER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.broker)


@pytest.fixture(scope="session")
def kafka_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    """Brokers by kind (`kafka_brokers.get("noida").bootstrap`), started once, stopped by PID."""
    pool = BrokerPool(tmp_path_factory.mktemp("brokers"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_brokers: BrokerPool) -> str:
    """`host:port` of the suite's broker: KEYGUARD_TEST_BOOTSTRAP, or one started here."""
    try:
        return kafka_brokers.bootstrap()
    except BrokerMissing as e:
        pytest.skip(str(e))


@pytest.fixture
def dead_broker_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline of a broker's metadata answer cut from keyguard's 10 s to 1 s, for a test that
    points at a closed port: the refusal comes at once, the deadline is all it waits for."""
    from keyguard.guard.topic import KafkaTopicInspector

    seconds = 1.0
    real = KafkaTopicInspector.__init__

    def capped(self: KafkaTopicInspector, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        self.timeout_s = min(self.timeout_s, seconds)

    monkeypatch.setattr(KafkaTopicInspector, "__init__", capped)


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The owner of every OptionSet.validate call, in order (options validated once)."""
    calls: list[str] = []
    real = OptionSet.validate

    def counting(self: OptionSet, raw: Any, *, where: str | None = None) -> Any:
        calls.append(self.owner)
        return real(self, raw, where=where)

    monkeypatch.setattr(OptionSet, "validate", counting)
    yield calls
