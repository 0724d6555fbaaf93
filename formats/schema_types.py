"""Schema types (AVRO, JSON, ...) and how each parses its schema text, found by convention.

A schema type `NAME` is declared by the module `formats/<name>_schema.py` (lower case), which
calls `register_schema_type` when imported; `schema_type("NAME")` imports that module on first
use only, so reading an Avro schema never loads the JSON Schema validator.
`keyguard.formats.schemafile` dispatches through it without a switch: adding a schema type
(PROTOBUF) adds its module, and no table changes. A type no module declares (a registry's PROTOBUF
today) is kept as text.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from keyguard.formats.types import DataType

#: What a registry's or a file's schema type may be called: upper case, as Confluent spells it.
_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class SchemaType:
    """How schemas of one type are read.

    `parse(text, origin)`: the schema's data, checked against its specification (SchemaError
    otherwise; `origin` names the file or subject). `row_type(data, avro_only)`: the row type of
    parsed data (`avro_only`: for the guard's structural analysis, see `SchemaText.row_type`).
    """

    name: str
    parse: Callable[[str, str], object]
    row_type: Callable[[object, bool], DataType]


_TYPES: dict[str, SchemaType] = {}


def register_schema_type(declared: SchemaType) -> SchemaType:
    _TYPES[declared.name] = declared
    return declared


def schema_module(name: str) -> str:
    """The module that declares schema type `name` by convention."""
    return f"keyguard.formats.{name.lower()}_schema"


def schema_type(name: str) -> SchemaType | None:
    """Schema type `name`, importing its module on first use; None when no module declares it."""
    if name not in _TYPES and isinstance(name, str) and _NAME.match(name):
        module = schema_module(name)
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return _TYPES.get(name)
