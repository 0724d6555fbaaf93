"""Bad registry and Kafka settings, one row each: the exit code, the error's kind, no traceback.

Registries that are not there (exit 3, never "no versions yet"), malformed or unsupported URLs,
bad credentials, registry options that nothing would use, bad librdkafka properties, bad TOML
config files, and subjects that a gate requires (exit 1 with KG015). The HTTP rows run against
the fake registry of tests/formats/registry/conftest.py, over real HTTP.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from badinput import assert_rejected, run_cli

REPO = Path(__file__).resolve().parents[2]
K = str(REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc")
V = str(REPO / "schemas/subjects/pageviews_per_region-value/v1.avsc")
REG = f"file://{REPO / 'schemas'}"
TOPIC = "pageviews_per_region"
SECRET = "s3cr3t-Never-Shown"

CHECK = ["check", "--topic", TOPIC, "--key-schema", K, "--value-schema", V]
CHECK_KEY = ["check", "--topic", TOPIC, "--key-schema", K, "--value-format", ""]
ROW = ["--columns", "user_region STRING", "--primary-key", "user_region"]
ENCODE = ["encode", "--row", '{"user_region":"a"}', "--topic", TOPIC, *ROW,
          "--key-format", "avro-confluent", "--value-format", "json"]
# An avro-confluent key framed with schema id 7 ("a" as an Avro string).
DECODE = ["decode", "--key", "00000000070261", "--topic", TOPIC, *ROW,
          "--key-format", "avro-confluent", "--value-format", "json"]
FAST = ["-o", "key.avro-confluent.retries=0", "-o", "key.avro-confluent.timeout=2s"]
KAFKA = ["--bootstrap", "127.0.0.1:1"]

UNAVAILABLE = (3, "registry-unavailable")
OPTION = (2, "invalid-option")
USAGE = (2, "usage")

# (id, args, env, (exit code, kind), the stderr must say)
URL_ROWS: list[tuple[str, list[str], dict[str, str], tuple[int, str], str]] = [
    ("file-missing-abs", [*CHECK, "--registry", "file:///nonexistent/dir"], {}, UNAVAILABLE,
     "/nonexistent/dir does not exist"),
    ("file-missing-tmp", [*CHECK, "--registry", "file://{MISSING}"], {}, UNAVAILABLE,
     "does not exist"),
    ("bare-path-missing", [*CHECK, "--registry", "{MISSING}"], {}, UNAVAILABLE,
     "does not exist"),
    ("file-is-a-file", [*CHECK, "--registry", f"file://{K}"], {}, UNAVAILABLE,
     "is not a directory"),
    ("bare-path-is-a-file", [*CHECK, "--registry", K], {}, UNAVAILABLE, "is not a directory"),
    ("file-foreign-dir", [*CHECK, "--registry", "file://{FOREIGN}"], {}, UNAVAILABLE,
     "layout"),
    ("file-subjects-is-a-file", [*CHECK, "--registry", "file://{SUBJECTS_FILE}"], {},
     UNAVAILABLE, "is not a directory"),
    ("file-missing-key-only", [*CHECK_KEY, "--registry", "file://{MISSING}"], {}, UNAVAILABLE,
     "does not exist"),
    ("http-wrong-path", [*CHECK, "--registry", "{HTTP}/nope"], {}, UNAVAILABLE, "/nope"),
    ("http-wrong-path-key-only", [*CHECK_KEY, "--registry", "{HTTP}/nope"], {}, UNAVAILABLE,
     "/nope"),
    ("http-html-page", [*CHECK, "--registry", "{HTTP}/html"], {}, UNAVAILABLE, "/html"),
    ("http-wrong-path-subject-source", ["check", "--topic", TOPIC, "--key-schema",
     "subject:x-key", "--registry", "{HTTP}/nope"], {}, UNAVAILABLE, "/nope"),
    ("http-closed-port", [*CHECK, *FAST, "--registry", "{CLOSED}"], {}, UNAVAILABLE,
     "could not be reached"),
    ("http-closed-port-config", ["check", "--config", "{CFG}"], {}, UNAVAILABLE,
     "could not be reached"),
    ("ipv6-unclosed", [*CHECK, "--registry", f"http://bob:{SECRET}@[::1"], {}, OPTION,
     "malformed"),
    ("port-out-of-range", [*CHECK, "--registry", "http://localhost:99999"], {}, OPTION,
     "malformed"),
    ("port-not-a-number", [*CHECK, "--registry", "http://localhost:abc"], {}, OPTION,
     "malformed"),
    ("no-host", [*CHECK, "--registry", "http://"], {}, OPTION, "has no host"),
    ("no-host-path", [*CHECK, "--registry", "https:///subjects"], {}, OPTION, "has no host"),
    ("scheme-ftp", [*CHECK, "--registry", f"ftp://u:{SECRET}@host/x"], {}, OPTION,
     "not supported"),
    ("scheme-gopher", [*CHECK, "--registry", "gopher://host"], {}, OPTION, "not supported"),
    ("blank-url", [*CHECK, "--registry", "   "], {}, OPTION, "no schema registry"),
    ("mock-with-timeout", [*CHECK, "--registry", "mock://x", "-o",
     "key.avro-confluent.timeout=5s"], {}, OPTION, "used only by an HTTP registry"),
    ("file-with-user-info", [*CHECK, "--registry", REG, "-o",
     f"key.avro-confluent.basic-auth.user-info=u:{SECRET}"], {}, OPTION,
     "used only by an HTTP registry"),
    ("file-with-retries", [*CHECK, "--registry", REG, "-o", "value.avro-confluent.retries=2"],
     {}, OPTION, "value.avro-confluent.retries"),
    ("two-registries", [*CHECK, "--registry", REG, "-o",
     "key.avro-confluent.url=http://elsewhere:8081"], {}, OPTION, "two registries"),
    ("key-value-urls-differ", [*CHECK, "-o", "key.avro-confluent.url=http://a:8081", "-o",
     "value.avro-confluent.url=http://b:8081"], {}, OPTION, "two registries"),
    ("key-value-timeouts-differ", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.timeout=1s", "-o", "value.avro-confluent.timeout=2s"], {}, OPTION,
     "disagree"),
]

CREDENTIAL_ROWS: list[tuple[str, list[str], dict[str, str], tuple[int, str], str]] = [
    ("env-token-control-char", [*CHECK, "--registry", "{HTTP}"],
     {"KEYGUARD_REGISTRY_BEARER_TOKEN": f"{SECRET}\x01"}, OPTION, "not a valid credential"),
    ("env-token-inner-newline", [*CHECK, "--registry", "{HTTP}"],
     {"KEYGUARD_REGISTRY_BEARER_TOKEN": f"{SECRET}\nX-Evil: 1"}, OPTION,
     "not a valid credential"),
    ("env-user-info-escape", [*CHECK, "--registry", "{HTTP}"],
     {"KEYGUARD_REGISTRY_USER_INFO": f"bob:{SECRET}\x1b"}, OPTION, "not a valid credential"),
    ("env-user-info-non-ascii", [*CHECK, "--registry", "{HTTP}"],
     {"KEYGUARD_REGISTRY_USER_INFO": f"bob:{SECRET}é"}, OPTION, "non-ASCII"),
    ("option-token-inner-tab", [*CHECK, "--registry", "{HTTP}", "-o",
     f"key.avro-confluent.bearer-auth.token={SECRET}\tx"], {}, OPTION,
     "not a valid credential"),
    ("option-user-info-non-ascii", [*CHECK, "--registry", "{HTTP}", "-o",
     f"key.avro-confluent.basic-auth.user-info=bob:{SECRET}ü"], {}, OPTION, "non-ASCII"),
    ("option-user-info-no-colon", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.basic-auth.user-info=bob"], {}, OPTION, "user:password"),
    ("url-user-info-control", [*CHECK, "--registry", "http://bob:pw%01x@127.0.0.1:1"], {},
     OPTION, "not a valid credential"),
    ("source-bogus", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.basic-auth.credentials-source=BOGUS"], {}, OPTION, "credentials-source"),
    ("bearer-source-custom", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.bearer-auth.credentials-source=CUSTOM"], {}, OPTION, "not supported"),
    ("source-url-without-info", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.basic-auth.credentials-source=URL"], {}, OPTION, "user:password@"),
    ("source-user-info-missing", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.basic-auth.credentials-source=USER_INFO"], {}, OPTION,
     "no user info"),
    ("source-sasl-inherit-missing", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.basic-auth.credentials-source=SASL_INHERIT"], {}, OPTION,
     "SASL_INHERIT"),
    ("basic-and-bearer-options", [*CHECK, "--registry", "{HTTP}", "-o",
     f"key.avro-confluent.basic-auth.user-info=bob:{SECRET}", "-o",
     f"key.avro-confluent.bearer-auth.token={SECRET}"], {}, OPTION, "both basic and bearer"),
    ("url-info-and-user-info", [*CHECK, "--registry", f"http://bob:{SECRET}@127.0.0.1:1",
     "-o", f"key.avro-confluent.basic-auth.user-info=carol:{SECRET}"], {}, OPTION,
     "both in the URL"),
    ("timeout-not-a-duration", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.timeout=forever"], {}, OPTION, "timeout"),
    ("retries-not-a-number", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.retries=many"], {}, OPTION, "retries"),
    ("unknown-registry-option", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.retry-count=3"], {}, OPTION, "retry-count"),
    ("truststore-missing", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.ssl.truststore.location=/no/such/ca.pem"], {}, OPTION,
     "cannot be read"),
    ("client-property-not-a-number", [*CHECK, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.properties.max.retries=many"], {}, OPTION, "must be a number"),
    ("diff-registry-option", ["diff", "--key", "--key-format", "avro-confluent", "-o",
     "timeout=5s", K, K], {}, OPTION, "would not be used"),
    ("diff-registry-url", ["diff", "--key", "--key-format", "avro-confluent", "-o",
     "url=http://127.0.0.1:1", K, K], {}, OPTION, "would not be used"),
    ("diff-new-option-user-info", ["diff", "--key", "--key-format", "avro-confluent",
     "--new-option", f"basic-auth.user-info=bob:{SECRET}", K, K], {}, OPTION,
     "would not be used"),
]

BYTES_ROWS: list[tuple[str, list[str], dict[str, str], tuple[int, str], str]] = [
    ("encode-http-wrong-path", [*ENCODE, "--registry", "{HTTP}/nope"], {}, UNAVAILABLE,
     "/nope"),
    ("encode-http-html", [*ENCODE, "--registry", "{HTTP}/html"], {}, UNAVAILABLE, "/html"),
    ("encode-value-wrong-path", ["encode", "--row", '{"user_region":"a"}', "--topic", TOPIC,
     *ROW, "--key-format", "json", "--value-format", "avro-confluent", "-o",
     "value.fields-include=ALL", "--registry", "{HTTP}/nope"], {}, UNAVAILABLE, "/nope"),
    ("encode-closed-port", [*ENCODE, *FAST, "--registry", "{CLOSED}"], {}, UNAVAILABLE,
     "could not be reached"),
    ("encode-ipv6-unclosed", [*ENCODE, "--registry", f"http://bob:{SECRET}@[::1"], {},
     OPTION, "malformed"),
    ("encode-scheme-ftp", [*ENCODE, "--registry", "ftp://host"], {}, OPTION, "not supported"),
    ("encode-file-with-timeout", [*ENCODE, "--registry", "file://{MISSING}", "-o",
     "key.avro-confluent.timeout=1s"], {}, OPTION, "used only by an HTTP registry"),
    ("encode-two-registries", [*ENCODE, "--registry", "{HTTP}", "-o",
     "key.avro-confluent.url=http://elsewhere:8081"], {}, OPTION, "two registries"),
    ("encode-bad-env-token", [*ENCODE, "--registry", "{HTTP}"],
     {"KEYGUARD_REGISTRY_BEARER_TOKEN": f"{SECRET}\x02"}, OPTION, "not a valid credential"),
    ("decode-file-missing", [*DECODE, "--registry", "file://{MISSING}"], {}, UNAVAILABLE,
     "does not exist"),
    ("decode-file-is-a-file", [*DECODE, "--registry", f"file://{K}"], {}, UNAVAILABLE,
     "is not a directory"),
    ("decode-http-wrong-path", [*DECODE, "--registry", "{HTTP}/nope"], {}, UNAVAILABLE,
     "/nope"),
    ("decode-http-html", [*DECODE, "--registry", "{HTTP}/html"], {}, UNAVAILABLE, "/html"),
    ("decode-malformed-url", [*DECODE, "--registry", "http://h:port"], {}, OPTION,
     "malformed"),
]

KAFKA_ROWS: list[tuple[str, list[str], dict[str, str], tuple[int, str], str]] = [
    ("kafka-config-no-equals", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config", "nokv"],
     {}, USAGE, "not KEY=VALUE"),
    ("kafka-config-empty-key", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config", "=v"],
     {}, USAGE, "not KEY=VALUE"),
    ("kafka-config-jaas", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config",
     f'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
     f'username="bob" password="{SECRET}";'], {}, OPTION, "sasl.jaas.config"),
    ("kafka-config-unknown", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config",
     "no.such.property=1"], {}, OPTION, "no.such.property"),
    ("kafka-config-bad-protocol", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config",
     f"security.protocol={SECRET}"], {}, OPTION, "security.protocol"),
    ("kafka-config-bad-number", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config",
     "socket.timeout.ms=soon"], {}, OPTION, "socket.timeout.ms"),
    ("kafka-config-sasl-no-user", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config",
     "security.protocol=SASL_PLAINTEXT", "--kafka-config", "sasl.mechanism=PLAIN"], {}, OPTION,
     "sasl.username"),
    ("kafka-config-without-bootstrap", [*CHECK, "--registry", REG, "--kafka-config",
     "security.protocol=SSL"], {}, USAGE, "--bootstrap"),
    ("kafka-config-two-bootstraps", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config",
     "bootstrap.servers=other:9092"], {}, USAGE, "disagree"),
    ("kafka-config-sasl-without-sasl", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config",
     f"sasl.password={SECRET}"], {}, OPTION, "sasl.password would not be used"),
    ("kafka-config-ssl-without-ssl", [*CHECK, "--registry", REG, *KAFKA, "--kafka-config",
     "security.protocol=SASL_PLAINTEXT", "--kafka-config", "ssl.ca.location=/ca.pem",
     "--kafka-config", "sasl.mechanism=PLAIN"], {}, OPTION, "ssl.ca.location"),
    ("kafka-env-bad-protocol", [*CHECK, "--registry", REG, *KAFKA], {
        "KEYGUARD_KAFKA_SECURITY_PROTOCOL": "BOGUS"}, OPTION, "security.protocol"),
    ("kafka-env-unknown", [*CHECK, "--registry", REG, *KAFKA], {
        "KEYGUARD_KAFKA_NO_SUCH_THING": "1"}, OPTION, "no.such.thing"),
    ("kafka-config-file-bad-protocol", ["check", "--config", "{CFG}", *KAFKA], {}, OPTION,
     "security.protocol"),
]

CONFIGS: dict[str, str] = {
    "http-closed-port-config": 'registry = "{CLOSED}"\n[registry]\n',  # replaced below
    "kafka-config-file-bad-protocol": (
        'registry = "{REG}"\n[kafka]\n"security.protocol" = "BOGUS"\n'
        '[[topics]]\nname = "pageviews_per_region"\nvalue-format = false\n'),
}
CONFIGS["http-closed-port-config"] = (
    '[registry]\nurl = "{CLOSED}"\nretries = 0\ntimeout = "2s"\n'
    '[[topics]]\nname = "pageviews_per_region"\nvalue-format = false\n')

TOML_ROWS: list[tuple[str, str, tuple[int, str], str]] = [
    ("syntax-missing-value", 'registry = \n', OPTION, "not valid TOML"),
    ("syntax-unclosed-table", '[[topics]\nname = "t"\n', OPTION, "not valid TOML"),
    ("syntax-unclosed-string", 'registry = "file://x\n', OPTION, "not valid TOML"),
    ("syntax-duplicate-key", 'registry = "a"\nregistry = "b"\n', OPTION, "not valid TOML"),
    ("unknown-top-key", 'registri = "file://schemas"\n', OPTION, "did you mean registry"),
    ("unknown-topic-key", '[[topics]]\nname = "t"\nkey-schem = "k.avsc"\n', OPTION,
     "key-schem"),
    ("scan-limit-string", 'scan-limit = "10"\n', OPTION, "scan-limit must be an integer"),
    ("scan-limit-float", 'scan-limit = 10.5\n', OPTION, "scan-limit"),
    ("scan-limit-negative", 'scan-limit = -1\n', OPTION, "must not be negative"),
    ("scan-limit-bool", 'scan-limit = true\n', OPTION, "scan-limit must be an integer"),
    ("require-subject-string", 'require-subject = "yes"\n', OPTION,
     "require-subject must be a boolean"),
    ("topics-not-array", 'topics = "t"\n', OPTION, "topics must be"),
    ("topic-not-table", 'topics = ["t"]\n', OPTION, "must be a table"),
    ("topic-name-number", '[[topics]]\nname = 5\n', OPTION, "name must be a string"),
    ("topic-no-name", '[[topics]]\nkey-format = "json"\n', OPTION, "needs a name"),
    ("topic-partitions-string", '[[topics]]\nname = "t"\npartitions = "6"\n', OPTION,
     "partitions must be an integer"),
    ("topic-partitions-zero", '[[topics]]\nname = "t"\npartitions = 0\n', OPTION,
     "at least 1"),
    ("topic-require-subject-number", '[[topics]]\nname = "t"\nrequire-subject = 1\n', OPTION,
     "require-subject must be a boolean"),
    ("topic-options-not-table", '[[topics]]\nname = "t"\noptions = "x"\n', OPTION,
     "options must be a table"),
    ("topic-option-nested", '[[topics]]\nname = "t"\n[topics.options]\n'
     '"key.avro-confluent.timeout" = {a = 1}\n', OPTION, "must be strings"),
    ("topic-value-format-true", '[[topics]]\nname = "t"\nvalue-format = true\n', OPTION,
     "value-format"),
    ("kafka-secret", '[kafka]\n"sasl.password" = "' + SECRET + '"\n', OPTION,
     "secrets do not belong"),
    ("kafka-not-table", 'kafka = "x"\n', OPTION, "kafka must be a table"),
    ("kafka-nested", '[kafka]\n"security.protocol" = {a = 1}\n', OPTION, "flat"),
    ("registry-number", 'registry = 5\n', OPTION, "registry must be a string or a table"),
    ("registry-table-no-url", '[registry]\ntimeout = "5s"\n', OPTION, "needs url"),
    ("registry-table-secret", '[registry]\nurl = "http://h:8081"\n'
     '"basic-auth.user-info" = "bob:' + SECRET + '"\n', OPTION, "secrets do not belong"),
    ("registry-table-unknown", '[registry]\nurl = "http://h:8081"\nbogus = 1\n', OPTION,
     "bogus"),
    ("registry-table-bad-timeout", '[registry]\nurl = "http://h:8081"\ntimeout = "soon"\n',
     OPTION, "timeout"),
    ("bootstrap-number", 'bootstrap = 9092\n', OPTION, "bootstrap must be a string"),
    ("not-utf8", "\udcff", OPTION, "not UTF-8"),
    ("file-registry-with-timeout", '[registry]\nurl = "{REG}"\ntimeout = "5s"\n'
     '[[topics]]\nname = "pageviews_per_region"\n', OPTION, "used only by an HTTP registry"),
    ("file-registry-missing", 'registry = "file:///nonexistent/keyguard"\n'
     '[[topics]]\nname = "pageviews_per_region"\n', UNAVAILABLE, "does not exist"),
]

# Subjects a gate demands: exit 1 with KG015 (a finding, not an error).
REQUIRED_ROWS: list[tuple[str, list[str], str | None]] = [
    ("typo-topic-flag", ["check", "--topic", "pageviews_per_regoin", "--key-schema", K,
     "--value-schema", V, "--registry", REG, "--require-subject"], None),
    ("typo-topic-key-only", ["check", "--topic", "pagevews", "--key-schema", K,
     "--value-format", "", "--registry", REG, "--require-subject"], None),
    ("missing-value-subject", ["check", "--topic", "other", "--key-schema", K, "--value-schema",
     V, "--registry", REG, "--require-subject", "-o",
     "key.avro-confluent.subject=pageviews_per_region-key"], None),
    ("config-global", ["check", "--config", "{CFG}"],
     'registry = "{REG}"\nrequire-subject = true\n[[topics]]\nname = "pageviews_per_regio"\n'
     'value-format = false\n'),
    ("config-per-topic", ["check", "--config", "{CFG}"],
     'registry = "{REG}"\n[[topics]]\nname = "pageviews"\nrequire-subject = true\n'
     'value-format = false\n'),
    ("config-and-flag", ["check", "--config", "{CFG}", "--require-subject"],
     'registry = "{REG}"\n[[topics]]\nname = "pageviews"\nrequire-subject = false\n'
     'value-format = false\n'),
    ("http-missing-subject", ["check", "--topic", "nosuch", "--key-schema", K,
     "--value-format", "", "--registry", "{HTTP}", "--require-subject"], None),
]


@pytest.fixture(scope="module")
def http_registry() -> Iterator[str]:
    path = REPO / "tests/formats/registry/conftest.py"
    spec = importlib.util.spec_from_file_location("keyguard_fake_registry", path)
    assert spec is not None and spec.loader is not None
    fake_module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fake_module  # its dataclasses look their module up
    spec.loader.exec_module(fake_module)
    fake = fake_module._start()
    yield fake.url
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def places(tmp_path: Path, http_registry: str) -> dict[str, str]:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "main.py").write_text("print('not a registry')\n")
    subjects_file = tmp_path / "subjects-file"
    subjects_file.mkdir()
    (subjects_file / "subjects").write_text("oops\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    return {"MISSING": str(tmp_path / "missing"), "FOREIGN": str(foreign),
            "SUBJECTS_FILE": str(subjects_file), "HTTP": http_registry, "CLOSED": closed,
            "REG": REG, "TMP": str(tmp_path)}


def _fill(text: str, places: dict[str, str]) -> str:
    for name, value in places.items():
        text = text.replace("{" + name + "}", value)
    return text


def _config(tmp_path: Path, places: dict[str, str], text: str) -> str:
    path = tmp_path / "keyguard.toml"
    if text == "\udcff":
        path.write_bytes(b'registry = "\xff\xfe"\n')
    else:
        path.write_text(_fill(text, places), encoding="utf-8")
    return str(path)


def _no_secret(output: str) -> None:
    import base64
    from urllib.parse import quote

    for form in (SECRET, quote(SECRET), base64.b64encode(f"bob:{SECRET}".encode()).decode()):
        assert form not in output, output


ROWS = URL_ROWS + CREDENTIAL_ROWS + BYTES_ROWS + KAFKA_ROWS


@pytest.mark.parametrize(("args", "env", "expected", "says"),
                         [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_bad_registry_and_kafka_settings(places: dict[str, str], tmp_path: Path,
                                         request: pytest.FixtureRequest, args: list[str],
                                         env: dict[str, str], expected: tuple[int, str],
                                         says: str) -> None:
    row_id = request.node.callspec.id
    filled = [_fill(a, places) for a in args]
    if "{CFG}" in args:
        filled[filled.index("{CFG}")] = _config(tmp_path, places, CONFIGS[row_id])
    code, kind = expected
    out = assert_rejected(filled, code, kind, env=env, says=_fill(says, places))
    _no_secret(out.output)


@pytest.mark.parametrize(("text", "expected", "says"),
                         [pytest.param(*r[1:], id=r[0]) for r in TOML_ROWS])
def test_bad_config_files(places: dict[str, str], tmp_path: Path, text: str,
                          expected: tuple[int, str], says: str) -> None:
    path = _config(tmp_path, places, text)
    code, kind = expected
    args = ["check", "--config", path]
    if "[[topics]]" not in text:
        args += ["--topic", TOPIC, "--key-schema", K, "--value-format", ""]
    out = assert_rejected(args, code, kind, says=says)
    if code == 2 and "not UTF-8" not in says:
        assert path in out.stderr  # the message names the file
    _no_secret(out.output)


@pytest.mark.parametrize(("args", "config"), [pytest.param(*r[1:], id=r[0])
                                              for r in REQUIRED_ROWS])
def test_a_required_subject_that_is_missing_is_breaking(places: dict[str, str],
                                                        tmp_path: Path, args: list[str],
                                                        config: str | None) -> None:
    filled = [_fill(a, places) for a in args]
    if config is not None:
        filled[filled.index("{CFG}")] = _config(tmp_path, places, config)
    out = run_cli([*filled, "--format", "json"])
    assert "Traceback" not in out.output
    assert out.code == 1, out.output
    import json

    report: dict[str, Any] = json.loads(out.stdout)
    rules = [f["rule"]["id"] for f in report["findings"]]
    assert "KG015" in rules, rules


def test_the_row_count_meets_the_share() -> None:
    assert len(ROWS) + len(TOML_ROWS) + len(REQUIRED_ROWS) >= 60
