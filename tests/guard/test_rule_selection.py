"""Selecting and ignoring rules: what is hidden, what still counts, and every report says so."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

import keyguard.guard.rules as rules_module
from keyguard.formats.errors import InvalidOptionError
from keyguard.guard.render import render
from keyguard.guard.report import Finding, Report, Verdict
from keyguard.guard.rules import (
    KEY_FIELD_ADDED,
    KEY_FIRST_VERSION,
    PARTITION_COUNT_CHANGED,
    TOPIC_NOT_COMPACTED,
    VALUE_INCOMPATIBLE,
)
from keyguard.guard.selection import RuleSelection, selector, split_names

REPORT = Report.of([
    Finding(KEY_FIELD_ADDED, "region", "field 'region' added", topic="orders"),
    Finding(TOPIC_NOT_COMPACTED, "cleanup.policy", "cleanup.policy is 'delete'", topic="orders"),
    Finding(PARTITION_COUNT_CHANGED, "partitions", "6 -> 12", topic="orders"),
    Finding(VALUE_INCOMPATIBLE, "$", "long -> int", topic="payments"),
    Finding(KEY_FIRST_VERSION, "$", "first registration", topic="payments"),
], ["orders: key json", "payments: key json"])


def ids(report: Report) -> list[str]:
    return [f.rule.id for f in report.findings]


def test_nothing_selected_or_ignored_is_the_same_report() -> None:
    assert RuleSelection().apply(REPORT) is REPORT
    assert RuleSelection.of(ignore=[], select=None).apply(REPORT) is REPORT


def test_ignored_findings_leave_the_verdict() -> None:
    out = RuleSelection.of(ignore=["KG101", "KG602", "KG801"]).apply(REPORT)
    assert ids(out) == ["KG701", "KG011"]
    assert REPORT.verdict is Verdict.BREAKING and out.verdict is Verdict.WARN
    assert [(i.selector, len(i.findings)) for i in out.ignored] == [
        ("KG101", 1), ("KG602", 1), ("KG801", 1)]
    assert out.suppressed == (REPORT.findings[0], REPORT.findings[2], REPORT.findings[3])


@pytest.mark.parametrize("names", [
    ["key-bytes"],                       # a category
    ["KG101,KG011"],                     # comma-separated
    [" kg101 ", "key-first-version"],    # any case, blanks, a rule name
])
def test_names_are_ids_names_or_categories(names: list[str]) -> None:
    out = RuleSelection.of(ignore=names).apply(REPORT)
    assert ids(out) == ["KG701", "KG602", "KG801"]


def test_a_category_reports_the_rules_that_hid_findings() -> None:
    (ignored,) = RuleSelection.of(ignore=["key-bytes"]).apply(REPORT).ignored
    assert ignored.selector == "key-bytes" and len(ignored.rules) > 10
    assert ignored.hidden() == {"KG101": 1, "KG011": 1}


def test_an_id_that_hid_nothing_is_still_reported() -> None:
    (ignored,) = RuleSelection.of(ignore=["KG501"]).apply(REPORT).ignored
    assert ignored.hidden() == {"KG501": 0}


def test_select_keeps_only_the_selected_rules_and_ignore_wins() -> None:
    out = RuleSelection.of(select=["key-placement", "KG701"], ignore=["KG701"]).apply(REPORT)
    assert ids(out) == ["KG602"]
    ignore, unselected = out.ignored
    assert (ignore.selector, len(ignore.findings)) == ("KG701", 1)
    assert unselected.selector == "not selected (key-placement, KG701)"
    assert unselected.source == "--select"
    assert unselected.hidden() == {"KG101": 1, "KG801": 1, "KG011": 1}


def test_a_topic_ignore_hides_only_that_topics_findings() -> None:
    sel = RuleSelection.of(ignore=["value-compatibility", "KG602"], source="keyguard.toml",
                           topic="payments")
    out = sel.apply(REPORT)
    assert ids(out) == ["KG101", "KG701", "KG602", "KG011"]
    assert [i.topic for i in out.ignored] == ["payments", "payments"]


def test_selections_combine_without_repeating_an_ignore() -> None:
    cli = RuleSelection.of(ignore=["KG701"])
    both = cli.plus(RuleSelection.of(ignore=["KG701", "KG602"], source="keyguard.toml"))
    assert [(e.selector.token, e.source) for e in both.ignore] == [
        ("KG701", "--ignore"), ("KG602", "keyguard.toml")]


def test_merged_reports_keep_what_was_ignored() -> None:
    a = RuleSelection.of(ignore=["KG701"]).apply(REPORT)
    merged = a.merged(Report())
    assert merged.ignored == a.ignored and merged.suppressed == a.suppressed


def test_a_retired_id_ignores_its_successor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(rules_module.ALIASES, "KG105", "KG101")
    out = RuleSelection.of(ignore=["KG105"]).apply(REPORT)
    assert "KG101" not in ids(out) and out.ignored[0].selector == "KG101"


@pytest.mark.parametrize(("name", "suggests"), [
    ("KG7O1", "did you mean KG701?"),
    ("key-byte", "did you mean key-bytes?"),
    ("topic-not-compacte", "did you mean topic-not-compacted?"),
])
def test_an_unknown_name_suggests_the_near_ones(name: str, suggests: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        selector(name, where="--ignore")
    assert err.value.exit_code == 2
    assert f"--ignore: unknown rule or category {name!r}" in str(err.value)
    assert suggests in str(err.value)


def test_an_unknown_name_without_near_ones_lists_the_categories() -> None:
    with pytest.raises(InvalidOptionError) as err:
        RuleSelection.of(select=["nonsense"])
    assert "did you mean" not in str(err.value)
    assert "key-bytes, key-placement, topic, value-compatibility" in str(err.value)


def test_split_names() -> None:
    assert split_names(None) == []
    assert split_names("KG701, key-bytes,,") == ["KG701", "key-bytes"]
    assert split_names(["KG701,KG602", "topic"]) == ["KG701", "KG602", "topic"]


# -- every output format says what was ignored -----------------------------------------------

IGNORED = RuleSelection.of(ignore=["KG101", "topic"]).apply(REPORT)


def test_text_lists_each_ignore_and_the_count() -> None:
    text = render(IGNORED, "text")
    assert "KG101 key-field-added" not in text.split("ignored:")[0]
    assert "ignored: KG101 key-field-added (--ignore): 1 finding hidden" in text
    assert "ignored: category topic, 2 rules (--ignore): 1 finding hidden (KG701: 1)" in text
    assert text.splitlines()[-1] == "2 breaking, 0 warning, 1 info, 2 ignored: verdict breaking"


def test_json_carries_the_ignored_findings_apart() -> None:
    doc = json.loads(render(IGNORED, "json"))
    assert [f["rule"]["id"] for f in doc["findings"]] == ["KG602", "KG801", "KG011"]
    assert doc["counts"] == {"breaking": 2, "warning": 0, "info": 1}
    first, second = doc["ignored"]
    assert (first["selector"], first["source"], first["hidden"], first["count"]) == (
        "KG101", "--ignore", {"KG101": 1}, 1)
    assert first["findings"][0]["path"] == "region"
    assert (second["selector"], second["hidden"]) == ("topic", {"KG701": 1})
    assert json.loads(render(REPORT, "json"))["ignored"] == []


def test_sarif_suppresses_the_ignored_results() -> None:
    run = json.loads(render(IGNORED, "sarif"))["runs"][0]
    shown = [r for r in run["results"] if "suppressions" not in r]
    hidden = [r for r in run["results"] if "suppressions" in r]
    assert [r["ruleId"] for r in shown] == ["KG602", "KG801", "KG011"]
    assert [r["ruleId"] for r in hidden] == ["KG101", "KG701"]
    (s,) = hidden[0]["suppressions"]
    assert s["kind"] == "external" and s["status"] == "accepted"
    assert "KG101 key-field-added (--ignore)" in s["justification"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert all(r["ruleIndex"] == rules.index(r["ruleId"]) for r in run["results"])
    assert [i["selector"] for i in run["properties"]["ignored"]] == ["KG101", "topic"]


def test_junit_skips_the_ignored_cases() -> None:
    root = ET.fromstring(render(IGNORED, "junit", rules=rules_module.ALL_RULES.values()))
    orders = root.find("testsuite[@name='orders']")
    assert orders is not None
    skipped = {c.get("name"): c.find("skipped").get("message")
               for c in orders.iter("testcase") if c.find("skipped") is not None}
    assert "ignored: KG101 key-field-added (--ignore)" in skipped["KG101 key-field-added at region"]
    # A rule of an ignored category that found nothing is skipped too, not passed.
    assert "KG015 subject-missing" in skipped
    assert orders.get("failures") == "1"  # KG602 only
    assert orders.get("skipped") == str(len(skipped)) == "3"  # KG101, KG701, KG015
    props = [p.get("value") for p in root.iter("property") if p.get("name") == "ignored"]
    assert len(props) == 2


def test_github_annotates_each_ignore() -> None:
    lines = render(IGNORED, "github").splitlines()
    notices = [x for x in lines if x.startswith("::notice title=keyguard ignored::")]
    assert notices[0].endswith("::KG101 key-field-added (--ignore): 1 finding hidden")
    assert len(notices) == 2
    assert not any(x.startswith("::error") and "KG101" in x for x in lines)


def test_findings_are_matched_by_rule_id() -> None:
    own = TOPIC_NOT_COMPACTED.replace(summary="A copy of KG701 made elsewhere.")
    report = Report.of([Finding(own, "cleanup.policy", "delete", topic="orders")])
    assert RuleSelection.of(ignore=["KG701"]).apply(report).findings == ()
    assert RuleSelection.of(select=["topic"]).apply(report).findings == report.findings
