"""What Spark ships to the executors for the upsert-kafka data source, loadable without keyguard.

Spark pickles the data source's writer (batch and streaming), its reader and the reader's
input partitions with cloudpickle and unpickles them in every task. A class pickled by
reference (`keyguard.sparkio.writer.UpsertKafkaWriter`) makes an executor whose Python lacks
keyguard die while unpickling, with `No module named 'sparkio'` inside a cloudpickle traceback,
before any keyguard code runs. So the data source hands Spark a `Shipped*` wrapper instead: this
module is pickled by value (cloudpickle.register_pickle_by_value) and needs only the standard
library and pyspark, and the wrapper carries the real object as bytes. In a task the first call
loads it (one pickle.loads per task) and delegates; a failed import says, as the first thing
Spark prints, that keyguard (or a dependency of it) is missing there and how to ship it.

Nothing here may refer to a keyguard module at import time or from a function body outside
an `import` statement: whatever a by-value function names from its module is pickled with it.
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark import cloudpickle
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    InputPartition,
    WriterCommitMessage,
)

#: keyguard's import root: a missing module under it means keyguard itself is not installed.
PACKAGES = ("keyguard",)

SHIP_HINT = (
    "install keyguard with its spark extra on every node (the same Python as "
    "PYSPARK_PYTHON / spark.pyspark.python), or ship it with the job: keyguard's wheel copied "
    "to keyguard.zip in spark.submit.pyFiles (--py-files, or spark.sparkContext."
    "addPyFile / spark.addArtifacts(..., pyfile=True) under Spark Connect) on nodes that have "
    "its dependencies, or a packed virtualenv with keyguard and its dependencies in "
    "spark.archives (venv-pack; PYSPARK_PYTHON=./environment/bin/python). See the docs, "
    "'Running on a cluster' (docs/how-to/cluster.md)")

#: Where a task runs, in the messages.
EXECUTORS = "the Python workers of the executors"


def missing_message(missing: str, detail: str, *, where: str) -> tuple[str, str]:
    """(message, hint) for a failed import of `missing` in a Python process Spark runs for
    keyguard: keyguard itself, or one of its dependencies."""
    top = missing.split(".")[0]
    if top in PACKAGES:
        return (f"keyguard is not installed in {where}: "
                f"{detail or f'No module named {missing!r}'}", SHIP_HINT)
    return (f"keyguard's dependency '{top}' is missing in {where}: {detail}",
            f"install keyguard with its spark extra in that Python (it brings {top}), or ship "
            f"a packed virtualenv in spark.archives; see the docs, 'Running on a cluster' "
            "(docs/how-to/cluster.md)")


class KeyguardMissingError(ImportError):
    """A Python process Spark runs for keyguard cannot import it (or a dependency of it).

    A builtin subclass defined here, so an executor without keyguard can load and raise it;
    its text is a `WorkerSetupError`'s: the message, then the hint in parentheses."""

    kind = "spark-workers"


def not_installed(exc: ImportError, *, where: str) -> KeyguardMissingError:
    """The error for `exc`, to raise in a Spark worker: Spark prints its class and message
    first, without the worker's traceback above them (as `keyguard.sparkio.workers.for_spark`)."""
    main = sys.modules.get("__main__")
    if str(getattr(getattr(main, "__spec__", None), "name", "") or "").startswith("pyspark."):
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"
    if isinstance(exc, KeyguardMissingError):
        return exc
    message, hint = missing_message(exc.name or "?", f"{type(exc).__name__}: {exc}",
                                    where=where)
    return KeyguardMissingError(f"{message} ({hint})", name=exc.name)


def _in_this_task() -> str:
    return f"{EXECUTORS} ({sys.executable} on host {socket.gethostname()})"


class Shipped:
    """The real object as bytes, loaded on first use in the process that uses it."""

    def __init__(self, real: Any) -> None:
        self.payload = cloudpickle.dumps(real)
        self._real: Any = real

    def __getstate__(self) -> dict[str, Any]:
        return {"payload": self.payload}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.payload = state["payload"]
        self._real = None

    def real(self) -> Any:
        if self._real is None:
            try:
                self._real = pickle.loads(self.payload)
            except ImportError as exc:
                raise not_installed(exc, where=_in_this_task()) from None
        return self._real


class ShippedArrowWriter(Shipped, DataSourceArrowWriter):
    """A batch writer (`keyguard.sparkio.writer.UpsertKafkaWriter`) as Spark ships it."""

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        try:
            return self.real().write(iterator)  # type: ignore[no-any-return]
        except ImportError as exc:  # a dependency imported late, in the task
            raise not_installed(exc, where=_in_this_task()) from None

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        self.real().commit(messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        self.real().abort(messages)


class ShippedStreamArrowWriter(Shipped, DataSourceStreamArrowWriter):
    """A streaming writer (`keyguard.sparkio.writer.UpsertKafkaStreamWriter`) as Spark ships it."""

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        try:
            return self.real().write(iterator)  # type: ignore[no-any-return]
        except ImportError as exc:
            raise not_installed(exc, where=_in_this_task()) from None

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        self.real().commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        self.real().abort(messages, batchId)


class ShippedPartition(Shipped, InputPartition):
    """An input partition (`keyguard.sparkio.reader.KafkaInputPartition`) as Spark ships it."""

    def __init__(self, real: Any) -> None:
        Shipped.__init__(self, real)
        InputPartition.__init__(self, None)

    def __getstate__(self) -> dict[str, Any]:
        return {"payload": self.payload, "value": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        Shipped.__setstate__(self, state)
        self.value = None

    def __repr__(self) -> str:
        return f"ShippedPartition({len(self.payload)} bytes)"


class ShippedReader(Shipped, DataSourceReader):
    """A reader (`keyguard.sparkio.reader.UpsertKafkaReader`) as Spark ships it; its partitions are
    shipped the same way (Spark unpickles one in the task before calling read())."""

    def partitions(self) -> Sequence[InputPartition]:
        return [ShippedPartition(p) for p in self.real().partitions()]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        try:
            real = self.real()
            inner = partition.real() if isinstance(partition, Shipped) else partition
            yield from real.read(inner)
        except ImportError as exc:
            raise not_installed(exc, where=_in_this_task()) from None


def ship(real: Any) -> Any:
    """`real` (a data-source writer, stream writer or reader) wrapped for the executors."""
    if isinstance(real, DataSourceStreamArrowWriter):
        return ShippedStreamArrowWriter(real)
    if isinstance(real, DataSourceArrowWriter):
        return ShippedArrowWriter(real)
    if isinstance(real, DataSourceReader):
        return ShippedReader(real)
    raise TypeError(f"keyguard ships no {type(real).__name__}")


cloudpickle.register_pickle_by_value(sys.modules[__name__])
