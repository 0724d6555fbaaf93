"""The csv key family's rules, found by convention (`keyguard.guard.keys.analyze.family_rules`).

They are shared with the other text family, in `guard/keys/text.py`.
"""

from __future__ import annotations

from keyguard.guard.keys.text import text_family_changes as family_changes

__all__ = ["family_changes"]
