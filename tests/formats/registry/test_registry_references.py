"""Schema references (Confluent `references`) through the file, HTTP and mock registries.

An Avro value schema `com.acme.Order` uses the record `com.acme.Address` registered under
subject `address-value`; the guard, the value check and the avro-confluent codec resolve it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from keyguard.formats.codec import CodecContext, create_codec
from keyguard.formats.errors import RegistryError
from keyguard.formats.registry import Registry
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.registry.http import HttpRegistry
from keyguard.formats.registry.mock import MockRegistry
from keyguard.formats.registry.references import Reference, resolve
from keyguard.formats.registry.registration import bind_schema_id
from keyguard.formats.schemafile import SchemaText, read_schema_source
from keyguard.formats.types import RowType
from keyguard.guard.values import check_value

ADDRESS = {"type": "record", "name": "Address", "namespace": "com.acme",
           "fields": [{"name": "street", "type": "string"}]}
ADDRESS_COMPATIBLE = {**ADDRESS, "fields": [
    *ADDRESS["fields"], {"name": "city", "type": "string", "default": ""}]}
ADDRESS_BREAKING = {**ADDRESS, "fields": [
    *ADDRESS["fields"], {"name": "zip", "type": "string"}]}
ORDER = {"type": "record", "name": "Order", "namespace": "com.acme",
         "fields": [{"name": "id", "type": "long"},
                    {"name": "ship", "type": "Address"},
                    {"name": "bill", "type": ["null", "com.acme.Address"], "default": None}]}
REF_V1 = {"name": "com.acme.Address", "subject": "address-value", "version": 1}


class _Run:
    def __init__(self, args: list[str]) -> None:
        from keyguard.guard.cli import app

        result = CliRunner().invoke(app, args, env={})
        self.code, self.stdout = result.exit_code, result.stdout
        self.output = result.stdout + result.stderr


def run_cli(args: list[str]) -> _Run:
    return _Run(args)


def _text(schema: Any) -> str:
    return json.dumps(schema)


@pytest.fixture(params=["file", "http", "mock"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Registry]:
    if request.param == "file":
        yield FileRegistry(tmp_path / "schemas")
    elif request.param == "http":
        fake = request.getfixturevalue("registry_server")
        with HttpRegistry({"url": fake.url}) as reg:
            yield reg
    else:
        scope = "refs-" + "".join(c for c in request.node.name if c.isalnum())
        MockRegistry.drop_scope(scope)
        yield MockRegistry(scope)
        MockRegistry.drop_scope(scope)


def _register_order(reg: Registry) -> int:
    reg.register("address-value", _text(ADDRESS))
    return reg.register("orders-value", _text(ORDER), "AVRO", [REF_V1])


def test_references_are_stored_and_returned(registry: Registry) -> None:
    schema_id = _register_order(registry)
    sv = registry.get_version("orders-value")
    assert sv.schema_id == schema_id
    assert [dict(r) for r in sv.references] == [REF_V1]
    assert registry.lookup("orders-value", _text(ORDER), "AVRO", [REF_V1]) is not None
    # registering again with the same references is idempotent
    assert registry.register("orders-value", _text(ORDER), "AVRO", [REF_V1]) == schema_id


def test_file_layout_keeps_references_beside_the_version(tmp_path: Path) -> None:
    reg = FileRegistry(tmp_path)
    _register_order(reg)
    refs = json.loads((tmp_path / "subjects/orders-value/v1.refs.json").read_text())
    assert refs == [REF_V1]
    assert not (tmp_path / "subjects/address-value/v1.refs.json").exists()


@pytest.mark.parametrize("backend", ["file", "http"])
def test_same_text_other_references_is_another_schema(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if backend == "file":
        reg: Registry = FileRegistry(tmp_path)
    else:
        reg = HttpRegistry({"url": request.getfixturevalue("registry_server").url})
    first = _register_order(reg)
    reg.register("address-value", _text(ADDRESS_COMPATIBLE))
    ref_v2 = {**REF_V1, "version": 2}
    assert reg.lookup("orders-value", _text(ORDER), "AVRO", [ref_v2]) is None
    second = reg.register("orders-value", _text(ORDER), "AVRO", [ref_v2])
    assert second != first
    assert reg.versions("orders-value") == [1, 2]


def test_registered_version_reads_with_its_references(registry: Registry) -> None:
    _register_order(registry)
    text = read_schema_source("subject:orders-value", registry=registry)
    assert [r.reference for r in text.references] == [Reference(**REF_V1)]  # type: ignore[arg-type]
    row = text.row_type()
    assert [f.name for f in row.fields] == ["id", "ship", "bill"]
    assert isinstance(row.fields[1].type, RowType)
    assert "street" in text.standalone  # the referenced record brought in
    assert json.loads(text.text) == ORDER  # the registered text kept verbatim


def test_avro_confluent_round_trip_matches_confluent_serializer(registry: Registry) -> None:
    _register_order(registry)
    row_type = read_schema_source("subject:orders-value", registry=registry).row_type()
    codec = create_codec("avro-confluent", row_type,
                        {"schema": _text(ORDER), "references": json.dumps([REF_V1]),
                         "subject": "orders-value", "auto.register.schemas": "false"},
                        CodecContext(role="value", topic="orders", registry=registry))
    row = {"id": 7, "ship": {"street": "Main"}, "bill": None}
    data = bind_schema_id(codec).encode(row)
    sv = registry.get_version("orders-value")
    assert data[:5] == b"\0" + sv.schema_id.to_bytes(4, "big")
    assert codec.decode(data) == row
    if isinstance(registry, MockRegistry):
        from confluent_kafka.schema_registry import Schema, SchemaReference
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        serializer = AvroSerializer(
            registry.client,
            Schema(_text(ORDER), "AVRO", [SchemaReference(**REF_V1)]),  # type: ignore[arg-type]
            conf={"auto.register.schemas": False, "use.latest.version": True})
        theirs = serializer(row, SerializationContext("orders", MessageField.VALUE))
        assert theirs == data


@pytest.mark.parametrize(("address", "compatible"),
                         [(ADDRESS_COMPATIBLE, True), (ADDRESS_BREAKING, False)])
def test_value_check_follows_the_referenced_type(
        registry: Registry, address: dict[str, Any], compatible: bool) -> None:
    _register_order(registry)
    registry.register("address-value", _text(address))
    candidate = SchemaText("AVRO", _text(ORDER), "candidate.avsc", resolve(
        registry, [Reference("com.acme.Address", "address-value", 2)],
        origin="candidate.avsc", schema_type="AVRO"))
    from keyguard.formats.schemafile import standalone_versions

    history = standalone_versions(registry, registry.all_versions("orders-value"))
    findings = check_value("orders-value", candidate, history, "BACKWARD")
    assert (findings == []) is compatible, findings
    if not compatible:
        assert any("zip" in f.message or "zip" in f.path for f in findings), findings


def test_nested_references_resolve(registry: Registry) -> None:
    registry.register("address-value", _text(ADDRESS))
    customer = {"type": "record", "name": "Customer", "namespace": "com.acme",
                "fields": [{"name": "home", "type": "com.acme.Address"}]}
    registry.register("customer-value", _text(customer), "AVRO", [REF_V1])
    invoice = {"type": "record", "name": "Invoice", "namespace": "com.acme",
               "fields": [{"name": "to", "type": "com.acme.Customer"},
                          {"name": "from", "type": "com.acme.Address"}]}
    refs = [{"name": "com.acme.Customer", "subject": "customer-value", "version": 1}, REF_V1]
    registry.register("invoice-value", _text(invoice), "AVRO", refs)
    text = read_schema_source("subject:invoice-value", registry=registry)
    row = text.row_type()
    assert [f.name for f in row.fields] == ["to", "from"]
    # Address is defined once (inside Customer), then used by name
    assert text.standalone.count('"street"') == 1


def test_json_schema_ref_to_another_subject(registry: Registry) -> None:
    reg = registry
    address = {"$schema": "http://json-schema.org/draft-07/schema#",
               "$id": "https://acme.example/address.json", "type": "object",
               "properties": {"street": {"$ref": "#/definitions/street"}},
               "definitions": {"street": {"type": "string", "maxLength": 40}}}
    reg.register("address-value", json.dumps(address), "JSON")
    order = {"$schema": "http://json-schema.org/draft-07/schema#",
             "$id": "https://acme.example/order.json", "type": "object",
             "properties": {"id": {"type": "integer"}, "ship": {"$ref": "address.json"}}}
    refs = [{"name": "address.json", "subject": "address-value", "version": 1}]
    reg.register("orders-value", json.dumps(order), "JSON", refs)
    text = read_schema_source("subject:orders-value", registry=reg)
    row = text.row_type()
    assert [f.name for f in row.fields] == ["id", "ship"]
    # a narrower referenced document is a breaking change for the value check
    narrower = {**address, "definitions": {"street": {"type": "string", "maxLength": 10}}}
    reg.register("address-value", json.dumps(narrower), "JSON")
    from keyguard.formats.schemafile import standalone_versions

    history = standalone_versions(reg, reg.all_versions("orders-value"))
    same = SchemaText("JSON", json.dumps(order), "cand.json", resolve(
        reg, [Reference("address.json", "address-value", 1)], origin="cand.json",
        schema_type="JSON"))
    assert check_value("orders-value", same, history, "BACKWARD") == []
    narrowed = SchemaText("JSON", json.dumps(order), "cand.json", resolve(
        reg, [Reference("address.json", "address-value", 2)], origin="cand.json",
        schema_type="JSON"))
    assert check_value("orders-value", narrowed, history, "BACKWARD") != []


@pytest.mark.parametrize(("ref", "says"), [
    (Reference("com.acme.Address", "nowhere-value", 1), "nowhere-value"),
    (Reference("com.acme.Address", "address-value", 9), "version 9"),
    (Reference("com.acme.Street", "address-value", 1), "does not define a type named"),
])
def test_missing_reference_names_everything(registry: Registry, ref: Reference,
                                            says: str) -> None:
    registry.register("address-value", _text(ADDRESS))
    with pytest.raises(RegistryError) as err:
        resolve(registry, [ref], origin="orders-value v1", schema_type="AVRO")
    assert err.value.exit_code == 2
    for part in ("orders-value v1", ref.name, ref.subject, str(ref.version), says):
        assert part in err.value.message, err.value.message


def test_cli_check_and_encode_with_references(tmp_path: Path) -> None:
    reg = FileRegistry(tmp_path / "schemas")
    _register_order(reg)
    reg.register("address-value", _text(ADDRESS_BREAKING))
    key = tmp_path / "key.avsc"
    key.write_text(json.dumps({"type": "record", "name": "K",
                               "fields": [{"name": "id", "type": "long"}]}))
    cand = tmp_path / "order.avsc"
    cand.write_text(_text(ORDER))
    base = ["check", "--topic", "orders", "--registry", f"file://{tmp_path / 'schemas'}",
            "--key-schema", str(key), "--value-schema", str(cand)]
    ok = run_cli([*base, "--reference", "com.acme.Address=address-value:1"])
    assert ok.code == 0, ok.output
    # the sidecar names the breaking Address version 2
    Path(f"{cand}.refs.json").write_text(json.dumps([{**REF_V1, "version": 2}]))
    broken = run_cli(base)
    assert broken.code == 1, broken.output
    assert "zip" in broken.output
    enc = run_cli(["encode", "--row", '{"id": 1, "ship": {"street": "Main"}, "bill": null}',
                   "--topic", "orders", "--registry", f"file://{tmp_path / 'schemas'}",
                   "--key-schema", str(key), "--value-schema", str(cand),
                   "--key-format", "json", "--value-format", "avro-confluent",
                   "--reference", "com.acme.Address=address-value:1",
                   "-o", "value.avro-confluent.auto.register.schemas=false",
                   "-o", "value.avro-confluent.subject=orders-value", "--json"])
    assert enc.code == 0, enc.output
    value_hex = json.loads(enc.stdout)["value"]["hex"]
    sid = reg.get_version("orders-value", 1).schema_id
    assert value_hex.startswith("00" + sid.to_bytes(4, "big").hex())
    dec = run_cli(["decode", "--key", b'{"id":1}'.hex(),
                   "--value", value_hex, "--topic", "orders",
                   "--registry", f"file://{tmp_path / 'schemas'}",
                   "--key-schema", str(key), "--value-schema", str(cand),
                   "--key-format", "json", "--value-format", "avro-confluent",
                   "--reference", "com.acme.Address=address-value:1"])
    assert dec.code == 0, dec.output
    assert json.loads(dec.stdout)["row"]["ship"] == {"street": "Main"}


def test_http_registry_own_check_gets_the_references(registry_server: Any) -> None:
    with HttpRegistry({"url": registry_server.url}) as reg:
        _register_order(reg)
        reg.register("address-value", _text(ADDRESS_COMPATIBLE))
        ref_v2 = Reference("com.acme.Address", "address-value", 2)
        candidate = SchemaText("AVRO", _text(ORDER), "candidate.avsc", resolve(
            reg, [ref_v2], origin="candidate.avsc", schema_type="AVRO"))
        from keyguard.formats.schemafile import standalone_versions

        history = standalone_versions(reg, reg.all_versions("orders-value"))
        assert check_value("orders-value", candidate, history, "BACKWARD", registry=reg) == []
    asked = [b for b in registry_server.state.bodies if b.get("schema") == _text(ORDER)]
    assert asked[-1]["references"] == [ref_v2.as_dict()]


def test_nested_json_references(registry: Registry) -> None:
    street = {"$id": "https://acme.example/street.json", "type": "string", "maxLength": 40}
    registry.register("street-value", json.dumps(street), "JSON")
    address = {"$id": "https://acme.example/address.json", "type": "object",
               "properties": {"street": {"$ref": "street.json"}}, "required": ["street"]}
    registry.register("address-value", json.dumps(address), "JSON",
                      [{"name": "street.json", "subject": "street-value", "version": 1}])
    order = {"$id": "https://acme.example/order.json", "type": "object",
             "properties": {"ship": {"$ref": "https://acme.example/address.json"}}}
    registry.register("orders-value", json.dumps(order), "JSON",
                      [{"name": "https://acme.example/address.json",
                        "subject": "address-value", "version": 1}])
    text = read_schema_source("subject:orders-value", registry=registry)
    ship = text.row_type().fields[0].type
    assert isinstance(ship, RowType)
    assert [f.name for f in ship.fields] == ["street"]
    from keyguard.guard.compat.jsonschema.resolve import parse

    root = parse(text.standalone).root
    assert root["properties"]["ship"]["properties"]["street"]["maxLength"] == 40


def test_key_guard_follows_the_referenced_type(tmp_path: Path) -> None:
    reg = FileRegistry(tmp_path / "schemas")
    reg.register("address-value", _text(ADDRESS))
    key = {"type": "record", "name": "OrderKey", "namespace": "com.acme",
           "fields": [{"name": "id", "type": "long"}, {"name": "at", "type": "Address"}]}
    reg.register("orders-key", _text(key), "AVRO", [REF_V1])
    reg.register("address-value", _text(ADDRESS_COMPATIBLE))  # a new key field: other bytes
    cand = tmp_path / "key.avsc"
    cand.write_text(_text(key))
    base = ["check", "--topic", "orders", "--registry", f"file://{tmp_path / 'schemas'}",
            "--key-schema", str(cand), "--value-format", "", "--key-format", "avro"]
    same = run_cli([*base, "--reference", "com.acme.Address=address-value:1"])
    assert same.code == 0, same.output
    changed = run_cli([*base, "--reference", "com.acme.Address=address-value:2"])
    assert changed.code == 1, changed.output
    assert "city" in changed.output


def test_spark_writer_candidate_keeps_the_codec_references(tmp_path: Path) -> None:
    from keyguard.sparkio.guarding import candidate

    reg = FileRegistry(tmp_path)
    _register_order(reg)
    row_type = read_schema_source("subject:orders-value", registry=reg).row_type()
    codec = create_codec("avro-confluent", row_type,
                         {"schema": _text(ORDER), "references": json.dumps([REF_V1])},
                         CodecContext(role="value", topic="orders", registry=reg))
    text = candidate("avro-confluent", codec, row_type, "value")
    assert text.reference_list == (REF_V1,)
    assert [f.name for f in text.row_type().fields] == ["id", "ship", "bill"]


# --- Protobuf: references are imported files -------------------------------------------------

MONEY = 'syntax = "proto3";\npackage common;\nmessage Money { int64 units = 1; }\n'
MONEY_CHANGED = 'syntax = "proto3";\npackage common;\nmessage Money { string units = 1; }\n'
ORDER_PROTO = ('syntax = "proto3";\npackage shop;\nimport "common/money.proto";\n'
               'message Order { int64 id = 1; common.Money total = 2; }\n')
MONEY_REF = {"name": "common/money.proto", "subject": "money-value", "version": 1}


@pytest.mark.parametrize("money, compatible", [(MONEY, True), (MONEY_CHANGED, False)])
def test_protobuf_value_check_reads_the_imported_files(
        registry: Registry, money: str, compatible: bool) -> None:
    """A registered Protobuf schema that imports another subject's file (as Confluent's
    serializers register imports) is judged with that file, not rejected as unreadable."""
    registry.register("money-value", MONEY, "PROTOBUF")
    registry.register("orders-value", ORDER_PROTO, "PROTOBUF", [MONEY_REF])
    registry.register("money-value", money, "PROTOBUF")
    latest = registry.get_version("money-value", "latest").version
    from keyguard.formats.schemafile import standalone_versions

    history = standalone_versions(registry, registry.all_versions("orders-value"))
    candidate = SchemaText("PROTOBUF", ORDER_PROTO, "order.proto", resolve(
        registry, [Reference("common/money.proto", "money-value", latest)],
        origin="order.proto", schema_type="PROTOBUF"))
    assert [f.name for f in candidate.row_type().fields] == ["id", "total"]
    findings = check_value("orders-value", candidate, history, "BACKWARD")
    assert (findings == []) is compatible, findings
    if not compatible:
        assert any("units" in f.message or "units" in f.path for f in findings), findings


def test_protobuf_subject_with_references_reads_back(registry: Registry) -> None:
    registry.register("money-value", MONEY, "PROTOBUF")
    registry.register("orders-value", ORDER_PROTO, "PROTOBUF", [MONEY_REF])
    text = read_schema_source("subject:orders-value", registry=registry)
    assert text.schema_type == "PROTOBUF"
    assert text.text.strip() == ORDER_PROTO.strip()
    assert [f.name for f in text.row_type().fields] == ["id", "total"]
