"""The names keyguard knows, and where each is implemented: plain data, imported by anything
that only needs a name (the CLI's help and choices) without loading a format.

Every format, alias, default, schema type and frame is written out here with the module (or
value) that declares it, imported on first use only (`keyguard.formats.codec.format_factory`,
`keyguard.formats.schema_types.schema_type`, `frame`): reading an Avro schema never loads the
JSON Schema validator, a check of one topic no other format's codec. Nothing is found by naming
convention: adding a format, a schema type or a framing is its module (or its value) and one
line here, and a name not listed is an error that lists the names that are. The guard's own
catalog (key-rule families, compatibility checkers, renderers, commands) is
`keyguard.guard.catalog`: formats/ never imports guard/.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keyguard.formats.framing import Frame

#: The built-in formats and the module that registers each, imported on first use only.
BUILTIN_FORMATS = {
    "json": "keyguard.formats.json_format",
    "csv": "keyguard.formats.csv_format",
    "raw": "keyguard.formats.raw_format",
    "avro": "keyguard.formats.avro_format",
    "avro-confluent": "keyguard.formats.avro_confluent_format",
    "json-registry": "keyguard.formats.json_registry_format",
    "protobuf": "keyguard.formats.protobuf_format",
    "protobuf-registry": "keyguard.formats.protobuf_format",
}

#: The pip extra a built-in format needs beyond keyguard's own dependencies (`keyguard[NAME]`).
FORMAT_EXTRAS = {"protobuf": "protobuf", "protobuf-registry": "protobuf"}

#: Other names of built-in formats, as Confluent Cloud's Flink names them in DDL: an alias
#: resolves to its format everywhere (`format_factory`, `canonical_format`), and its option
#: prefix works as the format's own (`key.avro-registry.url` is `key.avro-confluent.url`).
FORMAT_ALIASES = {
    "avro-registry": "avro-confluent",
    "proto-registry": "protobuf-registry",
}

#: The format a schema registered under a subject is assumed written with, by its schema
#: type, when nothing names the format (the CI gate's discovered topics): the serializer that
#: registers schemas of that type. Any other type: the first entry's.
DEFAULT_FORMATS = {"AVRO": "avro-confluent", "JSON": "json", "PROTOBUF": "protobuf-registry"}

#: The schema types keyguard reads, as a registry names them, and the module that declares
#: each (`keyguard.formats.schema_types.register_schema_type`). A registry's other types are
#: kept as text.
SCHEMA_TYPES = {
    "AVRO": "keyguard.formats.avro_schema",
    "JSON": "keyguard.formats.json_schema",
    "PROTOBUF": "keyguard.formats.protobuf_schema",
}

#: How records frame their bodies, by name -> "module:VALUE" of the `Frame`
#: (`keyguard.formats.framing`); a format's factory and codec name one of these values.
FRAMES = {
    "bare": "keyguard.formats.framing:BARE",
    "confluent": "keyguard.formats.framing:CONFLUENT",
    "confluent-protobuf": "keyguard.formats.framing:CONFLUENT_PROTOBUF",
    "confluent-header": "keyguard.formats.framing:CONFLUENT_HEADER",
    "confluent-protobuf-header": "keyguard.formats.framing:CONFLUENT_PROTOBUF_HEADER",
    "apicurio": "keyguard.formats.framing:APICURIO",
    "apicurio-legacy": "keyguard.formats.framing:APICURIO_LEGACY",
    "apicurio-key-global-id": "keyguard.formats.framing:APICURIO_KEY_GLOBAL_ID",
    "apicurio-value-global-id": "keyguard.formats.framing:APICURIO_VALUE_GLOBAL_ID",
    "apicurio-key-content-id": "keyguard.formats.framing:APICURIO_KEY_CONTENT_ID",
    "apicurio-value-content-id": "keyguard.formats.framing:APICURIO_VALUE_CONTENT_ID",
    "apicurio-header-global-id": "keyguard.formats.framing:APICURIO_HEADER_GLOBAL_ID",
    "apicurio-header-content-id": "keyguard.formats.framing:APICURIO_HEADER_CONTENT_ID",
}

#: The framings a registry format's `framing` option may name, for either side: Confluent's
#: (the id in the bytes, or the GUID in a header) and Apicurio's.
SIDE_FRAMINGS = ("confluent", "confluent-header", "apicurio", "apicurio-legacy",
                 "apicurio-header-global-id", "apicurio-header-content-id")


def known(names: Iterable[str]) -> str:
    """The names of a catalog for an error's hint: sorted, comma-separated."""
    return ", ".join(sorted(names))


def frame(name: str) -> Frame:
    """The frame called `name`; InvalidOptionError (exit 2) listing the frames otherwise."""
    where = FRAMES.get(name) if isinstance(name, str) else None
    if where is None:
        # lazy: CLI start-up (the catalog is plain data; only an error needs the hierarchy)
        from keyguard.formats.errors import InvalidOptionError

        raise InvalidOptionError(f"unknown framing {name!r}", hint=f"use one of {known(FRAMES)}")
    module, _, value = where.partition(":")
    found: Frame = getattr(importlib.import_module(module), value)
    return found
