"""Can Spark's Python workers run keyguard? Asked once per Spark application, before a write.

On a cluster the write tasks run in the executors' Python (PYSPARK_PYTHON on every node), not
in the driver's. When that Python lacks keyguard, every task dies with `No module named
'sparkio'` deep inside a cloudpickle traceback, four times over (spark.task.maxFailures). The
probe is a one-task-per-partition job whose function is pickled by value (it needs nothing of
keyguard to load): each task tries keyguard's imports and returns what failed as a row instead
of raising, so the job succeeds, Spark retries nothing, and the driver raises one
`WorkerSetupError` that says what is missing where and how to ship it.

Spark's task retry limit cannot be changed per job, so the probe runs before the write rather
than after its first failed task; a write task that still cannot import keyguard (an executor
that joined after the probe) is recognised by `missing_on_workers`.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any

from keyguard.formats.catalog import BUILTIN_FORMATS, FORMAT_EXTRAS
from keyguard.sparkio.parallelism import default_parallelism

# keyguard's packages, the hint to ship them and the message are the shim's: one builder for
# this probe and for a data-source task on an executor without keyguard (keyguard.sparkio.shim).
from keyguard.sparkio.shim import PACKAGES as PACKAGES
from keyguard.sparkio.shim import SHIP_HINT as SHIP_HINT
from keyguard.sparkio.shim import missing_message
from keyguard.sparkio.workers import WorkerSetupError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_NO_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")
#: pickle's error when the executors' keyguard lacks a class or function the driver's has.
_SKEW = re.compile(r"Can't get attribute '([A-Za-z0-9_.]+)' on <module "
                   r"'(keyguard\.[A-Za-z0-9_.]*)'")

#: What a write or read task may import on an executor: the task modules, every built-in
#: format's module (a format that needs a pip extra, such as protobuf, is not required here)
#: and the dependencies they load only when used.
TASK_MODULES = (
    "keyguard.sparkio.writer", "keyguard.sparkio.producer", "keyguard.sparkio.reader",
    "keyguard.formats.plan",
    *dict.fromkeys(module for name, module in BUILTIN_FORMATS.items()
                   if name not in FORMAT_EXTRAS),
    "keyguard.formats.avro_vector", "numpy", "pandas", "pyarrow", "confluent_kafka",
    "fastavro", "jsonschema",
)

#: Spark applications whose workers passed the probe (app id -> True).
_PROBED: set[str] = set()


def _probe_task(_row: Any, modules: tuple[str, ...] = TASK_MODULES) -> str:
    """Runs in a Python worker, as a plain Python UDF (no Arrow: a worker without pyarrow must
    run it too): keyguard's imports, reported as a JSON object (never raises). `modules` is a
    default argument: the copy shipped by value (`_by_value`) has no module globals."""
    import importlib
    import json
    import socket
    import sys as _sys

    missing, detail = "", ""
    # What a write task imports: keyguard's task modules, the formats' modules (each loaded
    # when a plan names it) and the dependencies they load only when used, so a worker that
    # lacks one fails here, in one message, instead of in every task Spark retries.
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = exc.name or name
            detail = f"{type(exc).__name__}: {exc}"
            break
    return json.dumps({"host": socket.gethostname(), "python": _sys.executable,
                       "missing": missing, "detail": detail})


def _app_id(spark: SparkSession) -> str:
    try:
        return str(spark.conf.get("spark.app.id"))
    except Exception:  # not set under some Connect servers: probe every time
        return ""


def _parallelism(spark: SparkSession) -> int:
    return default_parallelism(spark) or 2


def probe_workers(spark: SparkSession) -> None:
    """Raise WorkerSetupError unless the executors' Python can import keyguard's task code.

    Once per application when it passes. The probe function is pickled by value and runs as
    a plain Python UDF, so loading it needs only pyspark on the workers: a worker without
    pyarrow (which every Arrow path needs first) is named like one without keyguard.
    """
    app = _app_id(spark)
    if app and app in _PROBED:
        return
    from pyspark.sql.functions import udf  # lazy: pyspark

    n = max(1, _parallelism(spark))
    probe = udf(_by_value(_probe_task), "string", useArrow=False)
    rows = [json.loads(r[0]) for r in spark.range(0, n, 1, n).select(probe("id")).collect()]
    bad = [r for r in rows if r["missing"]]
    if bad:
        raise missing_error(bad[0]["missing"], bad[0]["detail"], where=(
            f"the Python workers of the executors ({bad[0]['python']} on host "
            f"{bad[0]['host']}; {len(bad)} of {len(rows)} probe tasks)"))
    if app:
        _PROBED.add(app)


def _by_value(func: Any) -> Any:
    """A copy of `func` that cloudpickle serializes by value, not as
    `keyguard.sparkio.executors.X`."""
    import types

    copy = types.FunctionType(func.__code__, {"__builtins__": __builtins__}, func.__name__,
                              func.__defaults__, func.__closure__)
    copy.__module__ = "__main__"
    copy.__qualname__ = f"<keyguard>.{func.__name__}"
    return copy


def missing_error(missing: str, detail: str, *, where: str) -> WorkerSetupError:
    """The error for a failed import in a Python process Spark runs for keyguard."""
    message, hint = missing_message(missing, detail, where=where)
    return WorkerSetupError(message, hint=hint)


def missing_on_workers(exc: BaseException) -> WorkerSetupError | None:
    """The WorkerSetupError a Spark job failure stands for, if it is a failed import of
    keyguard or one of its dependencies inside a task."""
    text = str(exc)
    skew = _SKEW.search(text)
    if skew is not None:
        return WorkerSetupError(
            f"the executors run another keyguard than this driver: their "
            f"{skew.group(2)} has no {skew.group(1)} (a write task failed)",
            hint="install the same keyguard version on every node, or ship this one with the "
                 "job; see README.md, 'Running on a cluster'")
    if "ModuleNotFoundError" not in text and "No module named" not in text:
        return None
    found = _NO_MODULE.search(text)
    if found is None:
        return None
    missing = found.group(1)
    return missing_error(missing, f"No module named '{missing}'",
                         where="the Python workers of the executors (a write task failed)")


def missing_in_this_process(exc: ImportError, *, role: str) -> WorkerSetupError:
    """A failed import in a Python process Spark started on the driver host (the data
    source's writer() runs in Spark's planner process, with PYSPARK_PYTHON's Python)."""
    return missing_error(exc.name or "?", f"{type(exc).__name__}: {exc}", where=(
        f"the Python that Spark runs for {role} ({sys.executable}; set spark.pyspark.python "
        f"or PYSPARK_PYTHON to a Python with keyguard[spark], or install it there)"))

