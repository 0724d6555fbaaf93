"""protobuf-registry over HTTP: registration sends schemaType PROTOBUF and the .proto text, and
a record is read back by the id the registry gave (the fake registry of conftest.py)."""

from __future__ import annotations

from keyguard.formats.codec import CodecContext, create_codec
from keyguard.formats.registry.connect import open_registry
from keyguard.formats.registry.registration import bind_schema_id
from keyguard.formats.sqltypes import parse_type

KEY = 'syntax = "proto3";\npackage shop;\nmessage OrderKey { int64 id = 1; string region = 2; }\n'


def test_registration_sends_protobuf_and_reads_back_by_id(registry_server):
    registry = open_registry(registry_server.url, {"retries": "0", "timeout": "2s"})
    row = parse_type("ROW<id BIGINT NOT NULL, region STRING NOT NULL>").not_null()
    codec = create_codec("protobuf-registry", row, {"url": registry_server.url, "schema": KEY},
                         CodecContext(role="key", topic="orders", registry=registry))
    bind_schema_id(codec)
    posted = [b for b in registry_server.state.bodies if isinstance(b, dict) and "schema" in b]
    assert posted and posted[-1]["schemaType"] == "PROTOBUF" and posted[-1]["schema"] == KEY
    stored = registry_server.state.subjects["orders-key"][0]
    assert stored["schemaType"] == "PROTOBUF"
    data = codec.encode({"id": 7, "region": "eu"})
    assert data[:5] == b"\x00" + stored["id"].to_bytes(4, "big") and data[5] == 0
    reader = create_codec("protobuf-registry", row, {"url": registry_server.url},
                          CodecContext(role="key", topic="orders", registry=registry))
    assert reader.decode(data) == {"id": 7, "region": "eu"}
