"""Value-schema compatibility with a schema registry's semantics, with every reason located.

`check_compatibility("AVRO", history, candidate, "BACKWARD")` answers what a Confluent-compatible
registry would answer when `candidate` is registered after `history` (oldest first), and why:
each Incompatibility names its kind, its location in the reader schema, the version it was
checked against and the direction (BACKWARD: the new schema reads old data; FORWARD: the old
schema reads new data). Pure functions, no registry access.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from keyguard.formats.errors import InvalidOptionError
from keyguard.guard.catalog import CHECKERS, module_of
from keyguard.guard.compat.levels import (
    CompatibilityResult,
    Incompatibility,
    PairChecker,
    check_levels,
    normalize_level,
)
from keyguard.guard.compat.registry_rules import RegistryRules, rules_of

__all__ = [
    "CompatibilityResult",
    "Incompatibility",
    "check_compatibility",
    "check_reader_writer",
    "normalize_level",
    "rules_of",
]


def checked_types() -> list[str]:
    """The schema types that have a checker (the catalog's, `keyguard.guard.catalog.CHECKERS`)."""
    return sorted(CHECKERS)


def _checker(schema_type: str) -> PairChecker[Any]:
    """The checker of `schema_type`, imported on first use: the JSON Schema one pulls in
    jsonschema and referencing (0.2 s), which an Avro-only check never needs."""
    name = schema_type.upper() if isinstance(schema_type, str) else ""
    module = module_of(CHECKERS, name)
    if module is None:
        raise InvalidOptionError(
            f"no compatibility checker for schema type {schema_type!r}",
            hint=f"use one of {', '.join(checked_types())}",
        )
    checker: PairChecker[Any] = module.CHECKER
    return checker


def check_compatibility(
    schema_type: str,
    history: Sequence[Any],
    candidate: Any,
    level: str,
    *,
    versions: Sequence[int] | None = None,
    origins: Sequence[str] | None = None,
    candidate_origin: str = "the candidate schema",
    rules: str | RegistryRules | None = None,
) -> CompatibilityResult:
    """Check `candidate` against the registered `history` (oldest first) at `level`.

    Schemas may be JSON text, decoded JSON, or (Avro) a bare type name. `versions` numbers the
    history (default 1..n) for `checked_against` and each Incompatibility. Raises SchemaError
    for an invalid schema, named by `candidate_origin` or its entry in `origins` (a file, a
    subject and version), and InvalidOptionError for an unknown type or level. `rules`: whose
    answers count where the registries differ (`registry_rules.RULES_OF`; Confluent's default).
    """
    checker = _checker(schema_type).following(rules_of(rules))
    return check_levels(checker, history, candidate, level, versions,
                        origins=origins, candidate_origin=candidate_origin)


def check_reader_writer(schema_type: str, reader: Any, writer: Any,
                        rules: str | RegistryRules | None = None) -> list[Incompatibility]:
    """Every reason `reader` cannot read what `writer` wrote; [] when it can."""
    checker = _checker(schema_type).following(rules_of(rules))
    return checker.check(checker.parse(reader), checker.parse(writer))
