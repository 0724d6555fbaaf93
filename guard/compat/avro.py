"""Avro reader/writer compatibility, as Confluent Schema Registry decides it.

Confluent asks Avro Java's `SchemaCompatibility.checkReaderWriterCompatibility`; this is a port
of that walk (by way of Apache Avro's Python `avro.compatibility`) over fastavro-parsed schemas.
Differences from the Python port, all to match Java: names compare unqualified, with the
reader's aliases qualified by its namespace; every incompatibility keeps its own location; a
union branch gets its index in the location also when the reader is not a union.
Logical types are ignored, as in Java: only the underlying type resolves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import fastavro
from fastavro.schema import SchemaParseException, UnknownType

from keyguard.formats.avro_schema import parse_avro
from keyguard.formats.avro_vocab import NAMED, PRIMITIVES, PROMOTIONS
from keyguard.formats.errors import SchemaError
from keyguard.formats.immutable import Value
from keyguard.guard.compat.levels import Incompatibility, PairChecker

NAME_MISMATCH = "NAME_MISMATCH"
FIXED_SIZE_MISMATCH = "FIXED_SIZE_MISMATCH"
MISSING_ENUM_SYMBOLS = "MISSING_ENUM_SYMBOLS"
READER_FIELD_MISSING_DEFAULT_VALUE = "READER_FIELD_MISSING_DEFAULT_VALUE"
TYPE_MISMATCH = "TYPE_MISMATCH"
MISSING_UNION_BRANCH = "MISSING_UNION_BRANCH"

# PRIMITIVES, NAMED and PROMOTIONS (writer types each reader type accepts besides its own)
# are the specification's: `keyguard.formats.avro_vocab`.


class AvroSchema(Value):
    """A parsed Avro schema: fastavro's canonical form plus its named types by full name."""

    __slots__ = ("named", "root", "source")
    FIELDS = ("root", "named", "source")
    root: Final[Any]
    named: Final[dict[str, Any]]
    source: Final[Any]

    def __init__(self, root: Any, named: dict[str, Any], source: Any) -> None:
        self.root = root
        self.named = named
        self.source = source


def parse(schema: Any) -> AvroSchema:
    """Parse JSON text, a bare type name or a decoded schema; SchemaError if invalid.

    A string is JSON text when it starts like a JSON object, array or string ("null" is the
    null type, not JSON null).
    """
    source = schema
    if isinstance(schema, bytes):
        schema = schema.decode()
    if isinstance(schema, str) and schema.lstrip()[:1] not in ("{", "[", '"'):
        schema = schema.strip()
    # The specification first (names, symbols, sizes, defaults, nesting depth), then fastavro.
    try:
        schema = parse_avro(schema)
    except SchemaError as err:
        if err.message.startswith("invalid Avro schema"):
            raise
        raise SchemaError(f"invalid Avro schema: {err.message}", hint=err.hint) from None
    named: dict[str, Any] = {}
    try:
        root = fastavro.parse_schema(schema, named_schemas=named, _write_hint=False)
    except (SchemaParseException, UnknownType, ValueError, TypeError, KeyError) as err:
        raise SchemaError(
            f"invalid Avro schema: {err}",
            hint="fix the schema so that an Avro parser accepts it",
        ) from err
    return AvroSchema(root=root, named=named, source=source)


def _pointer(parts: tuple[str, ...]) -> str:
    return "/" + "/".join(parts)


class _Walk:
    """One reader/writer comparison; remembers finished and in-progress pairs like Java does."""

    def __init__(self, reader: AvroSchema, writer: AvroSchema) -> None:
        self.reader_named = reader.named
        self.writer_named = writer.named
        # Pair of node ids -> None while in progress, then whether it was compatible.
        self.seen: dict[tuple[int, int], bool | None] = {}

    def resolve(self, node: Any, named: dict[str, Any]) -> Any:
        """Follow a reference to a named type; primitives become their bare type name."""
        while True:
            if isinstance(node, str):
                if node in PRIMITIVES:
                    return node
                node = named[node]
            elif isinstance(node, dict) and not isinstance(node.get("type"), (dict, list)):
                kind = node["type"]
                if kind in PRIMITIVES:
                    return kind
                if kind in NAMED or kind in ("array", "map"):
                    return node
                node = named[kind]
            elif isinstance(node, dict):
                node = node["type"]
            else:
                return node

    def compatible(self, reader: Any, writer: Any) -> bool:
        """Whether the pair is compatible (for union matching, where locations do not matter).

        The walk is run to its end so that its memo never keeps a pair marked in progress.
        """
        return not list(self.walk(reader, writer, ()))

    def walk(self, reader: Any, writer: Any, at: tuple[str, ...]) -> Iterator[Incompatibility]:
        reader = self.resolve(reader, self.reader_named)
        writer = self.resolve(writer, self.writer_named)
        key = (id(reader), id(writer))
        if key in self.seen:
            state = self.seen[key]
            if state is None or state:  # recursion in progress counts as compatible, as in Java
                return
        self.seen[key] = None
        ok = True
        for incompatibility in self._calculate(reader, writer, at):
            ok = False
            yield incompatibility
        self.seen[key] = ok

    def _calculate(
        self, reader: Any, writer: Any, at: tuple[str, ...]
    ) -> Iterator[Incompatibility]:
        r_type, w_type = _type_of(reader), _type_of(writer)
        if r_type == w_type:
            if r_type in PRIMITIVES:
                return
            if r_type == "array":
                yield from self.walk(reader["items"], writer["items"], (*at, "items"))
            elif r_type == "map":
                yield from self.walk(reader["values"], writer["values"], (*at, "values"))
            elif r_type == "fixed":
                yield from _names(reader, writer, at)
                if reader["size"] != writer["size"]:
                    yield _incompatible(
                        FIXED_SIZE_MISMATCH,
                        (*at, "size"),
                        f"expected: {writer['size']}, found: {reader['size']}",
                        reader,
                        writer,
                    )
            elif r_type == "enum":
                yield from _names(reader, writer, at)
                yield from _enum_symbols(reader, writer, at)
            elif r_type == "record":
                yield from _names(reader, writer, at)
                yield from self._fields(reader, writer, at)
            elif r_type == "union":
                for i, branch in enumerate(writer):
                    if not self.compatible(reader, branch):
                        yield _incompatible(
                            MISSING_UNION_BRANCH,
                            (*at, str(i)),
                            "reader union lacking writer type: "
                            + self._writer_type(branch).upper(),
                            reader,
                            branch,
                        )
            return
        if w_type == "union":
            for i, branch in enumerate(writer):
                yield from self.walk(reader, branch, (*at, str(i)))
            return
        if r_type == "union":
            if not any(self.compatible(branch, writer) for branch in reader):
                yield _incompatible(
                    MISSING_UNION_BRANCH,
                    at,
                    f"reader union lacking writer type: {w_type.upper()}",
                    reader,
                    writer,
                )
            return
        if w_type in PROMOTIONS.get(r_type, ()):
            return
        yield _incompatible(
            TYPE_MISMATCH,
            at,
            f"reader type: {r_type.upper()} not compatible with writer type: {w_type.upper()}",
            reader,
            writer,
        )

    def _writer_type(self, node: Any) -> str:
        return _type_of(self.resolve(node, self.writer_named))

    def _fields(self, reader: dict, writer: dict, at: tuple[str, ...]) -> Iterator[Incompatibility]:
        writer_fields = {f["name"]: f for f in writer["fields"]}
        for i, field in enumerate(reader["fields"]):
            here = (*at, "fields", str(i))
            matches = [
                writer_fields[name]
                for name in (field["name"], *field.get("aliases", ()))
                if name in writer_fields
            ]
            if len(matches) > 1:
                raise SchemaError(
                    f"reader field {field['name']!r} matches several writer fields "
                    f"({', '.join(m['name'] for m in matches)}) of record {writer['name']}",
                    hint="give the reader field aliases that match one writer field only",
                )
            if matches:
                yield from self.walk(field["type"], matches[0]["type"], (*here, "type"))
            elif "default" in field:
                continue
            elif _type_of(self.resolve(field["type"], self.reader_named)) == "enum" and (
                "default" in self.resolve(field["type"], self.reader_named)
            ):
                # Java then compares the enum with the whole writer record: a type mismatch.
                yield from self.walk(field["type"], writer, (*here, "type"))
            else:
                yield _incompatible(
                    READER_FIELD_MISSING_DEFAULT_VALUE,
                    here,
                    field["name"],
                    field,
                    None,
                )


def _type_of(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "union"
    kind = node["type"]
    return "record" if kind == "error" else kind


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _namespace(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else ""


def _names(reader: dict, writer: dict, at: tuple[str, ...]) -> Iterator[Incompatibility]:
    """Java compares unqualified names, then the reader's (qualified) aliases to the writer's."""
    if _short(reader["name"]) == _short(writer["name"]):
        return
    namespace = _namespace(reader["name"])
    aliases = {
        alias if "." in alias or not namespace else f"{namespace}.{alias}"
        for alias in reader.get("aliases", ())
    }
    if writer["name"] in aliases:
        return
    yield _incompatible(NAME_MISMATCH, (*at, "name"), f"expected: {writer['name']}", reader, writer)


def _enum_symbols(reader: dict, writer: dict, at: tuple[str, ...]) -> Iterator[Incompatibility]:
    missing = sorted(set(writer["symbols"]) - set(reader["symbols"]))
    default = reader.get("default")
    if not missing or (default is not None and default in reader["symbols"]):
        return
    yield _incompatible(
        MISSING_ENUM_SYMBOLS, (*at, "symbols"), f"[{', '.join(missing)}]", reader, writer
    )


def _incompatible(
    kind: str, at: tuple[str, ...], message: str, reader: Any, writer: Any
) -> Incompatibility:
    return Incompatibility(
        kind=kind,
        path=_pointer(at),
        message=message,
        reader_fragment=_fragment(reader),
        writer_fragment=_fragment(writer),
    )


def _fragment(node: Any) -> Any:
    """A short stand-in for a schema node: records and enums by name, not their whole body."""
    # A field's "type" may itself be a schema (a dict or a union): only a named type's is a name.
    if isinstance(node, dict) and isinstance(node.get("type"), str) and node["type"] in NAMED \
            and "name" in node:
        return {"type": node["type"], "name": node["name"]}
    return node


def check_reader_writer(reader: AvroSchema, writer: AvroSchema) -> list[Incompatibility]:
    """Every reason `reader` cannot read data written with `writer`; [] when it can."""
    return list(_Walk(reader, writer).walk(reader.root, writer.root, ()))


CHECKER: PairChecker[AvroSchema] = PairChecker(parse=parse, check=check_reader_writer)
