"""Reading schemas from files and registries into the row type model.

A schema source is one of: a file (`.avsc` Avro, `.json` JSON Schema or Avro by content), a
registry subject (`subject:NAME` or `subject:NAME:VERSION`), or a column list with a primary
key. Whatever the source, the result is a `SchemaText` (type + text, kept verbatim so Avro
record names survive) and a RowType.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from formats.errors import SchemaError
from formats.registry import Registry
from formats.types import RowType


@dataclass(frozen=True)
class SchemaText:
    """A schema as registered or written: its type (AVRO or JSON) and its exact text."""

    schema_type: str
    text: str
    origin: str

    def parsed(self) -> object:
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as exc:
            if self.schema_type == "AVRO" and not self.text.lstrip().startswith(("{", "[", '"')):
                return self.text.strip()  # a bare primitive name such as `string`
            raise SchemaError(f"{self.origin}: not valid JSON: {exc}") from None

    def row_type(self) -> RowType:
        """The schema as a row type (Avro record or JSON Schema object)."""
        try:
            if self.schema_type == "AVRO":
                from formats.avro_schema import from_avro_schema

                t = from_avro_schema(self.text)
            elif self.schema_type == "JSON":
                from formats.json_schema import from_json_schema

                doc = self.parsed()
                if not isinstance(doc, dict):
                    raise SchemaError("a JSON Schema for a key or value must be an object")
                t = from_json_schema(doc)
            else:
                raise SchemaError(f"schema type {self.schema_type} is not supported",
                                  hint="keyguard reads AVRO and JSON schemas")
        except SchemaError as exc:
            raise type(exc)(f"{self.origin}: {exc.message}", hint=exc.hint) from None
        if not isinstance(t, RowType):
            raise SchemaError(f"{self.origin}: the schema is {t.sql()}, not a record",
                              hint="key and value schemas must be records (rows)")
        return t.not_null()


def guess_schema_type(path: Path, text: str, declared: str | None = None) -> str:
    """AVRO or JSON from `--schema-type`, the extension, or the content."""
    if declared:
        up = declared.upper()
        if up not in ("AVRO", "JSON"):
            raise SchemaError(f"schema type {declared!r} is not supported", hint="use avro or json")
        return up
    if path.suffix in (".avsc", ".avro"):
        return "AVRO"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return "AVRO"
    if isinstance(doc, dict) and (
        "$schema" in doc or "properties" in doc or doc.get("type") == "object"
    ):
        return "JSON"
    return "AVRO"


def read_schema_file(path: str | Path, schema_type: str | None = None) -> SchemaText:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SchemaError(f"cannot read schema file {p}: {exc.strerror}") from None
    return SchemaText(guess_schema_type(p, text, schema_type), text, str(p))


def read_schema_source(
    source: str, *, registry: Registry | None = None, schema_type: str | None = None
) -> SchemaText:
    """A file path, or `subject:NAME[:VERSION]` read from `registry`."""
    if source.startswith("subject:"):
        _, _, rest = source.partition(":")
        name, _, version = rest.partition(":")
        if registry is None:
            raise SchemaError(f"{source}: a registry subject needs --registry")
        sv = registry.get_version(name, int(version) if version else "latest")
        origin = f"{sv.subject} v{sv.version} (id {sv.schema_id})"
        return SchemaText(sv.schema_type, sv.schema, origin)
    return read_schema_file(source, schema_type)
