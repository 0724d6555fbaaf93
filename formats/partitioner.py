"""Kafka's default key partitioner, so a key lands where Flink and Java producers put it.

Flink's upsert-kafka sink hands keyed records to the Kafka producer's built-in partitioner:
`toPositive(murmur2(key bytes)) % partitions`. A compacted topic only folds two writes of a key
if both land on the same partition, so keyguard must pick (or check) partitions the same way.
librdkafka's default (`consistent_random`, CRC32) differs; its `murmur2_random` agrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF

# Keys are hashed in chunks of similar length so padding stays small (see _murmur2_padded).
_CHUNK = 4096


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: MurmurHash2 with Kafka's seed, as a signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rem = length & 3
    if rem:
        # The tail is the remaining bytes read little-endian (Java's fall-through switch).
        h ^= int.from_bytes(data[n4:], "little")
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(x: int) -> int:
    """Kafka's `Utils.toPositive`: clear the sign bit (not abs: abs(MIN_VALUE) stays negative)."""
    return x & 0x7FFFFFFF


def partition_for(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key."""
    _check_partitions(num_partitions)
    return to_positive(murmur2(key)) % num_partitions


def partitions_for(keys: Sequence[bytes], num_partitions: int) -> np.ndarray:
    """`partition_for` over many keys at once (int32 array), for per-batch use in writers."""
    _check_partitions(num_partitions)
    hashes = murmur2_many(keys)
    return ((hashes.view("uint32") & 0x7FFFFFFF) % num_partitions).astype("int32")


def murmur2_many(keys: Sequence[bytes]) -> np.ndarray:
    """`murmur2` of every key, as a signed int32 array in input order."""
    import numpy as np

    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    lengths = np.fromiter((len(k) for k in keys), dtype=np.int64, count=n)
    data = np.frombuffer(b"".join(keys), dtype=np.uint8)
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    return murmur2_offsets(data, offsets, lengths)


def murmur2_offsets(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """`murmur2` of keys stored back to back in `data` (uint8), e.g. an Arrow binary column."""
    import numpy as np

    out = np.empty(len(lengths), dtype=np.uint32)
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), _CHUNK):
        idx = order[start : start + _CHUNK]
        out[idx] = _murmur2_padded(data, offsets[idx], lengths[idx])
    return out.view(np.int32)


def _murmur2_padded(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Hash keys copied into a zero-padded matrix; uint32 arithmetic wraps like Java's int.

    Zero padding makes the tail step exact: Java XORs in the 1-3 remaining bytes read
    little-endian, which equals the (zero-padded) word after the last full block.
    """
    import numpy as np

    m = len(lengths)
    width = (int(lengths.max()) // 4 + 1) * 4
    mat = np.zeros((m, width), dtype=np.uint8)
    total = int(lengths.sum())
    if total:
        starts = np.zeros(m, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        pos = np.arange(total, dtype=np.int64)
        src = pos + np.repeat(offsets - starts, lengths)
        dst = pos + np.repeat(np.arange(m, dtype=np.int64) * width - starts, lengths)
        mat.ravel()[dst] = data[src]
    words = mat.view("<u4").astype(np.uint32)
    mul = np.uint32(_M)
    with np.errstate(over="ignore"):
        h = np.uint32(_SEED) ^ lengths.astype(np.uint32)
        blocks = lengths // 4
        for j in range(int(blocks.max())):
            k = words[:, j] * mul
            k ^= k >> np.uint32(24)
            k *= mul
            h = np.where(blocks > j, (h * mul) ^ k, h)
        tail = words[np.arange(m), blocks]
        h = np.where(lengths & 3 != 0, (h ^ tail) * mul, h)
        h ^= h >> np.uint32(13)
        h *= mul
        h ^= h >> np.uint32(15)
    return h


def _check_partitions(num_partitions: int) -> None:
    if num_partitions < 1:
        raise ValueError(f"a topic has at least one partition, got {num_partitions}")
