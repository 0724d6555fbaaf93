"""Schema registry access: one small interface, three backends.

- `http`: a Confluent-compatible registry (Confluent, Karapace, Redpanda, Apicurio ccompat)
  through confluent-kafka's SchemaRegistryClient, with auth, TLS, timeouts and retries.
- `file`: the embedded default, a directory of subjects and versions (see
`keyguard.formats.registry.file`).
- `mock`: confluent-kafka's in-process mock, for unit tests.

`EmptyRegistry` (here) is none of them: nothing registered, nothing taken, no client; the
guard's registry when a write names none.

A schema has a global id (the 4 bytes Confluent's wire format puts after its magic byte) and,
in registries that have them, a GUID (the 16 bytes a `__key_schema_id` / `__value_schema_id`
record header carries instead): `get_by_guid` resolves one, `register_guid` returns the one a
registration gets. A registry without GUIDs says so (RegistryError, exit 2).

`open_registry(url, config)` picks the backend from the URL scheme; `prove(registry)` fails
(exit 3) unless the registry showed it is one, before an empty answer may count as "no versions".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Protocol, runtime_checkable

from keyguard.formats.errors import RegistryError
from keyguard.formats.immutable import Value

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
COMPATIBILITY_LEVELS = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)
#: A registry's level where none is set (Confluent's default).
DEFAULT_COMPATIBILITY = "BACKWARD"


class SchemaVersion(Value):
    """One registered version of a subject; `references` as Confluent's {"name","subject","version"}
    (see `keyguard.formats.registry.references`)."""

    __slots__ = ("guid", "references", "schema", "schema_id", "schema_type", "subject", "version")
    FIELDS = ("subject", "version", "schema_id", "schema", "schema_type", "references", "guid")
    subject: Final[str]
    version: Final[int]
    schema_id: Final[int]
    schema: Final[str]
    schema_type: Final[str]
    references: Final[tuple[dict[str, object], ...]]
    #: The schema's GUID (canonical text form), None where the registry has no GUIDs.
    guid: Final[str | None]

    def __init__(self, subject: str, version: int, schema_id: int, schema: str,
                 schema_type: str = "AVRO", references: tuple[dict[str, object], ...] = (),
                 guid: str | None = None) -> None:
        self.subject = subject
        self.version = version
        self.schema_id = schema_id
        self.schema = schema
        self.schema_type = schema_type
        self.references = references
        self.guid = guid


class Registration(Value):
    """What registering a schema answers: its global id and its GUID."""

    __slots__ = ("guid", "schema_id")
    FIELDS = ("schema_id", "guid")
    schema_id: Final[int]
    guid: Final[str]

    def __init__(self, schema_id: int, guid: str) -> None:
        self.schema_id = schema_id
        self.guid = guid


def parse_guid(text: object, where: str = "schema GUID") -> str:
    """`text` as a GUID's canonical form (lowercase, hyphenated), or RegistryError (exit 2).

    Confluent's GUIDs are UUIDs (`SchemaId` in confluent-kafka's serde: 16 bytes in a header,
    their text form in `GET /schemas/guids/{guid}`); anything else is refused before a request.
    """
    import uuid  # lazy: CLI start-up (only where a GUID is asked for)

    try:
        if isinstance(text, (bytes, bytearray)) and len(text) == 16:
            return str(uuid.UUID(bytes=bytes(text)))
        if isinstance(text, str):
            return str(uuid.UUID(text.strip()))
    except ValueError:
        pass
    shown = repr(text)[:60]
    raise RegistryError(f"{where}: {shown} is not a GUID",
                        hint="a schema GUID is a UUID such as "
                             "'3f2b5c8e-0d1a-4e7b-9c6f-2a4d8e1b7c90' (or its 16 bytes)")


def no_guids(name: str, what: str) -> RegistryError:
    """The error of a registry that has no schema GUIDs (Karapace, Confluent before 8.0)."""
    return RegistryError(
        f"schema registry {name} has no schema GUIDs ({what}): Confluent Schema Registry "
        "8.0 and later and Confluent Cloud have them; Karapace and earlier Confluent "
        "versions do not",
        hint="keep the schema id in the record's prefix (the default framing), or use a "
             "registry with schema GUIDs")


class CompatibilityAnswer(Value):
    """A registry's own verdict on a candidate schema (HTTP registries only)."""

    __slots__ = ("compatible", "messages")
    FIELDS = ("compatible", "messages")
    compatible: Final[bool]
    messages: Final[tuple[str, ...]]

    def __init__(self, compatible: bool, messages: tuple[str, ...] = ()) -> None:
        self.compatible = compatible
        self.messages = messages


@runtime_checkable
class Registry(Protocol):
    """What keyguard needs from a schema registry. Every method answers fresh: no cached latest."""

    #: A display name with no credentials in it.
    name: str

    def subjects(self) -> list[str]: ...

    def versions(self, subject: str) -> list[int]:
        """Version numbers of `subject`, ascending; [] when the subject does not exist."""
        ...

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        """One version (or "latest", asked of the registry each time)."""
        ...

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        """Every version of `subject`, oldest first."""
        ...

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        """(schema_type, schema text) registered under a global id."""
        ...

    def get_by_guid(self, guid: str) -> tuple[str, str]:
        """(schema_type, schema text) of the schema with this GUID; RegistryError when the
        registry has no such schema or no GUIDs at all."""
        ...

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion | None:
        """The version of `subject` whose schema (and references) equal these, or None."""
        ...

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        """Register `schema` (with its `references`, {"name","subject","version"} each) under
        `subject` (idempotent); returns its global id."""
        ...

    def register_guid(self, subject: str, schema: str, schema_type: str = "AVRO",
                      references: Sequence[Mapping[str, object]] = ()) -> Registration:
        """`register`, answering the GUID too; RegistryError when the registry has none."""
        ...

    def compatibility(self, subject: str) -> str:
        """The subject's compatibility level, else the registry's default."""
        ...

    def check_compatibility(
        self, subject: str, schema: str, schema_type: str = "AVRO",
        references: Sequence[Mapping[str, object]] = (),
    ) -> CompatibilityAnswer | None:
        """The registry's own answer, or None for registries that have no such endpoint."""
        ...


class EmptyRegistry:
    """A registry with nothing registered, which takes nothing: the guard's registry when a
    write names none (no registry format, no guard.registry), so every schema is a first
    version. It opens no client (a mock registry's client builds an SSL context, ~50 ms a
    write) and keeps no state."""

    name = "(no registry)"

    def subjects(self) -> list[str]:
        return []

    def versions(self, subject: str) -> list[int]:
        return []

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        raise self._missing(f"subject '{subject}' version {version}")

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        return []

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        raise self._missing(f"schema id {schema_id}")

    def get_by_guid(self, guid: str) -> tuple[str, str]:
        raise self._missing(f"schema GUID {parse_guid(guid)}")

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion | None:
        return None

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        raise self._refused(subject)

    def register_guid(self, subject: str, schema: str, schema_type: str = "AVRO",
                      references: Sequence[Mapping[str, object]] = ()) -> Registration:
        raise self._refused(subject)

    def _refused(self, subject: str) -> RegistryError:
        return RegistryError(f"{self.name}: cannot register under subject '{subject}': no "
                             "registry was named",
                             hint="name one (guard.registry, or a registry format's url)")

    def compatibility(self, subject: str) -> str:
        return DEFAULT_COMPATIBILITY

    def check_compatibility(
        self, subject: str, schema: str, schema_type: str = "AVRO",
        references: Sequence[Mapping[str, object]] = (),
    ) -> CompatibilityAnswer | None:
        return None

    def _missing(self, what: str) -> RegistryError:
        return RegistryError(f"{self.name}: {what}: not found (nothing is registered)")


def prove(registry: object) -> None:
    """Fail with RegistryUnavailableError unless `registry` proved it is a registry.

    An HTTP registry must have answered `GET /subjects` like one; a file registry's root must
    exist and have the layout. Backends without a `prove` (the mock, test doubles) are taken
    as they are. Each backend caches its proof: asking twice costs nothing.
    """
    check = getattr(registry, "prove", None)
    if callable(check):
        check()
