"""`guard.check`: the library call behind `keyguard check`, the CI gate and the Spark writer.

The imperative shell of the guard. It reads the registered schemas (every version of the key
subject, the value subject's history and level), optionally the facts of the live topic, turns
them into an OLD and a NEW key side, and hands them to the pure analysis (`guard.keys`) and the
value checker (`guard.values`). One Report comes out, whoever asked.

Fail closed: before any registry answer counts, the registry must prove it is one
(`formats.registry.prove`: an HTTP registry answered `GET /subjects`, a file registry's root
exists with its layout); otherwise RegistryUnavailableError (exit 3), never "no versions yet".
A subject with no versions is a visible first registration (KG011, with the near-miss subjects
and topics that do exist), or, with `require_subject`, a breaking KG015. What the scanned keys
say about the topic (several schema ids: KG502; ids the subject does not list: KG016) are
findings with counts, ids and example offsets, never an error that stops the check.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from formats.errors import KeyguardError
from formats.registry import Registry, SchemaVersion, prove
from formats.schemafile import SchemaText, standalone_versions, version_text
from formats.subjects import TOPIC_NAME, parse_strategy, subject_name
from guard.keys.analyze import analyze_key_change
from guard.keys.side import KeySide
from guard.report import Finding, Report, Rule
from guard.rules import (
    CHECK_RULES,
    CONFLUENT_KEYS_CARRY_SEVERAL_IDS,
    KEY_FIRST_VERSION,
    KEYS_ASSUMED_LATEST,
    KEYS_UNLISTED_ID,
    REAL_KEY_RULES,
    SUBJECT_MISSING,
)
from guard.values import check_value

if TYPE_CHECKING:
    from guard.topic import TopicFacts, TopicInspector

def check_rules() -> tuple[Rule, ...]:
    return (*CHECK_RULES, *REAL_KEY_RULES)


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
    #: A subject with no versions is breaking (KG015) instead of a first registration (KG011).
    require_subject: bool = False

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
    require_subject: bool = False,
) -> Report:
    """Judge one topic's candidate key and value schemas; never raises for a breaking change.

    `require_subject` (or the spec's own) makes a subject without versions breaking (KG015).
    Raises RegistryUnavailableError when the registry cannot prove it is one.
    """
    if require_subject and not spec.require_subject:
        spec = replace(spec, require_subject=True)
    prove(registry)
    facts = inspector.facts(spec.topic, scan_limit=scan_limit) if inspector else None
    notes: list[str] = list(facts.notes) if facts else []
    if inspector is not None and facts is None:
        notes.append(f"topic {spec.topic} does not exist yet: no keys to orphan in it"
                     + _did_you_mean(spec.topic, _topic_names(inspector), "topics"))
    findings = list(_key_findings(spec, registry, facts, notes, inspector))
    checked = [f"{spec.topic}: key {spec.key_format}"]
    if spec.value_format and spec.candidate_value is not None:
        subject = spec.subject("value", spec.candidate_value)
        history = standalone_versions(registry, registry.all_versions(subject))
        if not history and spec.require_subject:
            findings.append(_subject_missing(spec, subject, registry, inspector))
        else:
            level = registry.compatibility(subject)
            value_findings = check_value(subject, spec.candidate_value, history, level,
                                         topic=spec.topic, registry=registry)
            if not history:
                hint = _near_misses(spec, subject, registry, inspector)
                value_findings = [replace(f, message=f.message + hint) for f in value_findings]
            findings += value_findings
            checked.append(f"{spec.topic}: value {subject} at {level}")
    return Report.of(findings, checked, notes)


def _topic_names(inspector: TopicInspector | None) -> list[str]:
    names = getattr(inspector, "topic_names", None)
    if not callable(names):
        return []
    try:
        return list(names())
    except KeyguardError:
        return []


def _did_you_mean(name: str, candidates: Sequence[str], what: str) -> str:
    close = difflib.get_close_matches(name, [c for c in candidates if c != name], n=3,
                                      cutoff=0.6)
    return f"; did you mean {what} {', '.join(close)}?" if close else ""


def _near_misses(spec: TopicCheck, subject: str, registry: Registry,
                 inspector: TopicInspector | None) -> str:
    """"; did you mean ..." with the subjects (and topics) that do exist and look alike."""
    try:
        names = registry.subjects()
    except KeyguardError:  # credentials that may not list every subject: no suggestion
        names = []
    role = subject.rpartition("-")[2]
    if role in ("key", "value"):  # a key subject's near misses are key subjects
        names = [n for n in names if not n.endswith(("-key", "-value")) or n.endswith(role)]
    out = _did_you_mean(subject, names, "subjects")
    topics = _topic_names(inspector)
    if topics and spec.topic not in topics:  # a topic that exists is no typo
        out += _did_you_mean(spec.topic, topics, "topics")
    return out


def _subject_missing(spec: TopicCheck, subject: str, registry: Registry,
                     inspector: TopicInspector | None) -> Finding:
    return Finding(SUBJECT_MISSING, "$",
                   f"{subject} has no versions in {registry.name}, and the subject is required "
                   f"to exist{_near_misses(spec, subject, registry, inspector)}",
                   topic=spec.topic, subject=subject)


def check_many(
    specs: Sequence[TopicCheck],
    *,
    registry: Registry,
    inspector: TopicInspector | None = None,
    scan_limit: int = 10_000,
    require_subject: bool = False,
) -> Report:
    report = Report()
    for spec in specs:
        report = report.merged(check(spec, registry=registry, inspector=inspector,
                                     scan_limit=scan_limit, require_subject=require_subject))
    return report


def _key_findings(
    spec: TopicCheck, registry: Registry, facts: TopicFacts | None, notes: list[str],
    inspector: TopicInspector | None = None,
) -> list[Finding]:
    subject = spec.subject("key", spec.candidate_key)
    registered = registry.all_versions(subject)
    history = standalone_versions(registry, registered)
    candidate = spec.candidate_key
    if not history:
        if spec.require_subject:
            missing = _subject_missing(spec, subject, registry, inspector)
            return [missing, *_topic_findings(spec, None, facts, registry, subject)]
        hint = _near_misses(spec, subject, registry, inspector)
        if candidate is None:
            notes.append(f"{subject} has no versions and no candidate key schema was given"
                         + hint)
            return _topic_findings(spec, None, facts, registry, subject)
        first = Finding(KEY_FIRST_VERSION, "$", f"first registration: {subject} has no "
                        f"versions; {candidate.origin} would be version 1{hint}",
                        topic=spec.topic, subject=subject)
        new = _new_side(spec, subject, candidate, registry, facts)
        return [first, *_topic_findings(spec, new, facts, registry, subject)]
    candidate = candidate or replace(version_text(registry, registered[-1]),
                                     origin=f"{subject} v{history[-1].version} (unchanged)")
    findings: list[Finding] = []
    new = _new_side(spec, subject, candidate, registry, facts)
    olds, id_findings = _old_versions(spec, subject, history, facts, new.schema_id)
    if facts is None and spec.key_format == "avro-confluent":
        findings.append(Finding(
            KEYS_ASSUMED_LATEST, "$",
            f"assumed every key carries id {history[-1].schema_id} ({subject} "
            f"v{history[-1].version}); give --bootstrap to scan the topic",
            topic=spec.topic, subject=subject))
    seen: set[tuple[str, str, str]] = set()
    for version, ids in olds:
        old = _old_side(spec, version, ids, facts)
        examples = _examples(old, facts, registry, spec.topic)
        for f in analyze_key_change(old, new, topic=spec.topic, examples=examples):
            if id_findings and f.rule.id == CONFLUENT_KEYS_CARRY_SEVERAL_IDS.id:
                continue  # the topic-level KG502 below says it once, with counts and offsets
            f = _with_subject(f, subject)
            sig = (f.rule.id, f.path, f.message)
            if sig not in seen:
                seen.add(sig)
                findings.append(f)
    return findings + id_findings + _topic_findings(spec, new, facts, registry, subject)


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
    spec: TopicCheck, subject: str, history: list[SchemaVersion], facts: TopicFacts | None,
    new_id: int | None = None,
) -> tuple[list[tuple[SchemaVersion, tuple[int, ...]]], list[Finding]]:
    """The registered versions to judge the candidate against, the ids the keys carry, and
    what the ids say about the topic (KG502 several ids, KG016 ids the subject does not list).

    When the candidate's own id is among the carried ids, only its version is the old side:
    the keys under the other ids are orphaned already (KG502), not by this change.
    """
    fmt = spec.old_key_format or spec.key_format
    if fmt != "avro-confluent" or facts is None or not facts.key_schema_ids:
        return [(history[-1], (history[-1].schema_id,))], []
    by_id = {v.schema_id: v for v in history}
    carried = tuple(sorted(facts.key_schema_ids))
    listed = [i for i in carried if i in by_id]
    unlisted = [i for i in carried if i not in by_id]
    findings: list[Finding] = []
    if len(carried) > 1:
        findings.append(_ids_finding(
            CONFLUENT_KEYS_CARRY_SEVERAL_IDS, spec, subject,
            f"the topic's keys carry {len(carried)} schema ids: "
            + _id_counts(facts, carried, by_id)
            + (f"; the candidate writes id {new_id}" if new_id is not None else "")
            + "; keys with any other id than the candidate's are distinct Kafka keys"))
    if unlisted:
        findings.append(_ids_finding(
            KEYS_UNLISTED_ID, spec, subject,
            f"{sum(facts.key_schema_ids[i] for i in unlisted)} of {facts.keys_scanned} "
            f"scanned keys carry schema id{'s' if len(unlisted) > 1 else ''} "
            f"{_id_counts(facts, tuple(unlisted), by_id)}, which {subject} does not list "
            f"(it lists {', '.join(f'v{v.version}={v.schema_id}' for v in history)}): "
            "written by another producer (subject name strategy, registry) or under a "
            "deleted version"))
    if new_id is not None and new_id in listed:
        return [(by_id[new_id], carried)], findings
    if not listed:  # judge against the latest version; the keys' own ids still count
        return [(history[-1], carried)], findings
    return [(by_id[i], carried) for i in listed], findings


def _id_counts(facts: TopicFacts, ids: tuple[int, ...], by_id: Mapping[int, SchemaVersion]
               ) -> str:
    parts = []
    for i in ids:
        version = f" ({by_id[i].subject} v{by_id[i].version})" if i in by_id else ""
        where = facts.key_id_examples.get(i)
        at = f", e.g. partition {where[0]} offset {where[1]}" if where else ""
        parts.append(f"id {i}{version}: {facts.key_schema_ids[i]} keys{at}")
    return "; ".join(parts)


def _ids_finding(rule: Rule, spec: TopicCheck, subject: str, message: str) -> Finding:
    return Finding(rule, "$", message, topic=spec.topic, subject=subject)


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
    registered = registry.lookup(subject, candidate.text, candidate.schema_type,
                                 candidate.reference_list) if candidate.references else \
        registry.lookup(subject, candidate.text, candidate.schema_type)
    return KeySide(
        format=spec.key_format,
        row_type=candidate.row_type(avro_only=True),
        options=dict(spec.key_options),
        avro_schema=candidate.standalone if candidate.schema_type == "AVRO" else None,
        schema_id=registered.schema_id if registered else None,
        fields_prefix=spec.key_fields_prefix,
        partitioner=spec.partitioner,
        partitions=spec.partitions or (facts.partitions if facts else None),
    )


def _with_subject(f: Finding, subject: str) -> Finding:
    return f if f.subject else replace(f, subject=subject)
