"""Schema ids resolved once on the driver, and the registry the tasks' codecs get instead.

An avro-confluent codec is given its schema id from outside (registered or looked up by
`keyguard.formats.registry.registration`), and asks its registry for writer schemas by id when it
decodes. Left to the Spark tasks, that is a registry round trip per task: a registry outage
in the middle of a write fails every later task after the earlier ones wrote, and a registry
only the driver can reach (a `file://` directory on the driver, a URL the executors cannot
resolve) is opened, or created empty, on every executor, which then writes ids of its own.
So the driver resolves the ids (the writer after the guard passed, the reader every version
of its subjects), every task's codecs are bound to the writer's ids and get a
`PinnedRegistry`, which answers from those ids and opens nothing: a codec built in a task can
no longer reach a registry at all. Schema GUIDs travel the same way: a header framing writes
the GUID the driver resolved beside the id (`plan_guids`), and a reader resolves the GUIDs a
record's `__key_schema_id` / `__value_schema_id` header (or magic byte 1) names from the
versions the driver pinned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keyguard.formats.codec import format_factory
from keyguard.formats.errors import KeyguardError, RegistryError
from keyguard.formats.registry import SchemaVersion, connect
from keyguard.formats.registry.registration import bind_plan_schema_ids, needs_schema_id
from keyguard.formats.schemafile import standalone_versions

if TYPE_CHECKING:
    from keyguard.formats.plan import UpsertPlan
    from keyguard.formats.registry import CompatibilityAnswer, Registration, Registry


@dataclass(frozen=True)
class PinnedSchema:
    """One schema the driver resolved: its subject, registry id, text and GUID (where the
    registry has GUIDs), plain values."""

    subject: str
    schema_id: int
    schema: str
    schema_type: str = "AVRO"
    guid: str | None = None


@dataclass(frozen=True)
class PinnedVersion:
    """A version a codec's schema references (Confluent `references`), as the driver resolved
    it: standalone text (its own references resolved into it), plain values."""

    subject: str
    version: int
    schema: str
    schema_type: str = "AVRO"


class NotResolvedOnDriver(RegistryError):
    """A task asked for a schema the driver did not resolve (a keyguard bug, or a record whose
    schema id belongs to no subject the read resolved)."""


class PinnedRegistry:
    """The `Registry` of a task's codecs: the driver's answers, and nothing else.

    `fallbacks` (the reader's only) open the real registry for an id the driver could not
    know (a record written under another subject): the one case where a task fetches.
    """

    name = "the schema ids resolved on the Spark driver"

    def __init__(self, pinned: Iterable[PinnedSchema] = (), *,
                 references: Iterable[PinnedVersion] = (),
                 fallbacks: Sequence[Callable[[], Registry]] = ()) -> None:
        self._by_subject: dict[tuple[str, str], PinnedSchema] = {}
        self._by_id: dict[int, PinnedSchema] = {}
        self._by_guid: dict[str, PinnedSchema] = {}
        self._clashing: set[int] = set()
        #: Versions the codecs' references name, in standalone form (references resolved in).
        self._referenced = {(r.subject, r.version): r for r in references}
        for p in pinned:
            self.add(p)
        self._fallbacks = list(fallbacks)
        self._opened: list[Registry] | None = None
        self._open_errors: list[str] = []

    def __repr__(self) -> str:
        return f"PinnedRegistry({sorted(self._by_id)})"

    def add(self, p: PinnedSchema) -> None:
        self._by_subject[(p.subject, p.schema)] = p
        if p.guid is not None:  # a GUID names one schema in every registry that has it
            self._by_guid[str(p.guid).lower()] = p
        seen = self._by_id.get(p.schema_id)
        if p.schema_id in self._clashing or (seen is not None and seen.schema != p.schema):
            # Two registries gave one id two schemas: only their own registry can tell.
            self._clashing.add(p.schema_id)
            self._by_id.pop(p.schema_id, None)
            return
        self._by_id[p.schema_id] = p

    def pin_plan(self, plan: UpsertPlan, key_id: int | None, value_id: int | None,
                 key_guid: str | None = None, value_guid: str | None = None) -> None:
        """Bind the ids (and, for a framing that writes one, the GUIDs) the driver resolved to
        `plan`'s framed codecs (a task's plan), and pin each under its codec's subject and
        schema text (a task decodes its own records)."""
        for codec, schema_id, guid in ((plan.key_codec, key_id, key_guid),
                                       (plan.value_codec, value_id, value_guid)):
            if not needs_schema_id(codec):
                continue
            if schema_id is None:  # pinned by other means, else the task fails here
                schema_id = self._pinned(codec.subject, codec.schema_text).schema_id
            codec.bind_schema_id(schema_id, guid)
            self.add(PinnedSchema(codec.subject, schema_id, codec.schema_text,
                                  format_factory(codec.format_name).schema_type, guid))

    # -- what a task's codec asks ------------------------------------------------------------

    # The driver pinned each id under its codec's subject and text; the text's references
    # (if any) were resolved with it, so they need no second look here.
    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Any] = ()) -> int:
        return self._pinned(subject, schema).schema_id

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Any] = ()) -> SchemaVersion:
        p = self._pinned(subject, schema)
        return SchemaVersion(p.subject, 0, p.schema_id, p.schema, p.schema_type)

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        p = self._by_id.get(schema_id)
        if p is not None:
            return p.schema_type, p.schema
        return self._fetched(f"schema id {schema_id}",
                             lambda registry: registry.get_by_id(schema_id))

    def get_by_guid(self, guid: str) -> tuple[str, str]:
        p = self._by_guid.get(str(guid).lower())
        if p is not None:
            return p.schema_type, p.schema
        return self._fetched(f"schema GUID {guid}",
                             lambda registry: registry.get_by_guid(guid))

    def _fetched(self, what: str, ask: Callable[[Registry], tuple[str, str]]
                 ) -> tuple[str, str]:
        """A schema the driver could not know (a record written under another subject), from
        the fallback registries: the one case where a task fetches."""
        registries = self._open()
        errors = list(self._open_errors)
        for registry in registries:
            try:
                return ask(registry)
            except KeyguardError as exc:
                errors.append(f"{registry.name}: {exc.message}")
        raise NotResolvedOnDriver(
            f"{what} is not a version of the subjects the driver resolved "
            f"({self._ids()})" + (f", and fetching it from the task failed: "
                                  f"{'; '.join(errors)}" if errors else ""),
            hint="a record written under another subject (another producer, another naming "
                 "strategy): check key/value.avro-confluent.subject and the registry URL")

    def _pinned(self, subject: str, schema: str) -> PinnedSchema:
        p = self._by_subject.get((subject, schema))
        if p is None:
            raise NotResolvedOnDriver(
                f"a Spark task needed the schema id of subject '{subject}', which the driver "
                f"did not resolve ({self._ids()}); tasks never ask the registry themselves",
                hint="this is a keyguard bug: report it with the write's options (no secrets)")
        return p

    def _ids(self) -> str:
        if not self._by_subject:
            return "none"
        return ", ".join(f"{p.subject} id {p.schema_id}" for p in self._by_subject.values())

    def _open(self) -> list[Registry]:
        if self._opened is None:
            self._opened = []
            for factory in self._fallbacks:
                try:
                    self._opened.append(factory())
                except KeyguardError as exc:
                    self._open_errors.append(exc.message)
        return self._opened

    # -- what only the driver asks -----------------------------------------------------------

    def _driver_only(self, what: str) -> Any:
        raise NotResolvedOnDriver(
            f"a Spark task asked the registry for {what}: only the driver asks the registry",
            hint="this is a keyguard bug: report it with the write's options (no secrets)")

    def subjects(self) -> list[str]:
        return self._driver_only("its subjects")  # type: ignore[no-any-return]

    def versions(self, subject: str) -> list[int]:
        return self._driver_only(f"the versions of {subject}")  # type: ignore[no-any-return]

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        r = self._referenced.get((subject, version)) if isinstance(version, int) else None
        if r is not None:
            return SchemaVersion(r.subject, r.version, 0, r.schema, r.schema_type)
        return self._driver_only(f"version {version} of {subject}")  # type: ignore[no-any-return]

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        return self._driver_only(f"the versions of {subject}")  # type: ignore[no-any-return]

    def register_guid(self, subject: str, schema: str, schema_type: str = "AVRO",
                      references: Sequence[Any] = ()) -> Registration:
        return self._driver_only(f"the GUID of a schema of {subject}")  # type: ignore[no-any-return]

    def compatibility(self, subject: str) -> str:
        return self._driver_only(f"the compatibility of {subject}")  # type: ignore[no-any-return]

    def check_compatibility(self, subject: str, schema: str, schema_type: str = "AVRO",
                            references: Sequence[Any] = ()) -> CompatibilityAnswer | None:
        return self._driver_only(f"a compatibility check in {subject}")  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------
# The driver's side
# --------------------------------------------------------------------------------------------


def _confluent_codecs(plan: UpsertPlan) -> list[Any]:
    return [c for c in (plan.key_codec, plan.value_codec) if needs_schema_id(c)]


def resolve_write_ids(plan: UpsertPlan) -> tuple[int | None, int | None]:
    """After the guard passed, on the driver: the key and value schema ids, registered
    (auto.register.schemas) or looked up once, and bound to the driver's codecs with their
    GUIDs where a side's framing writes one (`plan_guids` gives those); a registry error
    stops the write before any task starts. None for a format without a registry."""
    return bind_plan_schema_ids(plan)


def reads_headers(plan: UpsertPlan) -> bool:
    """Whether a side's format may carry its schema id in a record header (the registry
    formats, which read Confluent's and Apicurio's header framings whatever they write):
    its records are read with their headers."""
    return bool(_confluent_codecs(plan))


def pinned_references(plan: UpsertPlan) -> tuple[PinnedVersion, ...]:
    """The versions the plan's codecs reference, as the driver resolved them: a task's codec
    resolves its references from these (`PinnedRegistry.get_version`)."""
    return tuple(PinnedVersion(r.reference.subject, int(r.reference.version), r.standalone,
                               r.schema_type)
                 for codec in _confluent_codecs(plan) for r in codec.resolved_references)


def resolve_read_schemas(plan: UpsertPlan) -> tuple[PinnedSchema, ...]:
    """On the driver, before any read task: every version of the key and value subjects, so
    the tasks decode every record those subjects wrote without asking the registry."""
    out: list[PinnedSchema] = []
    for codec in _confluent_codecs(plan):
        subject = codec.subject
        try:
            registry = codec.registry
            versions = registry.all_versions(subject) if registry.versions(subject) else []
            # Writer schemas that reference other subjects, with those resolved into them
            # (standalone): a task decodes them without asking the registry for references.
            versions = standalone_versions(registry, versions)
        except KeyguardError as exc:
            raise type(exc)(f"{codec.describe()}: the versions of subject '{subject}': "
                            f"{exc.message}", hint=exc.hint) from None
        out += [PinnedSchema(v.subject, v.schema_id, v.schema, v.schema_type, v.guid)
                for v in versions]
    return tuple(out)


def registry_factories(plan: UpsertPlan) -> tuple[Callable[[], Registry], ...]:
    """How a read task would open each avro-confluent codec's registry (only for an id the
    driver could not resolve); the factories carry the options, not a client."""
    out: list[Callable[[], Registry]] = []
    urls = set()
    for codec in _confluent_codecs(plan):
        url = codec.options["url"]
        if url and url not in urls:
            urls.add(url)
            out.append(_Opener(str(url), dict(codec.options.values),
                               dict(codec.options.extra)))
    return tuple(out)


@dataclass(frozen=True)
class _Opener:
    url: str
    values: dict[str, Any]
    extra: dict[str, Any]

    def __call__(self) -> Registry:
        # Through the module, so that what opens registries stays one patchable function.
        config = connect.connection_options({**self.values, **self.extra})
        return connect.open_registry(self.url, {k: v for k, v in config.items() if v is not None})
