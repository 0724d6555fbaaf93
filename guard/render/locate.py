"""Where a finding's path is declared in a schema file: its line and column, or None.

A Finding names a place in the schema (`user_region`, `address.zip`, `tags[]`, `m{value}`, `$`
for the whole key) or an option. SARIF results and GitHub annotations point at that line of the
file the report names. Each schema type is read with its positions kept: an Avro schema (the
field's `"name"`, nested records, unions and named types followed), a JSON Schema (the
`"properties"` key, nested, local `$ref` and `oneOf`/`anyOf`/`allOf` followed), a `.proto` (the
field's declaration in the file's first message, the key message unless the `message` option
names another; nested messages followed) and a Flink `CREATE TABLE` (the column, its `ROW`
fields, and the WITH options). A path that is missing, or that could be declared in two places,
is None: never a wrong line.

Pure: text in, positions out. `SchemaLines.of(text, kind)` reads a text once for any number of
paths.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The schema types read here; `kind_of` names a file's.
AVRO, JSON, PROTOBUF, SQL = "AVRO", "JSON", "PROTOBUF", "SQL"
#: Deepest nesting followed (JSON values, `$ref` hops, SQL types): beyond it, nothing is located.
MAX_DEPTH = 100


@dataclass(frozen=True)
class Place:
    """A position in a text: line and column from 1, the column in UTF-16 code units (SARIF's
    default `columnKind`)."""

    line: int
    column: int

    @classmethod
    def at(cls, text: str, offset: int, line_starts: Sequence[int]) -> Place:
        """The place of `offset`; `line_starts`: the offset each line starts at."""
        line = bisect.bisect_right(line_starts, offset)
        start = line_starts[line - 1]
        return cls(line, len(text[start:offset].encode("utf-16-le")) // 2 + 1)


class _Unreadable(Exception):
    """The text is not what its type says: nothing in it is located."""


# --- paths --------------------------------------------------------------------------------

_STEP = re.compile(r"\[\]|\{key\}|\{value\}|[^.\[{]+")


def steps(path: str) -> list[str] | None:
    """`address.zip` -> [address, zip]; `tags[].x` -> [tags, [], x]; `m{value}` -> [m, {value}];
    None for what is no field path (`$`, a JSON pointer)."""
    if not path or path == "$" or path.startswith("/"):
        return None
    out = [m.group() for m in _STEP.finditer(path)]
    return out if "".join(out) == path.replace(".", "") else None


# --- JSON with positions ------------------------------------------------------------------

_JSON_TOKEN = re.compile(
    r'\s*(?:("(?:[^"\\]|\\.)*")|([{}\[\]:,])|(-?[0-9][0-9.eE+-]*|true|false|null))')


@dataclass
class Node:
    """A JSON value and the offset where it starts. `items`: an object's (key, key offset,
    value), an array's values; `value`: a string's."""

    kind: str  # object, array, string, literal
    pos: int
    items: list[Any] = field(default_factory=list)
    value: str | None = None
    _keys: dict[str, tuple[int, Node]] | None = None

    def get(self, key: str) -> tuple[int, Node] | None:
        """An object's member `key` (its first, as JSON readers keep): key offset, value."""
        if self.kind != "object":
            return None
        if self._keys is None:
            self._keys = {}
            for k, at, v in self.items:
                self._keys.setdefault(k, (at, v))
        return self._keys.get(key)

    def string(self, key: str) -> str | None:
        got = self.get(key)
        return got[1].value if got is not None and got[1].kind == "string" else None


def parse_json(text: str) -> Node:
    """JSON text -> Nodes with their offsets (`_Unreadable` when it is not JSON)."""
    tokens = [(m.start(1) if m.group(1) else m.start(2) if m.group(2) else m.start(3),
               m.group(1), m.group(2)) for m in _JSON_TOKEN.finditer(text)]
    i = 0

    def value(depth: int) -> Node:
        nonlocal i
        if depth > MAX_DEPTH or i >= len(tokens):
            raise _Unreadable
        pos, string, punct = tokens[i]
        i += 1
        if string is not None:
            return Node("string", pos, value=json.loads(string) if "\\" in string
                        else string[1:-1])
        if punct not in ("{", "["):
            if punct is not None:
                raise _Unreadable
            return Node("literal", pos)
        node = Node("object" if punct == "{" else "array", pos)
        close = "}" if punct == "{" else "]"
        while i < len(tokens) and tokens[i][2] != close:
            if node.kind == "object":
                key = value(depth + 1)
                if key.kind != "string" or i >= len(tokens) or tokens[i][2] != ":":
                    raise _Unreadable
                i += 1
                node.items.append((key.value, key.pos, value(depth + 1)))
            else:
                node.items.append(value(depth + 1))
            if i < len(tokens) and tokens[i][2] == ",":
                i += 1
        if i >= len(tokens):
            raise _Unreadable
        i += 1
        return node

    return value(0)


# --- Avro ---------------------------------------------------------------------------------

_NAMED = ("record", "error", "enum", "fixed")


class _Avro:
    def __init__(self, root: Node) -> None:
        #: Named types by full name and by short name: (definition, its namespace).
        self.named: dict[str, list[tuple[Node, str]]] = {}
        self._by_record: dict[int, dict[str, list[tuple[int, Node]]]] = {}
        self._collect(root, "", 0)

    def _collect(self, node: Node, namespace: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _Unreadable
        if node.kind == "object" and node.string("type") in _NAMED and node.string("name"):
            full = self._full(node, namespace)
            namespace = full.rpartition(".")[0]
            self.named.setdefault(full, []).append((node, namespace))
            short = full.rpartition(".")[2]
            if short != full:
                self.named.setdefault(short, []).append((node, namespace))
        children = node.items if node.kind == "array" else [v for _, _, v in node.items]
        for child in children:
            self._collect(child, namespace, depth + 1)

    @staticmethod
    def _full(node: Node, namespace: str) -> str:
        name = node.string("name") or ""
        if "." in name:
            return name
        ns = node.string("namespace")
        ns = namespace if ns is None else ns
        return f"{ns}.{name}" if ns else name

    def types(self, node: Node, namespace: str, depth: int = 0) -> Iterator[tuple[Node, str]]:
        """The schemas `node` may be, with their namespace: union branches and named
        references followed."""
        if depth > MAX_DEPTH:
            return
        if node.kind == "array":  # a union
            for branch in node.items:
                yield from self.types(branch, namespace, depth + 1)
        elif node.kind == "string":  # a primitive, or a named type's name
            name = node.value or ""
            found = (self.named.get(f"{namespace}.{name}") if namespace and "." not in name
                     else None) or self.named.get(name) or []
            if len(found) == 1:
                yield found[0]
        elif node.kind == "object":
            inner = node.get("type")
            kind = node.string("type")
            if inner is None:
                return
            if kind in _NAMED:
                yield node, self._full(node, namespace).rpartition(".")[0]
            elif kind is None or (kind not in ("array", "map") and node.get("logicalType")
                                  is None):
                yield from self.types(inner[1], namespace, depth + 1)  # {"type": ...} wrapped
            else:
                yield node, namespace

    def step(self, at: list[tuple[Node, str]], step: str) -> list[tuple[int, Node, str]]:
        out = []
        for node, ns in at:
            for t, tns in self.types(node, ns):
                kind = t.string("type")
                if step in ("[]", "{value}") and kind == ("array" if step == "[]" else "map"):
                    got = t.get("items" if step == "[]" else "values")
                    if got is not None:
                        out.append((got[0], got[1], tns))
                elif kind in ("record", "error") and step not in ("[]", "{key}", "{value}"):
                    out += [(pos, of_type, tns) for pos, of_type in self._fields(t).get(step, ())]
        return out

    def _fields(self, record: Node) -> dict[str, list[tuple[int, Node]]]:
        """A record's fields by name: where each name is written, and the field's type."""
        if id(record) not in self._by_record:
            fields = record.get("fields")
            index: dict[str, list[tuple[int, Node]]] = {}
            for f in fields[1].items if fields is not None else ():
                name, of_type = f.get("name"), f.get("type")
                if name is not None and name[1].value is not None and of_type is not None:
                    index.setdefault(name[1].value, []).append((name[1].pos, of_type[1]))
            self._by_record[id(record)] = index
        return self._by_record[id(record)]


def _follow(root: list[tuple[Any, str]], path: Sequence[str], step: Any) -> int | None:
    """The one offset the last step of `path` lands on, or None (missing or ambiguous).
    `step(at, s)`: from each (schema, scope) in `at`, where step `s` leads, with its offset."""
    at: list[tuple[int, Any, str]] = [(0, n, ns) for n, ns in root]
    for s in path:
        at = step([(n, ns) for _, n, ns in at], s)
        if not at:
            return None
    offsets = {pos for pos, _, _ in at}
    return offsets.pop() if len(offsets) == 1 else None


# --- JSON Schema --------------------------------------------------------------------------

class _JsonSchema:
    def __init__(self, root: Node) -> None:
        self.root = root

    def pointer(self, ref: str) -> Node | None:
        node: Node | None = self.root
        for part in ref[2:].split("/") if ref != "#" else ():
            part = part.replace("~1", "/").replace("~0", "~")
            if node is None:
                return None
            if node.kind == "array" and part.isdigit() and int(part) < len(node.items):
                node = node.items[int(part)]
            else:
                got = node.get(part)
                node = got[1] if got is not None else None
        return node

    def schemas(self, node: Node, depth: int = 0) -> Iterator[Node]:
        """`node` and what it is made of: local `$ref`s, `oneOf`, `anyOf`, `allOf`."""
        if node.kind != "object" or depth > MAX_DEPTH:
            return
        yield node
        ref = node.string("$ref")
        if ref is not None and ref.startswith("#"):
            target = self.pointer(ref)
            if target is not None:
                yield from self.schemas(target, depth + 1)
        for key in ("oneOf", "anyOf", "allOf"):
            got = node.get(key)
            for sub in got[1].items if got is not None and got[1].kind == "array" else ():
                yield from self.schemas(sub, depth + 1)

    def step(self, at: list[tuple[Node, str]], step: str) -> list[tuple[int, Node, str]]:
        out = []
        for node, _ in at:
            for s in self.schemas(node):
                if step in ("[]", "{value}"):
                    got = s.get("items" if step == "[]" else "additionalProperties")
                    if got is not None and got[1].kind == "object":
                        out.append((got[1].pos, got[1], ""))
                elif step != "{key}":
                    props = s.get("properties")
                    got = props[1].get(step) if props is not None else None
                    if got is not None:
                        out.append((got[0], got[1], ""))
        return out


# --- Protobuf -----------------------------------------------------------------------------

_PROTO_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      |(?P<word>\.?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)|(?P<number>[-+]?[0-9][\w.+-]*)|(?P<punct>\S)""",
    re.VERBOSE | re.DOTALL)


@dataclass
class _ProtoField:
    pos: int
    type: str
    map_value: str | None = None


@dataclass
class _Message:
    name: str  # full name within the file, with the package
    pos: int
    fields: dict[str, _ProtoField] = field(default_factory=dict)


class _Proto:
    def __init__(self, text: str) -> None:
        self.toks = [(m.lastgroup, m.group(), m.start()) for m in _PROTO_TOKEN.finditer(text)
                     if m.lastgroup not in ("ws", "comment")]
        self.i = 0
        self.package = ""
        self.messages: dict[str, _Message] = {}
        self.top: list[_Message] = []
        self._file()

    def _at(self, text: str) -> bool:
        return self.i < len(self.toks) and self.toks[self.i][1] == text

    def _skip_statement(self) -> None:
        """To the end of a statement: its `;`, or its `{ ... }` block."""
        depth = 0
        while self.i < len(self.toks):
            t = self.toks[self.i][1]
            self.i += 1
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if depth <= 0:
                    return
            elif t == ";" and depth == 0:
                return

    def _file(self) -> None:
        while self.i < len(self.toks):
            word = self.toks[self.i][1]
            if word == "package" and self.i + 1 < len(self.toks):
                self.package = self.toks[self.i + 1][1].lstrip(".")
                self._skip_statement()
            elif word == "message":
                self.top.append(self._message(self.package, 0))
            else:
                self._skip_statement()

    def _message(self, scope: str, depth: int) -> _Message:
        if depth > MAX_DEPTH or self.i + 2 >= len(self.toks) or self.toks[self.i + 2][1] != "{":
            raise _Unreadable
        pos = self.toks[self.i][2]
        name = f"{scope}.{self.toks[self.i + 1][1]}" if scope else self.toks[self.i + 1][1]
        msg = self.messages.setdefault(name, _Message(name, pos))
        self.i += 3
        self._body(msg, depth)
        return msg

    def _body(self, msg: _Message, depth: int) -> None:
        while self.i < len(self.toks) and not self._at("}"):
            kind, word, _ = self.toks[self.i]
            if word == "message":
                self._message(msg.name, depth + 1)
            elif word == "oneof" and self.i + 2 < len(self.toks) and \
                    self.toks[self.i + 2][1] == "{":
                self.i += 3
                self._body(msg, depth + 1)
            elif word in ("enum", "option", "reserved", "extensions", "extend", "group",
                          "service") or kind != "word":
                self._skip_statement()
            else:
                self._field(msg)
        if self.i >= len(self.toks):
            raise _Unreadable  # the message is not closed
        self.i += 1

    def _field(self, msg: _Message) -> None:
        if self.toks[self.i][1] in ("optional", "repeated", "required"):
            self.i += 1
        map_value = None
        if self._at("map") and self.i + 1 < len(self.toks) and self.toks[self.i + 1][1] == "<":
            close = next((j for j in range(self.i, len(self.toks)) if self.toks[j][1] == ">"),
                         None)
            if close is None:
                raise _Unreadable
            map_value = self.toks[close - 1][1]
            type_name, self.i = "map", close + 1
        else:
            type_name = self.toks[self.i][1]
            self.i += 1
        if self.i + 1 < len(self.toks) and self.toks[self.i + 1][1] == "=":
            kind, name, pos = self.toks[self.i]
            if kind == "word":
                msg.fields[name] = _ProtoField(pos, type_name, map_value)
        self._skip_statement()

    def resolve(self, type_name: str, scope: str) -> _Message | None:
        """A field's message type, by protobuf's scoping: innermost scope outwards."""
        if type_name.startswith("."):
            return self.messages.get(type_name[1:])
        while True:
            found = self.messages.get(f"{scope}.{type_name}" if scope else type_name)
            if found is not None or not scope:
                return found
            scope = scope.rpartition(".")[0]

    def root(self) -> _Message | None:
        """The first message, unless another message uses it as a field's type (then the key
        message is another one, named by the `message` option, which the file does not say)."""
        if not self.top:
            return None
        first = self.top[0]
        for m in self.messages.values():
            for f in m.fields.values():
                for t in (f.type, f.map_value):
                    if t and self.resolve(t, m.name) is first and m is not first:
                        return None
        return first

    def step(self, at: list[tuple[Any, str]], step: str) -> list[tuple[int, Any, str]]:
        """From a message (the root), or from a field declared in message `scope`."""
        out: list[tuple[int, Any, str]] = []
        for item, scope in at:
            msg: _Message | None = item if isinstance(item, _Message) else None
            if isinstance(item, _ProtoField):
                if step in ("[]", "{key}"):  # a repeated field's items, a map's keys
                    out.append((item.pos, item, scope))
                    continue
                if step == "{value}":
                    if item.map_value is not None:
                        out.append((item.pos, _ProtoField(item.pos, item.map_value), scope))
                    continue
                msg = self.resolve(item.type, scope)
            if msg is not None and step in msg.fields:
                f = msg.fields[step]
                out.append((f.pos, f, msg.name))
        return out


# --- Flink SQL ----------------------------------------------------------------------------

_CLAUSE = {"NOT", "NULL", "COMMENT", "METADATA", "PRIMARY", "CONSTRAINT", "VIRTUAL"}


@dataclass
class _SqlType:
    pos: int
    fields: dict[str, tuple[int, _SqlType]] = field(default_factory=dict)
    element: _SqlType | None = None
    key: _SqlType | None = None
    value: _SqlType | None = None


class _Sql:
    def __init__(self, text: str) -> None:
        from keyguard.formats.flink_ddl import statement_tokens  # lazy: only for a .sql file

        self.toks = statement_tokens(text)
        self.i = 0
        self.columns: dict[str, tuple[int, _SqlType]] = {}
        self.options: dict[str, tuple[int, str]] = {}
        self.start = self.toks[0].pos if self.toks else 0
        while self.i < len(self.toks) and not self.toks[self.i].is_punct("("):
            self.i += 1
        self.i += 1
        self._columns()
        while self.i < len(self.toks) and self.toks[self.i].upper != "WITH":
            self.i += 1
        self._with()

    @property
    def tok(self) -> Any:
        if self.i >= len(self.toks):
            raise _Unreadable
        return self.toks[self.i]

    def _name(self) -> tuple[str, int]:
        t = self.tok
        self.i += 1
        if t.kind == "quoted":
            return t.text[1:-1].replace("``", "`"), t.pos
        if t.kind != "word":
            raise _Unreadable
        return t.text, t.pos

    def _columns(self) -> None:
        while True:
            if self.tok.upper in ("PRIMARY", "CONSTRAINT", "WATERMARK"):
                self._to_end()
            else:
                name, pos = self._name()
                if self.tok.upper == "AS":  # computed: written nowhere
                    self._to_end()
                else:
                    declared = self._type(0)
                    if not self._to_end():
                        self.columns[name] = (pos, declared)
            if self.tok.is_punct(")"):
                self.i += 1
                return
            self.i += 1  # the comma

    def _to_end(self) -> bool:
        """To the `,` or `)` that ends a column list entry; whether it was a METADATA column."""
        depth, metadata = 0, False
        while True:
            t = self.tok
            if depth == 0 and (t.is_punct(",") or t.is_punct(")")):
                return metadata
            metadata = metadata or t.upper == "METADATA"
            depth += t.is_punct("(")
            depth -= t.is_punct(")")
            self.i += 1

    def _type(self, depth: int) -> _SqlType:
        if depth > MAX_DEPTH:
            raise _Unreadable
        t = self.tok
        node = _SqlType(t.pos)
        word = t.upper
        if word in ("ROW", "ARRAY", "MULTISET", "MAP") and self.i + 1 < len(self.toks) and (
                self.toks[self.i + 1].is_punct("<") or self.toks[self.i + 1].is_punct("(")):
            self.i += 2
            if word == "ROW":
                while not (self.tok.is_punct(">") or self.tok.is_punct(")")):
                    name, pos = self._name()
                    node.fields[name] = (pos, self._type(depth + 1))
                    while not (self.tok.is_punct(",") or self.tok.is_punct(">")
                               or self.tok.is_punct(")")):
                        self.i += 1  # NOT NULL, COMMENT '...'
                    self.i += self.tok.is_punct(",")
            elif word == "MAP":
                node.key = self._type(depth + 1)
                self.i += self.tok.is_punct(",")
                node.value = self._type(depth + 1)
            else:
                node.element = self._type(depth + 1)
            self.i += 1  # > or )
            return node
        depth_in = 0
        while True:  # an atomic type: words and (precision, scale)
            t = self.tok
            if depth_in == 0 and (t.is_punct(",") or t.is_punct(")") or t.is_punct(">")
                                  or (t.upper in _CLAUSE and t.pos != node.pos)):
                return node
            depth_in += t.is_punct("(")
            depth_in -= t.is_punct(")")
            self.i += 1

    def _with(self) -> None:
        self.i += 2  # WITH (
        while self.i + 2 < len(self.toks) and self.toks[self.i].kind == "string":
            key, eq, value = self.toks[self.i: self.i + 3]
            if eq.is_punct("=") and value.kind == "string":
                self.options[key.string_value] = (key.pos, value.string_value)
            self.i += 3
            self.i += self.i < len(self.toks) and self.toks[self.i].is_punct(",")

    def step(self, at: list[tuple[Any, str]], step: str) -> list[tuple[int, Any, str]]:
        out = []
        for node, _ in at:
            if node is self:
                prefix = self.options.get("key.fields-prefix", (0, ""))[1]
                got = self.columns.get(prefix + step)
            elif step == "[]":
                got = (node.element.pos, node.element) if node.element else None
            elif step in ("{key}", "{value}"):
                inner = node.key if step == "{key}" else node.value
                got = (inner.pos, inner) if inner else None
            else:
                got = node.fields.get(step)
            if got is not None:
                out.append((got[0], got[1], ""))
        return out

    def option(self, name: str) -> int | None:
        """A WITH option by keyguard's name: as written, `sink.<name>`, or the key format's own
        (`key.<format>.<name>`)."""
        key_format = self.options.get("key.format", (0, ""))[1]
        for key in (name, f"sink.{name}", f"key.{key_format}.{name}"):
            if key in self.options:
                return self.options[key][0]
        return None


# --- one text, many paths -----------------------------------------------------------------

@dataclass
class SchemaLines:
    """A schema text read once, with the positions of what it declares."""

    text: str
    kind: str
    _reader: Any = None
    _root: list[tuple[Any, str]] = field(default_factory=list)
    _start: int | None = None
    _line_starts: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, text: str, kind: str) -> SchemaLines:
        """`kind`: AVRO, JSON, PROTOBUF or SQL. A text that does not read as its kind locates
        nothing (keyguard reported it where it read the schema)."""
        lines = cls(text, kind)
        try:
            if kind in (AVRO, JSON):
                root = parse_json(text)
                lines._reader = _Avro(root) if kind == AVRO else _JsonSchema(root)
                lines._root, lines._start = [(root, "")], root.pos
            elif kind == PROTOBUF:
                proto = _Proto(text)
                first = proto.root()
                lines._reader = proto
                lines._root = [(first, "")] if first is not None else []
                lines._start = first.pos if first is not None else None
            elif kind == SQL:
                sql = _Sql(text)
                lines._reader, lines._root, lines._start = sql, [(sql, "")], sql.start
        except (_Unreadable, ValueError, IndexError, RecursionError):
            lines._reader = None
        return lines

    def _place(self, offset: int) -> Place:
        if not self._line_starts:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", self.text))]
        return Place.at(self.text, offset, self._line_starts)

    @property
    def readable(self) -> bool:
        return self._reader is not None

    def field(self, path: str) -> Place | None:
        """Where the field at `path` is declared (`$`: where the schema starts)."""
        if self._reader is None:
            return None
        if path == "$":
            return None if self._start is None else self._place(self._start)
        parts = steps(path)
        if parts is None or not self._root:
            return None
        at = _follow(self._root, parts, self._reader.step)
        return None if at is None else self._place(at)

    def option(self, name: str) -> Place | None:
        """Where the option `name` is set: a Flink DDL's WITH clause; no other schema has one."""
        if not isinstance(self._reader, _Sql):
            return None
        at = self._reader.option(name)
        return None if at is None else self._place(at)


def kind_of(file: str, text: str) -> str:
    """The schema type of a file, as keyguard reads it: `.sql` a Flink DDL, else by extension
    or content (`keyguard.formats.schemafile.guess_schema_type`)."""
    from keyguard.formats.schemafile import guess_schema_type  # lazy: CLI start-up

    path = Path(file)
    return SQL if path.suffix.lower() == ".sql" else guess_schema_type(path, text)
