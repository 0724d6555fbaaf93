"""One partition's audit entries, column-wise: one row per key byte string. Pure.

A topic of millions of keys would hold millions of Python objects as one entry object each;
here a partition's entries are a dict from the key's fingerprint to its row and a few packed
columns (`array`, `bytearray`), about 150 bytes a key. The judge reads the columns whole
(numpy), and `Entry` objects are made only for the few entries it shows or groups.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

#: Bytes of a fingerprint: 128 bits, no collision in any topic's lifetime.
FINGERPRINT_BYTES = 16
#: A schema id column's value for a key that carries none.
NO_ID = -1
_ZERO = bytes(FINGERPRINT_BYTES)


@dataclass(frozen=True)
class Entry:
    """The last record of one key byte string on one partition."""

    #: Fingerprint of the decoded logical key; None when the key did not decode.
    logical: bytes | None
    live: bool
    offset: int
    #: The schema id the key bytes carry (a framed format), else None.
    schema_id: int | None
    #: Not on the partition murmur2 picks for the key bytes.
    misplaced: bool = False
    #: The last record is a tombstone `keyguard migrate` wrote to retire an old encoding (its
    #: row moved): not a delete.
    retired: bool = False
    #: The last record's timestamp (ms), to order records of one row across partitions.
    timestamp: int = -1
    #: Where the last record carries its key's and its value's schema id
    #: (`keyguard.formats.framing.PLACEMENTS`: NOWHERE for a format that carries none, and for
    #: a tombstone's value).
    key_framing: int = 0
    value_framing: int = 0


@dataclass
class Slots:
    """A partition's entries: `index` maps a key's fingerprint to its row in the columns;
    rows are in the order keys were first seen."""

    index: dict[bytes, int] = field(default_factory=dict)
    #: The logical key's fingerprint per row (zeros where `decoded` is 0).
    logical: bytearray = field(default_factory=bytearray)
    decoded: array = field(default_factory=lambda: array("b"))  # type: ignore[type-arg]
    live: array = field(default_factory=lambda: array("b"))  # type: ignore[type-arg]
    offset: array = field(default_factory=lambda: array("q"))  # type: ignore[type-arg]
    schema_id: array = field(default_factory=lambda: array("q"))  # type: ignore[type-arg]
    misplaced: array = field(default_factory=lambda: array("b"))  # type: ignore[type-arg]
    retired: array = field(default_factory=lambda: array("b"))  # type: ignore[type-arg]
    timestamp: array = field(default_factory=lambda: array("q"))  # type: ignore[type-arg]
    key_framing: array = field(default_factory=lambda: array("b"))  # type: ignore[type-arg]
    value_framing: array = field(default_factory=lambda: array("b"))  # type: ignore[type-arg]

    def __len__(self) -> int:
        return len(self.index)

    def add(self, fp: bytes, logical: bytes | None) -> int:
        """A new key's row (its last record set by `set`)."""
        row = self.index[fp] = len(self.offset)
        self.logical += _ZERO if logical is None else logical
        self.decoded.append(logical is not None)
        for column in (self.live, self.offset, self.schema_id, self.misplaced, self.retired,
                       self.timestamp, self.key_framing, self.value_framing):
            column.append(0)
        return row

    def extend(self, fps: list[bytes], logicals: list[bytes | None], live: list[bool],
               offset: list[int], schema_id: list[int | None], misplaced: list[bool],
               retired: list[bool], timestamp: list[int], key_framing: list[int],
               value_framing: list[int]) -> None:
        """New keys, each with its last record (one batch's, column-wise)."""
        start = len(self.offset)
        self.index.update(zip(fps, range(start, start + len(fps)), strict=True))
        self.logical += b"".join([_ZERO if x is None else x for x in logicals])
        self.decoded.extend([x is not None for x in logicals])
        self.live.extend(live)
        self.offset.extend(offset)
        self.schema_id.extend([NO_ID if x is None else x for x in schema_id])
        self.misplaced.extend(misplaced)
        self.retired.extend(retired)
        self.timestamp.extend(timestamp)
        self.key_framing.extend(key_framing)
        self.value_framing.extend(value_framing)

    def set(self, row: int, live: bool, offset: int, schema_id: int | None, misplaced: bool,
            retired: bool, timestamp: int, key_framing: int = 0, value_framing: int = 0
            ) -> None:
        self.live[row] = live
        self.offset[row] = offset
        self.schema_id[row] = NO_ID if schema_id is None else schema_id
        self.misplaced[row] = misplaced
        self.retired[row] = retired
        self.timestamp[row] = timestamp
        self.key_framing[row] = key_framing
        self.value_framing[row] = value_framing

    def logical_of(self, row: int) -> bytes | None:
        if not self.decoded[row]:
            return None
        return bytes(self.logical[row * FINGERPRINT_BYTES:(row + 1) * FINGERPRINT_BYTES])

    def entry(self, row: int) -> Entry:
        schema_id = self.schema_id[row]
        return Entry(self.logical_of(row), bool(self.live[row]), self.offset[row],
                     None if schema_id == NO_ID else schema_id, bool(self.misplaced[row]),
                     bool(self.retired[row]), self.timestamp[row], self.key_framing[row],
                     self.value_framing[row])

    def put(self, fp: bytes, e: Entry) -> None:
        """`e` as the entry of key `fp` (a merge's)."""
        row = self.index.get(fp)
        if row is None:
            row = self.add(fp, e.logical)
        else:
            self.logical[row * FINGERPRINT_BYTES:(row + 1) * FINGERPRINT_BYTES] = \
                _ZERO if e.logical is None else e.logical
            self.decoded[row] = e.logical is not None
        self.set(row, e.live, e.offset, e.schema_id, e.misplaced, e.retired, e.timestamp,
                 e.key_framing, e.value_framing)

    def items(self) -> Iterator[tuple[bytes, Entry]]:
        for fp, row in self.index.items():
            yield fp, self.entry(row)

    def copy(self) -> Slots:
        return Slots(dict(self.index), bytearray(self.logical), array("b", self.decoded),
                     array("b", self.live), array("q", self.offset), array("q", self.schema_id),
                     array("b", self.misplaced), array("b", self.retired),
                     array("q", self.timestamp), array("b", self.key_framing),
                     array("b", self.value_framing))

    def nbytes(self) -> int:
        """The memory these entries take: the dict, its fingerprints and row numbers (as the
        allocator rounds them), and the columns."""
        n = len(self.index)
        if not n:
            return 0
        fp = next(iter(self.index))
        one = _allocated(sys.getsizeof(fp)) + _allocated(sys.getsizeof(2**20))
        columns = len(self.logical) + sum(
            c.itemsize * c.buffer_info()[1] for c in (
                self.decoded, self.live, self.offset, self.schema_id, self.misplaced,
                self.retired, self.timestamp, self.key_framing, self.value_framing))
        return sys.getsizeof(self.index) + n * one + columns

    # -- whole columns, for the judge --------------------------------------------------------

    def flags(self, name: str) -> np.ndarray:
        return np.frombuffer(getattr(self, name), dtype=np.int8).astype(bool)

    def live_framings(self, name: str, kinds: int) -> np.ndarray:
        """How many live rows carry their schema id in each placement (`kinds` of them), by
        column `name` ("key_framing" or "value_framing")."""
        data = getattr(self, name)
        if not len(data):
            return np.zeros(kinds, dtype=np.int64)
        column = np.frombuffer(data, dtype=np.int8)
        return np.bincount(column[self.flags("live")], minlength=kinds)[:kinds]

    def logical_heads(self) -> np.ndarray:
        """The first 64 bits of each row's logical fingerprint (a view, no copy)."""
        return np.frombuffer(self.logical, dtype="<u8")[0::2]


def _allocated(size: int) -> int:
    """Bytes a small object of `size` takes: Python's allocator rounds to 16."""
    return -(-size // 16) * 16


#: Entries `shared` looks up at a time: its temporaries stay this size, whatever the state's.
_LOOKUP = 1 << 16


def shared(values: np.ndarray) -> np.ndarray:
    """Which entries of `values` (1-d) equal another entry. One sorted copy, then the few
    repeated values are looked up a slice at a time: `np.isin` over the whole would make
    several arrays of its size (sorted, argsorted, concatenated) at once."""
    n = len(values)
    out = np.zeros(n, dtype=bool)
    if n < 2:
        return out
    s = np.sort(values)
    twice = np.unique(s[1:][s[1:] == s[:-1]])
    del s
    if not len(twice):
        return out
    for start in range(0, n, _LOOKUP):
        part = values[start:start + _LOOKUP]
        at = np.searchsorted(twice, part)
        np.minimum(at, len(twice) - 1, out=at)
        out[start:start + _LOOKUP] = twice[at] == part
    return out
