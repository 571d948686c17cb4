"""A scripted LLM server on 127.0.0.1: the one fake the project allows.

Tests run the real HTTP client against it over loopback.  It speaks two protocols from
one FIFO queue of scripted replies:

- OpenAI's: ``POST /v1/chat/completions`` (``base_url`` ends in ``/v1``).  A ``str`` is
  streamed the way OpenAI streams (``chat.completion.chunk`` events of about 8
  characters, a ``finish_reason`` chunk, a usage chunk when asked for, ``data: [DONE]``).
- Anthropic's: ``POST /v1/messages`` (use ``root_url``).  A ``str`` is streamed as
  ``message_start``, one text block of ``text_delta`` pieces, ``message_delta`` with the
  usage and ``message_stop``.

A :class:`Reply` scripts tool calls (argument JSON streamed in several fragments), errors
(with ``Retry-After``), stalls, dropped connections, error events mid-stream, delays, a gate
the test opens (the answer waits for it),
plain JSON answers, raw SSE bodies, reported cache tokens and a connection closed without
any answer (``hang_up``).  Two ways a stream breaks:
``drop_after_chars`` promises a longer body than it sends (the client's HTTP layer sees
the connection break), ``cut_after_chars`` closes the socket cleanly mid-stream (only the
protocol tells it from a whole reply); either optionally after the finish reason
(``cut_finish``: OpenAI's ``finish_reason`` chunk and usage, Anthropic's ``message_delta``
with its ``stop_reason``) and the end marker (``cut_done``: ``[DONE]``, ``message_stop``).

With ``reject_tools`` set the server answers HTTP 400 to any request that carries
``tools``, without using the script.  An empty queue answers HTTP 500 "no scripted reply
left", so a test that runs out of script fails loudly instead of hanging.

Standard library only: a ``ThreadingHTTPServer`` in a daemon thread speaking HTTP/1.1 with
``Connection: close``; streams carry no Content-Length and end when the socket closes.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests import fakellm_wire as wire

__all__ = ["FAKE_MODEL", "Reply", "ScriptedLLMServer", "llm_server"]

FAKE_MODEL = "fake-model"
# How often a stalled or delayed reply looks for stop() or a client hang-up.
_POLL_S = 0.02

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"

# A tool call: the tool's name and its arguments, as a dict (sent as JSON) or as raw
# argument text (to script arguments that are not valid JSON).
ToolCall = tuple[str, dict[str, Any] | str]


@dataclass(frozen=True)
class Reply:
    """One scripted answer; the defaults stream ``text`` with HTTP 200."""

    text: str = ""
    status: int = 200  # non-200: a JSON error body whose message is ``text``
    stall_after_chars: int | None = None  # stream this much, then hold the socket open
    delay_s: float = 0  # before the first byte of the response
    json_body: bool = False  # a non-streaming JSON answer
    raw_sse: str | None = None  # sent verbatim as the text/event-stream body
    tool_calls: Sequence[ToolCall] = ()  # after the text, in order
    retry_after: float | str | None = None  # a Retry-After header on an error reply
    drop_after_chars: int | None = None  # stream this much, then close mid-body
    stream_error: str | None = None  # after the text: an error event of this type, then close
    cut_after_chars: int | None = None  # stream this much, then close the socket cleanly
    cut_finish: bool = False  # a cut or dropped stream still sends its finish / stop reason
    cut_done: bool = False  # a cut or dropped stream still sends [DONE] / message_stop
    cached_tokens: int | None = None  # reported as prompt tokens read from the cache
    cache_creation_tokens: int | None = None  # Anthropic only: prompt tokens written to it
    hang_up: bool = False  # close the connection without answering at all
    # Answer only once the test sets it (the model thinks until then); None: at once.
    gate: threading.Event | None = None


class ScriptedLLMServer:
    """Answers both LLM protocols from one script; records every request it receives."""

    def __init__(self) -> None:
        self.base_url = ""  # the OpenAI-style base URL, ending in /v1
        self.root_url = ""  # the server's root, the Anthropic-style base URL
        self.requests: list[dict[str, Any]] = []
        # Request headers with lower-cased names, one dict per request.
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []  # the path each request was posted to
        # A server without tool support: requests with "tools" get HTTP 400.
        self.reject_tools = False
        self._lock = threading.Lock()
        self._queue: deque[str | Reply] = deque()
        # Set by stop(): ends stalls and delays at once instead of leaving threads asleep.
        self._stopped = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self._gates: list[threading.Event] = []  # of the replies scripted so far

    def start(self) -> ScriptedLLMServer:
        handler = type("_BoundHandler", (_Handler,), {"llm": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self.root_url = f"http://127.0.0.1:{httpd.server_address[1]}"
        self.base_url = f"{self.root_url}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        _warm_http_client(self.base_url)
        _running.add(self)
        return self

    def stop(self) -> None:
        _running.discard(self)
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
            self._gates += [r.gate for r in replies if isinstance(r, Reply) and r.gate]

    def end_test(self, *, failed: bool) -> None:
        """A test is over: the replies it held at a gate answer now (a gate is the test's
        own, opened once it acted); after a failure its unused replies are dropped too, so
        the module's next test starts from its own script, not the failed one's."""
        with self._lock:
            gates, self._gates = self._gates, []
            if failed:
                self._queue.clear()
        for gate in gates:
            gate.set()

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._queue)

    def _record(self, body: Any, headers: dict[str, str], path: str) -> str | Reply | None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.paths.append(path)
            self._counter += 1
            if self.reject_tools and isinstance(body, dict) and "tools" in body:
                return Reply(status=400, text=f"{FAKE_MODEL} does not support tools")
            return self._queue.popleft() if self._queue else None

    def _next_id(self) -> str:
        with self._lock:
            return f"fake-{self._counter}"


# The servers started and not stopped yet (tests/conftest.py ends each test on them).
_running: weakref.WeakSet[ScriptedLLMServer] = weakref.WeakSet()


def running() -> list[ScriptedLLMServer]:
    return list(_running)


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
        path = self.path.rstrip("/")
        if path not in (OPENAI_PATH, ANTHROPIC_PATH):
            self._send_error(404, f"no route for POST {self.path}")
            return
        anthropic = path == ANTHROPIC_PATH
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", errors="replace")}
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.llm._record(body, headers, path)
        if reply is None:
            self._send_error(500, "no scripted reply left", anthropic=anthropic)
            return
        if isinstance(reply, str):
            reply = Reply(text=reply)
        try:
            self._answer(reply, body, len(raw), anthropic=anthropic)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (budget, cancel); nothing left to answer.
            pass

    def _answer(self, reply: Reply, body: Any, request_bytes: int, *, anthropic: bool) -> None:
        if reply.delay_s and self.llm._stopped.wait(reply.delay_s):
            return
        while reply.gate is not None and not reply.gate.wait(_POLL_S):
            if self.llm._stopped.is_set():
                return
        if reply.hang_up:
            self.close_connection = True  # no status line, no headers: the socket just closes
            return
        if reply.status != 200:
            self._send_error(
                reply.status,
                reply.text or f"scripted HTTP {reply.status}",
                anthropic=anthropic,
                retry_after=reply.retry_after,
            )
            return
        model = body.get("model", FAKE_MODEL) if isinstance(body, dict) else FAKE_MODEL
        prompt_tokens = max(1, request_bytes // 4)
        if reply.json_body:
            build = wire.message if anthropic else wire.completion
            self._send_json(200, build(self.llm._next_id(), reply, model, prompt_tokens))
            return
        if reply.raw_sse is not None:
            self._start_stream()
            self._write(reply.raw_sse)
            return
        cut = reply.stall_after_chars
        if reply.drop_after_chars is not None:
            cut = reply.drop_after_chars
        if reply.cut_after_chars is not None:
            cut = reply.cut_after_chars
        text = reply.text if cut is None else reply.text[:cut]
        calls = reply.tool_calls if cut is None else ()
        events = wire.anthropic_events if anthropic else wire.openai_events
        number = self.llm._next_id()
        head, middle, tail = events(number, text, calls, model, prompt_tokens, body, reply)
        # The tail is (finish, [usage,] end marker); a broken stream sends what it is told.
        ending = (tail[:-1] if reply.cut_finish else []) + (tail[-1:] if reply.cut_done else [])
        if reply.cut_after_chars is not None:
            self._start_stream()
            for event in head + ending:
                self._write(event)
            return  # Connection: close, no Content-Length: the body ends cleanly here
        if reply.drop_after_chars is not None:
            # Promise more body than is sent, then close: the client sees a broken stream.
            payload = "".join(head + ending).encode("utf-8")
            self._start_stream(content_length=len(payload) + 1024)
            self.wfile.write(payload)
            self.wfile.flush()
            return
        self._start_stream()
        for event in head:
            self._write(event)
        if reply.stall_after_chars is not None:
            self._hold_open()
            return
        for event in middle:
            self._write(event)
        if reply.stream_error is not None:
            self._write(wire.error_event(reply.stream_error, anthropic=anthropic))
            return
        for event in tail:
            self._write(event)

    def _start_stream(self, *, content_length: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if content_length is not None:
            self.send_header("Content-Length", str(content_length))
        self.send_header("Connection", "close")
        self.end_headers()

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

    def _write(self, text: str) -> None:
        self.wfile.write(text.encode("utf-8"))
        self.wfile.flush()

    def _send_json(
        self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        payload = json.dumps(data).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_error(
        self,
        status: int,
        message: str,
        *,
        anthropic: bool = False,
        retry_after: float | str | None = None,
    ) -> None:
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        if anthropic:
            kind = wire.ANTHROPIC_ERROR_TYPES.get(status) or (
                "api_error" if status >= 500 else "invalid_request_error"
            )
            body = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            kind = "rate_limit_error" if status == 429 else "server_error" if status >= 500 else ""
            body = {"error": {"message": message, "type": kind or "invalid_request_error"}}
        self._send_json(status, body, headers)


_warmed = threading.Event()


def _warm_http_client(base_url: str) -> None:
    """Once per process, one request of httpx's async client to the server.

    httpx loads its transport (httpcore, anyio's asyncio backend, h11) when a process makes
    its first client and request: a planner's first call would pay that, a second or more
    on a busy machine, inside its own budget.  The tests of tight budgets then passed only
    after some other test had warmed the process (not run alone, nor first in a worker)."""
    if _warmed.is_set():
        return

    async def get() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            await client.get(f"{base_url}/models")

    # Its own loop in its own thread: start() is also called from inside a running loop.
    thread = threading.Thread(target=asyncio.run, args=(get(),), daemon=True)
    thread.start()
    thread.join(60)
    _warmed.set()


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    server = ScriptedLLMServer().start()
    yield server
    server.stop()
