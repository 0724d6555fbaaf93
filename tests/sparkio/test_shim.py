"""What Spark ships to the executors loads where keyguard is missing, and says so.

Each case pickles the data source's objects as Spark does (pyspark's cloudpickle) and loads
them in a fresh Python whose imports of keyguard (or of one dependency) fail, as on an
executor without it; the real thing on a standalone cluster is in tests/sparkio/cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from keyguard.guard.offsets import OffsetRange
from keyguard.sparkio.reader import KafkaInputPartition, UpsertKafkaReader
from keyguard.sparkio.shim import (
    KeyguardMissingError,
    ShippedArrowWriter,
    ShippedPartition,
    ShippedReader,
    ShippedStreamArrowWriter,
    ship,
)
from keyguard.sparkio.source import UpsertKafkaDataSource
from keyguard.sparkio.writer import (
    UpsertKafkaStreamWriter,
    UpsertKafkaWriter,
    WriteJob,
    resolve_plan_only,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = StructType([StructField("id", IntegerType()), StructField("v", StringType())])
# Nothing listens on port 9: a loaded reader gives up after its stall timeout (2 s here).
OPTIONS = {"topic": "t", "properties.bootstrap.servers": "127.0.0.1:9", "primary-key": "id",
           "key.format": "json", "value.format": "json", "scan.stall-timeout": "2s"}

#: Runs in the fresh Python: blocks the imports named in argv[2], loads each pickled object
#: and uses it as a task would; prints what each use raised (or returned).
EXECUTOR = r"""
import json, pickle, sys

blocked = set(json.loads(sys.argv[2]))


class Missing:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in blocked):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, Missing())
objs = pickle.loads(open(sys.argv[1], "rb").read())
out = {"source": objs["source"].name()}


def outcome(use):
    try:
        got = use()
        return {"ok": type(got).__name__}
    except Exception as exc:
        return {"type": type(exc).__module__ + "." + type(exc).__qualname__, "text": str(exc),
                "import_error": isinstance(exc, ImportError)}


out["writer"] = outcome(lambda: objs["writer"].write(iter([])))
out["stream"] = outcome(lambda: objs["stream"].write(iter([])))
out["partition"] = outcome(lambda: objs["partition"].real())
out["read"] = outcome(lambda: list(objs["reader"].read(objs["partition"])))
out["leaked"] = sorted(m for m in sys.modules
                      if any(m == b or m.startswith(b + ".") for b in blocked))
print(json.dumps(out))
"""


def _job() -> WriteJob:
    conn, plan = resolve_plan_only(SCHEMA, OPTIONS)
    return WriteJob(plan.spec, conn, 1)


def _shipped() -> dict[str, Any]:
    return {
        "source": UpsertKafkaDataSource(OPTIONS),
        "writer": ship(UpsertKafkaWriter(_job(), 0.0)),
        "stream": ship(UpsertKafkaStreamWriter(_job())),
        "reader": ship(UpsertKafkaReader(OPTIONS, SCHEMA)),
        "partition": ShippedPartition(KafkaInputPartition((OffsetRange("t", 0, 0, 5),), 1)),
    }


def _on_executor(tmp_path: Path, blocked: list[str]) -> dict[str, Any]:
    path = tmp_path / "shipped.pkl"
    path.write_bytes(cloudpickle.dumps(_shipped()))
    script = tmp_path / "executor.py"
    script.write_text(EXECUTOR)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script), str(path), json.dumps(blocked)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("blocked", "says"), [
    (["keyguard"],
     "keyguard is not installed in the Python workers of the executors ({python} on host "),
    (["keyguard.sparkio"],
     "keyguard is not installed in the Python workers of the executors ({python} on host "),
    (["confluent_kafka"], "keyguard's dependency 'confluent_kafka' is missing in the Python "
                          "workers of the executors ({python} on host "),
])
def test_a_task_without_keyguard_says_what_is_missing(tmp_path: Path, blocked: list[str],
                                                      says: str) -> None:
    out = _on_executor(tmp_path, blocked)
    # The data source instance Spark pickles into every read task loads without keyguard.
    assert out["source"] == "upsert-kafka"
    for use in ("writer", "stream", "read"):
        got = out[use]
        assert got.get("type") == "keyguard.sparkio.shim.KeyguardMissingError", (use, got)
        assert got["import_error"] is True
        assert says.format(python=sys.executable) in got["text"], (use, got)
        assert got["text"].count("keyguard") >= 1 and "Traceback" not in got["text"]
        assert "'Running on a cluster' (docs/how-to/cluster.md)" in got["text"]
        if blocked[0].startswith("keyguard"):
            assert "spark.submit.pyFiles" in got["text"] and "spark.archives" in got["text"]
            assert got["text"].count("keyguard is not installed") == 1  # not wrapped twice


def test_a_healthy_task_gets_the_real_objects(tmp_path: Path) -> None:
    out = _on_executor(tmp_path, [])
    assert out["partition"] == {"ok": "KafkaInputPartition"}
    # The writer loads and runs: with no rows it connects to nothing and reports its stats.
    assert out["writer"] == {"ok": "UpsertCommitMessage"}, out["writer"]
    assert out["stream"] == {"ok": "UpsertCommitMessage"}, out["stream"]
    # The reader loads and runs too: it fails on the broker, not on an import.
    assert out["read"]["type"] == "keyguard.formats.errors.BrokerUnavailableError", out["read"]
    assert out["read"]["import_error"] is False and "127.0.0.1:9" in out["read"]["text"]


def _as_loaded(obj: Any) -> Any:
    """`obj` as a task has it: only the payload, not yet loaded. (Not a cloudpickle round trip
    in this process: unpickling a by-value class where it was pickled redefines the original
    class's methods, which would detach keyguard.sparkio.source from its module for later tests.)"""
    obj.__setstate__(obj.__getstate__())
    return obj


def test_the_shipped_objects_carry_the_real_ones() -> None:
    job = _job()
    shipped = {k: _as_loaded(v) for k, v in _shipped().items() if k != "source"}
    assert isinstance(shipped["writer"], ShippedArrowWriter)
    assert isinstance(shipped["stream"], ShippedStreamArrowWriter)
    assert isinstance(shipped["reader"], ShippedReader)
    writer = shipped["writer"].real()
    assert isinstance(writer, UpsertKafkaWriter) and writer.job == job
    assert shipped["stream"].real().job == job
    reader = shipped["reader"].real()
    assert isinstance(reader, UpsertKafkaReader) and reader.settings.topic == "t"
    part = shipped["partition"].real()
    assert isinstance(part, KafkaInputPartition)
    assert part.ranges == (OffsetRange("t", 0, 0, 5),) and part.num_partitions == 1
    # Loaded once per process: a second use is the same object.
    assert shipped["writer"].real() is writer


def test_only_writers_and_readers_are_shipped() -> None:
    with pytest.raises(TypeError, match="keyguard ships no int"):
        ship(5)


def test_the_planner_without_a_dependency_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark's planner Python (PYSPARK_PYTHON on the driver's host) runs writer()/reader()."""
    import keyguard.sparkio.source

    def broken() -> Any:
        raise ModuleNotFoundError("No module named 'jsonschema'", name="jsonschema")

    monkeypatch.setattr(keyguard.sparkio.source, "_create_writer", broken)
    with pytest.raises(KeyguardMissingError) as info:
        UpsertKafkaDataSource(OPTIONS).writer(SCHEMA, False)
    text = str(info.value)
    assert ("keyguard's dependency 'jsonschema' is missing in the Python that Spark runs for "
            "the upsert-kafka data source's writer()") in text
    assert sys.executable in text and "Running on a cluster" in text


def test_the_data_source_hands_spark_shipped_objects() -> None:
    source = UpsertKafkaDataSource(OPTIONS)
    reader = source.reader(SCHEMA)
    assert isinstance(reader, ShippedReader)
    assert isinstance(reader.real(), UpsertKafkaReader)
