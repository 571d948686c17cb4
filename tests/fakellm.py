"""A scripted OpenAI-compatible server on 127.0.0.1: the one fake the project allows.

Tests run the real HTTP client against it over loopback.  Each POST to
``/v1/chat/completions`` takes the next scripted reply from a FIFO queue: a ``str`` is
streamed the way OpenAI streams (``chat.completion.chunk`` events of about 8 characters,
a ``finish_reason`` chunk, a usage chunk when asked for, ``data: [DONE]``); a
:class:`Reply` scripts errors, stalls, delays, plain JSON answers and raw SSE bodies.  An
empty queue answers HTTP 500 "no scripted reply left", so a test that runs out of script
fails loudly instead of hanging.

Standard library only: a ``ThreadingHTTPServer`` in a daemon thread speaking HTTP/1.1 with
``Connection: close``; streams carry no Content-Length and end when the socket closes.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["FAKE_MODEL", "Reply", "ScriptedLLMServer", "llm_server"]

FAKE_MODEL = "fake-model"
# OpenAI's own streams carry a few characters per chunk; 8 keeps replies multi-chunk.
CHUNK_CHARS = 8
# How often a stalled or delayed reply looks for stop() or a client hang-up.
_POLL_S = 0.02


@dataclass(frozen=True)
class Reply:
    """One scripted answer; the defaults stream ``text`` with HTTP 200."""

    text: str = ""
    status: int = 200  # non-200: a JSON error body whose message is ``text``
    stall_after_chars: int | None = None  # stream this much, then hold the socket open
    delay_s: float = 0  # before the first byte of the response
    json_body: bool = False  # a non-streaming application/json chat.completion
    raw_sse: str | None = None  # sent verbatim as the text/event-stream body


class ScriptedLLMServer:
    """Answers ``/v1/chat/completions`` from a script; records every request it receives."""

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[dict[str, Any]] = []
        # Request headers with lower-cased names, one dict per chat completion request.
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._queue: deque[str | Reply] = deque()
        # Set by stop(): ends stalls and delays at once instead of leaving threads asleep.
        self._stopped = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    def start(self) -> ScriptedLLMServer:
        handler = type("_BoundHandler", (_Handler,), {"llm": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def script(self, *replies: str | Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._queue)

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> str | Reply | None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self._counter += 1
            return self._queue.popleft() if self._queue else None

    def _next_id(self) -> str:
        with self._lock:
            return f"chatcmpl-fake-{self._counter}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    llm: ScriptedLLMServer  # set on the per-server subclass

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet: pytest output should show the test's failure, not access logs.
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": FAKE_MODEL, "object": "model", "created": 0, "owned_by": "tests"}
                    ],
                },
            )
        else:
            self._send_error(404, f"no route for GET {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_error(404, f"no route for POST {self.path}")
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", errors="replace")}
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.llm._record(body, headers)
        if reply is None:
            self._send_error(500, "no scripted reply left")
            return
        if isinstance(reply, str):
            reply = Reply(text=reply)
        try:
            self._answer(reply, body, len(raw))
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (budget, cancel); nothing left to answer.
            pass

    def _answer(self, reply: Reply, body: Any, request_bytes: int) -> None:
        if reply.delay_s and self.llm._stopped.wait(reply.delay_s):
            return
        if reply.status != 200:
            self._send_error(reply.status, reply.text or f"scripted HTTP {reply.status}")
            return
        model = body.get("model", FAKE_MODEL) if isinstance(body, dict) else FAKE_MODEL
        prompt_tokens = max(1, request_bytes // 4)
        if reply.json_body:
            self._send_json(200, self._completion(reply.text, model, prompt_tokens))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        if reply.raw_sse is not None:
            self._write(reply.raw_sse)
            return
        self._stream(reply, model, prompt_tokens, body)

    def _stream(self, reply: Reply, model: str, prompt_tokens: int, body: Any) -> None:
        cid = self.llm._next_id()
        text = reply.text
        if reply.stall_after_chars is not None:
            text = text[: reply.stall_after_chars]
        # OpenAI opens with the role and empty content; clients must not emit that as a token.
        self._event(self._chunk(cid, model, {"role": "assistant", "content": ""}, None))
        pieces = [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]
        for piece in pieces:
            self._event(self._chunk(cid, model, {"content": piece}, None))
        if reply.stall_after_chars is not None:
            self._hold_open()
            return
        self._event(self._chunk(cid, model, {}, "stop"))
        options = body.get("stream_options") if isinstance(body, dict) else None
        if isinstance(options, dict) and options.get("include_usage"):
            usage = _usage(prompt_tokens, len(pieces))
            self._event(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        self._write("data: [DONE]\n\n")

    def _hold_open(self) -> None:
        """Send nothing until stop() or until the client hangs up (its socket reads EOF)."""
        sock = self.connection
        while not self.llm._stopped.is_set():
            readable, _, _ = select.select([sock], [], [], _POLL_S)
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        return
                except OSError:
                    return

    def _completion(self, text: str, model: str, prompt_tokens: int) -> dict[str, Any]:
        return {
            "id": self.llm._next_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": _usage(prompt_tokens, max(1, len(text) // CHUNK_CHARS)),
        }

    @staticmethod
    def _chunk(cid: str, model: str, delta: dict[str, str], finish: str | None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def _event(self, data: dict[str, Any]) -> None:
        self._write(f"data: {json.dumps(data)}\n\n")

    def _write(self, text: str) -> None:
        self.wfile.write(text.encode("utf-8"))
        self.wfile.flush()

    def _send_json(self, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_error(self, status: int, message: str) -> None:
        kind = "rate_limit_error" if status == 429 else "server_error" if status >= 500 else ""
        self._send_json(
            status, {"error": {"message": message, "type": kind or "invalid_request_error"}}
        )


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    server = ScriptedLLMServer().start()
    yield server
    server.stop()
