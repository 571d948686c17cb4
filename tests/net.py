"""Loopback helpers for tests."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs


def free_port() -> int:
    """A loopback port nobody listens on right now (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class QuietHandler(BaseHTTPRequestHandler):
    """A loopback app's request handler that logs nothing (a test reads what it asserts)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def posted(self) -> dict[str, str]:
        """The form the request posted (url-encoded), each field's first value."""
        length = int(self.headers.get("Content-Length") or 0)
        sent = parse_qs(self.rfile.read(length).decode(), keep_blank_values=True)
        return {key: values[0] for key, values in sent.items()}

    def send(self, status: int, body: bytes = b"", **headers: str) -> None:
        """Answer ``status`` with ``body`` (HTML unless a Content-Type is given)."""
        self.send_response(status)
        for name, value in {"Content-Type": "text/html; charset=utf-8", **headers}.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def loopback_app(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on a free loopback port, a thread per request: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def form_app(page: bytes, field: str) -> Iterator[tuple[list[str], str]]:
    """A one-page app: ``page`` for every GET; each form posted keeps its ``field``'s value
    in the list it yields beside its base URL, and is redirected back to where it was."""
    saved: list[str] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, page)

        def do_POST(self) -> None:
            saved.append(self.posted()[field])
            self.send(303, Location=self.headers.get("Referer") or "/")

    with loopback_app(Handler) as url:
        yield saved, url
