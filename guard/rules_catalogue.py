"""Every rule the guard can report, in one list: key rules, value rules, and the check's own."""

from __future__ import annotations

from keyguard.guard.report import Rule
from keyguard.guard.rules import ALL_RULES


def catalogue() -> list[Rule]:
    """All rules, sorted by ID (what `keyguard rules` prints and SARIF declares)."""
    return list(ALL_RULES.values())
