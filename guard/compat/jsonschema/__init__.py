"""JSON Schema reader/writer compatibility, as Confluent Schema Registry decides it.

`resolve` parses a schema and inlines its `$ref`s, `model` says what kind of schema each node is
(as Confluent's everit-based loader does), `diff` walks a reader and a writer kind by kind and
names every incompatibility by Confluent's `Difference.Type`.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from typing import Any

from keyguard.formats.errors import SchemaError
from keyguard.formats.schemajson import loads_schema
from keyguard.guard.compat.jsonschema.diff import Walk
from keyguard.guard.compat.jsonschema.resolve import JsonSchema, parse
from keyguard.guard.compat.jsonschema.variations import guess_draft
from keyguard.guard.compat.levels import Incompatibility, PairChecker
from keyguard.guard.compat.registry_rules import CONFLUENT, RegistryRules

__all__ = ["CHECKER", "JsonSchema", "check_reader_writer", "parse"]

#: The walk recurses once per (reader, writer) pair on its path. Recursive schemas (unions of
#: `$ref`s to each other) put every pair of their definitions on one path, which is far deeper
#: than Python's default limit of 1000 frames though each pair is visited once; the walk only
#: makes Python-to-Python calls, which do not grow the C stack.
WALK_RECURSION_LIMIT = 200_000


def check_reader_writer(reader: JsonSchema, writer: JsonSchema,
                        rules: RegistryRules = CONFLUENT) -> list[Incompatibility]:
    """Every reason `reader` rejects values that `writer` accepts; [] when it accepts them all
    (by Confluent's rules, or by `rules` where that registry differs)."""
    if _document(reader.source) == _document(writer.source):
        return []  # the same document (definitions and all) reads itself, as the registry says
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, WALK_RECURSION_LIMIT))
    try:
        return Walk(rules).walk(reader.root, writer.root, ())
    except RecursionError:
        raise SchemaError(
            "the JSON Schemas are too deeply recursive to compare",
            hint="split the schema's definitions, or check this change with the registry itself",
        ) from None
    finally:
        sys.setrecursionlimit(limit)


def _document(source: Any) -> str:
    """A schema's canonical JSON text: key order aside, two equal texts are one schema (JSON
    types kept apart: `1`, `1.0` and `true` stay different)."""
    if isinstance(source, bytes):
        source = source.decode()
    if isinstance(source, str):
        source = json.loads(source)
    return json.dumps(source, sort_keys=True, separators=(",", ":"))


def _parse_guessing_draft(schema: Any) -> JsonSchema:
    """Redpanda's reading: a schema without `$schema` under the draft its content fits."""
    if isinstance(schema, bytes):
        schema = schema.decode()
    if isinstance(schema, str):
        schema = loads_schema(schema, "invalid JSON Schema")
    return parse(guess_draft(schema))


def _under(rules: RegistryRules) -> PairChecker[JsonSchema]:
    return PairChecker(parse=_parse_guessing_draft if rules.draft_from_content else parse,
                       check=partial(check_reader_writer, rules=rules))


CHECKER: PairChecker[JsonSchema] = PairChecker(parse=parse, check=check_reader_writer,
                                               under=_under)
