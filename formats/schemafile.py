"""Reading schemas from files and registries into the row type model.

A schema source is one of: a file (`.avsc` Avro, `.json` JSON Schema or Avro by content), a
registry subject (`subject:NAME` or `subject:NAME:VERSION`), or a column list with a primary
key. Whatever the source, the result is a `SchemaText` (type + text, kept verbatim so Avro
record names survive) and a RowType.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from keyguard.formats.errors import SchemaError
from keyguard.formats.registry import Registry, SchemaVersion
from keyguard.formats.schema_types import schema_type as declared_type
from keyguard.formats.schemajson import loads_schema, paused_gc
from keyguard.formats.types import DataType, RowType

if TYPE_CHECKING:
    from keyguard.formats.registry.references import Reference, ResolvedReference


class SchemaText:
    """A schema as registered or written: its type (AVRO or JSON) and its exact text.

    Checked against its specification when made (Avro: `keyguard.formats.avro_spec`; JSON Schema:
    the metaschema of its draft), so that nothing judges an invalid schema: a SchemaError names
    `origin` (the file, or the subject and version), the place inside the schema and the rule.
    Other schema types (PROTOBUF) are kept as text; `row_type` rejects them.

    `references` are the schema's resolved references (`keyguard.formats.registry.references`): the
    text stays as registered, and everything that reads the schema reads `standalone`, the text
    with the referenced definitions brought in.

    A value: equal (and hashed alike) when type, text and origin are; its fields are `Final`.
    A plain class, not a frozen dataclass, whose generated methods every CLI start would pay for
    at import; the parsed schema is kept beside the fields.
    """

    __slots__ = ("_data", "_standalone", "origin", "references", "schema_type", "text")

    def __init__(self, schema_type: str, text: str, origin: str,
                 references: tuple[ResolvedReference, ...] = (), *,
                 _parsed: tuple[str | None, object] | None = None) -> None:
        self.schema_type: Final = schema_type
        self.text: Final = text
        self.origin: Final = origin
        self.references: Final = references
        #: The standalone text and the parsed data (None: not parsed, as a PROTOBUF schema
        #: is not; no schema parses to None), once known (`with_origin` passes them on).
        self._standalone, self._data = _parsed or (None, None)
        if _parsed is None and declared_type(schema_type) is not None:
            with paused_gc():
                self._data = self._validated()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SchemaText):
            return NotImplemented
        return ((self.schema_type, self.text, self.origin)
                == (other.schema_type, other.text, other.origin))

    def __hash__(self) -> int:
        return hash((self.schema_type, self.text, self.origin))

    def __repr__(self) -> str:
        return f"SchemaText({self.schema_type!r}, {self.text!r}, {self.origin!r})"

    def with_origin(self, origin: str) -> SchemaText:
        """The same schema, said to come from `origin` (checked once: its parse is kept)."""
        return SchemaText(self.schema_type, self.text, origin, self.references,
                          _parsed=(self._standalone, self._data))

    @property
    def standalone(self) -> str:
        """The schema with its references resolved into it: what the analysis reads."""
        if self._standalone is None:
            if not self.references:  # standalone() answers the text itself
                self._standalone = self.text
            else:
                # lazy: CLI start-up (schema references, only for a schema that has some)
                from keyguard.formats.registry.references import standalone

                self._standalone = standalone(self.text, self.schema_type, self.references,
                                              origin=self.origin)
        return self._standalone

    @property
    def reference_list(self) -> tuple[dict[str, object], ...]:
        """The references as the registry stores them, for registering and looking up."""
        return tuple(r.reference.as_dict() for r in self.references)

    def _validated(self) -> object:
        if not self.text.strip():
            raise SchemaError(f"{self.origin}: the schema is empty",
                              hint="an Avro schema or a JSON Schema is JSON text")
        declared = declared_type(self.schema_type)
        assert declared is not None  # __init__ parses declared types only
        try:
            return declared.parse(self.standalone, self.origin)
        except SchemaError as exc:
            raise _located(exc, self.origin) from None

    def parsed(self) -> object:
        """The schema as JSON data (an Avro type name stays a string)."""
        if self._data is not None:
            return self._data
        return loads_schema(self.standalone, self.origin)

    def row_type(self, *, avro_only: bool = False) -> RowType:
        """The schema as a row type (Avro record or JSON Schema object).

        A recursive Avro schema has no row type (Flink and Spark rows are trees): an
        UnsupportedTypeError naming the type; nor has a union of several types. With
        `avro_only`, for the guard's structural analysis, both become AvroOnlyTypes.
        """
        try:
            with paused_gc():
                t = self._row_type(avro_only)
        except SchemaError as exc:
            raise _located(exc, self.origin) from None
        if not isinstance(t, RowType):
            raise SchemaError(f"{self.origin}: the schema is {t.sql()}, not a record",
                              hint="key and value schemas must be records (rows)")
        return t.not_null()

    def _row_type(self, avro_only: bool) -> DataType:
        declared = declared_type(self.schema_type)
        if declared is not None:
            return declared.row_type(self.parsed(), avro_only)
        raise SchemaError(f"schema type {self.schema_type} is not supported",
                          hint="keyguard reads AVRO and JSON schemas")


def _located(exc: SchemaError, origin: str) -> SchemaError:
    """The same error, its message starting with where the schema came from (once)."""
    if exc.message.startswith(f"{origin}:"):
        return exc
    return type(exc)(f"{origin}: {exc.message}", hint=exc.hint)


def guess_schema_type(path: Path, text: str, declared: str | None = None) -> str:
    """AVRO, JSON or PROTOBUF from `--schema-type`, the extension, or the content."""
    if declared:
        up = declared.upper()
        if up not in ("AVRO", "JSON", "PROTOBUF"):
            raise SchemaError(f"schema type {declared!r} is not supported",
                              hint="use avro, json or protobuf")
        return up
    if path.suffix in (".avsc", ".avro"):
        return "AVRO"
    if path.suffix == ".proto":
        return "PROTOBUF"
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return "AVRO"  # reported, with its place, when the text is read as Avro
    if isinstance(doc, bool):
        return "JSON"  # true and false are JSON Schemas, not Avro schemas
    if isinstance(doc, dict) and (
        "$schema" in doc or "properties" in doc or doc.get("type") == "object"
    ):
        return "JSON"
    return "AVRO"


def read_schema_file(path: str | Path, schema_type: str | None = None, *,
                     registry: Registry | None = None,
                     references: tuple[Reference, ...] = ()) -> SchemaText:
    """A schema file; its references are `references` (the CLI's --reference), else those in
    the sidecar `<file>.refs.json`, resolved through `registry`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SchemaError(f"cannot read schema file {p}: {exc.strerror}",
                          hint="check the path and its permissions") from None
    except UnicodeDecodeError as exc:
        raise SchemaError(f"{p}: not UTF-8 text (byte {exc.start})",
                          hint="schema files are JSON text in UTF-8") from None
    kind = guess_schema_type(p, text, schema_type)
    if not references and not os.path.lexists(f"{p}.refs.json"):
        return SchemaText(kind, text, str(p))  # no references: none to read or resolve
    # lazy: CLI start-up (schema references, only for a schema that has some)
    from keyguard.formats.registry.references import parse_references, resolve, sidecar_references

    refs = parse_references(list(references), "--reference") if references \
        else sidecar_references(p)
    return SchemaText(kind, text, str(p),
                      resolve(registry, refs, origin=str(p), schema_type=kind))


def read_schema_source(
    source: str, *, registry: Registry | None = None, schema_type: str | None = None,
    references: tuple[Reference, ...] = (),
) -> SchemaText:
    """A file path, or `subject:NAME[:VERSION]` read from `registry` (with its references)."""
    if source.startswith("subject:"):
        _, _, rest = source.partition(":")
        name, _, version = rest.partition(":")
        if registry is None:
            raise SchemaError(f"{source}: a registry subject needs --registry")
        if not name or (version and not ((version.isascii() and version.isdigit())
                                         or version == "latest")):
            raise SchemaError(f"{source}: not a subject reference",
                              hint="write subject:NAME, subject:NAME:VERSION (a number) or "
                              "subject:NAME:latest")
        sv = registry.get_version(name, int(version) if version.isdigit() else "latest")
        return version_text(registry, sv)
    return read_schema_file(source, schema_type, registry=registry, references=references)


def version_text(registry: Registry | None, sv: SchemaVersion) -> SchemaText:
    """A registered version as a SchemaText, its references resolved through `registry`."""
    origin = f"{sv.subject} v{sv.version} (id {sv.schema_id})"
    if not sv.references:
        return SchemaText(sv.schema_type, sv.schema, origin)  # no references to resolve
    # lazy: CLI start-up (schema references, only for a version that has some)
    from keyguard.formats.registry.references import parse_references, resolve

    refs = parse_references(list(sv.references), origin)
    return SchemaText(sv.schema_type, sv.schema, origin,
                      resolve(registry, refs, origin=origin, schema_type=sv.schema_type))


def standalone_versions(registry: Registry | None,
                        history: list[SchemaVersion]) -> list[SchemaVersion]:
    """`history` with each version's schema in standalone form (references resolved into it),
    for the analysis; ids and versions unchanged."""
    return [sv if not sv.references else
            sv.replace(schema=version_text(registry, sv).standalone, references=())
            for sv in history]
