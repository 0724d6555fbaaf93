"""The `json-registry` format: Flink's json text in Confluent's wire format (JSON Schema).

Confluent Cloud's Flink names it `json-registry`; Confluent's JSON Schema serializers
(`KafkaJsonSchemaSerializer`, confluent-kafka's `JSONSerializer`) and Kafka Connect's
`JsonSchemaConverter` write the same frame. A record is the codec's frame, CONFLUENT
(`keyguard.formats.framing`: magic byte 0, the schema's registry id as 4 bytes big-endian) around
the JSON text exactly as Flink's `json` format writes the row (`keyguard.formats.json_format`: its
encoder and its options, so `json-registry.timestamp-format.standard` works as `json.` does).

The registered schema is the `schema` option, or the JSON Schema derived from the row as
Confluent Connect derives it (`keyguard.formats.json_schema.to_json_schema`). As for avro-confluent,
the id is given from outside (`bind_schema_id`; the edge resolves it once,
`keyguard.formats.registry.registration`, registering under the subject with
`auto.register.schemas`, else looking it up), the subject is `subject` or the
`subject.name.strategy` (the record name of Record strategies is the schema's `title`), in the
`schema-context` when one is given (as Confluent Cloud Flink's DDL names it), and the registry is
always the caller's. Decoding checks the frame (magic byte, an id the registry holds as a JSON
schema) and then reads the JSON body as the json format does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keyguard.formats.avro_confluent_format import (
    AUTO_REGISTER,
    SCHEMA_CONTEXT,
    SUBJECT,
    SUBJECT_STRATEGY,
    URL,
)
from keyguard.formats.codec import (
    Codec,
    CodecContext,
    DecodedColumns,
    FormatFactory,
    register_format,
)
from keyguard.formats.errors import (
    DecodeError,
    InvalidOptionError,
    KeyguardError,
    RegistryUnavailableError,
)
from keyguard.formats.framing import FrameError, Headers, SchemaId, named_id
from keyguard.formats.json_format import (
    IGNORE_PARSE_ERRORS,
    TIMESTAMP_FORMAT,
    JsonCodec,
    json_columns,
)
from keyguard.formats.json_format import OPTIONS as JSON_OPTIONS
from keyguard.formats.json_schema import from_json_schema, to_json_schema
from keyguard.formats.options import Option, OptionSet, ResolvedOptions, merge
from keyguard.formats.registry.options import REGISTRY_OPTIONS
from keyguard.formats.registry.references import ResolvedReference
from keyguard.formats.registry_framed import FRAMING, RegistryFramed
from keyguard.formats.schemafile import SchemaText
from keyguard.formats.schemajson import loads_schema
from keyguard.formats.types import RowType

if TYPE_CHECKING:
    import pyarrow as pa


FORMAT = "json-registry"
_NOT_FRAMED_HINT = ("the record was not written by a schema-registry serializer: read the topic "
                    "with the json format if it holds plain JSON")
SCHEMA_TYPE = "JSON"

SCHEMA: Option[str] = Option(
    "schema", str, None,
    "The JSON Schema to register and look up, as JSON text; it must describe the row (the "
    "same fields, in order). Default: the schema Confluent Connect derives from the row type.",
)

OPTIONS = OptionSet(
    FORMAT,
    merge((URL, SUBJECT, SCHEMA, AUTO_REGISTER, SUBJECT_STRATEGY, SCHEMA_CONTEXT, FRAMING),
          JSON_OPTIONS, REGISTRY_OPTIONS),
    passthrough_prefixes=("properties.",),
)


class JsonRegistryCodec(RegistryFramed, JsonCodec):
    """Rows as Flink's json text in the CONFLUENT frame, with a schema id given from outside."""

    format_name = FORMAT

    def __init__(self, row_type: RowType, options: ResolvedOptions, context: CodecContext):
        super().__init__(row_type, options, context)
        self._init_frame()
        given = options[SCHEMA]
        schema = self._given_schema(str(given)) if given else to_json_schema(
            row_type, timestamp_format=options[TIMESTAMP_FORMAT].value)
        #: The schema text registered and looked up: as given, or the derived JSON Schema.
        self.schema_text: str = str(given) if given else json.dumps(schema)
        self.title: str | None = schema.get("title") if isinstance(schema, dict) else None
        #: Schema references, as registered and resolved (none: the schema is standalone).
        self.references: tuple[dict[str, object], ...] = ()
        self.resolved_references: tuple[ResolvedReference, ...] = ()
        self._known_ids: set[SchemaId] = set()

    def _given_schema(self, text: str) -> Any:
        where = f"{self.describe()}: option 'schema'"
        try:
            schema = loads_schema(text, where)
            described = from_json_schema(schema)
        except KeyguardError as exc:
            raise InvalidOptionError(exc.message, hint=exc.hint) from None
        names = list(described.names) if isinstance(described, RowType) else None
        if names != list(self.row_type.names):
            raise InvalidOptionError(
                f"{where}: describes fields {names}, the {self.context.role} row has "
                f"{list(self.row_type.names)}",
                hint="give the JSON Schema of this row (the same fields, in order), or leave "
                     "the option out to register the derived one")
        return schema

    def __repr__(self) -> str:
        return f"JsonRegistryCodec({self.context.role}, registry={self._where_registry()!r})"

    def record_name(self) -> str | None:
        return self.title

    def written_schema(self, origin: str | None = None) -> SchemaText:
        return SchemaText(SCHEMA_TYPE, self.schema_text,
                          origin or f"the {self.context.role} ({self.format_name})")

    # -- encoding ------------------------------------------------------------------------

    def encode(self, row: Mapping[str, Any]) -> bytes:
        body = super().encode(row)  # the row's own errors first, then a missing id
        return self.header() + body

    def encode_batch(self, batch: pa.RecordBatch | pa.Table) -> list[bytes]:
        return self.encode_arrow(batch).to_pylist()  # type: ignore[no-any-return]

    def encode_arrow(self, batch: pa.RecordBatch | pa.Table) -> pa.Array:
        """The framed rows as one Arrow binary array: the header joined in with the body."""
        return self.encode_rows(batch, prefix=self.header)

    # -- decoding ------------------------------------------------------------------------

    def decode(self, data: bytes) -> dict[str, Any] | None:
        return self.decode_record(data)

    def decode_record(self, data: bytes, headers: Headers = None) -> dict[str, Any] | None:
        """The row in a framed record: the frame checked (magic byte, a JSON schema id the
        registry holds), then the JSON body as the json format reads it."""
        try:
            schema_id, _, body = self.unwrap(data, headers, hint=_NOT_FRAMED_HINT)
        except FrameError:
            if self.options[IGNORE_PARSE_ERRORS]:
                return None  # as Flink skips a record it cannot parse
            raise
        self._check_id(schema_id)
        return super().decode(body)

    def undeclared_fields(self, data: bytes, headers: Headers = None) -> tuple[str, ...]:
        try:
            _, _, body = self.unwrap(data, headers)
        except FrameError:
            return ()
        return super().undeclared_fields(body)

    def decode_batch(self, data: Sequence[bytes], *, arrow: bool = True,
                     headers: Sequence[Headers] | None = None) -> DecodedColumns:
        """`decode` of every record: records of one known JSON schema id column-wise, as the
        json format reads their bodies; any other batch record by record."""
        common = self.frame.common_id(data, headers)
        if common is not None and self._known_id(common[0]):
            offset = common[1]
            columns = json_columns(self, [d[offset:] for d in data])
            if columns is not None:
                return columns
        return Codec.decode_batch(self, data, headers=headers)

    def _known_id(self, schema_id: SchemaId) -> bool:
        """Whether `schema_id` is a JSON schema's id the registry holds (the record by record
        path reports any other, naming the record)."""
        try:
            self._check_id(schema_id)
        except KeyguardError:
            return False
        return True

    def _check_id(self, schema_id: SchemaId) -> None:
        # Ids and GUIDs are immutable in a registry, so one found once stays known.
        if schema_id in self._known_ids:
            return
        try:
            schema_type, _ = self.lookup(schema_id)
        except RegistryUnavailableError as exc:  # the registry, not the record: exit 3
            raise type(exc)(f"{self.describe()}: fetching schema {named_id(schema_id)}: "
                            f"{exc.message}", hint=exc.hint) from None
        except KeyguardError as exc:
            raise DecodeError(
                f"{self.describe()}: the record carries schema {named_id(schema_id)}, which "
                f"{self.registry.name} does not hold ({exc.message})",
                hint="the record was written against another schema registry: point url at "
                     "the registry the writer used") from None
        if str(schema_type).upper() != SCHEMA_TYPE:
            raise DecodeError(
                f"{self.describe()}: the record carries schema {named_id(schema_id)}, whose "
                "schema "
                f"type is {schema_type}, not JSON",
                hint="read the topic with the format its writer used (avro-confluent for "
                     "Avro)")
        self._known_ids.add(schema_id)


def _build(row_type: RowType, options: ResolvedOptions, context: CodecContext
           ) -> JsonRegistryCodec:
    return JsonRegistryCodec(row_type, options, context)


FACTORY = register_format(
    FormatFactory(
        FORMAT,
        OPTIONS,
        _build,
        schema_type=SCHEMA_TYPE, key_family="json", frame=JsonRegistryCodec.frame,
        uses_registry=True,
        summary="Confluent Schema Registry framing (magic byte, schema id) + Flink's json "
                "text, registered as JSON Schema",
    )
)
