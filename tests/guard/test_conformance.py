"""Every third-party conformance vector agrees with the checker, or is a known difference.

The shared vectors live beside the repository (../shared/conformance, or
KEYGUARD_CONFORMANCE_DIR); Confluent's own JSON Schema expectations (its SchemaDiffTest
resources, with provenance per case) and the Protobuf vectors of Confluent, Karapace and
Apicurio live in tests/guard/data. A known difference must still differ, so a stale entry fails
as loudly as a regression; one that names a `rules_of` choice must agree under that registry's
rules, and every other case of that registry must agree under them too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from keyguard.formats.errors import SchemaError
from keyguard.guard.compat import check_compatibility
from keyguard.guard.compat.registry_rules import RULES_OF

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE_DIR = Path(
    os.environ.get("KEYGUARD_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance")
)
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = json.loads(
    (REPO / "guard" / "compat" / "known_differences.json").read_text()
)
FILES = ("karapace.jsonl", "apache_avro.jsonl")
#: Vectors kept in this repository: always run.
OWN_FILES = {
    "confluent_jsonschema.jsonl": Path(__file__).parent / "data",
    "apicurio_jsonschema.jsonl": Path(__file__).parent / "data",
    "redpanda_jsonschema.jsonl": Path(__file__).parent / "data",
    "protobuf_conformance.json": Path(__file__).parent / "data",
}


def _read(directory: Path, name: str) -> list[Any]:
    """A `.jsonl` file (one case a line) or a `.json` document (its "cases" list)."""
    text = (directory / name).read_text()
    records = json.loads(text)["cases"] if name.endswith(".json") else \
        [json.loads(line) for line in text.splitlines() if line.strip()]
    cases = []
    for case in records:
        case["file"] = name
        cases.append(pytest.param(case, id=case["id"]))
    return cases


def _load_cases() -> list[Any]:
    cases = [c for name, directory in OWN_FILES.items() for c in _read(directory, name)]
    if not all((CONFORMANCE_DIR / name).is_file() for name in FILES):
        reason = (
            f"conformance vectors not found in {CONFORMANCE_DIR} "
            "(set KEYGUARD_CONFORMANCE_DIR to the directory holding karapace.jsonl and "
            "apache_avro.jsonl)"
        )
        skip = pytest.mark.skip(reason=reason)
        return [*cases, pytest.param(None, id="conformance-missing", marks=skip)]
    return cases + [c for name in FILES for c in _read(CONFORMANCE_DIR, name)]


CASES = _load_cases()


def _verdict(case: dict[str, Any], rules: str = "confluent") -> bool | str:
    """True/False as the checker answers by `rules`, or "invalid" when it rejects a schema."""
    old = case["writer_or_old"]
    history = old if case.get("old_is_history") else [old]
    try:
        result = check_compatibility(
            case["schema_type"], history, case["reader_or_new"], case["level"], rules=rules
        )
    except SchemaError:
        return "invalid"
    return result.compatible


@pytest.mark.parametrize("case", CASES)
def test_conformance_case(case: dict[str, Any]) -> None:
    verdict = _verdict(case)
    known = KNOWN_DIFFERENCES.get(case["id"])
    if known is None:
        assert verdict == case["expected_compatible"], case.get("note")
    else:
        assert known.get("reason", "").strip(), f"known difference {case['id']} needs a reason"
        assert known.get("file") == case["file"]
        assert verdict != case["expected_compatible"], (
            f"{case['id']} now agrees with the vectors: remove it from known_differences.json"
        )


@pytest.mark.parametrize("case", [c for c in CASES if c.values[0] is not None
                                  and c.values[0]["source"] in set(RULES_OF) - {"confluent"}])
def test_conformance_case_under_its_own_registrys_rules(case: dict[str, Any]) -> None:
    """A registry's vector agrees under that registry's rules, unless its known difference
    names no `rules_of` choice (a rule keyguard leaves to Confluent; the entry says why)."""
    known = KNOWN_DIFFERENCES.get(case["id"], {})
    choice = known.get("rules_of")
    verdict = _verdict(case, case["source"])
    if known and choice is None:
        assert verdict != case["expected_compatible"], (
            f"{case['id']} agrees under {case['source']}'s rules: record "
            f'"rules_of": "{case["source"]}" in known_differences.json')
    else:
        assert choice in (None, case["source"]), case["id"]
        assert verdict == case["expected_compatible"], case.get("note")


def test_every_rules_of_choice_in_known_differences_is_a_registry() -> None:
    choices = {v["rules_of"] for v in KNOWN_DIFFERENCES.values() if "rules_of" in v}
    assert choices == {"karapace", "apicurio", "redpanda"}


def test_every_known_difference_names_a_case() -> None:
    ids = {case.values[0]["id"] for case in CASES if case.values[0] is not None}
    if not all((CONFORMANCE_DIR / name).is_file() for name in FILES):
        pytest.skip(f"conformance vectors not found in {CONFORMANCE_DIR}")
    assert set(KNOWN_DIFFERENCES) <= ids


def test_confluent_vectors_carry_provenance() -> None:
    for case in _read(OWN_FILES["confluent_jsonschema.jsonl"], "confluent_jsonschema.jsonl"):
        record = case.values[0]
        provenance = record["provenance"]
        assert provenance["repo"] == "confluentinc/schema-registry", record["id"]
        assert len(provenance["commit"]) == 40 and provenance["path"].endswith(".json")
        assert isinstance(provenance["case"], int) and provenance["description"]
        assert record["schema_type"] == "JSON" and record["level"] == "BACKWARD"


def test_protobuf_vectors_carry_provenance() -> None:
    records = [c.values[0] for c in _read(OWN_FILES["protobuf_conformance.json"],
                                          "protobuf_conformance.json")]
    assert {r["source"] for r in records} == {"confluent", "karapace", "apicurio"}
    for record in records:
        provenance = record["provenance"]
        assert provenance["repo"] in ("confluentinc/schema-registry", "Aiven-Open/karapace",
                                      "Apicurio/apicurio-registry")
        assert len(provenance["commit"]) == 40 and provenance["path"], record["id"]
        assert provenance["test"] and provenance["description"], record["id"]
        assert record["schema_type"] == "PROTOBUF"


def test_never_compatible_where_confluent_says_incompatible() -> None:
    """The gate's worst error: a change keyguard passes that Confluent's own tests reject."""
    confluent = [case for name in ("confluent_jsonschema.jsonl", "protobuf_conformance.json")
                 for case in _read(OWN_FILES[name], name)
                 if case.values[0]["source"] == "confluent"]
    passed_wrongly = [
        case.values[0]["id"]
        for case in confluent
        if not case.values[0]["expected_compatible"]
        and _verdict(case.values[0]) is True
        and case.values[0]["id"] not in KNOWN_DIFFERENCES
    ]
    assert passed_wrongly == []


def test_case_ids_are_unique() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
