"""Producers kept for the next task of a Spark Python worker (`ProducerPool`): a reused
worker's next write task sends with the producer the last one finished with."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from keyguard.sparkio.producer import UpsertProducer

#: How long an idle producer waits in a worker for the next task (Spark's own Kafka sink keeps
#: its producers 10 minutes: spark.kafka.producer.cache.timeout).
POOL_IDLE_S = 300.0
#: Idle producers a worker keeps, one per distinct librdkafka configuration.
POOL_SIZE = 4
#: The callbacks librdkafka holds; they go through a `CallbackRouter` when the producer is pooled.
_CALLBACK_KEYS = ("error_cb", "logger", "on_delivery")


class CallbackRouter:
    """The callbacks a pooled librdkafka producer holds, forwarded to the UpsertProducer that
    uses it now (none while it is idle: what it reports then belongs to no task)."""

    __slots__ = ("fatal", "owner")

    def __init__(self) -> None:
        self.owner: UpsertProducer | None = None
        #: A fatal error seen while idle: the producer is never handed out again.
        self.fatal = False

    def delivery(self, err: Any, msg: Any) -> None:
        owner = self.owner
        if owner is not None:
            owner._on_delivery(err, msg)

    def error(self, err: Any) -> None:
        if getattr(err, "fatal", lambda: False)() or _broker_down(err):
            self.fatal = True
        owner = self.owner
        if owner is not None:
            owner._on_error(err)


def _broker_down(err: Any) -> bool:
    """librdkafka lost its brokers: a producer that saw it (a broker restart drops an
    idempotent producer's session) is not handed to another task."""
    from confluent_kafka import KafkaError  # lazy: the Kafka client, with the producer

    code = getattr(err, "code", lambda: None)()
    return code in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT,
                    KafkaError._FATAL)


def pool_key(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The producer settings that make two producers interchangeable (callbacks aside)."""
    return tuple(sorted((str(k), repr(v)) for k, v in config.items()
                        if k not in _CALLBACK_KEYS))


class ProducerPool:
    """The idle producers of one Spark Python worker, by configuration, for its next task.

    A producer that started an idempotent session costs its task a connection and about
    0.5 s waiting for its producer id; a reused Python worker (`spark.python.worker.reuse`,
    Spark's default) runs the next task, or the next micro-batch, with the producer the last
    one finished with, as Spark's own Kafka sink keeps its producers per executor. Only a
    producer whose task ended with every record acknowledged comes back (`UpsertProducer.finish`),
    never a transactional one; one that reported a fatal error while idle, or waited longer
    than `idle_s`, is dropped. A worker runs one task at a time: nothing here is shared
    between tasks running at once.
    """

    def __init__(self, *, idle_s: float = POOL_IDLE_S, size: int = POOL_SIZE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s = idle_s
        self.size = size
        self.clock = clock
        self._idle: dict[Any, tuple[Any, CallbackRouter, float]] = {}

    def __len__(self) -> int:
        return len(self._idle)

    def take(self, key: Any) -> tuple[Any, CallbackRouter] | None:
        """A healthy idle producer of this configuration, or None."""
        now = self.clock()
        for stale in [k for k, (_, _, since) in self._idle.items() if now - since > self.idle_s]:
            del self._idle[stale]
        entry = self._idle.pop(key, None)
        if entry is None:
            return None
        producer, router, _ = entry
        router.owner = None
        producer.poll(0)  # what it reported while idle, to nobody
        if router.fatal or len(producer):
            return None
        return producer, router

    def give(self, key: Any, producer: Any, router: CallbackRouter) -> None:
        """Keep a producer whose task ended with every record acknowledged."""
        router.owner = None
        self._idle.pop(key, None)
        self._idle[key] = (producer, router, self.clock())
        while len(self._idle) > self.size:
            del self._idle[next(iter(self._idle))]  # the longest idle

    def clear(self) -> None:
        self._idle.clear()


#: The pool of this process (a Spark Python worker: `WriteJob.producer`).
WORKER_POOL = ProducerPool()
