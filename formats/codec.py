"""The serde contract every format implements, and the factory that picks one by name.

A `Codec` turns rows of one RowType (a key or a value, already projected) into bytes and back,
with its format options already validated. Formats register a `FormatFactory` declaring their
options once; `create_codec` validates the options and the row type at plan time, so a bad
option or an unsupported column fails before any row is touched.
"""

from __future__ import annotations

import importlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from keyguard.formats.catalog import BUILTIN_FORMATS, DEFAULT_FORMATS, FORMAT_ALIASES
from keyguard.formats.errors import EncodeError, InvalidOptionError
from keyguard.formats.framing import BARE, Frame, Headers, side_frame
from keyguard.formats.immutable import Value
from keyguard.formats.options import OptionSet, ResolvedOptions
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.types import RowType

if TYPE_CHECKING:
    import pyarrow as pa

    from keyguard.formats.registry import Registry

Role = Literal["key", "value"]


class CodecContext(Value):
    """What a format may need beyond its options: the topic, the role, a registry."""

    __slots__ = ("registry", "role", "topic")
    FIELDS = ("role", "topic", "registry")
    role: Final[Role]
    topic: Final[str | None]
    #: The registry a registry-using format asks (decoding, references, registration),
    #: always handed in: the edge opens it (`keyguard.formats.registry.connect.open_for`); no codec
    #: does.
    registry: Final[Registry | None]

    def __init__(self, role: Role = "value", topic: str | None = None,
                 registry: Registry | None = None) -> None:
        self.role = role
        self.topic = topic
        self.registry = registry


class BatchDecodeError(Exception):
    """`Codec.decode_batch`: record `index` of the batch failed with `error`, the exception
    `decode` raises for it (the caller names the record: topic, partition, offset)."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(f"record {index} of the batch: {error}")
        self.index = index
        self.error = error


class DecodedColumns(Value):
    """Decoded rows column-wise: `columns[name][i]` is row i's value (a list, or an Arrow
    array holding the same values); rows in `skipped` were skipped (all None)."""

    __slots__ = ("columns", "length", "skipped")
    FIELDS = ("columns", "skipped", "length")
    columns: Final[dict[str, Sequence[Any]]]
    skipped: Final[list[int]]
    length: Final[int]

    def __init__(self, columns: dict[str, Sequence[Any]], skipped: list[int], length: int) -> None:
        self.columns = columns
        self.skipped = skipped
        self.length = length

    @staticmethod
    def of_rows(names: Sequence[str], rows: Sequence[Mapping[str, Any] | None],
                ) -> DecodedColumns:
        skipped = [i for i, r in enumerate(rows) if r is None]
        if skipped:
            empty: dict[str, Any] = {}
            rows = [empty if r is None else r for r in rows]
        return DecodedColumns({n: [r.get(n) for r in rows]  # type: ignore[union-attr]
                               for n in names}, skipped, len(rows))

    def column(self, name: str) -> list[Any]:
        """One column as Python values."""
        col = self.columns[name]
        return col if isinstance(col, list) else col.to_pylist()  # type: ignore[attr-defined]

    def rows(self) -> list[dict[str, Any] | None]:
        """Row by row, as `decode` answers (None: skipped)."""
        names = list(self.columns)
        cols = [self.column(n) for n in names]
        out: list[dict[str, Any] | None] = [dict(zip(names, vals, strict=True))
                                             for vals in zip(*cols, strict=True)] \
            if cols else [{} for _ in range(self.length)]
        for i in self.skipped:
            out[i] = None
        return out


class Codec(ABC):
    """Encodes and decodes rows of one RowType in one format."""

    format_name: str = "?"

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        self.row_type = row_type
        self.options = options
        self.context = context

    @abstractmethod
    def encode(self, row: Mapping[str, Any]) -> bytes:
        """The bytes of one row; raises EncodeError naming the column when a value does not fit."""

    @abstractmethod
    def decode(self, data: bytes) -> dict[str, Any] | None:
        """The row in `data`; raises DecodeError when the bytes are not a valid record.

        None means the record was skipped (a format's `ignore-parse-errors`), as Flink skips it.
        """

    def decode_record(self, data: bytes, headers: Headers = None) -> dict[str, Any] | None:
        """`decode` of a record with its Kafka headers: a format whose frame may carry the
        schema id in a header (Confluent's and Apicurio's header framings) reads it there;
        the others read the bytes alone."""
        return self.decode(data)

    def record_headers(self) -> tuple[tuple[str, bytes], ...]:
        """The headers the format's framing adds to every record (a header framing's schema
        id); none for a format whose bytes are the whole record."""
        return ()

    def undeclared_fields(self, data: bytes, headers: Headers = None) -> tuple[str, ...]:
        """Top-level fields the record in `data` (with its `headers`, where a header may carry
        its schema id) carries that the row type does not declare: a row decoded from it and
        written again loses them. () when there are none, or when the format cannot carry any
        (its bytes hold exactly the row type's fields)."""
        return ()

    def decode_batch(self, data: Sequence[bytes], *, arrow: bool = True,
                     headers: Sequence[Headers] | None = None) -> DecodedColumns:
        """The rows in `data`, column-wise: exactly `decode` of each, in order (`decode_record`
        of each with its headers, when `headers` are given: one per record).

        A record `decode` skips (None) is listed in `skipped` and holds None in every column;
        a record `decode` rejects raises `BatchDecodeError` with its index and that error.
        Formats override this where decoding whole columns pays (Arrow arrays as columns);
        `arrow=False` asks for Python lists only, so that pyarrow is never loaded (a reader
        that wants the values and not Arrow's libraries in its memory: the audit).
        """
        rows: list[dict[str, Any] | None] = []
        decode = self.decode
        try:
            if headers is None:
                for d in data:
                    rows.append(decode(d))
            else:
                for d, h in zip(data, headers, strict=True):
                    rows.append(self.decode_record(d, h))
        except Exception as exc:
            raise BatchDecodeError(len(rows), exc) from None
        return DecodedColumns.of_rows(self.row_type.names, rows)

    def encode_batch(self, batch: pa.RecordBatch | pa.Table) -> list[bytes]:
        """Every row of an Arrow batch, in order. Formats override this where vectorizing pays."""
        rows = batch.to_pylist()
        out = []
        for i, r in enumerate(rows):
            try:
                out.append(self.encode(r))
            except EncodeError as exc:
                raise type(exc)(f"row {i}: {exc.message}", hint=exc.hint) from None
        return out

    def encode_arrow(self, batch: pa.RecordBatch | pa.Table) -> pa.BinaryArray:
        """The encoded rows as an Arrow binary column (formats that build one natively override).

        The Spark writer hashes and produces straight from the Arrow buffers.
        """
        import pyarrow as pa

        return pa.array(self.encode_batch(batch), type=pa.binary())

    def describe(self) -> str:
        return f"{self.format_name} {self.context.role} format"

    def written_schema(self, origin: str | None = None) -> SchemaText:
        """The schema this codec writes, as the guard compares and a registry stores it.

        Avro formats answer with their Avro schema; the others with the row's JSON Schema.
        """
        # lazy: CLI start-up (JSON Schema derivation, only for a text format's written schema)
        from keyguard.formats.json_schema import to_json_schema

        return SchemaText("JSON", json.dumps(to_json_schema(self.row_type)),
                          origin or f"the {self.context.role} ({self.format_name})")


class FormatFactory(Value):
    """A format: its name, its declared options, and how to build its codec.

    - `summary`: one line for `keyguard formats` and the README.
    - `schema_type`: the type of the schema the format writes, as a registry names it: AVRO,
      JSON or PROTOBUF. Its parser is the catalog's (`keyguard.formats.catalog.SCHEMA_TYPES`).
    - `frame`: how a record's body is framed: one of the catalog's frames
      (`keyguard.formats.catalog.FRAMES`), the same value the format's codec unwraps with.
    - `uses_registry`: the format registers its schema under a registry subject and writes the
      id it gets.
    - `key_family`: which key rules judge a change of this format's keys: the byte encoding
      family, "avro", "json", "csv", "raw" or "protobuf", whose rules the guard's catalog names
      (`keyguard.guard.catalog.KEY_FAMILIES`). Formats of one family encode a key body alike.

    A value (`keyguard.formats.immutable`).
    """

    __slots__ = ("build", "frame", "key_family", "name", "options", "schema_type", "summary",
                 "uses_registry")
    FIELDS = ("name", "options", "build", "summary", "schema_type", "frame", "uses_registry",
              "key_family")

    def __init__(self, name: str, options: OptionSet,
                 build: Callable[[RowType, ResolvedOptions, CodecContext], Codec], *,
                 summary: str = "", schema_type: str = "JSON", frame: Frame = BARE,
                 uses_registry: bool = False, key_family: str = "") -> None:
        self.name: Final = name
        self.options: Final = options
        self.build: Final = build
        self.summary: Final = summary
        self.schema_type: Final = schema_type
        self.frame: Final = frame
        self.uses_registry: Final = uses_registry
        self.key_family: Final = key_family

    def __repr__(self) -> str:
        return f"FormatFactory({self.name!r})"  # its options and builder say nothing more

    def frame_of(self, options: Mapping[str, Any] | None, role: str) -> Frame:
        """The frame one side of a table writes and reads: its `framing` option's, given as
        the format's options (without the `key.<format>.` prefix), else the format's own."""
        chosen = (options or {}).get("framing") if self.frame.carries_schema_id else None
        return side_frame(self.frame, str(chosen) if chosen else None, role,
                          where=f"{role} format '{self.name}'")

    @property
    def writes_avro(self) -> bool:
        return self.schema_type == "AVRO"

    @property
    def has_schema(self) -> bool:
        """Whether the format writes by a schema a registry stores (Avro, Protobuf, a
        registry's JSON Schema): one compatibility levels judge and `keyguard schema` prints.
        json, csv and raw write the row as text; the JSON Schema keyguard derives for them
        only describes it."""
        return self.uses_registry or self.schema_type != "JSON"


_FACTORIES: dict[str, FormatFactory] = {}


def register_format(factory: FormatFactory) -> FormatFactory:
    _FACTORIES[factory.name] = factory
    return factory




def default_format(schema_type: str | None) -> str:
    """The format assumed for a registered schema of `schema_type` (`DEFAULT_FORMATS`)."""
    return DEFAULT_FORMATS.get(str(schema_type or "").upper(), DEFAULT_FORMATS["AVRO"])


def canonical_format(name: str) -> str:
    """The format's own name: `name`, or the format an alias (`FORMAT_ALIASES`) names."""
    return FORMAT_ALIASES.get(name, name)


def aliases_of(name: str) -> list[str]:
    """The aliases of format `name` (`keyguard formats` and the README list them)."""
    return sorted(a for a, target in FORMAT_ALIASES.items() if target == name)


def format_factory(name: str) -> FormatFactory:
    """The factory of format `name` (or of the format an alias names), importing only that
    format's module."""
    own = canonical_format(name)
    if own not in _FACTORIES and own in BUILTIN_FORMATS:
        importlib.import_module(BUILTIN_FORMATS[own])
    try:
        return _FACTORIES[own]
    except KeyError:
        from difflib import get_close_matches

        known = _known_names()
        close = get_close_matches(name, known, n=1)
        alias = f" (an alias of {own!r}, which this keyguard does not have)" if own != name \
            else ""
        raise InvalidOptionError(
            f"unknown format {name!r}{alias}"
            + (f" (did you mean {close[0]!r}?)" if close and not alias else ""),
            hint="supported formats: " + ", ".join(known),
        ) from None


def _known_names() -> list[str]:
    """Every format name and every alias of a known format."""
    own = {*BUILTIN_FORMATS, *_FACTORIES}
    return sorted(own | {a for a, target in FORMAT_ALIASES.items() if target in own})


def format_names() -> list[str]:
    """The formats' own names (aliases: `aliases_of`)."""
    for name in BUILTIN_FORMATS:
        format_factory(name)
    return sorted(_FACTORIES)


def create_codec(
    format_name: str,
    row_type: RowType,
    options: Mapping[str, Any] | None = None,
    context: CodecContext | None = None,
) -> Codec:
    """A codec for `row_type`; `options` are the format's own keys (no `key.json.` prefix)."""
    context = context or CodecContext()
    factory = format_factory(format_name)
    resolved = factory.options.validate(
        options or {}, where=f"{context.role} format '{format_name}'"
    )
    return factory.build(row_type, resolved, context)
