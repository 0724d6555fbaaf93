"""Schema type JSON's value compatibility, found by convention (`guard.compat.checker_module`).

The checker itself is the `guard/compat/jsonschema/` package.
"""

from __future__ import annotations

from guard.compat.jsonschema import CHECKER

__all__ = ["CHECKER"]
