"""A planner that talks to any OpenAI-compatible ``/chat/completions`` endpoint.

OpenAI, vLLM, Ollama (``http://127.0.0.1:11434/v1``) and LM Studio all speak the same
streaming protocol: a POST with ``"stream": true`` answered by server-sent events, one
``data: {chunk}`` per event and ``data: [DONE]`` at the end.  Servers that ignore
``stream`` and answer one ``application/json`` completion are accepted too.

Time comes only from the caller's :class:`~automation.budget.Budget`: the whole exchange
(connect, headers, every streamed chunk, every ``on_token`` call) runs inside
``budget.run()``, so a stalled stream ends when the budget does and the stop button ends it
at once.  The httpx timeout is set from the same budget only as a backstop.

Errors, all from :mod:`automation.errors`::

    LLMUnavailable      cannot connect, connection dropped, HTTP 429, HTTP 5xx
    LLMResponseError    other HTTP 4xx, malformed stream or body, empty reply
    BudgetExceeded      the budget ran out (including an httpx timeout derived from it)
    Cancelled           the budget was cancelled

The API key is sent only in the ``Authorization`` header and is scrubbed from every error
message (some servers echo the key they rejected).
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from automation.budget import Budget
from automation.errors import BudgetExceeded, LLMResponseError, LLMUnavailable
from automation.llm.base import OnToken, PlannerReply, PlannerRequest

__all__ = ["OpenAICompatPlanner"]

# Longest server text quoted in an error: enough to show the server's reason, short
# enough to fit in a chat bubble and a log line.
_EXCERPT_CHARS = 300
# An error body can be a whole HTML page from a proxy; reading this much is enough to
# build the excerpt and bounds the time spent on a response we are going to reject.
_ERROR_BODY_READ_BYTES = 8192

_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
_USERINFO_RE = re.compile(r"//[^/@]*@")


class OpenAICompatPlanner:
    """Streams chat completions from an OpenAI-compatible server."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        # Kept private and out of __repr__ so it cannot leak into logs or tracebacks.
        self._api_key = api_key
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._url = f"{self.base_url}/chat/completions"
        self._display_url = _display_url(self.base_url)

    def __repr__(self) -> str:
        return f"<OpenAICompatPlanner {self.model} at {self._display_url}>"

    async def plan(
        self, request: PlannerRequest, *, budget: Budget, on_token: OnToken | None = None
    ) -> PlannerReply:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in request.messages],
            "temperature": self.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.max_tokens is not None:
            payload["max_tokens"] = self.max_tokens
        return await budget.run(self._complete(payload, budget, on_token))

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            # timeout=None: every request passes its own timeout, taken from its budget.
            self._client = httpx.AsyncClient(transport=self._transport, timeout=None)
        return self._client

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream, application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _complete(
        self, payload: dict[str, Any], budget: Budget, on_token: OnToken | None
    ) -> PlannerReply:
        # budget.run() is the real deadline; this timeout only makes sure no socket
        # operation can outlive the budget even if the task is never cancelled.
        timeout = httpx.Timeout(budget.remaining_ms() / 1000)
        try:
            async with self._get_client().stream(
                "POST", self._url, json=payload, headers=self._headers(), timeout=timeout
            ) as response:
                await self._check_status(response)
                content_type = response.headers.get("content-type", "").lower()
                if "json" in content_type:
                    return await self._read_json(response, on_token)
                if content_type and "event-stream" not in content_type:
                    excerpt = await self._excerpt(response)
                    raise LLMResponseError(
                        self._scrub(
                            f"{self._display_url} answered with content type "
                            f"{content_type!r}, not a chat completion: {excerpt}"
                        )
                    )
                return await self._read_stream(response, on_token)
        except httpx.TimeoutException as exc:
            # The timeout was derived from the budget, so hitting it means the budget is
            # spent, even if asyncio's clock has not quite caught up yet.
            raise BudgetExceeded(
                f"{budget.label} ran out of its {budget.timeout_ms:.0f} ms budget "
                f"waiting for the LLM at {self._display_url}"
            ) from exc
        except httpx.DecodingError as exc:
            raise LLMResponseError(
                self._scrub(f"{self._display_url} sent a body that could not be decoded: {exc}")
            ) from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            detail = str(exc) or type(exc).__name__
            raise LLMUnavailable(
                self._scrub(f"cannot reach the LLM at {self._display_url}: {detail}"),
                hint="is the model server running and the base URL right?",
            ) from exc

    async def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        excerpt = await self._excerpt(response)
        message = self._scrub(f"{self._display_url} answered HTTP {status}: {excerpt}")
        if status == 429 or status >= 500:
            raise LLMUnavailable(message)
        raise LLMResponseError(message)

    async def _excerpt(self, response: httpx.Response) -> str:
        """A short, one-line version of an error body, preferring the server's own message."""
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) >= _ERROR_BODY_READ_BYTES:
                break
        text = body.decode("utf-8", errors="replace")
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                text = error["message"]
            elif isinstance(error, str):
                text = error
        text = " ".join(self._scrub(text).split())
        if len(text) > _EXCERPT_CHARS:
            text = text[: _EXCERPT_CHARS - 1] + "…"
        return text or "(empty body)"

    async def _read_json(self, response: httpx.Response, on_token: OnToken | None) -> PlannerReply:
        raw = await response.aread()
        data = self._parse_json(raw.decode("utf-8", errors="replace"), where="body")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMResponseError(
                self._scrub(f"{self._display_url} answered JSON without choices: {raw[:200]!r}")
            )
        message = choices[0].get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if not isinstance(text, str) or not text:
            raise LLMResponseError("empty reply")
        if on_token is not None:
            # One piece for the whole reply, so the UI shows it the same way as a stream.
            await on_token(text)
        return PlannerReply(text=text, usage=_usage(data.get("usage")))

    async def _read_stream(
        self, response: httpx.Response, on_token: OnToken | None
    ) -> PlannerReply:
        pieces: list[str] = []
        usage: dict[str, int] = {}
        # aiter_lines() reassembles lines split across network chunks; events follow the
        # SSE rules: ``data:`` lines accumulate until a blank line dispatches them.
        data_lines: list[str] = []
        done = False
        async for line in response.aiter_lines():
            if line:
                field, _, value = line.partition(":")
                if field == "data":
                    data_lines.append(value.removeprefix(" "))
                # Comments (": keep-alive"), event:, id:, retry: carry nothing we need.
                continue
            if not data_lines:
                continue
            event, data_lines = "\n".join(data_lines), []
            done = await self._handle_event(event, pieces, usage, on_token)
            if done:
                break
        if data_lines and not done:
            # A server that closes without the final blank line still sent a whole event.
            await self._handle_event("\n".join(data_lines), pieces, usage, on_token)
        text = "".join(pieces)
        if not text:
            raise LLMResponseError("empty reply")
        return PlannerReply(text=text, usage=usage)

    async def _handle_event(
        self,
        event: str,
        pieces: list[str],
        usage: dict[str, int],
        on_token: OnToken | None,
    ) -> bool:
        """Apply one SSE event; return True at ``[DONE]``."""
        if event.strip() == "[DONE]":
            return True
        chunk = self._parse_json(event, where="stream")
        if "error" in chunk:
            # vLLM and OpenAI report failures that happen after the headers this way.
            error = chunk["error"]
            detail = error.get("message") if isinstance(error, dict) else error
            raise LLMResponseError(
                self._scrub(f"{self._display_url} reported an error mid-stream: {detail}")
            )
        chunk_usage = chunk.get("usage")
        if isinstance(chunk_usage, dict):
            usage.clear()
            usage.update(_usage(chunk_usage))
        choices = chunk.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            delta = choices[0].get("delta")
            piece = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(piece, str) and piece:
                pieces.append(piece)
                if on_token is not None:
                    await on_token(piece)
        return False

    def _parse_json(self, text: str, *, where: str) -> dict[str, Any]:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise LLMResponseError(
                self._scrub(
                    f"{self._display_url} sent malformed JSON in its {where}: {text[:200]!r}"
                )
            ) from exc
        if not isinstance(data, dict):
            raise LLMResponseError(
                self._scrub(f"{self._display_url} sent a non-object in its {where}: {text[:200]!r}")
            )
        return data

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "[api key]")
        return text


def _usage(raw: object) -> dict[str, int]:
    """Token counts as plain ints; servers differ in which keys they fill in."""
    if not isinstance(raw, dict):
        return {}
    usage = {key: int(raw[key]) for key in _USAGE_KEYS if isinstance(raw.get(key), int | float)}
    if "total_tokens" not in usage and {"prompt_tokens", "completion_tokens"} <= usage.keys():
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def _display_url(url: str) -> str:
    """The base URL without credentials or query, safe to show in messages."""
    return _USERINFO_RE.sub("//", url.split("?", 1)[0], count=1)
