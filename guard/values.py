"""Value schemas: the candidate against the subject's compatibility level, as the registry would.

Unlike keys, values may evolve: consumers resolve old and new value schemas. What matters is the
subject's compatibility level (its own, else the registry default), checked with the registry's
semantics by `keyguard.guard.compat`. Against an HTTP registry the registry's own endpoint is asked
too, and a disagreement is reported rather than hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keyguard.formats.codec import format_factory
from keyguard.formats.framing import Frame
from keyguard.formats.registry import CompatibilityAnswer, Registry, SchemaVersion
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.compat import check_compatibility, rules_of
from keyguard.guard.report import Finding, Severity
from keyguard.guard.rules import (  # noqa: F401  VALUE_RULES: re-exported
    REGISTRY_DISAGREES,
    VALUE_FIRST_VERSION,
    VALUE_FRAMING_CHANGED,
    VALUE_INCOMPATIBLE,
    VALUE_RULES,
)


def check_value(
    subject: str,
    candidate: SchemaText,
    history: list[SchemaVersion],
    level: str,
    *,
    topic: str | None = None,
    registry: Registry | None = None,
    rules: str | None = None,
) -> list[Finding]:
    """Findings for a candidate value schema against the subject's registered history.

    With a `registry`, its own compatibility answer is asked first (`registry_answer`), then
    the pure `judge_value` decides, by `rules` (`keyguard.guard.compat.rules_of`; Confluent's by
    default) where the registries differ.
    """
    answer = registry_answer(registry, subject, candidate, history) if registry else None
    return judge_value(subject, candidate, history, level, topic=topic, answer=answer,
                       registry_name=registry.name if registry is not None else "the registry",
                       rules=rules)


def asks_registry(candidate: SchemaText, history: list[SchemaVersion]) -> bool:
    """Whether the registry's own answer counts: versions exist, all of the candidate's type."""
    return bool(history) and all(v.schema_type == candidate.schema_type for v in history)


def registry_answer(registry: Registry, subject: str, candidate: SchemaText,
                    history: list[SchemaVersion]) -> CompatibilityAnswer | None:
    """The registry's own compatibility answer for the candidate (None: it has no endpoint, or
    there is nothing to ask about). The I/O half of the value check."""
    if not asks_registry(candidate, history):
        return None
    if candidate.references:
        return registry.check_compatibility(subject, candidate.text, candidate.schema_type,
                                            candidate.reference_list)
    return registry.check_compatibility(subject, candidate.text, candidate.schema_type)


def judge_value(
    subject: str,
    candidate: SchemaText,
    history: list[SchemaVersion],
    level: str,
    *,
    topic: str | None = None,
    answer: CompatibilityAnswer | None = None,
    registry_name: str = "the registry",
    rules: str | None = None,
) -> list[Finding]:
    """The value verdict from plain data: the history, the level, the registry's answer, and
    whose rules count where the registries differ (`rules`: Confluent's by default)."""
    if not history:
        return [Finding(VALUE_FIRST_VERSION, "$", f"{subject} has no versions; {candidate.origin}"
                        " would be version 1", topic=topic, subject=subject)]
    if not asks_registry(candidate, history):
        return [Finding(VALUE_INCOMPATIBLE, "$",
                        f"{candidate.origin} is {candidate.schema_type} but {subject} holds "
                        f"{', '.join(sorted({v.schema_type for v in history}))} schemas",
                        topic=topic, subject=subject)]
    result = check_compatibility(
        candidate.schema_type,
        [v.schema for v in history],
        candidate.standalone,
        level,
        versions=[v.version for v in history],
        origins=[f"{v.subject} v{v.version} (id {v.schema_id})" for v in history],
        candidate_origin=candidate.origin,
        rules=rules,
    )
    findings = [
        Finding(
            VALUE_INCOMPATIBLE,
            inc.path or "$",
            f"{inc.kind}: {inc.message}"
            + (f" ({inc.direction} check against version {inc.version})" if inc.version
               else ""),
            topic=topic,
            subject=subject,
        )
        for inc in result.incompatibilities
    ]
    if answer is not None and answer.compatible != result.compatible:
        said = "compatible" if answer.compatible else "incompatible"
        ours = "compatible" if result.compatible else "incompatible"
        detail = "; ".join(answer.messages[:3])
        findings.append(Finding(
            REGISTRY_DISAGREES, "$",
            f"{registry_name} says {said}, keyguard says {ours} at {level} by {rules_of(rules)}"
            + (f": {detail}" if detail else ""),
            topic=topic, subject=subject,
        ))
    return findings


def framing_findings(value_format: str, old_options: Mapping[str, Any] | None,
                     new_options: Mapping[str, Any] | None, *,
                     topic: str | None = None) -> list[Finding]:
    """KG804 when the value's framing differs between the old and the new options of one
    value format (its `framing` option, `FormatFactory.frame_of`). No key changes: the finding
    is about readers. Breaking when readers of the old framing cannot read the new one (the id
    moved into a header: readers of the prefix only; another prefix); a warning when they can
    (header-aware readers read the prefix when the header is absent)."""
    factory = format_factory(value_format)
    if not factory.frame.carries_schema_id:
        return []
    of, nf = factory.frame_of(old_options, "value"), factory.frame_of(new_options, "value")
    if of == nf:
        return []
    read = _old_readers_read(of, nf)
    why = ("readers that read the schema id from the prefix only (Flink's avro-confluent and "
           "json-registry formats, deserializers without header support) cannot read the new "
           "values" if nf.id_in_header else
           "header-aware readers of the old framing read the prefix when the header is absent"
           if read else "readers of the old framing look for another prefix")
    return [Finding(VALUE_FRAMING_CHANGED, "framing",
                    f"value framing {of.name} -> {nf.name}: {why}; no key changes",
                    topic=topic, severity=Severity.WARNING if read else None)]


def _old_readers_read(old: Frame, new: Frame) -> bool:
    """Whether the readers of `old` read records written in `new`: a header framing's readers
    fall back to the bytes' frame (Confluent's dual deserializer, Apicurio's id handler)."""
    if new.id_in_header or not old.id_in_header:
        return False
    fallback = getattr(old, "payload", None)  # Apicurio's: the prefix it reads instead
    if fallback is not None:
        return bool(fallback.name == new.name)
    return getattr(old, "title", "") == getattr(new, "title", "") and new.header == 5
