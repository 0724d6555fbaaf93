"""The csv key family's rules, listed in the guard's catalog (`keyguard.guard.catalog`).

They are shared with the other text family, in `guard/keys/text.py`.
"""

from __future__ import annotations

from keyguard.guard.keys.text import text_family_changes as family_changes

__all__ = ["family_changes"]
