"""Schema GUIDs in every registry backend: resolved by GUID, returned by registration.

The HTTP backend runs against the fake registry of conftest.py, with GUIDs (as Confluent 8.0
and later) and without (as Karapace and earlier Confluent versions); the mock against
confluent-kafka's own serializer writing the GUID in a record header.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from http_registry_cases import KEY_V1, KEY_V2, PASSWORD, SUBJECT, fails, open_http

from keyguard.formats.avro_confluent_format import AVRO_CONFLUENT_FORMAT
from keyguard.formats.codec import CodecContext
from keyguard.formats.errors import (
    EXIT_INVALID,
    EXIT_UNREACHABLE,
    RegistryError,
    RegistryUnavailableError,
)
from keyguard.formats.registry import EmptyRegistry, Registration, parse_guid
from keyguard.formats.registry.connect import ENV_USER_INFO
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.registration import resolve_registration, resolve_schema_id
from keyguard.formats.schema_identity import derived_guid
from keyguard.formats.types import BigIntType, StringType, row

UNKNOWN = "0b5c2d7e-1f3a-4c6b-8d9e-0a1b2c3d4e5f"


# --- the GUID's text -------------------------------------------------------------------------


def test_a_guid_is_read_in_its_canonical_form_from_text_or_bytes() -> None:
    guid = uuid.uuid4()
    assert parse_guid(str(guid).upper()) == str(guid)
    assert parse_guid(f" {guid} ") == str(guid)
    assert parse_guid(guid.bytes) == str(guid)


@pytest.mark.parametrize("bad", ["", "42", "../subjects", "not-a-guid", b"\x01" * 15, None])
def test_anything_else_is_refused_with_an_example(bad: object) -> None:
    err = fails(RegistryError, lambda: parse_guid(bad, "the key's schema id header"))
    assert err.exit_code == EXIT_INVALID
    assert err.message.startswith("the key's schema id header: ") and "is not a GUID" in err.message
    assert err.hint and "UUID" in err.hint


# --- the file registry: derived, stable GUIDs --------------------------------------------------


def test_file_registry_derives_one_guid_per_schema(tmp_path: Path) -> None:
    reg = FileRegistry(tmp_path / "a")
    first = reg.register_guid(SUBJECT, KEY_V1)
    assert isinstance(first, Registration)
    assert first == Registration(reg.register(SUBJECT, KEY_V1), derived_guid(KEY_V1))
    assert uuid.UUID(first.guid).version == 5
    # The same on another machine, in another subject, and for another text of one schema.
    elsewhere = FileRegistry(tmp_path / "b")
    assert elsewhere.register_guid("other-key", json.dumps(json.loads(KEY_V1), indent=2)) == first
    second = reg.register_guid(SUBJECT, KEY_V2)
    assert second.guid != first.guid and second.schema_id != first.schema_id
    assert [v.guid for v in reg.all_versions(SUBJECT)] == [first.guid, second.guid]
    assert reg.get_version(SUBJECT).guid == second.guid
    assert reg.get_by_guid(first.guid) == ("AVRO", KEY_V1)
    assert reg.get_by_guid(second.guid.upper()) == ("AVRO", KEY_V2)


def test_file_registry_guid_keeps_the_schema_type_and_references(tmp_path: Path) -> None:
    text = '{"type":"string"}'  # an Avro schema and a JSON Schema
    assert derived_guid(text, "JSON") != derived_guid(text, "AVRO")
    refs = [{"name": "com.acme.Address", "subject": "address-value", "version": 1}]
    assert derived_guid(KEY_V1, "AVRO", refs) != derived_guid(KEY_V1)


def test_file_registry_unknown_or_malformed_guid_is_invalid_input(tmp_path: Path) -> None:
    reg = FileRegistry(tmp_path)
    reg.register(SUBJECT, KEY_V1)
    err = fails(RegistryError, lambda: reg.get_by_guid(UNKNOWN))
    assert err.exit_code == EXIT_INVALID and f"no schema with GUID {UNKNOWN}" in err.message
    assert fails(RegistryError, lambda: reg.get_by_guid("v1")).exit_code == EXIT_INVALID


def test_a_missing_file_registry_is_unreachable_for_a_guid_too(tmp_path: Path) -> None:
    err = fails(RegistryUnavailableError,
                 lambda: FileRegistry(tmp_path / "missing").get_by_guid(UNKNOWN))
    assert err.exit_code == EXIT_UNREACHABLE


def test_a_git_ref_registry_answers_guids_and_refuses_registration(tmp_path: Path) -> None:
    import subprocess

    FileRegistry(tmp_path / "schemas").register(SUBJECT, KEY_V1)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    at_head = FileRegistry.at_git_ref(tmp_path, "HEAD")
    assert at_head.get_by_guid(derived_guid(KEY_V1)) == ("AVRO", KEY_V1)
    assert "read-only" in fails(RegistryError,
                                 lambda: at_head.register_guid(SUBJECT, KEY_V2)).message


# --- confluent-kafka's mock: the GUIDs its serializer writes ----------------------------------


@pytest.fixture
def mock() -> Any:
    scope = f"guids-{uuid.uuid4().hex}"
    yield MockRegistry(scope)
    MockRegistry.drop_scope(scope)


def _header_guid(mock: MockRegistry, schema: str, record: dict[str, Any]) -> str:
    """What confluent-kafka's AvroSerializer with header_schema_id_serializer writes."""
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    serializer = AvroSerializer(mock.client, schema,
                                conf={"schema.id.serializer": header_schema_id_serializer})
    headers: list[tuple[str, bytes]] = []
    serializer(record, SerializationContext("pageviews_per_region", MessageField.KEY, headers))
    ((name, value),) = headers
    assert name == "__key_schema_id" and value[0] == 1 and len(value) == 17
    return str(uuid.UUID(bytes=value[1:]))


def test_mock_resolves_the_guid_confluents_serializer_wrote(mock: MockRegistry) -> None:
    guid = _header_guid(mock, KEY_V1, {"user_region": "eu"})
    assert mock.get_by_guid(guid) == ("AVRO", KEY_V1)
    # keyguard's registration of the same schema answers the same id and GUID.
    done = mock.register_guid(SUBJECT, json.dumps(json.loads(KEY_V1), indent=2))
    assert done == Registration(mock.get_version(SUBJECT).schema_id, guid)
    assert mock.get_version(SUBJECT).guid == guid


def test_mock_registration_guid_is_what_confluents_serializer_writes(mock: MockRegistry) -> None:
    done = mock.register_guid(SUBJECT, KEY_V2)
    assert mock.register(SUBJECT, KEY_V2) == done.schema_id
    assert _header_guid(mock, KEY_V2, {"user_region": "eu", "shard": None}) == done.guid
    err = fails(RegistryError, lambda: mock.get_by_guid(UNKNOWN))
    assert err.exit_code == EXIT_INVALID and f"schema GUID {UNKNOWN}" in err.message


def test_the_empty_registry_has_no_guids_and_takes_nothing() -> None:
    empty = EmptyRegistry()
    assert "not found" in fails(RegistryError, lambda: empty.get_by_guid(UNKNOWN)).message
    assert "no registry was named" in fails(
        RegistryError, lambda: empty.register_guid(SUBJECT, KEY_V1)).message


# --- HTTP: Confluent 8.0 and later ------------------------------------------------------------


def test_http_registration_returns_the_registrys_guid(registry_server) -> None:
    registry_server.state.guids = True
    reg = open_http(registry_server.url)
    done = reg.register_guid(SUBJECT, KEY_V1)
    assert done == Registration(reg.register(SUBJECT, KEY_V1),
                                registry_server.state.guid_of(done.schema_id))
    assert reg.get_version(SUBJECT, 1).guid == done.guid
    found = reg.lookup(SUBJECT, KEY_V1)
    assert found is not None and found.guid == done.guid


def test_http_resolves_a_guid_fresh_through_its_route(registry_server) -> None:
    registry_server.state.guids = True
    reg = open_http(registry_server.url)
    schema_id, _ = registry_server.state.add(SUBJECT, KEY_V2)
    guid = registry_server.state.guid_of(schema_id)
    assert reg.get_by_guid(guid.upper()) == ("AVRO", KEY_V2)
    assert reg.get_by_guid(guid) == ("AVRO", KEY_V2)  # asked again: no cached answer
    paths = [path for _, path, _, _ in registry_server.state.requests]
    assert paths == [f"/schemas/guids/{guid}"] * 2


def test_http_unknown_guid_is_the_registrys_answer(registry_server) -> None:
    registry_server.state.guids = True
    err = fails(RegistryError, lambda: open_http(registry_server.url).get_by_guid(UNKNOWN))
    assert err.exit_code == EXIT_INVALID and not isinstance(err, RegistryUnavailableError)
    assert "40403" in err.message and f"schema GUID {UNKNOWN}" in err.message


def test_http_malformed_guid_is_refused_before_any_request(registry_server) -> None:
    err = fails(RegistryError, lambda: open_http(registry_server.url).get_by_guid("../../config"))
    assert err.exit_code == EXIT_INVALID and registry_server.state.requests == []


# --- HTTP: a registry without GUIDs (Karapace, Confluent before 8.0) ------------------------


def test_a_registry_without_guids_says_so_when_resolving(registry_server) -> None:
    reg = open_http(registry_server.url)
    err = fails(RegistryError, lambda: reg.get_by_guid(UNKNOWN))
    assert err.exit_code == EXIT_INVALID and not isinstance(err, RegistryUnavailableError)
    assert "has no schema GUIDs" in err.message and "Karapace" in err.message
    assert err.hint and "prefix" in err.hint


def test_a_registry_without_guids_says_so_when_registering(registry_server) -> None:
    reg = open_http(registry_server.url)
    err = fails(RegistryError, lambda: reg.register_guid(SUBJECT, KEY_V1))
    assert err.exit_code == EXIT_INVALID and "has no schema GUIDs" in err.message
    assert "answered no guid" in err.message
    assert reg.get_version(SUBJECT).guid is None  # registered all the same, without a GUID


def test_a_url_that_is_no_registry_stays_unreachable(registry_server) -> None:
    err = fails(RegistryUnavailableError,
                 lambda: open_http(f"{registry_server.url}/nope").get_by_guid(UNKNOWN))
    assert err.exit_code == EXIT_UNREACHABLE and "GUID" not in err.message


# --- HTTP: the same deadline, retries and redaction as every request --------------------------


def test_guid_requests_are_retried(registry_server) -> None:
    registry_server.state.guids = True
    schema_id, _ = registry_server.state.add(SUBJECT, KEY_V1)
    registry_server.state.fail_next = [503]
    reg = open_http(registry_server.url, {"retries": "2", "retry-backoff": "5ms"})
    assert reg.get_by_guid(registry_server.state.guid_of(schema_id)) == ("AVRO", KEY_V1)
    assert len(registry_server.state.requests) == 2


def test_a_slow_registry_is_unreachable_within_the_deadline(registry_server) -> None:
    registry_server.state.delay = 1.5
    reg = open_http(registry_server.url, {"timeout": "200ms", "retries": "0"})
    err = fails(RegistryUnavailableError, lambda: reg.get_by_guid(UNKNOWN))
    assert err.exit_code == EXIT_UNREACHABLE and f"schema GUID {UNKNOWN}" in err.message


def test_refused_credentials_are_never_shown(registry_server) -> None:
    registry_server.state.basic = ("alice", "right-one")
    reg = open_http(registry_server.url, **{ENV_USER_INFO: f"alice:{PASSWORD}"})
    for call in (lambda: reg.get_by_guid(UNKNOWN), lambda: reg.register_guid(SUBJECT, KEY_V1)):
        err = fails(RegistryUnavailableError, call, PASSWORD)
        assert "401" in err.message and err.exit_code == EXIT_UNREACHABLE
    registry_server.state.basic = None
    registry_server.state.echo_status = 500
    fails(RegistryUnavailableError, lambda: reg.get_by_guid(UNKNOWN), PASSWORD)


def test_connection_refused_is_unreachable(free_port) -> None:
    reg = open_http(f"http://bob:{PASSWORD}@127.0.0.1:{free_port}")
    err = fails(RegistryUnavailableError, lambda: reg.get_by_guid(UNKNOWN), PASSWORD)
    assert err.exit_code == EXIT_UNREACHABLE


# --- registration: the step that gives a codec its id, and now its GUID ----------------------

KEY = row(("region", StringType().not_null()), ("id", BigIntType().not_null()))


def _codec(registry: Any, **options: Any) -> Any:
    resolved = AVRO_CONFLUENT_FORMAT.options.validate({"url": "mock://unused", **options})
    return AVRO_CONFLUENT_FORMAT.build(KEY, resolved,
                                       CodecContext(role="key", topic="orders", registry=registry))


def test_registration_resolves_id_and_guid(tmp_path: Path) -> None:
    reg = FileRegistry(tmp_path)
    done = resolve_registration(_codec(reg))
    assert done.schema_id == resolve_schema_id(_codec(reg))
    assert reg.get_by_guid(done.guid) == ("AVRO", reg.get_version("orders-key").schema)
    # Looked up, not registered: the same answer from the version found.
    assert resolve_registration(_codec(reg, **{"auto.register.schemas": "false"})) == done


def test_registration_through_a_registry_without_guids_fails_clearly(registry_server) -> None:
    reg = open_http(registry_server.url)
    looked_up = _codec(reg, **{"auto.register.schemas": "false"})
    reg.register("orders-key", looked_up.schema_text)
    err = fails(RegistryError, lambda: resolve_registration(looked_up))
    assert err.exit_code == EXIT_INVALID and "has no schema GUIDs" in err.message
    assert "subject 'orders-key'" in err.message
    err = fails(RegistryError, lambda: resolve_registration(_codec(reg)))
    assert err.message.startswith("avro-confluent key format of topic 'orders': registering")
