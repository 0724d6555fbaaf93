"""Spark's Python workers: the interpreter keyguard's sessions point them at, the one message a
session whose workers cannot import keyguard gets, and keyguard's error first in Spark's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from broker import new_topic

from keyguard.formats.errors import InvalidOptionError, SchemaError
from keyguard.sparkio.producer import ChangelogKindError, TaskDeliveryError
from keyguard.sparkio.workers import (
    WorkerSetupError,
    for_spark,
    in_spark_worker,
    missing_keyguard,
    point_workers_here,
    relayed,
)

ROOT = Path(__file__).resolve().parents[2]


class Builder:
    def __init__(self) -> None:
        self.conf: dict[str, str] = {}

    def config(self, key: str, value: str) -> Builder:
        self.conf[key] = value
        return self


def test_sessions_keyguard_builds_run_this_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    builder = point_workers_here(Builder())
    assert builder.conf["spark.pyspark.python"] == sys.executable
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def test_a_users_interpreter_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python3")
    assert point_workers_here(Builder()).conf["spark.pyspark.python"] == "/opt/py/bin/python3"


def test_outside_a_worker_for_spark_sets_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_HIDE_TRACEBACK", raising=False)
    exc = InvalidOptionError("bad")
    assert not in_spark_worker()
    assert for_spark(exc) is exc and "SPARK_HIDE_TRACEBACK" not in os.environ


@pytest.mark.parametrize(("text", "cls", "says"), [
    ("[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: "
     "keyguard.formats.errors.InvalidOptionError: topic t: bad option (do this)\n SQLSTATE: 38000",
     InvalidOptionError, "topic t: bad option"),
    ("An exception was thrown from the Python worker:\n"
     "keyguard.sparkio.producer.ChangelogKindError: topic t: 1 row whose changelog column "
     "'op' is not +I", ChangelogKindError, "'op'"),
    ("Job aborted: ...\nkeyguard.sparkio.producer.TaskDeliveryError: task 0 writing topic t: "
     "records were not acknowledged: 2 records delivered, 5 undelivered (0 failed, "
     "5 unacknowledged)",
     TaskDeliveryError, "5 undelivered"),
    ("Traceback ...\nkeyguard.formats.errors.SchemaError: changelog.column 'op' is not a column",
     SchemaError, "changelog.column"),
])
def test_a_spark_error_turns_back_into_the_keyguard_error(text: str, cls: type,
                                                          says: str) -> None:
    error = relayed(RuntimeError(text))
    assert type(error) is cls and says in str(error)
    if isinstance(error, TaskDeliveryError):
        assert (error.delivered, error.undelivered) == (2, 5)


@pytest.mark.parametrize("text", [
    "Traceback ...\nZeroDivisionError: division by zero",
    "os.errors.InvalidOptionError: not ours",
    "keyguard.formats.errors.NoSuchError: not a class",
])
def test_other_spark_errors_are_left_alone(text: str) -> None:
    assert relayed(RuntimeError(text)) is None


def test_workers_without_keyguard_get_one_message() -> None:
    error = missing_keyguard(RuntimeError(
        "...\n  File \"<frozen importlib._bootstrap>\"...\nModuleNotFoundError: No module "
        "named 'keyguard'\n..."))
    assert isinstance(error, WorkerSetupError) and error.exit_code == 2
    assert "cannot import keyguard" in str(error) and "spark.pyspark.python" in str(error)
    assert missing_keyguard(RuntimeError("No module named 'numpy'")) is None


# -- real sessions, in subprocesses (each starts its own JVM) ------------------------------------

#: A `python3` first on PATH that is a Python without keyguard: it cannot import sparkio,
#: formats or guard (as a system python3 outside the venv).
STUB = """#!/bin/sh
PYTHONPATH="{blocker}${{PYTHONPATH:+:$PYTHONPATH}}" exec {python} "$@"
"""
BLOCKER = """
import sys

class _NoKeyguard:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "keyguard":
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return None

sys.meta_path.insert(0, _NoKeyguard())
"""


def _run(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("java") is None:
        pytest.fail("the Spark tests need Java 17")
    stub_dir, blocker = tmp_path / "bin", tmp_path / "blocker"
    stub_dir.mkdir()
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    stub = stub_dir / "python3"
    stub.write_text(STUB.format(blocker=blocker, python=sys.executable))
    stub.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(PATH=f"{stub_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT),
               SPARK_LOCAL_IP="127.0.0.1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.spark
@pytest.mark.slow
def test_the_demo_session_runs_its_workers_on_keyguards_interpreter(tmp_path: Path) -> None:
    done = _run("""
        import sys
        from keyguard.sparkio.demo import _spark
        spark = _spark()
        names = spark.range(2).rdd.map(lambda _: __import__("sparkio").__name__).collect()
        print("WORKERS", names, spark.conf.get("spark.pyspark.python") == sys.executable)
        spark.stop()
    """, tmp_path)
    assert "WORKERS ['sparkio', 'sparkio'] True" in done.stdout, done.stderr[-3000:]


@pytest.mark.spark
@pytest.mark.slow
def test_a_user_session_without_keyguard_on_its_workers_gets_one_message(
        tmp_path: Path, kafka_bootstrap: str) -> None:
    # A live broker and topic: the guard (in this process) passes, then the workers are probed.
    topic = new_topic(kafka_bootstrap, 1)
    done = _run(f"""
        from pyspark.sql import SparkSession
        from keyguard import sparkio
        from keyguard.sparkio.workers import WorkerSetupError
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("OFF")
        df = spark.createDataFrame([(1, "a")], "id int, v string")
        try:
            sparkio.write_upsert(df, **{{"topic": "{topic}", "primary-key": "id",
                                        "key.format": "json", "value.format": "json",
                                        "properties.bootstrap.servers": "{kafka_bootstrap}"}})
        except WorkerSetupError as exc:
            print("KIND", exc.kind, "|", str(exc).splitlines()[0])
        spark.stop()
    """, tmp_path)
    assert "KIND spark-workers | keyguard is not installed in the Python workers" in done.stdout, \
        done.stdout[-2000:] + done.stderr[-3000:]
