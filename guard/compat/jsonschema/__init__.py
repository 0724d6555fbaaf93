"""JSON Schema reader/writer compatibility, as Confluent Schema Registry decides it.

`resolve` parses a schema and inlines its `$ref`s, `model` says what kind of schema each node is
(as Confluent's everit-based loader does), `diff` walks a reader and a writer kind by kind and
names every incompatibility by Confluent's `Difference.Type`.
"""

from __future__ import annotations

from guard.compat.jsonschema.diff import Walk
from guard.compat.jsonschema.resolve import JsonSchema, parse
from guard.compat.levels import Incompatibility, PairChecker

__all__ = ["CHECKER", "JsonSchema", "check_reader_writer", "parse"]


def check_reader_writer(reader: JsonSchema, writer: JsonSchema) -> list[Incompatibility]:
    """Every reason `reader` rejects values that `writer` accepts; [] when it accepts them all."""
    return Walk().walk(reader.root, writer.root, ())


CHECKER: PairChecker[JsonSchema] = PairChecker(parse=parse, check=check_reader_writer)
