"""Loopback servers that count every connection and request they get, for the egress
tests: ``allowed``, an origin the policy allows, and ``other``, one it does not, which
must see nothing.  A module that uses the fixtures names them (``allowed =
counting.allowed``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

PIXEL_GIF = bytes.fromhex(
    "47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b"
)
WORKER_JS = b"""
onmessage = async (e) => {
  try { const r = await fetch(e.data); postMessage("status " + r.status); }
  catch (err) { postMessage("error " + err); }
};
"""
FILES: dict[str, tuple[str, bytes]] = {
    "/blank": ("text/html", b"<!doctype html><title>blank</title><p>blank</p>"),
    "/pixel.gif": ("image/gif", PIXEL_GIF),
    "/script.js": ("text/javascript", b"window.scriptRan = (window.scriptRan || 0) + 1;"),
    "/style.css": ("text/css", b"#styled { color: rgb(1, 2, 3); }"),
    "/worker.js": ("text/javascript", WORKER_JS),
    "/data": ("application/json", b'{"ok": true}'),
    "/frame": ("text/html", b"<!doctype html><p id=inner>framed</p>"),
}


class Counting(ThreadingHTTPServer):
    """A loopback server that counts every connection it accepts and every request."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), CountingHandler)
        self.connections = 0
        self.requests: list[tuple[str, str]] = []  # (method, path)
        self.hosts: list[str] = []  # the Host header of each request
        self.port = self.server_address[1]

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.connections += 1  # before a byte is read: a WebSocket attempt counts too
        return True

    def origin(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}"


class CountingHandler(BaseHTTPRequestHandler):
    server: Counting

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        self.server.requests.append((self.command, path))
        self.server.hosts.append(self.headers.get("Host", ""))
        if path == "/events":
            self._answer(200, "text/event-stream", b"data: hello\n\n")
        elif path in FILES:
            self._answer(200, *FILES[path])
        else:
            self._answer(404, "text/plain", b"not found")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.command, self.path))
        self._answer(200, "application/json", json.dumps({"got": body.decode()}).encode())

    def _answer(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(body)


def serve(server: ThreadingHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Counting, Counting]]:
    allowed, other = Counting(), Counting()
    serve(allowed)
    serve(other)
    yield allowed, other
    for server in (allowed, other):
        server.shutdown()
        server.server_close()


@pytest.fixture
def allowed(servers: tuple[Counting, Counting]) -> Counting:
    servers[0].connections = 0
    servers[0].requests.clear()
    servers[0].hosts.clear()
    return servers[0]


@pytest.fixture
def other(servers: tuple[Counting, Counting]) -> Counting:
    servers[1].connections = 0
    servers[1].requests.clear()
    return servers[1]
