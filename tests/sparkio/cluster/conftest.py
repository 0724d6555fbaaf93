"""A Spark standalone cluster and a Spark Connect server, once per test session.

The cluster is a master and two workers, each its own JVM from the pyspark wheel on loopback
(`sparkprocs`), stopped by PID at the end. Its applications' drivers run in spawned Python
processes (`Driver`): one with keyguard on the executors (this checkout on their PYTHONPATH),
and a "bare" one whose executors run a Python that has keyguard's dependencies but not
keyguard, for the shipped-zip path. The Connect server is its own driver (local[2]); its
client runs in a spawned process too (a process that made a Connect session stays in Connect
mode, which the suite's classic local session must not see).

Tests here are marked `cluster` or `connect` (and `spark`, `slow`); they run by default.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sparkprocs import ConnectServer, StandaloneCluster, free_port, spark_env

ROOT = Path(__file__).resolve().parents[3]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & {"cluster_driver", "bare_driver", "standalone"}:
            item.add_marker(pytest.mark.cluster)
        if names & {"connect_spark", "connect_server"}:
            item.add_marker(pytest.mark.connect)
        if names & {"cluster_driver", "bare_driver", "standalone", "connect_spark"}:
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.slow)


def _need_java() -> None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("the cluster tests need Java 17 and `java` is not on PATH: install it with "
                    "`apt-get install -y openjdk-17-jre-headless` (.ci/run does this)",
                    pytrace=False)
    pytest.importorskip("pyspark")


class Services:
    """Starts the JVMs in the background, all at once, at the first test that needs one:
    the cluster (then its two applications' drivers) and the Connect server start side by
    side, and each fixture waits only for what it uses. Stopped by PID at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pool = concurrent.futures.ThreadPoolExecutor(6, thread_name_prefix="spark-start")
        self._futures: dict[str, concurrent.futures.Future[Any]] = {}
        self._started: list[Any] = []

    def get(self, name: str, start: Callable[[], Any]) -> Any:
        if name not in self._futures:
            self._futures[name] = self.pool.submit(self._track, start)
        return self._futures[name].result()

    def soon(self, name: str, start: Callable[[], Any]) -> None:
        """Begin starting `name` now, in the background."""
        if name not in self._futures:
            self._futures[name] = self.pool.submit(self._track, start)

    def _track(self, start: Callable[[], Any]) -> Any:
        thing = start()
        self._started.append(thing)
        return thing

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self.pool.shutdown(wait=True)
        for thing in reversed(self._started):
            closer = getattr(thing, "close", None) or thing.stop
            closer()


@pytest.fixture(scope="session")
def services(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
             ) -> Iterator[Services]:
    _need_java()
    svc = Services(tmp_path_factory.mktemp("spark-services"))
    used = {f for item in request.session.items for f in getattr(item, "fixturenames", ())}
    try:
        if used & {"standalone", "cluster_driver", "bare_driver"}:
            svc.soon("standalone", lambda: _standalone(svc.root / "standalone"))
        if "connect_spark" in used or "connect_server" in used:
            svc.soon("connect", lambda: _connect_server(svc.root / "connect"))
        if "connect_spark" in used:
            svc.soon("connect-client", lambda: _connect_client(svc))
        if "cluster_driver" in used:
            svc.soon("driver", lambda: _cluster_driver(svc))
        if "bare_driver" in used:
            svc.soon("bare", lambda: _bare_driver(svc))
        yield svc
    finally:
        svc.close()


def _standalone(root: Path) -> StandaloneCluster:
    """Master + 2 workers. The workers' environment has no PYTHONPATH: what the executors'
    Python can import is decided per application (spark.executorEnv.PYTHONPATH)."""
    root.mkdir(parents=True)
    env = spark_env(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)
    return StandaloneCluster(root, env, workers=2, cores=2, memory="2g")


@pytest.fixture(scope="session")
def standalone(services: Services) -> StandaloneCluster:
    return services.get("standalone", lambda: _standalone(services.root / "standalone"))  # type: ignore[no-any-return]


class Driver:
    """A Spark session in a spawned process (a classic application's driver, or a Spark
    Connect client); `run(fn, ...)` calls a function of `cluster_scenarios` there and
    returns its result."""

    def __init__(self, master: str, conf: dict[str, str], cwd: Path, *,
                 remote: bool = False) -> None:
        import cluster_scenarios

        self.cwd = cwd
        cwd.mkdir(parents=True, exist_ok=True)
        self.pool = concurrent.futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("spawn"))
        try:
            start = (self.pool.submit(cluster_scenarios.start_connect, master, str(cwd))
                     if remote else
                     self.pool.submit(cluster_scenarios.start, master, conf, str(cwd)))
            self.app_id = start.result(300)
        except BaseException:
            self.pool.shutdown(cancel_futures=True)
            raise

    def run(self, fn: Callable[..., Any], *args: Any, timeout: float = 300) -> Any:
        return self.pool.submit(fn, *args).result(timeout)

    def close(self) -> None:
        import cluster_scenarios

        try:
            self.pool.submit(cluster_scenarios.stop).result(60)
        finally:
            self.pool.shutdown()


def _app_conf(python: str, **extra: str) -> dict[str, str]:
    return {
        "spark.pyspark.python": python,
        "spark.cores.max": "2",
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.driver.memory": "768m",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.port": str(free_port()),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.python.worker.reuse": "true",
        **extra,
    }


def _cluster_driver(svc: Services) -> Driver:
    """An application whose executors import this checkout's keyguard."""
    cluster = svc.get("standalone", lambda: _standalone(svc.root / "standalone"))
    return Driver(cluster.url, _app_conf(
        sys.executable, **{"spark.executorEnv.PYTHONPATH": str(ROOT)}), svc.root / "driver")


@pytest.fixture(scope="session")
def cluster_driver(services: Services) -> Driver:
    return services.get("driver", lambda: _cluster_driver(services))  # type: ignore[no-any-return]


def bare_python(root: Path) -> str:
    """A Python with every dependency of keyguard[spark] but not keyguard: a venv (no pip)
    whose one .pth line adds this interpreter's site-packages as a plain path. Python runs
    .pth files only in site directories, so the editable keyguard install's own .pth (and so
    keyguard) stays invisible to it."""
    import subprocess

    venv = root / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(venv)],
                   check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True
                          ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "keyguard-deps.pth").write_text("\n".join(sorted(ours)) + "\n")
    check = subprocess.run([python, "-c", "import pyarrow, numpy, confluent_kafka, fastavro, "
                            "jsonschema, pyspark\ntry:\n import keyguard\nexcept ImportError:\n "
                            "print('no keyguard')"], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                           cwd=str(venv))
    assert check.stdout.strip() == "no keyguard", check.stderr
    return python


@pytest.fixture(scope="session")
def keyguard_zip(tmp_path_factory: pytest.TempPathFactory) -> str:
    """This checkout's wheel copied to keyguard.zip, as README's recipe makes it for
    `--py-files` (a wheel is a zip with `keyguard/` at its root)."""
    out = tmp_path_factory.mktemp("zip")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(ROOT)], check=True, capture_output=True,
                   timeout=300)
    (wheel,) = out.glob("keyguard-*.whl")
    path = out / "keyguard.zip"
    wheel.rename(path)
    with zipfile.ZipFile(path) as z:
        assert "keyguard/sparkio/writer.py" in z.namelist()
    return str(path)


def _bare_driver(svc: Services) -> Driver:
    """An application (one executor) whose executors' Python lacks keyguard (nothing on their
    PYTHONPATH)."""
    python = bare_python(svc.root)
    cluster = svc.get("standalone", lambda: _standalone(svc.root / "standalone"))
    return Driver(cluster.url, _app_conf(python, **{"spark.cores.max": "1"}),
                  svc.root / "bare")


@pytest.fixture(scope="session")
def bare_driver(services: Services) -> Driver:
    return services.get("bare", lambda: _bare_driver(services))  # type: ignore[no-any-return]


def _connect_server(root: Path) -> ConnectServer:
    """A Spark Connect server (local[2]) whose Python workers import this checkout."""
    root.mkdir(parents=True)
    env = spark_env(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(ROOT))
    return ConnectServer(root, env, conf={
        "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC", "spark.driver.memory": "768m"})


@pytest.fixture(scope="session")
def connect_server(services: Services) -> ConnectServer:
    pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect]")
    return services.get("connect", lambda: _connect_server(services.root / "connect"))  # type: ignore[no-any-return]


def _connect_client(svc: Services) -> Driver:
    server = svc.get("connect", lambda: _connect_server(svc.root / "connect"))
    return Driver(server.url, {}, svc.root / "connect-client", remote=True)


@pytest.fixture(scope="session")
def connect_spark(connect_server: ConnectServer, services: Services) -> Driver:
    """A Spark Connect client in a process of its own (see `cluster_scenarios.start_connect`)."""
    return services.get("connect-client", lambda: _connect_client(services))  # type: ignore[no-any-return]
