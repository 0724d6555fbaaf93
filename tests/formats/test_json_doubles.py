"""The json format's bulk DOUBLE text (`_arrow_doubles`) against javatext's per-value port.

`_arrow_doubles` takes Arrow's shortest digits for 1e-3 <= |x| < 1e7 and sends the rest to
javatext; its docstring argues why JDK 17's FloatingDecimal agrees with those digits there.
These tests hold it to the full JDK 17 port (`_legacy_digits`, not the `_legacy_fast` shortcut)
and to the JDK 19+ rules, over decimal-looking values (prices: the ties the argument rules out
are most likely among them), random bit patterns, and the window's edges.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keyguard.formats import javatext as jt
from keyguard.formats.json_vector import _arrow_doubles

pa = pytest.importorskip("pyarrow")


def _next(x: float, steps: int) -> float:
    for _ in range(abs(steps)):
        x = math.nextafter(x, math.inf if steps > 0 else -math.inf)
    return x


def _edges() -> list[float]:
    xs: list[float] = [0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, 2.2250738585072014e-308,
                       1.7976931348623157e308, 9999999.999999998, 9999999.5, 9999999.0, 1e7,
                       0.001, 0.00099, 1e-4, 1e-3 * 1.5, 2.0**53, 2.0**53 + 2, 4739.33, 0.3,
                       0.05, 0.005, 0.009, 0.0015, 123.0, 100.0, 1e6, 1234567.0]
    for base in (1e-3, 1e7, 0.01, 0.1, 1.0, 10.0, 1e6):
        xs += [_next(base, k) for k in range(-3, 4)]
    xs += [2.0**k for k in range(-12, 26)] + [1.5 * 2.0**k for k in range(-12, 26)]
    return xs + [-x for x in xs]


def _decimal_like(rng: np.random.Generator, n: int) -> list[float]:
    """Prices and measures: up to 17 significant digits, 0 to 9 fraction digits."""
    mags = 10.0 ** rng.uniform(-4, 8, n)
    places = rng.integers(0, 10, n)
    sig = rng.integers(1, 18, n)
    out = []
    for m, p, s in zip(mags.tolist(), places.tolist(), sig.tolist(), strict=True):
        x = float(f"{round(m, p):.{s}g}")
        out.append(-x if s % 3 == 0 else x)
    return out


def _random_bits(rng: np.random.Generator, n: int) -> list[float]:
    bits = rng.integers(0, 1 << 63, n, dtype=np.uint64) | (rng.integers(0, 2, n).astype(
        np.uint64) << np.uint64(63))
    return bits.view(np.float64).tolist()


def _java(x: float, jdk: int) -> str:
    text = jt.double_to_string(x, jdk=jdk)
    return text if math.isfinite(x) else f'"{text}"'


@pytest.fixture
def full_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """javatext without its repr shortcut: FloatingDecimal's digit loop for every value."""
    monkeypatch.setattr(jt, "_legacy_fast", lambda x: None)


def _check(xs: list[float | None], jdk: int) -> None:
    got = _arrow_doubles(pa.array(xs, pa.float64()), jdk).to_pylist()
    want = [None if x is None else _java(x, jdk) for x in xs]
    bad = [(x, g, w) for x, g, w in zip(xs, got, want, strict=True) if g != w]
    assert not bad, bad[:10]


@pytest.mark.usefixtures("full_port")
def test_java17_edges_and_nulls() -> None:
    _check([*_edges(), None, 1.5, None], 17)


@pytest.mark.usefixtures("full_port")
def test_java17_decimal_like_values() -> None:
    rng = np.random.default_rng(13)
    _check(_decimal_like(rng, 40_000), 17)


@pytest.mark.usefixtures("full_port")
def test_java17_random_bit_patterns_and_window() -> None:
    rng = np.random.default_rng(17)
    window = (10.0 ** rng.uniform(-3, 7, 20_000) * rng.choice([-1, 1], 20_000)).tolist()
    _check(_random_bits(rng, 5_000) + window, 17)


def test_java19_plus() -> None:
    rng = np.random.default_rng(19)
    _check(_edges() + _decimal_like(rng, 10_000) + _random_bits(rng, 2_000), 21)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats()), min_size=1, max_size=20))
def test_any_doubles(xs: list[float | None]) -> None:
    for jdk in (17, 21):
        _check(xs, jdk)

