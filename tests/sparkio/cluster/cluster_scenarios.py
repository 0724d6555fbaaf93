"""What the cluster tests run inside a driver process of their own.

A Python process holds one SparkContext for life, and the suite's local[2] session may already
be the pytest process's. So each standalone-cluster application runs its driver in a spawned
process (`Driver` in the conftest): `start` builds the session there once, and each scenario
function here runs in that process and returns plain values (Spark's own exceptions do not
pickle: the scenarios turn them into `Failure`s).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SPARK: Any = None


@dataclass(frozen=True)
class Failure:
    """An exception raised in the driver process, as plain values."""

    type: str
    kind: str | None
    message: str


def failure(exc: BaseException) -> Failure:
    return Failure(type(exc).__name__, getattr(exc, "kind", None), str(exc))


def start(master: str, conf: dict[str, str], cwd: str) -> str:
    """Build this process's SparkSession on `master`; its application id."""
    global _SPARK
    from pyspark.sql import SparkSession

    from keyguard import sparkio
    os.chdir(cwd)  # relative paths (a driver-only file:// registry) resolve here
    # Classic PySpark takes the executors' Python from PYSPARK_PYTHON, not from the conf.
    os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    builder = SparkSession.builder.master(master).appName("keyguard-cluster-tests")
    for k, v in conf.items():
        builder = builder.config(k, v)
    _SPARK = builder.getOrCreate()
    _SPARK.sparkContext.setLogLevel("ERROR")
    sparkio.register(_SPARK)
    return str(_SPARK.sparkContext.applicationId)


def start_connect(url: str, cwd: str) -> str:
    """Build this process's Spark Connect session. A process that has created one is in
    Spark Connect mode for good (pyspark's functions then build Connect columns), so the
    Connect client gets a process of its own too, apart from the suite's classic session."""
    global _SPARK
    from pyspark.sql import SparkSession

    from keyguard import sparkio
    os.chdir(cwd)
    _SPARK = SparkSession.builder.remote(url).create()
    sparkio.register(_SPARK)
    return type(_SPARK).__module__


def stop() -> None:
    if _SPARK is not None:
        _SPARK.stop()


def options(bootstrap: str, topic: str, **extra: str) -> dict[str, str]:
    return {"topic": topic, "properties.bootstrap.servers": bootstrap,
            "primary-key": "id", **extra}


def changes(n: int) -> list[tuple[int, str, str]]:
    """n changes of n // 4 keys; every 7th a delete."""
    return [(i % (n // 4), f"v{i}", "-D" if i % 7 == 6 else "+U") for i in range(n)]


def write(bootstrap: str, topic: str, rows: list[tuple[Any, ...]], ddl: str,
          extra: dict[str, str], placement: bool = True) -> dict[str, Any] | Failure:
    """write_upsert; the summary as a dict and (classic) the write job's task placement."""
    import dataclasses

    from keyguard import sparkio
    df = _SPARK.createDataFrame(rows, ddl)
    try:
        summary = sparkio.write_upsert(df, **options(bootstrap, topic, **extra))
    except Exception as exc:
        return failure(exc)
    out = dataclasses.asdict(summary)
    if placement:
        out["executors"] = last_job_executors()
    return out


def write_via_format(bootstrap: str, topic: str, rows: list[tuple[Any, ...]], ddl: str,
                     extra: dict[str, str]) -> Failure | None:
    df = _SPARK.createDataFrame(rows, ddl)
    try:
        df.write.format("upsert-kafka").options(**options(bootstrap, topic, **extra)) \
            .mode("append").save()
    except Exception as exc:
        return failure(exc)
    return None


def read(bootstrap: str, topic: str, extra: dict[str, str], ddl: str
         ) -> list[dict[str, Any]]:
    """The topic read back through the data source on the cluster (its tasks read)."""
    df = _SPARK.read.format("upsert-kafka").options(**options(bootstrap, topic, **extra)) \
        .schema(ddl).load()
    return [r.asDict() for r in df.collect()]


def read_or_failure(bootstrap: str, topic: str, extra: dict[str, str], ddl: str
                    ) -> list[dict[str, Any]] | Failure:
    """`read`, a failure as plain values."""
    try:
        return read(bootstrap, topic, extra, ddl)
    except Exception as exc:
        return failure(exc)


def last_job_executors(deadline_s: float = 180.0) -> dict[str, Any]:
    """Executor ids of the tasks of the latest job, from the driver's status REST API, and
    the work directory each standalone executor ran in (which worker it belonged to).

    The status API is filled by a listener after the job returns, and answers slowly on a
    loaded machine: it is asked again until the latest job shows as succeeded with every task
    of its result stage listed, within `deadline_s`."""
    import urllib.request

    sc = _SPARK.sparkContext
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"

    def get(path: str) -> Any:
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return json.loads(r.read())

    deadline = time.monotonic() + deadline_s
    seen: object = None
    while time.monotonic() < deadline:
        try:
            jobs = sorted(get("/jobs"), key=lambda j: j["jobId"])
            stage = max(jobs[-1]["stageIds"])  # the result stage: the write tasks
            attempt = get(f"/stages/{stage}/0")
            expected = (attempt[0] if isinstance(attempt, list) else attempt)["numTasks"]
            tasks = get(f"/stages/{stage}/0/taskList?length=1000")
            seen = (jobs[-1]["status"], len(tasks), expected)
            if jobs[-1]["status"] == "SUCCEEDED" and len(tasks) == expected:
                return {"stage": stage, "executors": sorted({t["executorId"] for t in tasks}),
                        "tasks": len(tasks)}
        except OSError as exc:  # a timed-out or refused answer: asked again
            seen = exc
        time.sleep(0.5)
    raise TimeoutError(f"the driver's status API did not show the last job's tasks within "
                       f"{deadline_s:g}s (last answer: {seen!r})")


def stream(bootstrap: str, topic: str, root: str, files: list[list[dict[str, Any]]]) -> \
        Failure | None:
    """A file-source stream written to the topic: stopped after its first progress, then
    restarted from the checkpoint with the rest of the files (availableNow)."""
    src, ckpt = Path(root) / "in", Path(root) / "ckpt"
    src.mkdir(parents=True)
    opts = options(bootstrap, topic, **{"key.format": "json", "value.format": "json",
                                        "changelog.column": "op"})

    def put(n: int) -> None:
        path = src / f"part-{n:03d}.json"
        path.write_text("\n".join(json.dumps(r) for r in files[n]))
        stamp = time.time() - 100 + n  # the file source takes files in modification order
        os.utime(path, (stamp, stamp))

    def begin(trigger: dict[str, Any]) -> Any:
        s = (_SPARK.readStream.schema("id int, v int, op string")
             .option("maxFilesPerTrigger", 1).json(str(src)))
        return (s.writeStream.format("upsert-kafka").options(**opts)
                .option("checkpointLocation", str(ckpt)).trigger(**trigger).start())

    half = len(files) // 2
    for n in range(half):
        put(n)
    query = begin({"processingTime": "200 milliseconds"})
    deadline = time.monotonic() + 90
    while not query.recentProgress and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()
    if query.exception() is not None:
        return failure(query.exception())
    for n in range(half, len(files)):
        put(n)
    query = begin({"availableNow": True})
    query.awaitTermination(180)
    return failure(query.exception()) if query.exception() is not None else None


def stream_once(bootstrap: str, topic: str, root: str, rows: list[dict[str, Any]]
                ) -> Failure | None:
    """One availableNow run of a file-source stream written to the topic; its failure."""
    src = Path(root) / "in"
    src.mkdir(parents=True)
    (src / "part-000.json").write_text("\n".join(json.dumps(r) for r in rows))
    opts = options(bootstrap, topic, **{"key.format": "json", "value.format": "json",
                                        "changelog.column": "op"})
    query = (_SPARK.readStream.schema("id int, v int, op string").json(str(src))
             .writeStream.format("upsert-kafka").options(**opts)
             .option("checkpointLocation", str(Path(root) / "ckpt"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(180)
    except Exception as exc:
        return failure(exc)
    return failure(query.exception()) if query.exception() is not None else None


def add_py_file(path: str) -> None:
    _SPARK.sparkContext.addPyFile(path)


def prepare_then_format_and_serialize(bootstrap: str, topic: str, rows: list[tuple[Any, ...]],
                                      ddl: str, extra: dict[str, str]) -> list[dict[str, Any]]:
    """prepare() + format("upsert-kafka") writes; serialize()'s rows are returned."""
    from keyguard import sparkio
    o = options(bootstrap, topic, **extra)
    df = _SPARK.createDataFrame(rows, ddl)
    sparkio.prepare(df, **o).write.format("upsert-kafka").options(**o).mode("append").save()
    return [r.asDict() for r in sparkio.serialize(df, **o).collect()]
