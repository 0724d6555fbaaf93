"""One side of a key change: everything that decides the bytes and the partition of a key.

The guard compares an OLD side (how the keys already in the topic were written) with a NEW
side (how the candidate will write them). Both are plain data; building them from a table's
options, a registry or a topic scan is the caller's job (the imperative shell).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from keyguard.formats.avro_schema import from_avro_schema
from keyguard.formats.codec import canonical_format, format_factory
from keyguard.formats.errors import SchemaError, UnsupportedTypeError
from keyguard.formats.framing import Frame
from keyguard.formats.immutable import Value
from keyguard.formats.types import Field, RowType, avro_only_parts
from keyguard.guard.report import Rule, Witness
from keyguard.guard.rules import FORMAT_OPTION_NO_KEY_EFFECT

#: Producer partitioners by family: only the key-hashing ones place a key deterministically.
PARTITIONER_FAMILIES: dict[str, str] = {
    "murmur2": "murmur2",
    "murmur2_random": "murmur2",
    "default": "murmur2",  # Kafka's Java default and Flink's sink.partitioner=default
    "consistent": "crc32",
    "consistent_random": "crc32",  # librdkafka's default
    "fnv1a": "fnv1a",
    "fnv1a_random": "fnv1a",
    "random": "unkeyed",
    "round-robin": "unkeyed",
    "round_robin": "unkeyed",
    "fixed": "unkeyed",  # Flink's FlinkFixedPartitioner: by sink subtask, not by key
    "sticky": "unkeyed",
}


def partitioner_family(name: str) -> str:
    fam = PARTITIONER_FAMILIES.get(name.strip().lower())
    if fam is None:
        raise SchemaError(
            f"unknown partitioner {name!r}",
            hint="use one of " + ", ".join(sorted(PARTITIONER_FAMILIES)),
        )
    return fam


class KeySide(Value):
    """How keys are (or will be) written: format, options, key row type, schema, placement.

    `options` are the key format's own options, Flink names without the `key.<format>.`
    prefix. For avro and avro-confluent, `avro_schema` is the exact Avro schema the keys are
    written with (derived from `row_type` when None). For avro-confluent, `schema_id` is the id
    this side writes with (for the candidate: the id it has or would get, None if not yet
    registered), and `key_schema_ids` are the ids the keys already in the topic carry (from a
    topic scan, or the subject's registered ids when there is no topic). `fields_prefix` is the
    table option key.fields-prefix (the row type already has the names without it). For a
    framed format of another schema type (json-registry, protobuf-registry), `schema` is the
    key schema as written and registered under that id, when known (derived by the format
    otherwise): its text, or an object with `.text` (a `SchemaText`, a
    `keyguard.formats.protobuf_schema.ProtoSchema`). `format` may be an alias (avro-registry):
    the side names the format itself. A value (`keyguard.formats.immutable`).
    """

    __slots__ = ("avro_schema", "fields_prefix", "format", "key_schema_ids", "options",
                 "partitioner", "partitions", "row_type", "schema", "schema_id")
    FIELDS = ("format", "row_type", "options", "avro_schema", "schema_id", "key_schema_ids",
              "fields_prefix", "partitioner", "partitions", "schema")

    def __init__(self, format: str, row_type: RowType, options: Mapping[str, Any] | None = None,
                 avro_schema: Any = None, schema_id: int | None = None,
                 key_schema_ids: tuple[int, ...] = (), fields_prefix: str = "",
                 partitioner: str = "murmur2", partitions: int | None = None,
                 schema: Any = None) -> None:
        if isinstance(avro_schema, (str, bytes)):
            try:
                avro_schema = json.loads(avro_schema)
            except (ValueError, RecursionError):  # a type name; or too deep: parse_avro says so
                avro_schema = str(avro_schema).strip()
        self.format: Final = canonical_format(format)
        self.row_type: Final = row_type
        self.options: Final[Mapping[str, Any]] = {} if options is None else options
        self.avro_schema: Final = avro_schema
        self.schema_id: Final = schema_id
        self.key_schema_ids: Final = key_schema_ids
        self.fields_prefix: Final = fields_prefix
        self.partitioner: Final = partitioner
        self.partitions: Final = partitions
        self.schema: Final = schema
        partitioner_family(partitioner)
        parts = avro_only_parts(row_type)
        if parts and not self.is_avro:
            path, t = parts[0]
            raise UnsupportedTypeError(
                f"key column '{path}' is an Avro {t.what}, which the {self.format} key format "
                "cannot write: no Flink column type holds it",
                hint="only the avro and avro-confluent key formats write such keys",
            )

    @property
    def schema_text(self) -> str | None:
        """The text of `schema` (what a registry holds), when known."""
        s = self.schema
        text = s if isinstance(s, str) else getattr(s, "text", None)
        return text if isinstance(text, str) else None

    @property
    def is_avro(self) -> bool:
        """The format writes Avro (its key rules are the Avro family's)."""
        return bool(factory(self.format).writes_avro)

    @property
    def frame(self) -> Frame:
        """The side's key frame: its format's `framing` option's, else the format's own
        (`FormatFactory.frame_of`), its header named for the key."""
        frame: Frame = factory(self.format).frame_of(self.options, "key")
        return frame

    @property
    def carries_schema_id(self) -> bool:
        """Each key is written with a registry schema id (in its bytes or in a header)."""
        return bool(self.frame.carries_schema_id)

    @property
    def id_in_bytes(self) -> bool:
        """The schema id is in every key's bytes (a prefix framing), not in a record header:
        only then does a new schema id change the key's bytes."""
        frame = self.frame
        return bool(frame.carries_schema_id and not frame.id_in_header)

    def body_only(self) -> KeySide:
        """The side without its `framing` option: what the key family's rules compare (the
        body), the frame being judged on its own (`keyguard.guard.keys.confluent`)."""
        if "framing" not in self.options:
            return self
        return self.replace(options={k: v for k, v in self.options.items() if k != "framing"})

    @property
    def key_family(self) -> str:
        """Which key rules judge this side's bytes: "avro", "json", "csv", "raw", "protobuf"."""
        return str(factory(self.format).key_family)

    @property
    def partitioner_family(self) -> str:
        return partitioner_family(self.partitioner)

    @classmethod
    def from_avro(cls, format: str, schema: Any, **kw: Any) -> KeySide:
        """A side whose row type is derived from an Avro key schema (a dict or JSON text)."""

        parsed = json.loads(schema) if isinstance(schema, (str, bytes)) else schema
        rt = from_avro_schema(parsed)
        if not isinstance(rt, RowType):
            raise SchemaError("an Avro key schema must be a record",
                              hint="Flink's avro formats write a key row as an Avro record")
        return cls(format=format, row_type=rt.not_null(), avro_schema=parsed, **kw)


class FieldPair(Value):
    """An old key field and what became of it; `old` or `new` is None when added/removed."""

    __slots__ = ("new", "new_index", "old", "old_index")
    FIELDS = ("old", "new", "old_index", "new_index")
    old: Final[Field | None]
    new: Final[Field | None]
    old_index: Final[int | None]
    new_index: Final[int | None]

    def __init__(self, old: Field | None, new: Field | None, old_index: int | None,
                 new_index: int | None) -> None:
        self.old = old
        self.new = new
        self.old_index = old_index
        self.new_index = new_index

    @property
    def path(self) -> str:
        f = self.new or self.old
        assert f is not None
        return f.name

    @property
    def renamed(self) -> bool:
        return self.old is not None and self.new is not None and self.old.name != self.new.name


def pair_fields(
    old: tuple[Field, ...], new: tuple[Field, ...], aliases: Mapping[str, str] | None = None
) -> list[FieldPair]:
    """Pair old and new fields: by name (or alias), then leftovers at the same position (renames).

    The positional step matches how csv, raw and Avro binary see a rename: the value moves to
    the field at the same place. `aliases` maps a new field name to the old name it replaces.
    """
    old_by_name = {f.name: i for i, f in enumerate(old)}
    pairs: dict[int, FieldPair] = {}
    used_old: set[int] = set()
    for j, f in enumerate(new):
        i = old_by_name.get(f.name)
        if i is None and aliases and aliases.get(f.name) in old_by_name:
            i = old_by_name[aliases[f.name]]
        if i is not None and i not in used_old:
            pairs[j] = FieldPair(old[i], f, i, j)
            used_old.add(i)
    for j, f in enumerate(new):
        if j in pairs:
            continue
        if j < len(old) and j not in used_old and old[j].name not in {g.name for g in new}:
            pairs[j] = FieldPair(old[j], f, j, j)
            used_old.add(j)
        else:
            pairs[j] = FieldPair(None, f, None, j)
    out = [pairs[j] for j in range(len(new))]
    out += [FieldPair(f, None, i, None) for i, f in enumerate(old) if i not in used_old]
    return out


def reordered(pairs: list[FieldPair]) -> bool:
    """Whether fields present on both sides appear in another relative order."""
    kept = [p for p in pairs if p.old_index is not None and p.new_index is not None]
    olds = [p.old_index for p in sorted(kept, key=lambda p: p.new_index or 0)]
    return olds != sorted(olds)  # type: ignore[type-var]


class Change(Value):
    """What a structural rule found, before the witness search proves it with a key."""

    __slots__ = ("advice", "by_example", "message", "path", "placement", "rule", "safe_rule",
                 "witness")
    FIELDS = ("rule", "path", "message", "placement", "by_example", "safe_rule", "witness",
              "advice")
    rule: Final[Rule]
    #: Schema path (`region`, `address.zip`, `$` for the whole key) or an option name.
    path: Final[str]
    message: Final[str]
    #: The witness must show a different partition (placement rules), not just bytes.
    placement: Final[bool]
    #: No structural rule decides: breaking only if a witness is found, else `safe_rule`.
    by_example: Final[bool]
    safe_rule: Final[Rule]
    #: A witness the family built itself (a key encoded by both sides' schemas), used as is.
    witness: Final[Witness | None]
    #: The durable way out, beyond this change's migration (the finding's `advice`).
    advice: Final[str | None]

    def __init__(self, rule: Rule, path: str, message: str, placement: bool = False,
                 by_example: bool = False, safe_rule: Rule = FORMAT_OPTION_NO_KEY_EFFECT,
                 witness: Witness | None = None, advice: str | None = None) -> None:
        self.rule = rule
        self.path = path
        self.message = message
        self.placement = placement
        self.by_example = by_example
        self.safe_rule = safe_rule
        self.witness = witness
        self.advice = advice

    @property
    def rule_id(self) -> str:
        return self.rule.id


def effective_options(side: KeySide) -> dict[str, Any]:
    """The side's format options with every declared default filled in (no validation here)."""
    declared = factory(side.format).options
    out: dict[str, Any] = {}
    for opt in declared:
        raw = None
        for k in (opt.key, *opt.fallback_keys):
            if k in side.options:
                raw = side.options[k]
        out[opt.key] = opt.default if raw is None else opt.parse(raw, where="key format")
    for k, v in side.options.items():
        if not any(k == o.key or k in o.fallback_keys for o in declared):
            out[k] = v
    return out


def factory(format_name: str) -> Any:
    """The format's factory (`keyguard.formats.codec.format_factory` imports only that format)."""

    return format_factory(format_name)


class FamilyContext(Value):
    """What a key family's rules get besides the two sides (see `FamilyRules`)."""

    __slots__ = ("battery_option", "by_example", "topic")
    FIELDS = ("topic", "by_example", "battery_option")
    topic: Final[str | None]
    #: False when only the schemas can be judged (a key with no row type): no example keys.
    by_example: Final[bool]
    #: Judges an option without a specific rule by encoding example keys with only it changed:
    #: (old side, option, old value, new value) -> the change.
    battery_option: Final[Callable[[KeySide, str, Any, Any], Change]]

    def __init__(self, topic: str | None, by_example: bool,
                 battery_option: Callable[[KeySide, str, Any, Any], Change]) -> None:
        self.topic = topic
        self.by_example = by_example
        self.battery_option = battery_option


#: A key family's rules: `family_changes(old, new, ctx)` in `guard/keys/<family>.py`.
FamilyRules = Callable[[KeySide, KeySide, FamilyContext], Iterator[Change]]
