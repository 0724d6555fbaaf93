"""Opening a registry from a URL and Flink's avro-confluent connection options.

`open_registry(url, config)` picks the backend by scheme: `http(s)://` (a comma-separated list
is allowed) -> HttpRegistry, `file://DIR` or an existing directory -> FileRegistry,
`mock://NAME` -> MockRegistry. `config` uses Flink's `avro-confluent.*` option names without
the prefix, so a Flink DDL's options work unchanged; `REGISTRY_OPTIONS` declares them.

Credentials may also come from the environment, so they stay out of shell history and DDL:
`KEYGUARD_REGISTRY_USER_INFO` (`user:password`, basic auth) and
`KEYGUARD_REGISTRY_BEARER_TOKEN` (a static bearer token). Options win over the environment.
The HTTP client's settings are built in `keyguard.formats.registry.http_settings`, loaded only for
an http(s) URL: a check against a file registry does not compile them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from keyguard.formats.errors import InvalidOptionError, RegistryUnavailableError
from keyguard.formats.options import ResolvedOptions
from keyguard.formats.registry import CompatibilityAnswer, Registration, Registry, SchemaVersion
from keyguard.formats.registry.options import (  # noqa: F401  ENV_*: re-exported, declared there
    ENV_BEARER_TOKEN,
    ENV_USER_INFO,
    REGISTRY_OPTIONS,
    connection_options,
)
from keyguard.formats.secrets import redact_url


def open_registry(url: str, config: Mapping[str, Any] | None = None,
                  *, environ: Mapping[str, str] | None = None) -> Registry:
    """The registry at `url`; `config` holds connection options (see REGISTRY_OPTIONS)."""
    url = url.strip()
    config = dict(config or {})
    if url.startswith("mock://"):
        # lazy: only the backend the URL names is loaded (mock and http load confluent_kafka)
        from keyguard.formats.registry.mock import MockRegistry

        REGISTRY_OPTIONS.validate(config, where=f"schema registry {url}")
        return MockRegistry(url[len("mock://"):] or "default")
    if url.startswith("file://") or (url and "://" not in url and Path(url).exists()):
        from keyguard.formats.registry.file import (
            FileRegistry,  # lazy: only the backend the URL names
        )

        REGISTRY_OPTIONS.validate(config, where=f"schema registry {url}")
        return FileRegistry(url.removeprefix("file://"))
    if url.startswith(("http://", "https://")):
        # lazy: only the backend the URL names (and its client settings)
        from keyguard.formats.registry.http import HttpRegistry
        from keyguard.formats.registry.http_settings import http_client_settings

        settings = http_client_settings(url, config,
                                        os.environ if environ is None else environ)
        try:
            return HttpRegistry(settings.conf, name=settings.name, secrets=settings.secrets)
        finally:
            settings.cleanup()
    if url and "://" not in url:
        raise RegistryUnavailableError(
            f"schema registry directory {redact_url(url)!r} does not exist",
            hint=f"check the path; create it (mkdir -p {url}/subjects), or write file://{url} "
                 "to have it created on the first register")
    raise InvalidOptionError(
        f"schema registry URL {redact_url(url)!r} is not supported",
        hint="use http(s)://HOST:PORT, file://DIR (or an existing directory), or mock://NAME")


def open_for(options: ResolvedOptions | Mapping[str, Any], *,
             environ: Mapping[str, str] | None = None, lazy: bool = True) -> Registry:
    """The registry a format's declared options name (`url` and the connection options),
    opened on first use: the edge hands it to the codec (`CodecContext.registry`), and building
    a plan that never asks it (an avro-confluent codec without references) opens nothing.

    `options` is a format's options, resolved (`ResolvedOptions`) or as a plain mapping;
    `lazy=False` opens it now (an unsupported URL fails here)."""
    if isinstance(options, ResolvedOptions):
        values = {**options.values, **options.extra}
    else:
        values = dict(options)
    url = str(values.get("url") or values.get("schema-registry.url") or "")
    config = {k: v for k, v in connection_options(values).items() if v is not None}
    if not lazy:
        return open_registry(url, config, environ=environ)
    return OnFirstUse(url, config, environ)


class OnFirstUse:
    """A `Registry` opened (`open_registry`) the first time it is asked something."""

    def __init__(self, url: str, config: Mapping[str, Any],
                 environ: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.config = dict(config)
        self.environ = environ
        self.name = redact_url(url)
        self._opened: Registry | None = None

    def __repr__(self) -> str:
        return f"OnFirstUse({self.name!r})"

    @property
    def opened(self) -> Registry:
        if self._opened is None:
            # Through the module global, so a test's patch of open_registry applies here too.
            self._opened = open_registry(self.url, self.config, environ=self.environ)
            self.name = self._opened.name
        return self._opened

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.opened, attr)

    def subjects(self) -> list[str]:
        return self.opened.subjects()

    def versions(self, subject: str) -> list[int]:
        return self.opened.versions(subject)

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        return self.opened.get_version(subject, version)

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        return self.opened.all_versions(subject)

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        return self.opened.get_by_id(schema_id)

    def get_by_guid(self, guid: str) -> tuple[str, str]:
        return self.opened.get_by_guid(guid)

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion | None:
        return self.opened.lookup(subject, schema, schema_type, references)

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        return self.opened.register(subject, schema, schema_type, references)

    def register_guid(self, subject: str, schema: str, schema_type: str = "AVRO",
                      references: Sequence[Mapping[str, object]] = ()) -> Registration:
        return self.opened.register_guid(subject, schema, schema_type, references)

    def compatibility(self, subject: str) -> str:
        return self.opened.compatibility(subject)

    def check_compatibility(self, subject: str, schema: str, schema_type: str = "AVRO",
                            references: Sequence[Mapping[str, object]] = ()
                            ) -> CompatibilityAnswer | None:
        return self.opened.check_compatibility(subject, schema, schema_type, references)
