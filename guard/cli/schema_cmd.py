"""`keyguard schema`: the key or value schema a table writes, as keyguard would register it.

The schema is the codec's own (`Codec.written_schema`, the text `encode --register` registers),
built from a Flink DDL or from --columns and the format flags; no registry or broker is opened.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.cli.bytes_cmd import (
    ColumnsOpt,
    FlinkDdlOpt,
    KeyFormatOpt,
    OptionOpt,
    PkOpt,
    TopicOpt,
    ValueFormatOpt,
    _flink_table,
)
from keyguard.guard.cli.common import echo, fail, handles_errors, one_of, parse_kv
from keyguard.guard.options import KEY_FORMAT, VALUE_FORMAT

#: --type's names of the schema types (`FormatFactory.schema_type`).
SCHEMA_TYPES = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}


@handles_errors
def schema_cmd(
    flink_ddl: FlinkDdlOpt = None,
    columns: ColumnsOpt = None,
    primary_key: PkOpt = None,
    topic: TopicOpt = "example",
    key_format: KeyFormatOpt = KEY_FORMAT.default_value,
    value_format: ValueFormatOpt = VALUE_FORMAT.default_value,
    option: OptionOpt = None,
    side: Annotated[str, typer.Option(
        "--side", help="key or value: which side's schema to print.",
        callback=one_of(("key", "value"), "--side"))] = "value",
    schema_type: Annotated[str | None, typer.Option(
        "--type", help="avro, json or protobuf: the schema type expected; a format that "
        "writes another one is an error (exit 2).",
        callback=one_of(tuple(SCHEMA_TYPES), "--type"))] = None,
) -> None:
    """Print the key or value schema a table writes (.avsc, JSON Schema or .proto), exactly as
    keyguard registers it (encode --register, the Spark writer).

    Contacts nothing: it is offline (a registry url in the options is never opened)."""
    options, table, origin = _table(flink_ddl, columns=columns, primary_key=primary_key,
                                    topic=topic, key_format=key_format,
                                    value_format=value_format, option=option)
    # lazy: CLI start-up (the plan loads the codecs of both formats)
    from keyguard.formats.plan import resolve_options

    plan = resolve_options(_offline(options)).project(table).build()
    codec = plan.key_codec if side == "key" else plan.value_codec
    fmt = plan.key_format if side == "key" else plan.value_format
    written = codec.written_schema(f"{origin} ({side}, {fmt})")
    text = registered_schema(fmt, written, side, where=origin, judged="to print")
    if schema_type is not None and SCHEMA_TYPES[schema_type] != text.schema_type:
        raise InvalidOptionError(
            f"--type {schema_type}: the {side} format {fmt} of {origin} registers "
            f"{text.schema_type} schemas, not {SCHEMA_TYPES[schema_type]}",
            hint=f"drop --type, or give --type {text.schema_type.lower()}")
    # exactly the schema's text, ending with one newline (a .proto's own, or echo's)
    echo(text.text.removesuffix("\n"))


def _table(flink_ddl: str | None, *, columns: str | None, primary_key: str | None,
           topic: str, key_format: str, value_format: str, option: list[str] | None
           ) -> tuple[dict[str, Any], Any, str]:
    """(table options, columns, where they came from): a DDL's (-o on top), or the flags'."""
    ddl = _flink_table(flink_ddl, columns=columns, primary_key=primary_key, topic=topic,
                       key_format=key_format, value_format=value_format)
    if ddl is not None:
        return {**ddl.options, **parse_kv(option)}, ddl.columns, ddl.origin
    if not (columns and primary_key):
        raise fail("give the table: --flink-ddl orders.sql, or --columns with --primary-key")
    from keyguard.formats.sqltypes import parse_columns  # lazy: CLI start-up (the SQL types)

    options: dict[str, Any] = {"topic": topic, "primary-key": primary_key,
                               "key.format": key_format, "value.format": value_format,
                               "value.fields-include": "ALL"}
    return {**options, **parse_kv(option)}, parse_columns(columns), "--columns"


#: The registry url a registry format is built with when none is given: never opened, the
#: schema a codec writes does not depend on where it would be registered.
UNUSED_REGISTRY = "mock://keyguard-schema"


def _offline(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with a registry url for each registry format that names none."""
    from keyguard.formats.codec import format_factory  # lazy: CLI start-up (the format table)

    filled = dict(options)
    for role in ("key", "value"):
        fmt = str(options.get(f"{role}.format") or "")
        if fmt and format_factory(fmt).uses_registry:
            filled.setdefault(f"{role}.{fmt}.url", UNUSED_REGISTRY)
    return filled


def registered_schema(fmt: str, written: SchemaText, role: str, *, where: str,
                      judged: str) -> SchemaText:
    """`written`, the schema a `role` side of format `fmt` writes, when the format registers
    one; json, csv and raw write text and no schema, an error saying so (exit 2)."""
    from keyguard.formats.codec import format_factory  # lazy: CLI start-up (the format table)

    if not format_factory(fmt).has_schema:
        raise InvalidOptionError(
            f"{where}: the {role} format {fmt} writes the row as text and registers no "
            f"schema: there is no {role} schema {judged}",
            hint="a format with a schema has one: avro-confluent, avro, json-registry, "
                 "protobuf-registry, protobuf" + (
                     "; key bytes are compared with diff --key" if judged == "to judge at --level"
                     else ""))
    return written
