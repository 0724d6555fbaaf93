"""`keyguard encode` / `decode` / `formats`: see the bytes your keys and values really are."""

from __future__ import annotations

import base64
import binascii
import json
import sys
from typing import Annotated, Any

import typer

from keyguard.formats.errors import (
    EXIT_BREAKING,
    EXIT_INVALID,
    InvalidOptionError,
    KeyguardError,
    RegistryError,
)
from keyguard.formats.registry.references import parse_reference_option
from keyguard.formats.schemafile import SchemaText, read_schema_source
from keyguard.formats.secrets import redact_url
from keyguard.formats.types import Field, RowType
from keyguard.formats.values import coerce_row, to_jsonable
from keyguard.guard.cli.common import (
    DdlConnectionsOpt,
    KeyFormatOpt,
    ReferenceOpt,
    RegistryOpt,
    SchemaTypeOpt,
    ValueFormatOpt,
    at_least,
    echo,
    fail,
    handles_errors,
    note_ddls,
    one_of,
    parse_kv,
    read_json_arg,
)
from keyguard.guard.options import KEY_FORMAT, VALUE_FORMAT, default_registry

ColumnsOpt = Annotated[
    str | None,
    typer.Option("--columns", help='The table, as Flink SQL columns: "region STRING, pv BIGINT".'),
]
PkOpt = Annotated[
    str | None, typer.Option("--primary-key", help="Primary-key columns, declaration order.")
]
KeySchemaOpt = Annotated[
    str | None,
    typer.Option("--key-schema", help="Key schema: a file (.avsc, .json) or subject:NAME[:VER]."),
]
ValueSchemaOpt = Annotated[
    str | None,
    typer.Option("--value-schema", help="Value schema: a file or subject:NAME[:VERSION]."),
]
TopicOpt = Annotated[str, typer.Option("--topic", help="Topic (names the registry subjects).")]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option", "-o",
        help="A table option KEY=VALUE with Flink's names, e.g. key.json.timestamp-format."
        "standard=ISO-8601 or value.avro-confluent.url=http://registry:8081. Repeatable.",
    ),
]
FlinkDdlOpt = Annotated[str | None, typer.Option(
    "--flink-ddl", help="The table as a Flink CREATE TABLE (.sql): its columns, primary key, "
    "topic, formats and options, instead of --columns/--key-schema and the format flags. "
    "-o options go on top. Its connection options count only with --flink-ddl-connections.")]
EncodingOpt = Annotated[str, typer.Option("--encoding", help="hex or base64.",
                                          callback=one_of(("hex", "base64"), "--encoding"))]
HeaderOpt = Annotated[list[str] | None, typer.Option(
    "--header", help="A record header NAME=VALUE, the value in --encoding (a header framing's "
    "schema id: __key_schema_id, __value_schema_id, apicurio.key.globalId, ...). Repeatable, "
    "in the record's order.")]


def _table_from_sources(
    columns: str | None,
    primary_key: str | None,
    key_schema: SchemaText | None,
    value_schema: SchemaText | None,
) -> tuple[RowType, str, str]:
    """(table, primary key, value.fields-include) from a column list or key/value schemas."""
    if columns:
        if key_schema or value_schema:
            raise fail("give either --columns with --primary-key, or --key-schema/--value-schema")
        if not primary_key:
            raise fail("--columns needs --primary-key")
        from keyguard.formats.sqltypes import (
            parse_columns,  # lazy: CLI start-up (the SQL type parser)
        )

        return parse_columns(columns), primary_key, "ALL"
    if not (key_schema and value_schema):
        raise fail("give --columns with --primary-key, or both --key-schema and --value-schema")
    key_type, value_type = key_schema.row_type(), value_schema.row_type()
    value_names = set(value_type.names)
    fields: list[Field] = list(value_type.fields)
    fields += [f for f in key_type.fields if f.name not in value_names]
    include = "ALL" if all(n in value_names for n in key_type.names) else "EXCEPT_KEY"
    if primary_key and [c.strip() for c in primary_key.split(",")] != key_type.names:
        raise fail(
            f"--primary-key {primary_key} does not match the key schema's fields "
            f"{', '.join(key_type.names)}"
        )
    return RowType(fields=tuple(fields), nullable=False), ",".join(key_type.names), include


def _explicit_schema_option(
    options: dict[str, Any], role: str, fmt: str, schema: SchemaText | None
) -> None:
    """Write with the exact schema given (Avro: its names and defaults; Protobuf: its field
    numbers and messages), not a derived one: for a format that takes a `schema` option.

    Plain avro has no schema option (as in Flink): its bytes follow the table's columns,
    which come from the same schema in the same order."""
    from keyguard.formats.codec import format_factory  # lazy: CLI start-up (the format table)

    f = format_factory(fmt)
    if schema and "schema" in f.options.keys() and schema.schema_type == f.schema_type:
        options.setdefault(f"{role}.{fmt}.schema", schema.text)
        if schema.references:
            options.setdefault(f"{role}.{fmt}.references", json.dumps(schema.reference_list))


def _uses_registry(name: str | None) -> bool:
    """Whether format `name` reads a registry; an unknown name is reported where it is built."""
    from keyguard.formats.codec import format_factory  # lazy: CLI start-up (the format table)

    try:
        return bool(name) and format_factory(str(name)).uses_registry
    except InvalidOptionError:
        return False


def _build_plan(
    *,
    columns: str | None,
    primary_key: str | None,
    key_schema: str | None,
    value_schema: str | None,
    topic: str | None,
    key_format: str | None,
    value_format: str | None,
    option: list[str] | None,
    registry: str | None,
    schema_type: str | None,
    reference: list[str] | None = None,
    flink_ddl: str | None = None,
    ddl_connections: bool = False,
) -> Any:
    """The plan of encode, decode and audit: the table and options from the flags or a Flink
    DDL (its connection options only with `ddl_connections`), the registry from --registry,
    else a format's url, else the default (./schemas)."""
    # lazy: CLI start-up (the plan loads the codecs, registration the registry backends)
    from keyguard.formats.registry.registration import open_plan

    ddl = _flink_table(flink_ddl, columns=columns, primary_key=primary_key,
                       key_schema=key_schema, value_schema=value_schema, topic=topic,
                       key_format=key_format, value_format=value_format)
    note_ddls([ddl], ddl_connections)
    if ddl is not None:
        ddl = ddl if ddl_connections else ddl.without_connections()
        key_format, value_format = ddl.key_format, ddl.value_format
    assert key_format is not None and value_format is not None
    if registry is None:
        registry = _default_registry(key_format, value_format, key_schema, value_schema,
                                     {**(ddl.options if ddl else {}), **parse_kv(option)})

    if schema_type and not (key_schema or value_schema):
        raise InvalidOptionError(
            f"--schema-type {schema_type} is not used: it says how to read --key-schema and "
            "--value-schema files, and none is given", hint="drop --schema-type")
    reg = None
    if registry:
        _registry_needed(registry, key_format, value_format, key_schema, value_schema)
        # the one settings path: -o key.avro-confluent.timeout=5s (or key.json-registry.,
        # any registry format's prefix) reaches it too
        # lazy: CLI start-up (registry settings load the registry backends)
        from keyguard.formats.options import strip_prefix
        from keyguard.formats.registry.settings import registry_options_of, resolve_registry

        given = parse_kv(option)
        url, conn, sources = registry_options_of(
            (f"{r}.{fmt}.", strip_prefix(given, f"{r}.{fmt}."))
            for r, fmt in (("key", key_format), ("value", value_format))
            if _uses_registry(fmt))
        if url and url != registry.strip():
            raise InvalidOptionError("--registry and the format's url option name two "
                                     "registries", hint="give the registry once (--registry)")
        reg = resolve_registry(explicit_url=registry, explicit_options=conn,
                               explicit_sources=sources).open()
    if ddl is not None:  # the DDL's registry url yields to --registry
        from keyguard.formats.registry.options import is_registry_table_option  # lazy: CLI start-up

        kept = {k: v for k, v in ddl.options.items()
                if not (registry and is_registry_table_option(k))}
        return open_plan(ddl.columns, {**kept, **parse_kv(option)}, registry=reg)
    # Only a DDL leaves a format unnamed (audit), and a DDL's plan is returned above.
    assert key_format is not None and value_format is not None
    ks, vs = (
        read_schema_source(src, registry=reg, schema_type=schema_type,
                           references=tuple(map(parse_reference_option, reference or ())))
        if src else None
        for src in (key_schema, value_schema)
    )
    table, pk, include = _table_from_sources(columns, primary_key, ks, vs)
    options: dict[str, Any] = {
        "topic": topic,
        "primary-key": pk,
        "key.format": key_format,
        "value.format": value_format,
        "value.fields-include": include,
    }
    options.update(parse_kv(option))
    _explicit_schema_option(options, "key", key_format, ks)
    _explicit_schema_option(options, "value", value_format, vs)
    # The edge opens the registries the formats' options name; the codecs are handed them.
    return open_plan(table, options, registry=reg)


def _default_registry(key_format: str, value_format: str, key_schema: str | None,
                      value_schema: str | None, options: dict[str, Any]) -> str | None:
    """The registry when --registry names none: None when nothing reads one or a format's url
    option names it, else the default (./schemas); exit 2 when that is not here either."""
    roles = [(r, f) for r, f in (("key", key_format), ("value", value_format))
             if _uses_registry(f)]
    subjects = [s for s in (key_schema, value_schema) if s and s.startswith("subject:")]
    if not roles and not subjects:
        return None
    named = {k.split(".")[0] for k in options if len(k.split(".", 2)) == 3
             and k.split(".", 2)[2] == "url"}
    if not subjects and all(r in named for r, _ in roles):
        return None
    url = default_registry()
    if url is None:
        what = (f"the {roles[0][0]} format {roles[0][1]}" if roles
                else f"{subjects[0]}")
        raise InvalidOptionError(
            f"{what} reads a schema registry and none is named: no --registry, and no "
            "./schemas directory (the default) here",
            hint="give --registry URL (file://DIR, http(s)://...), or "
                 + ("a format without a registry, e.g. --key-format json --value-format json"
                    if roles else "a schema file"))
    return url


def _flink_table(path: str | None, **given: str | None) -> Any:
    """--flink-ddl's table (its notes: `note_ddls`); the flags it replaces must be left at
    their defaults."""
    if path is None:
        return None
    defaults = {"topic": "example", "key_format": KEY_FORMAT.default_value,
                "value_format": VALUE_FORMAT.default_value}
    clash = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None
             and v != defaults.get(k)]
    if clash:
        raise fail(f"--flink-ddl gives the table, its topic and formats: drop "
                   f"{', '.join(clash)}", kind="invalid-option")
    from keyguard.formats.flink_ddl import load_flink_ddl  # lazy: CLI start-up (only with a DDL)

    return load_flink_ddl(path)


def _registry_needed(registry: str, key_format: str | None, value_format: str | None,
                     *sources: str | None) -> None:
    """A --registry that nothing would read is a mistake to report, not to ignore.

    encode/decode read a registry for a registry format (avro-confluent, json-registry) and
    for subject: schema
    sources; with neither, the user likely meant another format or a subject source.
    """
    if any(_uses_registry(f) for f in (key_format, value_format)) or any(
            s and s.startswith("subject:") for s in sources):
        return
    raise InvalidOptionError(
        f"--registry {redact_url(registry)} is not used: the key and value formats "
        f"({key_format}, {value_format}) need no registry and no schema comes from a subject",
        hint="drop --registry, or use --key-format/--value-format avro-confluent (or "
        "json-registry) or "
        "--key-schema/--value-schema subject:NAME",
    )


#: Formats whose bytes are text worth showing next to the hex.
_TEXT_FORMATS = ("json", "csv")


def _show(data: bytes | None, encoding: str) -> str | None:
    if data is None:
        return None
    if encoding == "hex":
        return data.hex()
    if encoding == "base64":
        return base64.b64encode(data).decode("ascii")
    raise InvalidOptionError(f"--encoding must be hex or base64, got {encoding!r}")


def _parse_bytes(text: str, encoding: str, what: str) -> bytes:
    try:
        if encoding == "hex":
            return bytes.fromhex(text.strip())
        if encoding == "base64":
            data = base64.b64decode(text.strip(), validate=True)
            if base64.b64encode(data).decode("ascii") != text.strip():
                raise ValueError("padding or trailing bits where none belong")
            return data
    except (ValueError, binascii.Error) as exc:
        raise InvalidOptionError(f"{what} is not valid {encoding}: {exc}") from None
    raise InvalidOptionError(f"--encoding must be hex or base64, got {encoding!r}")


def _parse_header(text: str, encoding: str) -> tuple[str, bytes]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise fail(f"--header {text!r} is not NAME=VALUE: write e.g. "
                   "--header __value_schema_id=01 followed by the GUID's 32 hex digits")
    return name.strip(), _parse_bytes(value, encoding, f"--header {name.strip()}")


@handles_errors
def encode(
    row: Annotated[str, typer.Option(
        "--row", help="The table row as JSON, or - for stdin. Strict JSON: a column given twice "
        'and NaN/Infinity literals are refused (write "NaN", "Infinity" as strings).')],
    topic: TopicOpt = "example",
    columns: ColumnsOpt = None,
    primary_key: PkOpt = None,
    key_schema: KeySchemaOpt = None,
    value_schema: ValueSchemaOpt = None,
    key_format: KeyFormatOpt = KEY_FORMAT.default_value,
    value_format: ValueFormatOpt = VALUE_FORMAT.default_value,
    option: OptionOpt = None,
    registry: RegistryOpt = None,
    schema_type: SchemaTypeOpt = None,
    reference: ReferenceOpt = None,
    partitions: Annotated[
        int | None,
        typer.Option("--partitions", help="Also show the partition a Java/Flink producer picks.",
                     callback=at_least(1, "--partitions")),
    ] = None,
    encoding: EncodingOpt = "hex",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    flink_ddl: FlinkDdlOpt = None,
    ddl_connections: DdlConnectionsOpt = False,
    register: Annotated[bool, typer.Option(
        "--register", help="Register the key and value schemas of a registry format first: "
        "checked by the guard against what the subject holds (a breaking change is refused, "
        "exit 1, nothing registered), then registered, and what was registered is printed. "
        "Without it encode only looks the ids up (read-only).")] = False,
) -> None:
    """Print the key and value bytes of one row, exactly as Flink would write them.

    Read-only: a registry format's schema ids are looked up, never registered, unless
    --register says so.

    Contacts: the schema registry (--registry; ./schemas by default) for a registry format, to
    look its ids up (to register them only with --register); never a broker. A Flink DDL's
    connection options are used only with --flink-ddl-connections."""

    plan = _build_plan(
        columns=columns, primary_key=primary_key, key_schema=key_schema,
        value_schema=value_schema, topic=topic, key_format=key_format,
        value_format=value_format, option=option, registry=registry, schema_type=schema_type,
        reference=reference, flink_ddl=flink_ddl, ddl_connections=ddl_connections,
    )
    raw = read_json_arg(row, what="--row")
    if not isinstance(raw, dict):
        raise fail("--row must be a JSON object of column -> value")
    table_row = coerce_row(plan.layout.table, raw, where="--row")
    registered = _register(plan) if register else _look_up(plan)
    key, value = plan.encode(table_row, where="--row")
    headers = plan.record_headers()
    result: dict[str, Any] = {
        "registered": registered,
        "topic": plan.topic,
        "key": {"format": plan.key_format, "bytes": len(key), encoding: _show(key, encoding)},
        "value": {"format": plan.value_format, "bytes": len(value),
                  encoding: _show(value, encoding)},
        "headers": [{"name": n, "bytes": len(v), encoding: _show(v, encoding)}
                    for n, v in headers],
    }
    if partitions is not None:
        if partitions < 1:
            raise fail("--partitions must be at least 1")
        from keyguard.formats.partitioner import (
            partition_for,  # lazy: CLI start-up (--partitions only)
        )

        result["partition"] = partition_for(key, partitions)
        result["partitions"] = partitions
    if as_json:
        echo(json.dumps(result))
        return
    for line in registered:
        sys.stderr.write(f"registered the {line['role']} schema under {line['subject']!r}: "
                         f"id {line['id']}"
                         + (f", GUID {line['guid']}" if line.get("guid") else "") + "\n")
    for role, fmt, data in (("key", plan.key_format, key), ("value", plan.value_format, value)):
        echo(f"{role:<6} {fmt:<15} {len(data):>5} B  {_show(data, encoding)}")
        if fmt in _TEXT_FORMATS:
            echo(f"{'':<6} {'text':<15} {'':>5}    {data.decode('utf-8', 'replace')}")
    for name, data in headers:
        echo(f"{'header':<6} {name:<15} {len(data):>5} B  {_show(data, encoding)}")
    if partitions is not None:
        echo(
            f"partition {result['partition']} of {partitions} "
            "(murmur2 of the key bytes, as Java and Flink producers choose)"
        )


def _framed(plan: Any) -> list[tuple[str, Any]]:
    """(role, codec) of each side whose format frames its records with a registry id."""
    # lazy: CLI start-up (registration loads the registry backends)
    from keyguard.formats.registry.registration import needs_schema_id

    return [(role, c) for role, c in (("key", plan.key_codec), ("value", plan.value_codec))
            if needs_schema_id(c)]


def _look_up(plan: Any) -> list[dict[str, Any]]:
    """Each framed side's id, looked up under its subject; nothing is registered."""
    # lazy: CLI start-up (registration loads the registry backends)
    from keyguard.formats.registry.registration import resolve_binding

    for role, codec in _framed(plan):
        try:
            codec.bind_schema_id(*resolve_binding(codec, register=False))
        except RegistryError as exc:
            if exc.exit_code != EXIT_INVALID:  # unreachable, refused, timed out: as it is
                raise
            raise RegistryError(
                f"{exc.message}; encode only looks the {role} schema's id up",
                hint="pass --register to register it (the guard checks it first), or give "
                     "the schema the subject holds") from None
    return []


def _register(plan: Any) -> list[dict[str, Any]]:
    """The guard's check of the plan's schemas against what their subjects hold, then each
    framed side registered; what was registered. A breaking change registers nothing."""
    # lazy: CLI start-up (the guard and the registry backends)
    from keyguard.formats.registry.connect import open_for
    from keyguard.formats.registry.registration import registry_of, resolve_binding
    from keyguard.guard.check import check
    from keyguard.guard.plan import TopicPlan
    from keyguard.guard.render import render
    from keyguard.guard.report import Verdict

    framed = _framed(plan)
    if not framed:
        raise fail(f"--register: neither the key format ({plan.key_format}) nor the value "
                   f"format ({plan.value_format}) registers a schema; drop --register")
    codec = framed[0][1]
    registry = registry_of(codec) or open_for(codec.options)
    getattr(registry, "create", lambda: None)()  # a file registry: started empty if missing
    report = check(TopicPlan.of_upsert(plan), registry=registry)
    if report.verdict is Verdict.BREAKING:
        sys.stderr.write(render(report, "text") + "\n")
        raise GuardRefusedError(
            f"--register: the guard found {len(report.breaking)} breaking change(s) in the "
            f"schemas of topic {plan.topic!r}; nothing was registered",
            hint="fix the schema, or migrate deliberately (keyguard migrate)")
    out = []
    for role, c in framed:
        schema_id, guid = resolve_binding(c, registry_of(c), register=True)
        c.bind_schema_id(schema_id, guid)
        out.append({"role": role, "subject": c.subject, "id": schema_id,
                    **({"guid": guid} if guid else {})})
    return out


class GuardRefusedError(KeyguardError):
    """`encode --register` refused a breaking change: nothing was registered."""

    kind = "breaking"
    exit_code = EXIT_BREAKING


@handles_errors
def decode(
    key: Annotated[str, typer.Option("--key", help="Key bytes (hex or base64).")],
    value: Annotated[
        str | None, typer.Option("--value", help="Value bytes; omit for a tombstone.")
    ] = None,
    topic: TopicOpt = "example",
    columns: ColumnsOpt = None,
    primary_key: PkOpt = None,
    key_schema: KeySchemaOpt = None,
    value_schema: ValueSchemaOpt = None,
    key_format: KeyFormatOpt = KEY_FORMAT.default_value,
    value_format: ValueFormatOpt = VALUE_FORMAT.default_value,
    option: OptionOpt = None,
    registry: RegistryOpt = None,
    schema_type: SchemaTypeOpt = None,
    reference: ReferenceOpt = None,
    encoding: EncodingOpt = "hex",
    header: HeaderOpt = None,
    flink_ddl: FlinkDdlOpt = None,
    ddl_connections: DdlConnectionsOpt = False,
) -> None:
    """Print the table row that a key and value (or a tombstone) stand for, as JSON.

    A registry format reads its schema id as Confluent's dual deserializer does: from the
    side's --header first (a header framing), else from the bytes.

    Contacts: the schema registry (--registry; ./schemas by default) for a registry format, to
    read the schema the bytes name; never a broker. A Flink DDL's connection options are used
    only with --flink-ddl-connections."""
    plan = _build_plan(
        columns=columns, primary_key=primary_key, key_schema=key_schema,
        value_schema=value_schema, topic=topic, key_format=key_format,
        value_format=value_format, option=option, registry=registry, schema_type=schema_type,
        reference=reference, flink_ddl=flink_ddl, ddl_connections=ddl_connections,
    )
    key_bytes = _parse_bytes(key, encoding, "--key")
    value_bytes = None if value is None else _parse_bytes(value, encoding, "--value")
    headers = [_parse_header(h, encoding) for h in header or ()]
    table_row = plan.decode(key_bytes, value_bytes, headers)
    if table_row is None:
        raise fail("the record is not valid in its format and was skipped (ignore-parse-errors)")
    out = {"op": "-D" if value_bytes is None else "+U", "row": to_jsonable(table_row)}
    echo(json.dumps(out, ensure_ascii=False))


@handles_errors
def formats_cmd() -> None:
    """List the formats and their options (Flink's names, without the key./value. prefix).

    Contacts nothing."""
    # lazy: CLI start-up (the format registry and its option declarations)
    from keyguard.formats.codec import aliases_of, format_factory, format_names

    for name in format_names():
        factory = format_factory(name)
        aliases = aliases_of(name)
        also = f" (also: {', '.join(aliases)})" if aliases else ""
        echo(f"{name}{also}: {factory.summary}")
        for o in factory.options:
            default = "" if o.default is None else f" (default {o.default})"
            echo(f"  {o.key}{default}: {o.description}")



