"""`KnownSchemas`: a registry made of plain data the guard already holds, for building codecs.

The key analysis encodes and decodes keys with the formats' real codecs. A codec whose format
frames a schema id asks a registry for that id (encoding) or for a writer schema by id
(decoding); here the answers come from what the facts step gathered, so the analysis stays
pure: nothing is opened, fetched or registered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from keyguard.formats.errors import KeyguardError, RegistryError
from keyguard.formats.immutable import Value
from keyguard.formats.registry import Registration, SchemaVersion


class WriterSchema(Value):
    """A schema by its global id, standalone (references resolved), as the registry gave it;
    or the error the registry answered for that id (an id it does not know)."""

    __slots__ = ("error", "schema_type", "text")
    FIELDS = ("schema_type", "text", "error")
    schema_type: Final[str]
    text: Final[str]
    error: Final[KeyguardError | None]

    def __init__(self, schema_type: str = "AVRO", text: str = "",
                 error: KeyguardError | None = None) -> None:
        self.schema_type = schema_type
        self.text = text
        self.error = error


class KnownSchemas:
    """Answers a codec's registry questions from plain data.

    `written` maps a schema text to the id a codec writing it uses; `by_id` holds the writer
    schemas of ids found in keys (a GUID, read from a key's header, by its text).
    """

    __slots__ = ("by_id", "name", "written")

    def __init__(self, written: Mapping[str, int] | None = None,
                 by_id: Mapping[int | str, WriterSchema] | None = None,
                 name: str = "keyguard analysis (no registry asked)") -> None:
        self.written: Final[Mapping[str, int]] = written or {}
        self.by_id: Final[Mapping[int | str, WriterSchema]] = by_id or {}
        self.name = name

    def _id_of(self, subject: str, schema: str) -> int:
        if schema not in self.written:
            raise RegistryError(f"{self.name}: no id known for this schema of subject "
                                f"'{subject}'", hint="a keyguard bug: please report it")
        return self.written[schema]

    def subjects(self) -> list[str]:
        return []

    def versions(self, subject: str) -> list[int]:
        return []

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        raise RegistryError(f"{self.name}: subject '{subject}' is not known here")

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        return []

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        known = self.by_id.get(schema_id)
        if known is None:
            raise RegistryError(f"{self.name}: schema id {schema_id} is not known")
        if known.error is not None:
            raise known.error
        return known.schema_type, known.text

    def get_by_guid(self, guid: str) -> tuple[str, str]:
        known = self.by_id.get(str(guid))
        if known is None:
            raise RegistryError(f"{self.name}: schema GUID {guid} is not known")
        if known.error is not None:
            raise known.error
        return known.schema_type, known.text

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion:
        return SchemaVersion(subject, 1, self._id_of(subject, schema), schema, schema_type)

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        return self._id_of(subject, schema)

    def register_guid(self, subject: str, schema: str, schema_type: str = "AVRO",
                      references: Sequence[Mapping[str, object]] = ()) -> Registration:
        raise RegistryError(f"{self.name}: no GUID known for this schema of subject "
                            f"'{subject}'", hint="a keyguard bug: please report it")

    def compatibility(self, subject: str) -> str:
        return "NONE"

    def check_compatibility(self, subject: str, schema: str, schema_type: str = "AVRO",
                            references: Sequence[Mapping[str, object]] = ()) -> None:
        return None
