"""Bad schema references, one row each: the exit code, the error's kind, no traceback.

References given wrongly (`--reference`, a `<file>.refs.json` sidecar, a registry's
`v<N>.refs.json`, the avro-confluent `references` option) and references that do not resolve
(subject or version absent, a name the version does not define, another schema type, a cycle).
Every row runs against a file registry built here: `address-value` v1 defines
`com.acme.Address`, `doc-value` v1 is a JSON Schema.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from badinput import assert_rejected

ADDRESS = {"type": "record", "name": "Address", "namespace": "com.acme",
           "fields": [{"name": "street", "type": "string"}]}
ORDER = {"type": "record", "name": "Order", "namespace": "com.acme",
         "fields": [{"name": "id", "type": "long"}, {"name": "ship", "type": "Address"}]}
KEY = {"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}]}
GOOD = {"name": "com.acme.Address", "subject": "address-value", "version": 1}

USAGE = (2, "usage")
REGISTRY = (2, "registry")
SCHEMA = (2, "invalid-schema")
OPTION = (2, "invalid-option")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("refs")
    subjects = root / "schemas/subjects"
    (subjects / "address-value").mkdir(parents=True)
    (subjects / "address-value/v1.avsc").write_text(json.dumps(ADDRESS))
    (subjects / "doc-value").mkdir()
    (subjects / "doc-value/v1.json").write_text(json.dumps(
        {"type": "object", "properties": {"a": {"type": "string"}}}))
    for name, refs in {
        "badrefs-value": "{not json",
        "gone-value": json.dumps([{**GOOD, "subject": "gone-address"}]),
        "loop-a-value": json.dumps([{"name": "com.acme.B", "subject": "loop-b-value",
                                     "version": 1}]),
        "loop-b-value": json.dumps([{"name": "com.acme.A", "subject": "loop-a-value",
                                     "version": 1}]),
    }.items():
        (subjects / name).mkdir()
        letter = name.split("-")[1].upper() if name.startswith("loop") else "Order"
        other = "com.acme.B" if letter == "A" else "com.acme.A"
        schema = ORDER if letter == "Order" else {
            "type": "record", "name": letter, "namespace": "com.acme",
            "fields": [{"name": "x", "type": ["null", other]}]}
        (subjects / name / "v1.avsc").write_text(json.dumps(schema))
        (subjects / name / "v1.refs.json").write_text(refs)
    (root / "key.avsc").write_text(json.dumps(KEY))
    (root / "order.avsc").write_text(json.dumps(ORDER))
    (root / "doc.json").write_text(json.dumps(
        {"type": "object", "properties": {"d": {"$ref": "doc.json"}}}))
    return root


def _check(world: Path, value: str = "order.avsc", *extra: str) -> list[str]:
    return ["check", "--topic", "orders", "--registry", f"file://{world / 'schemas'}",
            "--key-schema", str(world / "key.avsc"), "--value-schema", str(world / value),
            *extra]


# (id, --reference values, expected (code, kind), text the error must contain)
OPTION_ROWS = [
    ("no-equals", ["com.acme.Address"], USAGE, "NAME=SUBJECT:VERSION"),
    ("no-version", ["com.acme.Address=address-value"], USAGE, "NAME=SUBJECT:VERSION"),
    ("version-zero", ["com.acme.Address=address-value:0"], USAGE, "NAME=SUBJECT:VERSION"),
    ("version-latest", ["com.acme.Address=address-value:latest"], USAGE, "VERSION is a number"),
    ("empty-name", ["=address-value:1"], USAGE, "NAME=SUBJECT:VERSION"),
    ("empty-subject", ["com.acme.Address=:1"], USAGE, "NAME=SUBJECT:VERSION"),
    ("subject-missing", ["com.acme.Address=nowhere-value:1"], REGISTRY, "nowhere-value"),
    ("version-missing", ["com.acme.Address=address-value:9"], REGISTRY, "version 9"),
    ("name-not-defined", ["com.acme.Street=address-value:1"], REGISTRY,
     "does not define a type named 'com.acme.Street'"),
    ("other-schema-type", ["com.acme.Address=doc-value:1"], REGISTRY, "is a JSON schema"),
    ("name-twice", ["com.acme.Address=address-value:1", "com.acme.Address=address-value:1"],
     SCHEMA, "given twice"),
    ("no-reference-at-all", [], SCHEMA, "Address"),
]


@pytest.mark.parametrize(("refs", "expected", "says"),
                         [r[1:] for r in OPTION_ROWS], ids=[r[0] for r in OPTION_ROWS])
def test_reference_option(world: Path, refs: list[str], expected: tuple[int, str],
                          says: str) -> None:
    args = [a for r in refs for a in ("--reference", r)]
    assert_rejected(_check(world, "order.avsc", *args), *expected, says=says)


# (id, sidecar text, expected, says)
SIDECAR_ROWS = [
    ("not-json", "[{", SCHEMA, "not valid JSON"),
    ("not-a-list", json.dumps(GOOD), SCHEMA, "must be a list"),
    ("entry-not-object", json.dumps(["com.acme.Address"]), SCHEMA, "not an object"),
    ("no-subject", json.dumps([{"name": "com.acme.Address", "version": 1}]), SCHEMA,
     "has no subject"),
    ("version-string", json.dumps([{**GOOD, "version": "1"}]), SCHEMA, "positive integer"),
    ("version-zero", json.dumps([{**GOOD, "version": 0}]), SCHEMA, "positive integer"),
    ("version-bool", json.dumps([{**GOOD, "version": True}]), SCHEMA, "positive integer"),
    ("empty-name", json.dumps([{**GOOD, "name": ""}]), SCHEMA, "non-empty string"),
    ("unknown-key", json.dumps([{**GOOD, "id": 3}]), SCHEMA, "unknown key"),
    ("duplicate-name", json.dumps([GOOD, GOOD]), SCHEMA, "given twice"),
    ("subject-missing", json.dumps([{**GOOD, "subject": "nowhere-value"}]), REGISTRY,
     "nowhere-value"),
    ("version-missing", json.dumps([{**GOOD, "version": 4}]), REGISTRY, "version 4"),
]


@pytest.mark.parametrize(("sidecar", "expected", "says"),
                         [r[1:] for r in SIDECAR_ROWS], ids=[r[0] for r in SIDECAR_ROWS])
def test_sidecar(world: Path, tmp_path: Path, sidecar: str, expected: tuple[int, str],
                 says: str) -> None:
    cand = tmp_path / "order.avsc"
    cand.write_text(json.dumps(ORDER))
    Path(f"{cand}.refs.json").write_text(sidecar)
    args = ["check", "--topic", "orders", "--registry", f"file://{world / 'schemas'}",
            "--key-schema", str(world / "key.avsc"), "--value-schema", str(cand)]
    assert_rejected(args, *expected, says=says)


# (id, args after the world's paths are filled in, expected, says)
def _registry_rows(world: Path) -> dict[str, tuple[list[str], tuple[int, str], str]]:
    reg = f"file://{world / 'schemas'}"
    enc = ["encode", "--value-format", "json",
           "--row", '{"id": 1, "ship": {"street": "a"}}', "--topic", "orders",
           "--key-schema", str(world / "key.avsc"), "--value-schema", str(world / "order.avsc"),
           "--key-format", "json"]
    return {
        "registered-refs-not-json": (
            ["check", "--topic", "x", "--registry", reg, "--key-schema",
             str(world / "key.avsc"), "--value-schema", "subject:badrefs-value",
             "--value-format", "avro-confluent"], REGISTRY, "v1.refs.json"),
        "registered-ref-subject-gone": (
            ["check", "--topic", "x", "--registry", reg, "--key-schema",
             str(world / "key.avsc"), "--value-schema", "subject:gone-value"], REGISTRY,
            "gone-address"),
        "reference-cycle": (
            ["check", "--topic", "x", "--registry", reg, "--key-schema",
             str(world / "key.avsc"), "--value-schema", "subject:loop-a-value"], REGISTRY,
            "refers back to itself"),
        "json-ref-subject-missing": (
            ["check", "--topic", "x", "--registry", reg, "--key-schema",
             str(world / "key.avsc"), "--value-schema", str(world / "doc.json"),
             "--value-format", "json", "--reference", "doc.json=nowhere-value:1"], REGISTRY,
            "nowhere-value"),
        "encode-references-without-registry": (
            [*enc, "--value-format", "json", "--reference", "com.acme.Address=address-value:1"],
            USAGE, "--registry"),
        "encode-reference-missing": (
            [*enc, "--value-format", "avro-confluent", "--registry", reg,
             "--reference", "com.acme.Address=address-value:2"], REGISTRY, "version 2"),
        "decode-reference-missing": (
            ["decode", "--key", b'{"id":1}'.hex(), "--value", "00", "--topic", "orders",
             "--registry", reg, "--key-schema", str(world / "key.avsc"),
             "--value-schema", str(world / "order.avsc"), "--key-format", "json",
             "--value-format", "avro-confluent",
             "--reference", "com.acme.Address=nowhere-value:1"], REGISTRY, "nowhere-value"),
        "references-option-not-json": (
            ["encode", "--row", '{"id": 1}', "--topic", "orders", "--columns", "id BIGINT",
             "--primary-key", "id", "--key-format", "json", "--value-format", "avro-confluent",
             "--registry", reg, "-o", "value.avro-confluent.schema=" + json.dumps(KEY),
             "-o", "value.avro-confluent.references=[{"], OPTION, "not JSON"),
        "references-option-without-schema": (
            ["encode", "--row", '{"id": 1}', "--topic", "orders", "--columns", "id BIGINT",
             "--primary-key", "id", "--key-format", "json", "--value-format", "avro-confluent",
             "--registry", reg, "-o", "value.avro-confluent.references=" + json.dumps([GOOD])],
            OPTION, "needs option 'schema'"),
        "references-option-bad-entry": (
            ["encode", "--row", '{"id": 1}', "--topic", "orders", "--columns", "id BIGINT",
             "--primary-key", "id", "--key-format", "json", "--value-format", "avro-confluent",
             "--registry", reg, "-o", "value.avro-confluent.schema=" + json.dumps(KEY),
             "-o", "value.avro-confluent.references=" + json.dumps([{"name": "x"}])],
            OPTION, "has no subject, version"),
    }


REGISTRY_ROW_IDS = [
    "registered-refs-not-json", "registered-ref-subject-gone", "reference-cycle",
    "json-ref-subject-missing", "encode-references-without-registry",
    "encode-reference-missing", "decode-reference-missing", "references-option-not-json",
    "references-option-without-schema", "references-option-bad-entry",
]


@pytest.mark.parametrize("case", REGISTRY_ROW_IDS)
def test_registry_side(world: Path, case: str) -> None:
    args, expected, says = _registry_rows(world)[case]
    assert_rejected(args, *expected, says=says)
