"""JSON strings as Jackson's `UTF8JsonGenerator` writes them, for the json format's writers.

Control characters as `\\n`-style or `\\u00XX` escapes, `"` and `\\` escaped, `/`, DEL and U+2028
left alone, BMP text as raw UTF-8, characters beyond U+FFFF as an escaped surrogate pair
(`\\uD83D\\uDE00`). The row writer, the column-wise writer (`keyguard.formats.json_vector`) and
the reader's text of a nested value all quote strings with `json_string`.
"""

from __future__ import annotations

import re

__all__ = ["SURROGATE", "json_string"]

#: A lone surrogate: no UTF-8 text holds one, so no value of a STRING column may.
SURROGATE = re.compile("[\ud800-\udfff]")

_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r",
                 0x22: '\\"', 0x5C: "\\\\"})
_NEEDS_ESCAPE = re.compile("[\x00-\x1f\"\\\\\ud800-\udfff\U00010000-\U0010ffff]")


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x80:
        return _ESCAPES[c]
    if c < 0x10000:  # a lone surrogate: Jackson escapes it too
        return f"\\u{c:04X}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04X}\\u{0xDC00 + (c & 0x3FF):04X}"


def json_string(s: str) -> str:
    """The quoted JSON text of `s`, byte for byte what Flink's Jackson writes."""
    if _NEEDS_ESCAPE.search(s) is None:
        return f'"{s}"'
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'
