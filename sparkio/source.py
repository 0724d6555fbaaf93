"""The `upsert-kafka` Spark data source: it parses options and hands out writers and readers.

Everything else lives elsewhere: resolving and guarding in `sparkio.writer` and
`sparkio.guarding`, producing in `sparkio.producer`, reading in `sparkio.reader`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource

if TYPE_CHECKING:
    from pyspark.sql.datasource import DataSourceReader, DataSourceStreamWriter, DataSourceWriter
    from pyspark.sql.types import StructType


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

    def schema(self) -> StructType:
        from sparkio.reader import infer_schema

        return infer_schema(self._options())

    def reader(self, schema: StructType) -> DataSourceReader:
        from sparkio.reader import UpsertKafkaReader

        return UpsertKafkaReader(self._options(), schema)  # type: ignore[no-any-return]

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from sparkio.writer import create_writer

        return create_writer(schema, self._options(), overwrite, streaming=False)  # type: ignore[return-value]

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from sparkio.writer import create_writer

        return create_writer(schema, self._options(), overwrite, streaming=True)  # type: ignore[return-value]
