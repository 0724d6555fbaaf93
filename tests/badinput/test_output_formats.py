"""Machine formats carry their errors: each error kind, in each machine format, is a document.

Every row runs a failing command line with `--format FMT`, asserts the exit code and the kind
of the one-line error on stderr, and parses the document on stdout (or in the --output file):
a JSON error object, a SARIF run whose invocation failed, a JUnit `<error>`, a GitHub `::error`.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from badinput import assert_rejected, run_cli

from keyguard.formats.errors import EXIT_INTERNAL, EXIT_INVALID, EXIT_UNREACHABLE

MACHINE = ("json", "sarif", "junit", "github")
REPO = Path(__file__).resolve().parents[2]
GOOD = '{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}'
BAD = '{"type":"record","name":"r","fields":[{"name":"a","type":"map"}]}'
MAP = '{"type":"record","name":"r","fields":[{"name":"a","type":{"type":"map","values":"int"}}]}'


def parse_error(fmt: str, text: str) -> tuple[str, int | None, str]:
    """(kind, exit code if the format says it, message) from an error document."""
    if fmt == "json":
        doc = json.loads(text)
        assert doc["verdict"] == "error" and doc["findings"] == []
        error = doc["error"]
        return error["kind"], error["exit_code"], error["message"]
    if fmt == "sarif":
        run = json.loads(text)["runs"][0]
        assert run["results"] == []
        invocation = run["invocations"][0]
        assert invocation["executionSuccessful"] is False
        note = invocation["toolExecutionNotifications"][0]
        assert note["level"] == "error"
        assert run["tool"]["driver"]["notifications"][note["descriptor"]["index"]]["id"] == \
            note["descriptor"]["id"]
        return note["descriptor"]["id"], invocation["exitCode"], note["message"]["text"]
    if fmt == "junit":
        root = ET.fromstring(text)
        assert root.get("errors") == "1"
        error = root.find("./testsuite/testcase/error")
        assert error is not None
        return str(error.get("type")), None, str(error.get("message"))
    assert fmt == "github"
    assert text.startswith("::error title=keyguard::"), text
    body = text.split("::", 2)[2]
    kind = body.split("(", 1)[1].split(")", 1)[0]
    return kind, int(body.rsplit("exit code ", 1)[1].split()[0]), body


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("schemas")
    out = {}
    for name, text in (("good", GOOD), ("bad", BAD), ("map", MAP), ("notjson", "{nope")):
        (d / f"{name}.avsc").write_text(text)
        out[name] = str(d / f"{name}.avsc")
    registry = tmp_path_factory.mktemp("registry")  # an empty file registry
    out["dir"] = str(registry)
    return out


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    name = "keyguard_fake_registry"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, REPO / "tests" / "formats" / "registry" / "conftest.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    fake = sys.modules[name]._start()
    fake.state.echo_status = 422
    yield fake.url
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture(scope="module")
def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


# (id, args with {placeholders}, exit code, kind)
ERRORS: list[tuple[str, list[str], int, str]] = [
    ("check-usage", ["check", "--registry", "file://{dir}", "--key-schema", "{good}"],
     EXIT_INVALID, "usage"),
    ("check-invalid-schema", ["check", "--topic", "t", "--registry", "file://{dir}",
                              "--key-schema", "{bad}"], EXIT_INVALID, "invalid-schema"),
    ("check-invalid-option", ["check", "--topic", "t", "--registry", "file://{dir}",
                              "--key-schema", "{good}", "-o", "nope=1"],
     EXIT_INVALID, "invalid-option"),
    ("check-registry", ["check", "--topic", "t", "--registry", "file://{dir}", "--key-schema",
                        "subject:missing:3"], EXIT_INVALID, "registry"),
    ("check-not-a-registry", ["check", "--topic", "t", "--registry", "{echo}", "--key-schema",
                              "{good}"], EXIT_UNREACHABLE, "registry-unavailable"),
    ("check-registry-unavailable", ["check", "--topic", "t", "--registry", "{closed}",
                                    "--key-schema", "{good}"],
     EXIT_UNREACHABLE, "registry-unavailable"),
    ("diff-usage", ["diff", "{good}", "--key"], EXIT_INVALID, "usage"),
    ("diff-invalid-schema", ["diff", "{good}", "{bad}", "--level", "BACKWARD"],
     EXIT_INVALID, "invalid-schema"),
    ("diff-invalid-option", ["diff", "{good}", "{good}", "--level", "SIDEWAYS"],
     EXIT_INVALID, "invalid-option"),
    ("diff-unsupported-type", ["diff", "{good}", "{map}", "--key", "--key-format", "raw"],
     EXIT_INVALID, "unsupported-type"),
]


def _fill(args: list[str], files: dict[str, str], echo: str, closed: str) -> list[str]:
    return [a.format(echo=echo, closed=closed, **files) for a in args]


@pytest.mark.parametrize("fmt", MACHINE)
@pytest.mark.parametrize("args,code,kind", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_kind_as_document(args: list[str], code: int, kind: str, fmt: str,
                                files: dict[str, str], echo_url: str, closed_url: str) -> None:
    out = assert_rejected([*_fill(args, files, echo_url, closed_url), "--format", fmt],
                          code, kind)
    found_kind, found_code, message = parse_error(fmt, out.stdout)
    assert found_kind == kind
    assert found_code in (code, None)
    assert message.strip()


@pytest.mark.parametrize("fmt", MACHINE)
def test_error_document_goes_to_the_output_file(fmt: str, files: dict[str, str],
                                                tmp_path: Path) -> None:
    report = tmp_path / f"report.{fmt}"
    out = assert_rejected(["diff", files["good"], files["bad"], "--level", "BACKWARD",
                           "--format", fmt, "--output", str(report)],
                          EXIT_INVALID, "invalid-schema")
    assert out.stdout == ""
    assert parse_error(fmt, report.read_text())[0] == "invalid-schema"


UNWRITABLE = [
    ("missing-directory", "{tmp}/no/such/dir/report"),
    ("a-directory", "{tmp}"),
    ("under-a-file", "{good}/report"),
]


@pytest.mark.parametrize("fmt", ("text", *MACHINE))
@pytest.mark.parametrize("path", [u[1] for u in UNWRITABLE], ids=[u[0] for u in UNWRITABLE])
def test_unwritable_output(path: str, fmt: str, files: dict[str, str], tmp_path: Path) -> None:
    target = path.format(tmp=tmp_path, **files)
    out = assert_rejected(["diff", files["good"], files["good"], "--level", "BACKWARD",
                           "--format", fmt, "--output", target],
                          EXIT_INVALID, "invalid-option", says="--output")
    if fmt != "text":  # the report cannot go there: the error document comes on stdout
        assert parse_error(fmt, out.stdout)[0] == "invalid-option"
    else:
        assert out.stdout == ""


@pytest.mark.parametrize("command", [
    ["check", "--topic", "t", "--registry", "file://{dir}", "--key-schema", "{good}"],
    ["diff", "{good}", "{good}", "--level", "BACKWARD"],
    ["rules"],
], ids=["check", "diff", "rules"])
@pytest.mark.parametrize("fmt", ["xml", "JSON", ""])
def test_unknown_format(command: list[str], fmt: str, files: dict[str, str]) -> None:
    out = assert_rejected([*_fill(command, files, "", ""), "--format", fmt],
                          EXIT_INVALID, "invalid-option", says="--format")
    assert out.stdout == ""


@pytest.mark.parametrize("fmt", ["sarif", "junit", "github"])
def test_rules_has_only_text_and_json(fmt: str) -> None:
    out = assert_rejected(["rules", "--format", fmt], EXIT_INVALID, "invalid-option",
                          says="text, json")
    assert out.stdout == ""


def test_rules_error_as_json() -> None:
    out = assert_rejected(["rules", "KG99999", "--format", "json"], EXIT_INVALID, "usage")
    assert parse_error("json", out.stdout)[:2] == ("usage", EXIT_INVALID)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_crash_is_an_internal_error_document(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: Any, **_k: Any) -> None:
        raise ZeroDivisionError("planted by the test")

    monkeypatch.setattr("keyguard.guard.rules_catalogue.catalogue", boom)
    out = run_cli(["rules", "--format", fmt])
    assert out.code == EXIT_INTERNAL and out.kind == "internal"
    assert "Traceback" not in out.output
    if fmt == "json":
        kind, code, message = parse_error("json", out.stdout)
        assert (kind, code) == ("internal", EXIT_INTERNAL)
        assert "ZeroDivisionError" in message
    else:
        assert out.stdout == ""


def test_a_good_report_says_no_error(files: dict[str, str]) -> None:
    out = run_cli(["diff", files["good"], files["good"], "--level", "BACKWARD", "-f", "json"])
    assert out.code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["error"] is None and doc["verdict"] != "error"
