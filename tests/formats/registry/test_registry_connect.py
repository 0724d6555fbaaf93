"""open_registry: backend by scheme, and Flink's options mapped onto the client's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from keyguard.formats.errors import InvalidOptionError, RegistryUnavailableError
from keyguard.formats.registry import Registry
from keyguard.formats.registry.connect import (
    ENV_BEARER_TOKEN,
    ENV_USER_INFO,
    REGISTRY_OPTIONS,
    connection_options,
    open_registry,
)
from keyguard.formats.registry.file import FileRegistry
from keyguard.formats.registry.http import HttpRegistry
from keyguard.formats.registry.http_settings import http_client_settings
from keyguard.formats.registry.mock import MockRegistry

PASSWORD = "s3cr3t-PASSWORD"


def settings(config: dict[str, str], url: str = "https://sr:8081", **env: str):
    return http_client_settings(url, config, env)


def test_backend_by_scheme(tmp_path):
    assert isinstance(open_registry(f"file://{tmp_path}"), FileRegistry)
    assert isinstance(open_registry(str(tmp_path)), FileRegistry)
    assert isinstance(open_registry("mock://connect-test"), MockRegistry)
    http = open_registry("http://127.0.0.1:1")
    assert isinstance(http, HttpRegistry)
    for reg in (open_registry(str(tmp_path)), open_registry("mock://x"), http):
        assert isinstance(reg, Registry)
    with pytest.raises(RegistryUnavailableError, match="does not exist") as missing:
        open_registry(str(tmp_path / "missing"))
    assert missing.value.exit_code == 3
    assert isinstance(open_registry(f"file://{tmp_path / 'new'}"), FileRegistry)
    with pytest.raises(InvalidOptionError) as info:
        open_registry(f"ftp://u:{PASSWORD}@host")
    assert PASSWORD not in str(info.value)


def test_defaults_and_timeouts():
    s = settings({})
    assert s.conf == {"url": "https://sr:8081", "timeout": 10.0, "max.retries": 3,
                      "retries.wait.ms": 1000, "retries.max.wait.ms": 20_000}
    s = settings({"timeout": "2 s", "retries": "5", "retry-backoff": "50ms",
                  "retry-backoff-max": "1s", "properties.cache.capacity": "10"})
    assert (s.conf["timeout"], s.conf["max.retries"], s.conf["retries.wait.ms"],
            s.conf["retries.max.wait.ms"], s.conf["cache.capacity"]) == (2.0, 5, 50, 1000, 10)
    # properties.* fill in what the options leave unset; options win
    s = settings({"properties.max.retries": "7", "properties.timeout": "3"})
    assert (s.conf["max.retries"], s.conf["timeout"]) == (7, 3.0)
    assert settings({"retries": "1", "properties.max.retries": "7"}).conf["max.retries"] == 1


def test_unknown_option_and_property():
    with pytest.raises(InvalidOptionError, match="did you mean 'retries'"):
        settings({"retires": "1"})
    with pytest.raises(InvalidOptionError, match=r"Unrecognized properties: no\.such"):
        open_registry("http://127.0.0.1:1", {"properties.no.such": "x"})


def test_basic_auth_sources():
    assert settings({"basic-auth.user-info": f"u:{PASSWORD}"}).conf["basic.auth.user.info"] \
        == f"u:{PASSWORD}"
    s = settings({}, url=f"https://u:{PASSWORD.replace('-', '%2D')}@sr:8081/")
    assert s.conf["url"] == "https://sr:8081" and s.conf["basic.auth.user.info"] == \
        f"u:{PASSWORD}"
    assert s.name == "https://sr:8081"
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'username="k" password="{PASSWORD}";')
    s = settings({"basic-auth.credentials-source": "SASL_INHERIT",
                  "properties.sasl.jaas.config": jaas, "properties.sasl.mechanism": "PLAIN"})
    assert s.conf["basic.auth.user.info"] == f"k:{PASSWORD}" and "sasl.mechanism" not in s.conf
    s = settings({"basic-auth.credentials-source": "sasl_inherit",
                  "properties.sasl.username": "k", "properties.sasl.password": PASSWORD})
    assert s.conf["basic.auth.user.info"] == f"k:{PASSWORD}"
    s = settings({"basic-auth.credentials-source": "USER_INFO", "basic-auth.user-info": "a:b",
                  "properties.basic.auth.credentials.source": "USER_INFO",
                  "properties.basic.auth.user.info": "c:d"})  # Flink options win
    assert s.conf["basic.auth.user.info"] == "a:b"
    assert "USER_INFO" not in s.secrets and "basic.auth.credentials.source" not in s.conf
    for bad, match in (({"basic-auth.credentials-source": "USER_INFO"}, "no user info"),
                       ({"basic-auth.credentials-source": "URL"}, "has no user:password"),
                       ({"basic-auth.credentials-source": "SASL_INHERIT"}, "SASL"),
                       ({"basic-auth.credentials-source": "KERBEROS"}, "must be one of"),
                       ({"properties.basic.auth.credentials.source": "X"}, "unknown basic"),
                       ({"properties.bearer.auth.credentials.source": "X"}, "unknown bearer"),
                       ({"basic-auth.user-info": "nocolon"}, "user:password"),
                       ({"basic-auth.user-info": "a:b", "bearer-auth.token": "t"}, "both")):
        with pytest.raises(InvalidOptionError, match=match):
            settings(bad)
    with pytest.raises(InvalidOptionError, match="both in the URL"):
        settings({"basic-auth.user-info": "a:b"}, url="https://x:y@sr")


def test_environment_credentials_and_precedence():
    s = settings({}, **{ENV_USER_INFO: f"env:{PASSWORD}"})
    assert s.conf["basic.auth.user.info"] == f"env:{PASSWORD}" and PASSWORD in s.secrets
    s = settings({"basic-auth.user-info": "opt:pw"}, **{ENV_USER_INFO: "env:pw"})
    assert s.conf["basic.auth.user.info"] == "opt:pw"
    s = settings({}, **{ENV_BEARER_TOKEN: "env-token"})
    assert (s.conf["bearer.auth.credentials.source"], s.conf["bearer.auth.token"]) == \
        ("STATIC_TOKEN", "env-token")
    s = settings({"bearer-auth.token": "opt-token"}, **{ENV_BEARER_TOKEN: "env-token"})
    assert s.conf["bearer.auth.token"] == "opt-token"
    # basic auth configured: a bearer token in the environment is not added on top
    s = settings({"basic-auth.user-info": "a:b"}, **{ENV_BEARER_TOKEN: "env-token"})
    assert "bearer.auth.token" not in s.conf


def test_bearer_auth_mapping():
    s = settings({"bearer-auth.credentials-source": "STATIC_TOKEN", "bearer-auth.token": "t",
                  "properties.bearer.auth.logical.cluster": "lsrc-1",
                  "properties.bearer.auth.identity.pool.id": "pool-1"})
    assert {k: v for k, v in s.conf.items() if k.startswith("bearer")} == {
        "bearer.auth.credentials.source": "STATIC_TOKEN", "bearer.auth.token": "t",
        "bearer.auth.logical.cluster": "lsrc-1", "bearer.auth.identity.pool.id": "pool-1"}
    s = settings({"bearer-auth.credentials-source": "OAUTHBEARER",
                  "properties.bearer.auth.client.id": "id",
                  "properties.bearer.auth.client.secret": PASSWORD})
    assert s.conf["bearer.auth.credentials.source"] == "OAUTHBEARER" and PASSWORD in s.secrets
    for source in ("SASL_OAUTHBEARER_INHERIT", "CUSTOM"):
        with pytest.raises(InvalidOptionError, match="not supported"):
            settings({"bearer-auth.credentials-source": source})
    with pytest.raises(InvalidOptionError, match="needs a token"):
        settings({"bearer-auth.credentials-source": "STATIC_TOKEN"})


def test_pem_stores_pass_through(tls_files):
    s = settings({"ssl.truststore.location": str(tls_files.ca_pem),
                  "ssl.keystore.location": str(tls_files.client_pem_bundle),
                  "ssl.keystore.password": PASSWORD})
    assert s.conf["ssl.ca.location"] == str(tls_files.ca_pem)
    assert s.conf["ssl.certificate.location"] == str(tls_files.client_pem_bundle)
    assert s.conf["ssl.key.password"] == PASSWORD and s.temp_dir is None


def test_pkcs12_converted_to_private_temporary_pem(tls_files):
    s = settings({"ssl.truststore.location": str(tls_files.trust_p12),
                  "ssl.truststore.password": "truststore-pw",
                  "ssl.keystore.location": str(tls_files.client_p12),
                  "ssl.keystore.password": "keystore-pw"})
    assert s.temp_dir is not None and (s.temp_dir.stat().st_mode & 0o077) == 0
    key = Path(s.conf["ssl.key.location"]).read_bytes()
    assert b"ENCRYPTED PRIVATE KEY" in key  # never written unencrypted
    assert s.conf["ssl.key.password"] in s.secrets
    assert b"BEGIN CERTIFICATE" in Path(s.conf["ssl.ca.location"]).read_bytes()
    assert s.conf["ssl.key.password"] not in repr(s)
    temp = s.temp_dir
    s.cleanup()
    assert not temp.exists()


def test_jks_is_refused_with_what_to_do(tmp_path):
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 32)
    with pytest.raises(InvalidOptionError) as info:
        settings({"ssl.truststore.location": str(jks)})
    assert "Java KeyStore" in info.value.message and "keytool" in (info.value.hint or "")
    with pytest.raises(InvalidOptionError, match="cannot be read"):
        settings({"ssl.truststore.location": str(tmp_path / "missing.pem")})


def test_connection_options_filter():
    opts = {"url": "http://x", "subject": "s", "basic-auth.user-info": "a:b",
            "properties.timeout": "1", "auto.register.schemas": "true"}
    assert connection_options(opts) == {"basic-auth.user-info": "a:b", "properties.timeout": "1"}
    assert "basic-auth.user-info" in REGISTRY_OPTIONS.markdown_table()
