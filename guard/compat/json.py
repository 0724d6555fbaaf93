"""Schema type JSON's value compatibility, listed in the guard's catalog
(`keyguard.guard.catalog.CHECKERS`).

The checker itself is the `guard/compat/jsonschema/` package.
"""

from __future__ import annotations

from keyguard.guard.compat.jsonschema import CHECKER

__all__ = ["CHECKER"]
