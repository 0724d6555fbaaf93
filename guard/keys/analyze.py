"""The key-evolution analysis: will every key already in the topic keep its bytes and partition?

Pure: no registry or broker is asked (avro-confluent ids come in the KeySides). Structural
rules (the format modules) decide the verdict; the witness search proves each BREAKING finding
with a concrete key encoded by both sides' real codecs; and if the rules call a change safe but
the battery still finds a key whose bytes differ, KG000 reports it, so the guard is never
silently wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from keyguard.formats.avro_format import AvroWriter
from keyguard.formats.codec import Codec, CodecContext, create_codec
from keyguard.formats.errors import EXIT_INTERNAL, KeyguardError
from keyguard.formats.lengths import fit_row, has_lengths
from keyguard.formats.types import avro_only_parts
from keyguard.guard.catalog import KEY_FAMILIES, module_of
from keyguard.guard.keys.avro import battery_hints, side_schema
from keyguard.guard.keys.confluent import (
    derived_id,
    frame_headers,
    framing_changes,
    registered_schema,
    resolve_ids,
)
from keyguard.guard.keys.known import KnownSchemas, WriterSchema
from keyguard.guard.keys.placement import placement_changes
from keyguard.guard.keys.side import (
    Change,
    FamilyContext,
    FamilyRules,
    KeySide,
    effective_options,
    factory,
)
from keyguard.guard.keys.witness import Encoder, Trial, WitnessSearch, place
from keyguard.guard.report import Finding, Severity, Witness
from keyguard.guard.rules import (
    DECIMAL_PRECISION_NARROWED,
    FORMAT_OPTION_CHANGED,
    FORMAT_OPTION_NO_KEY_EFFECT,
    KEY_BYTES_DIFFER,
    KEY_FIELD_NOT_NULL,
    KEY_FRAMING_CHANGED,
    KEY_TYPE_NARROWED,
    PARTITIONER_NOT_MURMUR2,
)


def analyze_key_change(
    old: KeySide,
    new: KeySide,
    *,
    topic: str | None = None,
    examples: Sequence[Mapping[str, Any]] = (),
) -> list[Finding]:
    """Every finding about the move from `old` to `new` keys, each with a witness key.

    `examples` are real keys (decoded from the topic) tried as witnesses before the battery.
    Raises a KeyguardError (InvalidOptionError, SchemaError) when a side cannot be built into a
    codec at all: that is a mistake in the input, not a finding.
    """
    if avro_only_parts(old.row_type) or avro_only_parts(new.row_type):
        return _structural_only(old, new, topic)
    own = family_encoders(old, new, topic)
    old_enc, new_enc = own if own is not None else (
        encoder(old, topic, _side_id(old, new, "old")),
        encoder(new, topic, _side_id(old, new, "new")))
    hints = battery_hints(old) if old.is_avro else None
    # A family whose notion of "the same key" is not Flink's CAST says how keys carry over.
    carry = _family_hook(old, new, "family_carry")
    search = WitnessSearch(old, new, old_enc, new_enc, hints, examples,
                           carry(old, new) if carry is not None else None)
    findings = [_advised(_prove(c, search, topic), c, old, new)
                for c in _changes(old, new, topic)]
    if not any(f.effective_severity is Severity.BREAKING for f in findings):
        t = search.first_difference
        if t is not None:
            what = "partition" if not t.bytes_differ else "bytes"
            findings.append(Finding(
                KEY_BYTES_DIFFER, "$",
                f"no structural rule explains it, but key {t.key!r} gets other {what} under the "
                "new side (please report this keyguard gap)", t.witness(), topic=topic))
    return findings


def _structural_only(old: KeySide, new: KeySide, topic: str | None) -> list[Finding]:
    """A recursive key, or one with a union of several types: no codec writes it (Flink has no
    row type for it), so the structural rules on the Avro schemas judge it alone.

    A change that only examples could judge is not proven safe, so it stays breaking.
    """
    findings = []
    for c in _changes(old, new, topic, by_example=False):
        note = " (judged on the Avro schemas: a recursive key or a union of several types has " \
            "no row type to encode example keys with)"
        findings.append(Finding(c.rule, c.path, c.message + note, None, topic=topic))
    return findings


def _changes(old: KeySide, new: KeySide, topic: str | None, *,
             by_example: bool = True) -> Iterator[Change]:
    yield from placement_changes(old, new)
    if old.format != new.format:
        return
    rules = family_rules(new.key_family)
    # The family's rules judge the body; a framing that differs is the frame's rules' (below).
    o, n = (old, new) if old.frame == new.frame else (old.body_only(), new.body_only())
    yield from rules(o, n, FamilyContext(
        topic, by_example, lambda side, key, a, b: _battery_option(side, key, a, b, topic)))
    if new.carries_schema_id:  # the frame's rules, whatever the body's family
        yield from framing_changes(old, new)


def _advised(f: Finding, c: Change, old: KeySide, new: KeySide) -> Finding:
    """The finding with its change's advice, and, for a framing change, the headers each
    side's framing writes beside the witness's bytes."""
    if c.advice:
        f = f.replace(advice=c.advice)
    if c.rule is KEY_FRAMING_CHANGED and f.witness is not None:
        f = f.replace(witness=f.witness.replace(
            old_headers=frame_headers(old, _side_id(old, new, "old") or 1),
            new_headers=frame_headers(new, _side_id(old, new, "new") or 1)))
    return f


class UnknownKeyFamilyError(KeyguardError):
    """A format names a key family that no module of guard/keys declares: without its rules
    every key change would pass, so the guard refuses to judge instead."""

    kind = "internal"
    exit_code = EXIT_INTERNAL


def family_rules(family: str) -> FamilyRules:
    """The key-byte rules of a key family, its catalog module's `family_changes`
    (`keyguard.guard.catalog.KEY_FAMILIES`), imported on first use; UnknownKeyFamilyError
    when the catalog lists none."""
    rules: FamilyRules | None = getattr(module_of(KEY_FAMILIES, family), "family_changes", None)
    if rules is None:
        raise UnknownKeyFamilyError(
            f"no key rules for key family {family!r}, so no key change of this format can be "
            f"judged (the key families: {', '.join(sorted(KEY_FAMILIES))})",
            hint="this is a bug in keyguard (a format without its key rules): report it")
    return rules


def family_encoders(old: KeySide, new: KeySide,
                    topic: str | None) -> tuple[Encoder, Encoder] | None:
    """Both sides' key encoders from their family's module when it declares them
    (`family_encoders(old, new, topic)`: a family whose schema the row type does not carry,
    Protobuf); None: the formats' codecs encode."""
    own = _family_hook(old, new, "family_encoders")
    return None if own is None else own(old, new, topic)  # type: ignore[no-any-return]


def _family_hook(old: KeySide, new: KeySide, name: str) -> Callable[..., Any] | None:
    """A function the sides' one key family declares in its module (the catalog's), else
    None: `family_encoders(old, new, topic)`, `family_carry(old, new)`."""
    if old.key_family != new.key_family:
        return None
    hook: Callable[..., Any] | None = getattr(module_of(KEY_FAMILIES, new.key_family), name,
                                              None)
    return hook


def _battery_option(old: KeySide, key: str, a: Any, b: Any, topic: str | None) -> Change:
    """An option without a specific rule, judged by encoding the battery with only it changed."""
    probe = old.replace(options={**old.options, key: b})
    hints = battery_hints(old) if old.is_avro else None
    search = WitnessSearch(old, probe, encoder(old, topic), encoder(probe, topic), hints)
    what = f"option '{key}' {a!r} -> {b!r}"
    if search.first_difference is not None:
        return Change(FORMAT_OPTION_CHANGED, key, f"{what}: representative keys encode differently")
    return Change(FORMAT_OPTION_NO_KEY_EFFECT, key, f"{what}: representative keys encode the same")


#: Rules about keys the new side cannot encode: their best witness is such a key.
_CANNOT_ENCODE = frozenset({KEY_FIELD_NOT_NULL, KEY_TYPE_NARROWED, DECIMAL_PRECISION_NARROWED})


def _prove(c: Change, search: WitnessSearch, topic: str | None) -> Finding:
    r = c.rule
    if c.witness is not None:  # the family encoded its own witness
        return Finding(r, c.path, c.message, _shown(c.witness, c, search), topic=topic)
    prefer = None if c.path in ("$", "key.format", "partitions", "partitioner") else c.path
    if r.severity is Severity.BREAKING:
        pred: Callable[[Trial], bool] = (lambda t: t.placement_differs) if c.placement else \
            (lambda t: t.bytes_differ)
        w = None
        if c.rule == PARTITIONER_NOT_MURMUR2 and search.old.partitioner_family == \
                search.new.partitioner_family:
            w = _versus_murmur2(search)
        if c.rule in _CANNOT_ENCODE:
            w = search.find(prefer, lambda t: t.new_bytes is None)
        w = w or search.find(prefer, pred) or (search.find(None, pred) if prefer else None)
        if w is None and c.placement:
            w = search.find_wide(pred)
        if w is None and c.by_example:
            return Finding(c.safe_rule, c.path, c.message.split(":")[0] + ": no example key "
                           "changes bytes or partition",
                           search.find(prefer, lambda t: True), topic=topic)
        msg = c.message if w is not None else c.message + " (no example key found)"
        return Finding(r, c.path, _placement_note(msg, c, search), _shown(w, c, search),
                       topic=topic)
    return Finding(r, c.path, c.message, _shown(search.find(prefer, lambda t: True), c, search),
                   topic=topic)


def _illustrative(search: WitnessSearch) -> bool:
    return not (search.old.partitions or search.new.partitions)


def _shown(w: Witness | None, c: Change, search: WitnessSearch) -> Witness | None:
    """Partitions only where they are facts, or where placement is the finding."""
    if w is None or c.placement or not _illustrative(search):
        return w
    return w.replace(old_partition=None, new_partition=None)


def _placement_note(msg: str, c: Change, search: WitnessSearch) -> str:
    if c.placement and _illustrative(search):
        return f"{msg} (partitions shown for {search.n_old}; give the partition count)"
    return msg


def _versus_murmur2(search: WitnessSearch) -> Witness | None:
    """A key the (unchanged, non-murmur2) partitioner places elsewhere than Flink/Java would.

    The witness's old partition is murmur2's: where Flink and Java producers put the key.
    """
    for t in search.trials():
        if t.new_bytes is None:
            continue
        flink = place("murmur2", t.new_bytes, search.n_new)
        if flink != t.new_partition:
            return Witness(dict(t.key), t.old_bytes, t.new_bytes, None, flink, t.new_partition)
    return None


# --- codecs for each side -------------------------------------------------------------------


def _side_id(old: KeySide, new: KeySide, which: str) -> int | None:
    if not (old.carries_schema_id or new.carries_schema_id):
        return None
    if old.format == new.format:
        ids = resolve_ids(old, new)
        return ids.old_id if which == "old" else ids.new_id
    side = old if which == "old" else new
    if side.schema_id is not None:
        return side.schema_id
    return derived_id(side)


def encoder(side: KeySide, topic: str | None = None, schema_id: int | None = None) -> Encoder:
    """The side's key encoder: its format's real codec (Avro with the side's exact schema),
    after the cast of declared CHAR/VARCHAR/BINARY/VARBINARY lengths a writer applies."""
    encode = _encoder(side, topic, schema_id)
    if not has_lengths(side.row_type):
        return encode
    row_type = side.row_type
    return lambda row: encode(fit_row(row_type, row))


def _encoder(side: KeySide, topic: str | None, schema_id: int | None) -> Encoder:
    f = factory(side.format)
    if f.writes_avro and not side.carries_schema_id and side.avro_schema is not None and \
            effective_options(side).get("encoding", "binary") == "binary":

        return AvroWriter(side.row_type, side_schema(side), where="avro key format").encode
    if side.carries_schema_id and schema_id is None:
        schema_id = side.schema_id if side.schema_id is not None else 1
    return side_codec(side, topic, schema_id=schema_id).encode


def side_codec(side: KeySide, topic: str | None = None, *, schema_id: int | None = None,
               writer_schemas: Mapping[int | str, WriterSchema] | None = None,
               exact_schema: bool = False) -> Codec:
    """The side's codec, built through its format, with the side's exact schema.

    A format that frames a schema id gets a `KnownSchemas` registry: the side's schema under
    `schema_id` (encoding), and `writer_schemas` by id (decoding keys read from the topic).
    `exact_schema` gives an unframed Avro side's schema to its codec too (the encoder writes
    Avro binary itself). Nothing is asked of a real registry.
    """
    options: dict[str, Any] = dict(side.options)
    registry = None
    if side.carries_schema_id:
        _, text = registered_schema(side)
        for k in ("schema", "schema-registry.schema", "auto.register.schemas", "references"):
            options.pop(k, None)  # the side's schema is standalone: references are in it
        options["schema"] = text
        written = {text: schema_id} if schema_id is not None else {}
        registry = KnownSchemas(written, writer_schemas or {})
    elif side.is_avro and exact_schema:
        options["schema"] = json.dumps(side_schema(side), separators=(",", ":"))
    codec = create_codec(side.format, side.row_type, options,
                         CodecContext(role="key", topic=topic or "keyguard-analysis",
                                      registry=registry))
    if side.carries_schema_id and schema_id is not None:  # the id is given, never asked for
        codec.bind_schema_id(schema_id)  # type: ignore[attr-defined]
    return codec

