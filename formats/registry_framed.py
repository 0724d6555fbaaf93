"""What every codec in Confluent's wire format shares: the registry handed in, the subject, and
the schema id given from outside (avro-confluent, json-registry, protobuf-registry).

The body is the format's own; this mixin holds the frame's side of the codec: the subject from
the `subject`, `subject.name.strategy` and `schema-context` options, the registry the caller
handed in (`CodecContext.registry`, never opened here), and the id bound once by the
registration step (`keyguard.formats.registry.registration.bind_schema_id`), whose header
(the codec's `frame`, `keyguard.formats.framing.CONFLUENT` unless the format gives another) starts
every record; the frame unwraps what it reads (`unwrap`). Encoding never asks a registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keyguard.formats.catalog import SIDE_FRAMINGS
from keyguard.formats.errors import EXIT_INTERNAL, InvalidOptionError, KeyguardError
from keyguard.formats.framing import CONFLUENT, Frame, Headers, SchemaId, Wrapping, side_frame
from keyguard.formats.options import Option
from keyguard.formats.secrets import redact_url
from keyguard.formats.subjects import qualified, subject_name

if TYPE_CHECKING:
    from uuid import UUID

    from keyguard.formats.codec import CodecContext
    from keyguard.formats.options import ResolvedOptions
    from keyguard.formats.registry import Registry

#: Where a registry format puts the schema id (each side its own): the catalog's framings
#: (`keyguard.formats.catalog.SIDE_FRAMINGS`). Readers read any of Confluent's framings
#: (header first, then the bytes), as Confluent's dual deserializer does.
FRAMING: Option[str] = Option(
    "framing", str, "confluent",
    "Where the schema id goes: 'confluent' writes it in the bytes (magic byte 0, the 4-byte "
    "id: Confluent's wire format, what Flink's formats read); 'confluent-header' writes the "
    "schema's GUID in the record header __key_schema_id / __value_schema_id and leaves the "
    "bytes bare (confluent-kafka's header_schema_id_serializer, Java's "
    "HeaderSchemaIdSerializer), so a key schema change that leaves the body equal moves no "
    "key; 'apicurio', 'apicurio-legacy', 'apicurio-header-global-id' and "
    "'apicurio-header-content-id' are Apicurio Registry's serdes' framings (4-byte content "
    "id, 8-byte global id, the id in an apicurio.key.* / apicurio.value.* header; ids are "
    "looked up over Apicurio's Confluent-compatible API, whose ids are content ids unless "
    "apicurio.ccompat.legacy-id-mode.enabled). Readers "
    "read Confluent's framings either way (the header first, then magic byte 0 or 1), as "
    "dual_schema_id_deserializer does. Not a Flink option.",
    choices=SIDE_FRAMINGS,
)



class SchemaIdNotBound(KeyguardError):
    """A framed codec asked to encode before anyone gave it its schema id: a bug of the
    caller, which must resolve the id first (`keyguard.formats.registry.registration`)."""

    kind = "schema-id-not-bound"
    exit_code = EXIT_INTERNAL


class RegistryNotGiven(KeyguardError):
    """A framed codec asked its registry when its caller handed it none: a bug of the
    caller, which opens the registry at the edge (`keyguard.formats.registry.connect.open_for`)."""

    kind = "registry-not-given"
    exit_code = EXIT_INTERNAL


class RegistryFramed:
    """The frame's half of a framed codec; the codec calls `_init_frame` from its __init__
    and answers `record_name()` (the name Record strategies use) for its schema."""

    format_name: str
    options: ResolvedOptions
    context: CodecContext
    #: Where the schema id goes and how records are read back: the format's default frame
    #: (`FormatFactory.frame`), the `framing` option's once the codec is built (`side_frame`).
    frame: Frame = CONFLUENT

    def describe(self) -> str:
        topic = f" of topic '{self.context.topic}'" if self.context.topic else ""
        return f"{self.format_name} {self.context.role} format{topic}"

    def _init_frame(self) -> None:
        if self.context.registry is None and not self.options["url"]:
            raise InvalidOptionError(
                f"{self.describe()}: required option 'url' is missing",
                hint="set url to the schema registry, e.g. http://localhost:8081")
        self._registry: Registry | None = self.context.registry
        self._schema_id: int | None = None
        self._guid: UUID | None = None
        self._wrapping: Wrapping | None = None
        self.frame = side_frame(type(self).frame, self.options.get("framing"),
                                self.context.role, where=self.describe())

    def record_name(self) -> str | None:
        """The schema's record name, for RecordNameStrategy and TopicRecordNameStrategy."""
        return None

    def _where_registry(self) -> str:
        return self._registry.name if self._registry is not None else \
            redact_url(str(self.options["url"]))

    @property
    def registry(self) -> Registry:
        """The registry handed in (`CodecContext.registry`). Decoding and the registration
        step ask it; encoding never does."""
        if self._registry is None:
            raise RegistryNotGiven(
                f"{self.describe()}: no schema registry was handed to the codec "
                f"(url {redact_url(str(self.options['url']))})",
                hint="this is a keyguard bug: the caller opens the registry "
                     "(keyguard.formats.registry.connect.open_for) and passes it in the "
                     "CodecContext; "
                     "report it")
        return self._registry

    @property
    def subject(self) -> str:
        """The subject this codec writes under (`subject` or the naming strategy), in the
        `schema-context` when one is given."""
        context = self.options.get("schema-context")
        explicit = self.options["subject"]
        if explicit:
            return qualified(str(explicit), context)
        try:
            name = subject_name(self.options["subject.name.strategy"], topic=self.context.topic,
                                role=self.context.role, record_name=self.record_name())
        except InvalidOptionError as exc:
            raise InvalidOptionError(f"{self.describe()}: {exc.message}", hint=exc.hint) from None
        return qualified(name, context)

    @property
    def schema_id(self) -> int:
        """The registry id of this codec's schema, as bound by `bind_schema_id`."""
        if self._schema_id is None:
            raise SchemaIdNotBound(
                f"{self.describe()}: asked to encode before its schema id was given "
                "(the registration step did not run)",
                hint="this is a keyguard bug: resolve and bind the id first "
                     "(keyguard.formats.registry.registration.bind_schema_id); report it")
        return self._schema_id

    @property
    def has_schema_id(self) -> bool:
        return self._schema_id is not None

    @property
    def guid(self) -> UUID | None:
        """The GUID of this codec's schema, when bound (a header framing writes it)."""
        return self._guid

    def bind_schema_id(self, schema_id: int, guid: str | UUID | None = None) -> Any:
        """Give the codec the registry id of its schema (resolved at the edge) and, for a
        framing that writes it, the schema's GUID; returns self."""
        if self._schema_id is not None and self._schema_id != int(schema_id):
            raise SchemaIdNotBound(
                f"{self.describe()}: schema id {schema_id} given, but the codec already writes "
                f"id {self._schema_id}",
                hint="this is a keyguard bug: a codec writes one schema id; report it")
        self._schema_id = int(schema_id)
        if guid is not None:
            from uuid import UUID  # lazy: CLI start-up (only a header framing binds a GUID)

            self._guid = guid if isinstance(guid, UUID) else UUID(str(guid))
        self._wrapping = None  # built once, on the first record (`wrapping`)
        return self

    def frame_index(self) -> tuple[int, ...]:
        """The message index the frame writes (Protobuf's codec answers its message's)."""
        return (0,)

    def wrapping(self) -> Wrapping:
        """What the frame adds to every record: the bytes before the body, the headers."""
        if self._wrapping is None:
            written: SchemaId = self.schema_id
            if self.frame.needs_guid:
                if self._guid is None:
                    raise SchemaIdNotBound(
                        f"{self.describe()}: framing {self.frame.name!r} writes the schema's "
                        f"GUID, but only its id {written} was given",
                        hint="this is a keyguard bug: resolve the registration with its GUID "
                             "(keyguard.formats.registry.registration.bind_schema_id); "
                             "report it")
                written = self._guid
            self._wrapping = self.frame.wrapping(written, self.frame_index())
        return self._wrapping

    def header(self) -> bytes:
        """The bytes before every body (magic byte and schema id in Confluent's frame; none
        in a header framing, whose bytes are the bare body whatever the id)."""
        wrapping = self._wrapping
        if wrapping is None and self.frame.id_in_header:
            return b""
        return (wrapping or self.wrapping()).prefix

    def record_headers(self) -> tuple[tuple[str, bytes], ...]:
        """The headers the frame adds to every record (none when the id is in the bytes)."""
        return self.wrapping().headers

    def unwrap(self, data: bytes, headers: Headers = None, *,
               hint: str | None = None) -> tuple[SchemaId, tuple[int, ...] | None, bytes]:
        """The record out of its frame: the schema id (an integer id or a GUID), the message
        index and the body (`FrameError` when the record is not in the frame)."""
        schema_id, index, body = self.frame.unwrap(data, headers, where=self.describe,
                                                   hint=hint)
        assert schema_id is not None  # every registry frame carries an id
        return schema_id, index, body

    def lookup(self, schema_id: SchemaId) -> tuple[str, str]:
        """(schema type, schema text) of the schema a record names: by its integer id or by
        its GUID (`Registry.get_by_guid`)."""
        if isinstance(schema_id, int):
            return self.registry.get_by_id(schema_id)
        return self.registry.get_by_guid(str(schema_id))

    def _ask(self, call: Any, what: str) -> Any:
        try:
            return call()
        except KeyguardError as exc:
            raise type(exc)(f"{self.describe()}: {what}: {exc.message}", hint=exc.hint) from None
