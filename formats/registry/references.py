"""Schema references: a registered schema naming types defined by other subjects.

A reference is Confluent's `{"name", "subject", "version"}`. For Avro, `name` is the full name
of a named type the referenced version defines, used as a type by the referencing schema; for
JSON Schema, `name` is the URI (absolute, or relative to the schema's `$id`) a `$ref` uses for
the referenced document.

The analysis (row types, the guard, the value check, the Avro writer) works on the *standalone*
form: the referenced definitions brought into the schema. Avro: each referenced named type is
inlined at its first use, full names kept. JSON Schema: each referenced document is bundled under
`$defs` and the `$ref`s to it rewritten to JSON pointers, so only local references remain. The
registered text and its references stay the schema's identity: two schemas with one text and
different references are two schemas (as in Confluent's registry).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urljoin

from keyguard.formats.avro_vocab import NAMED as _NAMED
from keyguard.formats.avro_vocab import PRIMITIVES as _PRIMITIVES
from keyguard.formats.avro_vocab import full_name as _fullname
from keyguard.formats.errors import RegistryError, SchemaError, UsageError
from keyguard.formats.immutable import Value
from keyguard.formats.schema_identity import avro_canonical as _avro_canonical
from keyguard.formats.schemajson import loads_schema

if TYPE_CHECKING:
    from keyguard.formats.registry import Registry

_OPTION = re.compile(r"^(?P<name>[^=]+)=(?P<subject>.+):(?P<version>[1-9][0-9]*)$")
#: Where bundled JSON Schema documents go, one key per reference.
_BUNDLE = "$defs"
_REF_LIMIT = 32


class Reference(Value):
    """One of a schema's references, as the registry stores it."""

    __slots__ = ("name", "subject", "version")
    FIELDS = ("name", "subject", "version")
    name: Final[str]
    subject: Final[str]
    version: Final[int]

    def __init__(self, name: str, subject: str, version: int) -> None:
        self.name = name
        self.subject = subject
        self.version = version

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "subject": self.subject, "version": self.version}

    def __str__(self) -> str:
        return f"'{self.name}' (subject '{self.subject}' version {self.version})"


class ResolvedReference(Value):
    """A reference with the referenced schema, itself in standalone form."""

    __slots__ = ("reference", "schema_type", "standalone")
    FIELDS = ("reference", "schema_type", "standalone")
    reference: Final[Reference]
    schema_type: Final[str]
    standalone: Final[str]

    def __init__(self, reference: Reference, schema_type: str, standalone: str) -> None:
        self.reference = reference
        self.schema_type = schema_type
        self.standalone = standalone


_REFERENCES_HINT = ('write a JSON list of {"name": ..., "subject": ..., "version": N} objects, '
                    "one per referenced type or document")


def parse_references(raw: object, where: str) -> tuple[Reference, ...]:
    """References from JSON data (a list of objects, or SchemaVersion.references)."""
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise SchemaError(f"{where}: references must be a list, not {type(raw).__name__}",
                          hint=_REFERENCES_HINT)
    out = [item if isinstance(item, Reference)
           else _parse_reference(item, f"{where}: reference [{i}]")
           for i, item in enumerate(raw)]
    names = [r.name for r in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SchemaError(f"{where}: reference name '{dup[0]}' is given twice",
                          hint="each reference name maps to one subject version")
    return tuple(out)


def _parse_reference(item: object, where: str) -> Reference:
    """One reference from its JSON object; `where` names it (`...: reference [i]`)."""
    hint = _REFERENCES_HINT
    if not isinstance(item, Mapping):
        raise SchemaError(f"{where} is {type(item).__name__}, not an object", hint=hint)
    missing = [k for k in ("name", "subject", "version") if k not in item]
    if missing:
        raise SchemaError(f"{where} has no {', '.join(missing)}", hint=hint)
    name, subject, version = item["name"], item["subject"], item["version"]
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(f"{where} name must be a non-empty string", hint=hint)
    if not isinstance(subject, str) or not subject.strip():
        raise SchemaError(f"{where} ('{name}') subject must be a non-empty string", hint=hint)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SchemaError(f"{where} ('{name}') version must be a positive integer, not "
                          f"{version!r}",
                          hint="name the exact version the reference was registered with")
    unknown = sorted(set(item) - {"name", "subject", "version"})
    if unknown:
        raise SchemaError(f"{where} ('{name}') has unknown key(s) {', '.join(unknown)}",
                          hint=hint)
    return Reference(name, subject, version)


def parse_reference_option(text: str) -> Reference:
    """`NAME=SUBJECT:VERSION`, the CLI's `--reference`."""
    m = _OPTION.match(text.strip())
    if not m:
        raise UsageError(f"--reference {text!r}: expected NAME=SUBJECT:VERSION",
                         hint="e.g. --reference com.acme.Address=address-value:1 "
                         "(VERSION is a number)")
    return Reference(m["name"].strip(), m["subject"].strip(), int(m["version"]))


def sidecar_references(schema_path: str | Path) -> tuple[Reference, ...]:
    """The references in `<file>.refs.json` next to a schema file, () when there is none."""
    side = Path(f"{schema_path}.refs.json")
    try:
        text = side.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaError(f"cannot read references file {side}: {exc}",
                          hint="references files are JSON text in UTF-8") from None
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SchemaError(f"{side}: not valid JSON: {exc}",
                          hint='write a JSON list such as [{"name": "com.acme.Address", '
                          '"subject": "address-value", "version": 1}]') from None
    return parse_references(raw, str(side))


# --- resolving through a registry ------------------------------------------------------------


def resolve(
    registry: Registry | None,
    references: Iterable[Reference],
    *,
    origin: str,
    schema_type: str,
    _chain: tuple[tuple[str, int], ...] = (),
) -> tuple[ResolvedReference, ...]:
    """Each reference's schema read from `registry`, references of references included.

    A reference whose subject or version is absent, whose type differs, or (Avro) whose name the
    referenced version does not define, is a RegistryError naming `origin` and the reference.
    """
    refs = tuple(references)
    if not refs:
        return ()
    if registry is None:
        raise UsageError(f"{origin}: the schema has references ({', '.join(map(str, refs))}), "
                         "which are read from a registry",
                         hint="give --registry (or the format's url) holding the referenced "
                         "subjects")
    out: list[ResolvedReference] = []
    for ref in refs:
        key = (ref.subject, ref.version)
        if key in _chain or len(_chain) >= _REF_LIMIT:
            raise RegistryError(f"{origin}: reference {ref} refers back to itself "
                                f"({' -> '.join(f'{s} v{v}' for s, v in (*_chain, key))})",
                                hint="references must form no cycle")
        try:
            sv = registry.get_version(ref.subject, ref.version)
        except RegistryError as exc:
            if exc.exit_code != RegistryError.exit_code:
                raise  # unreachable, auth: not a missing reference
            raise RegistryError(
                f"{origin}: reference {ref} cannot be resolved: {exc.message}",
                hint=f"register version {ref.version} of subject '{ref.subject}' first, or "
                "fix the reference") from None
        where = f"{sv.subject} v{sv.version}"
        if sv.schema_type.upper() != schema_type.upper():
            raise RegistryError(
                f"{origin}: reference {ref} is a {sv.schema_type} schema, not {schema_type}",
                hint="a schema can only reference schemas of its own type")
        inner = resolve(registry, parse_references(list(sv.references), where), origin=where,
                        schema_type=sv.schema_type, _chain=(*_chain, key))
        text = standalone(sv.schema, sv.schema_type, inner, origin=where)
        if sv.schema_type.upper() == "AVRO" and ref.name not in avro_named_types(text):
            defined = ", ".join(sorted(avro_named_types(text))) or "no named types"
            raise RegistryError(
                f"{origin}: reference {ref}: {where} does not define a type named "
                f"'{ref.name}' (it defines {defined})",
                hint="an Avro reference's name is the full name of a record, enum or fixed "
                "defined by the referenced version")
        out.append(ResolvedReference(ref, sv.schema_type.upper(), text))
    return tuple(out)


def standalone(text: str, schema_type: str, resolved: Sequence[ResolvedReference], *,
               origin: str) -> str:
    """`text` with the referenced definitions brought in (see the module doc)."""
    if not resolved:
        return text
    if schema_type.upper() == "PROTOBUF":  # imports stay imports: the files travel beside it
        from keyguard.formats.protobuf_schema import bundle  # lazy: only for a Protobuf schema

        return bundle(text, {str(r.reference.name): r.standalone for r in resolved})
    if schema_type.upper() not in ("AVRO", "JSON"):
        return text
    data = loads_schema(text, origin)
    if schema_type.upper() == "AVRO":
        available: dict[str, Any] = {}
        for r in resolved:
            for name, node in _avro_definitions(json.loads(r.standalone)):
                available.setdefault(name, node)
        return json.dumps(_AvroInliner(available).walk(data, None, False))
    if schema_type.upper() == "JSON":
        return json.dumps(_json_bundle(data, resolved))
    return text


# --- Avro ---------------------------------------------------------------------------------------


def _avro_definitions(node: Any, ns: str | None = None) -> Iterable[tuple[str, Any]]:
    """(full name, self-contained definition) of every named type defined in `node`."""
    if isinstance(node, list):
        for n in node:
            yield from _avro_definitions(n, ns)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind in _NAMED and isinstance(node.get("name"), str):
        full = _fullname(node["name"], node.get("namespace", ns))
        yield full, _avro_canonical(node, ns)
        inner = full.rpartition(".")[0] or None
        for f in node.get("fields") or []:
            if isinstance(f, dict):
                yield from _avro_definitions(f.get("type"), inner)
    elif kind == "array":
        yield from _avro_definitions(node.get("items"), ns)
    elif kind == "map":
        yield from _avro_definitions(node.get("values"), ns)
    elif isinstance(kind, (dict, list)):
        yield from _avro_definitions(kind, ns)


def avro_named_types(text: str) -> set[str]:
    try:
        return {name for name, _ in _avro_definitions(json.loads(text))}
    except (ValueError, RecursionError):
        return set()


class _AvroInliner:
    """Inlines each referenced named type at its first use; later uses keep the name."""

    def __init__(self, available: dict[str, Any]) -> None:
        self.available = available
        self.defined: set[str] = set()

    def walk(self, node: Any, ns: str | None, inlined: bool) -> Any:
        if isinstance(node, str):
            return self.name(node, ns)
        if isinstance(node, list):
            return [self.walk(n, ns, inlined) for n in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind in _NAMED and isinstance(node.get("name"), str):
            return self.definition(node, ns, inlined)
        out = dict(node)
        if kind == "array" and "items" in node:
            out["items"] = self.walk(node["items"], ns, inlined)
        elif kind == "map" and "values" in node:
            out["values"] = self.walk(node["values"], ns, inlined)
        elif isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in _PRIMITIVES):
            out["type"] = self.walk(kind, ns, inlined)
        return out

    def name(self, node: str, ns: str | None) -> Any:
        """A type used by name: its definition at the first use of a referenced type."""
        if node in _PRIMITIVES:
            return node
        full = _fullname(node, ns)
        if full in self.defined or full not in self.available:
            return node  # defined already, or unknown: the parser names it
        definition = dict(self.available[full])
        if "." not in full and ns:
            definition["namespace"] = ""  # keep a null-namespace name out of ours
        return self.walk(definition, None, True)

    def definition(self, node: dict[str, Any], ns: str | None, inlined: bool) -> Any:
        """A named type defined here; in an inlined definition, one defined already is named."""
        full = _fullname(node["name"], node.get("namespace", ns) or None)
        if inlined and full in self.defined:
            return full
        self.defined.add(full)
        inner = full.rpartition(".")[0] or None
        out = dict(node)
        if isinstance(node.get("fields"), list):
            out["fields"] = [
                {**f, "type": self.walk(f["type"], inner, inlined)}
                if isinstance(f, dict) and "type" in f else f
                for f in node["fields"]
            ]
        return out


# --- JSON Schema ----------------------------------------------------------------------------------


def _json_bundle(doc: Any, resolved: Sequence[ResolvedReference]) -> Any:
    if not isinstance(doc, dict):
        return doc
    base = doc["$id"] if isinstance(doc.get("$id"), str) else ""
    keys: dict[str, str] = {}
    bundle: dict[str, Any] = {}
    for i, r in enumerate(resolved):
        key = f"keyguard-reference-{i}"
        keys[urljoin(base, r.reference.name)] = key
        embedded = json.loads(r.standalone)
        if isinstance(embedded, dict):
            embedded = {k: v for k, v in embedded.items() if k not in ("$id", "$schema", "id")}
            embedded = _rewrite(embedded, lambda ref, key=key: (
                f"#/{_BUNDLE}/{key}{ref[1:]}" if ref.startswith("#") else ref))
        bundle[key] = embedded

    def to_local(ref: str) -> str:
        uri, _, fragment = ref.partition("#")
        key = keys.get(urljoin(base, uri)) if uri else None
        return f"#/{_BUNDLE}/{key}{fragment}" if key else ref

    out = _rewrite(doc, to_local)
    defs = out.get(_BUNDLE)
    out[_BUNDLE] = {**(defs if isinstance(defs, dict) else {}), **bundle}
    return out


def _rewrite(node: Any, change: Any) -> Any:
    if isinstance(node, list):
        return [_rewrite(n, change) for n in node]
    if not isinstance(node, dict):
        return node
    return {k: (change(v) if k == "$ref" and isinstance(v, str) else _rewrite(v, change))
            for k, v in node.items()}
