"""confluent-kafka's in-process mock registry behind the `Registry` protocol, for unit tests.

`mock://NAME` names a scope shared by everything in the process that opens the same name
(like Confluent's Java `MockSchemaRegistry`), so a test's serializer and its guard see one
registry. Its GUIDs are the library mock's own (random, one per registration, for the life of
the scope), so a confluent-kafka serializer with `header_schema_id_serializer` on `client` and
keyguard agree on them. `SchemaRegistryClient.new_client` is the only way to get the library's
mock: the plain constructor with a mock:// URL builds an HTTP client.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from keyguard.formats.errors import RegistryError
from keyguard.formats.registry import (
    COMPATIBILITY_LEVELS,
    CompatibilityAnswer,
    Registration,
    SchemaVersion,
    parse_guid,
)
from keyguard.formats.registry.file import DEFAULT_COMPATIBILITY
from keyguard.formats.schema_identity import same_schema

_LOCK = threading.Lock()
_SCOPES: dict[str, SchemaRegistryClient] = {}
_LEVELS: dict[str, dict[str | None, str]] = {}


class MockRegistry:
    """One named, process-wide mock scope. Compatibility levels are kept here: the mock has none."""

    def __init__(self, scope: str = "default") -> None:
        with _LOCK:
            if scope not in _SCOPES:
                _SCOPES[scope] = SchemaRegistryClient.new_client({"url": f"mock://{scope}"})
                _LEVELS[scope] = {}
        self.scope = scope
        self.name = f"mock://{scope}"
        self._client = _SCOPES[scope]
        self._levels = _LEVELS[scope]

    @staticmethod
    def drop_scope(scope: str) -> None:
        """Forget everything registered under `scope` (tests call this between cases)."""
        with _LOCK:
            _SCOPES.pop(scope, None)
            _LEVELS.pop(scope, None)

    @property
    def client(self) -> SchemaRegistryClient:
        """The mock client itself, for confluent-kafka serializers in tests."""
        return self._client

    def __repr__(self) -> str:
        return f"MockRegistry({self.name!r})"

    def _not_found(self, exc: SchemaRegistryError, what: str) -> RegistryError:
        return RegistryError(f"{self.name}: {what}: {exc.error_message}")

    def subjects(self) -> list[str]:
        return sorted(self._client.get_subjects())

    def versions(self, subject: str) -> list[int]:
        return sorted(self._client.get_versions(subject))

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        try:
            rs = self._client.get_version(subject, version)  # type: ignore[arg-type]
        except SchemaRegistryError as exc:
            raise self._not_found(exc, f"subject '{subject}' version {version}") from None
        return SchemaVersion(subject, int(rs.version or 0), int(rs.schema_id or 0),
                             str(rs.schema.schema_str), rs.schema.schema_type or "AVRO",
                             references_of(rs.schema), rs.guid)

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        return [self.get_version(subject, v) for v in self.versions(subject)]

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        try:
            schema = self._client.get_schema(schema_id)
        except SchemaRegistryError as exc:
            raise self._not_found(exc, f"schema id {schema_id}") from None
        return schema.schema_type or "AVRO", str(schema.schema_str)

    def get_by_guid(self, guid: str) -> tuple[str, str]:
        want = parse_guid(guid)
        try:
            schema = self._client.get_schema_by_guid(want)
        except SchemaRegistryError as exc:
            raise self._not_found(exc, f"schema GUID {want}") from None
        return schema.schema_type or "AVRO", str(schema.schema_str)

    def references_of_id(self, schema_id: int) -> tuple[dict[str, object], ...]:
        try:
            return references_of(self._client.get_schema(schema_id))
        except SchemaRegistryError as exc:
            raise self._not_found(exc, f"schema id {schema_id}") from None

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion | None:
        # The mock compares texts exactly; a real registry ignores formatting, so compare
        # canonical forms here.
        return same_schema(self.all_versions(subject), schema, schema_type, references)

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        return self.register_guid(subject, schema, schema_type, references).schema_id

    def register_guid(self, subject: str, schema: str, schema_type: str = "AVRO",
                      references: Sequence[Mapping[str, object]] = ()) -> Registration:
        found = self.lookup(subject, schema, schema_type, references)
        if found is not None:
            return Registration(found.schema_id, str(found.guid))
        rs = self._client.register_schema_full_response(
            subject, Schema(schema, schema_type.upper(), schema_references(references)))
        return Registration(int(rs.schema_id or 0), str(rs.guid))

    def compatibility(self, subject: str) -> str:
        return self._levels.get(subject) or self._levels.get(None) or DEFAULT_COMPATIBILITY

    def set_compatibility(self, level: str, subject: str | None = None) -> None:
        if level.upper() not in COMPATIBILITY_LEVELS:
            raise RegistryError(f"unknown compatibility level {level!r}",
                                hint="use one of " + ", ".join(COMPATIBILITY_LEVELS))
        self._levels[subject] = level.upper()

    def check_compatibility(self, subject: str, schema: str, schema_type: str = "AVRO",
                            references: Sequence[Mapping[str, object]] = ()
                            ) -> CompatibilityAnswer | None:
        """None: the library's mock has no compatibility checker."""
        return None


def schema_references(references: Sequence[Mapping[str, object]]) -> list[SchemaReference]:
    """confluent-kafka's SchemaReference objects for {"name", "subject", "version"} dicts."""
    return [SchemaReference(str(r["name"]), str(r["subject"]), int(r["version"]))  # type: ignore[call-overload]
            for r in references]


def references_of(schema: Schema) -> tuple[dict[str, object], ...]:
    return tuple({"name": r.name, "subject": r.subject, "version": r.version}
                 for r in (schema.references or []))
