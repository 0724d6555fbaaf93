"""PROTOBUF value schemas against a registry over HTTP: sent as PROTOBUF, its answer weighed.

The fake registry of conftest.py answers "compatible" unless the schema text says INCOMPATIBLE,
so keyguard's own Protobuf verdict and the registry's can be made to agree or to differ.
"""

from __future__ import annotations

from typing import Any

from keyguard.formats.registry.connect import open_registry
from keyguard.formats.registry.http import HttpRegistry
from keyguard.formats.schemafile import SchemaText
from keyguard.guard.rules import REGISTRY_DISAGREES, VALUE_INCOMPATIBLE
from keyguard.guard.values import check_value

SUBJECT = "orders-value"
V1 = 'syntax = "proto3";\npackage shop;\nmessage Order {\n  int64 id = 1;\n  string note = 2;\n}\n'
#: A field added: compatible for Confluent and keyguard alike.
ADDED = V1.replace("string note = 2;", "string note = 2;\n  bool paid = 3;")
#: Field 2 from string to int32: FIELD_SCALAR_KIND_CHANGED, which the fake registry misses.
RETYPED = V1.replace("string note = 2;", "int32 note = 2;")
#: A message added (compatible), which the fake registry rejects by its name.
FLAGGED = V1 + "message INCOMPATIBLE_MARKER {\n  int32 x = 1;\n}\n"


def _registry(fake: Any) -> HttpRegistry:
    reg = open_registry(fake.url, {"retries": "0", "timeout": "2s"}, environ={})
    assert isinstance(reg, HttpRegistry)
    return reg


def _check(reg: HttpRegistry, text: str) -> list[Any]:
    history = reg.all_versions(SUBJECT)
    return check_value(SUBJECT, SchemaText("PROTOBUF", text, "order.proto"), history,
                       reg.compatibility(SUBJECT), registry=reg)


def test_protobuf_versions_keep_their_type(registry_server):
    reg = _registry(registry_server)
    schema_id = reg.register(SUBJECT, V1, "PROTOBUF")
    assert registry_server.state.bodies[-1]["schemaType"] == "PROTOBUF"
    (version,) = reg.all_versions(SUBJECT)
    assert (version.schema_type, version.schema, version.schema_id) == ("PROTOBUF", V1, schema_id)
    assert reg.get_by_id(schema_id) == ("PROTOBUF", V1)


def test_the_registry_is_asked_with_schema_type_protobuf_and_agrees(registry_server):
    reg = _registry(registry_server)
    reg.register(SUBJECT, V1, "PROTOBUF")
    registry_server.state.bodies.clear()
    assert _check(reg, ADDED) == []
    (body,) = registry_server.state.bodies
    assert body["schemaType"] == "PROTOBUF" and body["schema"] == ADDED
    posts = [p for m, p, _, _ in registry_server.state.requests if m == "POST"]
    assert posts[-1].endswith(f"/compatibility/subjects/{SUBJECT}/versions/latest")


def test_keyguard_finds_what_the_registry_missed(registry_server):
    reg = _registry(registry_server)
    reg.register(SUBJECT, V1, "PROTOBUF")
    findings = _check(reg, RETYPED)
    incompatible = [f for f in findings if f.rule.id == VALUE_INCOMPATIBLE.id]
    (disagrees,) = [f for f in findings if f.rule.id == REGISTRY_DISAGREES.id]
    assert [f.path for f in incompatible] == ["/Order/2"]
    assert "FIELD_SCALAR_KIND_CHANGED" in incompatible[0].message
    assert "field note = 2" in incompatible[0].message
    assert "says compatible, keyguard says incompatible at BACKWARD" in disagrees.message


def test_the_registrys_refusal_is_reported_with_its_messages(registry_server):
    reg = _registry(registry_server)
    reg.register(SUBJECT, V1, "PROTOBUF")
    (finding,) = _check(reg, FLAGGED)
    assert finding.rule.id == REGISTRY_DISAGREES.id
    assert "says incompatible, keyguard says compatible" in finding.message
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in finding.message  # the fake's own words


def test_transitive_levels_ask_every_protobuf_version(registry_server):
    reg = _registry(registry_server)
    reg.register(SUBJECT, V1, "PROTOBUF")
    reg.register(SUBJECT, V1.replace("  string note = 2;\n", ""), "PROTOBUF")  # 2 removed
    registry_server.state.subject_levels[SUBJECT] = "BACKWARD_TRANSITIVE"
    registry_server.state.bodies.clear()
    findings = _check(reg, RETYPED)
    assert all(b["schemaType"] == "PROTOBUF" for b in registry_server.state.bodies)
    assert len(registry_server.state.bodies) == 2  # one question per registered version
    incompatible = [f for f in findings if f.rule.id == VALUE_INCOMPATIBLE.id]
    assert len(incompatible) == 1 and "against version 1" in incompatible[0].message


def test_the_registrys_answer_is_weighed_against_the_chosen_rules(registry_server):
    """A package change: Karapace (like the fake here) passes it, Confluent rejects it. Under
    Karapace's rules keyguard agrees with the registry; under Confluent's it says why not."""
    reg = _registry(registry_server)
    reg.register(SUBJECT, V1, "PROTOBUF")
    moved = V1.replace("package shop;", "package store;")
    history = reg.all_versions(SUBJECT)
    candidate = SchemaText("PROTOBUF", moved, "order.proto")
    level = reg.compatibility(SUBJECT)
    assert check_value(SUBJECT, candidate, history, level, registry=reg, rules="karapace") == []
    findings = check_value(SUBJECT, candidate, history, level, registry=reg)
    assert [f.rule.id for f in findings] == [VALUE_INCOMPATIBLE.id, REGISTRY_DISAGREES.id]
    assert "PACKAGE_CHANGED" in findings[0].message
    assert "keyguard says incompatible at BACKWARD by Confluent's rules" in findings[1].message
