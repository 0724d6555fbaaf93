"""`keyguard diff --key`: key stability between schema files, with no registry and no topic.

Without a registry, avro-confluent ids are simulated the way a registry assigns them: the
same canonical schema gets the same id, any other schema a new one (`derived_schema_id`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from formats.codec import format_factory
from formats.errors import InvalidOptionError, SchemaError
from formats.registry.options import is_registry_option
from formats.schema_identity import derived_schema_id
from formats.schemafile import SchemaText
from guard.keys.analyze import analyze_key_change
from guard.keys.side import KeySide
from guard.plan import TopicPlan
from guard.report import Report


def key_side(text: SchemaText, key_format: str, options: Mapping[str, Any],
             partitions: int | None, *, existing: bool) -> KeySide:
    """A side for a schema file; `existing` keys carry its (simulated) id."""
    return _side(TopicPlan("", key_format=key_format, key_options=dict(options)), text,
                 partitions, existing=existing)


def _side(plan: TopicPlan, text: SchemaText, partitions: int | None, *,
          existing: bool) -> KeySide:
    schema_id = derived_schema_id(text.text, text.schema_type)  # what a registry would assign
    try:
        return plan.key_side(text, existing=existing, schema_id=schema_id,
                             key_schema_ids=(schema_id,) if existing else (),
                             partitions=partitions)
    except SchemaError as exc:
        prefix = f"{text.origin}: "
        if exc.message.startswith(prefix):
            raise
        raise type(exc)(prefix + exc.message, hint=exc.hint) from None


def diff_keys(
    texts: Sequence[SchemaText],
    key_format: str,
    old_options: Mapping[str, Any],
    new_options: Mapping[str, Any],
    *,
    partitions: int | None = None,
    new_partitions: int | None = None,
) -> Report:
    """The candidate (last) against the version before it: the keys in the topic today."""
    _no_registry_options(key_format, {**old_options, **new_options})
    old, new = texts[-2], texts[-1]
    plan = TopicPlan("", key_format=key_format, key_options=dict(new_options),
                     old_key_options=dict(old_options))
    old_side = _side(plan, old, partitions, existing=True)
    new_side = _side(plan, new, new_partitions or partitions, existing=False)
    findings = analyze_key_change(old_side, new_side)
    return Report.of(findings, [f"key {key_format}: {old.origin} -> {new.origin}"])


def _no_registry_options(key_format: str, options: Mapping[str, Any]) -> None:
    """diff reads no registry: a registry option given to it would be accepted and ignored."""
    registers = format_factory(key_format).uses_registry
    unused = sorted(k for k in options if k == "url" or (registers and is_registry_option(k)))
    if unused:
        raise InvalidOptionError(
            f"diff reads no schema registry: option{'s' if len(unused) > 1 else ''} "
            f"{', '.join(unused)} would not be used",
            hint="drop them; to compare with a registry, use keyguard check --registry")
