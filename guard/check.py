"""`keyguard.guard.check`: the library call behind `keyguard check`, the CI gate and the Spark
writer.

Gather, then judge: `keyguard.guard.facts.gather` reads what the registry holds and what the topic
says (the imperative shell, the only I/O), `keyguard.guard.sides.key_sides` builds the key sides
from them once, and the pure `keyguard.guard.judge.judge` turns the plan, the facts and the sides
into one Report, whoever asked.

Fail closed: before any registry answer counts, the registry must prove it is one
(`keyguard.formats.registry.prove`), otherwise RegistryUnavailableError (exit 3), never "no versions
yet". A breaking change is a finding, never an exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from keyguard.formats.registry import Registry
from keyguard.guard.facts import gather
from keyguard.guard.judge import (
    JUDGE_RULES,
    KEY_FIRST_VERSION,
    KEYS_ASSUMED_LATEST,
    KEYS_UNLISTED_ID,
    SUBJECT_MISSING,
    judge,
)
from keyguard.guard.plan import TopicCheck, TopicPlan
from keyguard.guard.report import Report, Rule
from keyguard.guard.rules import REAL_KEY_RULES
from keyguard.guard.sides import key_sides

if TYPE_CHECKING:
    from keyguard.guard.selection import Suppression
    from keyguard.guard.topic import TopicInspector

__all__ = ["KEYS_ASSUMED_LATEST", "KEYS_UNLISTED_ID", "KEY_FIRST_VERSION", "SUBJECT_MISSING",
           "TopicCheck", "TopicPlan", "check", "check_many", "check_rules"]


def check_rules() -> tuple[Rule, ...]:
    return (*JUDGE_RULES, *REAL_KEY_RULES)


def check(
    spec: TopicPlan,
    *,
    registry: Registry,
    inspector: TopicInspector | None = None,
    scan_limit: int = 10_000,
    require_subject: bool = False,
) -> Report:
    """Judge one topic's candidate key and value schemas; never raises for a breaking change.

    `require_subject` (or the spec's own) makes a subject without versions breaking (KG015).
    Findings the candidates' own suppressions cover (`keyguard.guard.suppress`) are moved to
    `Report.ignored`. Raises RegistryUnavailableError when the registry cannot prove it is one.
    """
    if require_subject and not spec.require_subject:
        spec = spec.replace(require_subject=True)
    # What the candidate schemas accept in their own text (`keyguard: ignore`), whoever asked;
    # read first, so that a mistake in one stops the check before any registry call.
    accepted: tuple[Suppression, ...] = ()
    if spec.candidates_naming_keyguard():
        # lazy: CLI start-up (~9 ms, only for a schema that names keyguard)
        from keyguard.guard.suppress import in_plan

        accepted = in_plan(spec)
    registered, facts = gather(spec, registry, inspector, scan_limit=scan_limit)
    report = judge(spec, registered, facts, key_sides(spec, registered, facts))
    if not accepted:
        return report
    from keyguard.guard.selection import suppress  # lazy: CLI start-up (as above)

    return suppress(report, accepted)


def check_many(
    specs: Sequence[TopicPlan],
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
