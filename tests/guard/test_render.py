"""Every renderer, from one hand-built Report: structure, escaping, and no credentials."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import xml.etree.ElementTree as ET

import pytest

import keyguard
from keyguard.formats.errors import InvalidOptionError
from keyguard.guard.render import FORMATS, render, render_error
from keyguard.guard.render.common import first_difference
from keyguard.guard.render.github import escape_data, escape_property
from keyguard.guard.report import Category, Finding, Report, Rule, Severity, Witness

SCHEMA_ID = Rule(
    "KG101", "key-schema-id-changed", Category.KEY_BYTES, Severity.BREAKING,
    "A new key schema id changes every key's bytes",
    "Confluent framing puts the schema id in bytes 1-4 of every key: a new id gives every "
    "existing key new bytes, and compaction never folds the old records away.",
    '{"name": "id", "type": "int"}', '{"name": "id", "type": "long"}',
)
PARTITIONS = Rule("KG201", "partition-count-changed", Category.KEY_PLACEMENT, Severity.WARNING,
                  "Keys move partitions", "A key hashed to another partition is another key.")
CLEANUP = Rule("KG301", "not-compacted", Category.TOPIC, Severity.INFO,
               "The topic is not compacted", "Nothing is orphaned where nothing is compacted.")
UNUSED = Rule("KG102", "field-renamed", Category.KEY_BYTES, Severity.BREAKING,
              "A renamed key field", "JSON keys carry field names.")
CATALOGUE = (SCHEMA_ID, UNUSED, PARTITIONS, CLEANUP)

SECRET_URL = "https://alice:hunter2@registry.example.com/subjects/orders-key/versions/3"

BREAKING = Finding(
    SCHEMA_ID, "id", f"id: int -> long (registered at {SECRET_URL})",
    Witness({"id": 42, "amount": decimal.Decimal("10.50"), "day": dt.date(2024, 1, 2)},
            bytes.fromhex("000000006554"), bytes.fromhex("000000006654"),
            old_partition=3, new_partition=7),
    topic="orders", subject="orders-key")
WARNING = Finding(PARTITIONS, "$", "6 -> 12 partitions: 100% of keys move,\nsee a:b,c",
                  Witness({"id": 1}, b"\x01", b"\x01", old_partition=1, new_partition=5),
                  topic="orders")
INFO = Finding(CLEANUP, "cleanup.policy", "cleanup.policy is delete",
               Witness({"id": 1}, b"\x00\x01", None, new_error="field 'x' has no default"),
               topic="payments")
REPORT = Report.of([INFO, WARNING, BREAKING],
                   checked=["orders: orders-key v3 -> schemas/orders-key.avsc"],
                   notes=[f"payments: registry {SECRET_URL} answered slowly"])
FILES = {"orders-key": "schemas/orders-key.avsc"}


def out(fmt: str, report: Report = REPORT) -> str:
    return render(report, fmt, files=FILES, rules=CATALOGUE)


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_credentials_in_any_format(fmt: str) -> None:
    text = out(fmt)
    assert "hunter2" not in text
    assert "alice" not in text
    assert "***@registry.example.com" in text  # redacted, not dropped


def test_unknown_format() -> None:
    with pytest.raises(InvalidOptionError, match="sarif"):
        render(REPORT, "yaml")


def test_first_difference() -> None:
    assert first_difference(b"\x00\x01", b"\x00\x02") == 1
    assert first_difference(b"\x00\x01", b"\x00\x01\x05") == 2
    assert first_difference(b"ab", b"ab") is None
    assert first_difference(b"ab", None) is None


# -- text ------------------------------------------------------------------------------------

def test_text() -> None:
    lines = out("text").splitlines()
    assert lines[0] == "keyguard: BREAKING"
    assert lines[-1] == "1 breaking, 1 warning, 1 info: verdict breaking"
    body = "\n".join(lines)
    # The worst first, and each finding names its rule, topic, subject and path.
    assert body.index("BREAKING KG101") < body.index("WARNING KG201") < body.index("INFO KG301")
    assert "BREAKING KG101 key-schema-id-changed (topic orders, subject orders-key)" in body
    assert '{"id": 42, "amount": "10.50", "day": "2024-01-02"}' in body
    old = next(x for x in lines if "old bytes:" in x)
    new = next(x for x in lines if "new bytes:" in x)
    caret = lines[lines.index(new) + 1]
    assert old.endswith("00 00 00 00 65 54") and new.endswith("00 00 00 00 66 54")
    # The marker sits under the first differing byte (index 4: 65 -> 66).
    assert new[caret.index("^^"):caret.index("^^") + 2] == "66"
    assert "first difference at byte 4" in caret
    assert "partition:  3 -> 7" in body
    assert "(cannot encode: field 'x' has no default)" in body
    assert "file:       schemas/orders-key.avsc" in body


def test_text_safe_report() -> None:
    text = render(Report(), "text")
    assert text.splitlines()[0] == "keyguard: SAFE (no findings)"
    assert text.splitlines()[-1] == "0 breaking, 0 warning, 0 info: verdict safe"


def test_text_long_key_is_shown_around_its_difference() -> None:
    old = bytes(range(200))
    new = old[:80] + b"\xff" + old[81:]
    w = Witness({"k": "x"}, old, new)
    text = render(Report.of([Finding(SCHEMA_ID, "k", "m", w)]), "text")
    new_line = next(x for x in text.splitlines() if "new bytes:" in x)
    caret = text.splitlines()[text.splitlines().index(new_line) + 1]
    assert new_line[caret.index("^^"):caret.index("^^") + 2] == "ff"
    assert new_line.endswith("(200 bytes)")
    assert "  … 48 49" in new_line


# -- json ------------------------------------------------------------------------------------

def test_json_schema_and_round_trip() -> None:
    doc = json.loads(out("json"))
    assert doc["version"] == 1
    assert doc["verdict"] == "breaking"
    assert doc["counts"] == {"breaking": 1, "warning": 1, "info": 1}
    assert [f["rule"]["id"] for f in doc["findings"]] == ["KG101", "KG201", "KG301"]
    first = doc["findings"][0]
    assert first["rule"] == {"id": "KG101", "name": "key-schema-id-changed",
                             "category": "key-bytes", "severity": "breaking"}
    assert (first["path"], first["topic"], first["subject"], first["file"]) == (
        "id", "orders", "orders-key", "schemas/orders-key.avsc")
    assert first["witness"] == {
        "key": {"id": 42, "amount": "10.50", "day": "2024-01-02"},
        "old_hex": "000000006554", "new_hex": "000000006654", "new_error": None,
        "old_partition": 3, "new_partition": 7, "first_difference": 4,
        "old_headers": [], "new_headers": [],
    }
    third = doc["findings"][2]["witness"]
    assert (third["new_hex"], third["new_error"]) == (None, "field 'x' has no default")
    # Stable: the same report renders to the same text, and it re-serializes unchanged.
    assert out("json") == out("json")
    assert json.dumps(doc, indent=2, ensure_ascii=False) + "\n" == out("json")


def test_json_severity_override() -> None:
    downgraded = Finding(SCHEMA_ID, "id", "m", severity=Severity.WARNING)
    doc = json.loads(render(Report.of([downgraded]), "json"))
    assert doc["verdict"] == "warn"
    assert doc["findings"][0]["severity"] == "warning"
    assert doc["findings"][0]["rule"]["severity"] == "breaking"
    assert doc["findings"][0]["witness"] is None


# -- junit -----------------------------------------------------------------------------------

def test_junit() -> None:
    root = ET.fromstring(out("junit"))
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"orders", "payments"}
    assert root.get("failures") == "1"
    assert len(root.findall(".//failure")) == 1
    orders = suites["orders"]
    # Two findings plus the two catalogue rules that found nothing in orders.
    assert orders.get("tests") == str(len(orders.findall("testcase"))) == "4"
    assert orders.get("failures") == "1"
    failure = orders.find("testcase/failure")
    assert failure is not None
    assert failure.get("type") == "KG101"
    assert "00 00 00 00 66 54" in (failure.text or "")
    assert int(root.get("tests", "0")) == sum(int(s.get("tests", "0")) for s in suites.values())
    assert suites["payments"].get("failures") == "0"


def test_junit_clean_report_lists_the_rules_checked() -> None:
    root = ET.fromstring(render(Report(), "junit", rules=CATALOGUE))
    cases = root.findall("testsuite/testcase")
    assert [c.get("name", "").split()[0] for c in cases] == [r.id for r in CATALOGUE]
    assert root.get("failures") == "0"


def test_junit_survives_control_characters() -> None:
    f = Finding(SCHEMA_ID, "id", "bad \x00\x1b byte")
    ET.fromstring(render(Report.of([f]), "junit"))


# -- sarif -----------------------------------------------------------------------------------

def test_sarif_structure() -> None:
    doc = json.loads(out("sarif"))
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-schema-2.1.0.json")
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "keyguard"
    assert [r["id"] for r in rules] == ["KG101", "KG102", "KG201", "KG301"]
    for r in rules:
        assert {"id", "name", "shortDescription", "fullDescription", "help"} <= set(r)
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"]
        assert r["defaultConfiguration"]["level"] in ("error", "warning", "note")
    assert "compaction never folds" in rules[0]["fullDescription"]["text"]
    assert '"type": "long"' in rules[0]["help"]["text"]

    results = run["results"]
    assert [r["level"] for r in results] == ["error", "warning", "note"]
    for res in results:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["message"]["text"]
        assert res["locations"]
        assert res["partialFingerprints"]
    first = results[0]
    physical = first["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "schemas/orders-key.avsc"
    # The file cannot be read: its first line, and why.
    assert physical["region"] == {"startLine": 1}
    assert first["properties"]["location"] == {
        "found": False, "missing": "cannot read schemas/orders-key.avsc: No such file or directory"}
    assert first["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "orders:id"
    assert first["properties"]["witness"]["new_hex"] == "000000006654"
    # No schema file known for payments: a logical location only.
    assert "physicalLocation" not in results[2]["locations"][0]
    assert run["properties"]["verdict"] == "breaking"


def test_sarif_names_keyguards_version() -> None:
    for doc in (json.loads(out("sarif")), json.loads(render_error("sarif", "usage", "x", 2))):
        driver = doc["runs"][0]["tool"]["driver"]
        assert driver["version"] == keyguard.__version__
        assert driver["semanticVersion"] == keyguard.__version__  # 0.2.0 is semver


def test_sarif_region_is_the_line_that_declares_the_field(tmp_path) -> None:
    schema = tmp_path / "orders-key.avsc"
    text = ('{\n  "type": "record",\n  "name": "Key",\n  "fields": [\n'
            '    {"name": "amount", "type": "int"},\n    {"name": "id", "type": "long"}\n  ]\n}\n')
    schema.write_text(text)
    gone = Finding(UNUSED, "name", "field 'name' renamed", topic="orders", subject="orders-key")
    doc = json.loads(render(Report.of([BREAKING, gone]), "sarif",
                            files={"orders-key": str(schema)}, rules=CATALOGUE))
    found, missing = doc["runs"][0]["results"]
    region = found["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 6, "startColumn": 14}
    assert text.splitlines()[5][13:].startswith('"id"')
    assert found["properties"]["location"] == {"found": True}
    # A path the file does not declare: the file's first line, and why.
    assert missing["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert missing["properties"]["location"] == {
        "found": False, "missing": f"field name is not declared in {schema} (or is, more than "
                                   "once)"}


def test_sarif_fingerprints_are_stable_and_distinct() -> None:
    a = json.loads(out("sarif"))["runs"][0]["results"]
    b = json.loads(out("sarif"))["runs"][0]["results"]
    prints = [r["partialFingerprints"]["keyguardFinding/v1"] for r in a]
    assert prints == [r["partialFingerprints"]["keyguardFinding/v1"] for r in b]
    assert len(set(prints)) == len(prints)


# -- github ----------------------------------------------------------------------------------

def test_github_escaping() -> None:
    assert escape_data("100%\r\nnext") == "100%25%0D%0Anext"
    assert escape_property("KG1: a,b%") == "KG1%3A a%2Cb%25"
    assert escape_data("a:b,c") == "a:b,c"


def test_github_annotations() -> None:
    lines = out("github").splitlines()
    # One command per line, whatever newlines the messages had.
    assert all(line.startswith("::") for line in lines)
    error, warning, notice, note = lines
    assert error.startswith("::error file=schemas/orders-key.avsc,title=KG101 "
                            "key-schema-id-changed::")
    assert "new bytes: 000000006654 (first difference at byte 4)" in error
    assert warning.startswith("::warning title=KG201 partition-count-changed::")
    assert "100%25 of keys move,%0Asee a:b,c" in warning
    assert notice.startswith("::notice title=KG301 not-compacted::")
    assert note.startswith("::notice title=keyguard note::")


def test_github_title_properties_are_escaped() -> None:
    odd = Rule("KG9", "a,b:c", Category.TOPIC, Severity.WARNING, "s", "w")
    line = render(Report.of([Finding(odd, "$", "m")]), "github", files={})
    assert line.startswith("::warning title=KG9 a%2Cb%3Ac::")
