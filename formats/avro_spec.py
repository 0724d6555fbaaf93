"""Avro schemas checked against the Avro specification, before anything judges them.

fastavro's parser accepts much that Avro Java (and so a Confluent registry) rejects: a record
named `1bad`, an enum without symbols, a fixed of size -1, a record without `fields`, duplicate
field names, defaults that do not match their type. `validate_avro` checks what the
specification (1.12, "Schema Declaration") demands, names the JSON pointer of the first
violation and the rule it breaks, and leaves fastavro the rest.

Defaults are checked as JSON values of their field's type; a union field's default must match
the union's first branch, as the specification said until Avro 1.12 and as Avro Java 1.11 (and
so Flink's and most deployed readers) enforces; Avro 1.12 accepts any branch.

Logical types are lenient, as the specification says ("an implementation must ignore a logical
type it does not recognise or whose parameters are invalid"), like Avro Java's
`LogicalTypes.fromSchemaIgnoreInvalid`: a decimal without a precision, or a date on a string,
is its underlying type. `valid_decimal` says whether a decimal annotation counts.

The walk recurses once per nesting level: callers check the depth first
(`keyguard.formats.schemajson.check_depth`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from keyguard.formats.avro_vocab import KNOWN_TYPES, ORDERS, PRIMITIVES
from keyguard.formats.errors import SchemaError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT_RANGE = {"int": 2**31, "long": 2**63}
_SPECIAL_FLOATS = ("NaN", "Infinity", "-Infinity")


def valid_decimal(s: Mapping[str, Any]) -> bool:
    """Whether a `decimal` logical type is valid (else it is ignored, per the specification)."""
    precision: Any = s.get("precision")
    scale: Any = s.get("scale", 0)
    if not (_is_int(precision) and _is_int(scale)) or not 0 <= scale <= precision \
            or precision <= 0:
        return False
    if s.get("type") == "fixed":
        size: Any = s.get("size")
        if not _is_int(size) or size < 1:
            return False
        return bool(precision <= math.floor(math.log10(2) * (8 * size - 1)))
    return s.get("type") == "bytes"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def pointer(parts: tuple[str, ...]) -> str:
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def validate_avro(schema: Any) -> None:
    """SchemaError at the first place `schema` (JSON data) breaks the Avro specification."""
    _Validator().schema(schema, None, ())


class _Validator:
    def __init__(self) -> None:
        #: Named types by full name, as defined so far (a name must be defined before use).
        self.named: dict[str, Any] = {}
        #: The full name of each named type's definition, by the definition's id.
        self.fullnames: dict[int, str] = {}

    def fail(self, at: tuple[str, ...], rule: str, hint: str | None = None) -> SchemaError:
        return SchemaError(f"invalid Avro schema at {pointer(at)}: {rule}",
                           hint=hint or "fix the schema so that it follows the Avro specification")

    # --- names -----------------------------------------------------------------------------

    def fullname(self, s: Mapping[str, Any], ns: str | None, at: tuple[str, ...]) -> str:
        name = s.get("name")
        if "name" not in s:
            raise self.fail(at, f"a {s['type']} needs a 'name'")
        if not isinstance(name, str):
            raise self.fail((*at, "name"), f"the name must be a string, got {name!r}")
        namespace = s.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise self.fail((*at, "namespace"), f"the namespace must be a string, got "
                            f"{namespace!r}")
        if "." in name:
            full = name
            self.check_dotted(name, (*at, "name"), "name")
        else:
            self.check_name(name, (*at, "name"), "name")
            ns = namespace if namespace is not None else ns
            if ns:
                self.check_dotted(ns, (*at, "namespace"), "namespace")
            full = f"{ns}.{name}" if ns else name
        if full.rpartition(".")[2] in PRIMITIVES:
            raise self.fail((*at, "name"), f"{full!r}: a primitive type name cannot name a "
                            f"{s['type']}", hint="rename the type")
        return full

    def check_name(self, name: Any, at: tuple[str, ...], what: str) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise self.fail(at, f"{name!r} is not a valid Avro {what} (a name starts with a "
                            "letter or _ and has only letters, digits and _)")

    def check_dotted(self, full: str, at: tuple[str, ...], what: str) -> None:
        for part in full.split("."):
            if not _NAME.match(part):
                raise self.fail(at, f"{full!r} is not a valid Avro {what}: {part!r} is not a "
                                "valid name (each dot-separated part starts with a letter or _ "
                                "and has only letters, digits and _)")

    def define(self, full: str, s: Mapping[str, Any], at: tuple[str, ...]) -> None:
        if full in self.named:
            raise self.fail((*at, "name"), f"the named type {full!r} is defined twice",
                            hint="define a named type once and refer to it by name after that")
        self.named[full] = s
        self.fullnames[id(s)] = full

    def lookup(self, name: str, ns: str | None, at: tuple[str, ...]) -> Any:
        candidates = [name] if "." in name or not ns else [f"{ns}.{name}", name]
        for c in candidates:
            if c in self.named:
                return self.named[c]
        raise self.fail(at, f"unknown type {name!r}", hint="use a primitive type, or a named "
                        "type defined earlier in the schema (check the spelling and namespace)")

    # --- types -----------------------------------------------------------------------------

    def schema(self, s: Any, ns: str | None, at: tuple[str, ...]) -> Any:
        """Validate `s`; returns it resolved (a named reference becomes its definition)."""
        if isinstance(s, str):
            return s if s in PRIMITIVES else self.lookup(s, ns, at)
        if isinstance(s, list):
            return self.union(s, ns, at)
        if not isinstance(s, dict):
            raise self.fail(at, f"{s!r} is not an Avro schema (a type name, an object or a union "
                            "list)")
        if "type" not in s:
            raise self.fail(at, "an object schema needs a 'type'")
        t = s["type"]
        if isinstance(t, (list, dict)):
            return self.schema(t, ns, (*at, "type"))
        if not isinstance(t, str):
            raise self.fail((*at, "type"), f"the type must be a string, got {t!r}")
        if t in PRIMITIVES:
            return s
        if t in ("record", "error"):
            return self.record(s, ns, at)
        if t == "enum":
            return self.enum(s, ns, at)
        if t == "fixed":
            return self.fixed(s, ns, at)
        if t == "array":
            if "items" not in s:
                raise self.fail(at, "an array needs 'items'")
            self.schema(s["items"], ns, (*at, "items"))
            return s
        if t == "map":
            if "values" not in s:
                raise self.fail(at, "a map needs 'values'")
            self.schema(s["values"], ns, (*at, "values"))
            return s
        return self.lookup(t, ns, (*at, "type"))

    def union(self, branches: list[Any], ns: str | None, at: tuple[str, ...]) -> list[Any]:
        seen: dict[str, int] = {}
        for i, b in enumerate(branches):
            here = (*at, str(i))
            if isinstance(b, list) or (isinstance(b, dict) and isinstance(b.get("type"), list)):
                raise self.fail(here, "a union may not immediately contain another union")
            resolved = self.schema(b, ns, here)
            key = self.fullnames.get(id(resolved)) or _branch_key(resolved)
            if key in seen:
                raise self.fail(here, f"the union has two branches of type {key} (branches "
                                f"{seen[key]} and {i})", hint="a union may hold each type, or "
                                "each named type, once")
            seen[key] = i
        return branches

    def record(self, s: Mapping[str, Any], ns: str | None, at: tuple[str, ...]) -> Any:
        full = self.fullname(s, ns, at)
        self.define(full, s, at)
        self.aliases(s, (*at,))
        inner = full.rpartition(".")[0] or None
        if "fields" not in s:
            raise self.fail(at, f"record {full!r} needs 'fields' (a list, possibly empty)")
        fields = s["fields"]
        if not isinstance(fields, list):
            raise self.fail((*at, "fields"), f"'fields' of record {full!r} must be a list")
        names: set[str] = set()
        for i, f in enumerate(fields):
            here = (*at, "fields", str(i))
            if not isinstance(f, dict):
                raise self.fail(here, f"a field must be an object, got {f!r}")
            if "name" not in f:
                raise self.fail(here, "a field needs a 'name'")
            self.check_name(f["name"], (*here, "name"), "field name")
            if f["name"] in names:
                raise self.fail((*here, "name"), f"record {full!r} has two fields named "
                                f"{f['name']!r}", hint="field names are unique in a record")
            names.add(f["name"])
            if "type" not in f:
                raise self.fail(here, f"field {f['name']!r} needs a 'type'")
            ftype = self.schema(f["type"], inner, (*here, "type"))
            if "order" in f and f["order"] not in ORDERS:
                raise self.fail((*here, "order"), f"order {f['order']!r} is not one of "
                                f"{', '.join(ORDERS)}")
            self.aliases(f, here, field=True)
            if "default" in f:
                problem = self.default_problem(ftype, f["default"], inner)
                if problem:
                    raise self.fail((*here, "default"), f"the default of field {f['name']!r} "
                                    f"does not match its type: {problem}",
                                    hint="give a default of the field's type; a union "
                                    "field's default matches the union's first branch (Avro "
                                    "1.11 and older readers require it), so put that type "
                                    "first or change the default")
        return s

    def aliases(self, s: Mapping[str, Any], at: tuple[str, ...], field: bool = False) -> None:
        if "aliases" not in s:
            return
        aliases = s["aliases"]
        if not isinstance(aliases, list):
            raise self.fail((*at, "aliases"), "aliases must be a list of names")
        for i, a in enumerate(aliases):
            if field:
                self.check_name(a, (*at, "aliases", str(i)), "alias")
            elif not isinstance(a, str):
                raise self.fail((*at, "aliases", str(i)), f"alias {a!r} is not a name")
            else:
                self.check_dotted(a, (*at, "aliases", str(i)), "alias")

    def enum(self, s: Mapping[str, Any], ns: str | None, at: tuple[str, ...]) -> Any:
        full = self.fullname(s, ns, at)
        self.define(full, s, at)
        self.aliases(s, at)
        if "symbols" not in s:
            raise self.fail(at, f"enum {full!r} needs 'symbols'")
        symbols = s["symbols"]
        if not isinstance(symbols, list):
            raise self.fail((*at, "symbols"), f"the symbols of enum {full!r} must be a list")
        if not symbols:
            raise self.fail((*at, "symbols"), f"enum {full!r} has no symbols",
                            hint="an enum needs at least one symbol")
        seen: set[str] = set()
        for i, sym in enumerate(symbols):
            self.check_name(sym, (*at, "symbols", str(i)), "enum symbol")
            if sym in seen:
                raise self.fail((*at, "symbols", str(i)), f"enum {full!r} lists symbol {sym!r} "
                                "twice", hint="enum symbols are unique")
            seen.add(sym)
        if "default" in s and s["default"] not in seen:
            raise self.fail((*at, "default"), f"the default {s['default']!r} of enum {full!r} is "
                            "not one of its symbols")
        return s

    def fixed(self, s: Mapping[str, Any], ns: str | None, at: tuple[str, ...]) -> Any:
        full = self.fullname(s, ns, at)
        self.define(full, s, at)
        self.aliases(s, at)
        if "size" not in s:
            raise self.fail(at, f"fixed {full!r} needs a 'size'")
        size = s["size"]
        if not _is_int(size) or size < 0:
            raise self.fail((*at, "size"), f"the size of fixed {full!r} must be an integer >= 0, "
                            f"got {size!r}")
        return s

    # --- defaults ----------------------------------------------------------------------------

    def default_problem(self, s: Any, v: Any, ns: str | None) -> str | None:
        """Why `v` is not a valid default of type `s` (JSON, per the spec); None if it is."""
        s = self.resolve(s, ns)
        if isinstance(s, list):
            if not s:
                return "an empty union has no values"
            first = self.resolve(s[0], ns)
            problem = self.default_problem(first, v, ns)
            return None if problem is None else f"{problem} (the union's first branch)"
        t = s if isinstance(s, str) else s["type"]
        if t == "array":
            return self._array_default_problem(s, v, ns)
        if t == "map":
            return self._map_default_problem(s, v, ns)
        if t in ("record", "error"):
            return self._record_default_problem(s, v)
        return _scalar_default_problem(t, s, v)

    def _array_default_problem(self, s: Mapping[str, Any], v: Any, ns: str | None) -> str | None:
        if not isinstance(v, list):
            return f"{_show(v)} is not an array"
        for i, item in enumerate(v):
            problem = self.default_problem(s["items"], item, ns)
            if problem:
                return f"item {i}: {problem}"
        return None

    def _map_default_problem(self, s: Mapping[str, Any], v: Any, ns: str | None) -> str | None:
        if not isinstance(v, dict):
            return f"{_show(v)} is not an object (map)"
        for k, item in v.items():
            problem = self.default_problem(s["values"], item, ns)
            if problem:
                return f"value {k!r}: {problem}"
        return None

    def _record_default_problem(self, s: Mapping[str, Any], v: Any) -> str | None:
        if not isinstance(v, dict):
            return f"{_show(v)} is not an object (record {s['name']!r})"
        inner = self.fullnames[id(s)].rpartition(".")[0] or None
        for f in s["fields"]:
            if f["name"] in v:
                problem = self.default_problem(f["type"], v[f["name"]], inner)
                if problem:
                    return f"field {f['name']!r}: {problem}"
            elif "default" not in f:
                return f"field {f['name']!r} is missing and has no default"
        return None

    def resolve(self, s: Any, ns: str | None) -> Any:
        while True:
            if isinstance(s, str) and s not in PRIMITIVES:
                s = self.lookup(s, ns, ())
            elif isinstance(s, dict) and isinstance(s.get("type"), (list, dict)):
                s = s["type"]
            elif isinstance(s, dict) and s.get("type") not in KNOWN_TYPES:
                s = self.lookup(str(s.get("type")), ns, ())
            else:
                return s


def _scalar_default_problem(t: str, s: Any, v: Any) -> str | None:
    """Why `v` is not a valid default of the primitive, fixed or enum type `t` (node `s`)."""
    if t == "null":
        return None if v is None else f"{_show(v)} is not null"
    if t == "boolean":
        return None if isinstance(v, bool) else f"{_show(v)} is not a boolean"
    if t in _INT_RANGE:
        if not _is_int(v):
            return f"{_show(v)} is not an integer ({t})"
        bound = _INT_RANGE[t]
        return None if -bound <= v < bound else f"{_show(v)} is out of range for {t}"
    if t in ("float", "double"):
        ok = (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in _SPECIAL_FLOATS
        return None if ok else f"{_show(v)} is not a number ({t})"
    if t in ("bytes", "string"):
        return None if isinstance(v, str) else f"{_show(v)} is not a string ({t})"
    if t == "fixed":
        if not isinstance(v, str):
            return f"{_show(v)} is not a string (fixed)"
        return None if len(v) == s["size"] else f"{_show(v)} is not {s['size']} bytes long"
    if t == "enum":
        return None if isinstance(v, str) and v in s["symbols"] else \
            f"{_show(v)} is not a symbol of enum {s['name']!r}"
    return None


def _branch_key(s: Any) -> str:
    """What makes two unnamed union branches the same: their type."""
    return s if isinstance(s, str) else str(s["type"])


def _show(v: Any) -> str:
    import json

    text = json.dumps(v)
    return text if len(text) <= 40 else text[:37] + "..."
