"""Key-byte rules of avro and avro-confluent: Avro's binary encoding, and Confluent's schema id.

Judged by the binary encoding, not by Avro's resolution rules: a reader can resolve int to
long, but what matters for a compacted topic is whether the writer emits the same bytes. One
recursive walk over both schemas (like Avro's SchemaCompatibility) yields every change with its
location. For avro-confluent the registry id sits in every key, so any change the registry sees
as a new schema breaks every key, even a FULL-compatible one: those rules are every framed
format's, `guard/keys/confluent.py`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from keyguard.formats.avro_schema import parse_avro, to_avro_schema
from keyguard.formats.avro_vocab import NAMED, PRIMITIVES, TIME_LOGICAL_TYPES, full_name
from keyguard.formats.types import IntegralType, RowType, TimestampLtzType, TimestampType, TimeType
from keyguard.guard.keys.side import (
    Change,
    FamilyContext,
    KeySide,
    effective_options,
    factory,
    pair_fields,
)
from keyguard.guard.rules import (
    AVRO_ENUM_SYMBOLS_APPENDED,
    AVRO_ENUM_SYMBOLS_CHANGED,
    AVRO_FIXED_SIZE_CHANGED,
    AVRO_METADATA_CHANGED,
    AVRO_TIMESTAMP_UNIT_CHANGED,
    AVRO_UNION_BRANCHES_CHANGED,
    DECIMAL_PRECISION_NARROWED,
    DECIMAL_PRECISION_WIDENED,
    DECIMAL_SCALE_CHANGED,
    FIELD_RENAMED_POSITIONAL,
    FLOAT_DOUBLE_CHANGED,
    FORMAT_OPTION_CHANGED,
    FORMAT_OPTION_NO_KEY_EFFECT,
    INTEGER_WIDENED,
    KEY_FIELD_ADDED,
    KEY_FIELD_REMOVED,
    KEY_FIELDS_REORDERED,
    KEY_TYPE_CHANGED,
    KEY_TYPE_NARROWED,
    SAME_BYTES_TYPE_CHANGE,
    TIME_PRECISION_CHANGED,
)

#: Metadata that no Avro binary encoding contains.
_META = ("doc", "aliases", "default", "order", "namespace", "name")


def side_schema(side: KeySide) -> Any:
    """The exact Avro schema a side writes with: given, the `schema` option, or Flink's."""

    if side.avro_schema is not None:
        return parse_avro(side.avro_schema)
    given = side.options.get("schema") or side.options.get("schema-registry.schema")
    if given:
        return parse_avro(given)
    # Formats without the option (avro-confluent) always write the legacy mapping.
    legacy = bool(effective_options(side).get("timestamp_mapping.legacy", True))
    return to_avro_schema(side.row_type, legacy_timestamp_mapping=legacy)


def named_types(schema: Any, ns: str | None = None, out: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """Every named type by full name (and short name), with its enclosing namespace resolved."""
    out = {} if out is None else out
    if isinstance(schema, list):
        for b in schema:
            named_types(b, ns, out)
    elif isinstance(schema, Mapping):
        kind = schema.get("type")
        if kind in NAMED:
            full = full_name(str(schema["name"]), schema.get("namespace", ns))
            out[full] = schema
            out.setdefault(full.rpartition(".")[2], schema)
            inner = full.rpartition(".")[0] or None
            for f in schema.get("fields", ()):
                named_types(f["type"], inner, out)
        elif kind == "array":
            named_types(schema["items"], ns, out)
        elif kind == "map":
            named_types(schema["values"], ns, out)
        elif isinstance(kind, (Mapping, list)):
            named_types(kind, ns, out)
    return out


class AvroWalk:
    """One comparison of an old and a new writer schema, by their binary encodings.

    Recursive schemas are walked as Avro's SchemaCompatibility walks them: a pair of nodes
    already being compared further up is not compared again (its changes are found there).
    """

    __slots__ = ("in_progress", "new_named", "old_named")

    def __init__(self, old_named: dict[str, Any], new_named: dict[str, Any]) -> None:
        self.old_named = old_named
        self.new_named = new_named
        self.in_progress: set[tuple[int, int]] = set()

    def resolve(self, s: Any, named: dict[str, Any]) -> Any:
        while True:
            if isinstance(s, str) and s not in PRIMITIVES:
                s = named[s.rpartition(".")[2]] if s not in named else named[s]
            elif isinstance(s, Mapping) and isinstance(s.get("type"), (Mapping, list)):
                s = s["type"]
            elif isinstance(s, Mapping) and s.get("type") in PRIMITIVES and len(s) == 1:
                s = s["type"]
            elif isinstance(s, Mapping) and isinstance(s.get("type"), str) and \
                    s["type"] not in PRIMITIVES and s["type"] not in NAMED and \
                    s["type"] not in ("array", "map"):
                s = s["type"]
            else:
                return s

    def walk(self, old: Any, new: Any, path: str) -> Iterator[Change]:
        o = self.resolve(old, self.old_named)
        n = self.resolve(new, self.new_named)
        pair = (id(o), id(n))
        if pair in self.in_progress:
            return
        self.in_progress.add(pair)
        try:
            yield from self._walk(o, n, path)
        finally:
            self.in_progress.discard(pair)

    def _walk(self, o: Any, n: Any, path: str) -> Iterator[Change]:
        if isinstance(o, list) or isinstance(n, list):
            yield from self._union(o, n, path)
            return
        ok, nk = _kind(o), _kind(n)
        ol, nl = _logical(o), _logical(n)
        what = f"'{path or '$'}' {_show(o)} -> {_show(n)}"
        if ol == "decimal" or nl == "decimal":
            yield from self._decimal(o, n, path, what)
        elif ol != nl and (ol or nl):
            yield _logical_change(ol, nl, ok == nk, path, what)
        elif ok == nk:
            yield from self._same_kind(o, n, ok, path, what)
        else:
            yield _kind_change(ok, nk, path, what)

    def _same_kind(self, o: Any, n: Any, kind: str, path: str, what: str) -> Iterator[Change]:
        """Two schemas of one kind: a named type's metadata and body, a container's items."""
        if kind == "record":
            yield from self._meta(o, n, path)
            yield from self._record(o, n, path)
        elif kind == "enum":
            yield from self._meta(o, n, path)
            yield from self._enum(o, n, path)
        elif kind == "fixed":
            yield from self._meta(o, n, path)
            if o["size"] != n["size"]:
                yield Change(AVRO_FIXED_SIZE_CHANGED, path,
                             f"{what}: fixed size {o['size']} -> {n['size']}")
        elif kind == "array":
            yield from self.walk(o["items"], n["items"], f"{path}[]")
        elif kind == "map":
            yield from self.walk(o["values"], n["values"], f"{path}{{value}}")

    def _union(self, o: Any, n: Any, path: str) -> Iterator[Change]:
        ob = o if isinstance(o, list) else [o]
        nb = n if isinstance(n, list) else [n]
        ob = [self.resolve(b, self.old_named) for b in ob]
        nb = [self.resolve(b, self.new_named) for b in nb]
        where = path or "$"
        problems: list[str] = []
        matched: list[tuple[Any, Any]] = []
        for i, b in enumerate(ob):
            j = _match_branch(b, nb)
            if j is None:
                problems.append(f"branch {_show(b)} is gone")
            else:
                matched.append((b, nb[j]))
                if (isinstance(o, list), i) != (isinstance(n, list), j):
                    problems.append(f"{_show(b)} is written as " + (
                        f"branch {j}" if isinstance(n, list) else "no union") + " instead of " + (
                        f"branch {i}" if isinstance(o, list) else "no union"))
        if problems:
            yield Change(AVRO_UNION_BRANCHES_CHANGED, path, f"'{where}' {_show(o)} -> {_show(n)}: "
                         + "; ".join(problems) + " (a union value starts with its branch index)")
        for b, c in matched:
            if _kind(b) != "null":
                yield from self.walk(b, c, path)

    def _decimal(self, o: Any, n: Any, path: str, what: str) -> Iterator[Change]:
        if _logical(o) != _logical(n):
            yield Change(KEY_TYPE_CHANGED, path, f"{what}: decimal vs not decimal")
            return
        op, os_ = int(o["precision"]), int(o.get("scale", 0))
        np_, ns = int(n["precision"]), int(n.get("scale", 0))
        ok, nk = _kind(o), _kind(n)
        found = False
        if ok != nk:
            found = True
            yield Change(KEY_TYPE_CHANGED, path, f"{what}: decimal on {ok} vs {nk}")
        elif ok == "fixed" and o["size"] != n["size"]:
            found = True
            yield Change(AVRO_FIXED_SIZE_CHANGED, path,
                         f"{what}: fixed size {o['size']} -> {n['size']}")
        if ns != os_:
            found = True
            yield Change(DECIMAL_SCALE_CHANGED, path,
                         f"{what}: Avro writes the unscaled integer, which the "
                         f"scale multiplies (12.50 is 1250 at scale 2, {1250 * 10 ** (ns - 2)} "
                         f"at scale {ns})" if ns >= 2 else
                         f"{what}: Avro writes the unscaled integer; another scale is another "
                         "integer")
        if np_ - ns < op - os_:
            found = True
            yield Change(DECIMAL_PRECISION_NARROWED, path,
                         f"{what}: {np_ - ns} integer digits instead of "
                         f"{op - os_}; larger existing keys cannot be written")
        if not found:
            yield Change(DECIMAL_PRECISION_WIDENED, path,
                         f"{what}: precision only bounds the range")

    def _record(self, o: Mapping[str, Any], n: Mapping[str, Any], path: str) -> Iterator[Change]:
        of, nf = list(o["fields"]), list(n["fields"])
        old_names = [f["name"] for f in of]
        new_names = [f["name"] for f in nf]
        pairs = _pair_fields(of, nf)
        prefix = f"{path}." if path else ""
        for j, f in enumerate(nf):
            if j not in pairs:
                yield Change(KEY_FIELD_ADDED,
                             prefix + f["name"], f"field '{prefix}{f['name']}' added to "
                             "the key record: every existing key lacks its bytes")
        for i, f in enumerate(of):
            if i not in pairs.values():
                yield Change(KEY_FIELD_REMOVED,
                             prefix + f["name"], f"field '{prefix}{f['name']}' removed "
                             "from the key record: existing keys hold its bytes")
        kept = [pairs[j] for j in sorted(pairs)]
        if kept != sorted(kept):
            yield Change(KEY_FIELDS_REORDERED, path or "$", f"key record fields reordered "
                         f"({', '.join(old_names)}) -> ({', '.join(new_names)}): Avro writes "
                         "fields in schema order")
        for j in sorted(pairs):
            yield from self._kept_field(of[pairs[j]], nf[j], prefix)

    def _kept_field(self, fo: Mapping[str, Any], fn: Mapping[str, Any],
                    prefix: str) -> Iterator[Change]:
        """A record field on both sides: its name, its metadata, then its type."""
        where = prefix + fn["name"]
        if fo["name"] != fn["name"]:
            yield Change(FIELD_RENAMED_POSITIONAL, where,
                         f"field '{prefix}{fo['name']}' renamed to "
                         f"'{where}': Avro binary carries no field names")
        changed = [k for k in ("doc", "aliases", "default", "order") if
                   _norm_meta(k, fo.get(k)) != _norm_meta(k, fn.get(k))]
        if changed:
            yield Change(AVRO_METADATA_CHANGED, where,
                         f"'{where}': {', '.join(changed)} changed; Avro "
                         "binary carries none of it")
        yield from self.walk(fo["type"], fn["type"], where)

    def _enum(self, o: Mapping[str, Any], n: Mapping[str, Any], path: str) -> Iterator[Change]:
        os_, ns = list(o["symbols"]), list(n["symbols"])
        moved = [s for i, s in enumerate(os_) if s in ns and ns.index(s) != i]
        gone = [s for s in os_ if s not in ns]
        where = path or "$"
        if moved or gone:
            parts = ([f"moved: {', '.join(moved)}"] if moved else []) + (
                [f"removed: {', '.join(gone)}"] if gone else [])
            yield Change(AVRO_ENUM_SYMBOLS_CHANGED, path, f"'{where}' enum symbols {os_} -> {ns} ("
                         + "; ".join(parts) + "): Avro writes a symbol's index")
        elif len(ns) > len(os_):
            yield Change(AVRO_ENUM_SYMBOLS_APPENDED, path, f"'{where}' enum symbols appended: "
                         f"{', '.join(ns[len(os_):])}")

    def _meta(self, o: Mapping[str, Any], n: Mapping[str, Any], path: str) -> Iterator[Change]:
        changed = []
        if _full(o) != _full(n):
            changed.append(f"name {_full(o)} -> {_full(n)}")
        for k in ("doc", "aliases", "default"):
            if o.get(k) != n.get(k):
                changed.append(k)
        if changed:
            yield Change(AVRO_METADATA_CHANGED,
                         path or "$", f"'{path or '$'}': {', '.join(changed)} changed; "
                         "Avro binary carries none of it")


def _pair_fields(of: list[Any], nf: list[Any]) -> dict[int, int]:
    """New field index -> old field index: by name or alias, else a renamed field in the same
    place (whose old name the new record does not use)."""
    new_names = [f["name"] for f in nf]
    by_old = {f["name"]: i for i, f in enumerate(of)}
    pairs: dict[int, int] = {}
    for j, f in enumerate(nf):
        cands = [f["name"], *f.get("aliases", ())]
        i = next((by_old[c] for c in cands if c in by_old), None)
        if i is not None and i not in pairs.values():
            pairs[j] = i
    for j in range(len(nf)):
        if j not in pairs and j < len(of) and j not in pairs.values() and \
                of[j]["name"] not in new_names:
            pairs[j] = j
    return pairs


def _logical_change(ol: str | None, nl: str | None, same_kind: bool, path: str,
                    what: str) -> Change:
    """Another logical type (not a decimal) on either side."""
    if ol in TIME_LOGICAL_TYPES and nl in TIME_LOGICAL_TYPES:
        if _unit(ol) == _unit(nl) and same_kind:
            return Change(SAME_BYTES_TYPE_CHANGE, path,
                          f"{what}: the same count of {_unit(ol)} since the epoch")
        return Change(AVRO_TIMESTAMP_UNIT_CHANGED, path,
                      f"{what}: another unit or kind of time, so the same "
                      "instant is another number")
    return Change(KEY_TYPE_CHANGED, path, f"{what}: another logical type, another value")


def _kind_change(ok: str, nk: str, path: str, what: str) -> Change:
    """Another Avro type, no logical type on either side."""
    if (ok, nk) == ("int", "long"):
        return Change(INTEGER_WIDENED, path, f"{what}: int and long are the same zig-zag varint")
    if (ok, nk) == ("long", "int"):
        return Change(KEY_TYPE_NARROWED, path,
                      f"{what}: existing keys beyond 32 bits cannot be written")
    if {ok, nk} == {"float", "double"}:
        return Change(FLOAT_DOUBLE_CHANGED, path, f"{what}: 4 vs 8 bytes")
    if (ok, nk) == ("string", "bytes"):
        return Change(SAME_BYTES_TYPE_CHANGE, path,
                      f"{what}: Avro writes both as length + bytes")
    if (ok, nk) == ("bytes", "string"):
        return Change(KEY_TYPE_NARROWED, path,
                      f"{what}: existing keys that are not UTF-8 cannot be written as a string")
    return Change(KEY_TYPE_CHANGED, path, f"{what}: another Avro type, other bytes")


def _unit(logical: str | None) -> str:
    """`millis`, `micros` or `nanos`; time-of-day types get a prefix so they never match."""
    unit = str(logical).rpartition("-")[2]
    return f"time-{unit}" if str(logical).startswith("time-") else unit


def _norm_meta(key: str, v: Any) -> Any:
    return None if key == "order" and v == "ascending" else v


def _full(s: Mapping[str, Any]) -> str:
    return full_name(str(s["name"]), s.get("namespace"))


def _kind(s: Any) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, list):
        return "union"
    k = s.get("type")
    if k == "error":
        return "record"
    return str(k)


def _logical(s: Any) -> str | None:
    return s.get("logicalType") if isinstance(s, Mapping) else None


def _show(s: Any) -> str:
    if isinstance(s, list):
        return "[" + ", ".join(_show(b) for b in s) + "]"
    if isinstance(s, str):
        return s
    k = _kind(s)
    lt = _logical(s)
    if lt == "decimal":
        return f"decimal({s.get('precision')}, {s.get('scale', 0)}) on {k}"
    if lt:
        return f"{k} {lt}"
    if k in NAMED or k == "record":
        return f"{k} {s.get('name')}"
    return k


def _match_branch(b: Any, branches: list[Any]) -> int | None:
    """The index of the new branch that writes old branch `b`'s values (same kind/name)."""
    kb = _kind(b)
    for j, c in enumerate(branches):
        if _kind(c) != kb:
            continue
        if kb in NAMED or kb == "record":
            if str(c.get("name")).rpartition(".")[2] != str(b.get("name")).rpartition(".")[2]:
                continue
        return j
    # A branch whose type changed to one written alike: int -> long, string <-> bytes.
    alike = {"int": "long", "string": "bytes", "bytes": "string"}.get(kb)
    return next((j for j, c in enumerate(branches) if _kind(c) == alike), None)


def avro_changes(old: KeySide, new: KeySide) -> Iterator[Change]:
    """Every change of the Avro binary encoding of the key, with its location.

    Then the row types: Flink's TINYINT..INT all write an Avro int and every TIMESTAMP(p <= 3) a
    timestamp-millis, so a narrower column changes keys the schemas cannot show.
    """
    os_, ns = side_schema(old), side_schema(new)
    w = AvroWalk(named_types(os_), named_types(ns))
    seen = set()
    for c in w.walk(os_, ns, ""):
        seen.add((c.rule, c.path))
        yield c
    for c in row_narrowing(old.row_type, new.row_type, ""):
        if (c.rule, c.path) not in seen and (AVRO_TIMESTAMP_UNIT_CHANGED, c.path) not in seen:
            yield c


_PRECISE = (TimeType, TimestampType, TimestampLtzType)


def row_narrowing(old: RowType, new: RowType, path: str) -> Iterator[Change]:
    """Columns whose range or precision shrank although their Avro type did not."""
    prefix = f"{path}." if path else ""
    for p in pair_fields(old.fields, new.fields):
        if p.old is None or p.new is None:
            continue
        o, n, where = p.old.type, p.new.type, prefix + p.new.name
        if isinstance(o, IntegralType) and isinstance(n, IntegralType) and n.bits < o.bits:
            yield Change(KEY_TYPE_NARROWED, where,
                         f"'{where}' {o.sql()} -> {n.sql()}: existing keys "
                         f"beyond {n.min_value}..{n.max_value} cannot be written")
        elif type(o) is type(n) and isinstance(o, _PRECISE) and isinstance(n, _PRECISE) \
                and n.precision < min(o.precision, 3 if isinstance(o, TimeType) else 9):
            yield Change(TIME_PRECISION_CHANGED, where,
                         f"'{where}' {o.sql()} -> {n.sql()}: the fraction is "
                         "truncated before it is written")
        elif isinstance(o, RowType) and isinstance(n, RowType):
            yield from row_narrowing(o, n, where)


def battery_hints(side: KeySide) -> dict[str, list[Any]]:
    """Values for top-level fields the row type cannot describe: enum symbols, fixed bytes."""
    schema = side_schema(side)
    named = named_types(schema)
    w = AvroWalk(named, named)
    rec = w.resolve(schema, named)
    if isinstance(rec, list):
        rec = next((w.resolve(b, named) for b in rec if b != "null"), None)
    out: dict[str, list[Any]] = {}
    if not isinstance(rec, Mapping) or _kind(rec) != "record":
        return out
    for f in rec["fields"]:
        t = w.resolve(f["type"], named)
        branches = [w.resolve(b, named) for b in t] if isinstance(t, list) else [t]
        for b in branches:
            if _kind(b) == "enum":
                out[f["name"]] = list(b["symbols"])
            elif _kind(b) == "fixed" and _logical(b) is None:
                size = int(b["size"])
                out[f["name"]] = [bytes(range(1, size + 1)), bytes(size), b"\xff" * size]
    return out


#: Options of an Avro key format with no effect on key bytes, or whose effect the schema walk
#: already judges. For a format that registers its schema, every option except the schema is
#: about the registry connection (`_quiet_options`).
_AVRO_NO_KEY_EFFECT = frozenset({"codec", "open.fastread", "timestamp_mapping.legacy"})


def _quiet_options(side: KeySide) -> frozenset[str] | None:
    """The options that cannot change the side's key bytes; None: all of them."""
    return None if factory(side.format).uses_registry else _AVRO_NO_KEY_EFFECT


def family_changes(old: KeySide, new: KeySide, ctx: FamilyContext) -> Iterator[Change]:
    """The avro key family's rules (its line in
    `keyguard.guard.catalog.KEY_FAMILIES`)."""
    encodings = {effective_options(s).get("encoding", "binary") for s in (old, new)}
    if "json" in encodings:
        # Avro's JSON encoding writes names and symbols, not indexes: judged by example.
        yield Change(FORMAT_OPTION_CHANGED,
                     "$", "Avro JSON encoding (encoding=json): keyguard judges "
                     "schema changes under it by example keys only", by_example=True)
    else:
        yield from avro_changes(old, new)
    oo, no = effective_options(old), effective_options(new)
    quiet = _quiet_options(new)
    for key in sorted(set(oo) | set(no)):
        a, b = oo.get(key), no.get(key)
        if a == b:
            continue
        if quiet is None or key in quiet:
            yield Change(FORMAT_OPTION_NO_KEY_EFFECT, key,
                         f"option '{key}' changed: no effect on key bytes "
                         "beyond the schema, which is checked field by field")
        elif ctx.by_example:
            yield ctx.battery_option(old, key, a, b)
        else:
            yield Change(FORMAT_OPTION_CHANGED, key,
                         f"option '{key}' {a!r} -> {b!r}: not judged")
