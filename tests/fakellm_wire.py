"""The two wire formats the scripted LLM server (tests/fakellm.py) speaks: a scripted
reply as OpenAI's and Anthropic's streamed events, and as their whole JSON answers.
``number`` is the server's next id for the answer."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakellm import Reply, ToolCall

# OpenAI's own streams carry a few characters per chunk; 8 keeps replies multi-chunk.
CHUNK_CHARS = 8


def openai_events(
    number: str,
    text: str,
    calls: Sequence[ToolCall],
    model: str,
    prompt_tokens: int,
    body: Any,
    reply: Reply,
) -> tuple[list[str], list[str], list[str]]:
    """The stream as (opening and text, tool calls, finish) event lists."""
    cid = f"chatcmpl-{number}"
    # OpenAI opens with the role and empty content; clients must not emit that as a token.
    head = [_sse(_chunk(cid, model, {"role": "assistant", "content": ""}, None))]
    pieces = _pieces(text)
    head += [_sse(_chunk(cid, model, {"content": piece}, None)) for piece in pieces]
    middle: list[str] = []
    fragments = 0
    for index, (name, args) in enumerate(calls):
        opening = {
            "index": index,
            "id": f"call_{cid}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        middle.append(_sse(_chunk(cid, model, {"tool_calls": [opening]}, None)))
        for fragment in _pieces(_arguments_text(args)):
            fragments += 1
            part = {"index": index, "function": {"arguments": fragment}}
            middle.append(_sse(_chunk(cid, model, {"tool_calls": [part]}, None)))
    tail = [_sse(_chunk(cid, model, {}, "tool_calls" if calls else "stop"))]
    options = body.get("stream_options") if isinstance(body, dict) else None
    if isinstance(options, dict) and options.get("include_usage"):
        usage = _usage(prompt_tokens, len(pieces) + fragments, reply.cached_tokens)
        tail.append(
            _sse(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    tail.append("data: [DONE]\n\n")
    return head, middle, tail


def anthropic_events(
    number: str,
    text: str,
    calls: Sequence[ToolCall],
    model: str,
    prompt_tokens: int,
    body: Any,
    reply: Reply,
) -> tuple[list[str], list[str], list[str]]:
    """The stream as (start and text, rest of the blocks, finish) event lists."""
    mid = f"msg_{number}"
    start = {
        "type": "message_start",
        "message": {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**_anthropic_input(prompt_tokens, reply), "output_tokens": 1},
        },
    }
    head = [_named_sse("message_start", start)]
    middle: list[str] = []
    pieces = _pieces(text)
    index = 0
    if text:
        head.append(
            _named_sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        head.append(_named_sse("ping", {"type": "ping"}))
        head += [
            _named_sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": piece},
                },
            )
            for piece in pieces
        ]
        middle.append(_block_stop(0))
        index = 1
    fragments = 0
    for n, (name, args) in enumerate(calls, start=index):
        block = {"type": "tool_use", "id": f"toolu_{mid}_{n}", "name": name, "input": {}}
        middle.append(
            _named_sse(
                "content_block_start",
                {"type": "content_block_start", "index": n, "content_block": block},
            )
        )
        # Anthropic opens each tool input with an empty fragment.
        for fragment in ["", *_pieces(_arguments_text(args))]:
            fragments += 1 if fragment else 0
            middle.append(
                _named_sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": n,
                        "delta": {"type": "input_json_delta", "partial_json": fragment},
                    },
                )
            )
        middle.append(_block_stop(n))
    tail = [
        _named_sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": len(pieces) + fragments},
            },
        ),
        _named_sse("message_stop", {"type": "message_stop"}),
    ]
    return head, middle, tail


def completion(number: str, reply: Reply, model: str, prompt_tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["content"] = reply.text or None
        message["tool_calls"] = [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": _arguments_text(args)},
            }
            for n, (name, args) in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _usage(prompt_tokens, max(1, len(reply.text) // CHUNK_CHARS), reply.cached_tokens),
    }


def message(number: str, reply: Reply, model: str, prompt_tokens: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for n, (name, args) in enumerate(reply.tool_calls):
        # The API only ever sends an object here; raw text is kept under "raw".
        given = args if isinstance(args, dict) else {"raw": args}
        content.append({"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": given})
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            **_anthropic_input(prompt_tokens, reply),
            "output_tokens": max(1, len(reply.text) // CHUNK_CHARS),
        },
    }


ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


def _arguments_text(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data)}\n\n"


def _named_sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _block_stop(index: int) -> str:
    return _named_sse("content_block_stop", {"type": "content_block_stop", "index": index})


def error_event(kind: str, *, anthropic: bool) -> str:
    error = {"type": kind, "message": f"scripted {kind}"}
    if anthropic:
        return _named_sse("error", {"type": "error", "error": error})
    return _sse({"error": error})


def _usage(
    prompt_tokens: int, completion_tokens: int, cached_tokens: int | None = None
) -> dict[str, Any]:
    """OpenAI's usage: ``prompt_tokens`` counts the cached ones too."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return usage


def _anthropic_input(prompt_tokens: int, reply: Reply) -> dict[str, int]:
    """Anthropic's input counts: ``input_tokens`` is only the part the cache did not cover."""
    counts = {"input_tokens": prompt_tokens}
    if reply.cached_tokens is not None:
        counts["cache_read_input_tokens"] = reply.cached_tokens
    if reply.cache_creation_tokens is not None:
        counts["cache_creation_input_tokens"] = reply.cache_creation_tokens
    return counts
