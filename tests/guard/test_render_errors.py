"""Every error kind renders as a document of every machine format, and that document parses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

import keyguard.formats.errors as errors
from keyguard.guard.render import MACHINE_FORMATS, render_error


def _kinds() -> list[tuple[str, int]]:
    found = {(errors.INTERNAL_KIND, errors.EXIT_INTERNAL)}
    todo: list[type[errors.KeyguardError]] = [errors.KeyguardError]
    while todo:
        cls = todo.pop()
        found.add((cls.kind, cls.exit_code))
        todo += cls.__subclasses__()
    return sorted(found)


KINDS = _kinds()
# A message with what every format must escape: quotes, markup, a newline, `::` and `%`.
MESSAGE = 'file "a<b>.avsc" & co:\nline 2 :: 100% ]]>'


@pytest.mark.parametrize("fmt", MACHINE_FORMATS)
@pytest.mark.parametrize("kind,code", KINDS, ids=[k for k, _ in KINDS])
def test_error_document(fmt: str, kind: str, code: int) -> None:
    text = render_error(fmt, kind, MESSAGE, code)
    assert text is not None
    if fmt == "json":
        error = json.loads(text)["error"]
        assert (error["kind"], error["message"], error["exit_code"]) == (kind, MESSAGE, code)
    elif fmt == "sarif":
        invocation = json.loads(text)["runs"][0]["invocations"][0]
        note = invocation["toolExecutionNotifications"][0]
        assert (note["descriptor"]["id"], note["message"]["text"], invocation["exitCode"]) \
            == (kind, MESSAGE, code)
    elif fmt == "junit":
        error = ET.fromstring(text).find("./testsuite/testcase/error")
        assert error is not None
        assert (error.get("type"), error.get("message")) == (kind, MESSAGE)
    elif fmt == "gitlab":
        (issue,) = json.loads(text)
        assert issue["severity"] == "blocker" and issue["check_name"] == f"keyguard-{kind}"
        assert issue["description"] == (f"keyguard could not judge ({kind}, exit code {code}): "
                                        f"{MESSAGE}")
    else:
        lines = text.splitlines()
        assert len(lines) == 1, "a newline in the message would end the workflow command"
        assert lines[0].startswith(f"::error title=keyguard::error ({kind}): ")
        data = lines[0].split("::", 2)[2]
        unescaped = data.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")
        assert unescaped == f"error ({kind}): {MESSAGE}\nexit code {code}"


def test_text_has_no_error_document() -> None:
    assert render_error("text", "usage", "x", 2) is None
