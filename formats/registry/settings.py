"""One path for registry and Kafka settings, whoever asks: the CLI, the TOML config, the
environment and the Spark options all resolve through `resolve_registry` and `resolve_kafka`.

Precedence, for every setting, highest first:

1. an explicit option: `--registry`, `-o key.avro-confluent.<option>` (or `value.`),
   `--kafka-config KEY=VALUE`; in Spark, `guard.registry`, `key.avro-confluent.<option>`,
   `properties.<librdkafka property>`;
2. the config file (`keyguard.toml`: a topic's `options`, then `registry` / `[registry]`,
   `[kafka]`);
3. the environment: `KEYGUARD_REGISTRY_USER_INFO`, `KEYGUARD_REGISTRY_BEARER_TOKEN`, and
   `KEYGUARD_KAFKA_<PROPERTY>` (`KEYGUARD_KAFKA_SASL_PASSWORD` is `sasl.password`);
4. the default (`REGISTRY_OPTIONS`, librdkafka's own).

Every accepted option is used: a registry option that no registry reads, two values of one
option that disagree (the key's and the value's, when both name the same registry), or an option
given where nothing uses it is rejected (exit 2) naming it. Credentials from the environment are
applied by `keyguard.formats.registry.connect.open_registry` below every option, so an explicit
bearer token wins over `KEYGUARD_REGISTRY_USER_INFO`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Final

from keyguard.formats.errors import InvalidOptionError
from keyguard.formats.immutable import Value
from keyguard.formats.registry import Registry
from keyguard.formats.registry.connect import REGISTRY_OPTIONS, open_registry
from keyguard.formats.registry.options import is_registry_option  # re-exported: declared there
from keyguard.formats.secrets import is_secret_key, redact_url

#: librdkafka properties may come from KEYGUARD_KAFKA_<NAME> (dots -> underscores).
KAFKA_ENV_PREFIX = "KEYGUARD_KAFKA_"
#: The format whose options carry registry settings.
REGISTRY_FORMAT = "avro-confluent"


class RegistrySettings(Value):
    """Where the registry is and how to reach it, resolved; `open()` connects."""

    __slots__ = ("options", "sources", "url")
    FIELDS = ("url", "options", "sources")
    url: Final[str]
    #: REGISTRY_OPTIONS keys and properties.* (no `url`, no `subject`).
    options: Final[Mapping[str, Any]]
    #: Where each option came from ("-o key.avro-confluent.timeout", "keyguard.toml"), for errors.
    sources: Final[Mapping[str, str]]

    def __init__(self, url: str, options: Mapping[str, Any], sources: Mapping[str, str]) -> None:
        self.url = url
        self.options = options
        self.sources = sources

    def open(self, environ: Mapping[str, str] | None = None) -> Registry:
        return open_registry(self.url, self.options, environ=environ)


def registry_options_of(format_options: Iterable[tuple[str, Mapping[str, Any]]]
                        ) -> tuple[str | None, dict[str, Any], dict[str, str]]:
    """(url, connection options, source of each) out of avro-confluent format options.

    `format_options` pairs a label (`key.avro-confluent.`) with that role's options (prefix
    removed). Two roles naming one registry must agree on every setting they both give.
    """
    url: str | None = None
    url_from = ""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for label, opts in format_options:
        for key, value in opts.items():
            if value is None:
                continue
            if key == "url":
                if url is not None and str(value).strip() != url:
                    raise InvalidOptionError(
                        f"{url_from}url and {label}url name two registries "
                        f"({redact_url(url)} and {redact_url(str(value))})",
                        hint="keyguard reads the key and the value subjects from one registry; "
                             "give one URL")
                url, url_from = str(value).strip(), label
                continue
            if not is_registry_option(key):
                continue
            if key in merged and str(merged[key]) != str(value):
                shown = "" if is_secret_key(key) else f" ({merged[key]!r} and {value!r})"
                raise InvalidOptionError(
                    f"{sources[key]} and {label}{key} disagree{shown}",
                    hint="both name the same registry: give the option once, or the same value")
            merged[key] = value
            sources.setdefault(key, f"{label}{key}")
    return url, merged, sources


def resolve_registry(
    *,
    explicit_url: str | None = None,
    explicit_options: Mapping[str, Any] | None = None,
    configured_url: str | None = None,
    configured_options: Mapping[str, Any] | None = None,
    default_url: str | None = None,
    explicit_sources: Mapping[str, str] | None = None,
    configured_where: str = "the config file",
) -> RegistrySettings:
    """The registry URL and connection options: explicit > config file > (environment, applied
    when connecting) > default. Unknown options are rejected here, naming them."""
    explicit = {k: v for k, v in (explicit_options or {}).items() if v is not None}
    configured = {k: v for k, v in (configured_options or {}).items() if v is not None}
    url = explicit_url or configured_url or default_url
    if not url or not str(url).strip():
        raise InvalidOptionError(
            "no schema registry given",
            hint="give --registry URL (http(s)://HOST:PORT, file://DIR or mock://NAME), "
                 "registry = \"...\" in the config file, or create ./schemas")
    sources = {k: f"{configured_where}: {k}" for k in configured}
    sources.update(explicit_sources or {k: k for k in explicit})
    merged = {**configured, **explicit}
    REGISTRY_OPTIONS.validate(merged, where=f"schema registry {redact_url(str(url))}")
    scheme = str(url).strip().partition("://")[0].lower() if "://" in str(url) else "file"
    if scheme not in ("http", "https") and merged:
        names = ", ".join(sorted(sources.get(k, k) for k in merged))
        raise InvalidOptionError(
            f"{names}: connection options are used only by an HTTP registry, not by "
            f"{redact_url(str(url))}",
            hint="drop them, or point the registry at http(s)://HOST:PORT")
    return RegistrySettings(str(url).strip(), merged, sources)


def resolve_kafka(
    *,
    explicit: Mapping[str, Any] | None = None,
    configured: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """librdkafka properties: explicit > config file > KEYGUARD_KAFKA_* > librdkafka's default.

    `KEYGUARD_KAFKA_SASL_PASSWORD=x` is `sasl.password=x`. librdkafka itself validates names
    and values when a client is built (an unknown or bad property is exit 2, naming it).
    """
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for name, value in env.items():
        if name.startswith(KAFKA_ENV_PREFIX) and len(name) > len(KAFKA_ENV_PREFIX):
            out[name[len(KAFKA_ENV_PREFIX):].lower().replace("_", ".")] = value
    for layer, what in ((configured or {}, "the config file's [kafka]"),
                        (explicit or {}, "--kafka-config")):
        for key, value in layer.items():
            if not isinstance(key, str) or not key.strip() or key != key.strip():
                raise InvalidOptionError(f"{what}: {key!r} is not a Kafka property name",
                                         hint="write KEY=VALUE, e.g. security.protocol=SSL")
            if isinstance(value, (dict, list)):
                raise InvalidOptionError(f"{what}: {key} must be a string, number or boolean",
                                         hint="librdkafka properties are flat KEY=VALUE")
            out[key] = value
    return out


_SASL_PROTOCOLS = ("sasl_plaintext", "sasl_ssl")
_SSL_PROTOCOLS = ("ssl", "sasl_ssl")


def reject_unused_kafka(given: Mapping[str, Any], resolved: Mapping[str, Any],
                        what: str = "--kafka-config") -> None:
    """SASL or SSL properties that librdkafka would ignore under the resolved
    security.protocol (a password given for a PLAINTEXT connection) exit 2, naming them.

    Only options and the config file are held to it: the environment may carry credentials
    for other brokers.
    """
    protocol = str(resolved.get("security.protocol", "plaintext")).lower()
    unused = sorted(k for k in given if (k.startswith("sasl.") and protocol not in _SASL_PROTOCOLS)
                    or (k.startswith("ssl.") and protocol not in _SSL_PROTOCOLS))
    if unused:
        raise InvalidOptionError(
            f"{what}: {', '.join(unused)} would not be used with security.protocol="
            f"{protocol.upper()}",
            hint="set security.protocol (SASL_SSL, SASL_PLAINTEXT or SSL), or drop them")
