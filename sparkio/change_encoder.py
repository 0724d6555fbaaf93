"""A write task's Arrow batches as Kafka records: changelog kinds, key and value bytes, the
murmur2 partition (`ChangeEncoder`), and a whole partition checked before its first record is
produced (`checked_first`). `keyguard.sparkio.producer` sends what comes out.

The errors for bad rows are declared in `keyguard.sparkio.producer`
(`null_key_error`, `changelog_kind_error`): their names are what a failed Spark job shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any, cast

from keyguard.formats.arrow_schema import to_arrow_type
from keyguard.formats.codec import Codec
from keyguard.formats.lengths import fit_batch
from keyguard.formats.partitioner import murmur2_offsets, partitions_for
from keyguard.sparkio.headers import from_arrow
from keyguard.sparkio.producer import changelog_kind_error, null_key_error

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from keyguard.formats.plan import UpsertPlan
    from keyguard.formats.types import RowType

#: Changelog kinds, as Flink's RowKind short strings.
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = "+I", "-U", "+U", "-D"
KINDS = (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE)

#: How much of a partition a task holds in memory while checking it before producing; the
#: rest waits in an Arrow IPC file on the executor's local disk (`checked_first`).
SPOOL_MEMORY_BYTES = 64 * 2**20


@dataclass
class EncodedBatch:
    """The records of one Arrow batch, in input order (value None: a tombstone)."""

    keys: list[bytes]
    values: list[bytes | None]
    partitions: np.ndarray
    rows: int
    dropped: int = 0
    #: Key and value bytes, read off the Arrow columns the codecs built (None: not known).
    nbytes: int | None = None
    #: Each record's headers (None: none), when the rows carry them.
    headers: list[list[tuple[str, bytes | None]] | None] | None = None


def _encoded(codec: Any, batch: pa.RecordBatch) -> tuple[list[bytes], pa.Array | None]:
    """The rows' bytes, and the Arrow binary column when the codec builds one natively."""

    if type(codec).encode_arrow is Codec.encode_arrow:
        return codec.encode_batch(batch), None
    arr = codec.encode_arrow(batch)
    return arr.to_pylist(), arr


def arrow_partitions(arr: pa.Array, num_partitions: int) -> np.ndarray:
    """`partitions_for` straight from an Arrow binary column's offsets and data buffers."""
    import numpy as np
    import pyarrow as pa


    if num_partitions < 1:
        raise ValueError(f"a topic has at least one partition, got {num_partitions}")
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    _, offsets_buf, data_buf = arr.buffers()
    width = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offs = np.frombuffer(offsets_buf, dtype=width, count=n + 1,
                         offset=arr.offset * np.dtype(width).itemsize).astype(np.int64)
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
            else np.zeros(0, dtype=np.uint8))
    hashes = murmur2_offsets(data, offs[:-1], np.diff(offs))
    return ((hashes.view("uint32") & 0x7FFFFFFF) % num_partitions).astype("int32")


def binary_nbytes(arr: pa.Array) -> int:
    """The bytes of a binary column's values, from its offsets: no Python loop over rows."""
    import numpy as np
    import pyarrow as pa

    if len(arr) == 0:
        return 0
    width = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offs = np.frombuffer(arr.buffers()[1], dtype=width, count=len(arr) + 1,
                         offset=arr.offset * np.dtype(width).itemsize)
    return int(offs[-1] - offs[0])  # nulls span no bytes


def _with_declared_columns(batch: pa.RecordBatch, table: RowType) -> pa.RecordBatch:
    """The batch with a null column for each table column it lacks: a `flink.ddl` column the
    DataFrame leaves out, which Flink writes as null."""
    import pyarrow as pa

    have = set(batch.schema.names)
    missing = [f for f in table.fields if f.name not in have]
    if not missing:
        return batch
    return pa.RecordBatch.from_arrays(
        [*batch.columns, *(pa.nulls(batch.num_rows, to_arrow_type(f.type)) for f in missing)],
        names=[*batch.schema.names, *(f.name for f in missing)])


def framed_headers(plan: UpsertPlan, own: list[list[tuple[str, bytes | None]] | None] | None,
                   deletes: np.ndarray | None, n: int,
                   ) -> list[list[tuple[str, bytes | None]] | None] | None:
    """Each record's headers: the row's own, then those a header framing adds, the key's and
    the value's, as confluent-kafka's SerializingProducer gives them (the headers passed to
    produce, then the key serializer's, then the value serializer's); a tombstone only the
    key's (a serializer writes nothing for a null value). Every record of a kind shares one
    list. `own` unchanged when the framings add none (the prefix framings)."""
    upsert: list[tuple[str, bytes | None]] = list(plan.record_headers())
    if not upsert:
        return own
    tombstone: list[tuple[str, bytes | None]] = list(plan.record_headers(tombstone=True))
    if own is None and (deletes is None or not deletes.any()):
        return [upsert] * n
    kinds = deletes.tolist() if deletes is not None else repeat(False)
    return [(h + (tombstone if d else upsert)) if h else (tombstone if d else upsert) or None
            for h, d in zip(own if own is not None else repeat(None), kinds, strict=False)]


@dataclass
class ChangeEncoder:
    """Serializes Arrow batches of table rows with a plan: kinds, keys, values, partitions."""

    plan: UpsertPlan
    num_partitions: int
    changelog_column: str | None = None
    #: The column of each record's headers (`keyguard.sparkio.headers`), if the rows have one.
    headers_column: str | None = None

    def encode(self, batch: pa.RecordBatch) -> EncodedBatch:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = batch.num_rows
        dropped = 0
        deletes = None
        if self.changelog_column:
            kinds = batch.column(self.changelog_column)
            self._check_kinds(batch, kinds)
            keep = pc.not_equal(kinds, UPDATE_BEFORE)
            dropped = rows - pc.sum(keep.cast(pa.int64())).as_py() if rows else 0
            if dropped:
                batch = batch.filter(keep)
                kinds = batch.column(self.changelog_column)
            deletes = np.asarray(pc.equal(kinds, DELETE).to_numpy(zero_copy_only=False),
                                 dtype=bool)
        self._check_keys(batch)
        layout = self.plan.layout
        batch = fit_batch(layout.table, _with_declared_columns(batch, layout.table))
        prefix = len(layout.key_fields_prefix)
        key_batch = pa.RecordBatch.from_arrays(
            [batch.column(c) for c in layout.primary_key],
            names=[c[prefix:] for c in layout.primary_key])
        keys, key_arr = _encoded(self.plan.key_codec, key_batch)
        parts = (arrow_partitions(key_arr, self.num_partitions) if key_arr is not None
                 else partitions_for(keys, self.num_partitions))
        value_batch = pa.RecordBatch.from_arrays(
            [batch.column(c) for c in layout.value_columns], names=list(layout.value_columns))
        values: list[bytes | None]
        nbytes = None
        if deletes is None or not deletes.any():
            plain, value_arr = _encoded(self.plan.value_codec, value_batch)
            values = cast("list[bytes | None]", plain)  # no copy: no tombstones here
            if key_arr is not None and value_arr is not None:
                nbytes = binary_nbytes(key_arr) + binary_nbytes(value_arr)
        else:
            values = [None] * batch.num_rows
            live = np.flatnonzero(~deletes)
            if len(live):
                encoded = self.plan.value_codec.encode_batch(
                    value_batch.filter(pa.array(~deletes)))
                for i, v in zip(live.tolist(), encoded, strict=False):
                    values[i] = v
        headers = from_arrow(batch.column(self.headers_column)) if self.headers_column else None
        headers = framed_headers(self.plan, headers, deletes, batch.num_rows)
        return EncodedBatch(keys, values, parts, rows, dropped, nbytes, headers)

    def check(self, batch: pa.RecordBatch, *, scope: str = "", outcome: str = "") -> None:
        """The batch's changelog kinds and keys, without encoding anything."""
        if self.changelog_column:
            self._check_kinds(batch, batch.column(self.changelog_column), scope=scope,
                              outcome=outcome)
        self._check_keys(batch, scope=scope, outcome=outcome)

    def _check_kinds(self, batch: pa.RecordBatch, kinds: pa.Array, *, scope: str = "",
                     outcome: str = "") -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        ok = pc.fill_null(pc.is_in(kinds, value_set=pa.array(KINDS)), False)
        bad = len(ok) - pc.sum(ok.cast(pa.int64())).as_py() if len(ok) else 0
        if bad:
            first = pc.index(ok, False).as_py()
            example = batch.slice(first, 1).to_pylist()[0]
            raise changelog_kind_error(self.plan.topic, str(self.changelog_column), bad,
                                       example, scope=scope, outcome=outcome)

    def _check_keys(self, batch: pa.RecordBatch, *, scope: str = "", outcome: str = "") -> None:
        import pyarrow.compute as pc

        null = None
        for col in self.plan.layout.primary_key:
            n = pc.is_null(batch.column(col))
            null = n if null is None else pc.or_(null, n)
        if null is None:
            return
        count = pc.sum(null.cast("int64")).as_py() or 0
        if count:
            example = batch.slice(pc.index(null, True).as_py(), 1).to_pylist()[0]
            raise null_key_error(self.plan.topic, self.plan.layout.primary_key, count, example,
                                 scope=scope, outcome=outcome)


def checked_first(batches: Iterable[pa.RecordBatch], check: Callable[[pa.RecordBatch], None],
                  *, memory_bytes: int = SPOOL_MEMORY_BYTES,
                  spill_dir: str | None = None) -> Iterator[pa.RecordBatch]:
    """`batches`, in order, once every one of them passed `check`: a bad row anywhere fails
    the task before its first record is produced.

    Spark hands a task its partition once, as an iterator, so the batches are kept: in memory
    up to `memory_bytes`, the rest in an Arrow IPC stream on local disk (the executor's
    SPARK_LOCAL_DIRS), read back in order.
    """
    import os
    import tempfile

    import pyarrow as pa

    held: list[pa.RecordBatch] = []
    size = 0
    spill: Any = None
    writer: Any = None
    if spill_dir is None:
        local = os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0]
        spill_dir = local if local and os.path.isdir(local) else None
    try:
        for batch in batches:
            check(batch)
            if writer is None and size + batch.nbytes <= memory_bytes:
                held.append(batch)
                size += batch.nbytes
                continue
            if writer is None:
                spill = tempfile.TemporaryFile(dir=spill_dir, prefix="keyguard-partition-")
                writer = pa.ipc.new_stream(spill, batch.schema)
            writer.write_batch(batch)
        yield from held
        held.clear()
        if writer is not None:
            writer.close()
            spill.seek(0)
            yield from pa.ipc.open_stream(spill)
    finally:
        if spill is not None:
            spill.close()
