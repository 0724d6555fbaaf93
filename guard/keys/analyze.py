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
from dataclasses import replace
from typing import Any

from formats.codec import Codec, CodecContext
from formats.registry import SchemaVersion
from formats.schema_identity import derived_schema_id
from formats.types import avro_only_parts
from guard.keys.avro import avro_changes, battery_hints, confluent_changes, resolve_ids, side_schema
from guard.keys.placement import placement_changes
from guard.keys.raw import raw_changes
from guard.keys.side import Change, KeySide, effective_options, factory
from guard.keys.text import TextRules, fields_changes, option_changes
from guard.keys.witness import Encoder, Trial, WitnessSearch, place
from guard.report import Finding, Severity, Witness
from guard.rules import rule

#: Options with no effect on key bytes, or whose effect the schema walk already judges.
_NO_KEY_EFFECT = {
    "avro": {"codec", "open.fastread", "timestamp_mapping.legacy"},
    "avro-confluent": None,  # every option except the schema is about the registry connection
}


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
    old_enc = encoder(old, topic, _side_id(old, new, "old"))
    new_enc = encoder(new, topic, _side_id(old, new, "new"))
    hints = battery_hints(old) if old.is_avro else None
    search = WitnessSearch(old, new, old_enc, new_enc, hints, examples)
    findings = [_prove(c, search, topic) for c in _changes(old, new, topic)]
    if not any(f.effective_severity is Severity.BREAKING for f in findings):
        t = search.first_difference
        if t is not None:
            what = "partition" if not t.bytes_differ else "bytes"
            findings.append(Finding(
                rule("KG000"), "$",
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
        findings.append(Finding(rule(c.rule_id), c.path, c.message + note, None, topic=topic))
    return findings


def _changes(old: KeySide, new: KeySide, topic: str | None, *,
             by_example: bool = True) -> Iterator[Change]:
    yield from placement_changes(old, new)
    if old.format != new.format:
        return
    fmt = new.format
    if fmt in ("json", "csv"):
        yield from fields_changes(TextRules.of(old, new), old.row_type, new.row_type)
        for key, a, b, change in option_changes(old, new):
            yield change or _battery_option(old, key, a, b, topic)
        if old.fields_prefix != new.fields_prefix:
            what = f"key.fields-prefix {old.fields_prefix!r} -> {new.fields_prefix!r}"
            if fmt == "json" and old.row_type.names != new.row_type.names:
                yield Change("KG309", "key.fields-prefix", f"{what}: the key format sees the "
                             f"fields as {', '.join(new.row_type.names)} instead of "
                             f"{', '.join(old.row_type.names)}")
            else:
                yield Change("KG909", "key.fields-prefix", f"{what}: the key format sees the same "
                             "field names" if fmt == "json" else f"{what}: csv writes no names")
    elif fmt == "raw":
        yield from raw_changes(old, new)
    elif fmt in ("avro", "avro-confluent"):
        encodings = {effective_options(s).get("encoding", "binary") for s in (old, new)}
        if "json" in encodings:
            # Avro's JSON encoding writes names and symbols, not indexes: judged by example.
            yield Change("KG310", "$", "Avro JSON encoding (encoding=json): keyguard judges "
                         "schema changes under it by example keys only", by_example=True)
        else:
            yield from avro_changes(old, new)
        if fmt == "avro-confluent":
            yield from confluent_changes(old, new)
        oo, no = effective_options(old), effective_options(new)
        quiet = _NO_KEY_EFFECT[fmt]
        for key in sorted(set(oo) | set(no)):
            a, b = oo.get(key), no.get(key)
            if a == b:
                continue
            if quiet is None or key in quiet:
                yield Change("KG909", key, f"option '{key}' changed: no effect on key bytes "
                             "beyond the schema, which is checked field by field")
            elif by_example:
                yield _battery_option(old, key, a, b, topic)
            else:
                yield Change("KG310", key, f"option '{key}' {a!r} -> {b!r}: not judged")


def _battery_option(old: KeySide, key: str, a: Any, b: Any, topic: str | None) -> Change:
    """An option without a specific rule, judged by encoding the battery with only it changed."""
    probe = replace(old, options={**old.options, key: b})
    hints = battery_hints(old) if old.is_avro else None
    search = WitnessSearch(old, probe, encoder(old, topic), encoder(probe, topic), hints)
    what = f"option '{key}' {a!r} -> {b!r}"
    if search.first_difference is not None:
        return Change("KG310", key, f"{what}: representative keys encode differently")
    return Change("KG909", key, f"{what}: representative keys encode the same")


#: Rules about keys the new side cannot encode: their best witness is such a key.
_CANNOT_ENCODE = frozenset({"KG106", "KG202", "KG204"})


def _prove(c: Change, search: WitnessSearch, topic: str | None) -> Finding:
    r = rule(c.rule_id)
    prefer = None if c.path in ("$", "key.format", "partitions", "partitioner") else c.path
    if r.severity is Severity.BREAKING:
        pred: Callable[[Trial], bool] = (lambda t: t.placement_differs) if c.placement else \
            (lambda t: t.bytes_differ)
        w = None
        if c.rule_id == "KG603" and search.old.partitioner_family == \
                search.new.partitioner_family:
            w = _versus_murmur2(search)
        if c.rule_id in _CANNOT_ENCODE:
            w = search.find(prefer, lambda t: t.new_bytes is None)
        w = w or search.find(prefer, pred) or (search.find(None, pred) if prefer else None)
        if w is None and c.placement:
            w = search.find_wide(pred)
        if w is None and c.by_example:
            return Finding(rule(c.safe_rule), c.path, c.message.split(":")[0] + ": no example key "
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
    return replace(w, old_partition=None, new_partition=None)


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
    if old.format != "avro-confluent" and new.format != "avro-confluent":
        return None
    if old.format == new.format:
        ids = resolve_ids(old, new)
        return ids.old_id if which == "old" else ids.new_id
    side = old if which == "old" else new
    if side.schema_id is not None:
        return side.schema_id
    from guard.keys.avro import registry_identity

    return derived_schema_id(registry_identity(side_schema(side)))


def encoder(side: KeySide, topic: str | None = None, schema_id: int | None = None) -> Encoder:
    """The side's key encoder: its format's real codec (Avro with the side's exact schema)."""
    fmt = side.format
    if fmt == "avro" and side.avro_schema is not None and \
            effective_options(side).get("encoding", "binary") == "binary":
        from formats.avro_format import AvroWriter

        return AvroWriter(side.row_type, side_schema(side), where="avro key format").encode
    options: dict[str, Any] = dict(side.options)
    registry = None
    if fmt == "avro-confluent":
        schema = side_schema(side)
        text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
        for k in ("schema", "schema-registry.schema", "auto.register.schemas"):
            options.pop(k, None)
        options["schema"] = text
        if schema_id is None:
            schema_id = side.schema_id if side.schema_id is not None else 1
        registry = PinnedRegistry(text, schema_id)
    codec = build_codec(fmt, side.row_type, options,
                        CodecContext(role="key", topic=topic or "keyguard-analysis",
                                     registry=registry))
    if registry is not None:  # avro-confluent: the id is given, never asked of a registry
        codec.bind_schema_id(schema_id)  # type: ignore[attr-defined]
    return codec.encode


def build_codec(fmt: str, row_type: Any, options: Mapping[str, Any],
                context: CodecContext) -> Codec:
    """`formats.codec.create_codec`, importing only this format's module."""
    f = factory(fmt)
    resolved = f.options.validate(options, where=f"{context.role} format '{fmt}'")
    codec: Codec = f.build(row_type, resolved, context)
    return codec


class PinnedRegistry:
    """A registry that knows one schema under one id: the analysis stays pure and offline."""

    name = "keyguard analysis (no registry asked)"

    def __init__(self, schema: str, schema_id: int) -> None:
        self.schema, self.schema_id = schema, schema_id

    def _version(self, subject: str) -> SchemaVersion:
        return SchemaVersion(subject, 1, self.schema_id, self.schema)

    def subjects(self) -> list[str]:
        return []

    def versions(self, subject: str) -> list[int]:
        return [1]

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        return self._version(subject)

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        return [self._version(subject)]

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        return "AVRO", self.schema

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO") -> SchemaVersion:
        return self._version(subject)

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        return self.schema_id

    def compatibility(self, subject: str) -> str:
        return "NONE"

    def check_compatibility(self, subject: str, schema: str, schema_type: str = "AVRO") -> None:
        return None
