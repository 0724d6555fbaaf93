"""A Spark Python worker's producer pool: the next task gets the last task's producer only
when every record of that task was acknowledged, never a transactional one, never one that
reported a fatal error while idle; callbacks always reach the task using it now."""

from __future__ import annotations

from typing import Any

import pytest
from broker import new_topic

from keyguard.sparkio.producer import TaskDeliveryError, UpsertProducer, producer_config
from keyguard.sparkio.producer_pool import ProducerPool, pool_key


class PooledFake:
    """Acknowledges at once unless told to fail; records what it was sent."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.sent: list[tuple[bytes, bytes | None, int]] = []
        self.fail_next = False
        self.pending_error: Any = None
        self.purged = False

    def produce(self, topic: str, value: bytes | None, key: bytes, partition: int) -> None:
        self.sent.append((key, value, partition))
        if self.fail_next:
            self.config["on_delivery"](RuntimeError("Local: Message timed out"), None)

    def poll(self, timeout: float = 0) -> int:
        if self.pending_error is not None:
            err, self.pending_error = self.pending_error, None
            self.config["error_cb"](err)
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0

    def __len__(self) -> int:
        return 0

    def purge(self) -> None:
        self.purged = True


class FatalError:
    def fatal(self) -> bool:
        return True

    def name(self) -> str:
        return "_FATAL"

    def str(self) -> str:
        return "fenced"


def factory_made() -> tuple[list[PooledFake], Any]:
    made: list[PooledFake] = []

    def factory(config: dict[str, Any]) -> PooledFake:
        made.append(PooledFake(config))
        return made[-1]

    return made, factory


def producer(pool: ProducerPool, factory: Any, **kw: Any) -> UpsertProducer:
    return UpsertProducer(topic="t", config={"bootstrap.servers": "x", "acks": "all"},
                          factory=factory, pool=pool, **kw)


def test_the_next_task_gets_the_producer_of_a_task_that_finished() -> None:
    pool, (made, factory) = ProducerPool(), factory_made()
    first = producer(pool, factory, task=0)
    first.send([b"a"], [b"1"], [0])
    assert first.finish().records == 1
    assert len(pool) == 1
    second = producer(pool, factory, task=1)
    second.send([b"b"], [b"2"], [1])
    stats = second.finish()
    assert len(made) == 1  # one librdkafka producer for both tasks
    assert made[0].sent == [(b"a", b"1", 0), (b"b", b"2", 1)]
    assert (stats.task, stats.records, stats.partitions) == (1, 1, (1,))  # counts its own


def test_a_failed_task_never_gives_its_producer_back() -> None:
    pool, (made, factory) = ProducerPool(), factory_made()
    first = producer(pool, factory)
    first.send([b"a"], [b"1"], [0])
    first.finish()
    second = producer(pool, factory)
    made[0].fail_next = True
    with pytest.raises(TaskDeliveryError) as err:
        second.send([b"b"], [b"2"], [0])
        second.finish(timeout_s=1)
    assert (err.value.delivered, err.value.undelivered) == (0, 1)
    second.abort()
    assert len(pool) == 0 and made[0].purged
    third = producer(pool, factory)
    assert len(made) == 2 and third._producer is made[1]


def test_failures_reach_the_task_using_the_producer_now() -> None:
    pool, (made, factory) = ProducerPool(), factory_made()
    first = producer(pool, factory)
    first.send([b"a"], [b"1"], [0])
    first.finish()
    second = producer(pool, factory)
    made[0].fail_next = True
    with pytest.raises(TaskDeliveryError):
        second.send([b"b"], [b"2"], [0])
    assert (first._failed, second._failed) == (0, 1)


def test_a_fatal_error_while_idle_drops_the_producer() -> None:
    pool, (made, factory) = ProducerPool(), factory_made()
    first = producer(pool, factory)
    first.finish()
    made[0].pending_error = FatalError()  # served by the pool's poll, owned by no task
    second = producer(pool, factory)
    assert len(made) == 2 and second._producer is made[1]
    assert first._errors == [] and second._errors == []


def test_transactional_producers_are_never_pooled() -> None:
    pool, (made, _) = ProducerPool(), factory_made()

    class Tx(PooledFake):
        def init_transactions(self, timeout: float) -> None: ...
        def begin_transaction(self) -> None: ...
        def commit_transaction(self, timeout: float) -> None: ...

    def tx_factory(config: dict[str, Any]) -> Tx:
        made.append(Tx(config))
        return made[-1]

    for _ in range(2):
        p = producer(pool, tx_factory, transactional=True)
        p.send([b"a"], [b"1"], [0])
        p.finish()
    assert len(made) == 2 and len(pool) == 0


def test_other_settings_get_another_producer_and_idle_ones_expire() -> None:
    now = [0.0]
    pool, (made, factory) = ProducerPool(idle_s=10, size=2, clock=lambda: now[0]), \
        factory_made()
    producer(pool, factory).finish()
    other = UpsertProducer(topic="t", config={"bootstrap.servers": "y"}, factory=factory,
                           pool=pool)
    assert len(made) == 2
    other.finish()
    assert len(pool) == 2
    now[0] = 11.0
    producer(pool, factory)
    assert len(made) == 3 and len(pool) == 0  # both expired


def test_the_key_ignores_callbacks_but_not_settings() -> None:
    base = {"bootstrap.servers": "x", "acks": "all"}
    assert pool_key({**base, "on_delivery": print}) == pool_key(base)
    assert pool_key({**base, "linger.ms": 5}) != pool_key(base)


def test_a_pooled_producer_delivers_to_a_second_topic(kafka_bootstrap: str,
                                                      reader: Any) -> None:
    pool = ProducerPool()
    config = producer_config({"bootstrap.servers": kafka_bootstrap}, "at-least-once")
    topics = [new_topic(kafka_bootstrap, 2) for _ in range(2)]
    raw = []
    for i, topic in enumerate(topics):
        p = UpsertProducer(topic, config, pool=pool)
        raw.append(p._producer)
        p.send([b"k%d" % i, b"j%d" % i], [b"v", None], [0, 1])
        assert p.finish(timeout_s=30).records == 2
    assert raw[0] is raw[1]
    for i, topic in enumerate(topics):
        assert sorted((part, key, value) for part, _, key, value in reader.records(topic)) == \
            [(0, b"k%d" % i, b"v"), (1, b"j%d" % i, None)]
    pool.clear()


class BrokerDown(FatalError):
    """What librdkafka reports while the brokers restart: not fatal, but the session is gone."""

    def fatal(self) -> bool:
        return False

    def code(self) -> int:
        from confluent_kafka import KafkaError

        return int(KafkaError._ALL_BROKERS_DOWN)

    def name(self) -> str:
        return "_ALL_BROKERS_DOWN"


def test_a_broker_down_report_while_idle_drops_the_producer() -> None:
    pool, (made, factory) = ProducerPool(), factory_made()
    first = producer(pool, factory)
    first.finish()
    made[0].pending_error = BrokerDown()
    second = producer(pool, factory)
    assert len(made) == 2 and second._producer is made[1]


def test_a_refused_record_after_a_broker_restart_fails_with_counts_and_drops_it() -> None:
    """The next task's first produce() raises librdkafka's _FATAL (the idempotent session died
    with the broker): the task fails with counts, never a raw KafkaException, and the producer
    never serves another task."""
    from confluent_kafka import KafkaError, KafkaException

    pool, (made, factory) = ProducerPool(), factory_made()
    first = producer(pool, factory)
    first.send([b"a"], [b"1"], [0])
    first.finish()

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise KafkaException(KafkaError(KafkaError._FATAL, "producer fenced after a restart",
                                        fatal=True))

    made[0].produce = refuse  # type: ignore[method-assign]
    second = producer(pool, factory)
    assert second._producer is made[0]  # it looked healthy while idle
    with pytest.raises(TaskDeliveryError) as err:
        second.send([b"b", b"c"], [b"2", b"3"], [0, 0])
    assert "librdkafka refused a record" in str(err.value)
    assert "delivered" in str(err.value) and "undelivered" in str(err.value)
    assert "_FATAL" in str(err.value)
    second.abort()
    third = producer(pool, factory)
    assert third._producer is not made[0] and len(made) == 2


@pytest.mark.broker
def test_a_broker_restart_between_tasks_never_fails_without_counts(tmp_path: Any) -> None:
    """A dedicated tansu, restarted on the same port between two tasks of one worker (its
    memory storage and producer ids gone): the next task either delivers or fails with a
    TaskDeliveryError that carries its counts, never a raw KafkaException; the task after it
    delivers with a producer that did not see the restart go wrong."""
    from broker import BrokerMissing, free_port, start_process, tansu_command

    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    try:
        command = tansu_command(port)
    except BrokerMissing as exc:
        pytest.skip(str(exc))

    def start(n: int) -> Any:
        return start_process("tansu", command, bootstrap, tmp_path / f"tansu-{n}.log")

    broker = start(1)
    try:
        topic = new_topic(bootstrap, 1)
        pool = ProducerPool()
        config = producer_config({"bootstrap.servers": bootstrap, "log_level": 0,
                                  "message.timeout.ms": 8000}, "at-least-once")

        def task(n: int) -> UpsertProducer:
            p = UpsertProducer(topic=topic, config=dict(config), pool=pool)
            p.send([b"k%d" % n], [b"v%d" % n], [0])
            p.finish(timeout_s=15)
            return p

        task(1)
        assert len(pool) == 1
        broker.stop()
        broker = start(2)
        # The topic is gone with the memory storage: create it again under the same name.
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        admin.create_topics([NewTopic(topic, 1, replication_factor=-1)])[topic].result(15)
        outcomes = []
        for n in (2, 3):
            try:
                task(n)
                outcomes.append("delivered")
            except TaskDeliveryError as exc:  # the counts, never a raw KafkaException
                assert exc.delivered + exc.undelivered >= 1
                outcomes.append("failed with counts")
        assert outcomes[-1] == "delivered", outcomes
    finally:
        broker.stop()
