"""Value schemas: the candidate against the subject's compatibility level, as the registry would.

Unlike keys, values may evolve: consumers resolve old and new value schemas. What matters is the
subject's compatibility level (its own, else the registry default), checked with the registry's
semantics by `keyguard.guard.compat`. Against an HTTP registry the registry's own endpoint is asked
too, and a disagreement is reported rather than hidden.
"""

from __future__ import annotations

from keyguard.formats.registry import CompatibilityAnswer, Registry, SchemaVersion
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.compat import check_compatibility, rules_of
from keyguard.guard.report import Finding
from keyguard.guard.rules import (  # noqa: F401  VALUE_RULES: re-exported
    REGISTRY_DISAGREES,
    VALUE_FIRST_VERSION,
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
