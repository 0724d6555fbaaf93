"""The key-evolution guard: does every key already in a compacted topic keep its bytes?

`analyze_key_change(old, new)` compares two `KeySide`s and returns Findings (rules in
`keyguard.guard.rules`), each with a witness key; `topic_findings` covers the topic's own settings.
"""

from keyguard.guard.keys.analyze import analyze_key_change
from keyguard.guard.keys.placement import topic_findings
from keyguard.guard.keys.side import KeySide

__all__ = ["KeySide", "analyze_key_change", "topic_findings"]
