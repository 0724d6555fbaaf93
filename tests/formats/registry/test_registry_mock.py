"""MockRegistry: confluent-kafka's mock behind the protocol, shared per mock:// name."""

from __future__ import annotations

import json

import pytest

from keyguard.formats.errors import RegistryError
from keyguard.formats.registry import Registry
from keyguard.formats.registry.connect import open_registry
from keyguard.formats.registry.mock import MockRegistry

V1 = ('{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated",'
      '"fields":[{"name":"user_region","type":"string"}]}')
V2 = V1.replace("}]}", '},{"name":"n","type":["null","long"],"default":null}]}')
S = "pageviews_per_region-key"


@pytest.fixture
def reg():
    yield MockRegistry("unit")
    MockRegistry.drop_scope("unit")


def test_protocol_round_trip(reg):
    assert isinstance(reg, Registry)
    assert type(reg.client).__name__ == "MockSchemaRegistryClient"
    assert reg.subjects() == [] and reg.versions(S) == [] and reg.lookup(S, V1) is None
    id1 = reg.register(S, V1)
    id2 = reg.register(S, V2)
    assert reg.register(S, json.dumps(json.loads(V1), indent=2)) == id1  # canonical, idempotent
    assert reg.versions(S) == [1, 2] and reg.subjects() == [S]
    assert (reg.get_version(S).version, reg.get_version(S).schema_id) == (2, id2)
    assert [v.schema for v in reg.all_versions(S)] == [V1, V2]
    assert reg.get_by_id(id1) == ("AVRO", V1)
    found = reg.lookup(S, json.dumps(json.loads(V2)))
    assert found is not None and found.version == 2
    with pytest.raises(RegistryError):
        reg.get_version(S, 5)
    with pytest.raises(RegistryError):
        reg.get_by_id(999)
    assert reg.check_compatibility(S, V1) is None


def test_scope_is_shared_by_name(reg):
    reg.register(S, V1)
    same = open_registry("mock://unit")
    assert isinstance(same, MockRegistry) and same.client is reg.client
    assert same.versions(S) == [1]
    assert open_registry("mock://elsewhere").versions(S) == []
    MockRegistry.drop_scope("elsewhere")


def test_compatibility_levels(reg):
    assert reg.compatibility(S) == "BACKWARD"
    reg.set_compatibility("FULL")
    reg.set_compatibility("none", S)
    assert (reg.compatibility(S), reg.compatibility("x")) == ("NONE", "FULL")
    with pytest.raises(RegistryError):
        reg.set_compatibility("SOMETIMES")
