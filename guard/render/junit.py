"""JUnit XML, for the test-report views of GitHub Actions, GitLab and Jenkins.

A testsuite per topic; in it a failing testcase per breaking finding, a passing one (with the
details in system-out) per warning or info, and a passing one per catalogue rule that found
nothing there, so a clean check still shows what was checked.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping

from guard.render import text
from guard.render.common import catalogue, file_for, ordered, safe
from guard.report import Finding, Report, Rule, Severity

#: The suite of findings that name no topic.
DEFAULT_SUITE = "keyguard"
# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def render(report: Report, *, files: Mapping[str, str] | None = None,
           rules: Iterable[Rule] = ()) -> str:
    rule_list = catalogue(report, rules)
    by_topic: dict[str, list[Finding]] = {}
    for f in ordered(report):
        by_topic.setdefault(safe(f.topic) or DEFAULT_SUITE, []).append(f)
    if not by_topic:
        by_topic[DEFAULT_SUITE] = []

    root = ET.Element("testsuites", name="keyguard")
    if report.checked or report.notes:
        props = ET.SubElement(root, "properties")
        for c in report.checked:
            ET.SubElement(props, "property", name="checked", value=_xml(safe(c)))
        for n in report.notes:
            ET.SubElement(props, "property", name="note", value=_xml(safe(n)))
    total = failures = 0
    for topic, findings in by_topic.items():
        suite = ET.SubElement(root, "testsuite", name=_xml(topic))
        cases = 0
        failed = 0
        for f in findings:
            cases += 1
            failed += _finding_case(suite, topic, f, file_for(f, files))
        found = {f.rule.id for f in findings}
        for rule in rule_list:
            if rule.id not in found:
                cases += 1
                ET.SubElement(suite, "testcase", classname=f"keyguard.{_xml(topic)}",
                              name=f"{rule.id} {rule.name}")
        suite.set("tests", str(cases))
        suite.set("failures", str(failed))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        total += cases
        failures += failed
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


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


def _xml(s: str) -> str:
    return _NOT_XML.sub("\ufffd", s)
