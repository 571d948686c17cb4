"""A planner that talks to Anthropic's Messages API (``POST /v1/messages``).

The reply is streamed as server-sent events: ``message_start`` (input tokens),
``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` for each text or
``tool_use`` block, ``message_delta`` (output tokens, stop reason), ``message_stop``;
``ping`` keeps the connection alive and ``error`` reports a failure after the headers.
Text deltas go to ``on_token``; ``tool_use`` blocks become ``<action>`` tags appended to
the reply text, as with :mod:`automation.llm.openai`.  Usage is reported with the same
keys as OpenAI's: ``prompt_tokens`` (cached and cache-writing input included),
``completion_tokens``, ``total_tokens``, and when the API reports them ``cached_tokens``
(read from the cache) and ``cache_creation_tokens`` (written to it).

A stream is a whole reply once ``message_stop`` or a ``message_delta`` with a
``stop_reason`` arrived; one that ends before either was cut: a dropped connection
(LLMUnavailable, retried), never taken as the whole answer.

The system messages become the ``system`` field; the rest become alternating user and
assistant turns (consecutive messages of one role merged, a user turn first).

Budgets, retries and errors work as in :mod:`automation.llm.openai`::

    LLMUnavailable      cannot connect, connection dropped, a stream cut before its end,
                        HTTP 429, HTTP 5xx and 529, an overloaded_error, api_error or
                        rate_limit_error event mid-stream
    LLMResponseError    other HTTP 4xx, other error events, malformed stream or body,
                        empty reply
    BudgetExceeded      the budget ran out
    Cancelled           the budget was cancelled

The API key is sent only in the ``x-api-key`` header and is scrubbed from every error
message.
"""

from __future__ import annotations

import logging
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx

from automation.errors import LLMResponseError, LLMUnavailable
from automation.llm.base import ChatMessage, OnToken, PlannerReply, PlannerRequest
from automation.llm.http import DROPPED_MID_REPLY, HttpPlanner, read_answer, sse_events
from automation.llm.tools import append_tags, call_tag

__all__ = ["ANTHROPIC_VERSION", "AnthropicPlanner", "shape_messages"]

log = logging.getLogger("automation.llm")

ANTHROPIC_VERSION = "2023-06-01"
# The API wants a user turn first; a history that starts otherwise gets this one.
_OPENING_TURN = "Continue."
# Error events that mean "try again later", as HTTP 429, 500 and 529 do.
_PASSING_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


@dataclass
class _Block:
    kind: str  # "text", "tool_use", or a kind we skip (thinking, ...)
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)  # tool_use input given whole
    partial_json: list[str] = field(default_factory=list)  # tool_use input streamed

    def tag(self) -> str:
        streamed = "".join(self.partial_json)
        return call_tag(self.name, streamed if streamed.strip() else self.input)


@dataclass
class _Message:
    """What a stream has delivered so far."""

    pieces: list[str] = field(default_factory=list)
    blocks: dict[int, _Block] = field(default_factory=dict)
    input_tokens: int | None = None  # the uncached part of the prompt
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    output_tokens: int | None = None
    stop_reason: str = ""
    stopped: bool = False  # message_stop arrived

    @property
    def complete(self) -> bool:
        return self.stopped or bool(self.stop_reason)

    def usage(self) -> dict[str, int]:
        usage: dict[str, int] = {}
        if self.input_tokens is not None:
            cached = (self.cache_read_tokens or 0) + (self.cache_creation_tokens or 0)
            usage["prompt_tokens"] = self.input_tokens + cached
        if self.output_tokens is not None:
            usage["completion_tokens"] = self.output_tokens
        if len(usage) == 2:
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if self.cache_read_tokens is not None:
            usage["cached_tokens"] = self.cache_read_tokens
        if self.cache_creation_tokens is not None:
            usage["cache_creation_tokens"] = self.cache_creation_tokens
        return usage

    def tags(self) -> list[str]:
        return [
            self.blocks[i].tag() for i in sorted(self.blocks) if self.blocks[i].kind == "tool_use"
        ]


class AnthropicPlanner(HttpPlanner):
    """Streams replies from Anthropic's Messages API."""

    name = "anthropic"
    path = "/v1/messages"
    default_base_url = "https://api.anthropic.com"
    default_max_tokens = 4096  # the Messages API requires a limit

    def _tool(self, definition: dict[str, Any]) -> dict[str, Any]:
        return {
            "name": definition["name"],
            "description": definition["description"],
            "input_schema": definition["parameters"],
        }

    def _payload(self, request: PlannerRequest, tools: list[dict[str, Any]]) -> dict[str, Any]:
        system, messages = shape_messages(self._messages(request, tools))
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "messages": messages,
            "stream": True,
        }
        if system:
            # The system prompt and the tools (sent before it) are the same bytes every
            # round of a run: marked, the provider caches them instead of reading them anew.
            payload["system"] = [
                {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
            ]
        if tools:
            payload["tools"] = tools
        return payload

    def _headers(self) -> dict[str, str]:
        headers = {
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream, application/json",
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    async def _read_json(self, response: httpx.Response, on_token: OnToken | None) -> PlannerReply:
        raw = await read_answer(response)
        data = self._endpoint.parse_json(raw.decode("utf-8", errors="replace"), where="body")
        if data.get("type") == "error":
            self._raise_error_event(data)
        content = data.get("content")
        if not isinstance(content, list):
            raise LLMResponseError(
                self._endpoint.scrub(
                    f"{self._display_url} answered JSON without content: {raw[:200]!r}"
                )
            )
        message = _Message()
        for index, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                message.pieces.append(block["text"])
            elif block.get("type") == "tool_use":
                message.blocks[index] = _tool_block(block)
        _read_usage(message, data.get("usage"))
        text = "".join(message.pieces)
        if text and on_token is not None:
            # One piece for the whole reply, so the UI shows it the same way as a stream.
            await on_token(text)
        return await self._finish(message, on_token)

    async def _read_stream(
        self, response: httpx.Response, on_token: OnToken | None
    ) -> PlannerReply:
        message = _Message()
        try:
            async with aclosing(sse_events(response)) as events:
                async for event in events:
                    data = self._endpoint.parse_json(event.data, where="stream")
                    kind = data.get("type") or event.event
                    await self._apply_event(kind, data, message, on_token)
                    if message.stopped:
                        break
        except httpx.TransportError as exc:
            # After the stop_reason the reply is whole: a connection that breaks then
            # loses only the message_stop.
            if not message.complete or isinstance(exc, httpx.TimeoutException):
                raise
        if not message.complete:
            raise LLMUnavailable(
                self._endpoint.scrub(
                    f"{self._display_url} closed the stream before the reply was complete "
                    f"(no stop_reason and no message_stop after "
                    f"{len(''.join(message.pieces))} characters)"
                ),
                reason=DROPPED_MID_REPLY,
            )
        return await self._finish(message, on_token)

    async def _apply_event(
        self, kind: str, data: dict[str, Any], message: _Message, on_token: OnToken | None
    ) -> None:
        if kind == "message_start":
            start = data.get("message")
            if isinstance(start, dict):
                _read_usage(message, start.get("usage"))
        elif kind == "content_block_start":
            block = data.get("content_block")
            index = data.get("index")
            if isinstance(block, dict) and isinstance(index, int):
                if block.get("type") == "tool_use":
                    message.blocks[index] = _tool_block(block)
                else:
                    message.blocks[index] = _Block(str(block.get("type", "")))
                    text = block.get("text")
                    if block.get("type") == "text" and isinstance(text, str) and text:
                        await _emit(text, message, on_token)
        elif kind == "content_block_delta":
            delta = data.get("delta")
            if not isinstance(delta, dict):
                return
            text, partial = delta.get("text"), delta.get("partial_json")
            if delta.get("type") == "text_delta" and isinstance(text, str) and text:
                await _emit(text, message, on_token)
            elif delta.get("type") == "input_json_delta" and isinstance(partial, str):
                index = data.get("index")
                block = message.blocks.get(index) if isinstance(index, int) else None
                if block is not None:
                    block.partial_json.append(partial)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                message.stop_reason = delta["stop_reason"]
            _read_usage(message, data.get("usage"))
        elif kind == "message_stop":
            message.stopped = True
        elif kind == "error":
            self._raise_error_event(data)
        # ping, content_block_stop and event types added later carry nothing we need.

    def _raise_error_event(self, data: dict[str, Any]) -> None:
        error = data.get("error")
        error = error if isinstance(error, dict) else {}
        kind = str(error.get("type") or "error")
        detail = self._endpoint.scrub(
            f"{self._display_url} reported {kind}: {error.get('message') or '(no message)'}"
        )
        if kind in _PASSING_ERRORS:
            raise LLMUnavailable(detail, reason=kind)
        raise LLMResponseError(detail)

    async def _finish(self, message: _Message, on_token: OnToken | None) -> PlannerReply:
        text, tags = "".join(message.pieces), message.tags()
        if not text and not tags:
            raise LLMResponseError("empty reply")
        if message.stop_reason == "max_tokens":
            log.info("%s cut the reply at max_tokens=%d", self._display_url, self.max_tokens)
        return PlannerReply(text=await append_tags(text, tags, on_token), usage=message.usage())


def shape_messages(messages: list[ChatMessage]) -> tuple[str, list[dict[str, str]]]:
    """The ``system`` text and the alternating turns the Messages API accepts."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content.strip())
    turns: list[dict[str, str]] = []
    for m in messages:
        if m.role == "system" or not m.content.strip():
            continue  # the API refuses empty turns
        role = "assistant" if m.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + m.content
        else:
            turns.append({"role": role, "content": m.content})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": _OPENING_TURN})
    return system, turns


async def _emit(piece: str, message: _Message, on_token: OnToken | None) -> None:
    message.pieces.append(piece)
    if on_token is not None:
        await on_token(piece)


def _tool_block(block: dict[str, Any]) -> _Block:
    given = block.get("input")
    name = block.get("name")
    return _Block(
        "tool_use",
        name=name if isinstance(name, str) else "",
        input=given if isinstance(given, dict) else {},
    )


def _read_usage(message: _Message, raw: object) -> None:
    """Fold an Anthropic usage object in (message_start's, then message_delta's, whose
    counts are cumulative: a later one replaces an earlier one)."""
    if not isinstance(raw, dict):
        return
    counts = {k: v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}
    if "input_tokens" in counts:
        message.input_tokens = counts["input_tokens"]
    if "cache_read_input_tokens" in counts:
        message.cache_read_tokens = counts["cache_read_input_tokens"]
    if "cache_creation_input_tokens" in counts:
        message.cache_creation_tokens = counts["cache_creation_input_tokens"]
    if "output_tokens" in counts:
        message.output_tokens = counts["output_tokens"]
