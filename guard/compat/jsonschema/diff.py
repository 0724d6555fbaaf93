"""JSON Schema reader/writer compatibility, following Confluent's `SchemaDiff`, kind by kind.

Confluent Schema Registry compares an original (registered) schema with an update and reports
`Difference`s, each of a `Difference.Type`; a change is compatible when every difference is in
`SchemaDiff.COMPATIBLE_CHANGES`. Here reader = update and writer = original under BACKWARD
(FORWARD swaps them), and only the incompatible differences are reported, each named by its
Confluent type (`ADDITIONAL_PROPERTIES_REMOVED`, `SUM_TYPE_NARROWED`...). Where Confluent's
verdict differs from plain JSON Schema semantics (it compares kinds of schema, so `const: 1` ->
`enum: [1]` is TYPE_CHANGED) we follow Confluent and the finding says so.

Where keyguard departs from Confluent's code, it is to refuse what Confluent's own intent, or
JSON Schema, says is narrowing, never to pass what Confluent rejects:
- bounds compare as the values they admit (`exclusiveMinimum: 10` -> `minimum: 10` widens,
  Confluent's keyword-by-keyword view calls it MINIMUM_ADDED); `minLength: 0`, `minItems: 0`,
  `minProperties: 0` constrain nothing; `multipleOf` compares exactly;
- Confluent compares neither patternProperties, propertyNames, contains nor if/then/else: a
  narrowed pattern schema, added property names, a narrower `contains` or a changed condition
  are incompatible here (as in Apicurio), with kinds named after Confluent's
  (PROPERTY_NAMES_NARROWED, CONTAINS_NARROWED and CONDITIONAL_CHANGED are keyguard's own);
- a `$ref` with sibling assertions means both from draft 2019-09 on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, ClassVar

from keyguard.guard.compat.jsonschema import variations
from keyguard.guard.compat.jsonschema.model import (
    ALL_OF,
    ANY_OF,
    ARRAY,
    COMBINED,
    CONDITIONAL,
    CONST,
    EMPTY,
    ENUM,
    FALSE,
    NOT,
    NUMBER,
    OBJECT,
    ONE_OF,
    STRING,
    Classifier,
    Node,
    is_empty,
)
from keyguard.guard.compat.levels import Incompatibility
from keyguard.guard.compat.registry_rules import CONFLUENT, RegistryRules

Path = tuple[str, ...]
Found = list[Incompatibility]


def pointer(at: Path) -> str:
    return "/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in at)


def _key(value: Any) -> str:
    """A JSON value's identity: 1 and true differ, key order does not."""
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):  # a cycle of inlined $refs: compare by identity
        return f"id:{id(value)}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class Walk:
    """One reader/writer comparison, coinductive as recursive schemas need.

    A pair being compared, or already found compatible, is assumed compatible when met again
    (Confluent's `Context` does the same); when a comparison fails, every assumption made since
    it started is withdrawn, and the pair is remembered as incompatible (assuming more pairs
    compatible only ever hides differences, so a failure is final). Each pair is thus decided
    once, and recursive unions stay polynomial (Confluent memoizes pairs for the same reason).
    """

    def __init__(self, rules: RegistryRules = CONFLUENT) -> None:
        #: Whose answers count where the registries differ (`variations`); Confluent's else.
        self.rules = rules
        self.nodes = Classifier()
        self.assumed: set[tuple[int, int]] = set()
        self.trail: list[tuple[int, int]] = []
        self.failed: set[tuple[int, int]] = set()

    def issue(self, kind: str, at: Path, message: str, reader: Any, writer: Any) -> Incompatibility:
        reader = reader.schema if isinstance(reader, Node) else reader
        writer = writer.schema if isinstance(writer, Node) else writer
        return Incompatibility(kind, pointer(at), message, reader, writer)

    def compatible(self, reader: Any, writer: Any, at: Path = ()) -> bool:
        if reader is not None and writer is not None:
            key = (id(self.nodes.node(reader)), id(self.nodes.node(writer)))
            if key in self.failed:
                return False
        return not self.walk(reader, writer, at)

    def walk(self, reader: Any, writer: Any, at: Path) -> Found:
        if writer is None:
            if reader is None:
                return []
            return [self.issue("SCHEMA_ADDED", at, "a schema was added here: values written "
                               "before were not checked against it", reader, writer)]
        if reader is None:  # SCHEMA_REMOVED is compatible
            return []
        r_node, w_node = self.nodes.node(reader), self.nodes.node(writer)
        key = (id(r_node), id(w_node))
        if key in self.assumed:
            return []
        mark = len(self.trail)
        self.assumed.add(key)
        self.trail.append(key)
        found = self._compare(r_node, w_node, at)
        if found:
            for undone in self.trail[mark:]:
                self.assumed.discard(undone)
            del self.trail[mark:]
            self.failed.add(key)
        return found

    # SchemaDiff.compare
    def _compare(self, reader: Node, writer: Node, at: Path) -> Found:
        r_combined, w_combined = reader.kind in COMBINED, writer.kind in COMBINED
        if r_combined and not w_combined:
            # A singleton is its subschema; anyOf/oneOf read what one branch reads
            # (SUM_TYPE_EXTENDED).
            if len(reader.subs) == 1 or reader.kind in (ANY_OF, ONE_OF):
                for sub in reader.subs:
                    if self.compatible(sub, writer, at):
                        return []
        elif w_combined and not r_combined:
            # allOf writes what each branch allows: one readable branch is enough
            # (PRODUCT_TYPE_NARROWED).
            if len(writer.subs) == 1 or writer.kind == ALL_OF:
                for sub in writer.subs:
                    if self.compatible(reader, sub, at):
                        return []
        if not _same_class(reader, writer):
            differs = None if self.rules is CONFLUENT else \
                variations.classes_differ(self, reader, writer, at)
            if differs is not None:
                return differs
            if writer.kind == FALSE or reader.kind == EMPTY:
                return []
            return [self._type_changed(reader, writer, at)]
        compare = self._BY_KIND.get(reader.kind)
        return compare(self, reader, writer, at) if compare else []

    def _type_changed(self, reader: Node, writer: Node, at: Path) -> Incompatibility:
        if reader.kind == FALSE:
            message = "the new schema is false: it rejects every value"
        else:
            message = f"{_describe(reader)} cannot read {_describe(writer)}"
        if {reader.kind, writer.kind} & _KIND_ONLY:
            message += (" (Confluent compares the kind of each schema as its loader reads it, so "
                        "this is incompatible even where both schemas admit the same values)")
        return self.issue("TYPE_CHANGED", at, message, reader, writer)

    # StringSchemaDiff
    def _string(self, reader: Node, writer: Node, at: Path) -> Found:
        r, w = reader.schema, writer.schema
        found = self._counts(r, w, at, "maxLength", "MAX_LENGTH", upper=True)
        found += self._counts(r, w, at, "minLength", "MIN_LENGTH", upper=False)
        r_pattern, w_pattern = r.get("pattern"), w.get("pattern")
        if r_pattern is not None and w_pattern is None:
            found.append(self.issue("PATTERN_ADDED", (*at, "pattern"),
                                    f"pattern {r_pattern!r} added", r, w))
        elif r_pattern is not None and r_pattern != w_pattern:
            found.append(self.issue("PATTERN_CHANGED", (*at, "pattern"),
                                    f"pattern changed from {w_pattern!r} to {r_pattern!r}", r, w))
        return found + variations.string_annotations(self, r, w, at)

    def _counts(self, r: dict, w: dict, at: Path, keyword: str, kind: str, *, upper: bool) -> Found:
        """maxLength/minLength, maxItems/minItems, maxProperties/minProperties, ...Contains."""
        r_value: Any = r.get(keyword)
        w_value: Any = w.get(keyword)
        if not upper:  # a minimum of 0 admits everything: not a constraint
            r_value = r_value or None
            w_value = w_value or None
        if not _number(r_value):
            return []
        here = (*at, keyword)
        if not _number(w_value):
            return [self.issue(f"{kind}_ADDED", here, f"{keyword} {r_value} added", r, w)]
        if (r_value < w_value) if upper else (r_value > w_value):
            way = "DECREASED" if upper else "INCREASED"
            return [self.issue(f"{kind}_{way}", here,
                               f"{keyword} changed from {w_value} to {r_value}", r, w)]
        return []

    # NumberSchemaDiff
    def _number(self, reader: Node, writer: Node, at: Path) -> Found:
        r, w = reader.schema, writer.schema
        bounds = self._bounds(r, w, at, upper=True) + self._bounds(r, w, at, upper=False)
        found = sorted(bounds, key=lambda i: _BOUND_ORDER.index(i.path.rsplit("/", 1)[-1]))
        r_multiple, w_multiple = r.get("multipleOf"), w.get("multipleOf")
        here = (*at, "multipleOf")
        if _number(r_multiple) and not _number(w_multiple):
            found.append(self.issue("MULTIPLE_OF_ADDED", here, f"multipleOf {r_multiple} added",
                                    r, w))
        elif _number(r_multiple) and _number(w_multiple) and r_multiple != w_multiple:
            ratio = _ratio(w_multiple, r_multiple)
            if ratio is None or ratio.denominator != 1:
                kind = ("MULTIPLE_OF_EXPANDED" if ratio is not None and ratio < 1
                        else "MULTIPLE_OF_CHANGED")
                found.append(self.issue(kind, here, f"multiples of {w_multiple} are not all "
                                        f"multiples of {r_multiple}", r, w))
        if reader.integer and not writer.integer:
            found.append(self.issue("TYPE_NARROWED", at,
                                    "the old schema allows any number, the new one only integers",
                                    r, w))
        return found

    def _bounds(self, r: dict, w: dict, at: Path, *, upper: bool) -> Found:
        """Each bound of the reader that admits less than every bound of the writer together.

        Compared as values (Confluent compares keyword by keyword, so `exclusiveMinimum: 10` ->
        `minimum: 10` would be MINIMUM_ADDED although it admits more).
        """
        found: Found = []
        w_limit = _strictest(_limits(w, upper), upper)
        for keyword, value, exclusive in _limits(r, upper):
            if w_limit is not None and not _stricter((value, exclusive), w_limit, upper):
                continue
            base = ("EXCLUSIVE_" if keyword.startswith("exclusive") else "") + (
                "MAXIMUM" if upper else "MINIMUM")
            had = any(k == keyword for k, _, _ in _limits(w, upper))
            kind = f"{base}_{'ADDED' if not had else 'DECREASED' if upper else 'INCREASED'}"
            bound = f"{'<' if upper else '>'}{'' if exclusive else '='} {value}"
            found.append(self.issue(kind, (*at, keyword), f"values must now be {bound}", r, w))
        return found

    # EnumSchemaDiff, ConstSchemaDiff
    def _enum(self, reader: Node, writer: Node, at: Path) -> Found:
        r_values = reader.schema.get("enum") or []
        w_values = writer.schema.get("enum") or []
        r_keys = {_key(v) for v in r_values}
        lost = [v for v in w_values if _key(v) not in r_keys]
        if not lost:
            return []
        w_keys = {_key(v) for v in w_values}
        kind = "ENUM_ARRAY_NARROWED" if r_keys <= w_keys else "ENUM_ARRAY_CHANGED"
        return [self.issue(kind, (*at, "enum"), f"enum values no longer accepted: {lost}",
                           reader, writer)]

    def _const(self, reader: Node, writer: Node, at: Path) -> Found:
        r_value, w_value = reader.schema.get("const"), writer.schema.get("const")
        if _key(r_value) == _key(w_value):
            return []
        return [self.issue("ENUM_ARRAY_CHANGED", (*at, "const"),
                           f"const changed from {w_value!r} to {r_value!r}", reader, writer)]

    # NotSchemaDiff: the negated schemas are compared the other way round
    def _not(self, reader: Node, writer: Node, at: Path) -> Found:
        here = (*at, "not")
        if self.compatible(writer.subs[0], reader.subs[0], here):
            return []  # NOT_TYPE_NARROWED
        return [self.issue("NOT_TYPE_EXTENDED", here, "the new schema excludes values the old "
                           "one allowed (`not` is contravariant: its schema may only narrow)",
                           reader, writer)]

    # Beyond Confluent, which loads if/then/else as a ConditionalSchema and compares nothing in it:
    # the same `if` with each branch read as before, or a conditional change.
    def _conditional(self, reader: Node, writer: Node, at: Path) -> Found:
        r, w = reader.schema, writer.schema
        note = " (Confluent does not compare if/then/else; keyguard does, as Apicurio does)"
        if _key(r.get("if")) != _key(w.get("if")):
            return [self.issue("CONDITIONAL_CHANGED", (*at, "if"), "the `if` condition changed, "
                               "so values may now meet other branches" + note, r, w)]
        found: Found = []
        for branch in ("then", "else"):
            found += self.walk(r.get(branch), w.get(branch), (*at, branch))
        return found

    # CombinedSchemaDiff
    def _combined(self, reader: Node, writer: Node, at: Path) -> Found:
        here = at if reader.synthetic else (*at, reader.kind)
        r_kind, w_kind = reader.kind, writer.kind
        # Redpanda reads an allOf by a sum type that matches its branches (`variations`).
        sum_of_all = self.rules.allof_read_by_sum_type and w_kind == ALL_OF
        if not _combiner_reads(reader, writer, sum_of_all):
            return [self.issue("COMBINED_TYPE_CHANGED", here,
                               f"{w_kind} cannot be read as {r_kind}", reader, writer)]
        r_subs, w_subs = _distinct(reader.subs), _distinct(writer.subs)
        found: Found = []
        if len(w_subs) < len(r_subs) and r_kind == ALL_OF:
            found.append(self.issue("PRODUCT_TYPE_EXTENDED", here, f"allOf grew from "
                                    f"{len(w_subs)} to {len(r_subs)} schemas", reader, writer))
        elif len(w_subs) > len(r_subs) and r_kind != ALL_OF and not sum_of_all:
            found.append(self.issue("SUM_TYPE_NARROWED", here, f"{r_kind} shrank from "
                                    f"{len(w_subs)} to {len(r_subs)} schemas", reader, writer))
        edges: dict[int, list[int]] = {}
        for i, r_sub in enumerate(r_subs):
            edges[i] = []
            for j, w_sub in enumerate(w_subs):
                if self.compatible(r_sub, w_sub, here):
                    edges[i].append(j)
        if _matching_size(edges) < min(len(r_subs), len(w_subs)):
            found += self._located(r_subs, w_subs, at) if reader.synthetic else []
            found.append(self.issue("COMBINED_TYPE_SUBSCHEMAS_CHANGED", here,
                                    "not every subschema has a compatible counterpart",
                                    reader, writer))
        return found

    def _located(self, r_subs: list[Any], w_subs: list[Any], at: Path) -> Found:
        """Why the pieces of one schema (its type, enum, if, ...) no longer match: each piece
        against the old piece of its own kind, for a finding that points at the keyword."""
        found: Found = []
        for r_sub in r_subs:
            r_node = self.nodes.node(r_sub)
            for w_sub in w_subs:
                w_node = self.nodes.node(w_sub)
                if w_node.kind == r_node.kind:
                    found += self.walk(r_sub, w_sub, at)
                    break
        return found

    # ObjectSchemaDiff
    def _object(self, reader: Node, writer: Node, at: Path) -> Found:
        r, w = reader.schema, writer.schema
        found = self._required(r, w, at) + variations.required_undeclared(self, r, w, at)
        found += self._properties(r, w, at)
        found += self._dependencies(r, w, at)
        keyword = ("unevaluatedProperties" if "additionalProperties" not in r
                   and "unevaluatedProperties" in r else "additionalProperties")
        found += self._additional(r, w, at, keyword, "ADDITIONAL_PROPERTIES",
                                  _object_rest(r), _object_rest(w))
        found += self._counts(r, w, at, "maxProperties", "MAX_PROPERTIES", upper=True)
        found += self._counts(r, w, at, "minProperties", "MIN_PROPERTIES", upper=False)
        found += self._patterns(r, w, at)
        found += self._constrained(r, w, at, "propertyNames", "PROPERTY_NAMES_NARROWED",
                                   "property names")
        return found

    # Beyond Confluent: it does not compare patternProperties, propertyNames or contains, so it
    # accepts `{"^S_": string}` -> `{"^S_": number}`. Apicurio and JSON Schema reject such
    # narrowing, and so does keyguard: stricter than the registry, never laxer.
    def _patterns(self, r: dict, w: dict, at: Path) -> Found:
        found: Found = []
        r_patterns = r.get("patternProperties") or {}
        w_patterns = w.get("patternProperties") or {}
        (r_permits, r_rest), (w_permits, w_rest) = _object_rest(r), _object_rest(w)
        note = " (Confluent does not compare patternProperties; keyguard does, as Apicurio does)"
        for pattern in [*w_patterns, *(p for p in r_patterns if p not in w_patterns)]:
            here = (*at, "patternProperties", pattern)
            if pattern in r_patterns and pattern in w_patterns:
                found += self.walk(r_patterns[pattern], w_patterns[pattern], here)
            elif pattern in w_patterns:  # names matching it fall to the reader's rest
                w_schema = w_patterns[pattern]
                if r_rest is not None:
                    nested = self.walk(r_rest, w_schema, here)
                    if nested:
                        found += [*nested, self.issue(
                            "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", here,
                            f"properties matching {pattern!r} are no longer read as before"
                            + note, r_rest, w_schema)]
                elif not r_permits and w_schema is not False:
                    found.append(self.issue(
                        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", here,
                        f"properties matching {pattern!r} are no longer accepted" + note,
                        None, w_schema))
            else:  # names matching it were governed by the writer's rest
                r_schema = r_patterns[pattern]
                if w_rest is not None:
                    nested = self.walk(r_schema, w_rest, here)
                    if nested:
                        found += [*nested, self.issue(
                            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", here,
                            f"properties matching {pattern!r} cannot read what the old schema's "
                            "additionalProperties allowed" + note, r_schema, w_rest)]
                elif w_permits and not is_empty(self.nodes, r_schema):
                    found.append(self.issue(
                        "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", here,
                        f"properties matching {pattern!r} accepted any value before, now their "
                        "values are constrained" + note, r_schema, None))
        return found

    def _constrained(self, r: dict, w: dict, at: Path, keyword: str, kind: str,
                     what: str) -> Found:
        """propertyNames, contains: a schema that only narrows (Confluent ignores both)."""
        r_schema, w_schema = r.get(keyword), w.get(keyword)
        here = (*at, keyword)
        if r_schema is None:
            return []
        if keyword == "propertyNames" and _names_admitted(r_schema, _possible_names(w)):
            return []
        note = f" (Confluent does not compare {keyword}; keyguard does, as Apicurio does)"
        if w_schema is None:
            return [self.issue(kind, here, f"{what} are now constrained by {keyword}" + note,
                               r_schema, None)]
        nested = self.walk(r_schema, w_schema, here)
        if not nested:
            return []
        return [*nested, self.issue(kind, here, f"{what} are constrained more narrowly" + note,
                                    r_schema, w_schema)]

    def _required(self, r: dict, w: dict, at: Path) -> Found:
        r_props, w_props = _props(r), _props(w)
        r_required, w_required = _required(r), _required(w)
        return [
            self.issue("REQUIRED_ATTRIBUTE_ADDED", (*at, "required", name),
                       f"property {name} became required without a default", r_props[name],
                       w_props[name])
            for name in r_props
            if name in w_props and name in r_required and name not in w_required
            and not _has_default(r_props[name])
        ]

    def _properties(self, r: dict, w: dict, at: Path) -> Found:
        found: Found = []
        r_props, w_props = _props(r), _props(w)
        for name in [*w_props, *(n for n in r_props if n not in w_props)]:
            here = (*at, "properties", name)
            if name in r_props and name in w_props:
                found += self.walk(r_props[name], w_props[name], here)
            elif name in w_props:
                found += self._removed(r, w_props[name], name, here, _object_rest(r),
                                       "PROPERTY", f"property {name}")
            else:
                found += self._added(w, r_props[name], name, here, _object_rest(w),
                                     "PROPERTY", f"property {name}")
                if name in _required(r) and not _has_default(r_props[name]):
                    found.append(self.issue(
                        "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", here,
                        f"property {name} added as required without a default", r_props[name],
                        None))
        return found

    def _removed(self, reader: dict, w_item: Any, name: str, here: Path,
                 rest: tuple[bool, Any], noun: str, what: str) -> Found:
        """A property or tuple item only the writer declares: the reader's rest must read it."""
        permits, rest_schema = rest
        if permits and rest_schema is None:
            return []  # *_REMOVED_FROM_OPEN_CONTENT_MODEL
        partial = _pattern_schema(reader, name) if noun == "PROPERTY" else None
        partial = partial if partial is not None else rest_schema
        if partial is not None:
            nested = self.walk(partial, w_item, here)
            if not nested:
                return []
            return [*nested, self.issue(
                f"{noun}_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", here,
                f"{what} was removed and the new schema's open part does not read it",
                partial, w_item)]
        if w_item is False:
            return []  # *_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL
        return [self.issue(f"{noun}_REMOVED_FROM_CLOSED_CONTENT_MODEL", here,
                           f"{what} is no longer accepted (the new content model is closed)",
                           None, w_item)]

    def _added(self, writer: dict, r_item: Any, name: str, here: Path,
               rest: tuple[bool, Any], noun: str, what: str) -> Found:
        """A property or tuple item only the reader declares: it must read the writer's rest."""
        permits, rest_schema = rest
        if permits and rest_schema is None:
            if is_empty(self.nodes, r_item):
                return []
            return [self.issue(f"{noun}_ADDED_TO_OPEN_CONTENT_MODEL", here,
                               f"{what} was added: the old schema's open content model let any "
                               "value through there, the new schema constrains it", r_item,
                               None)]
        partial = _pattern_schema(writer, name) if noun == "PROPERTY" else None
        partial = partial if partial is not None else rest_schema
        if partial is None:
            return []  # added to a closed content model
        nested = self.walk(r_item, partial, here)
        if not nested:
            return []
        return [*nested, self.issue(
            f"{noun}_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", here,
            f"{what} cannot read what the old schema's open part allowed", r_item, partial)]

    def _additional(self, r: dict, w: dict, at: Path, keyword: str, kind: str,
                    r_rest: tuple[bool, Any], w_rest: tuple[bool, Any]) -> Found:
        """additionalProperties / additionalItems: allowed or not, then their schemas."""
        (r_permits, r_schema), (w_permits, w_schema) = r_rest, w_rest
        here = (*at, keyword)
        if r_permits != w_permits:
            if r_permits:
                return []  # *_ADDED
            return [self.issue(f"{kind}_REMOVED", here,
                               f"the new schema allows no {keyword} (the old one did)", r, w)]
        if w_schema is None and r_schema is not None:
            return [self.issue(f"{kind}_NARROWED", here,
                               f"{keyword} are now constrained by a schema", r_schema, None)]
        if r_schema is None:
            return []  # *_EXTENDED, or both open
        return self.walk(r_schema, w_schema, here)

    def _dependencies(self, r: dict, w: dict, at: Path) -> Found:
        found: Found = []
        r_arrays, w_arrays = _dependency_arrays(r), _dependency_arrays(w)
        for name, r_dep in r_arrays.items():
            here = (*at, "dependencies", name)
            w_dep = w_arrays.get(name)
            if w_dep is None:
                found.append(self.issue("DEPENDENCY_ARRAY_ADDED", here,
                                        f"properties now required with {name}: {r_dep}", r, w))
            elif set(r_dep) != set(w_dep) and not set(r_dep) <= set(w_dep):
                kind = ("DEPENDENCY_ARRAY_EXTENDED" if set(r_dep) >= set(w_dep)
                        else "DEPENDENCY_ARRAY_CHANGED")
                found.append(self.issue(kind, here, f"properties required with {name} changed "
                                        f"from {w_dep} to {r_dep}", r, w))
        r_schemas, w_schemas = _dependency_schemas(r), _dependency_schemas(w)
        for name, r_dep in r_schemas.items():
            here = (*at, "dependencies", name)
            if name not in w_schemas:
                found.append(self.issue("DEPENDENCY_SCHEMA_ADDED", here,
                                        f"a schema now applies when {name} is present", r, w))
            else:
                found += self.walk(r_dep, w_schemas[name], here)
        return found

    # ArraySchemaDiff
    def _array(self, reader: Node, writer: Node, at: Path) -> Found:
        r, w = reader.schema, writer.schema
        found = self.walk(_all_items(r), _all_items(w), (*at, "items"))
        r_tuple, w_tuple = _tuple(r), _tuple(w)
        r_rest, w_rest = _array_rest(r), _array_rest(w)
        for i in range(max(len(r_tuple), len(w_tuple))):
            here = (*at, "items", str(i))
            if i < len(r_tuple) and i < len(w_tuple):
                found += self.walk(r_tuple[i], w_tuple[i], here)
            elif i < len(w_tuple):
                found += self._removed(r, w_tuple[i], str(i), here, r_rest, "ITEM",
                                       f"tuple item {i}")
            else:
                found += self._added(w, r_tuple[i], str(i), here, w_rest, "ITEM",
                                     f"tuple item {i}")
        found += self._additional(r, w, at, _rest_keyword(r), "ADDITIONAL_ITEMS",
                                  _array_rest(r, evaluated=True), _array_rest(w, evaluated=True))
        found += self._counts(r, w, at, "maxItems", "MAX_ITEMS", upper=True)
        found += self._counts(r, w, at, "minItems", "MIN_ITEMS", upper=False)
        found += self._counts(r, w, at, "maxContains", "MAX_CONTAINS", upper=True)
        found += self._counts(r, w, at, "minContains", "MIN_CONTAINS", upper=False)
        found += self._constrained(r, w, at, "contains", "CONTAINS_NARROWED",
                                   "the items an array must contain")
        if r.get("uniqueItems") is True and w.get("uniqueItems") is not True:
            found.append(self.issue("UNIQUE_ITEMS_ADDED", (*at, "uniqueItems"),
                                    "items must now be unique", r, w))
        return found

    _BY_KIND: ClassVar[dict[str, Callable[[Walk, Node, Node, Path], Found]]] = {
        STRING: _string, NUMBER: _number, ENUM: _enum, CONST: _const, NOT: _not,
        CONDITIONAL: _conditional,
        ALL_OF: _combined, ANY_OF: _combined, ONE_OF: _combined, OBJECT: _object, ARRAY: _array,
    }


#: Kinds whose mismatch Confluent rejects although the values admitted may be the same.
_KIND_ONLY = frozenset({CONST, ENUM, EMPTY, *COMBINED})

#: Confluent's NumberSchemaDiff order.
_BOUND_ORDER = ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum")


def _combiner_reads(reader: Node, writer: Node, sum_of_all: bool) -> bool:
    """Whether the reader's combiner may read the writer's (CombinedSchemaDiff.compareCriteria;
    `sum_of_all`: Redpanda's one-branch oneOf reading an allOf)."""
    r_kind, r_subs, w_subs = reader.kind, len(reader.subs), len(writer.subs)
    return (r_kind == writer.kind or r_kind == ANY_OF
            or (r_kind == ONE_OF and (w_subs == 1 or (sum_of_all and r_subs == 1)))
            or (r_kind == ALL_OF and w_subs == 1 and r_subs == 1))


def _same_class(reader: Node, writer: Node) -> bool:
    if reader.kind in COMBINED and writer.kind in COMBINED:
        return True
    return reader.kind == writer.kind


def _describe(node: Node) -> str:
    if node.kind in COMBINED:
        return f"{node.kind} of {len(node.subs)} schemas"
    if node.kind in (EMPTY, FALSE):
        return f"the {node.kind} schema"
    return f"type {node.type_name}"


def _limits(schema: dict, upper: bool) -> list[tuple[str, Any, bool]]:
    """(keyword, value, exclusive) for each bound on one side; draft-04 booleans included."""
    inclusive, exclusive = ("maximum", "exclusiveMaximum") if upper else (
        "minimum", "exclusiveMinimum")
    found = []
    flag = schema.get(exclusive)
    if _number(schema.get(inclusive)):
        found.append((inclusive, schema[inclusive], flag is True))
    if _number(flag):
        found.append((exclusive, flag, True))
    return found


def _stricter(a: tuple[Any, bool], b: tuple[Any, bool], upper: bool) -> bool:
    (a_value, a_excl), (b_value, b_excl) = a, b
    if a_value != b_value:
        return bool(a_value < b_value) if upper else bool(a_value > b_value)
    return a_excl and not b_excl


def _strictest(limits: list[tuple[str, Any, bool]], upper: bool) -> tuple[Any, bool] | None:
    best: tuple[Any, bool] | None = None
    for _, value, exclusive in limits:
        if best is None or _stricter((value, exclusive), best, upper):
            best = (value, exclusive)
    return best


def _ratio(numerator: Any, denominator: Any) -> Fraction | None:
    """numerator / denominator exactly (as JSON wrote them), None when not finite or zero."""
    if not (math.isfinite(numerator) and math.isfinite(denominator)) or not denominator:
        return None
    return Fraction(str(numerator)) / Fraction(str(denominator))


def _distinct(subs: list[Any]) -> list[Any]:
    """Subschemas with duplicates collapsed (Confluent collects them into a set)."""
    seen: dict[str, Any] = {}
    for sub in subs:
        # A synthetic piece shares its keywords with its siblings: it is distinct by identity.
        seen.setdefault(f"node:{id(sub)}" if isinstance(sub, Node) else _key(sub), sub)
    return list(seen.values())


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


def _props(schema: dict) -> dict[str, Any]:
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def _required(schema: dict) -> set[str]:
    required = schema.get("required")
    return set(required) if isinstance(required, list) else set()


def _has_default(schema: Any) -> bool:
    return isinstance(schema, dict) and "default" in schema


def _object_rest(schema: dict) -> tuple[bool, Any]:
    """(additional properties allowed, their schema or None); unevaluatedProperties counts when
    additionalProperties is absent."""
    rest = schema.get("additionalProperties", schema.get("unevaluatedProperties", True))
    if rest is True:
        return (True, None)
    if rest is False:
        return (False, None)
    return (True, rest)


def _pattern_schema(schema: dict, name: str) -> Any:
    """The first patternProperties schema whose (unanchored) regex finds `name`."""
    import re

    for pattern, subschema in (schema.get("patternProperties") or {}).items():
        try:
            if re.search(pattern, name):
                return subschema
        except re.error:
            continue
    return None


#: Names a property may have, to test a propertyNames schema against an open content model.
_SAMPLE_NAMES = ("", "a", "b", "Z", "_", "0", "ab", "b_a", "a-b", "x y", "\u00e9", "A0_z")
_STRING_WORDS = frozenset({"type", "pattern", "minLength", "maxLength", "enum", "const",
                           "title", "description", "$comment", "examples"})


def _possible_names(schema: dict) -> tuple[str, ...] | None:
    """The property names an object of `schema` can have, when they are known (a closed
    content model), else None."""
    if schema.get("patternProperties") or _object_rest(schema) != (False, None):
        return None
    return tuple(_props(schema))


def _names_admitted(names_schema: Any, names: tuple[str, ...] | None) -> bool:
    """Whether a propertyNames schema admits every name (of a closed model, or any name).

    Decided for plain string schemas only (pattern, lengths, enum, const); anything else counts
    as a constraint. Any name at all is approximated by a sample of names, which can only ever
    call a constraint what Confluent would not look at anyway.
    """
    if names_schema is True or names_schema == {}:
        return True
    if not isinstance(names_schema, dict) or not names_schema.keys() <= _STRING_WORDS:
        return False
    if names_schema.get("type", "string") != "string":
        return False
    return all(_name_ok(names_schema, name) for name in (names or _SAMPLE_NAMES))


def _name_ok(schema: dict, name: str) -> bool:
    import re

    pattern = schema.get("pattern")
    try:
        if isinstance(pattern, str) and not re.search(pattern, name):
            return False
    except re.error:
        return False
    if "enum" in schema and name not in schema["enum"]:
        return False
    if "const" in schema and name != schema["const"]:
        return False
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    return len(name) >= shortest and (longest is None or len(name) <= longest)


def _dependency_arrays(schema: dict) -> dict[str, list[Any]]:
    found = {k: v for k, v in (schema.get("dependencies") or {}).items() if isinstance(v, list)}
    found.update(schema.get("dependentRequired") or {})
    return found


def _dependency_schemas(schema: dict) -> dict[str, Any]:
    found = {k: v for k, v in (schema.get("dependencies") or {}).items()
             if not isinstance(v, list)}
    found.update(schema.get("dependentSchemas") or {})
    return found


def _tuple(schema: dict) -> list[Any]:
    """Positional item schemas: 2020-12 `prefixItems`, or `items` as a list (draft 4 to 2019)."""
    if isinstance(schema.get("prefixItems"), list):
        return list(schema["prefixItems"])
    items = schema.get("items")
    return list(items) if isinstance(items, list) else []


def _all_items(schema: dict) -> Any:
    """The schema every item must match, when `items` is one schema (not after prefixItems)."""
    if "prefixItems" in schema:
        return None
    items = schema.get("items")
    return None if isinstance(items, list) else items


def _rest_keyword(schema: dict) -> str:
    return "items" if "prefixItems" in schema else "additionalItems"


def _array_rest(schema: dict, *, evaluated: bool = False) -> tuple[bool, Any]:
    """(items past the tuple allowed, their schema or None): `additionalItems`, or 2020-12
    `items` after `prefixItems`; unevaluatedItems counts when neither is there."""
    keyword = _rest_keyword(schema)
    if keyword in schema:
        rest = schema[keyword]
    elif evaluated:
        rest = True
    else:
        rest = schema.get("unevaluatedItems", True)
    if rest is True:
        return (True, None)
    if rest is False:
        return (False, None)
    return (True, rest)
