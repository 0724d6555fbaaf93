"""The messages for a Python that Spark runs without keyguard or a dependency of it (the
cluster tests run the real thing: tests/sparkio/cluster)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from keyguard.formats.errors import KeyguardError
from keyguard.sparkio.executors import (
    WorkerSetupError,
    _by_value,
    _probe_task,
    missing_error,
    missing_in_this_process,
    missing_on_workers,
)

TASK_FAILURE = ("Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 times ... "
                "org.apache.spark.api.python.PythonException: Traceback (most recent call "
                "last):\n  File \".../cloudpickle/cloudpickle.py\", line 1, in subimport\n"
                "    __import__(name)\nModuleNotFoundError: No module named '{}'\n")


@pytest.mark.parametrize(("missing", "says"), [
    ("keyguard", "keyguard is not installed in the Python workers of the executors"),
    ("keyguard.formats", "keyguard is not installed in the Python workers of the executors"),
    ("keyguard.guard", "keyguard is not installed in the Python workers of the executors"),
    ("keyguard.sparkio.writer", "keyguard is not installed in the Python workers of the executors"),
    ("numpy", "keyguard's dependency 'numpy' is missing in the Python workers"),
    ("jsonschema", "keyguard's dependency 'jsonschema' is missing"),
    ("confluent_kafka", "keyguard's dependency 'confluent_kafka' is missing"),
    ("fastavro", "keyguard's dependency 'fastavro' is missing"),
])
def test_a_failed_import_in_a_task_is_named(missing: str, says: str) -> None:
    err = missing_on_workers(Exception(TASK_FAILURE.format(missing)))
    assert isinstance(err, WorkerSetupError) and err.kind == "spark-workers"
    assert err.exit_code == 2 and says in str(err)
    assert "'Running on a cluster' (docs/how-to/cluster.md)" in str(err)
    assert "Traceback" not in str(err)
    if missing.split(".")[0] == "keyguard":
        assert "spark.submit.pyFiles" in str(err) and "spark.archives" in str(err)


@pytest.mark.parametrize("text", [
    "Task failed: ValueError: zip() argument 2 is shorter than argument 1",
    "org.apache.kafka... Broker transport failure",
    "ModuleNotFoundError without a module name",
])
def test_other_task_failures_are_left_alone(text: str) -> None:
    assert missing_on_workers(Exception(text)) is None


def test_another_keyguard_on_the_executors_is_named() -> None:
    text = ("_pickle.UnpicklingError ... AttributeError: Can't get attribute "
            "'WriteJob.produce_task' on <module 'keyguard.sparkio.writer' from "
            "'/old/sparkio/writer.py'>")
    err = missing_on_workers(Exception(text))
    assert err is not None and "another keyguard than this driver" in str(err)
    assert "keyguard.sparkio.writer has no WriteJob.produce_task" in str(err)


def test_a_missing_dependency_in_sparks_planner_python() -> None:
    err = missing_in_this_process(ModuleNotFoundError("No module named 'jsonschema'",
                                                      name="jsonschema"),
                                  role="the upsert-kafka data source's writer()")
    assert isinstance(err, KeyguardError) and err.kind == "spark-workers"
    assert "keyguard's dependency 'jsonschema' is missing in the Python that Spark runs" in \
        str(err)
    assert sys.executable in str(err) and "spark.pyspark.python" in str(err)


def test_the_data_source_says_when_its_python_lacks_the_writer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    from keyguard.sparkio.source import _create_writer

    monkeypatch.setitem(sys.modules, "keyguard.sparkio.writer", None)  # import fails: ImportError
    with pytest.raises(WorkerSetupError, match="keyguard is not installed in the Python that "
                                               "Spark runs for the upsert-kafka data source"):
        _create_writer()


def test_the_probe_loads_and_reports_where_keyguard_is_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe must load on a worker without keyguard (pickled by value, not by name), and
    report the failed import as a row instead of raising (so Spark retries nothing)."""
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    payload = cloudpickle.dumps(_by_value(_probe_task))
    here = json.loads(pickle.loads(payload)(1))
    assert here["missing"] == ""  # this interpreter has keyguard
    for name in [m for m in sys.modules if m.split(".")[0] == "keyguard"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "keyguard", None)  # as on a node without keyguard
    there = json.loads(pickle.loads(payload)(1))
    assert there["missing"].split(".")[0] == "keyguard"
    assert "ModuleNotFoundError" in there["detail"] and there["python"] == sys.executable


@pytest.mark.parametrize("dependency", ["numpy", "fastavro", "jsonschema", "confluent_kafka",
                                        "pyarrow"])
def test_the_probe_loads_the_dependencies_a_task_loads_later(
        monkeypatch: pytest.MonkeyPatch, dependency: str) -> None:
    """keyguard's task modules import these only when a batch needs them: the probe imports
    them itself (and needs none of them to run), so an executor without one fails in one
    message before any task."""
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    payload = cloudpickle.dumps(_by_value(_probe_task))
    for name in [m for m in sys.modules if m.split(".")[0] in ("keyguard", dependency)]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, dependency, None)  # as on a node without it
    row = json.loads(pickle.loads(payload)(1))
    assert row["missing"] == dependency and dependency in row["detail"]
    error = missing_error(row["missing"], row["detail"], where="the Python workers")
    assert f"keyguard's dependency '{dependency}' is missing" in str(error)


_NO_PYARROW = """
import sys
from pyspark.sql import SparkSession
from keyguard.sparkio.executors import probe_workers
from keyguard.sparkio.workers import WorkerSetupError
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .getOrCreate())
try:
    probe_workers(spark)
except WorkerSetupError as exc:
    print("WORKER-SETUP:", exc)
finally:
    spark.stop()
"""


@pytest.mark.spark
@pytest.mark.slow
def test_a_worker_python_without_pyarrow_is_named_before_any_arrow_path(tmp_path: Path
                                                                        ) -> None:
    """The workers' Python has keyguard but no pyarrow (a `python3` from the PATH, say): the
    probe itself must run there and say so in one sentence, not die in Arrow's serializer."""
    pytest.importorskip("pyspark")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "zz_no_pyarrow.pth").write_text("import sys; sys.modules['pyarrow'] = None\n")
    env = {**os.environ, "PYSPARK_PYTHON": str(python)}
    done = subprocess.run([sys.executable, "-c", _NO_PYARROW], env=env,
                          capture_output=True, text=True, timeout=240)
    out = done.stdout + done.stderr
    assert "WORKER-SETUP:" in done.stdout, out[-3000:]
    assert "keyguard's dependency 'pyarrow' is missing in the Python workers" in done.stdout
    assert str(python) in done.stdout
