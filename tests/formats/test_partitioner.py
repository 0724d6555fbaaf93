from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats.partitioner import (
    murmur2,
    murmur2_many,
    murmur2_offsets,
    partition_for,
    partitions_for,
    to_positive,
)

# Kafka's own vectors: clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java
# (testMurmur2).
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), KAFKA_VECTORS.items())
def test_murmur2_matches_kafka(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_murmur2_many_matches_kafka() -> None:
    assert murmur2_many(list(KAFKA_VECTORS)).tolist() == list(KAFKA_VECTORS.values())


def test_to_positive_is_not_abs() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(5) == 5


def test_partition_for() -> None:
    # toPositive(-973932308) = 1173551340; % 3 = 0, % 7 = 2 (hand-checked).
    assert partition_for(b"21", 3) == 1173551340 % 3
    assert partition_for(b"21", 7) == 1173551340 % 7
    assert partition_for(b"anything", 1) == 0
    with pytest.raises(ValueError):
        partition_for(b"x", 0)


def test_empty_inputs() -> None:
    assert murmur2(b"") == murmur2_many([b""])[0]
    assert murmur2_many([]).shape == (0,)
    assert partitions_for([], 3).shape == (0,)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=50), st.integers(1, 1000))
def test_vectorized_agrees_with_scalar(keys: list[bytes], n: int) -> None:
    assert murmur2_many(keys).tolist() == [murmur2(k) for k in keys]
    assert partitions_for(keys, n).tolist() == [partition_for(k, n) for k in keys]


def test_vectorized_many_lengths_and_chunks() -> None:
    rng = np.random.default_rng(7)
    keys = [rng.bytes(int(n)) for n in rng.integers(0, 300, size=10_000)]
    assert murmur2_many(keys).tolist() == [murmur2(k) for k in keys]


def test_offsets_variant_reads_an_arrow_style_buffer() -> None:
    keys = [b"abc", b"", b"foobar", b"21"]
    data = np.frombuffer(b"xx" + b"".join(keys), dtype=np.uint8)
    lengths = np.array([len(k) for k in keys])
    offsets = 2 + np.concatenate([[0], np.cumsum(lengths)[:-1]])
    assert murmur2_offsets(data, offsets, lengths).tolist() == [murmur2(k) for k in keys]
