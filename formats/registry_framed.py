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

from typing import TYPE_CHECKING, Any, ClassVar

from keyguard.formats.errors import EXIT_INTERNAL, InvalidOptionError, KeyguardError
from keyguard.formats.framing import CONFLUENT, Frame, FrameError, Headers, Wrapping
from keyguard.formats.secrets import redact_url
from keyguard.formats.subjects import qualified, subject_name

if TYPE_CHECKING:
    from keyguard.formats.codec import CodecContext
    from keyguard.formats.options import ResolvedOptions
    from keyguard.formats.registry import Registry


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
    #: Where the schema id goes and how records are read back (the format's factory names the
    #: same frame: `FormatFactory.frame`).
    frame: ClassVar[Frame] = CONFLUENT

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
        self._wrapping: Wrapping | None = None

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

    def bind_schema_id(self, schema_id: int) -> Any:
        """Give the codec the registry id of its schema (resolved at the edge); returns self."""
        if self._schema_id is not None and self._schema_id != int(schema_id):
            raise SchemaIdNotBound(
                f"{self.describe()}: schema id {schema_id} given, but the codec already writes "
                f"id {self._schema_id}",
                hint="this is a keyguard bug: a codec writes one schema id; report it")
        self._schema_id = int(schema_id)
        self._wrapping = None  # built once, on the first record (`wrapping`)
        return self

    def frame_index(self) -> tuple[int, ...]:
        """The message index the frame writes (Protobuf's codec answers its message's)."""
        return (0,)

    def wrapping(self) -> Wrapping:
        """What the frame adds to every record: the bytes before the body, the headers."""
        if self._wrapping is None:
            self._wrapping = self.frame.wrapping(self.schema_id, self.frame_index())
        return self._wrapping

    def header(self) -> bytes:
        """The bytes before every body (magic byte and schema id in Confluent's frame)."""
        wrapping = self._wrapping
        return (wrapping or self.wrapping()).prefix

    def record_headers(self) -> tuple[tuple[str, bytes], ...]:
        """The headers the frame adds to every record (none when the id is in the bytes)."""
        return self.wrapping().headers

    def unwrap(self, data: bytes, headers: Headers = None, *,
               hint: str | None = None) -> tuple[int, tuple[int, ...] | None, bytes]:
        """The record out of its frame: the registry id, the message index and the body
        (`FrameError` when the record is not in the frame)."""
        unwrapped = self.frame.unwrap(data, headers, where=self.describe, hint=hint)
        if type(unwrapped[0]) is not int:
            raise FrameError(f"{self.describe()}: the record carries schema {unwrapped[0]}, "
                             "not a registry id this codec looks up", hint=hint or
                             "read the topic with a format whose registry holds schema GUIDs")
        return unwrapped  # type: ignore[return-value]  # its id is an int: checked above

    def _ask(self, call: Any, what: str) -> Any:
        try:
            return call()
        except KeyguardError as exc:
            raise type(exc)(f"{self.describe()}: {what}: {exc.message}", hint=exc.hint) from None
