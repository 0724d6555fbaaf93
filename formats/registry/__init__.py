"""Schema registry access: one small interface, three backends.

- `http`: a Confluent-compatible registry (Confluent, Karapace, Redpanda, Apicurio ccompat)
  through confluent-kafka's SchemaRegistryClient, with auth, TLS, timeouts and retries.
- `file`: the embedded default, a directory of subjects and versions (see
`keyguard.formats.registry.file`).
- `mock`: confluent-kafka's in-process mock, for unit tests.

`EmptyRegistry` (here) is none of them: nothing registered, nothing taken, no client; the
guard's registry when a write names none.

`open_registry(url, config)` picks the backend from the URL scheme; `prove(registry)` fails
(exit 3) unless the registry showed it is one, before an empty answer may count as "no versions".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from keyguard.formats.errors import RegistryError

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


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """One registered version of a subject; `references` as Confluent's {"name","subject","version"}
    (see `keyguard.formats.registry.references`)."""

    subject: str
    version: int
    schema_id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[dict[str, object], ...] = field(default=())


@dataclass(frozen=True, slots=True)
class CompatibilityAnswer:
    """A registry's own verdict on a candidate schema (HTTP registries only)."""

    compatible: bool
    messages: tuple[str, ...] = ()


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

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion | None:
        """The version of `subject` whose schema (and references) equal these, or None."""
        ...

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        """Register `schema` (with its `references`, {"name","subject","version"} each) under
        `subject` (idempotent); returns its global id."""
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

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion | None:
        return None

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        raise RegistryError(f"{self.name}: cannot register under subject '{subject}': no "
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
