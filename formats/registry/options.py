"""How to reach a schema registry, declared: Flink's avro-confluent connection options.

Plain declarations (no backend, no network), so a format that uses a registry declares these
with its own options (`keyguard.formats.avro_confluent_format`) without importing what opens one
(`keyguard.formats.registry.connect`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keyguard.formats.options import Option, OptionSet, duration_option

ENV_USER_INFO = "KEYGUARD_REGISTRY_USER_INFO"
ENV_BEARER_TOKEN = "KEYGUARD_REGISTRY_BEARER_TOKEN"

REGISTRY_OPTIONS = OptionSet(
    "schema registry",
    (
        Option("basic-auth.credentials-source", str, None,
               "Where basic-auth credentials come from: USER_INFO (basic-auth.user-info or "
               f"{ENV_USER_INFO}), URL (user:password@ in the URL), SASL_INHERIT "
               "(properties.sasl.jaas.config, or properties.sasl.username/sasl.password).",
               choices=("USER_INFO", "URL", "SASL_INHERIT")),
        Option("basic-auth.user-info", str, None,
               f"`user:password` for basic auth; or set {ENV_USER_INFO}."),
        Option("bearer-auth.credentials-source", str, None,
               "STATIC_TOKEN (bearer-auth.token or "
               f"{ENV_BEARER_TOKEN}), OAUTHBEARER or OAUTHBEARER_AZURE_IMDS (their settings "
               "as properties.bearer.auth.*).",
               choices=("STATIC_TOKEN", "OAUTHBEARER", "OAUTHBEARER_AZURE_IMDS",
                        "SASL_OAUTHBEARER_INHERIT", "CUSTOM")),
        Option("bearer-auth.token", str, None,
               f"A static bearer token; or set {ENV_BEARER_TOKEN}."),
        Option("ssl.keystore.location", str, None,
               "Client certificate and key for mutual TLS: a PEM file (certificate + key) or a "
               "PKCS12 keystore. JKS is not readable from Python: export PKCS12 or PEM."),
        Option("ssl.keystore.password", str, None,
               "Password of the PKCS12 keystore, or of the PEM private key."),
        Option("ssl.truststore.location", str, None,
               "CA certificates to trust: a PEM file or a PKCS12 truststore (not JKS)."),
        Option("ssl.truststore.password", str, None, "Password of the PKCS12 truststore."),
        duration_option("timeout", 10_000,
                        "Timeout of one try of an HTTP request to the registry, e.g. 10s, "
                        "500ms. A request as a whole, its retries and their backoff "
                        "included, ends within timeout x (retries + 1) + retry-backoff-max x "
                        "retries + 1s, however slowly an answer trickles in (exit code 3)."),
        Option("retries", int, 3,
               "Retries of a request that failed to connect, timed out, or got HTTP 408, "
               "429 or 5xx; then the registry counts as unavailable (exit code 3)."),
        duration_option("retry-backoff", 1000,
                        "Wait before the first retry; doubles each time, with full jitter."),
        duration_option("retry-backoff-max", 20_000, "Longest wait between two retries."),
    ),
    passthrough_prefixes=("properties.",),
)


def connection_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The registry-connection options out of a format's option map (url, subject dropped)."""
    declared = set(REGISTRY_OPTIONS.keys())
    return {k: v for k, v in options.items() if k in declared or k.startswith("properties.")}


def is_registry_option(key: str) -> bool:
    """An avro-confluent option that is about reaching the registry (not the schema)."""
    return key in REGISTRY_OPTIONS.keys() or key.startswith("properties.")


def is_registry_table_option(key: str) -> bool:
    """A table option that says how to reach a format's registry (`key.avro-confluent.url`,
    `value.json-registry.basic-auth.user-info`, ...): the run's own registry replaces them."""
    parts = key.split(".", 2)
    return len(parts) == 3 and (parts[2] == "url" or is_registry_option(parts[2]))
