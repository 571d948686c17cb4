"""OpenAICompatPlanner against the scripted server over real loopback HTTP."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from automation.actions import ACTIONS
from automation.agent.parser import parse_reply
from automation.budget import Budget
from automation.errors import BudgetExceeded, Cancelled, LLMResponseError, LLMUnavailable
from automation.llm import http
from automation.llm.base import ChatMessage, PlannerRequest
from automation.llm.openai import OpenAICompatPlanner
from automation.llm.tools import SHARED_TOOL, action_tag, call_tag, tool_definitions
from tests import fakellm
from tests.fakellm import CHUNK_CHARS, Reply, ScriptedLLMServer
from tests.net import free_port

# Lets this module run on its own; tests/conftest.py provides the same fixture project-wide.
llm_server = fakellm.llm_server

SECRET_KEY = "sk-test-DO-NOT-LEAK-0123456789"
REPLY_TEXT = 'I will open the search box. <action>{"action": "click", "ref": "e5"}</action>'


def make_request() -> PlannerRequest:
    return PlannerRequest(
        task="find the docs",
        start_url="http://127.0.0.1/",
        round=1,
        messages=[
            ChatMessage("system", "You drive a browser."),
            ChatMessage("user", "Find the docs page."),
        ],
    )


class TokenSink:
    """Collects on_token pieces; ``first`` is set once any text has arrived."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.first = asyncio.Event()

    async def __call__(self, piece: str) -> None:
        self.pieces.append(piece)
        self.first.set()


class RechunkingTransport(httpx.AsyncBaseTransport):
    """The real HTTP transport, with response bodies handed on in tiny slices.

    The bytes still come from the scripted server; slicing them makes every SSE line and
    several UTF-8 characters straddle network chunks, which loopback never does by itself.
    """

    def __init__(self, slice_bytes: int) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._slice_bytes = slice_bytes

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Sliced(response, self._slice_bytes),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Sliced(httpx.AsyncByteStream):
    def __init__(self, response: httpx.Response, slice_bytes: int) -> None:
        self._response = response
        self._slice_bytes = slice_bytes

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_raw():
            for i in range(0, len(chunk), self._slice_bytes):
                yield chunk[i : i + self._slice_bytes]

    async def aclose(self) -> None:
        await self._response.aclose()


@pytest.fixture
async def planner(llm_server: ScriptedLLMServer) -> AsyncIterator[OpenAICompatPlanner]:
    # No retries: these tests are about one exchange; tests/automation/llm/test_llm_retry.py
    # covers retrying.
    p = OpenAICompatPlanner(base_url=llm_server.base_url, model="test-model", retries=0)
    yield p
    await p.aclose()


async def test_streamed_reply_is_assembled_and_tokens_arrive_in_order(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(REPLY_TEXT)
    sink = TokenSink()

    reply = await planner.plan(make_request(), budget=Budget(5000), on_token=sink)

    assert reply.text == REPLY_TEXT
    expected = [REPLY_TEXT[i : i + CHUNK_CHARS] for i in range(0, len(REPLY_TEXT), CHUNK_CHARS)]
    # The server's opening role chunk has empty content and must not become a token.
    assert sink.pieces == expected


async def test_usage_comes_from_the_usage_chunk(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(REPLY_TEXT)

    reply = await planner.plan(make_request(), budget=Budget(5000))

    chunks = -(-len(REPLY_TEXT) // CHUNK_CHARS)
    assert reply.usage["completion_tokens"] == chunks
    assert reply.usage["prompt_tokens"] > 0
    assert reply.usage["total_tokens"] == reply.usage["prompt_tokens"] + chunks
    assert set(reply.usage) == {"prompt_tokens", "completion_tokens", "total_tokens"}


async def test_request_body_carries_model_messages_and_stream_flags(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script("one", "two")
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url + "/", model="qwen2.5:7b", temperature=0.3, max_tokens=256
    )
    try:
        await planner.plan(make_request(), budget=Budget(5000))
        planner.max_tokens = None
        await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    first, second = llm_server.requests
    assert first["model"] == "qwen2.5:7b"
    assert first["messages"] == [
        {"role": "system", "content": "You drive a browser."},
        {"role": "user", "content": "Find the docs page."},
    ]
    assert first["stream"] is True
    assert first["stream_options"] == {"include_usage": True}
    assert first["temperature"] == 0.3
    assert first["max_tokens"] == 256
    assert "max_tokens" not in second


async def test_authorization_header_only_with_a_key(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script("with key", "without key")
    with_key = OpenAICompatPlanner(base_url=llm_server.base_url, model="m", api_key=SECRET_KEY)
    without_key = OpenAICompatPlanner(base_url=llm_server.base_url, model="m")
    try:
        await with_key.plan(make_request(), budget=Budget(5000))
        await without_key.plan(make_request(), budget=Budget(5000))
    finally:
        await with_key.aclose()
        await without_key.aclose()

    assert llm_server.headers[0]["authorization"] == f"Bearer {SECRET_KEY}"
    assert "authorization" not in llm_server.headers[1]
    assert SECRET_KEY not in repr(with_key)


async def test_non_streaming_json_answer_is_accepted(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text=REPLY_TEXT, json_body=True))
    sink = TokenSink()

    reply = await planner.plan(make_request(), budget=Budget(5000), on_token=sink)

    assert reply.text == REPLY_TEXT
    assert sink.pieces == [REPLY_TEXT]
    assert reply.usage["total_tokens"] == (
        reply.usage["prompt_tokens"] + reply.usage["completion_tokens"]
    )
    assert reply.usage["prompt_tokens"] > 0


async def test_lines_split_across_network_chunks_are_reassembled(
    llm_server: ScriptedLLMServer,
) -> None:
    text = "Größe prüfen → weiter ✓ " * 3  # multi-byte characters will be cut mid-sequence
    llm_server.script(text)
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url, model="m", transport=RechunkingTransport(slice_bytes=3)
    )
    sink = TokenSink()
    try:
        reply = await planner.plan(make_request(), budget=Budget(5000), on_token=sink)
    finally:
        await planner.aclose()

    assert reply.text == text
    assert "".join(sink.pieces) == text
    assert reply.usage["completion_tokens"] == -(-len(text) // CHUNK_CHARS)


async def test_comments_keepalives_and_crlf_lines_are_ignored(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    raw = (
        ": keep-alive\r\n\r\n"
        'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\r\n\r\n'
        "\r\n"
        "event: message\r\n"
        'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\r\n\r\n'
        ": still thinking\r\n\r\n"
        'data:{"choices":[{"index":0,"delta":{"content":"lo"}}]}\r\n\r\n'
        'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\r\n\r\n'
        "data: [DONE]\r\n\r\n"
        'data: {"choices":[{"index":0,"delta":{"content":" after done"}}]}\r\n\r\n'
    )
    llm_server.script(Reply(raw_sse=raw))
    sink = TokenSink()

    reply = await planner.plan(make_request(), budget=Budget(5000), on_token=sink)

    assert reply.text == "Hello"
    assert sink.pieces == ["Hel", "lo"]
    # total_tokens filled in when a server leaves it out.
    assert reply.usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


async def test_http_500_is_unavailable_with_status_and_excerpt(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(status=500, text="model crashed while loading"))

    with pytest.raises(LLMUnavailable) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert "500" in info.value.message
    assert "model crashed while loading" in info.value.message


async def test_http_429_is_unavailable(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(status=429, text="rate limit reached"))

    with pytest.raises(LLMUnavailable) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert "429" in info.value.message
    assert "rate limit reached" in info.value.message


async def test_http_400_is_a_response_error(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(status=400, text="model 'nope' not found"))

    with pytest.raises(LLMResponseError) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert not isinstance(info.value, LLMUnavailable)
    assert "400" in info.value.message
    assert "model 'nope' not found" in info.value.message


async def test_error_excerpt_is_short_and_never_contains_the_key(
    llm_server: ScriptedLLMServer,
) -> None:
    # Real servers echo the rejected key; the message must not carry it onwards.
    llm_server.script(
        Reply(status=401, text=f"Incorrect API key provided: {SECRET_KEY}"),
        Reply(status=503, text="overloaded " * 500),
    )
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url, model="m", api_key=SECRET_KEY, retries=0
    )
    try:
        with pytest.raises(LLMResponseError) as rejected:
            await planner.plan(make_request(), budget=Budget(5000))
        with pytest.raises(LLMUnavailable) as overloaded:
            await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert "401" in str(rejected.value)
    assert "Incorrect API key provided" in str(rejected.value)
    assert SECRET_KEY not in str(rejected.value)
    excerpt = overloaded.value.message.split("HTTP 503: ", 1)[1]
    assert excerpt.startswith("overloaded overloaded")
    assert len(excerpt) <= 300


async def test_connection_refused_is_unavailable_and_names_the_url() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    planner = OpenAICompatPlanner(base_url=base_url, model="m", api_key=SECRET_KEY, retries=0)
    try:
        with pytest.raises(LLMUnavailable) as info:
            await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert base_url in info.value.message
    assert SECRET_KEY not in str(info.value)


async def test_malformed_sse_data_is_a_response_error(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    raw = (
        'data: {"choices":[{"index":0,"delta":{"content":"ok so far"}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{"content":\n\n'
        "data: [DONE]\n\n"
    )
    llm_server.script(Reply(raw_sse=raw))

    with pytest.raises(LLMResponseError) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert "malformed" in info.value.message


async def test_empty_reply_is_a_response_error(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script("")
    sink = TokenSink()

    with pytest.raises(LLMResponseError) as info:
        await planner.plan(make_request(), budget=Budget(5000), on_token=sink)

    assert info.value.message == "empty reply"
    assert sink.pieces == []


async def test_running_out_of_script_fails_loudly(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    with pytest.raises(LLMUnavailable) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert "no scripted reply left" in info.value.message
    assert len(llm_server.requests) == 1


async def test_stall_mid_stream_ends_with_the_budget(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text=REPLY_TEXT, stall_after_chars=20))
    sink = TokenSink()
    budget_ms = 3_000  # room for the first characters on a busy machine

    started = time.monotonic()
    with pytest.raises(BudgetExceeded):
        await planner.plan(make_request(), budget=Budget(budget_ms), on_token=sink)
    elapsed_ms = (time.monotonic() - started) * 1000

    assert budget_ms - 50 <= elapsed_ms < 30_000  # the stall never ends by itself
    assert "".join(sink.pieces) == REPLY_TEXT[:20]


async def test_slow_first_byte_is_bounded_by_the_budget(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text="too late", delay_s=60))

    started = time.monotonic()
    with pytest.raises(BudgetExceeded):
        await planner.plan(make_request(), budget=Budget(300))

    assert time.monotonic() - started < 30  # the budget's end, not the reply's


async def test_cancel_during_a_stall_ends_promptly(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text=REPLY_TEXT, stall_after_chars=8))
    sink = TokenSink()
    budget = Budget(10_000)
    task = asyncio.create_task(planner.plan(make_request(), budget=budget, on_token=sink))
    await asyncio.wait_for(sink.first.wait(), timeout=60)

    cancelled_at = time.monotonic()
    budget.cancel("stop button")
    with pytest.raises(Cancelled) as info:
        await task

    assert time.monotonic() - cancelled_at < 5  # the cancel, not the budget's 10 s
    assert "stop button" in info.value.message
    assert sink.pieces == [REPLY_TEXT[:8]]


async def test_planner_is_usable_again_after_aclose(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script("first", "second")

    first = await planner.plan(make_request(), budget=Budget(5000))
    await planner.aclose()
    second = await planner.plan(make_request(), budget=Budget(5000))

    assert (first.text, second.text) == ("first", "second")
    assert llm_server.pending == 0


# Native tool calls


NATIVE_SYSTEM = "You drive a browser with your tools."


def tool_request() -> PlannerRequest:
    request = make_request()
    request.actions = [ACTIONS["click"], ACTIONS["type"], ACTIONS["select_option"]]
    request.native_system = NATIVE_SYSTEM
    return request


def test_tool_definitions_give_common_actions_a_tool_and_share_one_for_the_rest() -> None:
    specs = [ACTIONS["click"], ACTIONS["fill"], ACTIONS["select_option"], ACTIONS["evaluate"]]
    tools = tool_definitions(specs)

    assert [t["name"] for t in tools] == ["click", "fill", SHARED_TOOL, "done"]
    click = tools[0]
    assert click["description"] == ACTIONS["click"].description
    assert click["parameters"]["type"] == "object"
    assert click["parameters"]["required"] == ["ref"]
    props = click["parameters"]["properties"]
    assert props == {"ref": {"type": "string"}, "button": {"type": "string"},
                     "modifiers": {"type": "array"}}  # fmt: skip
    # Every action accepts timeout_ms (the system prompt says so once): extra properties
    # must stay allowed.
    assert "additionalProperties" not in click["parameters"]
    assert tools[1]["parameters"]["required"] == ["ref", "value"]
    shared = tools[2]
    assert shared["parameters"]["properties"]["action"]["enum"] == ["select_option", "evaluate"]
    assert shared["parameters"]["required"] == ["action"]
    for spec in specs[2:]:  # listed as the text-mode prompt lists them
        assert f"{spec.signature()}: {spec.description}" in shared["description"]
    done = tools[-1]
    assert done["parameters"]["required"] == ["summary"]
    assert done["parameters"]["properties"]["summary"]["type"] == "string"
    # The same specs give the same bytes: the request's prefix can be cached.
    assert json.dumps(tool_definitions(specs)) == json.dumps(tools)


def test_a_call_of_the_shared_tool_is_the_action_it_names() -> None:
    assert call_tag(SHARED_TOOL, '{"action": "scroll", "dy": 300}') == (
        '<action>{"action": "scroll", "dy": 300}</action>'
    )
    # Without a name, the parser is left to say what is missing.
    tag = call_tag(SHARED_TOOL, {"ref": "e1"})
    parsed = parse_reply(tag)
    assert not parsed.actions and parsed.errors


def test_action_tag_puts_the_name_first_and_keeps_unicode() -> None:
    tag = action_tag("type", {"text": "Grüße", "action": "ignored", "ref": "e5"})

    assert tag == '<action>{"action": "type", "text": "Grüße", "ref": "e5"}</action>'
    assert call_tag("click", '{"ref": "e5"') == '<action>{"ref": "e5"</action>'
    assert call_tag("back", "") == '<action>{"action": "back"}</action>'


async def test_streamed_tool_calls_become_tags_the_parser_accepts(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    calls = [
        ("type", {"ref": "e5", "text": "Ada Lovelace, Grüße", "submit": True}),
        ("click", {"ref": "e7"}),
        ("done", {"summary": "signed up"}),
    ]
    llm_server.script(Reply(text="Filling in the form.", tool_calls=calls))
    sink = TokenSink()

    reply = await planner.plan(tool_request(), budget=Budget(5000), on_token=sink)

    sent = llm_server.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["click", "type", "act", "done"]
    assert all(t["type"] == "function" for t in sent["tools"])
    assert sent["tool_choice"] == "auto"
    parsed = parse_reply(reply.text)
    assert not parsed.errors
    assert [(a.name, a.args) for a in parsed.actions] == [
        ("type", {"ref": "e5", "text": "Ada Lovelace, Grüße", "submit": True}),
        ("click", {"ref": "e7"}),
        ("done", {"summary": "signed up"}),
    ]
    assert parsed.prose == "Filling in the form."
    # Text streams in pieces; each call is shown once, whole, never as fragments.
    text_pieces = [p for p in sink.pieces if "<action>" not in p]
    assert "".join(text_pieces) == "Filling in the form."
    assert [p.strip() for p in sink.pieces if "<action>" in p] == [
        action_tag(name, args) for name, args in calls
    ]
    assert "".join(sink.pieces) == reply.text
    # The server counted the argument fragments as completion tokens.
    assert reply.usage["completion_tokens"] > -(-len("Filling in the form.") // CHUNK_CHARS)


async def test_tool_calls_without_text_are_a_reply(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(tool_calls=[("click", {"ref": "e5"})]))

    reply = await planner.plan(tool_request(), budget=Budget(5000))

    assert reply.text == '<action>{"action": "click", "ref": "e5"}</action>'


async def test_invalid_tool_arguments_become_a_parse_error_not_a_crash(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(
        Reply(
            tool_calls=[("click", '{"ref": "e5", '), ("click", "[1, 2]"), ("click", {"ref": "e6"})]
        )
    )

    reply = await planner.plan(tool_request(), budget=Budget(5000))

    parsed = parse_reply(reply.text)
    assert [(a.name, a.args) for a in parsed.actions] == [("click", {"ref": "e6"})]
    assert [e.code for e in parsed.errors] == ["action_invalid", "action_invalid"]
    assert "not valid JSON" in parsed.errors[0].message
    assert "expected a JSON object" in parsed.errors[1].message


async def test_non_streamed_tool_calls_become_tags(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(
        Reply(
            text="Two steps.",
            json_body=True,
            tool_calls=[("fill", {"ref": "e3", "value": "Ada"}), ("click", {"ref": "e4"})],
        )
    )
    sink = TokenSink()

    reply = await planner.plan(tool_request(), budget=Budget(5000), on_token=sink)

    parsed = parse_reply(reply.text)
    assert [(a.name, a.args) for a in parsed.actions] == [
        ("fill", {"ref": "e3", "value": "Ada"}),
        ("click", {"ref": "e4"}),
    ]
    assert parsed.prose == "Two steps."
    assert "".join(sink.pieces) == reply.text


async def test_auto_mode_asks_again_without_tools_after_a_400_and_remembers(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.reject_tools = True
    llm_server.script(REPLY_TEXT, "second round")

    first = await planner.plan(tool_request(), budget=Budget(5000))
    second = await planner.plan(tool_request(), budget=Budget(5000))

    assert (first.text, second.text) == (REPLY_TEXT, "second round")
    with_tools, without, later = llm_server.requests
    assert "tools" in with_tools and "tool_choice" in with_tools
    assert "tools" not in without and "tool_choice" not in without
    # With tools the system prompt is the one that does not list the actions again;
    # asked without them, the one that does.  The rest of the conversation is the same.
    system = make_request().messages[0].content
    assert with_tools["messages"][0] == {"role": "system", "content": NATIVE_SYSTEM}
    assert without["messages"][0] == later["messages"][0] == {"role": "system", "content": system}
    assert without["messages"][1:] == with_tools["messages"][1:]
    assert "tools" not in later


async def test_a_400_that_is_not_about_tools_is_not_remembered(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(
        Reply(status=400, text="context too long"),
        Reply(status=400, text="context too long"),
        "fine now",
    )

    with pytest.raises(LLMResponseError) as info:
        await planner.plan(tool_request(), budget=Budget(5000))
    reply = await planner.plan(tool_request(), budget=Budget(5000))

    assert "context too long" in info.value.message
    assert reply.text == "fine now"
    assert ["tools" in r for r in llm_server.requests] == [True, False, True]


async def test_native_tools_true_never_falls_back(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.reject_tools = True
    llm_server.script("unused")
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url, model="m", native_tools=True, retries=0
    )
    try:
        with pytest.raises(LLMResponseError) as info:
            await planner.plan(tool_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert "400" in info.value.message and "does not support tools" in info.value.message
    assert len(llm_server.requests) == 1
    assert llm_server.pending == 1


async def test_native_tools_false_sends_no_tools(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(REPLY_TEXT)
    planner = OpenAICompatPlanner(base_url=llm_server.base_url, model="m", native_tools=False)
    try:
        reply = await planner.plan(tool_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert reply.text == REPLY_TEXT
    assert "tools" not in llm_server.requests[0]
    assert "tool_choice" not in llm_server.requests[0]


async def test_a_round_without_actions_sends_no_tools(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script("ok")

    await planner.plan(make_request(), budget=Budget(5000))

    assert "tools" not in llm_server.requests[0]


async def test_tool_call_fragments_split_across_network_chunks(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(tool_calls=[("type", {"ref": "e5", "text": "Größe ✓ " * 4})]))
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url, model="m", transport=RechunkingTransport(slice_bytes=5)
    )
    try:
        reply = await planner.plan(tool_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    (action,) = parse_reply(reply.text).actions
    assert action.args == {"ref": "e5", "text": "Größe ✓ " * 4}


async def test_the_tls_context_is_made_once_per_process_and_off_the_event_loop(
    llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[bool] = []  # per context made: was an event loop running in that thread?
    real = httpx.create_ssl_context

    def spying(*args: object, **kwargs: object) -> object:
        try:
            asyncio.get_running_loop()
            made.append(True)
        except RuntimeError:
            made.append(False)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx, "create_ssl_context", spying)
    http.tls_context.cache_clear()
    llm_server.script(REPLY_TEXT, REPLY_TEXT)
    for _ in range(2):  # two runs' planners: two clients
        planner = OpenAICompatPlanner(base_url=llm_server.base_url, model="test-model", retries=0)
        try:
            assert (await planner.plan(make_request(), budget=Budget(5000))).text == REPLY_TEXT
        finally:
            await planner.aclose()
    assert made == [False]
    http.tls_context.cache_clear()


async def test_a_reply_that_arrives_at_once_lets_the_event_loop_turn_while_it_is_read(
    planner: OpenAICompatPlanner, llm_server: ScriptedLLMServer
) -> None:
    tokens = 5_000  # ~400 KiB in one write: a few reads of thousands of lines each
    raw = "".join(
        f'data: {{"choices":[{{"index":0,"delta":{{"content":"t{i % 10}"}}}}]}}\n\n'
        for i in range(tokens)
    ) + "data: [DONE]\n\n"  # fmt: skip
    llm_server.script(Reply(raw_sse=raw))
    turns = 0

    async def ticking() -> None:  # counts the loop's turns that others get
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    seen: list[int] = []  # per token: the loop's turns so far

    async def on_token(piece: str) -> None:
        seen.append(turns)

    ticker = asyncio.create_task(ticking())
    try:
        reply = await planner.plan(make_request(), budget=Budget(30_000), on_token=on_token)
    finally:
        ticker.cancel()
    assert len(reply.text) == 2 * tokens
    streak = longest = 1  # the most tokens handed on in a row without a turn for others
    for before, after in itertools.pairwise(seen):
        streak = streak + 1 if after == before else 1
        longest = max(longest, streak)
    assert longest <= 64, longest


def test_a_test_s_end_answers_its_held_replies_and_a_failure_drops_the_rest(
    llm_server: ScriptedLLMServer,
) -> None:
    """The scripted model outlives a module's tests: a reply a failed test held at its gate
    answers when the test ends, and the replies it never used are not the next test's."""
    held = threading.Event()
    llm_server.script(Reply(text="late", gate=held), "never asked for")
    with httpx.Client(timeout=60) as client, ThreadPoolExecutor(1) as pool:
        asked = pool.submit(
            client.post, f"{llm_server.base_url}/chat/completions", json={"stream": True}
        )
        deadline = time.monotonic() + 60
        while llm_server.pending != 1:  # the held reply was taken
            assert time.monotonic() < deadline
            time.sleep(0.01)
        llm_server.end_test(failed=True)
        answer = asked.result(timeout=60)
    assert answer.status_code == 200 and "late" in answer.text
    assert held.is_set() and llm_server.pending == 0
