"""json-registry through the HTTP registry: registered as JSON Schema over REST, read back by id."""

from __future__ import annotations

import json

import pytest

from keyguard.formats.errors import DecodeError
from keyguard.formats.framing import CONFLUENT
from keyguard.formats.registry.registration import bind_plan_schema_ids, open_plan
from keyguard.formats.sqltypes import parse_type
from keyguard.formats.types import RowType


def _table() -> RowType:
    t = parse_type("ROW<id BIGINT NOT NULL, name STRING>")
    assert isinstance(t, RowType)
    return t.not_null()


def _options(url: str, **extra: str) -> dict[str, str]:
    return {"topic": "orders", "primary-key": "id",
            "key.format": "json-registry", "key.json-registry.url": url,
            "key.json-registry.retries": "0", "key.json-registry.timeout": "2s",
            "value.format": "json-registry", "value.json-registry.url": url,
            "value.json-registry.retries": "0", "value.json-registry.timeout": "2s", **extra}


def test_register_encode_and_decode_over_http(registry_server) -> None:
    plan = open_plan(_table(), _options(registry_server.url))
    key_id, value_id = bind_plan_schema_ids(plan)
    posted = [b for b in registry_server.state.bodies if isinstance(b, dict) and "schema" in b]
    assert posted and all(b.get("schemaType") == "JSON" for b in posted)
    stored = registry_server.state.subjects["orders-key"][0]
    assert (stored["id"], stored["schemaType"]) == (key_id, "JSON")
    assert json.loads(stored["schema"])["properties"]["id"]["connect.type"] == "int64"
    key, value = plan.encode({"id": 1, "name": "Ünï"})
    assert key == CONFLUENT.header_bytes(key_id) + b'{"id":1}'
    assert value == CONFLUENT.header_bytes(value_id) + '{"id":1,"name":"Ünï"}'.encode()
    assert plan.decode(key, value) == {"id": 1, "name": "Ünï"}


def test_an_id_the_http_registry_does_not_hold_is_a_decode_error(registry_server) -> None:
    plan = open_plan(_table(), _options(registry_server.url))
    bind_plan_schema_ids(plan)
    with pytest.raises(DecodeError, match=r"schema id 4242, which \S+ does not hold"):
        plan.key_codec.decode(CONFLUENT.header_bytes(4242) + b'{"id":1}')
