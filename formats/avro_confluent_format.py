"""The `avro-confluent` format: Confluent's wire format, as Flink's `avro-confluent` writes it.

A record is the bare Avro binary of the row (`keyguard.formats.avro_format`) in the codec's frame
(`keyguard.formats.framing.CONFLUENT`: the magic byte 0, the schema's registry id as 4 bytes
big-endian). The
schema is the `schema` option, or the one Flink derives from the row type (with the legacy
timestamp mapping: Flink's RegistryAvroFormat calls `AvroSchemaConverter.convertToSchema
(rowType)`). The id is given from outside (`bind_schema_id`): the edge resolves it once,
`keyguard.formats.registry.registration.resolve_schema_id`, registering the schema under the subject
with `auto.register.schemas` (default true, as Flink's sinks register on first write), else
looking it up. Encoding never asks a registry. Reading fetches the writer schema by the id in
the record from the codec's registry and resolves it to this row's schema, as Avro readers do.

The subject is the `subject` option, else the `subject.name.strategy` (default
TopicNameStrategy: `<topic>-key` / `<topic>-value`, what Flink's Kafka connectors fill in).
The registry is always the caller's (`CodecContext.registry`): the edge opens it from `url` and
the connection options (`keyguard.formats.registry.connect.open_for`, on first use), a Spark task
gets a
`PinnedRegistry`; the codec never opens one. Building a codec asks it only to resolve the
`references` option.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keyguard.formats.avro_format import AvroWriter
from keyguard.formats.avro_schema import parse_avro, record_full_name, to_avro_json, to_avro_schema
from keyguard.formats.codec import (
    Codec,
    CodecContext,
    DecodedColumns,
    FormatFactory,
    register_format,
)
from keyguard.formats.errors import DecodeError, InvalidOptionError, KeyguardError
from keyguard.formats.framing import Headers, SchemaId, named_id
from keyguard.formats.options import Option, OptionSet, ResolvedOptions, merge
from keyguard.formats.registry.options import REGISTRY_OPTIONS
from keyguard.formats.registry_framed import FRAMING, RegistryFramed

# Declared with the frame every registry format shares; re-exported for older importers.
from keyguard.formats.registry_framed import RegistryNotGiven as RegistryNotGiven
from keyguard.formats.registry_framed import SchemaIdNotBound as SchemaIdNotBound
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.subjects import (
    STRATEGIES,
    TOPIC_NAME,
    parse_context,
    parse_strategy,
)
from keyguard.formats.types import RowType

if TYPE_CHECKING:
    import pyarrow as pa

    from keyguard.formats.registry.references import Reference, ResolvedReference


URL: Option[str] = Option(
    "url", str, None,
    "URL of the Confluent-compatible schema registry (http(s)://, or file:// and mock:// "
    "here). Required unless the caller hands the codec a registry.",
    fallback_keys=("schema-registry.url",),
)
SUBJECT: Option[str] = Option(
    "subject", str, None,
    "Subject to register the schema under and look it up in. Default: from "
    "subject.name.strategy, i.e. <topic>-key / <topic>-value as Flink's Kafka connectors use.",
    fallback_keys=("schema-registry.subject",),
)
SCHEMA: Option[str] = Option(
    "schema", str, None,
    "The Avro schema to write with, as JSON text; it must match the row (same fields, in "
    "order). Default: the schema Flink derives from the row type.",
    fallback_keys=("schema-registry.schema",),
)
REFERENCES: Option[str] = Option(
    "references", str, None,
    "The schema's references to other subjects, as registered (Confluent schema references): "
    'a JSON list of {"name": FULL_NAME, "subject": S, "version": N}. The referenced types are '
    "read from the registry when the codec is built. Not a Flink option.",
)
AUTO_REGISTER = Option(
    "auto.register.schemas", bool, True,
    "Register the schema under the subject on first write (Flink's behavior). When false the "
    "schema must already be registered there, else writing fails (FLINK-33045's option).",
)
SUBJECT_STRATEGY = Option(
    "subject.name.strategy", str, TOPIC_NAME,
    "How the subject is named when 'subject' is not given: " + ", ".join(STRATEGIES)
    + " (Confluent's names; Java class names are accepted too). Not a Flink option.",
    parser=parse_strategy,
)
SCHEMA_CONTEXT: Option[str] = Option(
    "schema-context", str, None,
    "The Schema Registry context of the subject (Confluent Cloud Flink's option, e.g. "
    ".flink-dev): the subject is qualified as :.flink-dev:<subject>. Default: the default "
    "context.",
    parser=parse_context,
)
AVRO_CONFLUENT_OPTIONS = OptionSet(
    "avro-confluent",
    merge((URL, SUBJECT, SCHEMA, REFERENCES, AUTO_REGISTER, SUBJECT_STRATEGY, SCHEMA_CONTEXT,
           FRAMING), REGISTRY_OPTIONS),
    passthrough_prefixes=("properties.",),
)


class AvroConfluentCodec(RegistryFramed, Codec):
    """Rows as Avro bodies in the codec's frame (CONFLUENT), with a schema id given from
    outside."""

    format_name = "avro-confluent"

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        super().__init__(row_type, options, context)
        self._init_frame()
        given = options["schema"]
        #: The schema's references as registered ({"name","subject","version"} each).
        self.references: tuple[dict[str, object], ...] = ()
        #: The same, resolved (for the guard's candidate, `keyguard.formats.schemafile.SchemaText`).
        self.resolved_references: tuple[ResolvedReference, ...] = ()
        readable = given
        if options["references"]:
            # lazy: CLI start-up (schema references, only with the references option)
            from keyguard.formats.registry.references import resolve, standalone

            if not given:
                raise InvalidOptionError(
                    f"{self.describe()}: option 'references' needs option 'schema'",
                    hint="give the schema text that uses the referenced types")
            refs = self._parse_references(str(options["references"]))
            resolved = self._ask(lambda: resolve(self.registry, refs, origin=self.describe(),
                                                 schema_type="AVRO"),
                                 "resolving the schema's references")
            self.references = tuple(r.as_dict() for r in refs)
            self.resolved_references = resolved
            readable = standalone(given, "AVRO", resolved, origin=self.describe())
        schema = parse_avro(readable) if readable else to_avro_schema(row_type)
        #: The schema text registered and looked up: as given, or Flink's derived JSON.
        self.schema_text: str = given if given else to_avro_json(schema)
        self.avro_schema = schema
        self.writer = AvroWriter(row_type, schema, where=self.describe())
        self._writer_schemas: dict[SchemaId, Any] = {}

    def _parse_references(self, text: str) -> tuple[Reference, ...]:
        # lazy: CLI start-up (schema references, only with the references option)
        from keyguard.formats.registry.references import parse_references

        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise InvalidOptionError(
                f"{self.describe()}: option 'references' is not JSON: {exc}",
                hint='write [{"name": "com.acme.Address", "subject": "address-value", '
                '"version": 1}]') from None
        try:
            return parse_references(raw, f"{self.describe()}: option 'references'")
        except KeyguardError as exc:
            raise InvalidOptionError(exc.message, hint=exc.hint) from None

    def written_schema(self, origin: str | None = None) -> SchemaText:
        return SchemaText("AVRO", self.schema_text,
                          origin or f"the {self.context.role} ({self.format_name})",
                          self.resolved_references)

    def __repr__(self) -> str:
        return f"AvroConfluentCodec({self.context.role}, registry={self._where_registry()!r})"

    def record_name(self) -> str | None:
        return record_full_name(self.avro_schema)

    # -- encoding ------------------------------------------------------------------------

    def encode(self, row: Mapping[str, Any]) -> bytes:
        body = self.writer.encode(row)  # the row's own errors first, then a missing id
        return self.header() + body

    def encode_batch(self, batch: pa.RecordBatch | pa.Table) -> list[bytes]:
        return self.encode_arrow(batch).to_pylist()  # type: ignore[no-any-return]

    def encode_arrow(self, batch: pa.RecordBatch | pa.Table) -> pa.Array:
        """The encoded rows as one Arrow binary array, header included."""
        return self.writer.encode_arrow(batch, prefix=self.header)

    # -- decoding ------------------------------------------------------------------------

    def decode(self, data: bytes) -> dict[str, Any]:
        return self.decode_record(data)

    def decode_record(self, data: bytes, headers: Headers = None) -> dict[str, Any]:
        schema_id, _, body = self.unwrap(data, headers)
        return self.writer.decode(body, self._writer_schema(schema_id))

    def decode_batch(self, data: Sequence[bytes], *, arrow: bool = True,
                     headers: Sequence[Headers] | None = None) -> DecodedColumns:
        """`decode` of every record; records of one schema id whose writer schema is the
        reader's, of flat rows of numbers and strings, column-wise (numpy)."""
        # lazy: CLI start-up (a check never decodes a batch)
        from keyguard.formats.avro_column_decoder import decoded_batch

        schema_id, offset = self.frame.common_id(data, headers) or (None, 0)
        if schema_id is not None:
            try:
                writer = self._writer_schema(schema_id)
            except Exception:  # the record by record path reports it, naming the record
                writer = None
            if writer is not None:
                columns = decoded_batch(self.row_type, self.avro_schema, writer, data,
                                        offset, arrow=arrow)
                if columns is not None:
                    return columns
        return super().decode_batch(data, arrow=arrow, headers=headers)

    def undeclared_fields(self, data: bytes, headers: Headers = None) -> tuple[str, ...]:
        """The writer schema's top-level fields (by the id in the frame: an id or a GUID, in
        the bytes or a header) that the row type does not declare: Avro resolution skips them
        when the record is read."""
        schema_id = self.frame.schema_id(data, headers)
        if schema_id is None:
            return ()
        writer = self._writer_schema(schema_id)
        fields = writer.get("fields") if isinstance(writer, dict) else None
        declared = set(self.row_type.names)
        return tuple(f["name"] for f in fields or () if isinstance(f, dict)
                     and f.get("name") not in declared)

    def _writer_schema(self, schema_id: SchemaId) -> Any:
        # Ids and GUIDs are immutable in a registry, so caching by them is safe.
        if schema_id not in self._writer_schemas:
            schema_type, text = self._ask(lambda: self.lookup(schema_id),
                                          f"fetching writer schema {named_id(schema_id)}")
            if schema_type.upper() != "AVRO":
                raise DecodeError(
                    f"{self.describe()}: schema {named_id(schema_id)} is a {schema_type} "
                    "schema, not Avro")
            writer = parse_avro(self._standalone_writer(schema_id, text))
            # lazy: CLI start-up (name resolution, for decoding only)
            from keyguard.formats.avro_resolution import as_reader_names

            self._writer_schemas[schema_id] = as_reader_names(writer, self.avro_schema)
        return self._writer_schemas[schema_id]

    def _standalone_writer(self, schema_id: SchemaId, text: str) -> str:
        """The writer schema with its references (if the registry tells them) resolved."""
        refs_of = getattr(self.registry, "references_of_id", None)
        if not isinstance(schema_id, int):
            refs_of = None  # a registry tells the references of an integer id only
        raw = self._ask(lambda: refs_of(schema_id), f"fetching references of schema id "
                        f"{schema_id}") if callable(refs_of) else ()
        if not raw:
            return text
        where = f"writer schema id {schema_id}"
        # lazy: CLI start-up (schema references, only a writer schema that has some)
        from keyguard.formats.registry.references import parse_references, resolve, standalone

        resolved = self._ask(lambda: resolve(self.registry, parse_references(list(raw), where),
                                             origin=where, schema_type="AVRO"),
                             f"resolving the references of schema id {schema_id}")
        return standalone(text, "AVRO", resolved, origin=where)


AVRO_CONFLUENT_FORMAT = register_format(
    FormatFactory(
        name="avro-confluent",
        options=AVRO_CONFLUENT_OPTIONS,
        build=AvroConfluentCodec,
        schema_type="AVRO", key_family="avro", frame=AvroConfluentCodec.frame,
        uses_registry=True,
        summary="Confluent Schema Registry framing (magic byte, schema id) + Avro binary",
    )
)
