"""The names keyguard knows, and where each is implemented: plain data, imported by anything
that only needs a name (the CLI's help and choices) without loading a format.

The modules named here are imported on first use (`keyguard.formats.codec.format_factory`).
"""

from __future__ import annotations

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
