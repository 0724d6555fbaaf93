"""`keyguard.guard.audit.slots.shared`: the entries that equal another, slice by slice."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from keyguard.guard.audit import slots


@given(st.lists(st.integers(0, 40), max_size=200), st.sampled_from([1, 3, 64, 1 << 16]))
def test_shared_marks_the_values_that_repeat(values: list[int], lookup: int) -> None:
    counts = Counter(values)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(slots, "_LOOKUP", lookup)  # several slices, a slice of one, one slice
        got = slots.shared(np.array(values, dtype="<u8"))
    assert got.tolist() == [counts[v] > 1 for v in values]
