"""Every rule the guard can report, in one list: key rules, value rules, and the check's own."""

from __future__ import annotations

from guard.report import Rule


def catalogue() -> list[Rule]:
    """All rules, sorted by ID (what `keyguard rules` prints and SARIF declares)."""
    from guard.check import check_rules
    from guard.rules import all_rules
    from guard.values import VALUE_RULES

    by_id = {r.id: r for r in (*all_rules(), *VALUE_RULES, *check_rules())}
    return [by_id[k] for k in sorted(by_id)]
