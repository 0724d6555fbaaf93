"""A Confluent-compatible schema registry over HTTP, through confluent-kafka's client.

The client brings auth, TLS, timeouts and retries; this module adds what a guard needs on top:
answers that are never a stale cached "latest", errors that say whether the registry was
unreachable (exit 3) or refused the request (exit 2), and no credentials in any message.
Build the client configuration with `keyguard.formats.registry.connect.open_registry`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import OAuthTokenError, SchemaRegistryError

from keyguard.formats.errors import InvalidOptionError, RegistryError, RegistryUnavailableError
from keyguard.formats.registry import (
    COMPATIBILITY_LEVELS,
    CompatibilityAnswer,
    Registration,
    SchemaVersion,
    no_guids,
    parse_guid,
)
from keyguard.formats.registry.mock import references_of, schema_references
from keyguard.formats.secrets import redact, redact_url

try:  # the client uses httpx2 when it is installed, else httpx; catch what it raises
    import httpx2 as _httpx
except ImportError:  # pragma: no cover - depends on the installed client
    import httpx as _httpx  # type: ignore[no-redef]

T = TypeVar("T")
_RETRIABLE = (408, 429, 500, 502, 503, 504)
#: Confluent's "not found" error codes (40401 subject, 40402 version, 40403 schema, 40408 no
#: subject-level config, ...). Only these make an HTTP 404 a registry's answer: a bare 404 is a
#: URL that does not point at a registry's API (a wrong path, a proxy, another server).
_NOT_FOUND_CODES = range(40401, 40500)


class _NotFoundError(RegistryError):
    """A registry's own 404 (error_code 404xx): a subject, version or id that does not exist."""


class _NoSuchRouteError(RegistryUnavailableError):
    """A 404 without a registry's error code: no such API at this URL (a wrong URL, or a
    registry without that endpoint)."""


def total_deadline(conf: Mapping[str, Any]) -> float:
    """Seconds a request may take in all: every try's timeout, and the backoff between them."""
    timeout = float(conf.get("timeout") or 10.0)
    retries = int(conf.get("max.retries") or 0)
    backoff = float(conf.get("retries.max.wait.ms") or 0) / 1000
    return timeout * (retries + 1) + backoff * retries + 1.0


class HttpRegistry:
    """One registry URL (or a comma-separated list of them) behind the `Registry` protocol."""

    def __init__(self, conf: Mapping[str, Any], *, name: str | None = None,
                 secrets: Sequence[str] = ()) -> None:
        self._secrets = tuple(s for s in secrets if s)
        self.name = name or ",".join(redact_url(u) for u in str(conf.get("url", "")).split(","))
        self._timeout = conf.get("timeout")
        self._proven = False
        self._retries = conf.get("max.retries", 3)
        self._deadline_s = total_deadline(conf)
        try:
            self._client = SchemaRegistryClient(dict(conf))
        except (ValueError, TypeError) as exc:
            raise InvalidOptionError(
                f"schema registry {self.name}: {self._redact(exc)}",
                hint="see the schema registry options in the docs (docs/how-to/registries.md); "
                     "properties.* keys go to confluent-kafka's SchemaRegistryClient unchanged"
            ) from None

    @property
    def client(self) -> SchemaRegistryClient:
        """The underlying client, for confluent-kafka serializers that need one."""
        return self._client

    def __repr__(self) -> str:
        return f"HttpRegistry({self.name!r})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- error translation

    def _redact(self, exc: object) -> str:
        return redact(str(exc), self._secrets)

    @contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        """Turn the client's exceptions into keyguard's: unreachable (3) or refused (2)."""
        where = f"schema registry {self.name}"
        try:
            yield
        except SchemaRegistryError as exc:
            raise self._answered(exc, where, what) from None
        except _httpx.TimeoutException:
            raise RegistryUnavailableError(
                f"{where} did not answer within {self._timeout}s to {what} "
                f"(tried {self._retries + 1} times)",
                hint="check the URL and the network, or raise 'timeout'") from None
        except _httpx.TransportError as exc:
            raise self._unreachable(exc, where, what) from None
        except OAuthTokenError as exc:
            raise RegistryUnavailableError(
                f"{where}: could not get an OAuth token to {what}: {self._redact(exc.message)}",
                hint="check the properties.bearer.auth.* settings") from None
        except _httpx.HTTPError as exc:  # a body that cannot be read (gzip junk), redirects
            raise RegistryUnavailableError(
                f"{where} answered a request to {what} with something that cannot be read: "
                f"{type(exc).__name__}: {self._redact(exc)}",
                hint="check the --registry URL (a proxy or another server may answer it)"
            ) from None
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            raise self._unexpected(exc, where, what) from None

    def _answered(self, exc: SchemaRegistryError, where: str, what: str) -> RegistryError:
        """The error for an HTTP error answer, by its status and the registry's error code."""
        status, message = exc.http_status_code, redact(str(exc.error_message), self._secrets)
        if status == 401:
            return RegistryUnavailableError(
                f"{where} refused the credentials (HTTP 401) to {what}",
                hint="check basic-auth.user-info / bearer-auth.token or the "
                     "KEYGUARD_REGISTRY_USER_INFO / KEYGUARD_REGISTRY_BEARER_TOKEN "
                     "environment variables")
        if status == 403:
            return RegistryUnavailableError(
                f"{where} denied access (HTTP 403) to {what}: {message}",
                hint="the credentials are valid but lack permission on this subject; "
                     "ask the registry's administrator")
        if status in _RETRIABLE or status >= 500:
            return RegistryUnavailableError(
                f"{where} answered HTTP {status} to {what} after {self._retries} "
                f"retries: {message}",
                hint="the registry is overloaded or down; try again later, or raise "
                     "'retries' / 'retry-backoff'")
        if 300 <= status < 400 or (400 <= status < 500 and exc.error_code in (None, -1)
                                    and status != 404):
            return RegistryUnavailableError(
                f"{where} answered HTTP {status} without a schema registry's error to "
                f"{what} ({message[:120]}): the URL does not point at a schema registry's "
                "API (a redirect, a proxy or another server answers it)",
                hint="check the --registry URL: scheme, host, port and path; give the "
                     "URL a redirect points to")
        if status == 404 and exc.error_code not in _NOT_FOUND_CODES:
            return _NoSuchRouteError(
                f"{where} answered HTTP 404 without a schema registry error code to "
                f"{what}: the URL does not point at a schema registry's API",
                hint="check the --registry URL: scheme, host, port and path (a registry "
                     "answers GET /subjects at the URL's root)")
        if status == 404:
            return _NotFoundError(f"{where}: {message} (HTTP 404, code {exc.error_code}) "
                                  f"to {what}")
        return RegistryError(
            f"{where} rejected the request to {what}: {message} "
            f"(HTTP {status}, code {exc.error_code})")

    def _unreachable(self, exc: Exception, where: str, what: str) -> RegistryError:
        reason = self._redact(exc) or type(exc).__name__
        hint = "check the URL, that the registry is running and that this host can reach it"
        if "CERTIFICATE_VERIFY_FAILED" in reason or "certificate" in reason.lower():
            hint = ("the registry's TLS certificate is not trusted: set "
                    "ssl.truststore.location (PEM or PKCS12) or properties.ssl.ca.location "
                    "to the CA that signed it")
        return RegistryUnavailableError(
            f"{where} could not be reached to {what} (tried {self._retries + 1} times): "
            f"{reason}", hint=hint)

    def _unexpected(self, exc: Exception, where: str, what: str) -> RegistryError:
        # The client validates bearer fields at request time (a ValueError naming them);
        # anything else is an answer no registry sends: not JSON (an HTML page, a proxy),
        # not UTF-8, or JSON of another shape.
        if isinstance(exc, ValueError) and "bearer" in str(exc).lower():
            return RegistryError(f"{where}: {self._redact(exc)} (to {what})")
        return RegistryUnavailableError(
            f"{where} answered a request to {what} with something a schema registry does "
            f"not send ({type(exc).__name__}: {self._redact(exc)[:200]}): the URL does not "
            "point at a schema registry's API",
            hint="check the --registry URL: scheme, host, port and path")

    def _fresh(self, what: str, call: Callable[[], T]) -> T:
        """Ask the registry itself: the client's caches are dropped first. The client's timeout
        bounds each read, not an answer that trickles in: the whole request (its retries
        included) gets `total_deadline` seconds, or RegistryUnavailableError."""
        self._client.clear_caches()
        with self._translate(what):
            return self._within_deadline(what, call)

    def _within_deadline(self, what: str, call: Callable[[], T]) -> T:
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = call()
            except BaseException as exc:  # handed back to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=run, name="keyguard-registry-request", daemon=True)
        worker.start()
        worker.join(self._deadline_s)
        if worker.is_alive():
            raise RegistryUnavailableError(
                f"schema registry {self.name} did not finish answering a request to {what} "
                f"within {self._deadline_s:g}s (the timeout of {self._timeout}s per try, "
                f"{self._retries + 1} tries, and their backoff)",
                hint="check the registry and the network; raise 'timeout' (and 'retries') "
                     "for a registry that is slow to answer")
        if "error" in box:
            raise box["error"]
        return box["value"]  # type: ignore[no-any-return]

    # -- the proof that this is a registry

    def prove(self) -> None:
        """Fail unless the URL answers a registry request (`GET /subjects`) like a registry.

        "No versions yet" is a verdict only after this: a wrong path, a web server or a proxy
        that answers 404 to everything must not pass for an empty registry. Proved once.
        """
        if self._proven:
            return
        where = f"schema registry {self.name}"
        try:
            answer = self._fresh("list subjects (GET /subjects)", self._client.get_subjects)
        except RegistryUnavailableError as exc:
            if "(HTTP 403)" not in exc.message:
                raise
            # Credentials scoped to some subjects may not list them all: GET /config is a
            # registry request too, and its answer is as registry-shaped.
            level = self._fresh("read the global compatibility level (GET /config)",
                                self._client.get_compatibility)
            if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
                raise RegistryUnavailableError(
                    f"{where} answered GET /config with something that is not a "
                    "compatibility level: the URL does not point at a schema registry's API",
                    hint="check the --registry URL: scheme, host, port and path") from None
            self._proven = True
            return
        except RegistryError as exc:
            raise RegistryUnavailableError(
                f"{where} is not a schema registry: {exc.message}",
                hint="check the --registry URL: scheme, host, port and path") from None
        if not isinstance(answer, list) or not all(isinstance(s, str) for s in answer):
            raise RegistryUnavailableError(
                f"{where} answered GET /subjects with something that is not a list of "
                "subjects: the URL does not point at a schema registry's API",
                hint="check the --registry URL: scheme, host, port and path")
        self._proven = True

    # -- the Registry protocol

    def subjects(self) -> list[str]:
        return sorted(self._fresh("list subjects", self._client.get_subjects))

    def versions(self, subject: str) -> list[int]:
        try:
            found = self._fresh(f"list versions of subject '{subject}'",
                                lambda: self._client.get_versions(subject))
        except _NotFoundError:
            return []
        return sorted(self._whole(v, f"a version of subject '{subject}'") for v in found)

    def get_version(self, subject: str, version: int | str = "latest") -> SchemaVersion:
        # get_version("latest") never reads the client's latest-version cache (unlike
        # get_latest_version), and _fresh clears the per-version cache too.
        rs = self._fresh(f"read version {version} of subject '{subject}'",
                         lambda: self._client.get_version(subject, version))  # type: ignore[arg-type]
        schema = rs.schema
        what = f"version {version} of subject '{subject}'"
        text = getattr(schema, "schema_str", None)
        if not isinstance(text, str):
            raise self._not_registry(what, "a schema that is not text")
        return SchemaVersion(subject, self._whole(rs.version or 0, what),
                             self._whole(rs.schema_id or 0, what), text,
                             str(schema.schema_type or "AVRO"), references_of(schema),
                             self._guid(rs.guid, what) if rs.guid is not None else None)

    def all_versions(self, subject: str) -> list[SchemaVersion]:
        return [self.get_version(subject, v) for v in self.versions(subject)]

    def get_by_id(self, schema_id: int) -> tuple[str, str]:
        what = f"read schema id {schema_id}"
        schema = self._fresh(what, lambda: self._client.get_schema(schema_id))
        text = getattr(schema, "schema_str", None)
        if not isinstance(text, str):
            raise self._not_registry(what, "a schema that is not text")
        return str(schema.schema_type or "AVRO"), text

    def get_by_guid(self, guid: str) -> tuple[str, str]:
        """`GET /schemas/guids/{guid}` (confluent-kafka's `get_schema_by_guid`). A registry
        that proved itself (`GET /subjects`) and then answers this with a bare 404 has no
        GUIDs: a RegistryError (exit 2), not an unreachable registry."""
        want = parse_guid(guid)
        what = f"read schema GUID {want} (GET /schemas/guids/{want})"
        try:
            schema = self._fresh(what, lambda: self._client.get_schema_by_guid(want))
        except _NoSuchRouteError:
            self.prove()  # a URL that is no registry's API stays exit 3
            raise no_guids(self.name, f"it answered GET /schemas/guids/{want} with HTTP 404 "
                                      "and no schema registry error code") from None
        text = getattr(schema, "schema_str", None)
        if not isinstance(text, str):
            raise self._not_registry(what, "a schema that is not text")
        return str(schema.schema_type or "AVRO"), text

    def references_of_id(self, schema_id: int) -> tuple[dict[str, object], ...]:
        """The references of the schema registered under `schema_id`."""
        return references_of(self._fresh(f"read schema id {schema_id}",
                                       lambda: self._client.get_schema(schema_id)))

    def lookup(self, subject: str, schema: str, schema_type: str = "AVRO",
               references: Sequence[Mapping[str, object]] = ()) -> SchemaVersion | None:
        candidate = Schema(schema, schema_type, schema_references(references))
        try:
            rs = self._fresh(f"look up a schema in subject '{subject}'",
                             lambda: self._client.lookup_schema(subject, candidate))
        except _NotFoundError:
            return None
        return self.get_version(subject, self._whole(rs.version or 0, f"a lookup in subject "
                                                                   f"'{subject}'"))

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, object]] = ()) -> int:
        what = f"register a schema in subject '{subject}'"
        return self._whole(self._fresh(what, lambda: self._client.register_schema(
            subject, Schema(schema, schema_type, schema_references(references)))), what)

    def register_guid(self, subject: str, schema: str, schema_type: str = "AVRO",
                      references: Sequence[Mapping[str, object]] = ()) -> Registration:
        """`register`, with the `guid` of Confluent's answer (8.0 and later); a registry that
        answers none has no GUIDs (RegistryError, exit 2; the schema is registered)."""
        what = f"register a schema in subject '{subject}'"
        rs = self._fresh(what, lambda: self._client.register_schema_full_response(
            subject, Schema(schema, schema_type, schema_references(references))))
        schema_id = self._whole(rs.schema_id, what)
        if rs.guid is None:
            raise no_guids(self.name, f"it registered the schema in subject '{subject}' "
                                      f"under id {schema_id} and answered no guid")
        return Registration(schema_id, self._guid(rs.guid, what))

    def _guid(self, value: object, what: str) -> str:
        """A GUID the registry answered, in canonical form, else no registry's answer."""
        try:
            return parse_guid(value)
        except RegistryError:
            raise self._not_registry(what, f"{str(value)[:60]!r} where a GUID belongs") from None

    def _whole(self, value: object, what: str) -> int:
        """A version or id the registry answered: a whole number, else no registry's answer."""
        if isinstance(value, bool) or not isinstance(value, (int, str)) \
                or not str(value).strip().lstrip("-").isdigit():
            raise self._not_registry(what, f"{value!r} where a number belongs")
        return int(value)

    def _not_registry(self, what: str, found: str) -> RegistryUnavailableError:
        return RegistryUnavailableError(
            f"schema registry {self.name} answered {what} with {found}: the URL does not point "
            "at a schema registry's API",
            hint="check the --registry URL: scheme, host, port and path")

    def compatibility(self, subject: str) -> str:
        try:
            return str(self._fresh(f"read the compatibility level of subject '{subject}'",
                                   lambda: self._client.get_compatibility(subject))).upper()
        except _NotFoundError:  # no subject-level setting: the registry's default applies
            return str(self._fresh("read the global compatibility level",
                                   self._client.get_compatibility)).upper()

    def check_compatibility(self, subject: str, schema: str, schema_type: str = "AVRO",
                            references: Sequence[Mapping[str, object]] = ()
                            ) -> CompatibilityAnswer | None:
        """The registry's verdict, with its verbose messages.

        Asks `/compatibility/subjects/S/versions/latest?verbose=true` (Karapace has no
        all-versions endpoint); for *_TRANSITIVE levels, asks once per registered version.
        """
        level = self.compatibility(subject)
        targets: list[int | str] = ["latest"]
        if level.endswith("_TRANSITIVE"):
            targets = list(self.versions(subject))
        ok, messages = True, []
        for target in targets:
            try:
                answer = self._fresh(f"check compatibility with version {target} of subject "
                                     f"'{subject}'",
                                     partial(self._test, subject, schema, schema_type, target,
                                             references))
            except _NotFoundError:  # no such subject (or version): nothing to be incompatible with
                continue
            ok = ok and bool(answer.get("is_compatible"))
            found = [str(m) for m in answer.get("messages") or []]
            messages += [f"version {target}: {m}" for m in found] if len(targets) > 1 else found
        return CompatibilityAnswer(ok, tuple(redact(m, self._secrets) for m in messages))

    def _test(self, subject: str, schema: str, schema_type: str, version: int | str,
              references: Sequence[Mapping[str, object]] = ()) -> dict[str, Any]:
        body = Schema(schema, schema_type, schema_references(references)).to_dict()
        rest = getattr(self._client, "_rest_client", None)
        if rest is None:  # pragma: no cover - a client without it: verdict without messages
            return {"is_compatible": self._client.test_compatibility(
                subject, Schema(schema, schema_type, schema_references(references)), version,
                verbose=True)}
        # The client's test_compatibility returns only the boolean; its REST layer (same
        # auth, TLS, retries) returns the whole answer, messages included.
        answer = rest.post(f"compatibility/subjects/{quote(subject, safe='')}/versions/"
                           f"{version}?verbose=true", body=body)
        return dict(answer or {})
