"""The Avro vocabulary is declared once, and the Avro writers import no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import fastavro
import pytest

import keyguard.formats.avro_vocab as vocab
import keyguard.guard.compat.avro as compat_avro
import keyguard.guard.keys.avro as keys_avro

ROOT = Path(__file__).parents[2]


def test_the_guard_walkers_use_the_one_declaration() -> None:
    assert compat_avro.PRIMITIVES is vocab.PRIMITIVES and compat_avro.NAMED is vocab.NAMED
    assert compat_avro.PROMOTIONS is vocab.PROMOTIONS
    assert keys_avro.PRIMITIVES is vocab.PRIMITIVES and keys_avro.NAMED is vocab.NAMED


@pytest.mark.parametrize("module", [
    "formats/avro_schema.py", "formats/avro_spec.py", "formats/registry/file.py",
    "formats/registry/references.py", "formats/schema_identity.py", "guard/compat/avro.py",
    "guard/keys/avro.py",
])
def test_no_module_declares_the_primitive_names_again(module: str) -> None:
    text = (ROOT / module).read_text()
    assert '"null", "boolean", "int", "long", "float", "double", "bytes", "string"' not in text
    assert '"record", "error", "enum", "fixed"' not in text


@pytest.mark.parametrize("logical, schema", [
    ("decimal", {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}),
    ("date", {"type": "int", "logicalType": "date"}),
    ("time-micros", {"type": "long", "logicalType": "time-micros"}),
    ("timestamp-nanos", {"type": "long", "logicalType": "timestamp-nanos"}),
    ("local-timestamp-millis", {"type": "long", "logicalType": "local-timestamp-millis"}),
    ("uuid", {"type": "string", "logicalType": "uuid"}),
])
def test_logical_types_and_their_base_types(logical: str, schema: dict[str, object]) -> None:
    assert schema["type"] in vocab.LOGICAL_TYPES[logical]
    fastavro.parse_schema(schema)  # a real Avro schema, as the table says


def test_vocabulary_shapes() -> None:
    assert len(vocab.PRIMITIVES) == 8 and vocab.KNOWN_TYPES >= vocab.PRIMITIVES | vocab.NAMED
    assert vocab.TIME_LOGICAL_TYPES == set(vocab.TIMESTAMPS + vocab.LOCAL_TIMESTAMPS
                                           + vocab.TIMES)
    assert "decimal" not in vocab.TIME_LOGICAL_TYPES
    assert vocab.full_name("A", "n.s") == "n.s.A" and vocab.full_name("x.A", "n") == "x.A"
    assert vocab.full_name("A", None) == vocab.full_name("A", "") == "A"


def _project_imports(module: str) -> set[str]:
    tree = ast.parse((ROOT / module).read_text())
    return {str(node.module) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and str(node.module).startswith("keyguard.formats")}


def test_avro_writers_share_a_module_instead_of_a_cycle() -> None:
    assert "keyguard.formats.avro_format" not in _project_imports("formats/avro_vector.py")
    assert "keyguard.formats.avro_binary" in _project_imports("formats/avro_vector.py")
    assert "keyguard.formats.avro_binary" in _project_imports("formats/avro_format.py")
    assert {m for m in _project_imports("formats/avro_binary.py")
            if m not in ("keyguard.formats.avro_schema", "keyguard.formats.types")} == {
                "keyguard.formats.errors"}
