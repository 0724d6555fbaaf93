"""keyguard.formats.registry.settings: one path and one precedence for registry and Kafka
settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from keyguard.formats.errors import InvalidOptionError, RegistryUnavailableError
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.registry.settings import registry_options_of, resolve_kafka, resolve_registry
from keyguard.guard.cli import app

REPO = Path(__file__).resolve().parents[3]
KEY = str(REPO / "schemas/subjects/pageviews_per_region-key/v1.avsc")


def test_explicit_beats_config_file_beats_default() -> None:
    s = resolve_registry(explicit_url="http://a:1", explicit_options={"timeout": "1s"},
                         configured_url="http://b:2",
                         configured_options={"timeout": "9s", "retries": 7},
                         default_url="file://schemas")
    assert s.url == "http://a:1"
    assert s.options == {"timeout": "1s", "retries": 7}
    assert resolve_registry(configured_url="http://b:2", default_url="x").url == "http://b:2"
    assert resolve_registry(default_url="file://schemas").url == "file://schemas"


def test_unknown_and_unusable_registry_options_are_rejected_by_name() -> None:
    with pytest.raises(InvalidOptionError, match="retry-count"):
        resolve_registry(explicit_url="http://a:1", explicit_options={"retry-count": 3})
    with pytest.raises(InvalidOptionError, match="used only by an HTTP registry"):
        resolve_registry(explicit_url="file://x", explicit_options={"timeout": "1s"})
    with pytest.raises(InvalidOptionError, match="no schema registry"):
        resolve_registry()


def test_key_and_value_options_merge_and_must_agree() -> None:
    url, opts, sources = registry_options_of([
        ("key.avro-confluent.", {"url": "http://a:1", "timeout": "1s", "subject": "s"}),
        ("value.avro-confluent.", {"url": "http://a:1", "timeout": "1s", "retries": 2}),
    ])
    assert (url, opts) == ("http://a:1", {"timeout": "1s", "retries": 2})
    assert sources["retries"] == "value.avro-confluent.retries"
    with pytest.raises(InvalidOptionError, match="disagree") as info:
        registry_options_of([("key.avro-confluent.", {"basic-auth.user-info": "a:SECRETX"}),
                             ("value.avro-confluent.", {"basic-auth.user-info": "b:SECRETY"})])
    assert "SECRET" not in str(info.value)


def test_kafka_explicit_beats_config_file_beats_environment() -> None:
    env = {"KEYGUARD_KAFKA_SASL_PASSWORD": "from-env", "KEYGUARD_KAFKA_SECURITY_PROTOCOL": "SSL",
           "KEYGUARD_KAFKA_": "ignored", "OTHER": "x"}
    props = resolve_kafka(explicit={"security.protocol": "SASL_SSL"},
                          configured={"security.protocol": "PLAINTEXT", "acks": "all"},
                          environ=env)
    assert props == {"sasl.password": "from-env", "security.protocol": "SASL_SSL", "acks": "all"}
    with pytest.raises(InvalidOptionError):
        resolve_kafka(explicit={" bad": "1"}, environ={})


def test_spark_properties_resolve_through_the_same_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from keyguard.sparkio.options import resolve_connector

    monkeypatch.setenv("KEYGUARD_KAFKA_SASL_PASSWORD", "env-pw-123")
    base = {"topic": "t", "primary-key": "id", "key.format": "json", "value.format": "json",
            "properties.bootstrap.servers": "b:9092", "guard.require-subject": "true"}
    conn = resolve_connector(base)
    assert conn.properties["sasl.password"] == "env-pw-123"
    assert "env-pw-123" in conn.secrets()
    assert conn["guard.require-subject"] is True
    explicit = resolve_connector({**base, "properties.sasl.password": "opt-pw"})
    assert explicit.properties["sasl.password"] == "opt-pw"


# --- the file registry's proof ---------------------------------------------------------------


def test_file_registry_empty_state_is_an_existing_directory(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".gitkeep").write_text("")
    (empty / "README.md").write_text("schemas live here\n")
    assert FileRegistry(empty).versions("t-key") == []
    with_subjects = tmp_path / "fresh"
    (with_subjects / "subjects").mkdir(parents=True)
    assert FileRegistry(with_subjects).subjects() == []


@pytest.mark.parametrize("make", ["missing", "file", "foreign", "subjects-file"])
def test_file_registry_that_is_not_one_is_unavailable(tmp_path: Path, make: str) -> None:
    root = tmp_path / "root"
    if make == "file":
        root.write_text("x")
    elif make == "foreign":
        root.mkdir()
        (root / "setup.py").write_text("")
    elif make == "subjects-file":
        root.mkdir()
        (root / "subjects").write_text("")
    reg = FileRegistry(root)
    for call in (reg.subjects, lambda: reg.versions("t-key"), lambda: reg.get_by_id(1),
                 lambda: reg.all_versions("t-key"), lambda: reg.compatibility("t-key")):
        with pytest.raises(RegistryUnavailableError) as info:
            call()
        assert info.value.exit_code == 3 and str(root) in info.value.message


def test_registering_starts_a_missing_file_registry(tmp_path: Path) -> None:
    reg = FileRegistry(tmp_path / "new")
    schema_id = reg.register("t-key", Path(KEY).read_text())
    assert reg.versions("t-key") == [1] and reg.get_by_id(schema_id)[0] == "AVRO"
    started = FileRegistry(tmp_path / "started")
    started.create()
    assert started.subjects() == []


# --- every accepted option is used: over real HTTP ---------------------------------------------


def _check(url: str, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["check", "--topic", "t", "--key-schema", KEY,
                                      "--value-format", "", "--registry", url, *extra],
                                env=env or {})
    return result.exit_code, result.stdout + result.stderr


def test_registry_options_given_with_o_reach_the_registry(registry_server) -> None:
    registry_server.state.basic = ("bob", "pw-42")
    code, out = _check(registry_server.url, "-o", "key.avro-confluent.retries=0")
    assert code == 3 and "HTTP 401" in out
    code, out = _check(registry_server.url, "-o", "key.avro-confluent.retries=0",
                       "-o", "key.avro-confluent.basic-auth.user-info=bob:pw-42")
    assert code == 0, out
    assert "first registration" in out


def test_a_timeout_given_with_o_is_the_one_used(registry_server) -> None:
    registry_server.state.delay = 1.5
    code, out = _check(registry_server.url, "-o", "key.avro-confluent.retries=0",
                       "-o", "key.avro-confluent.timeout=300ms")
    assert code == 3 and "within 0.3s" in out


def test_a_config_files_registry_table_is_used(registry_server, tmp_path: Path) -> None:
    registry_server.state.fail_next = [503, 503]
    cfg = tmp_path / "keyguard.toml"
    cfg.write_text(f'[registry]\nurl = "{registry_server.url}"\nretries = 0\n'
                   '[[topics]]\nname = "t"\nvalue-format = false\n')
    result = CliRunner().invoke(app, ["check", "--config", str(cfg)])
    assert result.exit_code == 3 and "HTTP 503" in result.stderr
    # A topic's own option beats the [registry] table: 2 retries get past both failures.
    registry_server.state.fail_next = [503, 503]
    cfg.write_text(f'[registry]\nurl = "{registry_server.url}"\nretries = 0\n'
                   '"retry-backoff" = "10ms"\n'
                   '[[topics]]\nname = "t"\nvalue-format = false\n'
                   '[topics.options]\n"key.avro-confluent.retries" = 2\n')
    result = CliRunner().invoke(app, ["check", "--config", str(cfg)])
    assert result.exit_code == 0, result.stdout + result.stderr
