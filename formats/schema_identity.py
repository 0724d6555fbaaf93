"""Schema identity: when two schema texts are one schema, and the ids and fingerprints of one.

Pure (no I/O): the registry backends (`keyguard.formats.registry.file`,
`keyguard.formats.registry.mock`) and the pure analysis (`keyguard.guard.diff`,
`keyguard.guard.gate`, `keyguard.guard.keys`) ask the same questions here.

`canonical_form` is a registry's notion of "the same schema", not Avro's Parsing Canonical
Form: that drops logical types, defaults and docs, which would give `decimal(10,2)` and
`decimal(12,4)` one id. Here names become full names, `{"type": "int"}` becomes `"int"`,
object keys are sorted and whitespace dropped; everything else is kept. JSON Schemas are
compared as sorted, compact JSON; Protobuf by its compiled descriptor (protoc's
FileDescriptorProto in text form: comments and layout do not count), or by stripped lines
when it has references (their imports cannot be compiled here). References are part of the
identity, as in Confluent's registry.

`derived_schema_id` is the id a registry without one assigns (31 bits of a SHA-256 of type +
canonical text): the same on every run and machine, and the same schema gets the same id in
every subject, as Confluent's. `parsing_canonical_form` and `fingerprint` are Avro's own
(equal for schemas that read and write the same bytes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keyguard.formats.avro_vocab import NAMED, PRIMITIVES, full_name
from keyguard.formats.errors import SchemaError
from keyguard.formats.registry import SCHEMA_TYPES
from keyguard.formats.schemajson import loads_schema

if TYPE_CHECKING:
    from keyguard.formats.registry import SchemaVersion


def avro_canonical(node: Any, namespace: str | None) -> Any:
    """An Avro schema node with full names and short primitives (see the module docstring)."""
    if isinstance(node, str):
        return node if node in PRIMITIVES else full_name(node, namespace)
    if isinstance(node, list):
        return [avro_canonical(n, namespace) for n in node]
    if not isinstance(node, dict):
        raise ValueError(f"unexpected {type(node).__name__} where a type was expected")
    kind = node.get("type")
    out = dict(node)
    if kind in NAMED:
        name = full_name(str(node["name"]), node.get("namespace", namespace))
        out.pop("namespace", None)
        out["name"] = name
        inner_ns = name.rpartition(".")[0] or None
        if "fields" in node:
            out["fields"] = [
                {**f, "type": avro_canonical(f["type"], inner_ns)} for f in node["fields"]
            ]
        return out
    if kind == "array":
        out["items"] = avro_canonical(node["items"], namespace)
    elif kind == "map":
        out["values"] = avro_canonical(node["values"], namespace)
    elif isinstance(kind, str) and kind in PRIMITIVES and len(node) == 1:
        return kind
    else:
        out["type"] = avro_canonical(kind, namespace)
    return out


def canonical_form(schema: str, schema_type: str = "AVRO", *, where: str = "schema",
                   references: Sequence[Mapping[str, object]] = ()) -> str:
    """The text two schemas share exactly when a registry would treat them as one schema.

    With `references`, they are appended (two schemas with one text and different references
    are two schemas), and an Avro schema is not parsed here: its referenced names are unknown
    until the references are resolved (`keyguard.formats.registry.references`).
    """
    schema_type = schema_type.upper()
    if references:
        refs = json.dumps([dict(r) for r in references], sort_keys=True, separators=(",", ":"))
        return _canonical(schema, schema_type, where, False) + "\0refs" + refs
    return _canonical(schema, schema_type, where, True)


def _canonical(schema: str, schema_type: str, where: str, parse: bool) -> str:
    if schema_type == "PROTOBUF":
        if parse:
            # lazy: protoc, only when a Protobuf schema is compared
            from keyguard.formats.protobuf_schema import canonical_proto

            return canonical_proto(schema, where)
        # With references the imports are unknown here: the text, its lines stripped.
        return "\n".join(line.strip() for line in schema.strip().splitlines() if line.strip())
    if schema_type not in SCHEMA_TYPES:
        raise SchemaError(f"{where}: unknown schema type {schema_type!r}",
                          hint="use one of " + ", ".join(SCHEMA_TYPES))
    parsed = loads_schema(schema, where)  # bad JSON or absurd nesting: a SchemaError naming it
    if schema_type == "AVRO":
        import fastavro  # third-party, only when an Avro schema is compared

        try:
            if parse:
                fastavro.parse_schema(parsed, _write_hint=False)
            parsed = avro_canonical(parsed, None)
        except Exception as exc:  # fastavro raises several unrelated types
            raise SchemaError(f"{where}: not a valid Avro schema: {exc}") from None
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def same_schema(
    versions: Iterable[SchemaVersion], schema: str, schema_type: str = "AVRO",
    references: Sequence[Mapping[str, object]] = (),
) -> SchemaVersion | None:
    """The first of `versions` that a registry would treat as `schema` (canonical forms equal)."""
    want = canonical_form(schema, schema_type, references=references)
    for sv in versions:
        if sv.schema_type == schema_type.upper() and \
                canonical_form(sv.schema, sv.schema_type, references=sv.references) == want:
            return sv
    return None


def derived_schema_id(schema: str, schema_type: str = "AVRO",
                      references: Sequence[Mapping[str, object]] = ()) -> int:
    """A positive 31-bit id that depends only on the schema's type and canonical form."""
    import hashlib  # here, not at the top: OpenSSL's start-up would slow every CLI command

    text = f"{schema_type.upper()}\0{canonical_form(schema, schema_type, references=references)}"
    value = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF
    return value or 1


#: The namespace of the GUIDs derived below (`uuid.uuid5`): fixed, so a GUID never changes.
GUID_NAMESPACE = "6b5e1f0c-4c1e-5b7a-9d3e-8a2f0c7d4e61"


def derived_guid(schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> str:
    """A GUID that depends only on the schema's type and canonical form (references included):
    `uuid5(GUID_NAMESPACE, TYPE + NUL + canonical form)`. Like Confluent's, it names the
    schema, not a subject's version: one schema has one GUID in every subject."""
    import uuid

    text = f"{schema_type.upper()}\0{canonical_form(schema, schema_type, references=references)}"
    return str(uuid.uuid5(uuid.UUID(GUID_NAMESPACE), text))


def parsing_canonical_form(schema: Any) -> str:
    """Avro's Parsing Canonical Form of a parsed Avro schema
    (`keyguard.formats.avro_schema.parse_avro`): equal for schemas that read and write the same
    bytes."""
    import fastavro  # third-party, only when asked
    from fastavro.schema import to_parsing_canonical_form

    return str(to_parsing_canonical_form(fastavro.parse_schema(schema, _write_hint=False)))


def fingerprint(schema: Any, algorithm: str = "CRC-64-AVRO") -> str:
    """Hex fingerprint of a parsed Avro schema's Parsing Canonical Form (CRC-64-AVRO, MD5 or
    SHA-256)."""
    from fastavro.schema import fingerprint as _fp

    return str(_fp(parsing_canonical_form(schema), algorithm))
