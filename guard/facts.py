"""The guard's facts, gathered at the edge: what the registry holds and what the topic says.

`gather` is the only place the guard asks a registry or a broker anything. It reads, for one
`TopicPlan`: every version of the key and value subjects (in standalone form), the id the
registry has for the candidate key, the value subject's level and the registry's own
compatibility answer, the subject names a typo may have missed, the topic's facts (partitions,
cleanup.policy, the schema ids and a sample of its keys) and the writer schemas of the ids the
sampled keys carry. What comes back is plain data; `keyguard.guard.judge.judge` decides from it
alone.

Fail closed: before any registry answer counts, the registry must prove it is one
(`keyguard.formats.registry.prove`): otherwise RegistryUnavailableError (exit 3), never "no
versions".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from keyguard.formats.errors import KeyguardError
from keyguard.formats.framing import Frame
from keyguard.formats.immutable import Value
from keyguard.formats.registry import CompatibilityAnswer, Registry, SchemaVersion, prove
from keyguard.formats.schemafile import SchemaText, standalone_versions, version_text
from keyguard.guard.keys.known import WriterSchema
from keyguard.guard.plan import TopicPlan
from keyguard.guard.values import registry_answer

if TYPE_CHECKING:
    from keyguard.guard.topic import TopicFacts, TopicInspector


class SubjectFacts(Value):
    """One subject as the registry holds it, and what it says about the candidate."""

    __slots__ = ("answer", "candidate_id", "latest", "level", "subject", "versions")
    FIELDS = ("subject", "versions", "latest", "candidate_id", "level", "answer")
    subject: Final[str]
    #: Every version, oldest first, each in standalone form (references resolved into it).
    versions: Final[tuple[SchemaVersion, ...]]
    #: The latest version as registered (references resolved), when no candidate was given.
    latest: Final[SchemaText | None]
    #: The id the registry has for the candidate under this subject (None: not registered).
    candidate_id: Final[int | None]
    #: The subject's compatibility level (its own, else the registry's default).
    level: Final[str | None]
    #: The registry's own compatibility answer for the candidate (None: none asked or given).
    answer: Final[CompatibilityAnswer | None]

    def __init__(self, subject: str, versions: tuple[SchemaVersion, ...] = (),
                 latest: SchemaText | None = None, candidate_id: int | None = None,
                 level: str | None = None, answer: CompatibilityAnswer | None = None) -> None:
        self.subject = subject
        self.versions = versions
        self.latest = latest
        self.candidate_id = candidate_id
        self.level = level
        self.answer = answer


class Registered(Value):
    """What the registry holds for one topic's plan: plain data, no registry object."""

    __slots__ = ("key", "registry_name", "subject_names", "value", "writer_schemas")
    FIELDS = ("registry_name", "key", "value", "subject_names", "writer_schemas")
    #: The registry's display name (no credentials), for messages.
    registry_name: Final[str]
    key: Final[SubjectFacts]
    value: Final[SubjectFacts | None]
    #: Every subject of the registry, read only when a subject has no versions (near misses).
    subject_names: Final[tuple[str, ...]]
    #: The writer schemas of the ids the sampled keys carry, by id (a GUID by its text).
    writer_schemas: Final[Mapping[int | str, WriterSchema]]

    def __init__(self, registry_name: str, key: SubjectFacts, value: SubjectFacts | None = None,
                 subject_names: tuple[str, ...] = (),
                 writer_schemas: Mapping[int | str, WriterSchema] = {}) -> None:
        self.registry_name = registry_name
        self.key = key
        self.value = value
        self.subject_names = subject_names
        self.writer_schemas = writer_schemas


class Facts(Value):
    """What the live topic says, if it was asked."""

    __slots__ = ("inspected", "topic", "topic_names")
    FIELDS = ("topic", "inspected", "topic_names")
    #: The topic's facts; None when no broker was asked, or the topic does not exist.
    topic: Final[TopicFacts | None]
    #: A broker was asked: `topic` None then means the topic does not exist.
    inspected: Final[bool]
    #: The cluster's topic names, read only when a near miss may explain something.
    topic_names: Final[tuple[str, ...]]

    def __init__(self, topic: TopicFacts | None = None, inspected: bool = False,
                 topic_names: tuple[str, ...] = ()) -> None:
        self.topic = topic
        self.inspected = inspected
        self.topic_names = topic_names


def gather(
    plan: TopicPlan,
    registry: Registry,
    inspector: TopicInspector | None = None,
    *,
    scan_limit: int = 10_000,
) -> tuple[Registered, Facts]:
    """Every fact `keyguard.guard.judge.judge` needs about `plan`, from the registry and the
    brokers.

    Raises RegistryUnavailableError when the registry cannot prove it is one, and whatever the
    registry or the brokers raise; an unknown writer schema id is kept as a fact instead.
    """
    prove(registry)
    topic = inspector.facts(plan.topic, scan_limit=scan_limit,
                            key_frame=_key_frame(plan)) if inspector else None
    key = _key_facts(plan, registry)
    value = _value_facts(plan, registry) \
        if plan.value_format and plan.candidate_value is not None else None
    missing = not key.versions or (value is not None and not value.versions)
    registered = Registered(
        registry_name=registry.name,
        key=key,
        value=value,
        subject_names=_subject_names(registry) if missing else (),
        writer_schemas=_writer_schemas(plan, registry, topic),
    )
    names = _topic_names(inspector) if inspector is not None and (topic is None or missing) \
        else ()
    return registered, Facts(topic, inspector is not None, names)


def _key_facts(plan: TopicPlan, registry: Registry) -> SubjectFacts:
    subject = plan.subject("key", plan.candidate_key)
    registered = registry.all_versions(subject)
    history = standalone_versions(registry, registered)
    candidate, latest = plan.candidate_key, None
    if history and candidate is None:
        latest = candidate = version_text(registry, registered[-1])
    asked = candidate is not None and (history or not plan.require_subject)
    return SubjectFacts(subject, tuple(history), latest,
                        _lookup(registry, subject, candidate) if asked and candidate else None)


def _value_facts(plan: TopicPlan, registry: Registry) -> SubjectFacts:
    candidate = plan.candidate_value
    assert candidate is not None
    subject = plan.subject("value", candidate)
    history = standalone_versions(registry, registry.all_versions(subject))
    if not history and plan.require_subject:
        return SubjectFacts(subject)
    return SubjectFacts(subject, tuple(history), level=registry.compatibility(subject),
                        answer=registry_answer(registry, subject, candidate, history))


def _lookup(registry: Registry, subject: str, candidate: SchemaText) -> int | None:
    found = registry.lookup(subject, candidate.text, candidate.schema_type,
                            candidate.reference_list) if candidate.references else \
        registry.lookup(subject, candidate.text, candidate.schema_type)
    return found.schema_id if found else None


def _subject_names(registry: Registry) -> tuple[str, ...]:
    try:
        return tuple(registry.subjects())
    except KeyguardError:  # credentials that may not list every subject: no suggestion
        return ()


def _topic_names(inspector: TopicInspector) -> tuple[str, ...]:
    names = getattr(inspector, "topic_names", None)
    if not callable(names):
        return ()
    try:
        return tuple(names())
    except KeyguardError:
        return ()


def _key_frame(plan: TopicPlan) -> Frame:
    """The frame of the keys already in the topic: where the scan reads their schema ids."""
    return plan.key_frame()


def _writer_schemas(plan: TopicPlan, registry: Registry,
                    topic: TopicFacts | None) -> dict[int | str, WriterSchema]:
    """The writer schema of every id the sampled keys carry (in their bytes, or in a header:
    an integer id or a GUID), for decoding them."""
    if topic is None or not topic.sample_keys:
        return {}
    frames = [f for f in {plan.key_frame(existing=False), plan.key_frame()}
              if f.carries_schema_id]
    headers = topic.sample_headers
    ids = {i if isinstance(i, int) else str(i) for key, _ in topic.sample_keys
           for frame in frames if (i := frame.schema_id(key, headers.get(key))) is not None}
    return {i: writer_schema(registry, i) for i in sorted(ids, key=str)}


def writer_schema(registry: Registry, schema_id: int | str) -> WriterSchema:
    """The schema registered under `schema_id` (an id, or a GUID's text), standalone; or the
    registry's error for it."""
    try:
        if isinstance(schema_id, str):
            return WriterSchema(*registry.get_by_guid(schema_id))
        schema_type, text = registry.get_by_id(schema_id)
        refs_of = getattr(registry, "references_of_id", None)
        raw = refs_of(schema_id) if callable(refs_of) and schema_type.upper() == "AVRO" else ()
        if raw:
            # lazy: CLI start-up (schema references, only a writer schema that has some)
            from keyguard.formats.registry.references import parse_references, resolve, standalone

            where = f"writer schema id {schema_id}"
            resolved = resolve(registry, parse_references(list(raw), where), origin=where,
                               schema_type="AVRO")
            text = standalone(text, "AVRO", resolved, origin=where)
        return WriterSchema(schema_type, text)
    except KeyguardError as exc:
        return WriterSchema(error=exc)
