"""The settings of confluent-kafka's SchemaRegistryClient, from Flink's avro-confluent
connection options (`keyguard.formats.registry.connect.open_registry` builds them for an http(s)
URL).

Credentials may also come from the environment (`KEYGUARD_REGISTRY_USER_INFO`,
`KEYGUARD_REGISTRY_BEARER_TOKEN`); options win over the environment.

Flink's keystore/truststore options name JKS or PKCS12 files; the Python client wants PEM. A PEM
file is used as is; PKCS12 is converted in memory with `cryptography` (written to a private
temporary directory only while the client loads it, then deleted); JKS is refused with the
`keytool` command that exports PEM.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.options import ResolvedOptions
from keyguard.formats.registry.options import ENV_BEARER_TOKEN, ENV_USER_INFO, REGISTRY_OPTIONS
from keyguard.formats.secrets import is_secret_key, redact_url, register_secrets

# confluent-kafka's numeric settings: values from a DDL or a CLI arrive as strings.
_NUMERIC_PROPERTIES = ("max.retries", "retries.wait.ms", "retries.max.wait.ms",
                       "cache.capacity", "cache.latest.ttl.sec", "timeout")
_JAAS_FIELD = r'{}\s*=\s*"((?:[^"\\]|\\.)*)"'


@dataclass
class ClientSettings:
    """A SchemaRegistryClient configuration, the secrets in it, and files to delete once loaded."""

    name: str
    conf: dict[str, Any]
    secrets: list[str] = field(default_factory=list)
    temp_dir: Path | None = None

    def cleanup(self) -> None:
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None

    def __repr__(self) -> str:
        shown = {k: ("***" if is_secret_key(k) else v) for k, v in self.conf.items()}
        return f"ClientSettings(name={self.name!r}, conf={shown!r})"


def _holds_secret(key: str) -> bool:
    """A secret's value, not the name of a source or the path of a file."""
    return is_secret_key(key) and not key.endswith(
        ("credentials-source", "credentials.source", ".location"))


def _credential(value: str, what: str, where: str) -> str:
    """A credential as sent in an HTTP header: surrounding whitespace and newlines (a value read
    from a file or a Kubernetes secret) are stripped; any other control character or non-ASCII
    character is refused, without echoing the value."""
    clean = value.strip()
    if not clean:
        raise InvalidOptionError(f"{where}: {what} is empty",
                                 hint=f"give a value for {what}, or leave it unset")
    bad = next((c for c in clean if not 0x20 <= ord(c) < 0x7F), None)
    if bad is not None:
        kind = "a control character" if ord(bad) < 0x20 or ord(bad) == 0x7F else \
            "a non-ASCII character"
        raise InvalidOptionError(
            f"{where}: {what} is not a valid credential: it holds {kind} "
            f"(U+{ord(bad):04X}), which an HTTP header cannot carry (the value is not shown)",
            hint=f"check how {what} is read (a file with a stray character, a wrong encoding)")
    return clean


def _env_credential(environ: Mapping[str, str], name: str, where: str) -> str | None:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return None
    return _credential(raw, f"the environment variable {name}", where)


def _split_userinfo(url: str) -> tuple[str, str | None]:
    """The URL without `user:password@`, and that user info (unquoted), if any."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - validates the port
    except ValueError as exc:
        raise InvalidOptionError(
            f"schema registry URL {redact_url(url)!r} is malformed: {exc}",
            hint="write http(s)://HOST:PORT[/PATH]; IPv6 hosts in brackets ([::1]); "
                 "credentials in basic-auth.user-info or KEYGUARD_REGISTRY_USER_INFO") from None
    if not parts.hostname:
        raise InvalidOptionError(f"schema registry URL {redact_url(url)!r} has no host",
                                 hint="write http(s)://HOST:PORT")
    if "@" not in parts.netloc:
        return url.rstrip("/"), None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean.rstrip("/"), f"{unquote(user)}:{unquote(password)}"


def _jaas_credentials(jaas: str) -> str | None:
    user = re.search(_JAAS_FIELD.format("username"), jaas)
    password = re.search(_JAAS_FIELD.format("password"), jaas)
    if not user or not password:
        return None
    return f"{user.group(1)}:{password.group(1)}"


def http_client_settings(url: str, config: Mapping[str, Any],
                         environ: Mapping[str, str]) -> ClientSettings:
    """Map Flink's avro-confluent options onto confluent-kafka's SchemaRegistryClient config."""
    name, url_infos = _split_urls(url)
    where = f"schema registry {name}"
    settings = ClientSettings(name, {"url": name})
    settings.secrets += _given_secrets(url_infos, config, environ)
    url_infos = [_credential(i, "the user info in the URL", where) for i in url_infos]
    opts = REGISTRY_OPTIONS.validate(config, where=where)
    props = _client_properties(opts, where)
    basic = _basic_auth(opts, props, url_infos, environ, settings, where)
    _bearer_auth(opts, props, basic, environ, settings, where)
    _tls(opts, props, settings, where)
    _timeouts(config, opts, props, settings.conf)
    for key, value in props.items():
        settings.conf.setdefault(key, value)
        if _holds_secret(key) and isinstance(value, str):
            settings.secrets.append(value)
    settings.secrets = sorted({s for s in settings.secrets if s}, key=len, reverse=True)
    register_secrets(settings.secrets)
    return settings


def _split_urls(url: str) -> tuple[str, list[str]]:
    """The comma-separated URLs without their user info, and the user infos found in them."""
    urls, url_infos = [], []
    for one in url.split(","):
        clean, info = _split_userinfo(one.strip())
        urls.append(clean)
        if info:
            url_infos.append(info)
    return ",".join(urls), url_infos


def _given_secrets(url_infos: list[str], config: Mapping[str, Any],
                   environ: Mapping[str, str]) -> list[str]:
    """Every form a secret from the URL, the options or the environment may take in a message,
    gathered before any of them is checked (an error about one must not show it)."""
    secrets = [i for info in url_infos for i in (info, info.partition(":")[2])]
    for key, value in config.items():
        if _holds_secret(key) and isinstance(value, str):
            secrets += [value, value.partition(":")[2], value.strip(),
                        value.strip().partition(":")[2]]
    for var in (ENV_USER_INFO, ENV_BEARER_TOKEN):
        raw = environ.get(var)
        if raw:
            secrets += [raw, raw.strip(), raw.strip().partition(":")[2]]
    return secrets


def _client_properties(opts: ResolvedOptions, where: str) -> dict[str, Any]:
    """The `properties.*` handed to the client, its numbers parsed (a DDL or a CLI gives
    strings)."""
    props: dict[str, Any] = opts.with_prefix("properties.")
    for key in _NUMERIC_PROPERTIES:
        if isinstance(props.get(key), str):
            try:
                props[key] = float(props[key]) if key == "timeout" else int(props[key])
            except ValueError:
                raise InvalidOptionError(f"{where}: properties.{key} must be a number") from None
    return props


def _source(option: Any, prop: Any) -> str | None:
    """A credentials source, the option's or else the property's, in upper case."""
    source = option or prop
    return source.upper() if isinstance(source, str) else None


def _basic_auth(opts: ResolvedOptions, props: dict[str, Any], url_infos: list[str],
                environ: Mapping[str, str], settings: ClientSettings, where: str) -> str | None:
    """Basic auth's user:password, put in the client's config; None without basic auth."""
    source, user_info = _basic_source(opts, props, url_infos, environ, settings, where)
    # The Kafka client's settings the connector may pass along: not the registry's.
    sasl = {key: props.pop(key) for key in [k for k in props if k.startswith("sasl.")]}
    if source == "USER_INFO":
        basic = _basic_from_user_info(user_info, url_infos, where)
    elif source == "URL":
        basic = _basic_from_url(user_info, url_infos, where)
    elif source == "SASL_INHERIT":
        basic = _basic_from_sasl(sasl, where)
        settings.secrets += [basic, basic.partition(":")[2]]
    else:
        return None
    if ":" not in basic:
        raise InvalidOptionError(f"{where}: basic-auth user info must be user:password")
    settings.conf["basic.auth.user.info"] = basic
    return basic


def _basic_source(opts: ResolvedOptions, props: dict[str, Any], url_infos: list[str],
                  environ: Mapping[str, str], settings: ClientSettings,
                  where: str) -> tuple[str | None, str | None]:
    """Basic auth's credentials source and user info, the environment's when nothing else says.

    Java's default source is URL; a user-info given without a source means USER_INFO here,
    rather than being silently ignored."""
    prop_source = props.pop("basic.auth.credentials.source", None)
    prop_user_info = props.pop("basic.auth.user.info", None)
    source = _source(opts["basic-auth.credentials-source"], prop_source)
    user_info = opts["basic-auth.user-info"] or prop_user_info
    if source not in (None, "USER_INFO", "URL", "SASL_INHERIT"):
        raise InvalidOptionError(f"{where}: unknown basic auth credentials source {source!r}",
                                 hint="use USER_INFO, URL or SASL_INHERIT")
    if source is None and user_info:
        source = "USER_INFO"
    if source is None and url_infos:
        source = "URL"
    if source in (None, "USER_INFO") and not user_info and not _explicit_bearer(opts, props):
        env_info = _env_credential(environ, ENV_USER_INFO, where)
        if env_info:
            user_info, source = env_info, "USER_INFO"
            settings.secrets += [user_info, user_info.partition(":")[2]]
    if isinstance(user_info, str):
        user_info = _credential(user_info, "basic-auth.user-info", where)
    return source, user_info


def _explicit_bearer(opts: ResolvedOptions, props: dict[str, Any]) -> bool:
    """An explicit bearer option, which wins over basic credentials from the environment."""
    return bool(opts["bearer-auth.credentials-source"] or opts["bearer-auth.token"]
                or props.get("bearer.auth.credentials.source")
                or props.get("bearer.auth.token"))


def _basic_from_user_info(user_info: str | None, url_infos: list[str], where: str) -> str:
    if not user_info:
        raise InvalidOptionError(
            f"{where}: basic-auth.credentials-source is USER_INFO but no user info is given",
            hint=f"set basic-auth.user-info to user:password, or {ENV_USER_INFO}")
    if url_infos:
        raise InvalidOptionError(
            f"{where}: credentials are given both in the URL and as user info",
            hint="remove user:password@ from the URL, or drop basic-auth.user-info")
    return user_info


def _basic_from_url(user_info: str | None, url_infos: list[str], where: str) -> str:
    if not url_infos:
        raise InvalidOptionError(
            f"{where}: basic-auth.credentials-source is URL but the URL has no "
            "user:password@", hint="put the credentials in the URL or use USER_INFO")
    if user_info:
        raise InvalidOptionError(
            f"{where}: basic-auth.user-info is given but the credentials source is URL",
            hint="drop one of them")
    return url_infos[0]


def _basic_from_sasl(sasl: Mapping[str, Any], where: str) -> str:
    """The Kafka client's SASL credentials, from its JAAS config or its username and password."""
    jaas = sasl.get("sasl.jaas.config")
    sasl_user, sasl_password = sasl.get("sasl.username"), sasl.get("sasl.password")
    basic = _jaas_credentials(jaas) if isinstance(jaas, str) else None
    if basic is None and sasl_user and sasl_password:
        basic = f"{sasl_user}:{sasl_password}"
    if basic is None:
        raise InvalidOptionError(
            f"{where}: basic-auth.credentials-source is SASL_INHERIT but no SASL "
            "credentials were passed", hint="pass the Kafka client's sasl.jaas.config (or "
            "sasl.username and sasl.password) as properties.sasl.*")
    return _credential(basic, "the SASL credentials", where)


def _bearer_auth(opts: ResolvedOptions, props: dict[str, Any], basic: str | None,
                 environ: Mapping[str, str], settings: ClientSettings, where: str) -> None:
    """Bearer auth, put in the client's config when configured."""
    source, token = _bearer_source(opts, props, basic, environ, settings, where)
    if source in ("SASL_OAUTHBEARER_INHERIT", "CUSTOM"):
        raise InvalidOptionError(
            f"{where}: bearer-auth.credentials-source {source} is not supported by the "
            "Python registry client",
            hint="use STATIC_TOKEN with bearer-auth.token, or OAUTHBEARER with "
                 "properties.bearer.auth.client.id/client.secret/scope/issuer.endpoint.url")
    if source is None:
        return
    if basic is not None:
        raise InvalidOptionError(f"{where}: both basic and bearer auth are configured",
                                 hint="keep one of them")
    conf = settings.conf
    conf["bearer.auth.credentials.source"] = source
    # The client sends it as `target-sr-cluster`; only Confluent Cloud needs a value.
    conf["bearer.auth.logical.cluster"] = props.pop("bearer.auth.logical.cluster", "")
    if source == "STATIC_TOKEN":
        if not token:
            raise InvalidOptionError(
                f"{where}: bearer auth STATIC_TOKEN needs a token",
                hint=f"set bearer-auth.token or {ENV_BEARER_TOKEN}")
        conf["bearer.auth.token"] = token


def _bearer_source(opts: ResolvedOptions, props: dict[str, Any], basic: str | None,
                   environ: Mapping[str, str], settings: ClientSettings,
                   where: str) -> tuple[str | None, str | None]:
    """Bearer auth's credentials source and token, the environment's when nothing else says."""
    prop_source = props.pop("bearer.auth.credentials.source", None)
    prop_token = props.pop("bearer.auth.token", None)
    source = _source(opts["bearer-auth.credentials-source"], prop_source)
    token = opts["bearer-auth.token"] or prop_token
    if source not in (None, *(REGISTRY_OPTIONS.get("bearer-auth.credentials-source").choices
                              or ())):
        raise InvalidOptionError(f"{where}: unknown bearer auth credentials source {source!r}",
                                 hint="use STATIC_TOKEN, OAUTHBEARER or OAUTHBEARER_AZURE_IMDS")
    if source is None and token:
        source = "STATIC_TOKEN"
    if source in (None, "STATIC_TOKEN") and not token and basic is None:
        env_token = _env_credential(environ, ENV_BEARER_TOKEN, where)
        if env_token:
            token, source = env_token, "STATIC_TOKEN"
            settings.secrets.append(token)
    if isinstance(token, str):
        token = _credential(token, "bearer-auth.token", where)
    return source, token


def _tls(opts: ResolvedOptions, props: dict[str, Any], settings: ClientSettings,
         where: str) -> None:
    """The truststore and keystore as PEM files the client can load."""
    conf = settings.conf
    temp = _TempDir(settings)
    truststore = opts["ssl.truststore.location"]
    if truststore:
        conf["ssl.ca.location"] = _pem_truststore(
            Path(truststore), opts["ssl.truststore.password"], temp, where)
        props.pop("ssl.ca.location", None)
    keystore = opts["ssl.keystore.location"]
    if keystore:
        cert, key_file, key_password = _pem_keystore(
            Path(keystore), opts["ssl.keystore.password"], temp, where)
        conf["ssl.certificate.location"] = cert
        for k in ("ssl.certificate.location", "ssl.key.location", "ssl.key.password"):
            props.pop(k, None)
        if key_file is not None:
            conf["ssl.key.location"] = key_file
        if key_password:
            conf["ssl.key.password"] = key_password
            settings.secrets.append(key_password)


def _timeouts(config: Mapping[str, Any], opts: ResolvedOptions, props: dict[str, Any],
              conf: dict[str, Any]) -> None:
    """Timeouts and retries: an explicit option beats properties.*, which beat the defaults."""
    for option, client_key, scale in (("timeout", "timeout", 0.001),
                                      ("retries", "max.retries", 1),
                                      ("retry-backoff", "retries.wait.ms", 1),
                                      ("retry-backoff-max", "retries.max.wait.ms", 1)):
        if option in config or client_key not in props:
            value = opts[option]
            conf[client_key] = value * scale if scale != 1 else value
            props.pop(client_key, None)


class _TempDir:
    """A private directory for converted PEM files, created on first use."""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings

    def write(self, name: str, data: bytes) -> str:
        if self.settings.temp_dir is None:
            self.settings.temp_dir = Path(tempfile.mkdtemp(prefix="keyguard-tls-"))
        path = self.settings.temp_dir / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return str(path)


def _store_kind(path: Path, what: str, where: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidOptionError(f"{where}: {what} {path} cannot be read: {exc.strerror}") from None
    if data[:4] in (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce"):
        raise InvalidOptionError(
            f"{where}: {what} {path} is a Java KeyStore (JKS/JCEKS), which Python cannot read",
            hint=f"convert it: keytool -importkeystore -srckeystore {path.name} "
                 "-destkeystore store.p12 -deststoretype PKCS12, and point the option at the "
                 ".p12 file (or export PEM with keytool -exportcert -rfc and use "
                 "properties.ssl.ca.location)")
    return data


def _load_pkcs12(data: bytes, password: str | None, what: str, path: Path, where: str) -> Any:
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:
        raise InvalidOptionError(
            f"{where}: {what} {path} is PKCS12; reading it needs the 'cryptography' package",
            hint="pip install cryptography, or give a PEM file instead") from None
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except (ValueError, TypeError):
        raise InvalidOptionError(f"{where}: {what} {path} is neither PEM nor a PKCS12 file "
                                 "that this password opens",
                                 hint="check the file and its password") from None


def _pem_truststore(path: Path, password: str | None, temp: _TempDir, where: str) -> str:
    data = _store_kind(path, "ssl.truststore.location", where)
    if b"-----BEGIN" in data[:4096]:
        return str(path)
    from cryptography.hazmat.primitives.serialization import Encoding

    store = _load_pkcs12(data, password, "ssl.truststore.location", path, where)
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.insert(0, store.cert.certificate)
    if not certs:
        raise InvalidOptionError(f"{where}: truststore {path} holds no certificates")
    return temp.write("ca.pem", b"".join(c.public_bytes(Encoding.PEM) for c in certs))


def _pem_keystore(path: Path, password: str | None, temp: _TempDir,
                  where: str) -> tuple[str, str | None, str | None]:
    """(certificate PEM, key PEM or None when inside the certificate file, key password)."""
    data = _store_kind(path, "ssl.keystore.location", where)
    if b"-----BEGIN" in data[:4096]:
        return str(path), None, password
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        Encoding,
        PrivateFormat,
    )

    store = _load_pkcs12(data, password, "ssl.keystore.location", path, where)
    if store.key is None or store.cert is None:
        raise InvalidOptionError(f"{where}: keystore {path} holds no private key and certificate")
    chain = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
    # The key never touches disk unencrypted: it is re-encrypted with a one-off password.
    import secrets  # lazy: CLI start-up (hmac, _hashlib: ~4 ms; only for a keystore)

    one_off = secrets.token_urlsafe(24)
    key = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8,
                                  BestAvailableEncryption(one_off.encode()))
    return (temp.write("client.pem", b"".join(c.public_bytes(Encoding.PEM) for c in chain)),
            temp.write("client.key", key), one_off)
