"""Compatibility levels: which registered versions a candidate is checked against, and which way.

Mirrors Confluent Schema Registry's `CompatibilityChecker`: BACKWARD means the new schema reads
data written with the old one (reader = new, writer = old), FORWARD the reverse, FULL both;
plain levels look at the latest version only, `_TRANSITIVE` ones at every version; NONE checks
nothing. The format-specific walks (`keyguard.guard.compat.avro`,
`keyguard.guard.compat.jsonschema`) only ever answer "can this reader read what this writer wrote";
this module decides which pairs to ask.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from keyguard.formats.errors import InvalidOptionError, SchemaError
from keyguard.formats.immutable import Value
from keyguard.formats.registry import COMPATIBILITY_LEVELS

if TYPE_CHECKING:
    from keyguard.guard.compat.registry_rules import RegistryRules

#: Reader reads writer: the new schema reads data written with an old version.
BACKWARD = "BACKWARD"
#: Writer is read by reader: an old version reads data written with the new schema.
FORWARD = "FORWARD"

_DIRECTIONS: dict[str, tuple[str, ...]] = {
    "BACKWARD": (BACKWARD,),
    "BACKWARD_TRANSITIVE": (BACKWARD,),
    "FORWARD": (FORWARD,),
    "FORWARD_TRANSITIVE": (FORWARD,),
    "FULL": (BACKWARD, FORWARD),
    "FULL_TRANSITIVE": (BACKWARD, FORWARD),
    "NONE": (),
}


class Incompatibility(Value):
    """One reason a reader cannot read what a writer wrote, located in the reader schema.

    `path` is a JSON-pointer-like location ("/fields/2/type", "/properties/a"), "/" for the root.
    `version` and `direction` say which registered version and which way the pair was checked.
    """

    __slots__ = ("direction", "kind", "message", "path", "reader_fragment", "version",
                 "writer_fragment")
    FIELDS = ("kind", "path", "message", "reader_fragment", "writer_fragment", "version",
              "direction")
    kind: Final[str]
    path: Final[str]
    message: Final[str]
    reader_fragment: Final[Any]
    writer_fragment: Final[Any]
    version: Final[int | None]
    direction: Final[str | None]

    def __init__(self, kind: str, path: str, message: str, reader_fragment: Any = None,
                 writer_fragment: Any = None, version: int | None = None,
                 direction: str | None = None) -> None:
        self.kind = kind
        self.path = path
        self.message = message
        self.reader_fragment = reader_fragment
        self.writer_fragment = writer_fragment
        self.version = version
        self.direction = direction

    def __str__(self) -> str:
        where = f"version {self.version} " if self.version is not None else ""
        way = f"{self.direction} " if self.direction else ""
        return f"{way}{where}{self.kind} at {self.path}: {self.message}"


class CompatibilityResult(Value):
    """The verdict for one candidate, with every incompatibility found (not just the first)."""

    __slots__ = ("checked_against", "compatible", "incompatibilities")
    FIELDS = ("compatible", "incompatibilities", "checked_against")
    compatible: Final[bool]
    incompatibilities: Final[list[Incompatibility]]
    checked_against: Final[list[int]]

    def __init__(self, compatible: bool, incompatibilities: list[Incompatibility],
                 checked_against: list[int]) -> None:
        self.compatible = compatible
        self.incompatibilities = incompatibilities
        self.checked_against = checked_against


S = TypeVar("S")


class PairChecker(Generic[S]):
    """A format's two entry points: parse a schema once, then walk a (reader, writer) pair.
    `under` gives the checker that follows another registry where it differs from Confluent
    (None: the format has no such difference). `history` checks rules about history rather
    than reading (old version, candidate), once per version whatever the level's direction:
    Apicurio's protolock rules are of this kind. A plain class with `Final` fields (a frozen
    dataclass would generate its methods at every CLI start)."""

    __slots__ = ("check", "history", "parse", "under")

    def __init__(self, parse: Callable[[Any], S], check: Callable[[S, S], list[Incompatibility]],
                 under: Callable[[RegistryRules], PairChecker[S]] | None = None,
                 history: Callable[[S, S], list[Incompatibility]] | None = None) -> None:
        self.parse: Final = parse
        self.check: Final = check
        self.under: Final = under
        self.history: Final = history

    def following(self, rules: RegistryRules) -> PairChecker[S]:
        """This checker, or its variant that follows `rules` where they differ."""
        return self if self.under is None or rules.name == "confluent" else self.under(rules)


def normalize_level(level: str) -> str:
    """The canonical spelling of `level`, or an InvalidOptionError naming the valid ones."""
    canonical = level.strip().upper() if isinstance(level, str) else ""
    if canonical not in COMPATIBILITY_LEVELS:
        raise InvalidOptionError(
            f"unknown compatibility level {level!r}",
            hint=f"use one of {', '.join(COMPATIBILITY_LEVELS)}",
        )
    return canonical


def versions_to_check(level: str, versions: Sequence[int]) -> list[int]:
    """The versions a candidate is checked against: the latest only, or all for _TRANSITIVE."""
    level = normalize_level(level)
    if level == "NONE" or not versions:
        return []
    if level.endswith("_TRANSITIVE"):
        return list(versions)
    return [versions[-1]]


def directions(level: str) -> tuple[str, ...]:
    """BACKWARD and/or FORWARD: which way each (candidate, old version) pair is read."""
    return _DIRECTIONS[normalize_level(level)]


def check_levels(
    checker: PairChecker[S],
    history: Sequence[Any],
    candidate: Any,
    level: str,
    versions: Sequence[int] | None = None,
    *,
    origins: Sequence[str] | None = None,
    candidate_origin: str = "the candidate schema",
) -> CompatibilityResult:
    """Check `candidate` against `history` (oldest first) the way `level` asks.

    The candidate is parsed even when the level checks nothing, so an invalid candidate is an
    error at every level, as in a registry; old versions are parsed only when checked. A
    SchemaError names the schema: `candidate_origin`, or the version's entry in `origins`
    (default "version N").
    """
    level = normalize_level(level)
    if versions is None:
        versions = list(range(1, len(history) + 1))
    elif len(versions) != len(history):
        raise InvalidOptionError(
            f"{len(versions)} version numbers given for {len(history)} schemas in the history",
            hint="pass one version number per historical schema, oldest first",
        )
    new = _parse(checker, candidate, candidate_origin)
    by_version = dict(zip(versions, history, strict=True))
    names = dict(zip(versions, origins or [f"version {v}" for v in versions], strict=True))
    checked = versions_to_check(level, list(versions))
    found: list[Incompatibility] = []
    for version in checked:
        old = _parse(checker, by_version[version], names[version])
        for direction in directions(level):
            reader, writer = (new, old) if direction == BACKWARD else (old, new)
            found.extend(
                i.replace(version=version, direction=direction)
                for i in checker.check(reader, writer)
            )
        if checker.history is not None:
            found.extend(i.replace(version=version, direction=level)
                         for i in checker.history(old, new))
    return CompatibilityResult(
        compatible=not found, incompatibilities=found, checked_against=checked
    )


def _parse(checker: PairChecker[S], schema: Any, origin: str) -> S:
    try:
        return checker.parse(schema)
    except SchemaError as exc:
        if exc.message.startswith(f"{origin}:"):
            raise
        raise type(exc)(f"{origin}: {exc.message}", hint=exc.hint) from None
