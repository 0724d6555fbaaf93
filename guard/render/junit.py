"""JUnit XML, for the test-report views of GitHub Actions, GitLab and Jenkins.

A testsuite per topic; in it a failing testcase per breaking finding, a passing one (with the
details in system-out) per warning or info, and a passing one per catalogue rule that found
nothing there, so a clean check still shows what was checked. An ignored rule's findings (or,
when it found nothing, its catalogue case) are skipped testcases that say which ignore hid them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping

from keyguard.guard.render import text
from keyguard.guard.render.common import catalogue, file_for, ignored_line, ordered, safe
from keyguard.guard.report import Finding, Ignored, Report, Rule, Severity

#: It describes every rule, so the caller hands it the whole catalogue.
USES_CATALOGUE = True

#: The suite of findings that name no topic.
DEFAULT_SUITE = "keyguard"
# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def render(report: Report, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    rule_list = catalogue(report, rules)
    by_topic, hidden = _by_suite(report)
    root = ET.Element("testsuites", name="keyguard")
    _properties(root, report)
    total = failures = 0
    for topic, findings in by_topic.items():
        cases, failed = _suite(root, report, topic, findings, hidden.get(topic, []), rule_list,
                               files)
        total += cases
        failures += failed
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _by_suite(report: Report) -> tuple[dict[str, list[Finding]],
                                       dict[str, list[tuple[Finding, Ignored]]]]:
    """The findings of each suite (a topic's, or the default one), and the findings ignored
    there with the ignore that hid them; at least one suite."""
    by_topic: dict[str, list[Finding]] = {}
    for f in ordered(report):
        by_topic.setdefault(safe(f.topic) or DEFAULT_SUITE, []).append(f)
    hidden: dict[str, list[tuple[Finding, Ignored]]] = {}
    for i in report.ignored:
        for f in i.findings:
            hidden.setdefault(safe(f.topic) or DEFAULT_SUITE, []).append((f, i))
    for topic in hidden:
        by_topic.setdefault(topic, [])
    if not by_topic:
        by_topic[DEFAULT_SUITE] = []
    return by_topic, hidden


def _properties(root: ET.Element, report: Report) -> None:
    """What was checked, the notes and the ignores, as the run's properties."""
    if not (report.checked or report.notes or report.ignored):
        return
    props = ET.SubElement(root, "properties")
    for c in report.checked:
        ET.SubElement(props, "property", name="checked", value=_xml(safe(c)))
    for n in report.notes:
        ET.SubElement(props, "property", name="note", value=_xml(safe(n)))
    for i in report.ignored:
        ET.SubElement(props, "property", name="ignored", value=_xml(ignored_line(i)))


def _suite(root: ET.Element, report: Report, topic: str, findings: list[Finding],
           hidden: list[tuple[Finding, Ignored]], rule_list: list[Rule],
           files: Mapping[str, str] | None) -> tuple[int, int]:
    """One topic's testsuite: its findings, those ignored, and a case per catalogue rule that
    found nothing; (cases, failures)."""
    suite = ET.SubElement(root, "testsuite", name=_xml(topic))
    cases = failed = skipped = 0
    for f in findings:
        cases += 1
        failed += _finding_case(suite, topic, f, file_for(f, files))
    for f, i in hidden:
        cases += 1
        skipped += 1
        case = _skipped_case(suite, topic, f, file_for(f, files))
        ET.SubElement(case, "skipped", message=_xml(f"ignored: {ignored_line(i)}"))
    found = {f.rule.id for f in findings} | {f.rule.id for f, _ in hidden}
    for rule in rule_list:
        if rule.id not in found:
            cases += 1
            case = ET.SubElement(suite, "testcase", classname=f"keyguard.{_xml(topic)}",
                                 name=f"{rule.id} {rule.name}")
            why = _ignoring(report.ignored, rule, topic)
            if why is not None:
                skipped += 1
                ET.SubElement(case, "skipped", message=_xml(f"ignored: {ignored_line(why)}"))
    suite.set("tests", str(cases))
    suite.set("failures", str(failed))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return cases, failed


def render_error(kind: str, message: str, exit_code: int) -> str:
    """One suite, one testcase holding an `<error>`: keyguard could not judge."""
    text = _xml(safe(message))
    root = ET.Element("testsuites", name="keyguard", tests="1", failures="0", errors="1")
    suite = ET.SubElement(root, "testsuite", name=DEFAULT_SUITE, tests="1", failures="0",
                          errors="1", skipped="0")
    case = ET.SubElement(suite, "testcase", classname=DEFAULT_SUITE, name="keyguard run")
    error = ET.SubElement(case, "error", type=kind, message=text)
    error.text = f"{text}\n(exit code {exit_code})"
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _finding_case(suite: ET.Element, topic: str, f: Finding, file: str | None) -> int:
    """Add the testcase of one finding; 1 when it fails."""
    case = ET.SubElement(suite, "testcase", classname=f"keyguard.{_xml(topic)}",
                         name=_xml(f"{f.rule.id} {f.rule.name} at {safe(f.path)}"))
    if file:
        case.set("file", _xml(file))
    details = _xml("\n".join(text.finding_lines(f, file)))
    if f.effective_severity is Severity.BREAKING:
        failure = ET.SubElement(case, "failure", type=f.rule.id,
                                message=_xml(f"{f.rule.id}: {safe(f.message)}"))
        failure.text = details
        return 1
    ET.SubElement(case, "system-out").text = details
    return 0


def _skipped_case(suite: ET.Element, topic: str, f: Finding, file: str | None) -> ET.Element:
    """The testcase of a finding an ignored rule hid: its details, no failure."""
    case = ET.SubElement(suite, "testcase", classname=f"keyguard.{_xml(topic)}",
                         name=_xml(f"{f.rule.id} {f.rule.name} at {safe(f.path)}"))
    if file:
        case.set("file", _xml(file))
    ET.SubElement(case, "system-out").text = _xml("\n".join(text.finding_lines(f, file)))
    return case


def _ignoring(ignored: tuple[Ignored, ...], rule: Rule, topic: str) -> Ignored | None:
    """The ignore that covers `rule` in the suite of `topic`, if any (a suppression, which has
    a reason, accepts the findings it hid, not the rule: its other rules still pass)."""
    for i in ignored:
        if any(r.id == rule.id for r in i.rules) and (i.topic is None or safe(i.topic) == topic) \
                and i.reason is None:
            return i
    return None


def _xml(s: str) -> str:
    return _NOT_XML.sub("\ufffd", s)
