"""The table-driven corpus of key evolutions (tests/guard/key_evolutions.json).

Each case names a format, the old and the new key (a Flink column list, or an Avro schema), the
options on both sides, the expected verdict and the exact set of rule IDs the guard reports.
Every BREAKING finding must carry a witness whose bytes (or partition) really differ.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from keyguard.formats.sqltypes import parse_columns
from keyguard.guard.keys import KeySide, analyze_key_change
from keyguard.guard.report import Report, Severity
from keyguard.guard.rules import RULES

CORPUS = json.loads((Path(__file__).parent / "key_evolutions.json").read_text())
MODULES = {"json": "keyguard.formats.json_format", "csv": "keyguard.formats.csv_format",
           "raw": "keyguard.formats.raw_format", "avro": "keyguard.formats.avro_format",
           "avro-confluent": "keyguard.formats.avro_confluent_format",
           "protobuf": "keyguard.formats.protobuf_format",
           "protobuf-registry": "keyguard.formats.protobuf_format"}


def _available(fmt: str) -> bool:
    try:
        importlib.import_module(MODULES[fmt])
    except ImportError:
        return False
    return True


def side(fmt: str, schema: Any, options: dict[str, Any], extra: dict[str, Any]) -> KeySide:
    kw = dict(extra)
    if "key_schema_ids" in kw:
        kw["key_schema_ids"] = tuple(kw["key_schema_ids"])
    if isinstance(schema, str) and not schema.lstrip().startswith(("{", "[")):
        return KeySide(fmt, parse_columns(schema), options, **kw)
    return KeySide.from_avro(fmt, schema, options=options, **kw)


def test_corpus_is_large_and_well_formed() -> None:
    assert len(CORPUS) >= 60
    names = [c["name"] for c in CORPUS]
    assert len(names) == len(set(names))
    for c in CORPUS:
        assert c["expected"] in ("safe", "warn", "breaking"), c["name"]
        assert set(c["rules"]) <= set(RULES), c["name"]


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_key_evolution(case: dict[str, Any]) -> None:
    fmt_old, fmt_new = case["format"], case.get("format_new", case["format"])
    for fmt in {fmt_old, fmt_new}:
        if not _available(fmt):
            pytest.skip(f"format {fmt} not available yet")
    old = side(fmt_old, case["old"], case["options_old"], case.get("old_side", {}))
    new = side(fmt_new, case["new"], case["options_new"], case.get("new_side", {}))
    findings = analyze_key_change(old, new, topic="orders")
    got = sorted({f.rule.id for f in findings})
    detail = "\n".join(f"{f.rule.id} {f.path}: {f.message} {f.witness}" for f in findings)
    assert got == case["rules"], detail
    assert Report.of(findings).verdict.value == case["expected"], detail
    for f in findings:
        if f.effective_severity is Severity.BREAKING:
            assert f.witness is not None and f.witness.differs, detail
        assert f.topic == "orders"
