"""Java's text forms of numbers and times, reproduced byte for byte.

Flink's text formats (json, csv) print numbers with Java's `Double.toString`, `Float.toString`
and `BigDecimal.toString`, and times with `java.time` formatters. Python's `repr` and `isoformat`
differ in small ways (`1e+20` vs `1.0E20`, `5e-324` vs `4.9E-324`, trailing zeros), and every
difference is a different Kafka key, so this module ports the Java rules instead of approximating.

Two `Double.toString` algorithms exist. JDK 19 replaced the old `FloatingDecimal` digit generator
(which sometimes prints more digits than needed: `2.82879384806159008E17`, `9.999999999999999E22`
for `1e23`) with the shortest-digits algorithm. Flink 2.x runs on Java 17 by default, so `jdk=17`
(the old algorithm, verified against Java 17 on 200k values) is the default; pass `jdk=21` for a
Flink that runs on Java 19 or later.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
from collections.abc import Callable
from decimal import Context, Decimal, localcontext
from typing import Final

from keyguard.formats.immutable import Value

# --------------------------------------------------------------------------------------------
# Double.toString / Float.toString
# --------------------------------------------------------------------------------------------

DEFAULT_JDK = 17
_WIDE = Context(prec=100_000)

_N_5_BITS = (0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49,
             52, 54, 56, 59, 61)
_INSIGNIFICANT_DIGITS = (
    0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9,
    9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 15, 16,
    16, 16, 17, 17, 17, 18, 18, 18, 19,
)
_EXP_ONE = 0x3FF0000000000000
_SIGNIF_MASK = 0x000FFFFFFFFFFFFF


def _wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _wrap64(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v & 0x8000000000000000 else v


def _estimate_dec_exp(fract_bits: int, bin_exp: int) -> int:
    d2 = struct.unpack("<d", struct.pack("<Q", _EXP_ONE | (fract_bits & _SIGNIF_MASK)))[0]
    d = (d2 - 1.5) * 0.289529654 + 0.176091259 + bin_exp * 0.301029995663981
    return math.floor(d)


def _legacy_digits(bin_exp: int, fract_bits: int, n_sig_bits: int) -> tuple[list[int], int]:
    """FloatingDecimal.dtoa of JDK <= 18: (digits, decimal exponent), including its quirks.

    The int and long branches wrap around like Java's int/long and test `>` where the big-integer
    branch tests `>=`; both matter for a few values, so they are kept.
    """
    tail_zeros = (fract_bits & -fract_bits).bit_length() - 1
    n_fract_bits = 53 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if -21 <= bin_exp <= 62 and n_tiny_bits == 0:
        return _long_digits(bin_exp, fract_bits, n_sig_bits)

    dec_exp = _estimate_dec_exp(fract_bits, bin_exp)
    sc = _scales(dec_exp, bin_exp, n_sig_bits, n_fract_bits, n_tiny_bits)
    fract_bits >>= tail_zeros
    b_bits = n_fract_bits + sc.b2 + (_N_5_BITS[sc.b5] if sc.b5 < len(_N_5_BITS) else sc.b5 * 3)
    ten_s_bits = sc.s2 + 1 + (_N_5_BITS[sc.s5 + 1] if sc.s5 + 1 < len(_N_5_BITS)
                              else (sc.s5 + 1) * 3)
    e_form = dec_exp < -3 or dec_exp >= 8
    if b_bits < 64 and ten_s_bits < 64:
        wrap = _wrap32 if (b_bits < 32 and ten_s_bits < 32) else _wrap64
        digits, dec_exp, low, high, low_diff = _word_digits(fract_bits, sc, dec_exp, e_form, wrap)
    else:
        digits, dec_exp, low, high, low_diff = _big_digits(fract_bits, sc, dec_exp, e_form)
    dec_exponent = dec_exp + 1
    if high and (not low or low_diff > 0 or (low_diff == 0 and digits[-1] & 1)):
        dec_exponent = _roundup(digits, dec_exponent)
    return digits, dec_exponent


def _long_digits(bin_exp: int, fract_bits: int, n_sig_bits: int) -> tuple[list[int], int]:
    """An integer that fits a long: its digits, rounded past the significant ones."""
    if bin_exp > n_sig_bits:
        p2 = bin_exp - n_sig_bits - 1
        insignificant = _INSIGNIFICANT_DIGITS[p2] if 1 < p2 < 64 else 0
    else:
        insignificant = 0
    lvalue = fract_bits << (bin_exp - 52) if bin_exp >= 52 else fract_bits >> (52 - bin_exp)
    dec_exp = 0
    if insignificant:
        pow10 = 10**insignificant
        lvalue, residue = divmod(lvalue, pow10)
        dec_exp += insignificant
        if residue >= pow10 >> 1:
            lvalue += 1
    text = str(lvalue)
    return [int(c) for c in text.rstrip("0")], dec_exp + len(text)


class _Scales(Value):
    """dtoa's exponents: the value is fract * 5^b5 * 2^b2, the scale 5^s5 * 2^s2 and the margin
    of error 5^m5 * 2^m2, with their common powers of two taken out."""

    __slots__ = ("b2", "b5", "m2", "m5", "s2", "s5")
    FIELDS = ("b5", "b2", "s5", "s2", "m5", "m2")
    b5: Final[int]
    b2: Final[int]
    s5: Final[int]
    s2: Final[int]
    m5: Final[int]
    m2: Final[int]

    def __init__(self, b5: int, b2: int, s5: int, s2: int, m5: int, m2: int) -> None:
        self.b5 = b5
        self.b2 = b2
        self.s5 = s5
        self.s2 = s2
        self.m5 = m5
        self.m2 = m2


def _scales(dec_exp: int, bin_exp: int, n_sig_bits: int, n_fract_bits: int,
            n_tiny_bits: int) -> _Scales:
    b5 = max(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m5 = b5
    m2 = b2 - n_sig_bits
    b2 -= n_fract_bits - 1
    common = min(b2, s2)
    b2 -= common
    s2 -= common
    m2 -= common
    if n_fract_bits == 1:
        m2 -= 1
    if m2 < 0:
        b2 -= m2
        s2 -= m2
        m2 = 0
    return _Scales(b5, b2, s5, s2, m5, m2)


#: (digits, decimal exponent, low, high, low_diff): a digit generator's state when it stops.
_Generated = tuple[list[int], int, bool, bool, int]


def _first_digit(q: int, high: bool, dec_exp: int) -> tuple[list[int], int]:
    """The digits so far after the first quotient: a leading zero lowers the exponent instead."""
    if q == 0 and not high:
        return [], dec_exp - 1
    return [q], dec_exp


def _word_digits(fract_bits: int, sc: _Scales, dec_exp: int, e_form: bool,
                 wrap: Callable[[int], int]) -> _Generated:
    """The digits in Java's int or long arithmetic (`wrap`), wrapping around as it does."""
    b = wrap(wrap(fract_bits * 5**sc.b5) << sc.b2)
    s = wrap(5**sc.s5 << sc.s2)
    m = wrap(5**sc.m5 << sc.m2)
    tens = wrap(s * 10)
    q, r = divmod(b, s)
    b = wrap(10 * r)
    m = wrap(m * 10)
    low = b < m
    high = wrap(b + m) > tens
    digits, dec_exp = _first_digit(q, high, dec_exp)
    if e_form:
        low = high = False
    while not low and not high:
        q, r = divmod(b, s)
        b = wrap(10 * r)
        m = wrap(m * 10)
        if m > 0:
            low = b < m
            high = wrap(b + m) > tens
        else:
            low = high = True
        digits.append(q)
    low_diff = wrap(wrap(b << 1) - tens)
    return digits, dec_exp, low, high, low_diff


def _big_digits(fract_bits: int, sc: _Scales, dec_exp: int, e_form: bool) -> _Generated:
    """The digits in Java's BigInteger arithmetic."""
    b = (fract_bits * 5**sc.b5) << sc.b2
    s = 5**sc.s5 << sc.s2
    m = 5 ** (sc.m5 + 1) << (sc.m2 + 1)
    tens = 5 ** (sc.s5 + 1) << (sc.s2 + 1)
    q, r = divmod(b, s)
    b = r * 10
    low = b < m
    high = b + m >= tens
    digits, dec_exp = _first_digit(q, high, dec_exp)
    if e_form:
        low = high = False
    while not low and not high:
        q, r = divmod(b, s)
        b = r * 10
        m *= 10
        low = b < m
        high = b + m >= tens
        digits.append(q)
    low_diff = (2 * b > tens) - (2 * b < tens) if (high and low) else 0
    return digits, dec_exp, low, high, low_diff


def _roundup(digits: list[int], dec_exponent: int) -> int:
    """Add one to the last digit; an all-9 carry leaves `1` then zeros, as Java does."""
    i = len(digits) - 1
    while digits[i] == 9 and i > 0:
        digits[i] = 0
        i -= 1
    if digits[i] == 9:
        digits[0] = 1
        return dec_exponent + 1
    digits[i] += 1
    return dec_exponent


def _shortest_digits(x: float, *, single: bool) -> tuple[list[int], int]:
    """JDK 19+ digits: the shortest decimal that rounds back to x; 2 digits if 1 is not closest."""
    frac = Decimal(x)  # exact value of the binary number
    if single:
        found = None
        for n in range(1, 10):
            found = _closest_roundtrip(frac, n, x, single=True)
            if found is not None:
                break
        assert found is not None
        digits, exp = found
    else:
        _, dtuple, dexp = Decimal(repr(x)).normalize(_WIDE).as_tuple()
        digits, exp = list(dtuple), len(dtuple) + int(dexp)
    if len(digits) == 1:
        two = _closest_roundtrip(frac, 2, x, single=single)
        if two is not None and len(two[0]) == 2:
            digits, exp = two
    return digits, exp


def _closest_roundtrip(
    exact: Decimal, n: int, x: float, *, single: bool
) -> tuple[list[int], int] | None:
    """The n-digit decimal closest to `exact` that parses back to x, as (digits, exponent)."""
    with localcontext(_WIDE):
        unit = Decimal(1).scaleb(exact.adjusted() - n + 1)
        lower = (exact / unit).to_integral_value(rounding="ROUND_FLOOR")
        best: tuple[Decimal, Decimal] | None = None
        for cand in (lower, lower + 1):
            value = cand * unit
            back = _to_float32(float(value)) if single else float(value)
            if back == x:
                dist = abs(value - exact)
                if best is None or dist < best[0] or (dist == best[0] and int(cand) % 2 == 0):
                    best = (dist, value)
        if best is None:
            return None
        _sign, dtuple, dexp = best[1].normalize().as_tuple()
    return list(dtuple), len(dtuple) + int(dexp)


def _to_float32(x: float) -> float:
    """Java's `(float) x`: round to nearest float32, overflowing to infinity."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def _format_java(negative: bool, digits: list[int] | str, dec_exponent: int) -> str:
    """Java's layout: plain for 1e-3 <= |x| < 1e7, else d.dddE±n; always a digit after '.'."""
    ds = digits if isinstance(digits, str) else "".join(map(str, digits))
    n = len(ds)
    sign = "-" if negative else ""
    if 0 < dec_exponent < 8:
        if n == dec_exponent:
            return f"{sign}{ds}.0"
        if n <= dec_exponent:
            return f"{sign}{ds}{'0' * (dec_exponent - n)}.0"
        return f"{sign}{ds[:dec_exponent]}.{ds[dec_exponent:]}"
    if -3 < dec_exponent <= 0:
        return f"{sign}0.{'0' * -dec_exponent}{ds}"
    return f"{sign}{ds[0]}.{ds[1:] or '0'}E{dec_exponent - 1}"


_POW5 = tuple(5**i for i in range(400))


def _legacy_fast(x: float) -> str | None:
    """The JDK 17 text of a positive finite x via `repr` when provably equal to the port.

    FloatingDecimal stops at the shortest length k once a k-digit neighbour of x lies strictly
    within half an ulp, and then picks the closer one, as `repr` does. They part only for
    1-digit results, powers of two, subnormals, integers of 2^53 and more, an exact tie between
    two neighbours, or a neighbour exactly half an ulp away. With repr = D * 10^e (e < 0), the
    last two need 5^-e to divide D or 2D +- 1; anything else is safe. Checked against the full
    port on 600k random doubles.
    """
    if x.is_integer():
        if x < 9007199254740992.0:
            text = str(int(x))
            return _format_java(False, text.rstrip("0"), len(text))
        return None
    if x < 2.2250738585072014e-308 or math.frexp(x)[0] == 0.5:
        return None
    m_text, _, e_text = repr(x).partition("e")
    whole, _, frac = m_text.partition(".")
    d_text = (whole + frac).lstrip("0")
    d = int(d_text)
    e = (int(e_text) if e_text else 0) - len(frac)
    if -e >= 400:
        return None
    p = _POW5[-e]
    if (not d % p or not (2 * d + 1) % p or not (2 * d - 1) % p) and _on_edge(x, d, e):
        return None
    stripped = d_text.rstrip("0")
    if len(stripped) < 2:
        return None
    dec_exponent = len(d_text) + e
    if 0 < dec_exponent < 8 and len(stripped) > dec_exponent:
        return f"{stripped[:dec_exponent]}.{stripped[dec_exponent:]}"
    return _format_java(False, stripped, dec_exponent)


def _on_edge(x: float, d: int, e: int) -> bool:
    """Whether D * 10^e is exactly half an ulp from x, or x is midway between two neighbours."""
    num, den = x.as_integer_ratio()  # x = num/den, den a power of two
    scale = 10**-e
    twice_gap = 2 * abs(d * den - num * scale)  # 2|c - x| = twice_gap / (scale * den)
    ulp_num, ulp_den = math.ulp(x).as_integer_ratio()
    return twice_gap * ulp_den == ulp_num * scale * den or twice_gap == den


def double_to_string(x: float, *, jdk: int = DEFAULT_JDK) -> str:
    """`Double.toString(x)` of the given Java version (17: FloatingDecimal, 19+: shortest)."""
    if x != x:
        return "NaN"
    if x == math.inf or x == -math.inf:
        return "Infinity" if x > 0 else "-Infinity"
    if jdk < 19 and x:
        fast = _legacy_fast(x) if x > 0 else _legacy_fast(-x)
        if fast is not None:
            return fast if x > 0 else "-" + fast
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    negative = bool(bits >> 63)
    if x == 0:
        return "-0.0" if negative else "0.0"
    if jdk >= 19:
        digits, dec_exponent = _shortest_digits(abs(x), single=False)
        return _format_java(negative, digits, dec_exponent)
    fract = bits & _SIGNIF_MASK
    bin_exp = (bits >> 52) & 0x7FF
    if bin_exp == 0:
        shift = 53 - fract.bit_length()
        fract <<= shift
        bin_exp = 1 - shift
        n_sig = fract.bit_length() - shift
    else:
        fract |= 1 << 52
        n_sig = 53
    digits, dec_exponent = _legacy_digits(bin_exp - 1023, fract, n_sig)
    return _format_java(negative, digits, dec_exponent)


def float_to_string(x: float, *, jdk: int = DEFAULT_JDK) -> str:
    """`Float.toString((float) x)`: x is first rounded to float32 as Java's cast does."""
    f = _to_float32(x) if math.isfinite(x) else x
    if f != f:
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    negative = bool(bits >> 31)
    if f == 0:
        return "-0.0" if negative else "0.0"
    if jdk >= 19:
        digits, dec_exponent = _shortest_digits(abs(f), single=True)
        return _format_java(negative, digits, dec_exponent)
    fract = bits & 0x7FFFFF
    bin_exp = (bits >> 23) & 0xFF
    if bin_exp == 0:
        leading = 32 - fract.bit_length()
        shift = leading - 8
        fract <<= shift
        bin_exp = 1 - shift
        n_sig = 32 - leading
    else:
        fract |= 1 << 23
        n_sig = 24
    digits, dec_exponent = _legacy_digits(bin_exp - 127, fract << 29, n_sig)
    return _format_java(negative, digits, dec_exponent)


def float32_fits(x: float) -> bool:
    """Whether x stays finite (or stays non-finite) when Java casts it to float."""
    return not math.isfinite(x) or math.isfinite(_to_float32(x))


# --------------------------------------------------------------------------------------------
# BigDecimal
# --------------------------------------------------------------------------------------------



def _unscaled_and_scale(d: Decimal) -> tuple[int, str, int]:
    if not d.is_finite():
        raise ValueError(f"{d} is not a finite decimal")
    sign, digits, exp = d.as_tuple()
    coeff = "".join(map(str, digits)).lstrip("0") or "0"
    return (0 if coeff == "0" else sign), coeff, -int(exp)


def bigdecimal_to_string(d: Decimal) -> str:
    """`BigDecimal.toString()`: plain unless scale < 0 or the adjusted exponent < -6."""
    sign, coeff, scale = _unscaled_and_scale(d)
    prefix = "-" if sign else ""
    adjusted = -scale + (len(coeff) - 1)
    if scale >= 0 and adjusted >= -6:
        return prefix + _plain(coeff, scale)
    mant = coeff[0] + ("." + coeff[1:] if len(coeff) > 1 else "")
    exp = "" if adjusted == 0 else f"E{'+' if adjusted > 0 else ''}{adjusted}"
    return prefix + mant + exp


def _plain(coeff: str, scale: int) -> str:
    if scale <= 0:
        return coeff if coeff == "0" else coeff + "0" * -scale
    if len(coeff) > scale:
        return f"{coeff[:-scale]}.{coeff[-scale:]}"
    return "0." + "0" * (scale - len(coeff)) + coeff


def bigdecimal_to_plain_string(d: Decimal) -> str:
    """`BigDecimal.toPlainString()`: never an exponent; the scale's trailing zeros are kept."""
    sign, coeff, scale = _unscaled_and_scale(d)
    return ("-" if sign else "") + _plain(coeff, scale)


def bigdecimal_strip_trailing_zeros(d: Decimal) -> Decimal:
    """`BigDecimal.stripTrailingZeros()`: zero becomes `0` (scale 0), as since Java 8."""
    sign, coeff, scale = _unscaled_and_scale(d)
    if coeff == "0":
        return Decimal(0)
    stripped = coeff.rstrip("0")
    scale -= len(coeff) - len(stripped)
    return Decimal((sign, tuple(int(c) for c in stripped), -scale))


# --------------------------------------------------------------------------------------------
# java.time formatters used by Flink (TimeFormats, ISO_LOCAL_DATE, ISO_LOCAL_DATE_TIME)
# --------------------------------------------------------------------------------------------


def format_fraction(nanos: int) -> str:
    """`appendFraction(NANO_OF_SECOND, 0, 9, true)`: `.` and digits, trailing zeros trimmed."""
    if nanos == 0:
        return ""
    return "." + f"{nanos:09d}".rstrip("0")


def format_iso_date(year: int, month: int, day: int) -> str:
    """`ISO_LOCAL_DATE`: 4-digit year, `+` for years past 9999, `-` for negative years."""
    if 0 <= year <= 9999:
        y = f"{year:04d}"
    elif year > 9999:
        y = f"+{year}"
    else:
        y = f"-{-year:04d}"
    return f"{y}-{month:02d}-{day:02d}"


def format_date(value: dt.date) -> str:
    return format_iso_date(value.year, value.month, value.day)


def format_sql_time(value: dt.time, nanos: int | None = None) -> str:
    """Flink's `SQL_TIME_FORMAT`: `HH:mm:ss` plus a trimmed fraction (`nanos` overrides)."""
    ns = value.microsecond * 1000 if nanos is None else nanos
    return f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}{format_fraction(ns)}"


def format_sql_timestamp(value: dt.datetime, nanos: int | None = None) -> str:
    """Flink's `SQL_TIMESTAMP_FORMAT`: `yyyy-MM-dd HH:mm:ss[.fraction]`."""
    return f"{format_date(value)} {format_sql_time(value.time(), nanos)}"


def format_iso_timestamp(value: dt.datetime, nanos: int | None = None) -> str:
    """`ISO_LOCAL_DATE_TIME` (Flink's ISO-8601 form): like SQL but with `T`; seconds always."""
    return f"{format_date(value)}T{format_sql_time(value.time(), nanos)}"


_DATE_RE = r"(?P<y>[+-]?\d{4,9})-(?P<mo>\d{2})-(?P<d>\d{2})"
_TIME_RE = r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?"
_TIME_ISO_RE = r"(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.(?P<f>\d{1,9}))?)?"
_PATTERNS = {
    "date": re.compile(_DATE_RE + r"\Z"),
    "sql_time": re.compile(_TIME_RE + r"\Z"),
    "sql": re.compile(_DATE_RE + " " + _TIME_RE + r"\Z"),
    "sql_ltz": re.compile(_DATE_RE + " " + _TIME_RE + r"Z\Z"),
    "iso": re.compile(_DATE_RE + "T" + _TIME_ISO_RE + r"\Z"),
    "iso_ltz": re.compile(_DATE_RE + "T" + _TIME_ISO_RE + r"Z\Z"),
}


def parse_temporal(text: str, pattern: str) -> tuple[dt.date | None, dt.time | None, int]:
    """Parse like the java.time formatter named `pattern`; returns (date, time, nanos).

    `pattern` is one of date, sql_time, sql, sql_ltz, iso, iso_ltz. Raises ValueError on text
    the Java formatter rejects (wrong separators, 1-digit fields, fractions over 9 digits).
    """
    m = _PATTERNS[pattern].match(text)
    if m is None:
        raise ValueError(f"{text!r} does not match the {pattern} format")
    g = m.groupdict()
    date = None
    if "y" in g:
        date = dt.date(int(g["y"]), int(g["mo"]), int(g["d"]))
    time = None
    nanos = 0
    if "h" in g:
        frac = g.get("f") or ""
        nanos = int(frac.ljust(9, "0")) if frac else 0
        time = dt.time(int(g["h"]), int(g["mi"]), int(g.get("s") or 0), nanos // 1000)
    return date, time, nanos
