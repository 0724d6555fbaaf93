"""Accepting one finding on purpose, with a reason, where the schema or the config says so.

Like ruff's `# noqa: E501` and buf's `// buf:lint:ignore`: where `--ignore` drops a rule
everywhere, a suppression names a rule (or a category) for one schema file, config file or topic,
optionally for one field, and says why. It is written

- in a `.proto` file or a Flink DDL: a comment `keyguard: ignore KG101 -- reason`, on a field's
  or column's line or the line above (that field), anywhere else (the whole file);
- in a JSON Schema: `"$comment": "keyguard: ignore KG101 -- reason"` in a property's object
  (that property) or at the root (the whole schema);
- in an Avro schema: `"keyguard.ignore": {"KG101": "reason"}` on a field or the top record
  (Avro keeps attributes it does not know as metadata);
- in the config file: `ignore = [{rule = "KG101", reason = "...", path = "region"}]`.

This module reads them; `keyguard.guard.selection.suppress` applies them, purely: the findings a
suppression covers move to `Report.ignored`, with where it was written and its reason, so they
count toward neither the verdict nor the exit code; one that covered nothing becomes a note, so
stale ones are found (like ruff's RUF100).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from json.decoder import JSONObject  # type: ignore[attr-defined]
from json.scanner import py_make_scanner  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

from keyguard.formats.errors import InvalidOptionError
from keyguard.guard.selection import Suppression, selector, suppress

if TYPE_CHECKING:
    from keyguard.formats.flink_ddl import FlinkTable
    from keyguard.formats.schemafile import SchemaText
    from keyguard.guard.plan import TopicPlan

#: The attribute an Avro schema carries its suppressions in: `{"KG101": "reason"}`.
AVRO_ATTRIBUTE = "keyguard.ignore"
#: What a comment (or a JSON Schema `$comment`) starts with to be one.
_DIRECTIVE = re.compile(r"\s*keyguard\s*:", re.IGNORECASE)
_IGNORE = re.compile(r"\s*keyguard\s*:\s*ignore\s+(?P<rules>.*?)\s*(?:--\s*(?P<reason>.*?))?\s*$",
                     re.IGNORECASE | re.DOTALL)
_SYNTAX = "write `keyguard: ignore KG101 -- why the finding is accepted`"


# -- the config file -----------------------------------------------------------------------

_CONFIG_KEYS = ("rule", "reason", "path")


def of_config(entry: Mapping[str, Any], where: str) -> Suppression:
    """`{rule = "KG101", reason = "...", path = "region"}`, one item of a config `ignore`
    (`where` names it: `keyguard.toml: topics[0]: ignore[1]`); exit 2 when it is incomplete."""
    unknown = sorted(set(entry) - set(_CONFIG_KEYS))
    if unknown:
        raise InvalidOptionError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
                                 f"{', '.join(unknown)}", hint="allowed: rule, reason, path")
    rule, reason, path = (entry.get(k) for k in _CONFIG_KEYS)
    if not isinstance(rule, str) or not rule.strip():
        raise InvalidOptionError(f"{where}: needs rule = \"...\" (a rule ID or category)",
                                 hint='e.g. {rule = "KG101", reason = "region is fixed"}')
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidOptionError(f"{where}: ignoring {rule} needs a reason",
                                 hint=f'add reason = "why the {rule} finding is accepted"; a '
                                      "rule ignored everywhere, without one, is a plain string")
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise InvalidOptionError(f"{where}: path must be a schema path (a field: region, "
                                 "address.zip)")
    return Suppression(selector(rule, where=where), reason.strip(), where,
                       (path.strip(),) if path else (), in_source=False)


# -- schema files --------------------------------------------------------------------------

def in_plan(plan: TopicPlan) -> tuple[Suppression, ...]:
    """The suppressions written in a topic's candidate key and value schemas, each limited to
    the findings of its subject."""
    out: list[Suppression] = []
    for role, text in plan.candidates_naming_keyguard():
        out += in_schema(text, topic=plan.topic, subject=plan.subject(role, text))
    return tuple(out)


def in_schema(text: SchemaText, *, topic: str | None = None,
              subject: str | None = None) -> tuple[Suppression, ...]:
    """The suppressions a schema's text carries (exit 2, naming the file and line, on an
    unknown rule or a missing reason)."""
    if "keyguard" not in text.text:
        return ()
    kind = text.schema_type.upper()
    if kind == "PROTOBUF":
        found = _proto(text.text, text.origin)
    elif kind == "JSON":
        found = _json_schema(text.text, text.origin)
    else:
        found = _avro(text.text, text.origin)
    return tuple(replace(s, topic=topic, subject=subject) for s in found)


def in_flink_ddl(table: FlinkTable, *, topic: str | None = None) -> tuple[Suppression, ...]:
    """The suppressions a Flink DDL's comments carry; a column's covers its key field too
    (named without key.fields-prefix)."""
    if "keyguard" not in table.text:
        return ()
    prefix = table.key_fields_prefix
    return tuple(replace(s, topic=topic, paths=_unprefixed(s.paths, prefix))
                 for s in _sql(table.text, table.origin))


def _unprefixed(paths: tuple[str, ...], prefix: str) -> tuple[str, ...]:
    out = list(paths)
    out += [p[len(prefix):] for p in paths if prefix and p.startswith(prefix) and p != prefix]
    return tuple(dict.fromkeys(out))


def _directive(body: str, where: str, paths: tuple[str, ...]) -> Iterator[Suppression]:
    """The suppressions of one comment's text (none when it is not a keyguard comment)."""
    if not _DIRECTIVE.match(body):
        return
    m = _IGNORE.match(body)
    if m is None:
        raise InvalidOptionError(f"{where}: not a keyguard comment keyguard reads: "
                                 f"{body.strip()[:60]!r}", hint=_SYNTAX)
    rules = [r for r in re.split(r"[,\s]+", m.group("rules")) if r]
    reason = (m.group("reason") or "").strip()
    if not rules:
        raise InvalidOptionError(f"{where}: `keyguard: ignore` names no rule", hint=_SYNTAX)
    if not reason:
        raise InvalidOptionError(f"{where}: `keyguard: ignore {', '.join(rules)}` needs a "
                                 "reason", hint=_SYNTAX)
    for r in rules:
        yield Suppression(selector(r, where=where), reason, where, paths)


def _comment_body(raw: str) -> str:
    """A comment's text without its `//`, `--`, `/*`, `*/` and leading `*`s."""
    if raw.startswith("/*"):
        raw = raw[2:-2] if raw.endswith("*/") else raw[2:]
        return " ".join(line.strip().lstrip("*").strip() for line in raw.splitlines())
    return raw[2:]


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _by_line(comments: Iterable[tuple[int, int, str]], fields: Mapping[int, tuple[str, ...]],
             origin: str) -> list[Suppression]:
    """Comments `(start line, end line, text)` placed: a field on the comment's line (its first
    or last) or on the line after it is the comment's; otherwise the whole file is."""
    out: list[Suppression] = []
    for start, end, raw in comments:
        paths = fields.get(start) or fields.get(end) or fields.get(end + 1) or ()
        out += _directive(_comment_body(raw), f"{origin} line {start}", paths)
    return out


_PROTO = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<open>\b(?P<kw>message|enum|oneof|service|extend)\s+(?P<name>[\w.]+)\s*\{)
  | (?P<field>(?:\b(?:optional|required|repeated)\s+)?(?P<type>map\s*<[^>]*>|[A-Za-z_][\w.]*)
      \s+(?P<fname>[A-Za-z_]\w*)\s*=\s*\d+)
  | (?P<lbrace>\{)
  | (?P<rbrace>\})
""", re.VERBOSE | re.DOTALL)


def _proto(text: str, origin: str) -> list[Suppression]:
    """A .proto file's comments, each field placed at its path from the file's first message
    (the message a key is, by default)."""
    comments: list[tuple[int, int, str]] = []
    stack: list[tuple[str, str]] = []  # (keyword, message name)
    messages: dict[str, list[tuple[str, str, int]]] = {}  # name -> (field, type, line)
    first: str | None = None
    for m in _PROTO.finditer(text):
        if m.group("comment"):
            comments.append((_line(text, m.start()), _line(text, m.end() - 1), m.group()))
        elif m.group("open"):
            stack.append((m.group("kw"), m.group("name")))
            if m.group("kw") == "message":
                messages.setdefault(m.group("name"), [])
                first = first or m.group("name")
        elif m.group("lbrace"):
            stack.append(("{", ""))
        elif m.group("rbrace"):
            if stack:
                stack.pop()
        elif m.group("field"):
            owner = next((n for kw, n in reversed(stack) if kw == "message"), None)
            if owner is not None and stack[-1][0] in ("message", "oneof"):
                messages[owner].append((m.group("fname"), m.group("type"),
                                        _line(text, m.start("fname"))))
    fields: dict[int, tuple[str, ...]] = {}

    def walk(message: str, prefix: str, seen: tuple[str, ...]) -> None:
        for name, type_, line in messages.get(message, ()):
            fields[line] = (*fields.get(line, ()), prefix + name)
            nested = type_.rsplit(".", 1)[-1]
            if nested in messages and nested not in seen:
                walk(nested, f"{prefix}{name}.", (*seen, nested))

    if first is not None:
        walk(first, "", (first,))
    for fs in messages.values():  # fields no path from the first message reaches: by name
        for name, _, line in fs:
            fields.setdefault(line, (name,))
    return _by_line(comments, fields, origin)


_SQL = re.compile(r"""
    (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<punct>[(),<>])
  | (?P<other>\S)
""", re.VERBOSE | re.DOTALL)
#: Words that start a table element other than a column.
_NOT_COLUMNS = {"PRIMARY", "CONSTRAINT", "WATERMARK", "LIKE", "PERIOD"}


def _sql(text: str, origin: str) -> list[Suppression]:
    """A Flink DDL's comments, each column at its line."""
    comments: list[tuple[int, int, str]] = []
    toks: list[tuple[str, str, int]] = []
    for m in _SQL.finditer(text):
        if m.lastgroup == "comment":
            comments.append((_line(text, m.start()), _line(text, m.end() - 1), m.group()))
        else:
            toks.append((m.lastgroup or "", m.group(), m.start()))
    return _by_line(comments, _column_lines(text, toks), origin)


def _column_lines(text: str, toks: list[tuple[str, str, int]]) -> dict[int, tuple[str, ...]]:
    """The line of each column: the first name after the column list's `(` or its commas (the
    first parenthesis after TABLE; a ROW<...>'s commas are its own)."""
    table = next((i for i, (k, t, _) in enumerate(toks) if k == "word" and t.upper() == "TABLE"),
                 len(toks))
    opening = next((i for i in range(table, len(toks)) if toks[i][1] == "("), len(toks))
    out: dict[int, tuple[str, ...]] = {}
    depth, expect = 0, True
    for kind, tok, pos in toks[opening + 1:]:
        if kind == "punct" and tok in "(<":
            depth += 1
        elif kind == "punct" and tok in ")>":
            if depth == 0:
                break  # the end of the column list
            depth -= 1
        elif kind == "punct" and tok == "," and depth == 0:
            expect = True
            continue
        elif expect and (kind == "quoted" or (kind == "word" and tok.upper() not in _NOT_COLUMNS)):
            name = tok[1:-1].replace("``", "`") if kind == "quoted" else tok
            out.setdefault(_line(text, pos), (name,))
        expect = False
    return out


class _Located(dict[str, Any]):
    """A JSON object with where it is in the text: `start` at its `{`, `end` after its `}`."""

    start = 0
    end = 0


def _located_json(text: str) -> Any:
    """The JSON document, each object a `_Located` (the pure-Python scanner, which lets the
    object parser be wrapped: read only for a schema that mentions keyguard)."""
    decoder = json.JSONDecoder()

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[Any, int]:
        obj, end = JSONObject(s_and_end, *args)
        out = _Located(obj)
        out.start, out.end = s_and_end[1] - 1, end
        return out, end

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder.decode(text)


def _key_line(text: str, obj: _Located, key: str) -> int:
    """The line of `key` in `obj` itself (not in an object nested in it)."""
    inner = [(c.start, c.end) for c in _children(obj)]
    needle = json.dumps(key)
    pos = text.find(needle, obj.start)
    while 0 <= pos < obj.end:
        if not any(s <= pos < e for s, e in inner):
            return _line(text, pos)
        pos = text.find(needle, pos + 1)
    return _line(text, obj.start)


def _children(value: Any) -> Iterator[_Located]:
    """The objects directly inside `value` (through arrays)."""
    items = value.values() if isinstance(value, dict) else value
    for v in items:
        if isinstance(v, _Located):
            yield v
        elif isinstance(v, list):
            yield from _children(v)


def _parsed(text: str) -> Any:
    try:
        return _located_json(text)
    except (ValueError, RecursionError):
        return None  # the schema's own reader says what is wrong with it


def _json_schema(text: str, origin: str) -> list[Suppression]:
    """`"$comment": "keyguard: ignore ..."` at the root and in the objects of properties."""
    out: list[Suppression] = []

    def visit(node: Any, path: str) -> None:
        if not isinstance(node, _Located):
            return
        comment = node.get("$comment")
        if isinstance(comment, str):
            where = f"{origin} line {_key_line(text, node, '$comment')}"
            out.extend(_directive(comment, where, (path,) if path else ()))
        props = node.get("properties")
        if isinstance(props, dict):
            for name, sub in props.items():
                visit(sub, f"{path}.{name}" if path else name)
        for combinator in ("allOf", "anyOf", "oneOf"):
            for sub in node.get(combinator) or ():
                visit(sub, path)
        if isinstance(node.get("items"), dict):
            visit(node["items"], path)

    visit(_parsed(text), "")
    return out


def _avro(text: str, origin: str) -> list[Suppression]:
    """`"keyguard.ignore": {"KG101": "reason"}` on the top record and on fields."""
    out: list[Suppression] = []

    def attribute(node: _Located, path: str) -> None:
        given = node.get(AVRO_ATTRIBUTE)
        if given is None:
            return
        where = f"{origin} line {_key_line(text, node, AVRO_ATTRIBUTE)}"
        if not isinstance(given, dict) or not given:
            raise InvalidOptionError(f"{where}: {AVRO_ATTRIBUTE} must be an object of rule "
                                     "and reason", hint=f'e.g. "{AVRO_ATTRIBUTE}": '
                                     '{"KG101": "region is fixed per tenant"}')
        for rule, reason in given.items():
            if not isinstance(reason, str) or not reason.strip():
                raise InvalidOptionError(f"{where}: {AVRO_ATTRIBUTE} {rule} needs a reason",
                                         hint=f'write "{rule}": "why the finding is accepted"')
            out.append(Suppression(selector(rule, where=where), reason.strip(), where,
                                   (path,) if path else ()))

    def visit_type(t: Any, path: str, seen: set[int]) -> None:
        if isinstance(t, list):
            for branch in t:
                visit_type(branch, path, seen)
        elif isinstance(t, _Located) and id(t) not in seen:
            seen.add(id(t))
            if t.get("type") == "record" or isinstance(t.get("fields"), list):
                for fld in t.get("fields") or ():
                    if isinstance(fld, _Located) and isinstance(fld.get("name"), str):
                        sub = f"{path}.{fld['name']}" if path else fld["name"]
                        attribute(fld, sub)
                        visit_type(fld.get("type"), sub, seen)
            for key in ("items", "values"):
                visit_type(t.get(key), path, seen)

    doc = _parsed(text)
    if isinstance(doc, _Located):
        attribute(doc, "")
    visit_type(doc, "", set())
    return out


__all__ = ["AVRO_ATTRIBUTE", "Suppression", "in_flink_ddl", "in_plan",
           "in_schema", "of_config", "suppress"]
