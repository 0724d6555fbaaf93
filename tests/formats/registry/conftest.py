"""A small Confluent-REST-compatible registry on 127.0.0.1, for testing the HTTP backend for real.

It speaks the subset keyguard uses (like Karapace, it has no all-versions compatibility
endpoint), checks basic or bearer auth, and injects faults: a queue of error statuses to answer
first (retries), a delay (timeouts), HTTP 403. HTTPS uses certificates made by `cryptography`.
With `echo_status` set it answers every request with that status and an error body that repeats
the request's Authorization header as a careless registry or proxy does (raw, decoded,
URL-encoded, and the headers as JSON), for the tests that no secret is ever printed.

With `guids` set it has schema GUIDs as Confluent Schema Registry 8.0 and later: `guid` in the
register and version answers, and `GET /schemas/guids/{guid}`; without it, like Karapace and
earlier Confluent versions, it has none and that route is a bare `404` (no registry error code).

Like a real server in front of a registry, it also serves paths that are not the registry's API:
under `/nope` every request gets a bare `404 "Not Found"` (no Confluent error_code), under
`/html` a `200` HTML page. A registry URL with such a path must never pass for an empty registry.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest


def _canon(schema: str) -> str:
    try:
        return json.dumps(json.loads(schema), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return schema.strip()


@dataclass
class RegistryState:
    """What the fake registry holds and how it misbehaves; tests change it directly."""

    subjects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    schemas: dict[int, dict[str, Any]] = field(default_factory=dict)
    global_level: str = "BACKWARD"
    subject_levels: dict[str, str] = field(default_factory=dict)
    basic: tuple[str, str] | None = None
    bearer: str | None = None
    forbidden: bool = False
    #: Paths answered with HTTP 403 (credentials scoped to some subjects).
    forbidden_paths: set[str] = field(default_factory=set)
    fail_next: list[int] = field(default_factory=list)
    delay: float = 0.0
    echo_status: int | None = None
    requests: list[tuple[str, str, dict[str, list[str]], dict[str, str]]] = field(
        default_factory=list)
    #: The JSON bodies of POST requests, in order (references included).
    bodies: list[Any] = field(default_factory=list)
    #: Whether it has schema GUIDs (Confluent 8.0 and later).
    guids: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def guid_of(self, schema_id: int) -> str:
        """The GUID of a schema id: any stable UUID serves a test."""
        return str(uuid.uuid5(uuid.NAMESPACE_OID, f"fake-registry-schema-{schema_id}"))

    def with_guid(self, answer: dict[str, Any], schema_id: int) -> dict[str, Any]:
        return {**answer, "guid": self.guid_of(schema_id)} if self.guids else answer

    def add(self, subject: str, schema: str, schema_type: str = "AVRO",
            references: list[dict[str, Any]] | None = None) -> tuple[int, int]:
        """Register as the registry would (same schema and references -> same id); returns
        (id, version). References are stored and returned as Confluent's (omitted if none)."""
        refs = {"references": list(references)} if references else {}
        with self.lock:
            versions = self.subjects.setdefault(subject, [])
            for v in versions:
                if _same(v, schema, references):
                    return v["id"], v["version"]
            schema_id = next((i for i, s in self.schemas.items()
                              if _same(s, schema, references)), len(self.schemas) + 1)
            self.schemas[schema_id] = {"schema": schema, "schemaType": schema_type, **refs}
            version = versions[-1]["version"] + 1 if versions else 1
            versions.append({"version": version, "id": schema_id, "schema": schema,
                             "schemaType": schema_type, **refs})
            return schema_id, version


def _same(stored: dict[str, Any], schema: str, references: list[dict[str, Any]] | None) -> bool:
    return _canon(stored["schema"]) == _canon(schema) and \
        (stored.get("references") or []) == (references or [])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: Any, content_type: str | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type",
                         content_type or "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, code: int, message: str) -> None:
        self._send(status, {"error_code": code, "message": message})

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _authorized(self, state: RegistryState) -> bool:
        header = self.headers.get("Authorization", "")
        if state.basic is not None:
            expected = base64.b64encode(":".join(state.basic).encode()).decode()
            return header == f"Basic {expected}"
        if state.bearer is not None:
            return header == f"Bearer {state.bearer}"
        return True

    def _echo(self, status: int) -> None:
        header = self.headers.get("Authorization", "")
        scheme, _, credentials = header.partition(" ")
        try:
            decoded = base64.b64decode(credentials).decode() if scheme == "Basic" else credentials
        except ValueError:
            decoded = credentials
        headers = json.dumps(dict(self.headers))
        self._error(status, status * 100 + 1,
                    f"request refused by proxy. Authorization: {header}; credentials "
                    f"{decoded} ({quote(decoded, safe='')}); headers {headers}")

    def _dispatch(self, method: str) -> None:
        state = self.server.state
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        with state.lock:
            state.requests.append((method, parts.path, query, dict(self.headers)))
            if body is not None:
                state.bodies.append(body)
            failure = state.fail_next.pop(0) if state.fail_next else None
        if state.delay:
            time.sleep(state.delay)
        if failure is not None:
            return self._error(failure, failure * 100 + 1, f"injected HTTP {failure}")
        if state.echo_status is not None:
            return self._echo(state.echo_status)
        if not self._authorized(state):
            return self._error(401, 401, "Unauthorized")
        if state.forbidden or parts.path in state.forbidden_paths:
            return self._error(403, 40301, "User is denied operation on this server")
        segs = [unquote(s) for s in parts.path.strip("/").split("/")]
        if segs[0] == "nope":  # not the registry's API: a bare 404, as a web server answers
            return self._send(404, "Not Found", "application/json")
        if segs[0] == "html":
            return self._send(200, b"<html><body>Welcome</body></html>", "text/html")
        try:
            self._route(method, segs, query, body, state)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _route(self, method: str, segs: list[str], query: dict[str, list[str]], body: Any,
               state: RegistryState) -> None:
        verbose = query.get("verbose", ["false"])[0].lower() == "true"
        match method, segs:
            case "GET", ["subjects"]:
                return self._send(200, sorted(state.subjects))
            case "GET", ["subjects", s, "versions"]:
                if s not in state.subjects:
                    return self._error(404, 40401, f"Subject '{s}' not found.")
                return self._send(200, [v["version"] for v in state.subjects[s]])
            case "GET", ["subjects", s, "versions", v]:
                found = self._version(s, v, state)
                if found is not None:
                    out = state.with_guid({"subject": s, **found}, found["id"])
                    if out["schemaType"] == "AVRO":
                        del out["schemaType"]  # as Confluent: AVRO is implied
                    return self._send(200, out)
                return None
            case "GET", ["schemas", "ids", i]:
                schema = state.schemas.get(int(i))
                if schema is None:
                    return self._error(404, 40403, "Schema not found")
                return self._send(200, schema)
            case "GET", ["schemas", "guids", g] if state.guids:
                found_id = next((i for i in state.schemas if state.guid_of(i) == g), None)
                if found_id is None:
                    return self._error(404, 40403, "Schema not found")
                return self._send(200, state.with_guid(state.schemas[found_id], found_id))
            case "POST", ["subjects", s]:
                if s not in state.subjects:
                    return self._error(404, 40401, f"Subject '{s}' not found.")
                for v in state.subjects[s]:
                    if _same(v, body["schema"], body.get("references")):
                        return self._send(200, {"subject": s, **v})
                return self._error(404, 40403, "Schema not found")
            case "POST", ["subjects", s, "versions"]:
                if "INCOMPATIBLE" in body["schema"]:
                    return self._error(409, 409, "Schema being registered is incompatible "
                                                 "with an earlier schema")
                schema_id, _ = state.add(s, body["schema"], body.get("schemaType", "AVRO"),
                                         body.get("references"))
                return self._send(200, state.with_guid({"id": schema_id}, schema_id))
            case "GET", ["config"]:
                return self._send(200, {"compatibilityLevel": state.global_level})
            case "GET", ["config", s]:
                level = state.subject_levels.get(s)
                if level is None and query.get("defaultToGlobal", ["false"])[0] == "true":
                    level = state.global_level
                if level is None:
                    return self._error(404, 40408, f"Subject '{s}' does not have "
                                                   "subject-level compatibility configured")
                return self._send(200, {"compatibilityLevel": level})
            case "POST", ["compatibility", "subjects", s, "versions", v]:
                if self._version(s, v, state) is None:
                    return None
                ok = "INCOMPATIBLE" not in body["schema"]
                answer: dict[str, Any] = {"is_compatible": ok}
                if verbose:
                    answer["messages"] = [] if ok else [
                        f"{{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', "
                        f"description:'new field has no default (against version {v})'}}"]
                return self._send(200, answer)
        return self._error(404, 404, "HTTP 404 Not Found")

    def _version(self, s: str, v: str, state: RegistryState) -> dict[str, Any] | None:
        versions = state.subjects.get(s)
        if not versions:
            self._error(404, 40401, f"Subject '{s}' not found.")
            return None
        if v in ("latest", "-1"):
            return dict(versions[-1])
        for found in versions:
            if str(found["version"]) == v:
                return dict(found)
        self._error(404, 40402, f"Version {v} not found.")
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: RegistryState

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is expected here


@dataclass
class FakeRegistry:
    url: str
    state: RegistryState
    server: _Server


def _start(tls: ssl.SSLContext | None = None) -> FakeRegistry:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = RegistryState()
    scheme = "http"
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    return FakeRegistry(f"{scheme}://127.0.0.1:{server.server_address[1]}", server.state, server)


@pytest.fixture
def registry_server() -> Iterator[FakeRegistry]:
    fake = _start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- TLS ---------------------------------------------------------------------------------------


@dataclass
class TlsFiles:
    ca_pem: Path
    server_pem: Path
    server_key: Path
    client_pem_bundle: Path  # client certificate + unencrypted key in one PEM
    client_p12: Path  # client keystore, password "keystore-pw"
    trust_p12: Path  # truststore holding the CA, password "truststore-pw"


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    d = tmp_path_factory.mktemp("tls")
    now = dt.datetime.now(dt.timezone.utc)

    def cert(cn: str, key: Any, issuer: Any, issuer_key: Any, *, ca: bool = False,
             san: list[Any] | None = None) -> Any:
        b = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
             .issuer_name(issuer)
             .public_key(key.public_key())
             .serial_number(x509.random_serial_number())
             .not_valid_before(now - dt.timedelta(days=1))
             .not_valid_after(now + dt.timedelta(days=2))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            b = b.add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                                critical=False)
        else:
            b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                issuer_key.public_key()), critical=False)
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    import ipaddress

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "keyguard test CA")])
    ca = cert("keyguard test CA", ca_key, ca_name, ca_key, ca=True)
    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv = cert("127.0.0.1", srv_key, ca_name, ca_key, san=[
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    cli_key = ec.generate_private_key(ec.SECP256R1())
    cli = cert("keyguard client", cli_key, ca_name, ca_key)

    pem = serialization.Encoding.PEM
    plain = serialization.NoEncryption()

    def key_pem(k: Any) -> bytes:
        return bytes(k.private_bytes(pem, serialization.PrivateFormat.PKCS8, plain))

    files = TlsFiles(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem",
                     d / "client.p12", d / "truststore.p12")
    files.ca_pem.write_bytes(ca.public_bytes(pem))
    files.server_pem.write_bytes(srv.public_bytes(pem))
    files.server_key.write_bytes(key_pem(srv_key))
    files.client_pem_bundle.write_bytes(cli.public_bytes(pem) + key_pem(cli_key))
    files.client_p12.write_bytes(pkcs12.serialize_key_and_certificates(
        b"client", cli_key, cli, [ca], serialization.BestAvailableEncryption(b"keystore-pw")))
    files.trust_p12.write_bytes(pkcs12.serialize_key_and_certificates(
        None, None, None, [ca], serialization.BestAvailableEncryption(b"truststore-pw")))
    return files


def _server_context(files: TlsFiles, *, client_auth: bool) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(files.server_pem, files.server_key)
    if client_auth:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(files.ca_pem)
    return ctx


@pytest.fixture
def tls_server(tls_files: TlsFiles) -> Iterator[FakeRegistry]:
    fake = _start(_server_context(tls_files, client_auth=False))
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def mtls_server(tls_files: TlsFiles) -> Iterator[FakeRegistry]:
    fake = _start(_server_context(tls_files, client_auth=True))
    yield fake
    fake.server.shutdown()
    fake.server.server_close()
