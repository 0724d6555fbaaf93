"""Every rule the guard can report, in one list: key rules, value rules, and the check's own;
and the formats each applies to, derived from the format catalogue."""

from __future__ import annotations

from keyguard.formats.catalog import SIDE_FRAMINGS
from keyguard.formats.codec import FormatFactory, format_factory, format_names
from keyguard.formats.errors import KeyguardError
from keyguard.formats.framing import Frame
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
    frame = factory.frame_of(None, "key")  # the key's frame when its options choose none
    if rule.framing is Framing.SCHEMA_ID:
        return frame.carries_schema_id
    if rule.framing is Framing.MESSAGE_INDEX:
        return frame.indexed
    if rule.framing is Framing.ID_IN_HEADER:
        return any(f.id_in_header for f in _framings(factory))
    return True


def _framings(factory: FormatFactory) -> list[Frame]:
    """The key frames the format's `framing` option can choose (none for a bare format)."""
    if not factory.frame.carries_schema_id:
        return []
    out = []
    for name in SIDE_FRAMINGS:
        try:
            out.append(factory.frame_of({"framing": name}, "key"))
        except KeyguardError:  # a framing the format refuses (Protobuf's index, Apicurio)
            continue
    return out
