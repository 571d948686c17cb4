"""Retries of both planners against the scripted server, and the backoff they wait."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from automation.budget import Budget
from automation.errors import BudgetExceeded, Cancelled, LLMResponseError, LLMUnavailable
from automation.llm.anthropic import AnthropicPlanner
from automation.llm.base import RetryNotice
from automation.llm.openai import OpenAICompatPlanner
from automation.llm.retry import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    BACKOFF_FACTOR,
    backoff_s,
    retry_after_s,
)
from tests import fakellm
from tests.automation.llm.exchange import TokenSink, make_request
from tests.fakellm import Reply, ScriptedLLMServer
from tests.net import free_port

# Lets this module run on its own; tests/conftest.py provides the same fixture project-wide.
llm_server = fakellm.llm_server

TEXT = "Opening the search box now, then typing the query."
T = TypeVar("T")


def no_wait(retry: int) -> float:
    return 0.0


def collect(into: list[T]) -> Callable[[T], Awaitable[None]]:
    """A planner callback that keeps what it is called with."""

    async def keep(item: T) -> None:
        into.append(item)

    return keep


def openai(server: ScriptedLLMServer, **options: object) -> OpenAICompatPlanner:
    return OpenAICompatPlanner(base_url=server.base_url, model="m", **options)  # type: ignore[arg-type]


def anthropic(server: ScriptedLLMServer, **options: object) -> AnthropicPlanner:
    return AnthropicPlanner(base_url=server.root_url, model="m", **options)  # type: ignore[arg-type]


# The backoff itself


def test_backoff_is_full_jitter_under_an_exponential_cap() -> None:
    rng = random.Random(7)
    for retry in range(1, 10):
        ceiling = min(BACKOFF_CAP_S, BACKOFF_BASE_S * BACKOFF_FACTOR ** (retry - 1))
        draws = [backoff_s(retry, rng=rng) for _ in range(400)]
        assert all(0 <= d <= ceiling for d in draws)
        # Full jitter: draws spread over the whole range, not bunched near the ceiling.
        assert min(draws) < ceiling * 0.1 and max(draws) > ceiling * 0.9
    assert (BACKOFF_BASE_S, BACKOFF_FACTOR, BACKOFF_CAP_S) == (0.5, 2.0, 8.0)
    assert max(backoff_s(30, rng=rng) for _ in range(200)) <= BACKOFF_CAP_S


def test_backoff_takes_its_own_schedule() -> None:
    draws = [backoff_s(3, base_s=0.1, factor=3, cap_s=10) for _ in range(200)]
    assert all(0 <= d <= 0.9 for d in draws)


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_s("2") == 2.0
    assert retry_after_s(" 0.3 ") == 0.3
    assert retry_after_s("-4") == 0.0
    assert retry_after_s(None) is None
    assert retry_after_s("soon") is None
    assert retry_after_s("nan") is None
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= retry_after_s(date, now=now) <= 31  # type: ignore[operator]


# Retrying over HTTP


async def test_429_then_success_gives_one_reply(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(Reply(status=429, text="slow down"), TEXT)
    planner = openai(llm_server, backoff=no_wait)
    sink = TokenSink()
    try:
        reply = await planner.plan(make_request(), budget=Budget(5000), on_token=sink)
    finally:
        await planner.aclose()

    assert reply.text == TEXT
    assert "".join(sink.pieces) == TEXT
    assert len(llm_server.requests) == 2


async def test_retry_after_is_honoured(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(Reply(status=503, text="busy", retry_after=0.3), TEXT)
    planner = openai(llm_server, backoff=no_wait)
    try:
        started = time.monotonic()
        reply = await planner.plan(make_request(), budget=Budget(5000))
        elapsed_s = time.monotonic() - started
    finally:
        await planner.aclose()

    assert reply.text == TEXT
    assert 0.3 <= elapsed_s < 4.5  # its 0.3 s waited, within the budget
    assert len(llm_server.requests) == 2


async def test_exhausted_retries_name_the_attempts(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(*[Reply(status=503, text="still busy")] * 3, "never reached")
    planner = openai(llm_server, retries=2, backoff=no_wait)
    try:
        with pytest.raises(LLMUnavailable) as info:
            await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert "503" in info.value.message and "still busy" in info.value.message
    assert "gave up after 3 attempts" in info.value.message
    assert len(llm_server.requests) == 3 and llm_server.pending == 1


async def test_a_drop_after_streamed_tokens_is_retried_and_counts_what_it_discards(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text=TEXT, drop_after_chars=16), TEXT)
    planner = openai(llm_server, backoff=no_wait)
    sink = TokenSink()
    tries: list[int] = []
    notices: list[RetryNotice] = []
    request = make_request()
    request.on_attempt = collect(tries)
    request.on_retry = collect(notices)
    try:
        reply = await planner.plan(request, budget=Budget(5000), on_token=sink)
    finally:
        await planner.aclose()

    assert reply.text == TEXT  # the retried try's text only
    assert "".join(sink.pieces) == TEXT[:16] + TEXT  # both tries were shown as they came
    assert tries == [1, 2]
    assert notices == [RetryNotice(1, 3, 0, "connection dropped mid-reply", 16)]
    assert len(llm_server.requests) == 2


async def test_a_drop_nobody_saw_is_retried(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(Reply(text=TEXT, drop_after_chars=16), TEXT)
    planner = openai(llm_server, backoff=no_wait)
    try:
        reply = await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert reply.text == TEXT
    assert len(llm_server.requests) == 2


async def test_refused_connections_are_retried(llm_server: ScriptedLLMServer) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    planner = OpenAICompatPlanner(base_url=base_url, model="m", retries=2, backoff=no_wait)
    try:
        with pytest.raises(LLMUnavailable) as info:
            await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert "cannot reach the LLM" in info.value.message
    assert "gave up after 3 attempts" in info.value.message


async def test_a_wait_the_budget_cannot_cover_fails_at_once(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(status=503, text="busy", retry_after=5), "too late")
    planner = openai(llm_server, backoff=no_wait)
    try:
        started = time.monotonic()
        with pytest.raises(LLMUnavailable) as info:
            await planner.plan(make_request(), budget=Budget(4000))
        elapsed_s = time.monotonic() - started
    finally:
        await planner.aclose()

    assert elapsed_s < 3  # not at the budget's end: the 5 s wait was never begun
    assert "not retried after 1 attempt" in info.value.message
    assert len(llm_server.requests) == 1


async def test_a_backoff_longer_than_the_budget_fails_at_once(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(status=500, text="oops"), "too late")
    planner = openai(llm_server, backoff=lambda retry: 120.0)
    try:
        started = time.monotonic()
        with pytest.raises(LLMUnavailable):
            await planner.plan(make_request(), budget=Budget(60_000))
        assert time.monotonic() - started < 30  # not at the budget's end (60 s)
    finally:
        await planner.aclose()

    assert len(llm_server.requests) == 1


async def test_cancel_during_the_backoff_ends_promptly(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(Reply(status=503, text="busy"), TEXT)
    backing_off = asyncio.Event()

    def long_wait(retry: int) -> float:
        backing_off.set()
        return 60.0

    planner = openai(llm_server, backoff=long_wait)
    budget = Budget(120_000)
    try:
        task = asyncio.create_task(planner.plan(make_request(), budget=budget))
        await asyncio.wait_for(backing_off.wait(), timeout=60)
        await asyncio.sleep(0.05)  # well into the wait

        cancelled_at = time.monotonic()
        budget.cancel("stop button")
        with pytest.raises(Cancelled) as info:
            await task
        assert time.monotonic() - cancelled_at < 30  # not at the backoff's end (60 s)
    finally:
        await planner.aclose()

    assert "stop button" in info.value.message
    assert len(llm_server.requests) == 1


async def test_response_errors_are_not_retried(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(Reply(status=400, text="bad request"), "unused")
    planner = openai(llm_server, backoff=no_wait)
    try:
        with pytest.raises(LLMResponseError):
            await planner.plan(make_request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert len(llm_server.requests) == 1


async def test_running_out_of_budget_is_not_retried(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(Reply(text="slow", delay_s=60), "unused")
    planner = openai(llm_server, backoff=no_wait)
    try:
        with pytest.raises(BudgetExceeded):  # time for the request to reach the server
            await planner.plan(make_request(), budget=Budget(2_000))
    finally:
        await planner.aclose()

    assert len(llm_server.requests) == 1


async def test_anthropic_retries_529_and_overloaded_events(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(
        Reply(status=529, text="Overloaded"),
        Reply(stream_error="overloaded_error"),  # before any text: nothing was shown
        TEXT,
    )
    planner = anthropic(llm_server, backoff=no_wait)
    sink = TokenSink()
    try:
        reply = await planner.plan(make_request(), budget=Budget(5000), on_token=sink)
    finally:
        await planner.aclose()

    assert reply.text == TEXT and "".join(sink.pieces) == TEXT
    assert len(llm_server.requests) == 3


async def test_anthropic_retries_an_overload_after_streamed_text(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text=TEXT, stream_error="overloaded_error"), "second try")
    planner = anthropic(llm_server, backoff=no_wait)
    sink = TokenSink()
    notices: list[RetryNotice] = []
    request = make_request()
    request.on_retry = collect(notices)
    try:
        reply = await planner.plan(request, budget=Budget(5000), on_token=sink)
    finally:
        await planner.aclose()

    assert reply.text == "second try"
    assert "".join(sink.pieces) == TEXT + "second try"
    assert [(n.reason, n.discarded_chars) for n in notices] == [("overloaded_error", len(TEXT))]
    assert len(llm_server.requests) == 2
