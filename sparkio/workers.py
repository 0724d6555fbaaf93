"""Spark's Python workers: the interpreter they run, and what their errors say to the user.

Spark starts its Python workers (the data source's planner, every task) with `python3` from
the PATH unless `spark.pyspark.python` or PYSPARK_PYTHON says otherwise: outside an activated
venv that interpreter has no keyguard, and the write dies in a 40-line traceback ending in
`No module named 'sparkio'`. Sessions keyguard builds point the workers at the interpreter
keyguard runs in (`point_workers_here`); a user's session whose workers cannot import keyguard
gets one message saying so (`missing_keyguard`).

A keyguard error raised in a worker reaches the user inside Spark's error text:
`[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: Traceback ...`
for writer(), `An exception was thrown from the Python worker:` and a traceback for a task,
keyguard's message last, under the traceback (with Spark's simplified tracebacks an
exception's cause or context is dropped, so chaining cannot move it up). `for_spark` has the
dying worker print the error without its traceback: keyguard's class and message follow
Spark's prefix directly. write_upsert, which runs on the driver, turns the Spark error back
into the keyguard error (`relayed`).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from keyguard.formats.errors import EXIT_INVALID, KeyguardError

#: The packages a Spark worker must import to run keyguard's data source.
PACKAGES = ("keyguard",)


class WorkerSetupError(KeyguardError):
    """Spark's Python workers cannot run keyguard (another interpreter, keyguard missing)."""

    kind = "spark-workers"
    exit_code = EXIT_INVALID


def in_spark_worker() -> bool:
    """True in a Python process Spark started (a task, the data source's planner)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return str(getattr(spec, "name", "") or "").startswith("pyspark.")


def for_spark(exc: KeyguardError) -> KeyguardError:
    """`exc`, to re-raise in a Spark worker so that its class and message are the first thing
    Spark prints, without the worker's traceback above them.

    The worker formats the exception it dies of with `SPARK_HIDE_TRACEBACK` read at that
    moment (pyspark.util.handle_worker_exception), and exits: setting it here, in a worker
    about to die of `exc`, changes nothing else. Outside Spark's workers nothing is set.
    """
    if in_spark_worker():
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"
    return exc


# --------------------------------------------------------------------------------------------
# On the driver: the Spark error back into keyguard's
# --------------------------------------------------------------------------------------------

#: A keyguard error as Python's traceback module prints it: `module.Class: message`.
_FORMATTED = re.compile(
    r"^(?:.*?: )?(?P<module>keyguard(?:\.\w+)+)\.(?P<cls>\w+): (?P<message>.+)$",
    re.MULTILINE)
_COUNTS = re.compile(r"(?P<delivered>\d+) records delivered, (?P<undelivered>\d+) undelivered")


def relayed(spark_error: BaseException) -> KeyguardError | None:
    """The keyguard error inside a Spark error, rebuilt with its class and message (the hint
    stays in the message), or None when the Spark error carries none."""
    missing = missing_keyguard(spark_error)
    if missing is not None:
        return missing
    text = str(spark_error)
    for m in _FORMATTED.finditer(text):
        cls = _class(m.group("module"), m.group("cls"))
        if cls is None:
            continue
        message = m.group("message").strip()
        try:
            if cls.__name__ == "TaskDeliveryError":
                counts = _COUNTS.search(message)
                return cls(message, delivered=int(counts["delivered"]) if counts else 0,  # type: ignore[call-arg]
                           undelivered=int(counts["undelivered"]) if counts else 0)
            if cls.__name__ == "GuardBlockedError":
                continue  # carries its report: write_upsert hands it back whole instead
            return cls(message)
        except TypeError:
            continue
    return None


def _class(module: str, name: str) -> type[KeyguardError] | None:
    mod = sys.modules.get(module)
    if mod is None:
        try:
            import importlib

            mod = importlib.import_module(module)
        except ImportError:
            return None
    cls = getattr(mod, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, KeyguardError) else None


_NO_MODULE = re.compile(r"No module named '(?P<name>[\w.]+)'")


def missing_keyguard(spark_error: BaseException) -> WorkerSetupError | None:
    """One clear message when Spark's Python workers could not import keyguard."""
    m = _NO_MODULE.search(str(spark_error))
    if m is None or m.group("name").split(".")[0] not in PACKAGES:
        return None
    configured = os.environ.get("PYSPARK_PYTHON") or "python3 from the PATH"
    return WorkerSetupError(
        f"Spark's Python workers cannot import keyguard (No module named "
        f"'{m.group('name')}'): they run {configured}, not this interpreter "
        f"({sys.executable}); nothing was written",
        hint=f"start the session with .config('spark.pyspark.python', '{sys.executable}') "
             "(or export PYSPARK_PYTHON), or install keyguard where the workers run, on every "
             "executor")


# --------------------------------------------------------------------------------------------
# Sessions keyguard builds
# --------------------------------------------------------------------------------------------


def worker_python() -> str:
    """The interpreter Spark's workers should run: the user's choice, else this one."""
    return os.environ.get("PYSPARK_PYTHON") or sys.executable


def point_workers_here(builder: Any) -> Any:
    """`builder` with Spark's Python workers (driver side and executors) running the
    interpreter keyguard runs in, unless the user chose one (PYSPARK_PYTHON)."""
    python = worker_python()
    os.environ.setdefault("PYSPARK_PYTHON", python)
    return builder.config("spark.pyspark.python", python)


def quiet_session(master: str, app_name: str, **config: str) -> Any:
    """A Spark session keyguard starts for a command (`keyguard demo`, `keyguard migrate
    --spark`): its workers run this interpreter, no UI, no console progress bars, UTC."""
    import warnings

    # Quiet start-up: no loopback-address warning, no pandas-version FutureWarning.
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
    from pyspark.sql import SparkSession  # lazy: the caller says when pyspark is missing

    builder = (point_workers_here(SparkSession.builder).master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in config.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
