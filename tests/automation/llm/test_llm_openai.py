"""OpenAICompatPlanner against the scripted server over real loopback HTTP: streaming,
errors, budgets.  (Native tool calls: test_llm_openai_tools.py.)"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from automation.budget import Budget
from automation.errors import BudgetExceeded, Cancelled, LLMResponseError, LLMUnavailable
from automation.llm import http
from automation.llm.openai import OpenAICompatPlanner
from tests import fakellm
from tests.automation.llm.exchange import (
    REPLY_TEXT,
    SECRET_KEY,
    RechunkingTransport,
    TokenSink,
    make_request,
)
from tests.fakellm import Reply, ScriptedLLMServer
from tests.fakellm_wire import CHUNK_CHARS
from tests.net import free_port

# Lets this module run on its own; tests/conftest.py provides the same fixture project-wide.
llm_server = fakellm.llm_server


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


async def test_an_answer_nested_too_deep_is_a_response_error(
    planner: OpenAICompatPlanner,
    llm_server: ScriptedLLMServer,
) -> None:
    """Arrays in arrays thousands deep: Python's parser raised RecursionError, a crash
    where a server's malformed answer is a typed error."""
    llm_server.script(Reply(raw_sse=f"data: {'[' * 5_000}{']' * 5_000}\n\ndata: [DONE]\n\n"))

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


async def test_a_model_call_is_answered_while_the_default_executor_is_held(
    llm_server: ScriptedLLMServer,
) -> None:
    """Every thread of the event loop's default executor held (slow reads, a big page's
    parse): a new planner's client waited behind them for its TLS context (made, or made
    long ago) and the run's model call ran out of its budget."""
    loop = asyncio.get_running_loop()
    release = threading.Event()
    held = [loop.run_in_executor(None, release.wait) for _ in range(64)]  # past its threads
    llm_server.script(REPLY_TEXT, REPLY_TEXT)
    try:
        for fresh in (True, False):  # the process's first context, then the one it made
            if fresh:
                http.tls_context.cache_clear()
            planner = OpenAICompatPlanner(base_url=llm_server.base_url, model="test-model",
                                          retries=0)  # fmt: skip
            try:
                reply = await planner.plan(make_request(), budget=Budget(30_000))
            finally:
                await planner.aclose()
            assert reply.text == REPLY_TEXT
    finally:
        release.set()
        await asyncio.gather(*held)


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
