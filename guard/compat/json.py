"""Schema type JSON's value compatibility, found by convention
(`keyguard.guard.compat.checker_module`).

The checker itself is the `guard/compat/jsonschema/` package.
"""

from __future__ import annotations

from keyguard.guard.compat.jsonschema import CHECKER

__all__ = ["CHECKER"]
