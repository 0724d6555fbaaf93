"""HttpRegistry over real HTTP(S), against the fake registry of conftest.py."""

from __future__ import annotations

import base64

import pytest
from http_registry_cases import KEY_V1, KEY_V2, PASSWORD, SUBJECT, fails, open_http

from keyguard.formats.errors import (
    EXIT_INVALID,
    EXIT_UNREACHABLE,
    InvalidOptionError,
    RegistryError,
    RegistryUnavailableError,
)
from keyguard.formats.registry import Registry
from keyguard.formats.registry.connect import ENV_BEARER_TOKEN, ENV_USER_INFO, open_registry

BAD = '{"type":"record","name":"INCOMPATIBLE","fields":[]}'
TOKEN = "tok-SECRET-123"


def test_round_trip(registry_server):
    reg = open_http(registry_server.url)
    assert isinstance(reg, Registry)
    assert reg.subjects() == [] and reg.versions(SUBJECT) == []
    assert reg.lookup(SUBJECT, KEY_V1) is None
    id1 = reg.register(SUBJECT, KEY_V1)
    assert reg.register(SUBJECT, KEY_V1) == id1
    id2 = reg.register(SUBJECT, KEY_V2)
    assert reg.register("other-key", KEY_V1) == id1  # the registry reuses ids across subjects
    assert reg.subjects() == ["other-key", SUBJECT]
    assert reg.versions(SUBJECT) == [1, 2]
    latest = reg.get_version(SUBJECT)
    assert (latest.version, latest.schema_id, latest.schema, latest.schema_type) == \
        (2, id2, KEY_V2, "AVRO")
    assert [v.schema_id for v in reg.all_versions(SUBJECT)] == [id1, id2]
    assert reg.get_by_id(id1) == ("AVRO", KEY_V1)
    pretty = KEY_V1.replace(",", ",\n  ")
    found = reg.lookup(SUBJECT, pretty)
    assert found is not None and (found.version, found.schema_id) == (1, id1)
    assert reg.lookup(SUBJECT, BAD) is None
    assert "versions" not in repr(reg) and repr(reg) == f"HttpRegistry('{registry_server.url}')"


def test_latest_is_never_stale(registry_server):
    reg = open_http(registry_server.url)
    reg.register(SUBJECT, KEY_V1)
    assert reg.client.get_latest_version(SUBJECT).version == 1  # primes the client's cache
    registry_server.state.add(SUBJECT, KEY_V2)  # behind the client's back
    assert reg.client.get_latest_version(SUBJECT).version == 1  # the client's cache is stale
    latest = reg.get_version(SUBJECT, "latest")
    assert (latest.version, latest.schema) == (2, KEY_V2)
    assert reg.versions(SUBJECT) == [1, 2]
    assert reg.lookup(SUBJECT, KEY_V2) is not None


def test_missing_version_and_id_are_caller_errors(registry_server):
    reg = open_http(registry_server.url)
    err = fails(RegistryError, lambda: reg.get_version(SUBJECT))
    assert err.exit_code == EXIT_INVALID and not isinstance(err, RegistryUnavailableError)
    reg.register(SUBJECT, KEY_V1)
    assert "40402" in fails(RegistryError, lambda: reg.get_version(SUBJECT, 7)).message
    fails(RegistryError, lambda: reg.get_by_id(999))


def test_rejected_registration_is_a_registry_error(registry_server):
    reg = open_http(registry_server.url)
    err = fails(RegistryError, lambda: reg.register(SUBJECT, BAD))
    assert err.exit_code == EXIT_INVALID and "409" in err.message and "incompatible" in err.message


def test_compatibility_subject_level_else_global(registry_server):
    reg = open_http(registry_server.url)
    registry_server.state.global_level = "FULL"
    assert reg.compatibility(SUBJECT) == "FULL"
    registry_server.state.subject_levels[SUBJECT] = "NONE"
    assert reg.compatibility(SUBJECT) == "NONE"


def test_check_compatibility_uses_latest_with_verbose(registry_server):
    reg = open_http(registry_server.url)
    answer = reg.check_compatibility(SUBJECT, KEY_V1)
    assert answer is not None and answer.compatible  # no subject yet: anything goes
    reg.register(SUBJECT, KEY_V1)
    registry_server.state.requests.clear()
    assert reg.check_compatibility(SUBJECT, KEY_V2).compatible  # type: ignore[union-attr]
    bad = reg.check_compatibility(SUBJECT, BAD)
    assert bad is not None and not bad.compatible
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in bad.messages[0]
    posts = [(p, q) for m, p, q, _ in registry_server.state.requests if m == "POST"]
    assert posts and all(p.endswith("/versions/latest") and q["verbose"] == ["true"]
                         for p, q in posts)


def test_check_compatibility_transitive_asks_every_version(registry_server):
    reg = open_http(registry_server.url)
    reg.register(SUBJECT, KEY_V1)
    reg.register(SUBJECT, KEY_V2)
    registry_server.state.subject_levels[SUBJECT] = "BACKWARD_TRANSITIVE"
    registry_server.state.requests.clear()
    bad = reg.check_compatibility(SUBJECT, BAD)
    assert bad is not None and not bad.compatible
    assert [m.split(":")[0] for m in bad.messages] == ["version 1", "version 2"]
    paths = [p for m, p, _, _ in registry_server.state.requests if m == "POST"]
    assert [p.rsplit("/", 1)[1] for p in paths] == ["1", "2"]


# --- auth ----------------------------------------------------------------------------------


def test_basic_auth_from_option_url_and_env(registry_server):
    registry_server.state.basic = ("alice", PASSWORD)
    host = registry_server.url.removeprefix("http://")
    for reg in (
        open_http(registry_server.url, {"basic-auth.credentials-source": "USER_INFO",
                                    "basic-auth.user-info": f"alice:{PASSWORD}"}),
        open_http(registry_server.url, {"basic-auth.user-info": f"alice:{PASSWORD}"}),
        open_http(f"http://alice:{PASSWORD}@{host}"),
        open_http(registry_server.url, **{ENV_USER_INFO: f"alice:{PASSWORD}"}),
    ):
        assert reg.subjects() == []
        assert PASSWORD not in repr(reg) and PASSWORD not in reg.name
    reg = open_http(registry_server.url, {"properties.basic.auth.credentials.source": "USER_INFO",
                                      "properties.basic.auth.user.info": f"alice:{PASSWORD}"})
    assert reg.subjects() == []


def test_wrong_or_missing_credentials_are_unavailable_and_never_shown(registry_server):
    registry_server.state.basic = ("alice", "right-one")
    host = registry_server.url.removeprefix("http://")
    for reg in (
        open_http(registry_server.url),
        open_http(registry_server.url, {"basic-auth.user-info": f"alice:{PASSWORD}"}),
        open_http(f"http://alice:{PASSWORD}@{host}"),
        open_http(registry_server.url, **{ENV_USER_INFO: f"alice:{PASSWORD}"}),
    ):
        err = fails(RegistryUnavailableError, reg.subjects, PASSWORD)
        assert err.exit_code == EXIT_UNREACHABLE and "401" in err.message
        assert registry_server.url in err.message


def test_bearer_token_from_option_and_env(registry_server):
    registry_server.state.bearer = TOKEN
    for reg in (open_http(registry_server.url, {"bearer-auth.credentials-source": "STATIC_TOKEN",
                                            "bearer-auth.token": TOKEN}),
                open_http(registry_server.url, {"bearer-auth.token": TOKEN}),
                open_http(registry_server.url, **{ENV_BEARER_TOKEN: TOKEN})):
        assert reg.subjects() == []
    headers = registry_server.state.requests[-1][3]
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    wrong = open_http(registry_server.url, {"bearer-auth.token": "tok-WRONG-456"})
    fails(RegistryUnavailableError, wrong.subjects, "tok-WRONG-456", TOKEN)


def test_forbidden_is_unavailable(registry_server):
    registry_server.state.forbidden = True
    err = fails(RegistryUnavailableError, open_http(registry_server.url).subjects)
    assert "403" in err.message


# --- faults --------------------------------------------------------------------------------


def test_retries_then_success(registry_server):
    registry_server.state.fail_next = [503, 503]
    reg = open_http(registry_server.url, {"retries": "3", "retry-backoff": "5ms"})
    assert reg.subjects() == []
    assert len(registry_server.state.requests) == 3


def test_retries_exhausted_is_unavailable(registry_server):
    registry_server.state.fail_next = [503] * 5
    reg = open_http(registry_server.url, {"retries": "2", "retry-backoff": "5ms"},
                **{ENV_USER_INFO: f"bob:{PASSWORD}"})
    err = fails(RegistryUnavailableError, reg.subjects, PASSWORD)
    assert "503" in err.message and err.exit_code == EXIT_UNREACHABLE
    assert len(registry_server.state.requests) == 3


def test_timeout_is_unavailable(registry_server):
    registry_server.state.delay = 1.5
    reg = open_http(registry_server.url, {"timeout": "200ms", "retries": "0"})
    err = fails(RegistryUnavailableError, reg.subjects)
    assert "0.2s" in err.message and "timeout" in (err.hint or "")


def test_connection_refused_is_unavailable(free_port):
    reg = open_http(f"http://bob:{PASSWORD}@127.0.0.1:{free_port}")
    err = fails(RegistryUnavailableError, lambda: reg.versions(SUBJECT), PASSWORD)
    assert f"http://127.0.0.1:{free_port}" in err.message
    assert "running" in (err.hint or "")


def test_failover_to_the_second_url(registry_server, free_port):
    reg = open_http(f"http://127.0.0.1:{free_port},{registry_server.url}")
    assert reg.subjects() == []


# --- TLS -----------------------------------------------------------------------------------


def test_https_with_pem_or_pkcs12_truststore(tls_server, tls_files):
    for config in ({"ssl.truststore.location": str(tls_files.ca_pem)},
                   {"ssl.truststore.location": str(tls_files.trust_p12),
                    "ssl.truststore.password": "truststore-pw"},
                   {"properties.ssl.ca.location": str(tls_files.ca_pem)}):
        reg = open_http(tls_server.url, config)
        reg.register(SUBJECT, KEY_V1)
        assert reg.versions(SUBJECT) == [1]


def test_https_untrusted_certificate_is_unavailable_with_a_hint(tls_server):
    err = fails(RegistryUnavailableError, open_http(tls_server.url).subjects)
    assert "ssl.truststore.location" in (err.hint or "")


def test_mutual_tls_with_pkcs12_or_pem_keystore(mtls_server, tls_files):
    trust = {"ssl.truststore.location": str(tls_files.ca_pem)}
    for keystore in ({"ssl.keystore.location": str(tls_files.client_p12),
                      "ssl.keystore.password": "keystore-pw"},
                     {"ssl.keystore.location": str(tls_files.client_pem_bundle)}):
        assert open_http(mtls_server.url, {**trust, **keystore}).subjects() == []
    fails(RegistryUnavailableError, open_http(mtls_server.url, trust).subjects)


def test_wrong_keystore_password_is_an_option_error(tls_files):
    err = fails(InvalidOptionError, lambda: open_registry(
        "https://127.0.0.1:1", {"ssl.keystore.location": str(tls_files.client_p12),
                                "ssl.keystore.password": "not-" + PASSWORD}), PASSWORD)
    assert "client.p12" in err.message


def test_credentials_never_logged(registry_server, caplog):
    registry_server.state.basic = ("alice", "right-one")
    registry_server.state.fail_next = [503]
    host = registry_server.url.removeprefix("http://")
    with caplog.at_level(1):  # every logger, every level (httpx, httpcore, the client)
        for reg in (open_http(f"http://alice:{PASSWORD}@{host}", {"retries": "1",
                                                              "retry-backoff": "1ms"}),
                    open_http(registry_server.url, {"bearer-auth.token": TOKEN})):
            with pytest.raises(RegistryUnavailableError):
                reg.versions(SUBJECT)
    assert caplog.records  # the HTTP libraries did log
    encoded = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    for secret in (PASSWORD, TOKEN, encoded):
        assert secret not in caplog.text


# --- a registry must prove it is one ----------------------------------------------------------


@pytest.mark.parametrize("path", ["/nope", "/html"])
def test_a_url_that_is_not_the_registry_api_is_unavailable(registry_server, path):
    reg = open_http(registry_server.url + path)
    for call in (reg.prove, lambda: reg.versions(SUBJECT), lambda: reg.get_by_id(1),
                 lambda: reg.lookup(SUBJECT, KEY_V1)):
        err = fails(RegistryUnavailableError, call)
        assert err.exit_code == EXIT_UNREACHABLE
        assert registry_server.url + path in err.message


def test_a_bare_404_is_not_a_missing_subject_but_40401_is(registry_server):
    reg = open_http(registry_server.url)
    assert reg.versions("no-such-subject") == []  # error_code 40401: the registry said so
    wrong = open_http(registry_server.url + "/nope")
    with pytest.raises(RegistryUnavailableError, match="without a schema registry error code"):
        wrong.versions("no-such-subject")


def test_the_proof_is_asked_once_and_cached(registry_server):
    reg = open_http(registry_server.url)
    reg.prove()
    reg.prove()
    asked = [r for r in registry_server.state.requests if r[1] == "/subjects"]
    assert len(asked) == 1


def test_a_subjects_answer_that_is_not_a_list_is_unavailable(registry_server, monkeypatch):
    reg = open_http(registry_server.url)
    monkeypatch.setattr(reg.client, "get_subjects", lambda: {"not": "a list"})
    with pytest.raises(RegistryUnavailableError, match="not a list of subjects"):
        reg.prove()


def test_explicit_bearer_token_wins_over_env_user_info(registry_server):
    registry_server.state.bearer = TOKEN
    reg = open_http(registry_server.url, {"bearer-auth.token": TOKEN + "\n"},
                **{ENV_USER_INFO: f"carol:{PASSWORD}"})
    assert reg.subjects() == []
    sent = registry_server.state.requests[-1][3]
    assert sent.get("Authorization") == f"Bearer {TOKEN}"


@pytest.mark.parametrize("token", [TOKEN + "\n", f"  {TOKEN}\r\n", f"\t{TOKEN}"])
def test_a_token_read_from_a_file_is_stripped(registry_server, token):
    registry_server.state.bearer = TOKEN
    reg = open_http(registry_server.url, **{ENV_BEARER_TOKEN: token})
    assert reg.subjects() == []


@pytest.mark.parametrize("token", [f"{TOKEN}\nX-Evil: 1", f"{TOKEN}\x00", f"{TOKEN}é",
                                   f"{TOKEN}\x7f"])
def test_a_token_with_a_control_or_non_ascii_character_is_invalid_and_not_echoed(token):
    for config, env in (({"bearer-auth.token": token}, {}), ({}, {ENV_BEARER_TOKEN: token}),
                        ({"basic-auth.user-info": f"u:{token}"}, {})):
        err = fails(InvalidOptionError,
                     lambda c=config, e=env: open_registry("http://127.0.0.1:1", c, environ=e),
                     TOKEN)
        assert err.exit_code == EXIT_INVALID and "not a valid credential" in err.message


def test_credentials_that_may_not_list_subjects_prove_the_registry_by_its_config(
        registry_server):
    registry_server.state.forbidden_paths = {"/subjects"}
    registry_server.state.add(SUBJECT, KEY_V1)
    reg = open_http(registry_server.url)
    reg.prove()
    assert reg.versions(SUBJECT) == [1]
    assert ("GET", "/config") in {(r[0], r[1]) for r in registry_server.state.requests}
