"""A planner that talks to any OpenAI-compatible ``/chat/completions`` endpoint.

OpenAI, vLLM, Ollama (``http://127.0.0.1:11434/v1``) and LM Studio all speak the same
streaming protocol: a POST with ``"stream": true`` answered by server-sent events, one
``data: {chunk}`` per event and ``data: [DONE]`` at the end.  Servers that ignore
``stream`` and answer one ``application/json`` completion are accepted too.

A stream is a whole reply when it ends with ``[DONE]`` or after a chunk with a
``finish_reason`` (some servers leave ``[DONE]`` out).  One that ends with neither was cut:
it is a dropped connection (LLMUnavailable, retried), never taken as the whole answer.

Usage keeps ``prompt_tokens``, ``completion_tokens`` and ``total_tokens``, and
``cached_tokens`` (the part of the prompt the server had cached) when it reports it.

When the round offers actions, they are sent as native ``tools`` (``native_tools``: True
always, False never, None to try and stop after a server rejects them with HTTP 400).
Tool calls come back as ``<action>`` tags appended to the reply text.

Time comes only from the caller's :class:`~automation.budget.Budget`: the whole exchange
(connect, headers, every streamed chunk, every ``on_token`` call, every wait between
retries) runs inside ``budget.run()``, so a stalled stream ends when the budget does and
the stop button ends it at once.  The httpx timeout is set from the same budget only as a
backstop.

Errors, all from :mod:`automation.errors`::

    LLMUnavailable      cannot connect, connection dropped, a stream cut before its end,
                        HTTP 429, HTTP 5xx (retried first, see automation.llm.retry)
    LLMResponseError    other HTTP 4xx, malformed stream or body, empty reply
    BudgetExceeded      the budget ran out (including an httpx timeout derived from it)
    Cancelled           the budget was cancelled

The API key is sent only in the ``Authorization`` header and is scrubbed from every error
message (some servers echo the key they rejected).
"""

from __future__ import annotations

import json
import math
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx

from automation.errors import LLMResponseError, LLMUnavailable
from automation.llm.base import OnToken, PlannerReply, PlannerRequest
from automation.llm.http import DROPPED_MID_REPLY, HttpPlanner, read_answer, sse_events
from automation.llm.tools import append_tags, call_tag

__all__ = ["OpenAICompatPlanner"]

_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


@dataclass
class _ToolCall:
    id: str = ""
    name: str = ""
    arguments: str = ""  # JSON text, assembled from the streamed fragments


class OpenAICompatPlanner(HttpPlanner):
    """Streams chat completions from an OpenAI-compatible server."""

    name = "openai"
    path = "/chat/completions"

    def _tool(self, definition: dict[str, Any]) -> dict[str, Any]:
        return {"type": "function", "function": definition}

    def _payload(self, request: PlannerRequest, tools: list[dict[str, Any]]) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in self._messages(request, tools)],
            "temperature": self.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.max_tokens is not None:
            payload["max_tokens"] = self.max_tokens
        if tools:
            payload["tools"] = tools
            payload["tool_choice"] = "auto"
        return payload

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream, application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _read_json(self, response: httpx.Response, on_token: OnToken | None) -> PlannerReply:
        raw = await read_answer(response)
        data = self._endpoint.parse_json(raw.decode("utf-8", errors="replace"), where="body")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMResponseError(
                self._endpoint.scrub(
                    f"{self._display_url} answered JSON without choices: {raw[:200]!r}"
                )
            )
        message = choices[0].get("message")
        message = message if isinstance(message, dict) else {}
        text = message.get("content")
        text = text if isinstance(text, str) else ""
        calls: dict[int, _ToolCall] = {}
        _merge_tool_calls(calls, message.get("tool_calls"))
        if text and on_token is not None:
            # One piece for the whole reply, so the UI shows it the same way as a stream.
            await on_token(text)
        return await _finish(text, calls, _usage(data.get("usage")), on_token)

    async def _read_stream(
        self, response: httpx.Response, on_token: OnToken | None
    ) -> PlannerReply:
        pieces: list[str] = []
        calls: dict[int, _ToolCall] = {}
        usage: dict[str, int] = {}
        done, finish_reason = False, ""
        try:
            async with aclosing(sse_events(response)) as events:
                async for event in events:
                    if event.data.strip() == "[DONE]":
                        done = True
                        break
                    chunk = self._endpoint.parse_json(event.data, where="stream")
                    await self._apply_chunk(chunk, pieces, calls, usage, on_token)
                    finish_reason = finish_reason or _finish_reason(chunk)
        except httpx.TransportError as exc:
            # After a finish_reason the reply is whole: a connection that breaks then
            # loses at most the usage chunk.
            if not finish_reason or isinstance(exc, httpx.TimeoutException):
                raise
        if not done and not finish_reason:
            raise LLMUnavailable(
                self._endpoint.scrub(
                    f"{self._display_url} closed the stream before the reply was complete "
                    f"(no finish_reason and no [DONE] after {len(''.join(pieces))} characters)"
                ),
                reason=DROPPED_MID_REPLY,
            )
        return await _finish("".join(pieces), calls, usage, on_token)

    async def _apply_chunk(
        self,
        chunk: dict[str, Any],
        pieces: list[str],
        calls: dict[int, _ToolCall],
        usage: dict[str, int],
        on_token: OnToken | None,
    ) -> None:
        if "error" in chunk:
            # vLLM and OpenAI report failures that happen after the headers this way.
            error = chunk["error"]
            detail = error.get("message") if isinstance(error, dict) else error
            raise LLMResponseError(
                self._endpoint.scrub(f"{self._display_url} reported an error mid-stream: {detail}")
            )
        chunk_usage = chunk.get("usage")
        if isinstance(chunk_usage, dict):
            usage.clear()
            usage.update(_usage(chunk_usage))
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return
        delta = choices[0].get("delta")
        if not isinstance(delta, dict):
            return
        piece = delta.get("content")
        if isinstance(piece, str) and piece:
            pieces.append(piece)
            if on_token is not None:
                await on_token(piece)
        # Tool-call fragments are not tokens: the whole call is shown once it is complete.
        _merge_tool_calls(calls, delta.get("tool_calls"))


def _finish_reason(chunk: dict[str, Any]) -> str:
    """The chunk's ``finish_reason`` ("stop", "length", "tool_calls" ...), or ""."""
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    reason = choices[0].get("finish_reason")
    return reason if isinstance(reason, str) else ""


def _merge_tool_calls(calls: dict[int, _ToolCall], raw: object) -> None:
    """Fold ``tool_calls`` items (whole, or streamed fragments keyed by index) into calls."""
    if not isinstance(raw, list):
        return
    for item in raw:
        if not isinstance(item, dict):
            continue
        ident = item.get("id") if isinstance(item.get("id"), str) else ""
        index = item.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # Without an index a call comes whole, or continues the one with its id.
            same = [i for i, call in calls.items() if ident and call.id == ident]
            index = same[0] if same else max(calls, default=-1) + 1
        call = calls.setdefault(index, _ToolCall())
        if ident:
            call.id = ident
        function = item.get("function")
        if not isinstance(function, dict):
            continue
        name = function.get("name")
        if isinstance(name, str) and name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments += arguments
        elif isinstance(arguments, dict):
            call.arguments = json.dumps(arguments, ensure_ascii=False)


async def _finish(
    text: str, calls: dict[int, _ToolCall], usage: dict[str, int], on_token: OnToken | None
) -> PlannerReply:
    tags = [call_tag(calls[i].name, calls[i].arguments) for i in sorted(calls)]
    if not text and not tags:
        raise LLMResponseError("empty reply")
    return PlannerReply(text=await append_tags(text, tags, on_token), usage=usage)


def _usage(raw: object) -> dict[str, int]:
    """Token counts as plain ints; servers differ in which keys they fill in."""
    if not isinstance(raw, dict):
        return {}
    usage = {key: int(raw[key]) for key in _USAGE_KEYS if _is_count(raw.get(key))}
    if "total_tokens" not in usage and {"prompt_tokens", "completion_tokens"} <= usage.keys():
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    details = raw.get("prompt_tokens_details")
    if isinstance(details, dict) and _is_count(details.get("cached_tokens")):
        usage["cached_tokens"] = int(details["cached_tokens"])
    return usage


def _is_count(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)
