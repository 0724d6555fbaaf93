"""Key rules of every registry-framed key format: where each key's schema id goes.

Confluent's wire format (avro-confluent, json-registry, protobuf-registry) puts the magic byte
and the schema id in front of every key, so any change the registry sees as a new schema gives
every key new bytes, even a FULL-compatible one (KG501). The analysis applies these rules to
any side whose frame carries an id (`KeySide.carries_schema_id`), next to its key family's
rules on the body; the schema is the one the format registers (`registered_schema`), compared
as the registry dedupes it (`keyguard.formats.schema_identity.canonical_form` of its type).

Each side's frame is its `framing` option's (`KeySide.frame`). Under a header framing
(Confluent's `confluent-header`, Apicurio's header ids) the key bytes are the body alone: the
schema id changes no key, KG501 does not apply (KG913 says why) and the family's rules on the
body decide. A framing that differs between the sides moves every key's bytes (KG503).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Final

from keyguard.formats.codec import CodecContext, create_codec
from keyguard.formats.framing import Frame
from keyguard.formats.immutable import Value
from keyguard.formats.schema_identity import canonical_form, derived_guid, derived_schema_id
from keyguard.guard.keys.avro import side_schema
from keyguard.guard.keys.known import KnownSchemas
from keyguard.guard.keys.side import Change, KeySide, factory
from keyguard.guard.rules import (
    CONFLUENT_KEYS_CARRY_SEVERAL_IDS,
    CONFLUENT_SAME_SCHEMA_ID,
    CONFLUENT_SCHEMA_ID_CHANGED,
    KEY_FRAMING_CHANGED,
    KEY_SCHEMA_ID_IN_HEADER,
)

#: Why KG913 fires instead of KG501: the words every rendering shows.
ID_IN_HEADER = "the key's schema id is in a header: the key bytes do not carry it"

#: KG501's durable fix, and who can read it. confluent-kafka-python took schema ids in
#: headers in 2.10.1 (its CHANGELOG: "Support for schema id in header"); its deserializers
#: read them with `dual_schema_id_deserializer`, their default (2.16). Confluent's Java
#: serializers: io.confluent.kafka.serializers.schema.id's HeaderSchemaIdSerializer and
#: DualSchemaIdDeserializer. Flink's avro-confluent format reads the id from the bytes only
#: (ConfluentSchemaRegistryCoder): it cannot read a key whose id is in a header.
HEADER_FRAMING_ADVICE = (
    "the durable fix is the header framing ('key.{format}.framing' = 'confluent-header'): the "
    "key's schema id goes in the record header __key_schema_id and the key bytes are the body "
    "alone, so a later schema change that keeps the body (a doc, a default, an alias, a "
    "namespace) keeps every key (switching is itself a one-time re-key: KG503). Every reader "
    "of the topic needs a header-aware (dual) deserializer: confluent-kafka-python 2.10.1 or "
    "later (schema ids in headers came in 2.10.1; its Avro, JSON Schema and Protobuf "
    "deserializers read them with dual_schema_id_deserializer), Confluent's Java "
    "deserializers in versions that have DualSchemaIdDeserializer (writers: "
    "HeaderSchemaIdSerializer). Flink's avro-confluent format reads the schema id from the "
    "bytes only: a Flink reader of this topic would break")

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


class Ids(Value):
    """The ids in play: what the existing keys carry, and what the candidate writes with."""

    __slots__ = ("key_ids", "new_id", "new_known", "old_id", "same_schema")
    FIELDS = ("key_ids", "old_id", "new_id", "new_known", "same_schema")
    key_ids: Final[tuple[int, ...]]
    old_id: Final[int]
    new_id: Final[int]
    #: Whether new_id is known (registered) or only a placeholder for "a new id".
    new_known: Final[bool]
    same_schema: Final[bool]

    def __init__(self, key_ids: tuple[int, ...], old_id: int, new_id: int, new_known: bool,
                 same_schema: bool) -> None:
        self.key_ids = key_ids
        self.old_id = old_id
        self.new_id = new_id
        self.new_known = new_known
        self.same_schema = same_schema


def resolve_ids(old: KeySide, new: KeySide) -> Ids:
    """Which ids the keys carry and which the candidate gets (registry dedupe if unknown; a
    framing of another registry's ids numbers the schema anew)."""
    other_registry = _registry(old.frame) != _registry(new.frame)
    same = registry_identity(old) == registry_identity(new) and not other_registry
    key_ids = old.key_schema_ids or ((old.schema_id,) if old.schema_id is not None else ())
    old_id = old.schema_id if old.schema_id is not None else (
        key_ids[-1] if key_ids else derived_id(old))
    if new.schema_id is not None and not (other_registry and new.schema_id in (old_id,
                                                                               *key_ids)):
        return Ids(key_ids or (old_id,), old_id, new.schema_id, True, same)
    if same:
        return Ids(key_ids or (old_id,), old_id, old_id, True, same)
    placeholder = derived_id(new)
    while placeholder in key_ids or placeholder == old_id:
        placeholder = (placeholder + 1) & 0x7FFFFFFF
    return Ids(key_ids or (old_id,), old_id, placeholder, False, same)


_COUNTED = {5: "five", 9: "nine"}


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
                 f"schema gets {new_id}{detail}: the id is in the first "
                 f"{_COUNTED.get(new.frame.header, new.frame.header)} bytes of every key",
                 advice=HEADER_FRAMING_ADVICE.format(format=new.format))


def _registry(frame: Frame) -> str:
    """Whose ids a frame writes: "Confluent" or "Apicurio"."""
    return str(getattr(frame, "title", ""))


def framing_changes(old: KeySide, new: KeySide) -> Iterator[Change]:
    """The frame's rules, whatever the body's family: a framing that differs between the sides
    moves every key (KG503); under a header framing the id changes no key (KG913); in the
    bytes, the schema-id rules (`confluent_changes`)."""
    of, nf = old.frame, new.frame
    if of != nf:
        yield Change(KEY_FRAMING_CHANGED, "framing",
                     f"key framing {of.name} -> {nf.name}: {_placement(of)} -> "
                     f"{_placement(nf)}{_same_layout(of, nf)}: every key's bytes change")
        return
    if nf.id_in_header:
        ids = resolve_ids(old, new)
        what = f"keeps schema id {ids.new_id}" if ids.new_id in ids.key_ids else \
            "gets a new schema id"
        yield Change(KEY_SCHEMA_ID_IN_HEADER, "$",
                     f"the candidate key schema {what}, and the schema-id rule (KG501) does not "
                     f"apply: {ID_IN_HEADER} (framing {nf.name})")
        return
    yield from confluent_changes(old, new)


def _placement(frame: Frame) -> str:
    """Where a frame puts a key's schema id, in a few words."""
    if frame.id_in_header:
        return f"the schema id in header {getattr(frame, 'header_name', '')!r}, the key bytes " \
               "the body alone"
    size = getattr(frame, "id_bytes", 4)
    article = "an" if size == 8 else "a"
    return f"the schema id in the key bytes ({_registry(frame)}: magic byte 0, {article} " \
           f"{size}-byte id)"


def _same_layout(old: Frame, new: Frame) -> str:
    """A note when both prefixes look alike but number schemas in other registries."""
    if old.id_in_header or new.id_in_header or old.header != new.header:
        return ""
    return (f" (the same layout, but {_registry(new)}'s ids are not {_registry(old)}'s: a key "
            "keeps its bytes only if the new registry gives its schema the very id it carries)")


def frame_headers(side: KeySide, schema_id: int) -> tuple[tuple[str, bytes], ...]:
    """The headers the side's framing writes with every key of `schema_id`: a header framing's
    id (Confluent's: the schema's GUID, as the registry would derive it here; Apicurio's: the
    id); none when the id is in the bytes."""
    frame = side.frame
    if not frame.id_in_header:
        return ()
    if frame.needs_guid:
        from uuid import UUID  # lazy: CLI start-up (only a header framing's witness)

        schema_type, text = registered_schema(side)
        return frame.wrapping(UUID(derived_guid(text, schema_type))).headers
    return frame.wrapping(schema_id).headers
