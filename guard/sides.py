"""The key sides a verdict compares, built once from the plan and the gathered facts. Pure.

`key_sides(plan, registered, facts)` turns the candidate key schema and the registered versions
into `KeySide`s (the format, options, row type and schema each side writes keys with) before
the verdict: `keyguard.guard.judge.judge` receives them as facts and builds none itself.

Which versions the candidate is judged against follows what the topic's keys carry. A format
that frames keys with a schema id writes that id into every key, so each id the scanned keys
carry is a version whose keys the change may orphan; when the candidate's own id is among them,
only its version is compared (keys under the other ids are orphaned already, a topic finding,
not this change's). Without a scan, or without ids in the keys, the latest version stands for
the existing keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from keyguard.formats.immutable import Value
from keyguard.formats.registry import SchemaVersion
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.facts import Facts, Registered
from keyguard.guard.keys.side import KeySide
from keyguard.guard.plan import TopicPlan

if TYPE_CHECKING:
    from keyguard.guard.topic import TopicFacts


class OldSide(Value):
    """A registered version the candidate is judged against, and how its keys are written."""

    __slots__ = ("side", "version")
    FIELDS = ("version", "side")
    version: Final[SchemaVersion]
    side: Final[KeySide]

    def __init__(self, version: SchemaVersion, side: KeySide) -> None:
        self.version = version
        self.side = side


class KeySides(Value):
    """The candidate's side and the registered sides it is compared with."""

    __slots__ = ("candidate", "carried", "new", "olds")
    FIELDS = ("candidate", "new", "olds", "carried")
    #: The candidate key schema (the latest version, marked unchanged, when none was given);
    #: None when the subject has no versions and no candidate was given.
    candidate: Final[SchemaText | None]
    new: Final[KeySide | None]
    olds: Final[tuple[OldSide, ...]]
    #: The schema ids the scanned keys carry (sorted); empty when keys carry none or no scan ran.
    carried: Final[tuple[int, ...]]

    def __init__(self, candidate: SchemaText | None, new: KeySide | None,
                 olds: tuple[OldSide, ...] = (), carried: tuple[int, ...] = ()) -> None:
        self.candidate = candidate
        self.new = new
        self.olds = olds
        self.carried = carried


def key_sides(plan: TopicPlan, registered: Registered, facts: Facts) -> KeySides:
    """The sides `plan` and the facts describe. Raises a KeyguardError only for a mistake in
    the input (a side no codec can be built for)."""
    key, topic = registered.key, facts.topic
    history = list(key.versions)
    candidate = plan.candidate_key
    if not history:
        if candidate is None:
            return KeySides(None, None)
        return KeySides(candidate, _new_side(plan, candidate, key.candidate_id, topic))
    if candidate is None:
        assert key.latest is not None, "gather reads the latest version for an unchanged key"
        candidate = key.latest.with_origin(f"{key.subject} v{history[-1].version} (unchanged)")
    new = _new_side(plan, candidate, key.candidate_id, topic)
    carried = _carried(plan, topic)
    olds = tuple(OldSide(v, _old_side(plan, v, ids, topic))
                 for v, ids in judged_versions(history, carried, new.schema_id))
    return KeySides(candidate, new, olds, carried)


def _carried(plan: TopicPlan, topic: TopicFacts | None) -> tuple[int, ...]:
    if not plan.key_ids_in_bytes() or topic is None or not topic.key_schema_ids:
        return ()
    return tuple(sorted(topic.key_schema_ids))


def judged_versions(history: list[SchemaVersion], carried: tuple[int, ...],
                    new_id: int | None) -> list[tuple[SchemaVersion, tuple[int, ...]]]:
    """The registered versions to judge the candidate against, each with the ids its keys
    carry (the module's docstring says which)."""
    if not carried:
        return [(history[-1], (history[-1].schema_id,))]
    by_id = {v.schema_id: v for v in history}
    listed = [i for i in carried if i in by_id]
    if new_id is not None and new_id in listed:
        return [(by_id[new_id], carried)]
    if not listed:  # judge against the latest version; the keys' own ids still count
        return [(history[-1], carried)]
    return [(by_id[i], carried) for i in listed]


def _old_side(plan: TopicPlan, version: SchemaVersion, ids: tuple[int, ...],
              topic: TopicFacts | None) -> KeySide:
    """The existing keys' side: the plan's existing format with a registered version."""
    text = SchemaText(version.schema_type, version.schema, f"{version.subject} v{version.version}")
    return plan.key_side(text, existing=True, schema_id=version.schema_id, key_schema_ids=ids,
                         partitions=topic.partitions if topic else plan.partitions)


def _new_side(plan: TopicPlan, candidate: SchemaText, candidate_id: int | None,
              topic: TopicFacts | None) -> KeySide:
    """The candidate's side: the id it has under the key subject, if registered."""
    return plan.key_side(candidate, existing=False, schema_id=candidate_id,
                         partitions=plan.partitions or (topic.partitions if topic else None))
