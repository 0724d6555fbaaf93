"""Registration: the explicit step that gives a framed codec its schema id.

A codec in the CONFLUENT frame (avro-confluent, json-registry) writes the registry id of its
schema in every record, and never asks a registry for it while encoding: the id is given from
outside. This module is where it comes from, at the edge, once, before the first record: the
CLI calls it before `keyguard encode` writes, the Spark driver after the guard passed (the
tasks receive the ids, `keyguard.sparkio.schema_ids`).

With `auto.register.schemas` (default true, Flink's behavior) the schema is registered under
the codec's subject (idempotent: an equal schema keeps its id), else looked up there, and a
schema that is not registered stops the write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, TypeVar

from keyguard.formats.codec import CodecContext, format_factory
from keyguard.formats.errors import KeyguardError, RegistryError
from keyguard.formats.options import OptionSet
from keyguard.formats.plan import PlanOptions, UpsertPlan, resolve_options
from keyguard.formats.registry import Registration, Registry, no_guids
from keyguard.formats.registry.connect import open_for

if TYPE_CHECKING:
    from uuid import UUID

    from keyguard.formats.codec import Codec
    from keyguard.formats.framing import Frame
    from keyguard.formats.options import ResolvedOptions
    from keyguard.formats.types import RowType

T = TypeVar("T")
C = TypeVar("C", bound="Codec")


class FramedCodec(Protocol):
    """A codec whose records carry its schema's registry id (avro-confluent's, json-registry's,
    protobuf-registry's); its schema type is its format's (`FormatFactory.schema_type`)."""

    format_name: str
    options: ResolvedOptions
    context: CodecContext
    #: The schema text registered and looked up, and its references as registered.
    schema_text: str
    references: tuple[dict[str, object], ...]

    @property
    def subject(self) -> str: ...

    @property
    def registry(self) -> Registry: ...

    @property
    def schema_id(self) -> int: ...

    @property
    def has_schema_id(self) -> bool: ...

    @property
    def guid(self) -> UUID | None: ...

    #: The side's framing: whether it writes the GUID (`Frame.needs_guid`).
    frame: Frame

    def bind_schema_id(self, schema_id: int, guid: str | UUID | None = None) -> Any: ...

    def describe(self) -> str: ...

#: The option that says whether registering is allowed (`auto.register.schemas`).
AUTO_REGISTER_KEY = "auto.register.schemas"


def registers(codec: Codec) -> bool:
    """Whether writing with `codec` registers its schema under its subject: its format uses a
    registry and its `auto.register.schemas` is on (Flink's default)."""
    return (format_factory(codec.format_name).uses_registry
            and bool(codec.options.get(AUTO_REGISTER_KEY)))


def registry_of(codec: Codec) -> Registry | None:
    """The registry `codec` was built with (`CodecContext.registry`), None when handed none."""
    return codec.context.registry


def open_plan_registries(options: PlanOptions) -> dict[str, Registry]:
    """At the edge, before building a plan: for each side ("key", "value") whose format uses
    a registry, the one its options name (`open_for`, opened on first use). Pass the result
    to `PlanSpec.build(registries=...)`; the codecs never open one themselves."""
    return {role: open_for(fmt.resolved)
            for role, fmt in (("key", options.key), ("value", options.value))
            if fmt.factory.uses_registry and fmt.resolved.get("url")}


def open_plan(table: RowType, options: Mapping[str, Any], *, registry: Registry | None = None,
              extra: OptionSet | None = None) -> UpsertPlan:
    """`keyguard.formats.plan.resolve_plan` at the edge: validate every option, then build the
    codecs with `registry`, else the registries the formats' options name
    (`open_plan_registries`)."""
    resolved = resolve_options(options, extra=extra)
    return resolved.project(table).build(
        registry, registries=None if registry is not None else open_plan_registries(resolved))


def needs_schema_id(codec: Codec) -> TypeGuard[FramedCodec]:
    """Whether the codec's format frames its records with a registry id it must be given."""
    factory = format_factory(codec.format_name)
    return factory.uses_registry and factory.frame.carries_schema_id


def _ask(codec: FramedCodec, call: Callable[[], T], what: str) -> T:
    try:
        return call()
    except KeyguardError as exc:
        raise type(exc)(f"{codec.describe()}: {what}: {exc.message}", hint=exc.hint) from None


def resolve_schema_id(codec: FramedCodec, registry: Registry | None = None, *,
                      register: bool | None = None) -> int:
    """The registry id of the schema `codec` writes: registered under its subject when
    `register` (default: the codec's `auto.register.schemas`), else looked up there.

    `registry` defaults to the one the codec was handed, else the one its options name
    (opened here, at the edge: `open_for`).
    Raises RegistryError when looking up finds nothing; does not bind the id (see
    `bind_schema_id`)."""
    return _resolve(codec, registry, register, guid=False)[0]


def resolve_registration(codec: FramedCodec, registry: Registry | None = None, *,
                         register: bool | None = None) -> Registration:
    """`resolve_schema_id` with the schema's GUID, for records that carry the GUID in a
    header (Confluent's `header_schema_id_serializer`). Raises RegistryError when the
    registry has no GUIDs."""
    schema_id, guid = _resolve(codec, registry, register, guid=True)
    if guid is None:
        raise no_guids(_registry_for(codec, registry).name,
                       f"{codec.describe()}: the version of subject '{codec.subject}' it "
                       "writes has none")
    return Registration(schema_id, guid)


def resolve_binding(codec: FramedCodec, registry: Registry | None = None, *,
                    register: bool | None = None) -> tuple[int, str | None]:
    """What `codec` must be bound to write (`bind_schema_id`): its schema id, and its GUID
    when its framing writes the GUID (a header framing), else None."""
    if codec.frame.needs_guid:
        done = resolve_registration(codec, registry, register=register)
        return done.schema_id, done.guid
    return resolve_schema_id(codec, registry, register=register), None


def _registry_for(codec: FramedCodec, registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    return codec.context.registry if codec.context.registry is not None \
        else open_for(codec.options)


def _resolve(codec: FramedCodec, registry: Registry | None, register: bool | None, *,
             guid: bool) -> tuple[int, str | None]:
    if register is None:
        register = bool(codec.options[AUTO_REGISTER_KEY])
    subject = codec.subject
    reg = _registry_for(codec, registry)
    text, refs = codec.schema_text, codec.references
    schema_type = format_factory(codec.format_name).schema_type  # AVRO, JSON, ...
    if register and guid:
        done = _ask(codec, lambda: reg.register_guid(subject, text, schema_type, refs),
                    f"registering the schema under subject '{subject}'")
        return done.schema_id, done.guid
    if register:
        schema_id: Any = _ask(
            codec, lambda: reg.register(subject, text, schema_type, refs) if refs
            else reg.register(subject, text, schema_type),
            f"registering the schema under subject '{subject}'")
        return int(schema_id), None
    found = _ask(codec, lambda: reg.lookup(subject, text, schema_type, refs) if refs
                 else reg.lookup(subject, text, schema_type),
                 f"looking up the schema in subject '{subject}'")
    if found is None:
        raise RegistryError(
            f"{codec.describe()}: the schema is not registered under subject "
            f"'{subject}' in {reg.name}, and auto.register.schemas is false",
            hint="register it first (keyguard can check it), or set "
                 "auto.register.schemas=true",
        )
    return int(found.schema_id), found.guid


def bind_schema_id(codec: C, registry: Registry | None = None, *,
                   register: bool | None = None) -> C:
    """Resolve the codec's schema id (`resolve_schema_id`) unless it has one; bind it."""
    framed: Codec = codec  # narrowed below; `codec` keeps its own type for the caller
    if not needs_schema_id(framed):
        raise ValueError(f"{codec.describe()}: the {codec.format_name} format writes no "
                         "schema id (check needs_schema_id first)")
    _bind(framed, registry, register)
    return codec


def _bind(codec: FramedCodec, registry: Registry | None, register: bool | None) -> int:
    if not codec.has_schema_id:
        codec.bind_schema_id(*resolve_binding(codec, registry, register=register))
    return codec.schema_id


def plan_guids(plan: UpsertPlan) -> tuple[str | None, str | None]:
    """The key's and the value's bound schema GUIDs, where their framing writes one (None
    otherwise): what a driver hands its tasks beside the ids."""
    def guid(codec: Codec) -> str | None:
        found = getattr(codec, "guid", None) if needs_schema_id(codec) else None
        return None if found is None else str(found)

    return guid(plan.key_codec), guid(plan.value_codec)


def bind_plan_schema_ids(plan: UpsertPlan, registry: Registry | None = None
                         ) -> tuple[int | None, int | None]:
    """The key and value schema ids of `plan`'s framed codecs, resolved and bound once (None
    for a codec whose format carries no id). A registry error stops here, before any record."""
    key, value = plan.key_codec, plan.value_codec
    return (_bind(key, registry, None) if needs_schema_id(key) else None,
            _bind(value, registry, None) if needs_schema_id(value) else None)
