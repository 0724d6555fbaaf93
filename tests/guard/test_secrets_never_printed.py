"""No secret is ever printed: failing commands, searched for their credentials in every spelling.

Each case gives keyguard known credentials (as options, environment variables and URL user
info), makes it fail (a registry that echoes the Authorization header back in its error body,
a closed port, a crash), and searches everything it produced (stdout, stderr, the --output
file, --debug tracebacks, exceptions with their causes and contexts, log records) for the
secrets in plain, base64 (of user:password and of each part, standard and URL-safe, padded or
not), URL-encoded and JSON-escaped form.

The registry of known secrets is process-wide: every test starts with it empty, so a case
passes only when the code it runs registered the credentials itself.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import os
import pickle
import socket
import subprocess
import sys
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, quote_plus

import pytest
import typer
from secret_forms import spellings
from typer.testing import CliRunner

from keyguard.formats.errors import EXIT_INTERNAL, KeyguardError
from keyguard.formats.secrets import forget_secrets, redact
from keyguard.guard.cli import app
from keyguard.guard.cli.common import handles_errors

REPO = Path(__file__).resolve().parents[2]

USER = "carol-admin"
PASSWORD = 's3cr3t/Pa+ss%w0rd"q\\z'
USER_INFO = f"{USER}:{PASSWORD}"
TOKEN = "tok-9f8e7d6c5b4a.Zz_secret~X"
SASL_PASSWORD = "sasl-Pw_77x!q&secret"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" '
        f'password="{SASL_PASSWORD}";')
ALL_SECRETS = (USER_INFO, PASSWORD, TOKEN, SASL_PASSWORD, JAAS)

KEY_SCHEMA = '{"type":"record","name":"k","fields":[{"name":"id","type":"int"}]}'




FORBIDDEN = sorted({s for secret in ALL_SECRETS for s in spellings(secret)}, key=len)


def assert_clean(*texts: str) -> None:
    for text in texts:
        leaked = [s for s in FORBIDDEN if s in text]
        assert not leaked, f"secret spellings {leaked!r} printed in:\n{text}"


@pytest.fixture(autouse=True)
def _no_known_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


# -- the registry that repeats the Authorization header -------------------------------------


def _fake_registry_module() -> Any:
    name = "keyguard_fake_registry"
    if name not in sys.modules:
        path = REPO / "tests" / "formats" / "registry" / "conftest.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def echo_registry() -> Iterator[Any]:
    fake = _fake_registry_module()._start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture(scope="module")
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _host(url: str) -> str:
    return url.split("://", 1)[1]


# -- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    #: where the credentials go: url, env-user-info, env-bearer, option-user-info,
    #: option-bearer, option-url
    creds: str
    #: what the registry does: an HTTP status echoing the header, or "closed"
    server: int | str
    command: str = "check"
    fmt: str = "text"
    to_file: bool = False
    debug: bool = False
    codes: tuple[int, ...] = (2, 3)
    extra_env: dict[str, str] = field(default_factory=dict)


CLI_CASES = [
    Case("url-422-text", "url", 422, codes=(3,)),
    Case("url-422-json", "url", 422, fmt="json", codes=(3,)),
    Case("url-403-sarif", "url", 403, fmt="sarif", codes=(3,)),
    Case("url-422-junit", "url", 422, fmt="junit", codes=(3,)),
    Case("url-422-github", "url", 422, fmt="github", codes=(3,)),
    Case("env-user-info-422-text", "env-user-info", 422, codes=(3,)),
    Case("env-user-info-403-json", "env-user-info", 403, fmt="json", codes=(3,)),
    Case("env-user-info-422-sarif-file", "env-user-info", 422, fmt="sarif", to_file=True,
         codes=(3,)),
    Case("env-user-info-422-junit-file", "env-user-info", 422, fmt="junit", to_file=True,
         codes=(3,)),
    Case("env-user-info-422-json-file", "env-user-info", 422, fmt="json", to_file=True,
         codes=(3,)),
    Case("env-bearer-422-text", "env-bearer", 422, codes=(3,)),
    Case("env-bearer-403-json", "env-bearer", 403, fmt="json", codes=(3,)),
    Case("env-bearer-422-github-file", "env-bearer", 422, fmt="github", to_file=True,
         codes=(3,)),
    Case("url-closed-text", "url", "closed", codes=(3,)),
    Case("url-closed-json", "url", "closed", fmt="json", codes=(3,)),
    Case("env-user-info-closed-sarif", "env-user-info", "closed", fmt="sarif", codes=(3,)),
    Case("url-422-debug", "url", 422, debug=True, codes=(3,)),
    Case("env-bearer-403-debug-junit", "env-bearer", 403, fmt="junit", debug=True, codes=(3,)),
    Case("encode-option-user-info-422", "option-user-info", 422, command="encode", codes=(2,)),
    Case("encode-option-bearer-403", "option-bearer", 403, command="encode", codes=(3,)),
    Case("encode-option-url-closed", "option-url", "closed", command="encode", codes=(3,)),
    Case("encode-env-user-info-422-debug", "env-user-info", 422, command="encode", debug=True,
         codes=(2,)),
    Case("decode-option-user-info-422", "option-user-info", 422, command="decode", codes=(2,)),
    Case("decode-option-bearer-403", "option-bearer", 403, command="decode", codes=(3,)),
]


def _command(case: Case, base_url: str, out_file: Path, schema: Path) -> tuple[list[str],
                                                                           dict[str, str]]:
    env = dict(case.extra_env)
    url = base_url
    if case.creds == "url" or case.creds == "option-url":
        url = f"http://{quote(USER)}:{quote(PASSWORD, safe='')}@{_host(base_url)}"
    elif case.creds == "env-user-info":
        env["KEYGUARD_REGISTRY_USER_INFO"] = USER_INFO
    elif case.creds == "env-bearer":
        env["KEYGUARD_REGISTRY_BEARER_TOKEN"] = TOKEN
    args = ["--debug"] if case.debug else []
    if case.command == "check":
        args += ["check", "--topic", "t", "--registry", url, "--key-schema", str(schema),
                 "--format", case.fmt]
        if case.to_file:
            args += ["--output", str(out_file)]
        return args, env
    prefix = "key.avro-confluent."
    options = ["-o", f"{prefix}url={url}"]
    if case.creds == "option-user-info":
        options += ["-o", f"{prefix}basic-auth.user-info={USER_INFO}"]
    elif case.creds == "option-bearer":
        options += ["-o", f"{prefix}bearer-auth.token={TOKEN}"]
    table = ["--columns", "id INT", "--primary-key", "id", "--key-format", "avro-confluent",
             "--value-format", "json"]
    if case.command == "encode":
        return [*args, "encode", "--row", '{"id": 1}', *table, *options], env
    return [*args, "decode", "--key", "000000000102", "--value", "7b7d", *table, *options], env


def _server_url(case: Case, echo_registry: Any, closed_port: int) -> str:
    if case.server == "closed":
        return f"http://127.0.0.1:{closed_port}"
    echo_registry.state.echo_status = case.server
    return str(echo_registry.url)


def _check_document(fmt: str, text: str, code: int) -> None:
    """The error document of a machine format is there, parses, and says the exit code."""
    if fmt == "json":
        doc = json.loads(text)
        assert doc["verdict"] == "error" and doc["error"]["exit_code"] == code
    elif fmt == "sarif":
        run = json.loads(text)["runs"][0]
        assert run["invocations"][0]["executionSuccessful"] is False
    elif fmt == "junit":
        assert ET.fromstring(text).find(".//testcase/error") is not None
    elif fmt == "github":
        assert text.startswith("::error title=keyguard::")


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.id for c in CLI_CASES])
def test_cli_in_process(case: Case, echo_registry: Any, closed_port: int, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    from keyguard.guard.cli.common import DEBUG

    monkeypatch.setitem(DEBUG, "on", case.debug)
    schema = tmp_path / "k.avsc"
    schema.write_text(KEY_SCHEMA)
    out_file = tmp_path / "report.out"
    args, env = _command(case, _server_url(case, echo_registry, closed_port), out_file, schema)
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code in case.codes, result.output
    assert "keyguard: error (" in result.stderr, result.stderr
    written = out_file.read_text() if out_file.exists() else ""
    assert_clean(result.stdout, result.stderr, written)
    if case.fmt != "text":
        _check_document(case.fmt, written if case.to_file else result.stdout, result.exit_code)


SUBPROCESS_CASES = [
    Case("sub-env-user-info-422-json", "env-user-info", 422, fmt="json", codes=(3,)),
    Case("sub-url-closed-debug", "url", "closed", debug=True, codes=(3,)),
    Case("sub-env-bearer-403-sarif-debug-env", "env-bearer", 403, fmt="sarif", codes=(3,),
         extra_env={"KEYGUARD_DEBUG": "1"}),
    Case("sub-encode-option-user-info-422", "option-user-info", 422, command="encode",
         codes=(2,)),
]


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=[c.id for c in SUBPROCESS_CASES])
def test_cli_subprocess(case: Case, echo_registry: Any, closed_port: int,
                        tmp_path: Path) -> None:
    schema = tmp_path / "k.avsc"
    schema.write_text(KEY_SCHEMA)
    args, env = _command(case, _server_url(case, echo_registry, closed_port),
                         tmp_path / "report.out", schema)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KEYGUARD_")}
    environ.update(env, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "keyguard.guard.cli", *args], capture_output=True,
                          text=True, env=environ, cwd=tmp_path, timeout=120)
    assert proc.returncode in case.codes, proc.stderr
    assert_clean(proc.stdout, proc.stderr)
    if case.fmt != "text":
        _check_document(case.fmt, proc.stdout, proc.returncode)


# -- Kafka credentials (a closed port) ------------------------------------------------------

KAFKA_CASES = [
    ("sasl-password-option", ["--kafka-config", f"sasl.password={SASL_PASSWORD}"], {}),
    ("sasl-password-env", [], {"KEYGUARD_KAFKA_SASL_PASSWORD": SASL_PASSWORD}),
    ("sasl-jaas-config-option", ["--kafka-config", f"sasl.jaas.config={JAAS}"], {}),
]


@pytest.mark.usefixtures("dead_broker_deadline")
@pytest.mark.parametrize("extra,env", [c[1:] for c in KAFKA_CASES],
                         ids=[c[0] for c in KAFKA_CASES])
def test_kafka_credentials(extra: list[str], env: dict[str, str], closed_port: int,
                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from keyguard.guard.cli.common import DEBUG

    monkeypatch.setitem(DEBUG, "on", True)  # tracebacks too, if it crashes
    out_file = tmp_path / "report.json"
    args = ["check", "--topic", "pageviews_per_region", "--registry",
            f"file://{REPO / 'schemas'}", "--bootstrap", f"127.0.0.1:{closed_port}",
            "--kafka-config", "security.protocol=SASL_PLAINTEXT",
            "--kafka-config", "sasl.mechanism=PLAIN", "--kafka-config", "sasl.username=svc",
            *extra, "--format", "json", "--output", str(out_file)]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code in (2, 3, EXIT_INTERNAL), result.output
    assert json.loads(out_file.read_text())["verdict"] == "error"
    assert_clean(result.stdout, result.stderr, out_file.read_text())


# -- exceptions, as a library caller (and Spark) sees them -----------------------------------


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _exception_texts(exc: BaseException) -> list[str]:
    texts = ["".join(traceback.format_exception(exc))]
    for e in _chain(exc):
        texts += [str(e), repr(e), repr(e.args), str(getattr(e, "hint", ""))]
    return texts


LIBRARY_CASES = [
    ("url-user-info", lambda url: (url.replace("://", f"://{quote(USER)}:"
                                               f"{quote(PASSWORD, safe='')}@"), {}, {})),
    ("option-user-info", lambda url: (url, {"basic-auth.user-info": USER_INFO}, {})),
    ("option-bearer", lambda url: (url, {"bearer-auth.token": TOKEN}, {})),
    ("env-user-info", lambda url: (url, {}, {"KEYGUARD_REGISTRY_USER_INFO": USER_INFO})),
    ("property-user-info", lambda url: (url, {"properties.basic.auth.user.info": USER_INFO,
                                              "basic-auth.credentials-source": "USER_INFO"},
                                        {})),
]


@pytest.mark.parametrize("status", [422, 403])
@pytest.mark.parametrize("make", [c[1] for c in LIBRARY_CASES], ids=[c[0] for c in LIBRARY_CASES])
def test_library_exceptions(make: Any, status: int, echo_registry: Any) -> None:
    from keyguard.formats.registry.connect import open_registry

    echo_registry.state.echo_status = status
    url, config, environ = make(str(echo_registry.url))
    registry = open_registry(url, config, environ=environ)
    with pytest.raises(KeyguardError) as info:
        registry.versions("t-key")
    assert_clean(*_exception_texts(info.value), repr(registry))
    # what Spark does with an error raised in a task: pickle it to the driver
    assert_clean(*_exception_texts(pickle.loads(pickle.dumps(info.value))))


def test_error_message_in_a_fresh_process_is_redacted_by_shape() -> None:
    """A Spark executor registered nothing: a header echoed into a message is still removed."""
    header = f"Basic {base64.b64encode(USER_INFO.encode()).decode()}"
    code = ("import sys; from keyguard.formats.errors import RegistryError; "
            "e = RegistryError(sys.argv[1], hint=sys.argv[2]); print(str(e)); print(repr(e))")
    proc = subprocess.run(
        [sys.executable, "-c", code, f"proxy said Authorization: {header}",
         f"retry with Bearer {TOKEN}"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "proxy said Authorization: ***" in proc.stdout
    assert_clean(proc.stdout, proc.stderr)


# -- crashes, --debug tracebacks and log records --------------------------------------------


def _crashing_app() -> typer.Typer:
    crash = typer.Typer()

    @crash.command()
    @handles_errors
    def boom(registry: Annotated[str, typer.Option()],
             fmt: Annotated[str, typer.Option("--format")] = "text",
             output: Annotated[Path | None, typer.Option("--output")] = None) -> None:
        try:
            raise ValueError(f"inner {registry} with {base64.b64encode(USER_INFO.encode())!r}")
        except ValueError as inner:
            raise RuntimeError(f"outer {USER_INFO} {quote(PASSWORD)}") from inner

    return crash


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit", "github"])
@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
def test_crash_lines_tracebacks_and_documents(fmt: str, debug: bool, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from keyguard.guard.cli.common import DEBUG

    monkeypatch.setitem(DEBUG, "on", debug)
    url = f"http://{quote(USER)}:{quote(PASSWORD, safe='')}@registry:8081"
    out_file = tmp_path / "crash.out"
    result = CliRunner().invoke(_crashing_app(), ["--registry", url, "--format", fmt,
                                                  "--output", str(out_file)],
                                env={"KEYGUARD_REGISTRY_USER_INFO": USER_INFO})
    assert result.exit_code == EXIT_INTERNAL
    assert "keyguard failed: RuntimeError" in result.stderr
    assert ("Traceback" in result.stderr) is debug
    written = out_file.read_text() if out_file.exists() else ""
    if fmt != "text":
        _check_document(fmt, written, EXIT_INTERNAL)
    assert_clean(result.stdout, result.stderr, written)


@pytest.mark.parametrize("logger", ["keyguard.kafka", "keyguard.sparkio", "keyguard"])
def test_log_records(logger: str, caplog: pytest.LogCaptureFixture) -> None:
    import keyguard.guard.topic  # noqa: F401  (creates keyguard.kafka)
    from keyguard.formats.secrets import register_secret

    register_secret(USER_INFO)
    register_secret(SASL_PASSWORD)
    header = base64.b64encode(USER_INFO.encode()).decode()
    with caplog.at_level(logging.DEBUG, logger=logger):
        logging.getLogger(logger).warning("auth %s / %s / %s failed", header,
                                          quote_plus(SASL_PASSWORD), json.dumps(PASSWORD))
        try:
            raise RuntimeError(f"with {SASL_PASSWORD}")
        except RuntimeError:
            logging.getLogger(logger).exception("crash for %s", USER_INFO)
    assert "auth *** / *** / \"***\" failed" in caplog.text
    assert_clean(caplog.text, *(r.getMessage() for r in caplog.records))


def test_redact_removes_every_spelling_of_registered_secrets() -> None:
    from keyguard.formats.secrets import register_secret

    for s in (USER_INFO, TOKEN, SASL_PASSWORD):
        register_secret(s)
    text = " | ".join(FORBIDDEN)
    wrapped = base64.encodebytes(("x" * 40 + USER_INFO).encode()).decode()  # MIME line wrap
    assert_clean(redact(text), redact(wrapped))
    assert redact("no secret here: Basic authentication, Bearer token") == \
        "no secret here: Basic authentication, Bearer token"
