"""Schema types (AVRO, JSON, PROTOBUF) and how each parses its schema text.

A schema type is declared by its module (`keyguard.formats.catalog.SCHEMA_TYPES` names it),
which calls `register_schema_type` when imported; `schema_type("NAME")` imports that module on
first use only, so reading an Avro schema never loads the JSON Schema validator.
`keyguard.formats.schemafile` dispatches through it without a switch: adding a schema type adds
its module and its line in the catalog. A type the catalog does not list (a registry's XML) is
kept as text.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Final

from keyguard.formats.catalog import SCHEMA_TYPES
from keyguard.formats.immutable import Value
from keyguard.formats.types import DataType


class SchemaType(Value):
    """How schemas of one type are read.

    `parse(text, origin)`: the schema's data, checked against its specification (SchemaError
    otherwise; `origin` names the file or subject). `row_type(data, avro_only)`: the row type of
    parsed data (`avro_only`: for the guard's structural analysis, see `SchemaText.row_type`).
    """

    __slots__ = ("name", "parse", "row_type")
    FIELDS = ("name", "parse", "row_type")
    name: Final[str]
    parse: Final[Callable[[str, str], object]]
    row_type: Final[Callable[[object, bool], DataType]]

    def __init__(self, name: str, parse: Callable[[str, str], object],
                 row_type: Callable[[object, bool], DataType]) -> None:
        self.name = name
        self.parse = parse
        self.row_type = row_type


_TYPES: dict[str, SchemaType] = {}


def register_schema_type(declared: SchemaType) -> SchemaType:
    _TYPES[declared.name] = declared
    return declared


def schema_module(name: str) -> str | None:
    """The module that declares schema type `name` (the catalog's), or None."""
    return SCHEMA_TYPES.get(name) if isinstance(name, str) else None


def schema_type(name: str) -> SchemaType | None:
    """Schema type `name`, importing its module on first use; None when the catalog lists no
    module for it (a registry's other schema types are kept as text)."""
    if name not in _TYPES:
        module = schema_module(name)
        if module is not None:
            importlib.import_module(module)
    return _TYPES.get(name)
