"""Schema text -> JSON data, with a nesting limit so that absurd input is an error, not a crash.

Every walk over a schema (validation, conversion, compatibility, key analysis) recurses once
or a few times per nesting level. Python's stack holds about a thousand frames, and
`json.loads` itself raises RecursionError near that depth, so schema text nested deeper than
`MAX_SCHEMA_DEPTH` JSON arrays and objects is rejected here, before anything walks it. The
limit is far above real schemas: it allows about 30 Avro records or 50 JSON Schema objects
nested in each other.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from keyguard.formats.errors import SchemaError

#: Deepest nesting of JSON arrays and objects accepted in a schema (documented in
#: docs/concepts/formats.md).
MAX_SCHEMA_DEPTH = 100

_DEPTH_HINT = (
    f"keyguard accepts schemas nested up to {MAX_SCHEMA_DEPTH} JSON levels deep; flatten the "
    "schema or name the nested types and refer to them"
)


def depth_error(origin: str, where: str = "") -> SchemaError:
    if len(where) > 80:
        where = where[:77] + "..."
    at = f" at {where}" if where else ""
    return SchemaError(f"{origin}: the schema is nested more than {MAX_SCHEMA_DEPTH} levels "
                       f"deep{at}", hint=_DEPTH_HINT)


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a schema's (acyclic) data and types are built.

    A 200k-field schema allocates millions of objects that all survive; the collector would
    rescan them again and again as they pile up (measured: 5x the time of the work itself).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def loads_schema(text: str, origin: str) -> Any:
    """`json.loads`, with a SchemaError naming `origin` for bad JSON or absurd nesting."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise depth_error(origin) from None
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{origin}: not valid JSON: {exc}",
                          hint="fix the JSON syntax at the line and column shown") from None
    check_depth(data, origin)
    return data


def check_depth(data: Any, origin: str) -> None:
    """SchemaError when `data` nests arrays and objects deeper than MAX_SCHEMA_DEPTH."""
    if not isinstance(data, (dict, list)):
        return
    level = [data]
    for _ in range(MAX_SCHEMA_DEPTH):
        deeper = []
        for node in level:
            for child in (node.values() if isinstance(node, dict) else node):
                if isinstance(child, (dict, list)):
                    deeper.append(child)
        if not deeper:
            return
        level = deeper
    raise depth_error(origin, _too_deep(data))


def _too_deep(data: Any) -> str:
    """The JSON pointer of a node nested deeper than the limit (only when there is one)."""
    path, node = "", data
    for i in range(MAX_SCHEMA_DEPTH):
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(child, (dict, list)) and \
                    _depth_exceeds(child, MAX_SCHEMA_DEPTH - 1 - i):
                path, node = f"{path}/{key}", child
                break
    return path or "/"


def _depth_exceeds(data: Any, limit: int) -> bool:
    level = [data]
    for _ in range(limit):
        level = [c for n in level for c in (n.values() if isinstance(n, dict) else n)
                 if isinstance(c, (dict, list))]
        if not level:
            return False
    return True
