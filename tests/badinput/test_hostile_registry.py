"""A registry URL that does not answer like a registry: exit 3 naming the URL, in every verb,
within a total deadline; never exit 4, never a hang. The server runs on loopback in this
process and stops with the test."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from typer.testing import CliRunner

from keyguard.formats.registry.http import total_deadline
from keyguard.guard.cli import app

KEY_SCHEMA = '{"type":"record","name":"K","fields":[{"name":"user_region","type":"string"}]}'


class _Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "slow"

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        headers = {"Content-Type": "application/json"}
        status, body = 200, b'["a-subject"]'
        if self.mode == "slow":  # one byte every 0.4 s: each read is quick, the answer is not
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "40")
            self.end_headers()
            for _ in range(40):
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.4)
            return
        if self.mode == "gzip-junk":
            body, headers["Content-Encoding"] = b"\x1f\x8b\x08junk", "gzip"
        elif self.mode == "wrong-shapes":
            body = (b'{"id":"x","version":"y","schema":3}' if self.command == "POST"
                    or "/schemas/" in self.path or "/versions/" in self.path else b'["s-key"]')
        elif self.mode == "redirect":
            status, body, headers = 302, b"moved", {"Location": "http://127.0.0.1:1/"}
        elif self.mode == "not-utf8":
            body = b'["\xff\xfe caf\xe9"]'
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = _answer


@pytest.fixture
def hostile() -> Iterator[Any]:
    def start(mode: str) -> str:
        handler = type("Handler", (_Hostile,), {"mode": mode})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    servers: list[ThreadingHTTPServer] = []
    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def _verbs(url: str, tmp_path: Any) -> dict[str, list[str]]:
    key = tmp_path / "k.avsc"
    key.write_text(KEY_SCHEMA)
    fast = ["-o", "key.avro-confluent.timeout=1s", "-o", "key.avro-confluent.retries=0"]
    table = ["--key-format", "avro-confluent", "--value-format", "json", "--topic", "orders",
             "--columns", "user_region STRING, v STRING", "--primary-key", "user_region",
             "--registry", url, *fast]
    return {
        "check": ["check", "--registry", url, "--topic", "orders", "--key-schema", str(key),
                  *fast],
        "encode": ["encode", *table, "--row", '{"user_region": "a", "v": "b"}'],
        "decode": ["decode", *table, "--key", "00000000010261"],
    }


@pytest.mark.parametrize("mode", ["gzip-junk", "wrong-shapes", "redirect", "not-utf8", "slow"])
@pytest.mark.parametrize("verb", ["check", "encode", "decode"])
def test_a_url_that_answers_unlike_a_registry_is_exit_3_naming_it(
        hostile: Any, tmp_path: Any, mode: str, verb: str) -> None:
    url = hostile(mode)
    started = time.monotonic()
    result = CliRunner().invoke(app, _verbs(url, tmp_path)[verb])
    took = time.monotonic() - started
    assert result.exit_code == 3, result.output
    assert url in result.output and "Traceback" not in result.output
    if mode == "slow":
        assert took < 15, took  # the trickle would take 16 s per try
        if verb != "check":  # check may fail on the answer's shape, after the deadline's reads
            assert "raise 'timeout'" in result.output


def test_the_total_deadline_covers_every_try_and_the_backoff() -> None:
    assert total_deadline({"timeout": 2.0, "max.retries": 2, "retries.max.wait.ms": 500}) == \
        pytest.approx(2 * 3 + 0.5 * 2 + 1)
    assert total_deadline({}) == pytest.approx(11.0)
