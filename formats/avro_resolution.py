"""Avro Java's name matching for schema resolution, applied to a writer schema for fastavro.

Flink's `avro-confluent` reader (RegistryAvroDeserializationSchema) reads every record with Avro
Java's `GenericDatumReader(writer, reader)`, which resolves the two schemas with
`org.apache.avro.Resolver` (ResolvingGrammarGenerator builds its grammar from it). Java pairs
named types by rules fastavro does not share (fastavro pairs them by short name or alias only):

- records pair whatever their names (`RecordAdjust.resolve` does not compare them), so a
  `com.acme.Order` written by a Java producer reads as Flink's derived
  `org.apache.flink.avro.generated.record`, nested records included;
- enums and fixed pair when their short names are equal (`getName()`), else NAMES_DONT_MATCH;
- the writer's names, and its field names within a record of the reader's full name, are first
  renamed by the reader's aliases (`Schema.applyAliases`);
- a writer union whose branches line up with the reader's (`unionEquiv`: same length, same
  kinds, equal short names) resolves branch by branch; otherwise each writer branch resolves
  against the whole reader schema;
- a non-union written into a reader union takes `ReaderUnion.firstMatchingBranch`: the first
  branch of the same kind (a named one only if its full name is equal), else, for a record, the
  first branch whose fields fit one level deep (`hasMatchError`; the last such branch with the
  writer's short name wins), else the first branch the value promotes to.

`as_reader_names(writer, reader)` returns the writer schema with each named type renamed to
the reader type Java pairs it with (and fields to the reader's field names), so that fastavro
then pairs what Java pairs. A type Java pairs with nothing gets a short name no reader type has,
so fastavro fails on it when, and only when, Java does: on reading it (a DecodeError).
Source: apache/avro lang/java/avro/src/main/java/org/apache/avro/Resolver.java; checked on a
JVM against Avro 1.12.1 (tests/formats/data/avro_resolution: 50 cases; one known difference, a
reader union with two records of one short name, fails rather than reads the other record).
"""

from __future__ import annotations

import json
from typing import Any

AvroSchema = Any  # JSON data: a str (primitive or name), a dict, or a list (union)

_NULL_NAMESPACE = "keyguard_null_namespace"
_NAMED = frozenset({"record", "error", "enum", "fixed"})
# Resolver.Promote.isValid: reader kind -> writer kinds that promote to it.
_PROMOTES = {"long": {"int"}, "float": {"int", "long"}, "double": {"int", "long", "float"},
             "bytes": {"string"}, "string": {"bytes"}}
# ReaderUnion.firstMatchingBranch's promotion scan: writer kind -> reader kinds it takes.
_UNION_PROMOTES = {"int": {"long", "double", "float"}, "long": {"double", "float"},
                   "float": {"double"}, "string": {"bytes"}, "bytes": {"string"}}


def as_reader_names(writer: AvroSchema, reader: AvroSchema) -> AvroSchema:
    """`writer` with its named types renamed to the reader's where Avro Java pairs them."""
    return _Renamer(writer, reader).schema


class _Schemas:
    """One schema's named types by full name (fastavro parses the names)."""

    def __init__(self, schema: AvroSchema) -> None:
        import fastavro

        self.named: dict[str, Any] = {}
        self.root = fastavro.parse_schema(schema, named_schemas=self.named, _write_hint=False)

    def deref(self, s: Any) -> Any:
        return self.named.get(s, s) if isinstance(s, str) else s


def _kind(s: Any) -> str:
    if isinstance(s, list):
        return "union"
    if isinstance(s, dict):
        kind = s["type"]
        return "record" if kind == "error" else str(kind)
    return str(s)


def _short(full: str) -> str:
    return full.rsplit(".", 1)[-1]


def _aliases(s: dict[str, Any]) -> list[str]:
    """A named type's aliases as full names (relative to its own namespace, as Java reads them)."""
    space = s["name"].rsplit(".", 1)[0] if "." in s["name"] else ""
    return [a if "." in a or not space else f"{space}.{a}" for a in s.get("aliases", ())]


class _Renamer:
    def __init__(self, writer: AvroSchema, reader: AvroSchema) -> None:
        self.w = _Schemas(writer)
        self.r = _Schemas(reader)
        # Schema.applyAliases: a writer name the reader lists as an alias takes the reader's name.
        self.alias = {a: name for name, s in self.r.named.items() for a in _aliases(s)}
        self.emitted: dict[tuple[int, int], str] = {}  # (writer def, reader def) -> out name
        self.shapes: dict[str, str] = {}  # output name -> the writer definition's shape
        self.schema = self.rewrite(self.w.root, self.r.root)

    # -- what Java decides ---------------------------------------------------------------

    def name(self, w: dict[str, Any]) -> str:
        return self.alias.get(w["name"], w["name"])

    def union_equiv(self, w: Any, r: Any, seen: set[tuple[int, int]]) -> bool:
        """Resolver.unionEquiv: the two schemas line up branch by branch."""
        w, r = self.w.deref(w), self.r.deref(r)
        kind = _kind(w)
        if kind != _kind(r):
            return False
        if kind in _NAMED and _short(self.name(w)) != _short(r["name"]):
            return False
        if kind == "array":
            return self.union_equiv(w["items"], r["items"], seen)
        if kind == "map":
            return self.union_equiv(w["values"], r["values"], seen)
        if kind == "fixed":
            return bool(w["size"] == r["size"])
        if kind == "enum":
            return bool(w["symbols"] == r["symbols"])
        if kind == "union":
            return len(w) == len(r) and all(self.union_equiv(a, b, seen)
                                            for a, b in zip(w, r, strict=True))
        if kind == "record":
            pair = (id(w), id(r))
            if pair in seen:
                return True
            seen.add(pair)
            wf, rf = w["fields"], r["fields"]
            return len(wf) == len(rf) and all(
                a["name"] == b["name"] and self.union_equiv(a["type"], b["type"], seen)
                for a, b in zip(wf, rf, strict=True))
        return True

    def reader_field(self, w: dict[str, Any], r: dict[str, Any], name: str) -> Any:
        """The reader's field that writer field `name` fills: Java renames writer fields by the
        reader's field aliases only in a record of the same (alias-mapped) full name."""
        aliased = self.name(w) == r["name"]
        for f in r["fields"]:
            if f["name"] == name or (aliased and name in f.get("aliases", ())):
                return f
        return None

    def is_error(self, w: Any, r: Any) -> bool:
        """Resolver.resolve(w, r) is itself an ErrorAction (not one nested deeper)."""
        w, r = self.w.deref(w), self.r.deref(r)
        wk, rk = _kind(w), _kind(r)
        if wk == "union":
            return False
        if wk == rk:
            if wk == "fixed":
                return _short(self.name(w)) != _short(r["name"]) or w["size"] != r["size"]
            if wk == "enum":
                return _short(self.name(w)) != _short(r["name"])
            if wk == "record":
                filled = {id(self.reader_field(w, r, f["name"])) for f in w["fields"]}
                return any(id(f) not in filled and "default" not in f for f in r["fields"])
            return False
        if rk == "union":
            return self.first_matching_branch(w, r) < 0
        return wk not in _PROMOTES.get(rk, ())

    def first_matching_branch(self, w: Any, union: list[Any]) -> int:
        """Resolver.ReaderUnion.firstMatchingBranch (Avro 1.8's "soft match", kept by Java)."""
        w = self.w.deref(w)
        kind = _kind(w)
        structure = -1
        for j, b in enumerate(union):
            b = self.r.deref(b)
            if _kind(b) != kind:
                continue
            if kind not in _NAMED:
                return j
            if self.name(w) == b["name"]:
                return j
            if kind == "record" and not self.fits_one_level(w, b):
                if structure < 0 or _short(self.name(w)) == _short(b["name"]):
                    structure = j
        if structure >= 0:
            return structure
        for j, b in enumerate(union):
            if _kind(self.r.deref(b)) in _UNION_PROMOTES.get(kind, ()):
                return j
        return -1

    def fits_one_level(self, w: dict[str, Any], r: dict[str, Any]) -> bool:
        """ReaderUnion.hasMatchError: the record, or one of its fields, is an ErrorAction."""
        if self.is_error(w, r):
            return True
        for f in w["fields"]:
            rf = self.reader_field(w, r, f["name"])
            if rf is not None and self.is_error(f["type"], rf["type"]):
                return True
        return False

    # -- the renamed writer schema -------------------------------------------------------

    def rewrite(self, w: Any, r: Any) -> Any:
        wd, rd = self.w.deref(w), self.r.deref(r)
        wk, rk = _kind(wd), _kind(rd)
        if wk == "union":
            if self.union_equiv(wd, rd, set()):
                return [self.rewrite(a, b) for a, b in zip(wd, rd, strict=True)]
            return [self.rewrite(a, rd) for a in wd]
        if wk == rk:
            if wk == "record":
                return self.named(wd, rd, rd["name"])
            if wk in ("enum", "fixed"):
                if _short(self.name(wd)) == _short(rd["name"]):
                    return self.named(wd, rd, rd["name"])
                return self.keep(wd)
            if wk == "array":
                return {**_plain(wd), "items": self.rewrite(wd["items"], rd["items"])}
            if wk == "map":
                return {**_plain(wd), "values": self.rewrite(wd["values"], rd["values"])}
            return _plain(wd)
        if rk == "union":
            j = self.first_matching_branch(wd, rd)
            if j >= 0 and self.shadowed(wd, rd, j):
                return self.keep(wd, "_ambiguous_in_reader_union")
            if j >= 0:
                return self.rewrite(wd, rd[j])
        return self.keep(wd)

    def shadowed(self, w: Any, union: list[Any], j: int) -> bool:
        """fastavro takes the first reader branch whose short name is the writer's: one before
        Java's choice `j` with the same short name would be read instead."""
        if _kind(w) not in _NAMED:
            return False
        chosen = self.r.deref(union[j])
        return any(_kind(b) == _kind(chosen) and _short(b["name"]) == _short(chosen["name"])
                   for b in map(self.r.deref, union[:j]))

    def keep(self, w: Any, mark: str = "_unmatched") -> Any:
        """The writer's type where Java pairs it with no reader type: it fails on it when it
        reads it, or skips it. Its named types get a short name no reader type has, so that
        fastavro (which matches short names and their aliases) fails on it too."""
        w = self.w.deref(w)
        kind = _kind(w)
        if kind == "union":
            return [self.keep(b, mark) for b in w]
        if kind in _NAMED:
            return self.named(w, None, w["name"] + mark)
        if kind == "array":
            return {**_plain(w), "items": self.keep(w["items"], mark)}
        if kind == "map":
            return {**_plain(w), "values": self.keep(w["values"], mark)}
        return _plain(w)

    def named(self, w: dict[str, Any], r: dict[str, Any] | None, target: str) -> Any:
        """The writer's named type `w` as `target` (paired with reader type `r`, if any)."""
        pair = (id(w), id(r))
        if pair in self.emitted:
            return self.emitted[pair]  # defined already, or being defined (a recursive type)
        shape = _shape(w)
        if "." not in target:
            # A dotless name would take the namespace of wherever it is written (definition and
            # references alike); a namespace of its own pins it. fastavro matches short names.
            target = f"{_NULL_NAMESPACE}.{target}"
        if target in self.shapes:
            # Another writer type took the name (two writer types read as one reader type).
            # One of the same shape shares it; another gets the same short name in a namespace
            # of its own, which fastavro matches (it compares short names) as Java does.
            if r is not None and self.shapes[target] == shape:
                return target
            target = f"keyguard_{len(self.shapes)}.{target}"
        self.emitted[pair] = target
        self.shapes[target] = shape
        out = {k: v for k, v in _plain(w).items() if k not in ("namespace", "aliases")}
        out["name"] = target
        if _kind(w) == "record":
            out["fields"] = [self.field(w, r, f) for f in w["fields"]]
        return out


    def field(self, w: dict[str, Any], r: dict[str, Any] | None, f: dict[str, Any]) -> Any:
        """A writer field under the reader field's name (aliases applied as Java applies them),
        or, if Java skips it, under a name no reader field or alias has (fastavro would read
        it into a field by an alias Java does not apply here)."""
        rf = self.reader_field(w, r, f["name"]) if r is not None else None
        if rf is not None:
            return {**_plain(f), "name": rf["name"], "type": self.rewrite(f["type"], rf["type"])}
        name = f["name"]
        if r is not None and any(name in g.get("aliases", ()) for g in r["fields"]):
            name = f"{name}_keyguard_skipped"
        return {**_plain(f), "name": name, "type": self.keep(f["type"])}


def _shape(s: dict[str, Any]) -> str:
    """A named type's definition without its names, to tell equal definitions apart."""
    body = {k: v for k, v in s.items() if k not in ("name", "namespace", "aliases")}
    return json.dumps(body, sort_keys=True, default=str)


def _plain(s: Any) -> Any:
    """A schema node without fastavro's bookkeeping keys."""
    if isinstance(s, dict):
        return {k: v for k, v in s.items() if not k.startswith("__")}
    return s
