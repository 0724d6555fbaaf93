"""Registration is an explicit step: the codec is given its schema id, encoding never asks."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from keyguard.formats.avro_confluent_format import (
    AVRO_CONFLUENT_FORMAT,
    AvroConfluentCodec,
    RegistryNotGiven,
    SchemaIdNotBound,
)
from keyguard.formats.avro_format import AvroWriter
from keyguard.formats.codec import CodecContext, create_codec, default_format, format_factory
from keyguard.formats.errors import EXIT_INTERNAL, RegistryError, RegistryUnavailableError
from keyguard.formats.framing import CONFLUENT
from keyguard.formats.plan import resolve_options, resolve_plan
from keyguard.formats.registry import SchemaVersion
from keyguard.formats.registry.connect import open_registry
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import (
    bind_plan_schema_ids,
    bind_schema_id,
    needs_schema_id,
    open_plan_registries,
    registers,
    registry_of,
    resolve_schema_id,
)
from keyguard.formats.schema_identity import canonical_form
from keyguard.formats.sqltypes import parse_columns
from keyguard.formats.types import BigIntType, StringType, row

KEY = row(("region", StringType().not_null()), ("id", BigIntType().not_null()))


class Recording:
    """A mock registry that records which registry calls were made."""

    def __init__(self) -> None:
        self.inner = MockRegistry(f"registration-{uuid.uuid4().hex}")
        self.name = self.inner.name
        self.calls: list[str] = []

    def register(self, subject: str, schema: str, *args: Any) -> int:
        self.calls.append(f"register {subject}")
        return self.inner.register(subject, schema, *args)

    def lookup(self, subject: str, schema: str, *args: Any) -> SchemaVersion | None:
        self.calls.append(f"lookup {subject}")
        return self.inner.lookup(subject, schema, *args)

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        self.calls.append(f"get_by_id {schema_id}")
        return self.inner.get_by_id(schema_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def codec(registry: Any, **options: Any) -> AvroConfluentCodec:
    resolved = AVRO_CONFLUENT_FORMAT.options.validate({"url": "mock://unused", **options})
    ctx = CodecContext(role="key", topic="orders", registry=registry)
    return AVRO_CONFLUENT_FORMAT.build(KEY, resolved, ctx)  # type: ignore[return-value]


def test_registers_with_auto_register() -> None:
    reg = Recording()
    c = codec(reg)
    schema_id = resolve_schema_id(c)
    assert reg.calls == ["register orders-key"]
    assert reg.inner.get_version("orders-key").schema_id == schema_id
    assert not c.has_schema_id  # resolving is not binding
    assert bind_schema_id(c) is c and c.schema_id == schema_id
    assert reg.calls == ["register orders-key", "register orders-key"]
    bind_schema_id(c)  # bound already: no second look
    assert len(reg.calls) == 2


def test_looks_up_without_auto_register() -> None:
    reg = Recording()
    c = codec(reg, **{"auto.register.schemas": "false"})
    # Registered by someone else, with other formatting: found by canonical form.
    known = reg.inner.register("orders-key", json.dumps(json.loads(c.schema_text), indent=2))
    assert resolve_schema_id(c) == known
    assert reg.calls == ["lookup orders-key"]
    # The caller may say so explicitly, whatever the option says.
    assert resolve_schema_id(codec(reg), register=False) == known
    assert reg.calls[-1] == "lookup orders-key"


def test_not_registered_without_auto_register_is_todays_error() -> None:
    reg = Recording()
    c = codec(reg, **{"auto.register.schemas": "false"})
    with pytest.raises(RegistryError, match="not registered under subject 'orders-key'") as info:
        bind_schema_id(c)
    assert str(info.value).startswith("avro-confluent key format of topic 'orders': ")
    assert f"in {reg.name}, and auto.register.schemas is false" in info.value.message
    assert info.value.hint and "auto.register.schemas=true" in info.value.hint
    assert reg.inner.subjects() == [] and not c.has_schema_id


def test_registry_errors_name_the_codec_and_the_step() -> None:
    class Down(Recording):
        def register(self, subject: str, schema: str, *args: Any) -> int:
            raise RegistryUnavailableError("http://registry:8081: connection refused",
                                           hint="check the URL")

    with pytest.raises(RegistryUnavailableError) as info:
        resolve_schema_id(codec(Down()))
    assert info.value.message == ("avro-confluent key format of topic 'orders': registering "
                                  "the schema under subject 'orders-key': http://registry:8081: "
                                  "connection refused")
    assert info.value.hint == "check the URL" and info.value.exit_code == 3


def test_encode_without_a_bound_id_fails_clearly_and_asks_nothing() -> None:
    reg = Recording()
    c = codec(reg)
    with pytest.raises(SchemaIdNotBound) as info:
        c.encode({"region": "eu", "id": 1})
    assert info.value.exit_code == EXIT_INTERNAL and info.value.kind == "schema-id-not-bound"
    assert "avro-confluent key format of topic 'orders'" in info.value.message
    assert "before its schema id was given" in info.value.message
    assert info.value.hint and "keyguard bug" in info.value.hint
    assert reg.calls == [] and reg.inner.subjects() == []


def test_bound_codec_is_the_avro_body_in_the_confluent_frame() -> None:
    c = codec(Recording()).bind_schema_id(100017)
    r = {"region": "eu", "id": 1}
    body = AvroWriter(KEY, json.loads(c.schema_text)).encode(r)
    assert c.encode(r) == CONFLUENT.wrap(100017, body)[0] == b"\x00\x00\x01\x86\xb1" + body
    c.bind_schema_id(100017)  # the same id again is fine
    with pytest.raises(SchemaIdNotBound, match="already writes id 100017"):
        c.bind_schema_id(5)


def test_decoding_asks_the_context_registry() -> None:
    reg = Recording()
    c = bind_schema_id(codec(reg))
    data = c.encode({"region": "eu", "id": 3})
    fresh = codec(reg)  # unbound: decoding needs no id of its own
    assert fresh.decode(data) == {"region": "eu", "id": 3}
    assert reg.calls[-1] == f"get_by_id {c.schema_id}"


def test_plan_ids_are_bound_once_for_the_framed_formats_only() -> None:
    reg = Recording()
    plan = resolve_plan(parse_columns("id BIGINT NOT NULL, v STRING"), {
        "topic": "orders", "primary-key": "id", "key.format": "json",
        "value.format": "avro-confluent", "value.avro-confluent.url": "mock://unused",
    }, registry=reg)  # type: ignore[arg-type]
    key_id, value_id = bind_plan_schema_ids(plan)
    assert key_id is None and value_id == reg.inner.get_version("orders-value").schema_id
    assert plan.value_codec.schema_id == value_id  # type: ignore[attr-defined]
    key, value = plan.encode({"id": 1, "v": "x"})
    assert key == b'{"id":1}' and CONFLUENT.schema_id(value) == value_id
    assert bind_plan_schema_ids(plan) == (None, value_id)
    assert reg.calls == ["register orders-value"]


@pytest.mark.parametrize("name", ["json", "csv", "raw", "avro", "avro-confluent"])
def test_needs_schema_id_is_the_formats_answer(name: str) -> None:
    row_type = parse_columns("id BIGINT NOT NULL")
    opts = {"url": "mock://unused"} if name == "avro-confluent" else {}
    c = create_codec(name, row_type, opts, CodecContext(role="key", topic="t",
                                                        registry=Recording()))  # type: ignore[arg-type]
    assert needs_schema_id(c) is (name == "avro-confluent")
    if name != "avro-confluent":
        with pytest.raises(ValueError, match=f"the {name} format writes no schema id"):
            bind_schema_id(c)


def test_canonical_form_used_by_lookup_is_schema_identity() -> None:
    c = codec(Recording())
    assert canonical_form(c.schema_text) == canonical_form(
        json.dumps(json.loads(c.schema_text), indent=4))


def test_the_codec_never_opens_a_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr("keyguard.formats.registry.connect.open_registry",
                        lambda url, *a, **k: opened.append(url))  # type: ignore[func-returns-value]
    c = AVRO_CONFLUENT_FORMAT.build(KEY, AVRO_CONFLUENT_FORMAT.options.validate(
        {"url": "mock://never"}), CodecContext(role="key", topic="orders"))
    with pytest.raises(RegistryNotGiven, match="no schema registry was handed") as err:
        c.decode(b"\x00\x00\x00\x00\x01\x02")
    assert err.value.exit_code == EXIT_INTERNAL and opened == []


def test_the_edge_opens_each_sides_registry_on_first_use(
        monkeypatch: pytest.MonkeyPatch) -> None:
    scope = f"edge-{uuid.uuid4().hex}"
    opened: list[str] = []
    real = open_registry
    monkeypatch.setattr("keyguard.formats.registry.connect.open_registry",
                        lambda url, *a, **k: opened.append(url) or real(url, *a, **k))
    options = resolve_options({
        "topic": "orders", "primary-key": "id", "key.format": "json",
        "value.format": "avro-confluent", "value.avro-confluent.url": f"mock://{scope}"})
    registries = open_plan_registries(options)
    assert sorted(registries) == ["value"] and opened == []  # nothing opened yet
    plan = options.project(parse_columns("id BIGINT NOT NULL, v STRING")).build(
        registries=registries)
    assert registry_of(plan.value_codec) is registries["value"]
    assert registry_of(plan.key_codec) is None and opened == []
    assert registers(plan.value_codec) and not registers(plan.key_codec)
    _, value_id = bind_plan_schema_ids(plan)  # the registration step opens it, once
    assert opened == [f"mock://{scope}"]
    assert MockRegistry(scope).get_version("orders-value").schema_id == value_id
    MockRegistry.drop_scope(scope)


@pytest.mark.parametrize(("schema_type", "name"),
                         [("AVRO", "avro-confluent"), ("JSON", "json"), ("json", "json"),
                          ("PROTOBUF", "protobuf-registry"), ("XML", "avro-confluent")])
def test_the_default_format_of_a_registered_schema_type(schema_type: str, name: str) -> None:
    assert default_format(schema_type) == name
    assert format_factory(name).schema_type == {"json": "JSON", "protobuf-registry": "PROTOBUF"
                                                 }.get(name, "AVRO")
