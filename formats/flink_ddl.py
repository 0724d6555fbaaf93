"""A Flink `CREATE TABLE` statement -> keyguard's table: columns, primary key, table options.

Teams moving a table from Flink (or gating a Flink job) have its DDL, not keyguard's options.
Flink's option names ARE keyguard's where keyguard has the option (`key.format`,
`value.json.timestamp-format.standard`, `key.fields-prefix`, ...), so the WITH clause maps one
to one; the physical columns go through `keyguard.formats.sqltypes` (the same type text as
`--columns`). Metadata columns, computed columns and watermarks describe no key or value bytes: they
are listed as ignored (`FlinkTable.ignored`) for the caller to print. Anything keyguard cannot
honour (another connector, an option it does not know, a type its model lacks) is an error naming
the line and column, because a silently dropped option could change the bytes.

Why a tokenizer of our own rather than a SQL library: sqlglot (30.x, checked) has no Flink
dialect; its default dialect falls back to an opaque `Command` for this statement, and its
Hive/Spark dialects stop at `METADATA FROM ... VIRTUAL`; it would also not point at our own
semantic errors (an unsupported option) by line and column. The statement is small: a
tokenizer that knows comments (`--`, `/* */`), backtick identifiers and `'it''s'` strings,
plus the type parser we already have, is less code than adapting a general parser.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from keyguard.formats.errors import InvalidOptionError, SchemaError, UnsupportedTypeError
from keyguard.formats.registry.options import is_registry_table_option
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.secrets import (
    holds_secret,
    mask_source,
    register_options,
    register_url_credentials,
)
from keyguard.formats.sqltokens import Tok, TokenCursor, tokenize
from keyguard.formats.sqltypes import TypeSyntaxError, UnsupportedSqlTypeError, parse_type
from keyguard.formats.table_options import (
    KEY_FIELDS_PREFIX,
    KEY_FORMAT,
    PRIMARY_KEY,
    TOPIC,
    VALUE_FIELDS_INCLUDE,
    VALUE_FORMAT,
)
from keyguard.formats.types import Field, RowType

__all__ = ["FlinkDdlError", "FlinkTable", "Ignored", "load_flink_ddl", "read_flink_ddl",
           "statement_tokens"]

#: The connectors whose tables keyguard takes: both write keys with a key format.
CONNECTORS = ("upsert-kafka", "kafka")

#: Flink's sink.partitioner values keyguard models (guard/keys/side.py PARTITIONER_FAMILIES).
PARTITIONERS = ("default", "fixed", "round-robin")

#: Flink connector options that decide no key or value bytes: kept for the caller (the Spark
#: connector takes the sink.* ones it declares), never an error here.
CONNECTOR_ONLY = (
    "sink.parallelism", "sink.buffer-flush.max-rows", "sink.buffer-flush.interval",
    "sink.delivery-guarantee", "sink.transactional-id-prefix", "sink.semantic",
    "scan.startup.mode", "scan.startup.specific-offsets", "scan.startup.timestamp-millis",
    "scan.bounded.mode", "scan.bounded.specific-offsets", "scan.bounded.timestamp-millis",
    "scan.topic-partition-discovery.interval", "scan.parallelism",
)


class FlinkDdlError(SchemaError):
    """A CREATE TABLE statement keyguard cannot read (syntax), located by line and column."""


@dataclass(frozen=True)
class Ignored:
    """A part of the statement that describes no bytes: a metadata or computed column, a
    watermark. `str()` is the line the caller prints."""

    origin: str
    line: int
    column: int
    what: str
    name: str
    why: str

    def __str__(self) -> str:
        return (f"{self.origin}:{self.line}:{self.column}: {self.what} {self.name} ignored: "
                f"{self.why}")


@dataclass(frozen=True)
class FlinkTable:
    """A Flink table as keyguard takes it.

    `options` are keyguard's table options (the input of `keyguard.formats.plan.resolve_plan`):
    topic, primary-key, key.format, value.format, key.fields-prefix, value.fields-include and the
    formats' own `key.<format>.*` / `value.<format>.*`. `properties` are the Kafka client's
    (`properties.*`, prefix kept), `connector_options` the sink/scan ones, as written.
    """

    origin: str
    name: str
    connector: str
    columns: RowType
    primary_key: tuple[str, ...]
    options: Mapping[str, str]
    properties: Mapping[str, str] = field(default_factory=dict)
    connector_options: Mapping[str, str] = field(default_factory=dict)
    #: Flink's sink.partitioner: default (murmur2 on the key bytes), fixed or round-robin.
    partitioner: str = "default"
    ignored: tuple[Ignored, ...] = ()
    #: The statement as written, comments included (the guard reads its `keyguard: ignore`
    #: comments); never shown, as it may hold credentials.
    text: str = field(default="", repr=False, compare=False)

    @property
    def topic(self) -> str:
        return self.options[TOPIC.key]

    @property
    def key_format(self) -> str:
        return self.options[KEY_FORMAT.key]

    @property
    def value_format(self) -> str:
        return self.options[VALUE_FORMAT.key]

    @property
    def producer_partitioner(self) -> str:
        """keyguard's name of the partitioner: Flink's 'default' is Kafka's, murmur2 of the
        key bytes (guard/keys/side.py PARTITIONER_FAMILIES)."""
        return "murmur2" if self.partitioner == "default" else self.partitioner

    @property
    def key_fields_prefix(self) -> str:
        return self.options.get(KEY_FIELDS_PREFIX.key, KEY_FIELDS_PREFIX.default or "")

    def format_options(self, role: str) -> dict[str, str]:
        """The key or value format's own options, without `key.<format>.`."""
        prefix = f"{role}.{self.key_format if role == 'key' else self.value_format}."
        return {k[len(prefix):]: v for k, v in self.options.items() if k.startswith(prefix)}

    def connection_options(self) -> tuple[str, ...]:
        """The WITH options that say where Flink's job connects, not how bytes are written: a
        registry format's url and connection options (`key.avro-confluent.url`, its
        credentials, TLS stores and timeouts) and the Kafka client's `properties.*`
        (`properties.bootstrap.servers` included), in the order written."""
        return (*(k for k in self.options if is_registry_table_option(k)), *self.properties)

    def without_connections(self) -> FlinkTable:
        """This table without its connection options (`connection_options`): what a command
        uses when its own flags and defaults say where to connect."""
        return replace(self, properties={}, options={
            k: v for k, v in self.options.items() if not is_registry_table_option(k)})

    def connector_settings(self) -> dict[str, str]:
        """Every option the Spark connector takes: the table's, properties.* and sink/scan."""
        return {**self.options, **self.properties, **self.connector_options}

    def written_schemas(self) -> tuple[SchemaText, SchemaText]:
        """The key and value schemas this table writes (Avro for the Avro formats, else the
        row's JSON Schema), as the guard compares them: no registry is opened."""
        # lazy: the plan loads both formats (the parser alone is light)
        from keyguard.formats.plan import resolve_options

        spec = resolve_options(self.options).project(self.columns)
        plan = spec.build()
        return (plan.key_codec.written_schema(f"{self.origin} (key, {self.key_format})"),
                plan.value_codec.written_schema(f"{self.origin} (value, {self.value_format})"))


def load_flink_ddl(path: str | Path) -> FlinkTable:
    """`read_flink_ddl` of a file; an unreadable file is an error naming it (exit 2)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidOptionError(f"cannot read Flink DDL file {p}: {exc.strerror}",
                                 hint="check the path of the .sql file") from None
    except UnicodeDecodeError as exc:
        raise InvalidOptionError(f"Flink DDL file {p} is not UTF-8 text: {exc.reason} at byte "
                                 f"{exc.start}", hint="save it as UTF-8") from None
    return read_flink_ddl(text, str(p))


def read_flink_ddl(text: str, origin: str = "<flink ddl>") -> FlinkTable:
    """One `CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name (...) WITH (...)` statement."""
    return _Statement(text, origin).table()


def statement_tokens(text: str) -> list[Tok]:
    """The statement's tokens with their offsets, comments left out, up to a character no
    token matches: for whoever points into the DDL (a report's line of a column or option)."""
    toks, _ = tokenize(text, _TOKEN, skip=frozenset({"ws", "comment"}))
    return toks


# --- tokens -------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<string>'(?:[^']|'')*')
  | (?P<number>[0-9]+(?:\.[0-9]+)?)
  | (?P<punct>(?!/\*)[^\s'`])
    """,
    re.VERBOSE | re.DOTALL,
)


#: Words that end a column's type at its top level.
_AFTER_TYPE = {"METADATA", "COMMENT", "PRIMARY", "CONSTRAINT"}

#: The options keyguard's table takes as they are written.
_TABLE_KEYS = (TOPIC.key, KEY_FORMAT.key, VALUE_FORMAT.key, KEY_FIELDS_PREFIX.key,
               VALUE_FIELDS_INCLUDE.key)

#: A primary key as written: each column with its offset.
_Key = tuple[tuple[str, int], ...]
#: A WITH option's value, with the offsets of its key and its value.
_Given = tuple[str, int, int]


@dataclass
class _PlacedOptions:
    """The WITH options by where they go (`FlinkTable`'s fields of the same names)."""

    table: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    connector_options: dict[str, str] = field(default_factory=dict)
    partitioner: str = "default"


class _Statement(TokenCursor):
    end_name = "the end of the statement"

    def __init__(self, text: str, origin: str) -> None:
        self.text = text
        self.origin = origin
        # Masked before tokenizing: an error in the tokenizer (an unterminated value) quotes it.
        self.masked = mask_source(text)
        self.toks, self.clean = self._tokenize()
        self.i = 0
        self.ignored: list[Ignored] = []
        self._register_secrets(self.toks)

    def _register_secrets(self, t: list[Tok]) -> None:
        """Credentials among the WITH options ('properties.sasl.jaas.config', a registry's
        user-info, a URL's user:password), before any error can quote their line: registered
        (`keyguard.formats.secrets`) and masked in the text errors show."""
        masked = list(self.masked)
        for a, eq, b in zip(t, t[1:], t[2:], strict=False):
            if a.kind == "string" and eq.is_punct("=") and b.kind == "string":
                register_options({a.string_value: b.string_value})
                register_url_credentials(b.string_value)
                spans = [(1, len(b.text) - 1)] if holds_secret(a.string_value) else [
                    m.span(1) for m in re.finditer(r"://([^/@\s'\"]+)@", b.text)]
                for start, end in spans:  # as long as the secret: the caret stays in place
                    masked[b.pos + start: b.pos + end] = "*" * (end - start)
        self.masked = "".join(masked)

    # -- location and errors ---------------------------------------------------------------

    def where(self, pos: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, pos) + 1
        return line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    def located(self, message: str, pos: int) -> str:
        line, col = self.where(pos)
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        shown = self.masked[start: None if end < 0 else end].replace("\t", " ")
        return f"{self.origin}:{line}:{col}: {message}\n  {shown}\n  {' ' * (col - 1)}^"

    def fail(self, message: str, pos: int | None = None, *, hint: str | None = None,
             error: type[SchemaError] | type[InvalidOptionError] = FlinkDdlError) -> NoReturn:
        at = self.tok.pos if pos is None else pos
        raise error(self.located(message, at), hint=hint)

    def _tokenize(self) -> tuple[list[Tok], str]:
        """The tokens, and the text with its comments blanked (newlines kept), so that a
        type's text can be cut out as written."""
        toks, stuck = tokenize(self.text, _TOKEN, skip=frozenset({"ws"}))
        clean = list(self.text)
        for t in toks:
            if t.kind == "comment":
                clean[t.pos: t.pos + len(t.text)] = re.sub(r"[^\n]", " ", t.text)
        toks = [t for t in toks if t.kind != "comment"]
        if stuck is not None:
            ch = self.text[stuck]
            what = {"`": "unterminated `identifier`", "'": "unterminated 'string'",
                    "/": "unterminated /* comment"}.get(ch, f"unexpected character {ch!r}")
            self._register_secrets(toks)  # those before the error
            raise FlinkDdlError(self.located(what, stuck))
        return toks, "".join(clean)

    # -- token helpers ---------------------------------------------------------------------

    def string(self, what: str) -> Tok:
        if self.tok.kind != "string":
            self.fail(f"expected {what} (a 'quoted string') but found {self.found()}")
        return self.advance()

    def skip_expression(self) -> int:
        """Skip to the `,` or `)` that ends a column definition; the end offset."""
        depth = 0
        while True:
            t = self.tok
            if t.kind == "end":
                self.fail("unexpected end of the statement inside the column list",
                          hint="close the column list with ')'")
            if t.is_punct("(") or t.is_punct("["):
                depth += 1
            elif t.is_punct(")") or t.is_punct("]"):
                if depth == 0:
                    return t.pos
                depth -= 1
            elif t.is_punct(",") and depth == 0:
                return t.pos
            self.advance()

    # -- grammar ---------------------------------------------------------------------------

    def table(self) -> FlinkTable:
        name = self.create_table()
        open_pos = self.expect_punct("(").pos
        fields, pk, pk_pos = self.column_list()
        with_pos, options = self.after_columns()
        seen: dict[str, int] = {}
        for f, at in fields:
            if f.name in seen:
                self.fail(f"duplicate column {f.name!r}", at)
            seen[f.name] = at
        if not fields:
            self.fail("the table has no physical columns", open_pos)
        return self.build(name, fields, pk, pk_pos, options, with_pos)

    def create_table(self) -> str:
        """`CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name`: the table's name."""
        if self.tok.kind == "end":
            self.fail("no CREATE TABLE statement", hint="the file must hold one Flink "
                      "CREATE TABLE ... WITH (...) statement")
        self.expect_word("CREATE", hint="the file must hold one CREATE TABLE statement")
        self.accept_word("TEMPORARY")
        if self.tok.upper in ("VIEW", "FUNCTION", "CATALOG", "DATABASE"):
            self.fail(f"CREATE {self.tok.upper} is not a table",
                      hint="give a CREATE TABLE statement")
        self.expect_word("TABLE")
        if self.accept_word("IF"):
            self.expect_word("NOT")
            self.expect_word("EXISTS")
        parts = [self.identifier("a table name")[0]]
        while self.accept_punct("."):
            parts.append(self.identifier("a table name")[0])
        if self.tok.upper == "AS" or self.tok.upper == "LIKE":
            self.fail(f"CREATE TABLE ... {self.tok.upper} is not supported: keyguard needs the "
                      "columns and options written out")
        return ".".join(parts)

    def column_list(self) -> tuple[list[tuple[Field, int]], _Key | None, int]:
        """The physical columns (with their offsets) and the primary key with its offset, up
        to the closing `)`."""
        fields: list[tuple[Field, int]] = []
        pk: _Key | None = None
        pk_pos = 0
        while True:
            declared = self.column_list_entry(fields)
            if declared is not None:
                if pk is not None:
                    self.fail("a second PRIMARY KEY", declared[1])
                pk, pk_pos = declared
            if not self.accept_punct(","):
                break
        self.expect_punct(")")
        return fields, pk, pk_pos

    def column_list_entry(self, fields: list[tuple[Field, int]]) -> tuple[_Key, int] | None:
        """One entry: a table constraint, a watermark or a column (a physical one is added to
        `fields`); the primary key it declares, with the offset of its declaration."""
        if self.tok.upper in ("PRIMARY", "CONSTRAINT"):
            at = self.tok.pos
            return self.table_constraint(), at
        if self.tok.upper == "WATERMARK":
            self.watermark()
            return None
        col = self.column()
        if col is None:
            return None
        f, at, inline_pk = col
        fields.append((f, at))
        return None if inline_pk is None else (((f.name, at),), inline_pk)

    def after_columns(self) -> tuple[int, list[tuple[str, str, int, int]]]:
        """What follows the column list: an optional COMMENT, the WITH options and an optional
        `;`, then nothing. The offset of WITH, and the options."""
        if self.accept_word("COMMENT"):
            self.string("a table comment")
        for clause in ("PARTITIONED", "DISTRIBUTED"):
            if self.tok.upper == clause:
                self.fail(f"{clause} BY is not supported: a Kafka table's key is its "
                          "PRIMARY KEY (upsert-kafka) or key.fields (kafka)")
        with_pos = self.expect_word("WITH", hint="a Kafka table names its connector, topic "
                                    "and formats in WITH ('connector' = ..., ...)").pos
        options = self.with_options()
        if self.tok.upper == "LIKE":
            self.fail("CREATE TABLE ... LIKE is not supported: keyguard needs the columns and "
                      "options written out")
        self.accept_punct(";")
        if self.tok.kind != "end":
            self.fail(f"unexpected {self.found()} after the CREATE TABLE statement",
                      hint="give one statement per file")
        return with_pos, options

    def table_constraint(self) -> _Key:
        if self.accept_word("CONSTRAINT"):
            self.identifier("a constraint name")
        self.expect_word("PRIMARY")
        self.expect_word("KEY")
        self.expect_punct("(")
        cols = [self.identifier("a primary-key column")]
        while self.accept_punct(","):
            cols.append(self.identifier("a primary-key column"))
        self.expect_punct(")")
        self.not_enforced()
        return tuple(cols)

    def not_enforced(self) -> None:
        hint = "Flink requires PRIMARY KEY (...) NOT ENFORCED"
        self.expect_word("NOT", hint=hint)
        self.expect_word("ENFORCED", hint=hint)

    def watermark(self) -> None:
        at = self.advance().pos
        self.expect_word("FOR")
        name, _ = self.identifier("the watermark's time column")
        self.expect_word("AS")
        self.skip_expression()
        self.note(at, "watermark", f"for {name}",
                  "event time is not part of a record's key or value bytes")

    def note(self, pos: int, what: str, name: str, why: str) -> None:
        line, col = self.where(pos)
        self.ignored.append(Ignored(self.origin, line, col, what, name, why))

    def column(self) -> tuple[Field, int, int | None] | None:
        """A physical column (its field, offset, and the offset of an inline PRIMARY KEY), or
        None for a computed or metadata column (recorded as ignored)."""
        name, at = self.identifier("a column name")
        if self.accept_word("AS"):
            self.skip_expression()
            self.note(at, "computed column", name,
                      "computed columns are derived on read, never written to Kafka")
            return None
        start, end = self.type_extent()
        if end == start:
            self.fail(f"column {name!r} has no type", start)
        data_type = self.type_at(start, end)
        description, metadata, inline_pk = self.column_clauses()
        if metadata:
            if inline_pk is not None:
                self.fail("a metadata column cannot be the primary key", inline_pk)
            self.note(at, "metadata column", name, "metadata (timestamp, headers, offsets) "
                      "is not part of a record's key or value bytes")
            return None
        return Field(name, data_type, description), at, inline_pk

    def type_extent(self) -> tuple[int, int]:
        """The offsets of a column's type text: up to a top-level ',' ')' or column clause."""
        start = self.tok.pos
        depth = 0
        while True:
            t = self.tok
            if t.kind == "end":
                self.fail("unexpected end of the statement in a column type")
            if depth == 0 and (t.is_punct(",") or t.is_punct(")") or t.upper in _AFTER_TYPE):
                return start, t.pos
            if t.is_punct("(") or t.is_punct("<"):
                depth += 1
            elif t.is_punct(")") or t.is_punct(">"):
                depth -= 1
            self.advance()

    def column_clauses(self) -> tuple[str | None, bool, int | None]:
        """The clauses after a column's type: its COMMENT, whether it is METADATA, and the
        offset of an inline PRIMARY KEY."""
        description = None
        metadata = False
        inline_pk: int | None = None
        while True:
            if self.tok.upper == "METADATA":
                self.advance()
                if self.accept_word("FROM"):
                    self.string("a metadata key")
                self.accept_word("VIRTUAL")
                metadata = True
            elif self.accept_word("COMMENT"):
                description = self.string("a column comment").string_value
            elif self.tok.upper in ("PRIMARY", "CONSTRAINT"):
                inline_pk = self.tok.pos
                if self.accept_word("CONSTRAINT"):
                    self.identifier("a constraint name")
                self.expect_word("PRIMARY")
                self.expect_word("KEY")
                self.not_enforced()
            else:
                return description, metadata, inline_pk

    def type_at(self, start: int, end: int) -> Any:
        text = self.clean[start:end]
        try:
            return parse_type(text)
        except (TypeSyntaxError, UnsupportedSqlTypeError) as exc:
            m = re.match(r"(?s)(.*?) at position \d+:\n", exc.message)
            message = m.group(1) if m else exc.message
            error = UnsupportedTypeError if isinstance(exc, UnsupportedSqlTypeError) \
                else FlinkDdlError
            self.fail(message, start + exc.position, hint=exc.hint, error=error)

    def with_options(self) -> list[tuple[str, str, int, int]]:
        """('key', 'value', key offset, value offset), in order."""
        self.expect_punct("(")
        out: list[tuple[str, str, int, int]] = []
        seen: set[str] = set()
        if self.accept_punct(")"):
            return out
        while True:
            k = self.string("an option name")
            self.expect_punct("=")
            v = self.string("an option value")
            if k.string_value in seen:
                self.fail(f"option {k.string_value!r} is given twice", k.pos)
            seen.add(k.string_value)
            out.append((k.string_value, v.string_value, k.pos, v.pos))
            if not self.accept_punct(","):
                break
        self.expect_punct(")")
        return out

    # -- options -> keyguard's table -------------------------------------------------------

    def build(self, name: str, fields: list[tuple[Field, int]], pk: _Key | None, pk_pos: int,
              options: list[tuple[str, str, int, int]], with_pos: int) -> FlinkTable:
        given = {k: (v, kp, vp) for k, v, kp, vp in options}
        connector = self.connector(given, with_pos)
        columns = {f.name for f, _ in fields}
        key_cols = self.key_columns(connector, given, pk, pk_pos, columns, with_pos)
        if connector == "kafka" and "format" in given:
            given = self.value_format_alias(given)
        formats = self.required_options(given, with_pos)
        placed = _PlacedOptions()
        for key, option in given.items():
            self.place_option(placed, connector, formats, key, option)
        table = placed.table
        include = table.get(VALUE_FIELDS_INCLUDE.key)
        if include is not None:
            try:
                VALUE_FIELDS_INCLUDE.parse(include, where="value.fields-include")
            except InvalidOptionError as exc:
                self.fail(exc.message, given[VALUE_FIELDS_INCLUDE.key][2],
                          error=InvalidOptionError)
        bad = [c for c in key_cols if "," in c]
        if bad:
            self.fail(f"key column {bad[0]!r} holds a comma, which keyguard's primary-key "
                      "option cannot list", pk_pos, error=InvalidOptionError)
        table[PRIMARY_KEY.key] = ",".join(key_cols)
        rows = tuple(f.replace(type=f.type.not_null()) if pk is not None and f.name in key_cols
                     else f for f, _ in fields)  # Flink: primary-key columns are NOT NULL
        row = RowType(fields=rows, nullable=False)
        self.resolves(table, row, with_pos)
        return FlinkTable(
            origin=self.origin, name=name, connector=connector,
            columns=row, primary_key=tuple(key_cols),
            options=table, properties=placed.properties,
            connector_options=placed.connector_options,
            partitioner=placed.partitioner, ignored=tuple(self.ignored), text=self.text)

    def connector(self, given: dict[str, _Given], with_pos: int) -> str:
        """The 'connector' option, taken out of `given`: one keyguard reads."""
        if "connector" not in given:
            self.fail("no 'connector' option", with_pos,
                      hint="keyguard reads 'connector' = 'upsert-kafka' or 'kafka' tables",
                      error=InvalidOptionError)
        connector, _, cpos = given.pop("connector")
        if connector not in CONNECTORS:
            self.fail(f"connector {connector!r} is not supported: keyguard reads Kafka tables",
                      cpos, hint="use 'upsert-kafka', or 'kafka' with 'key.format'",
                      error=InvalidOptionError)
        return connector

    def value_format_alias(self, given: dict[str, _Given]) -> dict[str, _Given]:
        """A kafka table's 'format' is its 'value.format': the options renamed so (its
        `<format>.*` become `value.<format>.*`)."""
        if "value.format" in given:
            self.fail("'format' and 'value.format' are the same option; give one",
                      given["format"][1], error=InvalidOptionError)
        fmt, kp, vp = given.pop("format")
        renamed = {("value." + k if k.startswith(f"{fmt}.") else k): v
                   for k, v in given.items()}
        renamed["value.format"] = (fmt, kp, vp)
        return renamed

    def required_options(self, given: Mapping[str, _Given],
                         with_pos: int) -> dict[str, _Given]:
        """topic, key.format and value.format given, the formats known and one topic named;
        the key and value formats by role."""
        for key in (TOPIC.key, KEY_FORMAT.key, VALUE_FORMAT.key):
            if key not in given:
                self.fail(f"required option {key!r} is missing", with_pos,
                          hint=self.describe_option(key), error=InvalidOptionError)
        formats = {"key": given[KEY_FORMAT.key], "value": given[VALUE_FORMAT.key]}
        for fmt, _, vp in formats.values():
            self.known_format(fmt, vp)
        topic, _, tpos = given[TOPIC.key]
        if ";" in topic or not topic.strip():
            self.fail(f"topic {topic!r}: keyguard guards one topic per table", tpos,
                      error=InvalidOptionError, hint="give one topic name")
        return formats

    def place_option(self, placed: _PlacedOptions, connector: str,
                     formats: Mapping[str, _Given], key: str, given: _Given) -> None:
        """One WITH option, checked and put where it goes; an option keyguard does not take
        is an error."""
        value, kp, vp = given
        if key in _TABLE_KEYS:
            placed.table[key] = value
        elif key.startswith("properties."):
            placed.properties[key] = value
        elif key == "sink.partitioner":
            if value not in PARTITIONERS:
                self.fail(f"sink.partitioner {value!r}: keyguard cannot tell where a custom "
                          "partitioner puts a key", vp, error=InvalidOptionError,
                          hint="use 'default' (murmur2 of the key bytes), 'fixed' or "
                          "'round-robin'")
            placed.partitioner = value
        elif key in CONNECTOR_ONLY:
            placed.connector_options[key] = value
        elif key == "key.fields" and connector == "kafka":
            pass  # the key columns, read by key_columns
        elif key.startswith(("key.", "value.")) and key.count(".") >= 2:
            self.format_option(key, value, kp, vp, formats)
            placed.table[key] = value
        else:
            self.fail(f"option {key!r} is not supported by keyguard's {connector} tables",
                      kp, error=InvalidOptionError, hint=self.unknown_hint(key))

    def resolves(self, options: Mapping[str, str], columns: RowType, with_pos: int) -> None:
        """The options as a whole (a format's required option, key.fields-prefix with
        value.fields-include) and the table's layout, as the plan will check them."""
        # lazy: the plan loads both formats (the parser alone is light)
        from keyguard.formats.plan import resolve_options

        try:
            resolve_options(options).project(columns).build()  # builds no registry
        except (InvalidOptionError, SchemaError) as exc:
            plain = (InvalidOptionError, SchemaError, UnsupportedTypeError)
            self.fail(exc.message, with_pos, hint=exc.hint,
                      error=type(exc) if type(exc) in plain else SchemaError)

    def key_columns(self, connector: str, given: dict[str, _Given],
                    pk: _Key | None, pk_pos: int, columns: set[str],
                    with_pos: int) -> list[str]:
        """upsert-kafka: the PRIMARY KEY; kafka: 'key.fields' (a PRIMARY KEY must agree)."""
        pk_cols = [c for c, _ in pk] if pk else []
        for c, at in pk or ():
            if c not in columns:
                self.fail(f"primary-key column {c!r} is not a physical column of the table", at,
                          hint="a metadata or computed column cannot be part of the key")
        if connector == "upsert-kafka":
            if "key.fields" in given:
                self.fail("'key.fields' is not an upsert-kafka option: its key is the PRIMARY "
                          "KEY", given["key.fields"][1], error=InvalidOptionError)
            if not pk_cols:
                self.fail("an upsert-kafka table needs PRIMARY KEY (...) NOT ENFORCED",
                          with_pos, hint="the primary key makes the Kafka key")
            return pk_cols
        if "key.format" not in given or "key.fields" not in given:
            self.fail("a kafka table without 'key.format' and 'key.fields' writes no key: "
                      "nothing for keyguard to guard", with_pos, error=InvalidOptionError,
                      hint="add 'key.format' and 'key.fields', or use upsert-kafka")
        raw, _, vp = given["key.fields"]
        fields = [c.strip() for c in raw.split(";")]
        for c in fields:
            if c not in columns:
                self.fail(f"key.fields names {c!r}, not a physical column of the table", vp,
                          error=InvalidOptionError)
        if pk_cols and pk_cols != fields:
            self.fail(f"PRIMARY KEY ({', '.join(pk_cols)}) and key.fields {raw!r} disagree",
                      pk_pos, hint="the Kafka key is key.fields; make them the same")
        return fields

    def known_format(self, fmt: str, pos: int) -> None:
        # lazy: the format registry (imports the named format's module only)
        from keyguard.formats.codec import format_factory

        try:
            format_factory(fmt)
        except InvalidOptionError as exc:
            self.fail(exc.message, pos, hint=exc.hint, error=InvalidOptionError)

    def format_option(self, key: str, value: str, kp: int, vp: int,
                      formats: Mapping[str, _Given]) -> None:
        """`key.<format>.x` / `value.<format>.x`: declared by that format, with a valid value."""
        # lazy: the format registry (imports the named format's module only)
        from keyguard.formats.codec import format_factory

        role = key.split(".", 1)[0]
        fmt = formats[role][0]
        prefix = f"{role}.{fmt}."
        if not key.startswith(prefix):
            self.fail(f"option {key!r} belongs to no format of this table", kp,
                      error=InvalidOptionError,
                      hint=f"the {role} format is {fmt}: its options are {prefix}*")
        name = key[len(prefix):]
        declared = format_factory(fmt).options
        try:
            option = declared.get(name)
        except KeyError:
            import difflib

            close = difflib.get_close_matches(name, declared.keys(), n=1)
            self.fail(f"option {key!r} is not an option of the {fmt} format"
                      + (f" (did you mean '{prefix}{close[0]}'?)" if close else ""), kp,
                      error=InvalidOptionError,
                      hint=f"{fmt} options: " + ", ".join(declared.keys()))
        try:
            option.parse(value, where=f"{role} format {fmt}")
        except InvalidOptionError as exc:
            self.fail(exc.message, vp, hint=exc.hint, error=InvalidOptionError)

    @staticmethod
    def describe_option(key: str) -> str:
        for o in (TOPIC, KEY_FORMAT, VALUE_FORMAT):
            if o.key == key:
                return o.description
        return ""

    @staticmethod
    def unknown_hint(key: str) -> str:
        import difflib

        known = [TOPIC.key, KEY_FORMAT.key, VALUE_FORMAT.key, KEY_FIELDS_PREFIX.key,
                 VALUE_FIELDS_INCLUDE.key, "sink.partitioner", *CONNECTOR_ONLY]
        close = difflib.get_close_matches(key, known, n=1)
        return (f"did you mean '{close[0]}'? " if close else "") + (
            "keyguard takes the options that decide key and value bytes (topic, key.format, "
            "value.format, key.fields-prefix, value.fields-include, key.<format>.*, "
            "value.<format>.*, sink.partitioner), properties.* and " + ", ".join(CONNECTOR_ONLY))
