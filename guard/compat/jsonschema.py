"""JSON Schema reader/writer compatibility, as Confluent-compatible registries decide it.

The rules are those of Confluent's `JsonSchemaDiff` as Karapace re-implements them
(`karapace/compatibility/jsonschema/checks.py`), the reference of the conformance vectors:
a reader can read a writer when every value the writer accepts is accepted by the reader.
Where the two registries disagree we take the stricter verdict, so that a change keyguard
passes is accepted by both: a `false` reader never reads a non-`false` writer (Confluent);
`true` and `false` are read, and `true` reads, only like object schemas (Karapace; Confluent
lets an empty or `true` reader read anything, and anything read a `false` writer).

Kept from Karapace, whose tests are the conformance vectors: `{}` is an object schema; a
`type` keyword hides a sibling `enum`; a property added to an open content model, items added
to a tuple, or an `additionalProperties` introduced are incompatible whatever their schema.
Checked as Confluent does where Karapace's code does not do what it means (no vector depends
on these): `multipleOf`, `uniqueItems`, `dependencies`, tuple `additionalItems`, a property
made required through the `required` list, a new required property with a default (fine);
`patternProperties` match anywhere in the name (JSON Schema regexes are unanchored); `not` is
compared both ways (Confluent reverses the negated schemas, Karapace does not).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from referencing import Registry
from referencing._core import Resolver
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7, specification_with

from formats.errors import SchemaError
from formats.json_schema import validate_json_schema
from formats.schemajson import check_depth, loads_schema
from guard.compat.levels import Incompatibility, PairChecker

COMBINERS = ("allOf", "anyOf", "oneOf")
BOOLEAN_SCHEMA = "boolean schema"
NUMBERS = ("number", "integer")

Path = tuple[str, ...]


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
    resolver = Registry().with_resource(base_uri, resource).resolver(base_uri)
    try:
        root = _Inliner().inline_root(schema, resolver)
    except Unresolvable as err:
        raise SchemaError(
            f"invalid JSON Schema: cannot resolve $ref {err.ref!r}",
            hint="only references inside the schema itself are supported",
        ) from err
    return JsonSchema(root=root, source=source)


class _Inliner:
    """Replaces each `$ref` object by the (inlined) schema it names; siblings are ignored."""

    def __init__(self) -> None:
        self.done: dict[int, Any] = {}

    def inline_root(self, schema: dict[str, Any], resolver: Resolver) -> dict[str, Any]:
        """Inline the root so that a `$ref` back to it ("#") closes the cycle at the top."""
        root: dict[str, Any] = {}
        self.done[id(schema)] = root
        inlined = self.inline(schema, resolver)
        root.update(inlined if isinstance(inlined, dict) else {"allOf": [inlined]})
        return root

    def inline(self, node: Any, resolver: Resolver) -> Any:
        if isinstance(node, list):
            return [self.inline(item, resolver) for item in node]
        if not isinstance(node, dict):
            return node
        if isinstance(node.get("$id"), str) and node["$id"]:
            resolver = resolver.in_subresource(DRAFT7.create_resource(node))
        ref = node.get("$ref")
        if isinstance(ref, str):
            resolved = resolver.lookup(ref)
            target = resolved.contents
            if not isinstance(target, dict):
                return target
            if id(target) not in self.done:
                placeholder: dict[str, Any] = {}
                self.done[id(target)] = placeholder
                inlined = self.inline(target, resolved.resolver)
                placeholder.update(inlined if isinstance(inlined, dict) else {"allOf": [inlined]})
            return self.done[id(target)]
        return {key: self.inline(value, resolver) for key, value in node.items()}


def _type_of(schema: Any) -> str:
    """Karapace's classification: a combiner, `not`, an instance type, `enum`, or object."""
    if schema is None:
        return "null"
    if isinstance(schema, bool):
        return BOOLEAN_SCHEMA
    split = _subschemas(schema)
    if split is not None:
        return split[1]
    if schema.get("type"):
        return str(schema["type"])
    if "enum" in schema:
        return "enum"
    return "object"


def _subschemas(schema: Any) -> tuple[list[Any], str] | None:
    """The subschemas of a combined schema; a list of types counts as `anyOf` of one each."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("type"), list):
        return [{**schema, "type": t} for t in schema["type"]], "anyOf"
    for keyword in COMBINERS:
        if schema.get(keyword) is not None:
            return list(schema[keyword]), keyword
    if schema.get("not") is not None:
        return [schema["not"]], "not"
    return None


@dataclass(frozen=True)
class _Bound:
    """One numeric/length assertion: adding it, or moving it the wrong way, narrows values."""

    keyword: str
    added: str
    narrowed: str
    narrows: Callable[[Any, Any], bool]  # (reader value, writer value) -> narrower?


def _lower(reader: Any, writer: Any) -> bool:
    return bool(reader < writer)


def _higher(reader: Any, writer: Any) -> bool:
    return bool(reader > writer)


def _differs(reader: Any, writer: Any) -> bool:
    return bool(reader != writer)


STRING_BOUNDS = (
    _Bound("maxLength", "MAX_LENGTH_ADDED", "MAX_LENGTH_DECREASED", _lower),
    _Bound("minLength", "MIN_LENGTH_ADDED", "MIN_LENGTH_INCREASED", _higher),
    _Bound("pattern", "PATTERN_ADDED", "PATTERN_CHANGED", _differs),
)
NUMBER_BOUNDS = (
    _Bound("maximum", "MAXIMUM_ADDED", "MAXIMUM_DECREASED", _lower),
    _Bound("minimum", "MINIMUM_ADDED", "MINIMUM_INCREASED", _higher),
    _Bound("exclusiveMaximum", "EXCLUSIVE_MAXIMUM_ADDED", "EXCLUSIVE_MAXIMUM_DECREASED", _lower),
    _Bound("exclusiveMinimum", "EXCLUSIVE_MINIMUM_ADDED", "EXCLUSIVE_MINIMUM_INCREASED", _higher),
)
ARRAY_BOUNDS = (
    _Bound("maxItems", "MAX_ITEMS_ADDED", "MAX_ITEMS_DECREASED", _lower),
    _Bound("minItems", "MIN_ITEMS_ADDED", "MIN_ITEMS_INCREASED", _higher),
)
OBJECT_BOUNDS = (
    _Bound("maxProperties", "MAX_PROPERTIES_ADDED", "MAX_PROPERTIES_DECREASED", _lower),
    _Bound("minProperties", "MIN_PROPERTIES_ADDED", "MIN_PROPERTIES_INCREASED", _higher),
)


def _pointer(at: Path) -> str:
    return "/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in at)


class _Walk:
    """One reader/writer comparison; a pair met again while still open counts as compatible."""

    def __init__(self) -> None:
        self.open: set[tuple[int, int]] = set()

    def issue(self, kind: str, at: Path, message: str, reader: Any, writer: Any) -> Incompatibility:
        return Incompatibility(kind, _pointer(at), message, reader, writer)

    def compatible(self, reader: Any, writer: Any, at: Path = ()) -> bool:
        return not self.walk(reader, writer, at)

    def walk(self, reader: Any, writer: Any, at: Path) -> list[Incompatibility]:
        key = (id(reader), id(writer))
        if isinstance(reader, dict) and isinstance(writer, dict):
            if key in self.open:
                return []
            self.open.add(key)
            try:
                return self._walk(reader, writer, at)
            finally:
                self.open.discard(key)
        return self._walk(reader, writer, at)

    def _walk(self, reader: Any, writer: Any, at: Path) -> list[Incompatibility]:
        if writer is None and reader is not None:
            return [
                self.issue(
                    "SCHEMA_ADDED", at, "schema added, old values may not be valid", reader, writer
                )
            ]
        if reader is None and writer is not None:
            return [self.issue("SCHEMA_REMOVED", at, "schema removed", reader, writer)]
        r_type, w_type = _type_of(reader), _type_of(writer)
        numbers = r_type in NUMBERS and w_type in NUMBERS
        combined = r_type in COMBINERS or w_type in COMBINERS
        objects = (r_type == "object" or reader is True) and (w_type == "object" or writer is True)
        if numbers:
            return self._numbers(reader, writer, r_type, w_type, at)
        if combined:
            return self._combined(reader, writer, at)
        if objects:
            return self._object(
                {"type": "object"} if reader is True else reader,
                {"type": "object"} if writer is True else writer,
                at,
            )
        if r_type != w_type:
            return [self._type_changed(r_type, w_type, at, reader, writer)]
        if r_type == BOOLEAN_SCHEMA:
            if reader is False and writer is not False:
                return [
                    self.issue(
                        "TYPE_CHANGED",
                        at,
                        "the reader is false: it rejects every value",
                        reader,
                        writer,
                    )
                ]
            return []
        if r_type == "not":
            # Confluent compares the negated schemas reversed, Karapace as they are: ask both.
            found = self.walk(writer["not"], reader["not"], (*at, "not"))
            return found or self.walk(reader["not"], writer["not"], (*at, "not"))
        if r_type == "string":
            return self._bounds(STRING_BOUNDS, reader, writer, at)
        if r_type == "array":
            return self._array(reader, writer, at)
        if r_type == "enum":
            removed = [v for v in writer["enum"] if v not in reader["enum"]]
            if removed:
                return [
                    self.issue(
                        "ENUM_ARRAY_NARROWED",
                        (*at, "enum"),
                        f"enum values no longer accepted: {removed}",
                        reader,
                        writer,
                    )
                ]
        return []

    def _type_changed(
        self, r_type: str, w_type: str, at: Path, reader: Any, writer: Any
    ) -> Incompatibility:
        return self.issue(
            "TYPE_CHANGED", at, f"type {r_type} cannot read type {w_type}", reader, writer
        )

    def _bounds(
        self, bounds: tuple[_Bound, ...], reader: dict, writer: dict, at: Path
    ) -> list[Incompatibility]:
        found = []
        for bound in bounds:
            r_value, w_value = reader.get(bound.keyword), writer.get(bound.keyword)
            here = (*at, bound.keyword)
            if r_value is not None and w_value is None:
                found.append(
                    self.issue(
                        bound.added, here, f"{bound.keyword} {r_value!r} introduced", reader, writer
                    )
                )
            elif (
                r_value is not None
                and w_value is not None
                and isinstance(r_value, bool) == isinstance(w_value, bool)
                and bound.narrows(r_value, w_value)
            ):
                found.append(
                    self.issue(
                        bound.narrowed,
                        here,
                        f"{bound.keyword} narrowed from {w_value!r} to {r_value!r}",
                        reader,
                        writer,
                    )
                )
        return found

    def _numbers(
        self, reader: dict, writer: dict, r_type: str, w_type: str, at: Path
    ) -> list[Incompatibility]:
        found = self._bounds(NUMBER_BOUNDS, reader, writer, at)
        r_multiple, w_multiple = reader.get("multipleOf"), writer.get("multipleOf")
        here = (*at, "multipleOf")
        if r_multiple is not None and w_multiple is None:
            found.append(
                self.issue(
                    "MULTIPLE_OF_ADDED", here, f"multipleOf {r_multiple} introduced", reader, writer
                )
            )
        elif r_multiple is not None and w_multiple is not None:
            ratio = Fraction(str(w_multiple)) / Fraction(str(r_multiple))
            if ratio.denominator != 1:
                kind = "MULTIPLE_OF_EXPANDED" if r_multiple > w_multiple else "MULTIPLE_OF_CHANGED"
                found.append(
                    self.issue(
                        kind,
                        here,
                        f"multiples of {w_multiple} are not all multiples of {r_multiple}",
                        reader,
                        writer,
                    )
                )
        if r_type == "integer" and w_type == "number":
            found.append(
                self.issue(
                    "TYPE_NARROWED",
                    at,
                    "the writer produces numbers, the reader only integers",
                    reader,
                    writer,
                )
            )
        return found

    def _array(self, reader: dict, writer: dict, at: Path) -> list[Incompatibility]:
        r_items, w_items = reader.get("items"), writer.get("items")
        r_tuple, w_tuple = isinstance(r_items, list), isinstance(w_items, list)
        if r_tuple != w_tuple:
            return [
                self._type_changed(
                    "tuple" if r_tuple else "array",
                    "tuple" if w_tuple else "array",
                    at,
                    reader,
                    writer,
                )
            ]
        found: list[Incompatibility] = []
        if not (r_tuple and w_tuple):
            found += self.walk(r_items, w_items, (*at, "items"))
        else:
            assert isinstance(r_items, list) and isinstance(w_items, list)
            for i, (r_item, w_item) in enumerate(zip(r_items, w_items, strict=False)):
                found += self.walk(r_item, w_item, (*at, "items", str(i)))
            found += self._extra_items(reader, writer, r_items, w_items, at)
        found += self._bounds(ARRAY_BOUNDS, reader, writer, at)
        if reader.get("uniqueItems") is True and writer.get("uniqueItems") is not True:
            found.append(
                self.issue(
                    "UNIQUE_ITEMS_ADDED",
                    (*at, "uniqueItems"),
                    "items must now be unique",
                    reader,
                    writer,
                )
            )
        return found

    def _extra_items(
        self, reader: dict, writer: dict, r_items: list, w_items: list, at: Path
    ) -> list[Incompatibility]:
        """Tuples of different lengths, and what each side says about items past its end."""
        found: list[Incompatibility] = []
        here = (*at, "additionalItems")
        r_more = reader.get("additionalItems", True)
        w_more = writer.get("additionalItems", True)
        if len(w_items) > len(r_items) and r_more is not True:
            for i in range(len(r_items), len(w_items)):
                if r_more is False:
                    found.append(
                        self.issue(
                            "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                            here,
                            f"items from position {i} are no longer allowed",
                            reader,
                            writer,
                        )
                    )
                    break
                if not self.compatible(r_more, w_items[i], here):
                    found.append(
                        self.issue(
                            "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                            here,
                            f"item in position {i} is not accepted by additionalItems",
                            reader,
                            writer,
                        )
                    )
        if len(r_items) > len(w_items):
            if w_more is not True:
                for i in range(len(w_items), len(r_items)):
                    item_at = (*at, "items", str(i))
                    if not self.compatible(r_items[i], w_more, item_at):
                        found.append(
                            self.issue(
                                "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                                item_at,
                                "the new item cannot read what additionalItems allowed",
                                reader,
                                writer,
                            )
                        )
            found.append(
                self.issue(
                    "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
                    (*at, "items"),
                    f"items from position {len(w_items)} are now constrained",
                    reader,
                    writer,
                )
            )
        if r_more is False and w_more is not False:
            found.append(
                self.issue(
                    "ADDITIONAL_ITEMS_REMOVED",
                    here,
                    "additional items are no longer allowed",
                    reader,
                    writer,
                )
            )
        elif isinstance(r_more, dict) and w_more is True:
            found.append(
                self.issue(
                    "ADDITIONAL_ITEMS_NARROWED",
                    here,
                    "additional items are now constrained",
                    reader,
                    writer,
                )
            )
        elif isinstance(r_more, dict) and isinstance(w_more, dict):
            found += self.walk(r_more, w_more, here)
        return found

    def _object(self, reader: dict, writer: dict, at: Path) -> list[Incompatibility]:
        found = self._properties(reader, writer, at)
        found += self._dependencies(reader, writer, at)
        found += self._bounds(OBJECT_BOUNDS, reader, writer, at)
        r_more, w_more = reader.get("additionalProperties"), writer.get("additionalProperties")
        here = (*at, "additionalProperties")
        if r_more is not None and w_more is None:
            found.append(
                self.issue(
                    "ADDITIONAL_PROPERTIES_NARROWED",
                    here,
                    "additionalProperties introduced",
                    reader,
                    writer,
                )
            )
        if r_more and w_more:
            found += self.walk(r_more, w_more, here)
        return found

    def _properties(self, reader: dict, writer: dict, at: Path) -> list[Incompatibility]:
        found: list[Incompatibility] = []
        here = (*at, "properties")
        r_props: dict[str, Any] = reader.get("properties") or {}
        w_props: dict[str, Any] = writer.get("properties") or {}
        r_required, w_required = _required_names(reader), _required_names(writer)
        for name in (n for n in r_props if n in w_props):
            r_prop, w_prop = r_props[name], w_props[name]
            prop_at = (*here, name)
            if _required_flag(r_prop) and not _required_flag(w_prop):
                found.append(
                    self.issue(
                        "REQUIRED_ATTRIBUTE_ADDED",
                        prop_at,
                        f"property {name} became required",
                        r_prop,
                        w_prop,
                    )
                )
            if name in r_required and name not in w_required and not _has_default(r_prop):
                found.append(
                    self.issue(
                        "REQUIRED_ATTRIBUTE_ADDED",
                        prop_at,
                        f"property {name} became required",
                        r_prop,
                        w_prop,
                    )
                )
            found += self.walk(r_prop, w_prop, prop_at)
        for name in sorted(r_required - w_required - set(r_props) - set(w_props)):
            found.append(
                self.issue(
                    "REQUIRED_ATTRIBUTE_ADDED",
                    (*at, "required"),
                    f"property {name} became required",
                    reader.get("required"),
                    writer.get("required"),
                )
            )
        removed = [n for n in w_props if n not in r_props]
        added = [n for n in r_props if n not in w_props]
        # As in Karapace, additions are only looked at when no removal met a closed reader.
        if removed and not _open(reader):
            for name in removed:
                found += self._removed_property(reader, name, w_props[name], (*here, name))
        elif added and _open(writer):
            for name in added:
                found.append(
                    self.issue(
                        "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
                        (*here, name),
                        f"property {name} accepted any value before (the writer's content model "
                        "is open), now its values are constrained",
                        r_props[name],
                        None,
                    )
                )
        elif added:
            for name in added:
                found += self._added_property(
                    writer, name, r_props[name], r_required, (*here, name)
                )
        return found

    def _removed_property(
        self, reader: dict, name: str, w_prop: Any, at: Path
    ) -> list[Incompatibility]:
        """A property only the writer declares must be covered by the reader's open parts."""
        if w_prop is False:  # the writer never wrote it
            return []
        covering = _covering_schema(reader, name)
        if covering is None or covering is False:
            message = f"property {name} is no longer accepted"
            return [
                self.issue("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", at, message, None, w_prop)
            ]
        nested = self.walk(covering, w_prop, at)
        if not nested:
            return []
        message = f"property {name} is not accepted by the reader's patternProperties or "
        message += "additionalProperties"
        kind = "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
        return [*nested, self.issue(kind, at, message, covering, w_prop)]

    def _added_property(
        self, writer: dict, name: str, r_prop: Any, r_required: set[str], at: Path
    ) -> list[Incompatibility]:
        """A property only the reader declares, when the writer's content model is not open."""
        found: list[Incompatibility] = []
        covering = _covering_schema(writer, name)
        if (
            covering is not None
            and covering is not False
            and not self.compatible(r_prop, covering, at)
        ):
            kind = "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
            message = f"property {name} cannot read what the writer's open content model allowed"
            found.append(self.issue(kind, at, message, r_prop, covering))
        if name in r_required and not _has_default(r_prop):
            kind = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
            message = f"property {name} added as required without a default"
            found.append(self.issue(kind, at, message, r_prop, None))
        return found

    def _dependencies(self, reader: dict, writer: dict, at: Path) -> list[Incompatibility]:
        """A dependency the reader adds or extends rejects objects the writer allowed."""
        found: list[Incompatibility] = []
        for keyword in ("dependencies", "dependentRequired", "dependentSchemas"):
            r_deps = reader.get(keyword) or {}
            w_deps = writer.get(keyword) or {}
            for name, r_dep in r_deps.items():
                here = (*at, keyword, name)
                w_dep = w_deps.get(name)
                if isinstance(r_dep, list):
                    if not isinstance(w_dep, list):
                        found.append(
                            self.issue(
                                "DEPENDENCY_ARRAY_ADDED",
                                here,
                                f"dependency of {name} added",
                                r_dep,
                                w_dep,
                            )
                        )
                    elif set(r_dep) - set(w_dep):
                        found.append(
                            self.issue(
                                "DEPENDENCY_ARRAY_EXTENDED",
                                here,
                                f"dependency of {name} extended",
                                r_dep,
                                w_dep,
                            )
                        )
                elif w_dep is None or isinstance(w_dep, list):
                    found.append(
                        self.issue(
                            "DEPENDENCY_SCHEMA_ADDED",
                            here,
                            f"dependency schema of {name} added",
                            r_dep,
                            w_dep,
                        )
                    )
                else:
                    found += self.walk(r_dep, w_dep, here)
        return found

    def _combined(self, reader: Any, writer: Any, at: Path) -> list[Incompatibility]:
        r_split, w_split = _subschemas(reader), _subschemas(writer)
        r_subs, r_kind = r_split if r_split else (None, _type_of(reader))
        w_subs, w_kind = w_split if w_split else (None, _type_of(writer))
        r_combined, w_combined = r_kind in COMBINERS, w_kind in COMBINERS
        here = (*at, r_kind) if r_kind in (*COMBINERS, "not") else at
        # A combiner with a single subschema is that subschema.
        if r_combined and not w_combined and r_subs is not None and len(r_subs) == 1:
            if self.compatible(r_subs[0], writer, here):
                return []
            return [self._type_changed(r_kind, w_kind, here, reader, writer)]
        if w_combined and not r_combined and w_subs is not None and len(w_subs) == 1:
            if self.compatible(reader, w_subs[0], here):
                return []
            return [self._type_changed(r_kind, w_kind, here, reader, writer)]
        if r_kind in ("anyOf", "oneOf") and not w_combined:
            assert r_subs is not None
            if any(self.compatible(sub, writer, here) for sub in r_subs):
                return []
            return [self._type_changed(r_kind, w_kind, here, reader, writer)]
        if r_subs is None or w_subs is None:
            return [self._type_changed(r_kind, w_kind, here, reader, writer)]
        if r_kind not in ("anyOf", w_kind):
            return [
                self.issue(
                    "COMBINED_TYPE_CHANGED",
                    here,
                    f"{w_kind} cannot be read as {r_kind}",
                    reader,
                    writer,
                )
            ]
        if r_kind == "allOf" and len(w_subs) < len(r_subs):
            return [
                self.issue(
                    "PRODUCT_TYPE_EXTENDED",
                    here,
                    f"allOf grew from {len(w_subs)} to {len(r_subs)} schemas",
                    reader,
                    writer,
                )
            ]
        if r_kind in ("anyOf", "oneOf") and len(w_subs) > len(r_subs):
            return [
                self.issue(
                    "SUM_TYPE_NARROWED",
                    here,
                    f"{r_kind} shrank from {len(w_subs)} to {len(r_subs)} schemas",
                    reader,
                    writer,
                )
            ]
        needed = len(r_subs) if r_kind == "allOf" else len(w_subs)
        edges = {
            i: [
                j
                for j, w_sub in enumerate(w_subs)
                if self.compatible(r_sub, w_sub, (*here, str(j)))
            ]
            for i, r_sub in enumerate(r_subs)
        }
        if _matching_size(edges) < needed:
            return [
                self.issue(
                    "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
                    here,
                    "not every subschema has a compatible counterpart",
                    reader,
                    writer,
                )
            ]
        return []


def _matching_size(edges: dict[int, list[int]]) -> int:
    """Size of a maximum bipartite matching (Kuhn's augmenting paths): subschemas pair 1:1."""
    owner: dict[int, int] = {}

    def augment(left: int, visited: set[int]) -> bool:
        for right in edges[left]:
            if right in visited:
                continue
            visited.add(right)
            if right not in owner or augment(owner[right], visited):
                owner[right] = left
                return True
        return False

    return sum(augment(left, set()) for left in edges)


def _required_names(schema: dict) -> set[str]:
    """Draft 4+'s object-level `required` list."""
    required = schema.get("required")
    return set(required) if isinstance(required, list) else set()


def _required_flag(schema: Any) -> bool:
    """Draft 3's per-property `required: true`."""
    return isinstance(schema, dict) and schema.get("required") is True


def _has_default(schema: Any) -> bool:
    return isinstance(schema, dict) and "default" in schema


def _open(schema: dict) -> bool:
    """An open content model validates no property beyond those it declares."""
    return not schema.get("patternProperties") and schema.get("additionalProperties", True) is True


def _covering_schema(schema: dict, name: str) -> Any:
    """The patternProperties or additionalProperties schema that applies to property `name`."""
    for pattern, subschema in (schema.get("patternProperties") or {}).items():
        if re.search(pattern, name):
            return subschema
    return schema.get("additionalProperties")


def check_reader_writer(reader: JsonSchema, writer: JsonSchema) -> list[Incompatibility]:
    """Every reason `reader` rejects values that `writer` accepts; [] when it accepts them all."""
    return _Walk().walk(reader.root, writer.root, ())


CHECKER: PairChecker[JsonSchema] = PairChecker(parse=parse, check=check_reader_writer)
