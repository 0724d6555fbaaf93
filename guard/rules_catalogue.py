"""Every rule the guard can report, in one list: key rules, value rules, and the check's own;
and the formats each applies to, derived from the format catalogue."""

from __future__ import annotations

from keyguard.formats.codec import FormatFactory, format_factory, format_names
from keyguard.guard.report import ANY_FAMILY, Framing, Rule
from keyguard.guard.rules import ALL_RULES


def catalogue() -> list[Rule]:
    """All rules, sorted by ID (what `keyguard rules` prints and SARIF declares)."""
    return list(ALL_RULES.values())


def formats_of(rule: Rule) -> tuple[str, ...]:
    """The formats `rule` applies to, by name: those whose key family it judges and whose frame
    carries what it needs (`keyguard rules` and SARIF list them). Empty for a rule about no key
    format (the value, the audit)."""
    if not rule.families:
        return ()
    return tuple(name for name in format_names() if _applies(rule, format_factory(name)))


def _applies(rule: Rule, factory: FormatFactory) -> bool:
    if rule.families != ANY_FAMILY and factory.key_family not in rule.families:
        return False
    if rule.framing is Framing.SCHEMA_ID:
        return factory.frame.carries_schema_id
    if rule.framing is Framing.MESSAGE_INDEX:
        return factory.frame.indexed
    return True
