"""Spark's own processes started from the pyspark wheel on loopback, stopped by PID.

A standalone cluster (a master and workers, each its own JVM, started with `bin/spark-class`)
and a Spark Connect server (`bin/spark-submit --class ...SparkConnectServer`, what
`sbin/start-connect-server.sh --wait` runs). The pyspark wheel ships both (the connect jar is
`jars/spark-connect_*.jar`); nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class SparkProcess:
    """One JVM of Spark's, its output in `log`; `stop()` ends it by its PID."""

    def __init__(self, name: str, argv: list[str], env: Mapping[str, str], log: Path) -> None:
        self.name = name
        self.log = log
        self._out = open(log, "wb")
        # bin/spark-class execs java: the PID is the JVM's.
        self.proc = subprocess.Popen(argv, env=dict(env), stdout=self._out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_for(self, ready: object, what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():  # type: ignore[operator]
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}) before {what}; "
                                   f"its log:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: no {what} after {timeout:.0f}s; its log:\n"
                                   f"{self.tail()}")
            time.sleep(0.2)

    def tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._out.close()


def spark_env(base: Mapping[str, str], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(SPARK_HOME=spark_home(), SPARK_NO_DAEMONIZE="1", **extra)
    return env


class StandaloneCluster:
    """A master and `workers` workers on 127.0.0.1, each worker with its own work dir."""

    def __init__(self, root: Path, env: Mapping[str, str], *, workers: int = 2,
                 cores: int = 2, memory: str = "2g") -> None:
        self.root = root
        self.procs: list[SparkProcess] = []
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        spark_class = os.path.join(spark_home(), "bin", "spark-class")
        try:
            master = SparkProcess("spark master", [
                spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                "--port", str(self.port), "--webui-port", str(self.ui_port)],
                env, root / "master.log")
            self.procs.append(master)
            master.wait_for(lambda: _listening(self.port), "listening master port")
            # The web UI's port as bound: Spark moves to the next port when the one asked for
            # was taken meanwhile, and another process's page then answers on it.
            master.wait_for(lambda: self._bound_ui(master) is not None, "master web UI")
            self.ui_port = self._bound_ui(master) or self.ui_port
            for i in range(workers):
                work = root / f"worker{i}"
                work.mkdir(parents=True, exist_ok=True)
                self.procs.append(SparkProcess(f"spark worker {i}", [
                    spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                    "--cores", str(cores), "--memory", memory, "--webui-port", "0",
                    "--work-dir", str(work), self.url], env, root / f"worker{i}.log"))
            master.wait_for(lambda: len(self.alive_workers()) == workers,
                            f"{workers} registered workers")
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _bound_ui(master: SparkProcess) -> int | None:
        found = re.search(r"started service 'MasterUI' on port (\d+)", master.tail(400))
        return int(found[1]) if found else None

    def state(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    def alive_workers(self) -> list[dict[str, object]]:
        try:
            workers: list[dict[str, object]] = self.state().get("workers", [])  # type: ignore[assignment]
        except OSError:
            return []
        return [w for w in workers if w.get("state") == "ALIVE"]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()


class ConnectServer:
    """A Spark Connect server (its own driver, `master`) on a free loopback port."""

    def __init__(self, root: Path, env: Mapping[str, str], *, master: str = "local[2]",
                 conf: Mapping[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        argv = [os.path.join(spark_home(), "bin", "spark-submit"),
                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                "--name", "keyguard-connect-tests", "--master", master,
                "--conf", f"spark.connect.grpc.binding.port={self.port}",
                "--conf", "spark.connect.grpc.binding.address=127.0.0.1"]
        for k, v in (conf or {}).items():
            argv += ["--conf", f"{k}={v}"]
        self.proc = SparkProcess("spark connect server", argv, env, root / "connect.log")
        try:
            self.proc.wait_for(lambda: _listening(self.port), "listening gRPC port")
        except BaseException:
            self.proc.stop()
            raise

    def stop(self) -> None:
        self.proc.stop()
