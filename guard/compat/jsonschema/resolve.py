"""Parse a JSON Schema and replace every `$ref` by the schema it names.

Resources bundled in the schema (a `$defs`/`definitions` entry with its own `$id`) are registered
before any `$ref` is followed, so `{"$ref": "https://example.com/address"}` resolves to the
embedded `{"$id": "https://example.com/address", ...}` as the registry resolves it. Up to draft 7
(and so without `$schema`) a subschema with an `$id` is a resource wherever it sits, `$defs`
included, as Confluent's draft-7 loader (Everit) finds every `$id` in the document. A `$ref`
with sibling assertions (`{"$ref": "#/$defs/a", "maxLength": 3}`) means both, as in draft
2019-09 and later: it becomes `allOf` of the target and the siblings. Up to draft 7 the siblings
of a `$ref` are ignored, as the specification (and Confluent's draft-7 loader) ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urldefrag, urljoin

from referencing import Registry, Resource, Specification
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT7, DRAFT201909, DRAFT202012, specification_with

from keyguard.formats.errors import SchemaError
from keyguard.formats.json_schema import validate_json_schema
from keyguard.formats.schemajson import check_depth, loads_schema


class Resolver(Protocol):
    """What the walk uses of `referencing`'s resolver (`Registry.resolver()`; its class is
    not public)."""

    def lookup(self, ref: str) -> Any: ...

    def in_subresource(self, subresource: Any) -> Resolver: ...


#: Keywords next to a `$ref` that assert nothing about the value.
_ANNOTATIONS = frozenset({
    "$ref", "$id", "id", "$schema", "$comment", "$anchor", "$dynamicAnchor", "$defs",
    "definitions", "$vocabulary", "title", "description", "default", "examples", "deprecated",
    "readOnly", "writeOnly",
})


@dataclass(frozen=True)
class JsonSchema:
    """A parsed JSON Schema with every `$ref` replaced by the schema it points to.

    Recursive references become cycles of shared dicts, which the walk detects.
    """

    root: Any
    source: Any


def parse(schema: Any) -> JsonSchema:
    """Parse JSON text or a decoded schema, check it against its metaschema, inline `$ref`s."""
    source = schema
    if isinstance(schema, bytes):
        schema = schema.decode()
    if isinstance(schema, str):
        schema = loads_schema(schema, "invalid JSON Schema")
    else:
        check_depth(schema, "invalid JSON Schema")
    validate_json_schema(schema)
    if isinstance(schema, bool):
        return JsonSchema(root=schema, source=source)
    spec = specification_with(schema.get("$schema", ""), default=DRAFT7)
    resource = spec.create_resource(schema)
    base_uri = schema.get("$id", "") if isinstance(schema.get("$id"), str) else ""
    resources = [(base_uri, resource)]
    if spec not in (DRAFT201909, DRAFT202012):
        resources += _embedded(schema, spec, base_uri)
    try:
        registry = Registry().with_resources(resources).crawl()
    except (Unresolvable, NoSuchResource, ValueError, TypeError, AttributeError) as err:
        # e.g. a subschema that declares another draft's $schema and is not valid under it
        raise SchemaError(
            "invalid JSON Schema: cannot index its embedded resources "
            f"({type(err).__name__}: {err})",
            hint="give each embedded schema a distinct absolute $id, and declare $schema only "
            "where the subschema is valid under that draft",
        ) from err
    inliner = _Inliner(siblings_apply=spec in (DRAFT201909, DRAFT202012))
    root = inliner.inline_root(schema, registry.resolver(base_uri))
    return JsonSchema(root=root, source=source)


#: Keywords whose values are data, not schemas: an `$id` inside them names nothing.
_DATA = frozenset({"enum", "const", "default", "examples"})


def _embedded(schema: dict[str, Any], spec: Specification[Any],
              base_uri: str) -> list[tuple[str, Resource[Any]]]:
    """Every subschema below the root with its own `$id` (draft 4: `id`), by absolute URI,
    wherever it sits: drafts up to 7 know `definitions` only, yet Confluent's loader resolves a
    `$ref` to the `$id` of a schema bundled under `$defs` (or any other keyword)."""
    found: list[tuple[str, Resource[Any]]] = []

    def walk(node: Any, base: str) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, base)
            return
        if not isinstance(node, dict):
            return
        ident = spec.id_of(node)
        if isinstance(ident, str) and ident:
            uri, fragment = urldefrag(urljoin(base, ident))
            if not fragment:  # `"$id": "#name"` is an anchor, not a resource
                base = uri
                found.append((uri, spec.create_resource(node)))
        for key, child in node.items():
            if key not in _DATA:
                walk(child, base)

    for key, child in schema.items():
        if key not in _DATA:
            walk(child, base_uri)
    return found


class _Inliner:
    """Replaces each `$ref` object by the (inlined) schema it names."""

    def __init__(self, *, siblings_apply: bool) -> None:
        self.done: dict[int, Any] = {}
        self.siblings_apply = siblings_apply

    def inline_root(self, schema: dict[str, Any], resolver: Resolver) -> dict[str, Any]:
        """Inline the root so that a `$ref` back to it ("#") closes the cycle at the top."""
        root: dict[str, Any] = {}
        self.done[id(schema)] = root
        inlined = self.inline(schema, resolver, "")
        root.update(inlined if isinstance(inlined, dict) else {"allOf": [inlined]})
        return root

    def inline(self, node: Any, resolver: Resolver, at: str) -> Any:
        if isinstance(node, list):
            return [self.inline(item, resolver, f"{at}/{i}") for i, item in enumerate(node)]
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("$id"), str) and node["$id"]:
            resolver = resolver.in_subresource(DRAFT7.create_resource(node))
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return {key: self.inline(value, resolver, f"{at}/{_escape(key)}")
                    for key, value in node.items()}
        try:
            resolved = resolver.lookup(ref)
        except (Unresolvable, AttributeError, TypeError, ValueError) as err:
            raise SchemaError(
                f"invalid JSON Schema at {at}/$ref: cannot resolve $ref {ref!r}",
                hint="only references inside the schema itself are supported: the root, a "
                "JSON pointer into it, or a resource bundled in $defs with its own $id",
            ) from err
        target = resolved.contents
        if isinstance(target, dict):
            if id(target) not in self.done:
                placeholder: dict[str, Any] = {}
                self.done[id(target)] = placeholder
                inlined = self.inline(target, resolved.resolver, f"{at}/$ref")
                placeholder.update(inlined if isinstance(inlined, dict) else {"allOf": [inlined]})
            target = self.done[id(target)]
        siblings = {k: v for k, v in node.items() if k not in _ANNOTATIONS}
        if not siblings or not self.siblings_apply:
            return target
        return {"allOf": [target, self.inline(siblings, resolver, at)]}


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
