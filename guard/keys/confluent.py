"""Key rules of every CONFLUENT-framed key format: the registry schema id in every key.

Confluent's wire format (avro-confluent, json-registry) puts the magic byte and the schema id
in front of every key, so any change the registry sees as a new schema gives every key new
bytes, even a FULL-compatible one. The analysis applies these rules to any side whose format's
frame carries an id (`KeySide.carries_schema_id`), next to its key family's rules on the body;
the schema is the one the format registers (`registered_schema`), compared as the registry
dedupes it (`keyguard.formats.schema_identity.canonical_form` of its schema type).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import NamedTuple

from keyguard.formats.codec import CodecContext, create_codec
from keyguard.formats.schema_identity import canonical_form, derived_schema_id
from keyguard.guard.keys.avro import side_schema
from keyguard.guard.keys.known import KnownSchemas
from keyguard.guard.keys.side import Change, KeySide, factory
from keyguard.guard.rules import (
    CONFLUENT_KEYS_CARRY_SEVERAL_IDS,
    CONFLUENT_SAME_SCHEMA_ID,
    CONFLUENT_SCHEMA_ID_CHANGED,
)

#: Options that name a schema or a registry: dropped to ask the format for its derived schema.
_REGISTRY_SCHEMA_OPTIONS = ("schema", "schema-registry.schema", "references",
                            "auto.register.schemas")


def registered_schema(side: KeySide) -> tuple[str, str]:
    """(schema type, text) of the schema the side's keys are registered under: the exact Avro
    schema for an Avro side; else the side's `schema_text`, its `schema` option, or the schema
    its format derives from the row (`Codec.written_schema`)."""
    schema_type = str(factory(side.format).schema_type)
    if side.is_avro:
        return schema_type, json.dumps(side_schema(side), separators=(",", ":"),
                                       ensure_ascii=False)
    if side.schema_text:
        return schema_type, side.schema_text
    if side.options.get("schema"):
        return schema_type, str(side.options["schema"])
    options = {k: v for k, v in side.options.items() if k not in _REGISTRY_SCHEMA_OPTIONS}
    codec = create_codec(side.format, side.row_type, options,
                         CodecContext(role="key", topic="keyguard-analysis",
                                      registry=KnownSchemas()))
    written = codec.written_schema()
    return written.schema_type, written.text


def registry_identity(side: KeySide) -> str:
    """The text a Confluent-compatible registry dedupes the side's schema by.

    The registry parses and re-serializes a schema: whitespace and JSON key order collapse;
    for Avro also `{"type": "int"}` vs `"int"` and full vs namespace-split names; doc,
    defaults, aliases, namespaces, titles and custom properties remain.
    """
    schema_type, text = registered_schema(side)
    return f"{schema_type}\0{canonical_form(text, schema_type)}"


def derived_id(side: KeySide) -> int:
    """The id a registry could give the side's schema, when no registry said (`keyguard diff`,
    the analysis without facts): equal for schemas the registry dedupes as one."""
    schema_type, text = registered_schema(side)
    return derived_schema_id(text, schema_type)


class Ids(NamedTuple):
    """The ids in play: what the existing keys carry, and what the candidate writes with."""

    key_ids: tuple[int, ...]
    old_id: int
    new_id: int
    #: Whether new_id is known (registered) or only a placeholder for "a new id".
    new_known: bool
    same_schema: bool


def resolve_ids(old: KeySide, new: KeySide) -> Ids:
    """Which ids the keys carry and which the candidate gets (registry dedupe if unknown)."""
    same = registry_identity(old) == registry_identity(new)
    key_ids = old.key_schema_ids or ((old.schema_id,) if old.schema_id is not None else ())
    old_id = old.schema_id if old.schema_id is not None else (
        key_ids[-1] if key_ids else derived_id(old))
    if new.schema_id is not None:
        return Ids(key_ids or (old_id,), old_id, new.schema_id, True, same)
    if same:
        return Ids(key_ids or (old_id,), old_id, old_id, True, same)
    placeholder = derived_id(new)
    while placeholder in key_ids or placeholder == old_id:
        placeholder = (placeholder + 1) & 0x7FFFFFFF
    return Ids(key_ids or (old_id,), old_id, placeholder, False, same)


def confluent_changes(old: KeySide, new: KeySide) -> Iterator[Change]:
    """The schema-id rules: the candidate keeps the id the keys carry, or every key breaks."""
    ids = resolve_ids(old, new)
    carried = ", ".join(map(str, ids.key_ids))
    if ids.new_id in ids.key_ids:
        others = [i for i in ids.key_ids if i != ids.new_id]
        why = "is registered under" if ids.new_known and not ids.same_schema else \
            "is the same schema to the registry as"
        yield Change(CONFLUENT_SAME_SCHEMA_ID,
                     "$", f"the candidate key schema {why} id {ids.new_id}, which the "
                     "existing keys carry")
        if others:
            yield Change(CONFLUENT_KEYS_CARRY_SEVERAL_IDS,
                         "$", f"the topic's keys carry schema ids {carried}; keys with "
                         f"id {', '.join(map(str, others))} stay orphaned (the candidate writes "
                         f"id {ids.new_id})")
        return
    new_id = str(ids.new_id) if ids.new_known else f"a new id (shown as {ids.new_id})"
    detail = "" if not ids.same_schema else " (the same schema text, registered again)"
    yield Change(CONFLUENT_SCHEMA_ID_CHANGED,
                 "$", f"existing keys carry schema id {carried}, the candidate key "
                 f"schema gets {new_id}{detail}: the id is in the first five bytes of every key")
