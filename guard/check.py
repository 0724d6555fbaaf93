"""`guard.check`: the library call behind `keyguard check`, the CI gate and the Spark writer.

The imperative shell of the guard. It reads the registered schemas (every version of the key
subject, the value subject's history and level), optionally the facts of the live topic, turns
them into an OLD and a NEW key side, and hands them to the pure analysis (`guard.keys`) and the
value checker (`guard.values`). One Report comes out, whoever asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from formats.errors import KeyguardError
from formats.registry import Registry, SchemaVersion
from formats.schemafile import SchemaText
from formats.subjects import TOPIC_NAME, parse_strategy, subject_name
from guard.keys.analyze import analyze_key_change
from guard.keys.side import KeySide
from guard.report import Category, Finding, Report, Rule, Severity
from guard.values import check_value

if TYPE_CHECKING:
    from guard.topic import TopicFacts, TopicInspector

KEY_FIRST_VERSION = Rule(
    id="KG011",
    name="key-first-version",
    category=Category.KEY_BYTES,
    severity=Severity.INFO,
    summary="No key schema is registered yet: no existing key can be orphaned by the schema.",
    why="A topic whose key subject has no versions holds no keys written under a registered "
    "schema; the candidate becomes version 1.",
)

KEYS_ASSUMED_LATEST = Rule(
    id="KG012",
    name="key-ids-assumed-latest",
    category=Category.KEY_BYTES,
    severity=Severity.INFO,
    summary="Without topic access, the keys are assumed to carry the latest key schema id.",
    why="The schema ids inside avro-confluent keys are facts of the topic, not the registry. "
    "Give the bootstrap servers so keyguard scans the topic and finds the ids the keys "
    "really carry; a producer may still be writing an older version.",
)

def check_rules() -> tuple[Rule, ...]:
    from guard.realkeys import REAL_KEY_RULES

    return (KEY_FIRST_VERSION, KEYS_ASSUMED_LATEST, *REAL_KEY_RULES)


@dataclass(frozen=True)
class TopicCheck:
    """One topic to judge: its key and value formats, and the candidate schemas.

    Options are the formats' own (Flink names without `key.<format>.`). A candidate left None
    means "unchanged": placement and topic facts are still checked.
    """

    topic: str
    key_format: str = "avro-confluent"
    value_format: str | None = "avro-confluent"
    key_options: Mapping[str, Any] = field(default_factory=dict)
    value_options: Mapping[str, Any] = field(default_factory=dict)
    candidate_key: SchemaText | None = None
    candidate_value: SchemaText | None = None
    key_fields_prefix: str = ""
    #: Partition count the producer will write to; None: the topic's own.
    partitions: int | None = None
    partitioner: str = "murmur2"
    #: How the existing keys were written, when that differs from the candidate's format.
    old_key_format: str | None = None
    old_key_options: Mapping[str, Any] | None = None
    old_partitioner: str = "murmur2"

    def subject(self, role: str, schema: SchemaText | None) -> str:
        """The registry subject of the key or value, by the format's subject options."""
        opts = self.key_options if role == "key" else self.value_options
        if opts.get("subject"):
            return str(opts["subject"])
        strategy = parse_strategy(str(opts.get("subject.name.strategy", TOPIC_NAME)))
        record = None
        if strategy != TOPIC_NAME and schema is not None and schema.schema_type == "AVRO":
            from formats.avro_schema import record_full_name

            record = record_full_name(schema.text)
        return subject_name(strategy, topic=self.topic, role=role, record_name=record)


def check(
    spec: TopicCheck,
    *,
    registry: Registry,
    inspector: TopicInspector | None = None,
    scan_limit: int = 10_000,
) -> Report:
    """Judge one topic's candidate key and value schemas; never raises for a breaking change."""
    facts = inspector.facts(spec.topic, scan_limit=scan_limit) if inspector else None
    notes: list[str] = list(facts.notes) if facts else []
    if inspector is not None and facts is None:
        notes.append(f"topic {spec.topic} does not exist yet: no keys to orphan in it")
    findings = list(_key_findings(spec, registry, facts, notes))
    checked = [f"{spec.topic}: key {spec.key_format}"]
    if spec.value_format and spec.candidate_value is not None:
        subject = spec.subject("value", spec.candidate_value)
        history = registry.all_versions(subject)
        level = registry.compatibility(subject)
        findings += check_value(subject, spec.candidate_value, history, level,
                                topic=spec.topic, registry=registry)
        checked.append(f"{spec.topic}: value {subject} at {level}")
    return Report.of(findings, checked, notes)


def check_many(
    specs: Sequence[TopicCheck],
    *,
    registry: Registry,
    inspector: TopicInspector | None = None,
    scan_limit: int = 10_000,
) -> Report:
    report = Report()
    for spec in specs:
        report = report.merged(check(spec, registry=registry, inspector=inspector,
                                     scan_limit=scan_limit))
    return report


def _key_findings(
    spec: TopicCheck, registry: Registry, facts: TopicFacts | None, notes: list[str]
) -> list[Finding]:
    subject = spec.subject("key", spec.candidate_key)
    history = registry.all_versions(subject)
    candidate = spec.candidate_key
    if not history:
        if candidate is None:
            notes.append(f"{subject} has no versions and no candidate key schema was given")
            return _topic_findings(spec, None, facts, registry, subject)
        first = Finding(KEY_FIRST_VERSION, "$", f"{subject} has no versions; "
                        f"{candidate.origin} would be version 1", topic=spec.topic,
                        subject=subject)
        new = _new_side(spec, subject, candidate, registry, facts)
        return [first, *_topic_findings(spec, new, facts, registry, subject)]
    candidate = candidate or SchemaText(history[-1].schema_type, history[-1].schema,
                                        f"{subject} v{history[-1].version} (unchanged)")
    findings: list[Finding] = []
    olds = _old_versions(spec, subject, history, facts)
    if facts is None and spec.key_format == "avro-confluent":
        findings.append(Finding(
            KEYS_ASSUMED_LATEST, "$",
            f"assumed every key carries id {history[-1].schema_id} ({subject} "
            f"v{history[-1].version}); give --bootstrap to scan the topic",
            topic=spec.topic, subject=subject))
    new = _new_side(spec, subject, candidate, registry, facts)
    seen: set[tuple[str, str, str]] = set()
    for version, ids in olds:
        old = _old_side(spec, version, ids, facts)
        examples = _examples(old, facts, registry, spec.topic)
        for f in analyze_key_change(old, new, topic=spec.topic, examples=examples):
            f = _with_subject(f, subject)
            sig = (f.rule.id, f.path, f.message)
            if sig not in seen:
                seen.add(sig)
                findings.append(f)
    return findings + _topic_findings(spec, new, facts, registry, subject)


def _examples(
    old: KeySide, facts: TopicFacts | None, registry: Registry, topic: str
) -> list[dict[str, Any]]:
    """Keys sampled from the topic, decoded: witnesses a reader recognizes as their own data."""
    if facts is None or not facts.sample_keys:
        return []
    from guard.realkeys import decoded_examples

    return decoded_examples(old, facts.sample_keys, registry, topic)


def _topic_findings(
    spec: TopicCheck, new: KeySide | None, facts: TopicFacts | None, registry: Registry,
    subject: str,
) -> list[Finding]:
    """What the live topic says: its cleanup policy, and its real keys under the candidate."""
    if facts is None:
        return []
    from guard.keys.placement import topic_findings
    from guard.realkeys import real_key_findings

    out = topic_findings(facts.cleanup_policy, None, None, topic=spec.topic)
    if new is not None and facts.sample_keys:
        out += real_key_findings(new, facts.sample_keys, facts.partitions, registry=registry,
                                 topic=spec.topic, subject=subject)
    return out


def _old_versions(
    spec: TopicCheck, subject: str, history: list[SchemaVersion], facts: TopicFacts | None
) -> list[tuple[SchemaVersion, tuple[int, ...]]]:
    """The registered versions the topic's keys were written with, and the ids they carry."""
    fmt = spec.old_key_format or spec.key_format
    if fmt != "avro-confluent" or facts is None or not facts.key_schema_ids:
        return [(history[-1], (history[-1].schema_id,))]
    by_id = {v.schema_id: v for v in history}
    carried = tuple(sorted(facts.key_schema_ids))
    olds = [(by_id[i], carried) for i in carried if i in by_id]
    unknown = [i for i in carried if i not in by_id]
    if unknown:
        raise KeyguardError(
            f"topic {spec.topic} holds keys framed with schema id"
            f"{'s' if len(unknown) > 1 else ''} {', '.join(map(str, unknown))}, which "
            f"{subject} does not list",
            hint="the keys were written under another subject or registry; check the key "
            "subject name strategy and the registry URL",
        )
    return olds


def _old_side(
    spec: TopicCheck, version: SchemaVersion, ids: tuple[int, ...], facts: TopicFacts | None
) -> KeySide:
    text = SchemaText(version.schema_type, version.schema, f"{version.subject} v{version.version}")
    fmt = spec.old_key_format or spec.key_format
    return KeySide(
        format=fmt,
        row_type=text.row_type(avro_only=True),
        options=dict(spec.old_key_options if spec.old_key_options is not None
                     else spec.key_options),
        avro_schema=version.schema if version.schema_type == "AVRO" else None,
        schema_id=version.schema_id,
        key_schema_ids=ids,
        fields_prefix=spec.key_fields_prefix,
        partitioner=spec.old_partitioner,
        partitions=facts.partitions if facts else spec.partitions,
    )


def _new_side(
    spec: TopicCheck,
    subject: str,
    candidate: SchemaText,
    registry: Registry,
    facts: TopicFacts | None,
) -> KeySide:
    registered = registry.lookup(subject, candidate.text, candidate.schema_type)
    return KeySide(
        format=spec.key_format,
        row_type=candidate.row_type(avro_only=True),
        options=dict(spec.key_options),
        avro_schema=candidate.text if candidate.schema_type == "AVRO" else None,
        schema_id=registered.schema_id if registered else None,
        fields_prefix=spec.key_fields_prefix,
        partitioner=spec.partitioner,
        partitions=spec.partitions or (facts.partitions if facts else None),
    )


def _with_subject(f: Finding, subject: str) -> Finding:
    from dataclasses import replace

    return f if f.subject else replace(f, subject=subject)
