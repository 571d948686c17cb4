"""HTTP plumbing the LLM providers share: one endpoint, its error mapping, its SSE stream.

An :class:`Endpoint` posts JSON with a timeout taken from the caller's budget and turns
every failure into the engine's errors::

    LLMUnavailable      cannot connect (also: no connection within connect_timeout_ms),
                        connection dropped, HTTP 429, HTTP 5xx (529 too)
    LLMResponseError    other HTTP 4xx, a body that can't be decoded or parsed
    BudgetExceeded      any other httpx timeout (it was derived from the budget)

Each LLMUnavailable says what happened, with a short ``reason`` for the notice of a retry.
Only a connection that never got an answer (refused, unknown host, TLS, no connection in
time) asks whether the server runs and the base URL is right; a connection closed before
the answer, one dropped mid-reply and an HTTP 5xx say what happened instead.

The API key is scrubbed from every message it builds (some servers echo the key they
rejected), and URLs are shown without credentials or query.

:class:`HttpPlanner` is what the planners share on top of it: their options, retries
around each exchange, and native tools with the auto fallback (a server that answers a
request with tools with HTTP 400 is asked again without them, and not sent them again
once that worked).
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import json
import logging
import re
import socket
import ssl
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from automation.budget import Budget
from automation.errors import LLMResponseError, LLMUnavailable
from automation.limits import whole_text
from automation.llm.base import ChatMessage, OnToken, PlannerReply, PlannerRequest
from automation.llm.retry import (
    DEFAULT_RETRIES,
    Attempt,
    Backoff,
    backoff_s,
    retry_after_s,
    with_retries,
)
from automation.llm.tools import tool_definitions

__all__ = [
    "CONNECT_TIMEOUT_MS",
    "DROPPED_MID_REPLY",
    "Endpoint",
    "HttpPlanner",
    "SSEvent",
    "display_url",
    "read_answer",
    "sse_events",
]

log = logging.getLogger("automation.llm")

# Longest server text quoted in an error: enough to show the server's reason, short
# enough to fit in a chat bubble and a log line.
EXCERPT_CHARS = 300
# An error body can be a whole HTML page from a proxy; reading this much is enough to
# build the excerpt and bounds the time spent on a response we are going to reject.
ERROR_BODY_READ_BYTES = 8192

_USERINFO_RE = re.compile(r"//[^/@]*@")

DROPPED_MID_REPLY = "connection dropped mid-reply"
_CONNECT_HINT = "is the model server running and the base URL right?"
# A server that has not accepted the connection by then is not there (a host that drops
# packets, a firewall): the try ends as unavailable and is retried, instead of waiting out
# the whole budget.  Within one network this takes milliseconds.
CONNECT_TIMEOUT_MS = 10_000
# Failures that mean no connection to the model server was ever made.
_NO_CONNECTION = (httpx.ConnectError, httpx.ProxyError, httpx.UnsupportedProtocol, httpx.InvalidURL)


# Lines of a stream read between two turns of the event loop.
YIELD_EVERY_LINES = 64
# Most of one answer read, streamed or not: far past any model's reply (a long one is tens
# of kB), well short of what would fill the worker's memory when a server sends without
# end (a line that never ends, events that never dispatch, a body of gigabytes).
MAX_ANSWER_BYTES = 4 * 1024 * 1024
_LINE_END = re.compile(r"\r\n|\r|\n")  # the three SSE allows


@dataclass(frozen=True)
class SSEvent:
    event: str  # the ``event:`` field, "message" when the server sent none
    data: str


def _too_long(response: httpx.Response) -> LLMResponseError:
    where = display_url(str(response.request.url))
    return LLMResponseError(
        f"{where} sent more than {MAX_ANSWER_BYTES // (1024 * 1024)} MiB in one answer: "
        "no model reply is that long; the rest was not read"
    )


async def read_answer(response: httpx.Response) -> bytes:
    """A whole answer's body, or LLMResponseError past MAX_ANSWER_BYTES."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > MAX_ANSWER_BYTES:
            raise _too_long(response)
    return bytes(body)


async def _lines(response: httpx.Response) -> AsyncIterator[str]:
    """The lines of a body as they arrive (a line ends at CR, LF or CRLF);
    LLMResponseError past MAX_ANSWER_BYTES."""
    decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
    read = 0
    partial: list[str] = []  # the line not ended yet, as it came
    after_cr = False  # the last text ended with CR: an LF first in the next ends nothing
    async for chunk in response.aiter_bytes():
        read += len(chunk)
        if read > MAX_ANSWER_BYTES:
            raise _too_long(response)
        text = decode(chunk)
        if not text:
            continue
        if after_cr and text.startswith("\n"):
            text = text[1:]
        after_cr = text.endswith("\r")
        first, *rest = _LINE_END.split(text)
        partial.append(first)
        if rest:
            yield "".join(partial)
            for line in rest[:-1]:
                yield line
            partial = [rest[-1]]
    last = "".join(partial) + decode(b"", final=True)
    if last:
        yield last


async def sse_events(response: httpx.Response) -> AsyncIterator[SSEvent]:
    """The server-sent events of a response body.

    Lines split across network chunks are put together again; ``data:`` lines
    accumulate until a blank line dispatches them.  Comments (``: keep-alive``), ``id:``
    and ``retry:`` carry nothing we need.  Past MAX_ANSWER_BYTES in all,
    LLMResponseError: a server that sends without end is not read to the end of memory.
    """
    name = ""
    data_lines: list[str] = []
    lines = 0
    async for line in _lines(response):
        lines += 1
        if lines % YIELD_EVERY_LINES == 0:
            # A reply that arrives at once (one read of thousands of lines) would be
            # parsed, and its tokens handed on, without the event loop getting a turn.
            await asyncio.sleep(0)
        if line:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data_lines.append(value)
            elif field == "event":
                name = value
            continue
        if data_lines:
            yield SSEvent(name or "message", "\n".join(data_lines))
        name, data_lines = "", []
    if data_lines:
        # A server that closes without the final blank line still sent a whole event.
        yield SSEvent(name or "message", "\n".join(data_lines))


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings of every model endpoint (and the alerts' webhooks): httpx's
    defaults (certifi's CA bundle), made once."""
    return httpx.create_ssl_context()


# The thread the TLS context is made in: loading the CA bundle takes tens of ms, which the
# event loop (every page, socket and run) would wait; and the loop's default executor may
# be held by whatever else the process reads or parses, which a model call must not wait
# behind.
_tls_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tabwright-tls")


async def tls_context_made() -> ssl.SSLContext:
    """:func:`tls_context`, at once once made; the first time, made in a thread of its own."""
    if tls_context.cache_info().currsize:
        return tls_context()
    return await asyncio.get_running_loop().run_in_executor(_tls_thread, tls_context)


class Endpoint:
    """One provider URL: a lazily made client, budget-bound requests, scrubbed errors."""

    def __init__(
        self,
        *,
        url: str,
        api_key: str = "",
        transport: httpx.AsyncBaseTransport | None = None,
        connect_timeout_ms: float = CONNECT_TIMEOUT_MS,
    ) -> None:
        self.url = url
        self.display_url = display_url(url)
        self.connect_timeout_ms = connect_timeout_ms
        # Kept private so it cannot leak into reprs, logs or tracebacks.
        self._api_key = api_key
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            tls = await tls_context_made()  # one per process, made off the event loop
            if self._client is None:
                # timeout=None: every request passes its own timeout, from its budget.
                self._client = httpx.AsyncClient(
                    transport=self._transport, verify=tls, timeout=None
                )
        return self._client

    @asynccontextmanager
    async def post(
        self, payload: dict[str, Any], *, headers: Mapping[str, str], budget: Budget
    ) -> AsyncIterator[httpx.Response]:
        """POST ``payload`` and yield the streaming response; httpx errors raised while
        the caller reads it are mapped too."""
        # budget.run() around the caller is the real deadline; this timeout only makes
        # sure no socket operation can outlive the budget even if the task is never
        # cancelled.
        remaining_ms = budget.remaining_ms()
        connect_ms = min(remaining_ms, self.connect_timeout_ms)
        timeout = httpx.Timeout(remaining_ms / 1000, connect=connect_ms / 1000)
        answered = False  # the status line and headers arrived
        try:
            client = await self._get_client()
            async with client.stream(
                "POST", self.url, content=request_body(payload), timeout=timeout,
                headers=_json_headers(headers),
            ) as response:  # fmt: skip
                answered = True
                yield response
        except httpx.ConnectTimeout as exc:
            if connect_ms >= remaining_ms:  # the budget's own end, not the connect limit
                raise budget.exceeded(f" connecting to the LLM at {self.display_url}") from exc
            raise LLMUnavailable(
                self.scrub(
                    f"cannot reach the LLM at {self.display_url}: no connection within "
                    f"{connect_ms:.0f} ms"
                ),
                reason="connect timeout",
                hint=_CONNECT_HINT,
            ) from exc
        except httpx.TimeoutException as exc:
            # The timeout was derived from the budget, so hitting it means the budget is
            # spent, even if asyncio's clock has not quite caught up yet.
            raise budget.exceeded(f" waiting for the LLM at {self.display_url}") from exc
        except httpx.DecodingError as exc:
            raise LLMResponseError(
                self.scrub(f"{self.display_url} sent a body that could not be decoded: {exc}")
            ) from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise self._transport_error(exc, answered=answered) from exc

    def _transport_error(self, exc: Exception, *, answered: bool) -> LLMUnavailable:
        """What a failed connection means: only one that never reached the server gets the
        hint to check the server and the URL."""
        detail = str(exc) or type(exc).__name__
        if answered:
            return LLMUnavailable(
                self.scrub(f"the connection to {self.display_url} dropped mid-reply: {detail}"),
                reason=DROPPED_MID_REPLY,
            )
        if isinstance(exc, _NO_CONNECTION):
            reason = _connect_failure(exc)
            return LLMUnavailable(
                self.scrub(f"cannot reach the LLM at {self.display_url}: {reason or detail}"),
                reason=reason or "cannot connect",
                hint=_CONNECT_HINT,
            )
        # Connected, then closed before any answer: a restarting server, or a proxy that
        # closed an idle pooled connection.  The server is there; another try may work.
        return LLMUnavailable(
            self.scrub(f"{self.display_url} closed the connection without answering: {detail}"),
            reason="connection closed before an answer",
        )

    async def check_status(self, response: httpx.Response, attempt: Attempt) -> None:
        """Raise for a non-2xx answer; note the server's ``Retry-After`` on the attempt."""
        status = response.status_code
        if 200 <= status < 300:
            return
        excerpt = await self.excerpt(response)
        message = self.scrub(f"{self.display_url} answered HTTP {status}: {excerpt}")
        if status == 429 or status >= 500:
            attempt.retry_after_s = retry_after_s(response.headers.get("retry-after"))
            raise LLMUnavailable(message, reason=f"HTTP {status}")
        raise LLMResponseError(message)

    async def check_content_type(self, response: httpx.Response) -> bool:
        """True for a JSON body, False for an event stream; raise for anything else."""
        content_type = response.headers.get("content-type", "").lower()
        if "json" in content_type:
            return True
        if content_type and "event-stream" not in content_type:
            excerpt = await self.excerpt(response)
            raise LLMResponseError(
                self.scrub(
                    f"{self.display_url} answered with content type {content_type!r}, "
                    f"not a model reply: {excerpt}"
                )
            )
        return False

    async def excerpt(self, response: httpx.Response) -> str:
        """A short, one-line version of an error body, preferring the server's own message."""
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) >= ERROR_BODY_READ_BYTES:
                break
        text = body.decode("utf-8", errors="replace")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict):
            # OpenAI: {"error": {"message"}}; Anthropic: {"type": "error", "error": {...}}.
            error = data.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                text = error["message"]
            elif isinstance(error, str):
                text = error
        text = " ".join(self.scrub(text).split())
        if len(text) > EXCERPT_CHARS:
            text = text[: EXCERPT_CHARS - 1] + "…"
        return text or "(empty body)"

    def parse_json(self, text: str, *, where: str) -> dict[str, Any]:
        """A JSON object from the server, or LLMResponseError naming ``where`` it was."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:  # nested too deep to read: malformed too
            raise LLMResponseError(
                self.scrub(f"{self.display_url} sent malformed JSON in its {where}: {text[:200]!r}")
            ) from exc
        if not isinstance(data, dict):
            raise LLMResponseError(
                self.scrub(f"{self.display_url} sent a non-object in its {where}: {text[:200]!r}")
            )
        return data

    def scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "[api key]")
        return text


def display_url(url: str) -> str:
    """A URL without credentials or query, safe to show in messages."""
    return _USERINFO_RE.sub("//", url.split("?", 1)[0], count=1)


def _connect_failure(exc: Exception) -> str:
    """Why a connection could not be made, read from the OS error under httpx's ("All
    connection attempts failed" says nothing); "" when there is none."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    os_reason = ""
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "host not found"
        if isinstance(cause, ssl.SSLError):
            return "TLS handshake failed"
        if isinstance(cause, OSError) and cause.strerror:
            os_reason = cause.strerror[:1].lower() + cause.strerror[1:]  # "network is ..."
        cause = cause.__cause__ or cause.__context__
    return os_reason


class HttpPlanner:
    """A planner that streams replies from one HTTP endpoint (``base_url`` + ``path``).

    ``native_tools``: True always sends the round's actions as tools, False never, None
    tries and stops once the server rejected them.  A subclass gives ``name``, ``path``,
    ``_tool`` (a neutral tool definition in its
    protocol's shape), ``_payload``, ``_headers``, ``_read_json`` and ``_read_stream``."""

    name = ""
    path = ""
    default_base_url = ""  # where the provider's own API is, if it has one
    default_max_tokens: int | None = None

    def __init__(
        self,
        *,
        base_url: str = "",
        model: str,
        api_key: str = "",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        native_tools: bool | None = None,
        retries: int = DEFAULT_RETRIES,
        backoff: Backoff = backoff_s,
        transport: httpx.AsyncBaseTransport | None = None,
        connect_timeout_ms: float = CONNECT_TIMEOUT_MS,
    ) -> None:
        base_url = base_url or self.default_base_url
        if not base_url:
            raise ValueError(f"{type(self).__name__} needs a base_url")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = self.default_max_tokens if max_tokens is None else max_tokens
        self.native_tools = native_tools
        self.retries = retries
        self._backoff = backoff
        # Kept private and out of __repr__ so it cannot leak into logs or tracebacks.
        self._api_key = api_key
        # Auto mode only: False once this server has rejected a request with tools.
        self._server_takes_tools = True
        self._endpoint = Endpoint(
            url=f"{self.base_url}{self.path}",
            api_key=api_key,
            transport=transport,
            connect_timeout_ms=connect_timeout_ms,
        )
        self._display_url = display_url(self.base_url)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model} at {self._display_url}>"

    async def plan(
        self, request: PlannerRequest, *, budget: Budget, on_token: OnToken | None = None
    ) -> PlannerReply:
        async def attempt(state: Attempt) -> PlannerReply:
            return await self._attempt(request, state, budget, state.watch(on_token))

        return await budget.run(
            with_retries(
                attempt,
                budget=budget,
                retries=self.retries,
                backoff=self._backoff,
                on_attempt=request.on_attempt,
                on_retry=request.on_retry,
            )
        )

    async def aclose(self) -> None:
        await self._endpoint.aclose()

    def _tools(self, request: PlannerRequest) -> list[dict[str, Any]]:
        if not request.actions or self.native_tools is False:
            return []
        if self.native_tools is None and not self._server_takes_tools:
            return []
        definitions = tool_definitions(request.actions, output_schema=request.output_schema)
        return [self._tool(definition) for definition in definitions]

    async def _attempt(
        self, request: PlannerRequest, attempt: Attempt, budget: Budget, on_token: OnToken | None
    ) -> PlannerReply:
        tools = self._tools(request)
        refused = False
        while True:
            async with self._endpoint.post(
                self._payload(request, tools), headers=self._headers(), budget=budget
            ) as response:
                status = response.status_code
                if tools and self.native_tools is None and status == 400:
                    # A server (or proxy) without tool support rejects the whole request;
                    # ask again without tools, the actions are in the system prompt anyway.
                    excerpt = await self._endpoint.excerpt(response)
                    log.info("%s refused tools (%s); asking without", self._display_url, excerpt)
                    tools, refused = [], True
                    continue
                if refused and status != 400:
                    self._server_takes_tools = False
                await self._endpoint.check_status(response, attempt)
                if await self._endpoint.check_content_type(response):
                    return await self._read_json(response, on_token)
                return await self._read_stream(response, on_token)

    @staticmethod
    def _messages(request: PlannerRequest, tools: list[dict[str, Any]]) -> list[ChatMessage]:
        """The request's messages; with tools, its system prompt for native tools."""
        messages = request.messages
        if tools and request.native_system and messages and messages[0].role == "system":
            return [ChatMessage("system", request.native_system), *messages[1:]]
        return messages

    # -- the protocol ----------------------------------------------------------------------

    def _tool(self, definition: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _payload(self, request: PlannerRequest, tools: list[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    async def _read_json(self, response: httpx.Response, on_token: OnToken | None) -> PlannerReply:
        raise NotImplementedError

    async def _read_stream(
        self, response: httpx.Response, on_token: OnToken | None
    ) -> PlannerReply:
        raise NotImplementedError


def _json_headers(headers: Mapping[str, str]) -> httpx.Headers:
    out = httpx.Headers(headers)
    out.setdefault("Content-Type", "application/json")
    return out


def request_body(payload: dict[str, Any]) -> bytes:
    """``payload`` as the UTF-8 JSON body of a request (as httpx's ``json=`` writes it),
    with any half of a UTF-16 pair a page's text left alone written as U+FFFD: UTF-8 has
    no bytes for it, and one such character in a snapshot failed every request of the run."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return whole_text(text).encode("utf-8")
