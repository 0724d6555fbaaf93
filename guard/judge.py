"""`judge`: the guard's verdict on one topic, from plain data.

Pure: no registry, no broker, no network client. It takes the `TopicPlan` (how the keys and
values will be written, and the candidate schemas), what the registry holds (`Registered`) and
what the topic says (`Facts`), both gathered beforehand by `keyguard.guard.facts.gather`, and the
key sides built from them once (`keyguard.guard.sides.key_sides`), and hands the sides to the key
analysis (`keyguard.guard.keys`) and the value schema to the value checker
(`keyguard.guard.values.judge_value`). One Report comes out.

A subject with no versions is a visible first registration (KG011, with the near-miss subjects
and topics that do exist), or, with `require_subject`, a breaking KG015. What the scanned keys
say about the topic (several schema ids: KG502; ids the subject does not list: KG016) are
findings with counts, ids and example offsets, never an error that stops the check.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keyguard.formats.registry import SchemaVersion
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.compat import rules_of
from keyguard.guard.facts import Facts, Registered
from keyguard.guard.keys.analyze import analyze_key_change
from keyguard.guard.keys.placement import topic_findings
from keyguard.guard.keys.side import KeySide
from keyguard.guard.plan import KeyEncoding, TopicPlan, key_columns, migration_command
from keyguard.guard.report import Category, Finding, Report, Rule, Severity
from keyguard.guard.rules import (
    CHECK_RULES,
    CONFLUENT_KEYS_CARRY_SEVERAL_IDS,
    KEY_FIRST_VERSION,
    KEYS_ASSUMED_LATEST,
    KEYS_UNLISTED_ID,
    SUBJECT_MISSING,
)
from keyguard.guard.sides import KeySides
from keyguard.guard.values import judge_value

if TYPE_CHECKING:
    from keyguard.guard.topic import TopicFacts

JUDGE_RULES = CHECK_RULES


def judge(plan: TopicPlan, registered: Registered, facts: Facts, sides: KeySides) -> Report:
    """The verdict on `plan` from the gathered facts and the key sides built from them
    (`keyguard.guard.sides.key_sides`); never raises for a breaking change."""
    topic = facts.topic
    notes: list[str] = list(topic.notes) if topic else []
    if facts.inspected and topic is None:
        notes.append(f"topic {plan.topic} does not exist yet: no keys to orphan in it"
                     + _did_you_mean(plan.topic, facts.topic_names, "topics"))
    key_findings, key_notes = _key_findings(plan, registered, facts, sides)
    findings, notes = list(key_findings), notes + key_notes
    if any(f.effective_severity is Severity.BREAKING and f.rule.category in _KEY_CATEGORIES
           for f in key_findings):
        notes.append(migration_hint(plan, registered))
    checked = [f"{plan.topic}: key {plan.key_format}"]
    value = registered.value
    if plan.value_format and plan.candidate_value is not None and value is not None:
        history = list(value.versions)
        if not history and plan.require_subject:
            findings.append(_subject_missing(plan, value.subject, registered, facts))
        else:
            level = str(value.level)
            value_findings = judge_value(value.subject, plan.candidate_value, history, level,
                                         topic=plan.topic, answer=value.answer,
                                         registry_name=registered.registry_name,
                                         rules=plan.rules_of)
            if not history:
                hint = _near_misses(plan, value.subject, registered, facts)
                value_findings = [f.replace(message=f.message + hint) for f in value_findings]
            findings += value_findings
            checked.append(f"{plan.topic}: value {value.subject} at {level} by "
                           f"{rules_of(plan.rules_of)}")
    return Report.of(findings, checked, notes)


_KEY_CATEGORIES = (Category.KEY_BYTES, Category.KEY_PLACEMENT)


def migration_hint(plan: TopicPlan, registered: Registered | None = None) -> str:
    """The command that makes a breaking key change safely: `keyguard migrate` re-keys the
    topic's live rows and tombstones every old key once the new records are acknowledged.
    The old key columns are the latest registered key schema's; a DDL declares the rest."""
    latest = registered.key.versions[-1] if registered and registered.key.versions else None
    old_text = SchemaText(latest.schema_type, latest.schema, latest.subject) if latest else None
    prefix = plan.key_fields_prefix
    old_options = plan.old_key_options if plan.old_key_options is not None \
        else plan.key_options
    old = KeyEncoding(plan.existing_key_format, key_columns(old_text, prefix),
                      old_options if plan.old_key_format in (None, plan.key_format) else {},
                      prefix)
    new = KeyEncoding(plan.key_format, key_columns(plan.candidate_key or old_text, prefix),
                      plan.key_options, prefix, plan.flink_ddl)
    return migration_command(plan.topic, old, new, partitions=plan.partitions,
                             value_format=plan.value_format, value_options=plan.value_options,
                             bootstrap=plan.bootstrap,
                             registry=str(plan.key_options.get("url") or "") or _url(registered))


def _url(registered: Registered | None) -> str | None:
    """The registry the run read, when its display name is its url (credentials dropped)."""
    name = registered.registry_name if registered is not None else ""
    return name if "://" in name else None


def _did_you_mean(name: str, candidates: Sequence[str], what: str) -> str:
    close = difflib.get_close_matches(name, [c for c in candidates if c != name], n=3,
                                      cutoff=0.6)
    return f"; did you mean {what} {', '.join(close)}?" if close else ""


def _near_misses(plan: TopicPlan, subject: str, registered: Registered, facts: Facts) -> str:
    """"; did you mean ..." with the subjects (and topics) that do exist and look alike."""
    names: Sequence[str] = registered.subject_names
    role = subject.rpartition("-")[2]
    if role in ("key", "value"):  # a key subject's near misses are key subjects
        names = [n for n in names if not n.endswith(("-key", "-value")) or n.endswith(role)]
    out = _did_you_mean(subject, names, "subjects")
    topics = facts.topic_names
    if topics and plan.topic not in topics:  # a topic that exists is no typo
        out += _did_you_mean(plan.topic, topics, "topics")
    return out


def _subject_missing(plan: TopicPlan, subject: str, registered: Registered,
                     facts: Facts) -> Finding:
    return Finding(SUBJECT_MISSING, "$",
                   f"{subject} has no versions in {registered.registry_name}, and the subject "
                   f"is required to exist{_near_misses(plan, subject, registered, facts)}",
                   topic=plan.topic, subject=subject)


def _key_findings(plan: TopicPlan, registered: Registered, facts: Facts,
                  sides: KeySides) -> tuple[list[Finding], list[str]]:
    key, topic = registered.key, facts.topic
    subject = key.subject
    history = list(key.versions)
    new = sides.new
    if not history:
        if plan.require_subject:
            missing = _subject_missing(plan, subject, registered, facts)
            return [missing, *_topic_findings(plan, None, topic, registered, subject)], []
        hint = _near_misses(plan, subject, registered, facts)
        if sides.candidate is None or new is None:
            note = f"{subject} has no versions and no candidate key schema was given" + hint
            return _topic_findings(plan, None, topic, registered, subject), [note]
        first = Finding(KEY_FIRST_VERSION, "$", f"first registration: {subject} has no "
                        f"versions; {sides.candidate.origin} would be version 1{hint}",
                        topic=plan.topic, subject=subject)
        return [first, *_topic_findings(plan, new, topic, registered, subject)], []
    assert new is not None, "key_sides builds the candidate's side whenever versions exist"
    findings: list[Finding] = []
    id_findings = _id_findings(plan, subject, history, topic, sides.carried, new.schema_id)
    if topic is None and plan.key_ids_in_bytes(existing=False):
        findings.append(Finding(
            KEYS_ASSUMED_LATEST, "$",
            f"assumed every key carries id {history[-1].schema_id} ({subject} "
            f"v{history[-1].version}); give --bootstrap to scan the topic",
            topic=plan.topic, subject=subject))
    seen: set[tuple[str, str, str]] = set()
    for old in sides.olds:
        examples = _examples(old.side, topic, registered, plan.topic)
        for f in analyze_key_change(old.side, new, topic=plan.topic, examples=examples):
            if id_findings and f.rule is CONFLUENT_KEYS_CARRY_SEVERAL_IDS:
                continue  # the topic-level KG502 below says it once, with counts and offsets
            f = f if f.subject else f.replace(subject=subject)
            sig = (f.rule.id, f.path, f.message)
            if sig not in seen:
                seen.add(sig)
                findings.append(f)
    topic_level = _topic_findings(plan, new, topic, registered, subject)
    return findings + id_findings + topic_level, []


def _examples(old: KeySide, topic: TopicFacts | None, registered: Registered,
              name: str) -> list[dict[str, Any]]:
    """Keys sampled from the topic, decoded: witnesses a reader recognizes as their own data."""
    if topic is None or not topic.sample_keys:
        return []
    from keyguard.guard.realkeys import (
        decoded_examples,  # lazy: CLI start-up (only with sampled keys)
    )

    return decoded_examples(old, topic.sample_keys, registered.writer_schemas, name,
                            headers=topic.sample_headers)


def _topic_findings(plan: TopicPlan, new: KeySide | None, topic: TopicFacts | None,
                    registered: Registered, subject: str) -> list[Finding]:
    """What the live topic says: its cleanup policy, and its real keys under the candidate."""
    if topic is None:
        return []
    out = topic_findings(topic.cleanup_policy, None, None, topic=plan.topic)
    if new is not None and topic.sample_keys:
        from keyguard.guard.realkeys import real_key_findings  # lazy: CLI start-up (sampled keys)

        out += real_key_findings(new, topic.sample_keys, topic.partitions,
                                 writer_schemas=registered.writer_schemas, topic=plan.topic,
                                 subject=subject, headers=topic.sample_headers)
    return out


def _id_findings(plan: TopicPlan, subject: str, history: list[SchemaVersion],
                 topic: TopicFacts | None, carried: tuple[int, ...],
                 new_id: int | None) -> list[Finding]:
    """What the ids the keys carry say about the topic: KG502 several ids, KG016 ids the
    subject does not list."""
    if topic is None or not carried:
        return []
    by_id = {v.schema_id: v for v in history}
    unlisted = [i for i in carried if i not in by_id]
    findings: list[Finding] = []
    if len(carried) > 1:
        findings.append(_ids_finding(
            CONFLUENT_KEYS_CARRY_SEVERAL_IDS, plan, subject,
            f"the topic's keys carry {len(carried)} schema ids: "
            + _id_counts(topic, carried, by_id)
            + (f"; the candidate writes id {new_id}" if new_id is not None else "")
            + "; keys with any other id than the candidate's are distinct Kafka keys"))
    if unlisted:
        findings.append(_ids_finding(
            KEYS_UNLISTED_ID, plan, subject,
            f"{sum(topic.key_schema_ids[i] for i in unlisted)} of {topic.keys_scanned} "
            f"scanned keys carry schema id{'s' if len(unlisted) > 1 else ''} "
            f"{_id_counts(topic, tuple(unlisted), by_id)}, which {subject} does not list "
            f"(it lists {', '.join(f'v{v.version}={v.schema_id}' for v in history)}): "
            "written by another producer (subject name strategy, registry) or under a "
            "deleted version"))
    return findings


def _id_counts(topic: TopicFacts, ids: tuple[int, ...], by_id: Mapping[int, SchemaVersion]
               ) -> str:
    parts = []
    for i in ids:
        version = f" ({by_id[i].subject} v{by_id[i].version})" if i in by_id else ""
        where = topic.key_id_examples.get(i)
        at = f", e.g. partition {where[0]} offset {where[1]}" if where else ""
        parts.append(f"id {i}{version}: {topic.key_schema_ids[i]} keys{at}")
    return "; ".join(parts)


def _ids_finding(rule: Rule, plan: TopicPlan, subject: str, message: str) -> Finding:
    return Finding(rule, "$", message, topic=plan.topic, subject=subject)
