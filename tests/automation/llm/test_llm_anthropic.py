"""AnthropicPlanner against the scripted server's Messages endpoint over real loopback HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from automation.actions import ACTIONS
from automation.agent.parser import parse_reply
from automation.budget import Budget
from automation.errors import BudgetExceeded, Cancelled, LLMResponseError, LLMUnavailable
from automation.llm.anthropic import ANTHROPIC_VERSION, AnthropicPlanner, shape_messages
from automation.llm.base import ChatMessage
from automation.llm.tools import action_tag
from tests import fakellm
from tests.automation.llm.exchange import REPLY_TEXT, TokenSink, make_request
from tests.fakellm import Reply, ScriptedLLMServer
from tests.fakellm_wire import CHUNK_CHARS
from tests.net import free_port

# Lets this module run on its own; tests/conftest.py provides the same fixture project-wide.
llm_server = fakellm.llm_server

SECRET_KEY = "sk-ant-test-DO-NOT-LEAK-0123456789"


@pytest.fixture
async def planner(llm_server: ScriptedLLMServer) -> AsyncIterator[AnthropicPlanner]:
    # No retries: these tests are about one exchange (see test_llm_retry.py).
    p = AnthropicPlanner(
        base_url=llm_server.root_url, model="claude-test", api_key=SECRET_KEY, retries=0
    )
    yield p
    await p.aclose()


async def test_streamed_text_arrives_in_order_with_usage(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(REPLY_TEXT)
    sink = TokenSink()

    reply = await planner.plan(make_request(), budget=Budget(5000), on_token=sink)

    assert reply.text == REPLY_TEXT
    expected = [REPLY_TEXT[i : i + CHUNK_CHARS] for i in range(0, len(REPLY_TEXT), CHUNK_CHARS)]
    assert sink.pieces == expected
    chunks = len(expected)
    assert set(reply.usage) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert reply.usage["prompt_tokens"] > 0
    assert reply.usage["completion_tokens"] == chunks
    assert reply.usage["total_tokens"] == reply.usage["prompt_tokens"] + chunks
    assert llm_server.paths == ["/v1/messages"]


async def test_request_shape_and_headers(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script("ok")
    planner = AnthropicPlanner(
        base_url=llm_server.root_url + "/",
        model="claude-test",
        api_key=SECRET_KEY,
        temperature=0.2,
        max_tokens=512,
    )
    request = make_request()
    request.messages = [
        ChatMessage("system", "You drive a browser."),
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "Task: find the docs"),
        ChatMessage("user", "Page: home"),
        ChatMessage("assistant", "Clicking."),
        ChatMessage("assistant", ""),
        ChatMessage("user", "OK click"),
    ]
    try:
        await planner.plan(request, budget=Budget(5000))
    finally:
        await planner.aclose()

    (sent,) = llm_server.requests
    assert sent["model"] == "claude-test"
    assert sent["max_tokens"] == 512
    assert sent["temperature"] == 0.2
    assert sent["stream"] is True
    # One block, marked for the provider's prompt cache (the same bytes every round).
    assert sent["system"] == [
        {
            "type": "text",
            "text": "You drive a browser.\n\nBe brief.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert sent["messages"] == [
        {"role": "user", "content": "Task: find the docs\n\nPage: home"},
        {"role": "assistant", "content": "Clicking."},
        {"role": "user", "content": "OK click"},
    ]
    assert "tools" not in sent
    headers = llm_server.headers[0]
    assert headers["x-api-key"] == SECRET_KEY
    assert headers["anthropic-version"] == ANTHROPIC_VERSION
    assert headers["content-type"] == "application/json"
    assert "authorization" not in headers
    assert SECRET_KEY not in repr(planner)


def test_a_history_must_open_with_a_user_turn() -> None:
    system, turns = shape_messages(
        [ChatMessage("assistant", "Hello."), ChatMessage("user", "Go on.")]
    )
    assert system == ""
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert shape_messages([ChatMessage("system", "rules")])[1][0]["role"] == "user"


async def test_no_key_sends_no_key_header(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("ok")
    planner = AnthropicPlanner(base_url=llm_server.root_url, model="m")
    try:
        await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert "x-api-key" not in llm_server.headers[0]


async def test_tool_use_blocks_become_tags_the_parser_accepts(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    calls = [("fill", {"ref": "e3", "value": "Ada Lovelace"}), ("click", {"ref": "e9"})]
    llm_server.script(Reply(text="Filling in.", tool_calls=calls))
    sink = TokenSink()

    reply = await planner.plan(make_request(actions=True), budget=Budget(5000), on_token=sink)

    tools = llm_server.requests[0]["tools"]
    assert [t["name"] for t in tools] == ["click", "fill", "done"]
    assert tools[0]["input_schema"]["required"] == ["ref"]
    assert tools[0]["description"] == ACTIONS["click"].description
    assert "tool_choice" not in llm_server.requests[0]  # auto is Anthropic's default
    parsed = parse_reply(reply.text)
    assert not parsed.errors
    assert [(a.name, a.args) for a in parsed.actions] == calls
    assert parsed.prose == "Filling in."
    assert [p.strip() for p in sink.pieces if "<action>" in p] == [
        action_tag(name, args) for name, args in calls
    ]
    assert "".join(sink.pieces) == reply.text


async def test_invalid_tool_input_becomes_a_parse_error(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(tool_calls=[("click", '{"ref": "e5"'), ("done", {"summary": "x"})]))

    reply = await planner.plan(make_request(actions=True), budget=Budget(5000))

    parsed = parse_reply(reply.text)
    assert [a.name for a in parsed.actions] == ["done"]
    assert len(parsed.errors) == 1 and "not valid JSON" in parsed.errors[0].message


async def test_native_tools_false_sends_none_and_auto_falls_back(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.reject_tools = True
    llm_server.script("one", "two", "three")
    off = AnthropicPlanner(base_url=llm_server.root_url, model="m", native_tools=False)
    auto = AnthropicPlanner(base_url=llm_server.root_url, model="m")
    try:
        assert (await off.plan(make_request(actions=True), budget=Budget(5000))).text == "one"
        assert (await auto.plan(make_request(actions=True), budget=Budget(5000))).text == "two"
        assert (await auto.plan(make_request(actions=True), budget=Budget(5000))).text == "three"
    finally:
        await off.aclose()
        await auto.aclose()

    assert ["tools" in r for r in llm_server.requests] == [False, True, False, False]


async def test_non_streaming_json_answer_is_accepted(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text="Done.", json_body=True, tool_calls=[("click", {"ref": "e2"})]))
    sink = TokenSink()

    reply = await planner.plan(make_request(actions=True), budget=Budget(5000), on_token=sink)

    assert reply.text == 'Done.\n<action>{"action": "click", "ref": "e2"}</action>'
    assert "".join(sink.pieces) == reply.text
    assert reply.usage["total_tokens"] == (
        reply.usage["prompt_tokens"] + reply.usage["completion_tokens"]
    )


async def test_pings_unknown_blocks_and_cache_usage(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    raw = (
        "event: message_start\n"
        'data: {"type":"message_start","message":{"usage":{"input_tokens":10,'
        '"cache_read_input_tokens":5,"output_tokens":1}}}\n\n'
        'event: ping\ndata: {"type": "ping"}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"thinking","thinking":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"thinking_delta","thinking":"hmm"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":1,'
        '"content_block":{"type":"text","text":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
        '"delta":{"type":"text_delta","text":"Hi"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":'
        '{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    llm_server.script(Reply(raw_sse=raw))
    sink = TokenSink()

    reply = await planner.plan(make_request(), budget=Budget(5000), on_token=sink)

    assert reply.text == "Hi" and sink.pieces == ["Hi"]
    assert reply.usage == {
        "prompt_tokens": 15, "completion_tokens": 7, "total_tokens": 22, "cached_tokens": 5,
    }  # fmt: skip


async def test_key_is_only_in_its_header_and_scrubbed_from_errors(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(status=401, text=f"invalid x-api-key: {SECRET_KEY}"))

    with pytest.raises(LLMResponseError) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert not isinstance(info.value, LLMUnavailable)
    assert "401" in str(info.value) and "invalid x-api-key" in str(info.value)
    assert SECRET_KEY not in str(info.value)
    sent = llm_server.requests[0]
    assert SECRET_KEY not in repr(sent)
    assert [k for k, v in llm_server.headers[0].items() if SECRET_KEY in v] == ["x-api-key"]


@pytest.mark.parametrize("status", [429, 500, 529])
async def test_busy_statuses_are_unavailable(
    planner: AnthropicPlanner, llm_server: ScriptedLLMServer, status: int
) -> None:
    llm_server.script(Reply(status=status, text="Overloaded"))

    with pytest.raises(LLMUnavailable) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert str(status) in info.value.message and "Overloaded" in info.value.message


async def test_overloaded_error_event_mid_stream_is_unavailable(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text="Let me", stream_error="overloaded_error"))
    sink = TokenSink()

    with pytest.raises(LLMUnavailable) as info:
        await planner.plan(make_request(), budget=Budget(5000), on_token=sink)

    assert "overloaded_error" in info.value.message
    assert sink.pieces == ["Let me"]


async def test_other_error_events_are_response_errors(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text="x", stream_error="invalid_request_error"))

    with pytest.raises(LLMResponseError) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert not isinstance(info.value, LLMUnavailable)
    assert "invalid_request_error" in info.value.message


async def test_a_stream_that_ends_before_message_stop_is_unavailable(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    raw = (
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"half a"}}\n\n'
    )
    llm_server.script(Reply(raw_sse=raw))

    with pytest.raises(LLMUnavailable) as info:
        await planner.plan(make_request(), budget=Budget(5000))

    assert "before the reply was complete" in info.value.message


async def test_malformed_event_and_empty_reply_are_response_errors(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(raw_sse="event: message_start\ndata: {not json\n\n"), "")

    with pytest.raises(LLMResponseError) as malformed:
        await planner.plan(make_request(), budget=Budget(5000))
    with pytest.raises(LLMResponseError) as empty:
        await planner.plan(make_request(), budget=Budget(5000))

    assert "malformed" in malformed.value.message
    assert empty.value.message == "empty reply"


async def test_connection_refused_is_unavailable_and_names_the_url() -> None:
    base_url = f"http://127.0.0.1:{free_port()}"
    planner = AnthropicPlanner(base_url=base_url, model="m", api_key=SECRET_KEY, retries=0)
    try:
        with pytest.raises(LLMUnavailable) as info:
            await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert base_url in info.value.message
    assert SECRET_KEY not in str(info.value)


async def test_stall_ends_with_the_budget(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text=REPLY_TEXT, stall_after_chars=16))
    sink = TokenSink()
    budget_ms = 3_000  # room for the first characters on a busy machine

    started = time.monotonic()
    with pytest.raises(BudgetExceeded):
        await planner.plan(make_request(), budget=Budget(budget_ms), on_token=sink)
    elapsed_ms = (time.monotonic() - started) * 1000

    assert budget_ms - 50 <= elapsed_ms < 30_000  # the stall never ends by itself
    assert "".join(sink.pieces) == REPLY_TEXT[:16]


async def test_cancel_during_a_stall_ends_promptly(
    planner: AnthropicPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text=REPLY_TEXT, stall_after_chars=8))
    sink = TokenSink()
    budget = Budget(10_000)
    task = asyncio.create_task(planner.plan(make_request(), budget=budget, on_token=sink))
    await asyncio.wait_for(sink.first.wait(), timeout=60)

    cancelled_at = time.monotonic()
    budget.cancel("stop button")
    with pytest.raises(Cancelled):
        await task

    assert time.monotonic() - cancelled_at < 5  # the cancel, not the budget's 10 s
