"""Schema text -> JSON data, with a nesting limit so that absurd input is an error, not a crash.

Every walk over a schema (validation, conversion, compatibility, key analysis) recurses once
or a few times per nesting level. Python's stack holds about a thousand frames, and
`json.loads` itself raises RecursionError near that depth, so schema text nested deeper than
`MAX_SCHEMA_DEPTH` JSON arrays and objects is rejected here, before anything walks it. The
limit is far above real schemas: it allows about 30 Avro records or 50 JSON Schema objects
nested in each other.
"""

from __future__ import annotations

import json
from typing import Any

from formats.errors import SchemaError

#: Deepest nesting of JSON arrays and objects accepted in a schema (documented in the README).
MAX_SCHEMA_DEPTH = 100

_DEPTH_HINT = (
    f"keyguard accepts schemas nested up to {MAX_SCHEMA_DEPTH} JSON levels deep; flatten the "
    "schema or name the nested types and refer to them"
)


def depth_error(origin: str, where: str = "") -> SchemaError:
    at = f" at {where}" if where else ""
    return SchemaError(f"{origin}: the schema is nested more than {MAX_SCHEMA_DEPTH} levels "
                       f"deep{at}", hint=_DEPTH_HINT)


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
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            children: Any = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            continue
        if depth > MAX_SCHEMA_DEPTH:
            raise depth_error(origin, path or "/")
        for key, child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, f"{path}/{key}"))
