"""The `upsert-kafka` Spark data source: it parses options and hands out writers and readers.

Everything else lives elsewhere: resolving and guarding in `keyguard.sparkio.writer` and
`keyguard.sparkio.guarding`, producing in `keyguard.sparkio.producer`, reading in
`keyguard.sparkio.reader`.

Spark pickles this class to its Python workers, and an instance of it into every read task:
the module is pickled by value and imports keyguard only inside its methods, so an executor
(or the driver's planner Python) without keyguard can load it and say what is missing; the
writers and readers it hands out are wrapped the same way (`keyguard.sparkio.shim`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource

from keyguard.sparkio.shim import not_installed, ship

if TYPE_CHECKING:
    from pyspark.sql.datasource import DataSourceReader, DataSourceStreamWriter, DataSourceWriter
    from pyspark.sql.types import StructType


F = TypeVar("F", bound=Callable[..., Any])


def first_in_spark_errors(method: F) -> F:
    """Spark prints a keyguard error raised here first, not under a traceback (`for_spark`);
    a Python without keyguard (Spark's planner runs PYSPARK_PYTHON) says so."""

    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except ImportError as exc:
            raise not_installed(exc, where=(
                f"the Python that Spark runs for the upsert-kafka data source's "
                f"{method.__name__}() ({sys.executable}, on the driver's host)")) from None
        except Exception as exc:
            from keyguard.formats.errors import (
                KeyguardError,  # lazy: loads without keyguard (by value)
            )
            from keyguard.sparkio.workers import (
                for_spark,  # lazy: loads without keyguard (by value)
            )

            if isinstance(exc, KeyguardError):
                raise for_spark(exc)  # noqa: B904  (exc itself, printed first)
            raise

    return wrapped  # type: ignore[return-value]


#: Option keys Spark itself sets or consumes (lower case: Spark's option maps are).
SPARK_OWNED = frozenset({"checkpointlocation", "path", "queryname"})


class UpsertKafkaDataSource(DataSource):
    """`spark.read/write(Stream).format("upsert-kafka")` with Flink's upsert-kafka options."""

    @classmethod
    def name(cls) -> str:
        return "upsert-kafka"

    def _options(self) -> dict[str, Any]:
        # Spark adds its own options (the streaming checkpoint, a save path): not ours.
        return {k: v for k, v in self.options.items() if k.lower() not in SPARK_OWNED}

    @first_in_spark_errors
    def schema(self) -> StructType:
        from keyguard.sparkio.reader import infer_schema  # lazy: loads without keyguard (by value)

        return infer_schema(self._options())

    @first_in_spark_errors
    def reader(self, schema: StructType) -> DataSourceReader:
        from keyguard.sparkio.reader import (
            UpsertKafkaReader,  # lazy: loads without keyguard (by value)
        )

        return ship(UpsertKafkaReader(self._options(), schema))  # type: ignore[no-any-return]

    @first_in_spark_errors
    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return ship(_create_writer()(schema, self._options(), overwrite, streaming=False))  # type: ignore[no-any-return]

    @first_in_spark_errors
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return ship(_create_writer()(schema, self._options(), overwrite, streaming=True))  # type: ignore[no-any-return]


def _create_writer() -> Any:
    """keyguard.sparkio.writer.create_writer; a missing dependency in Spark's planner Python (it
    runs PYSPARK_PYTHON on the driver host, not the caller's interpreter) says so."""
    try:
        from keyguard.sparkio.writer import create_writer  # lazy: loads without keyguard (by value)
    except ImportError as exc:
        from keyguard.sparkio.executors import missing_in_this_process  # lazy: as above

        raise missing_in_this_process(exc, role="the upsert-kafka data source's writer()"
                                      ) from None
    return create_writer


cloudpickle.register_pickle_by_value(sys.modules[__name__])
