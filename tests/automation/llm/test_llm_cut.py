"""Broken streams and failed connections through both real clients against the scripted
server: a cut stream is not a reply, a retry says why, only a connection that never got
an answer asks whether the server runs, and an answer without end is read only so far."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import pytest

from automation.actions import ACTIONS
from automation.agent.parser import parse_reply
from automation.budget import Budget
from automation.errors import BudgetExceeded, LLMResponseError, LLMUnavailable
from automation.llm.anthropic import AnthropicPlanner
from automation.llm.base import ChatMessage, PlannerRequest, RetryNotice
from automation.llm.http import DROPPED_MID_REPLY, MAX_ANSWER_BYTES, HttpPlanner
from automation.llm.openai import OpenAICompatPlanner
from tests import fakellm
from tests.fakellm import Reply, ScriptedLLMServer
from tests.net import free_port

# Lets this module run on its own; tests/conftest.py provides the same fixture project-wide.
llm_server = fakellm.llm_server

T = TypeVar("T")
TEXT = "Opening the search box now, then typing the query into it."
CUT = 20  # characters streamed before a cut
CONNECT_HINT = "is the model server running and the base URL right?"
PROVIDERS = ["openai", "anthropic"]
HANG_MS = 120_000  # bounds a call that would otherwise hang; what it waits for ends it


def no_wait(retry: int) -> float:
    return 0.0


def make_planner(server: ScriptedLLMServer, provider: str, **options: object) -> HttpPlanner:
    if provider == "openai":
        return OpenAICompatPlanner(base_url=server.base_url, model="m", **options)  # type: ignore[arg-type]
    return AnthropicPlanner(base_url=server.root_url, model="m", **options)  # type: ignore[arg-type]


class Heard:
    """The request's callbacks and on_token, recording what the planner told."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.tries: list[int] = []
        self.notices: list[RetryNotice] = []

    async def on_token(self, piece: str) -> None:
        self.pieces.append(piece)

    def request(self, *, actions: bool = False) -> PlannerRequest:
        return PlannerRequest(
            task="find the docs",
            start_url="http://127.0.0.1/",
            round=1,
            messages=[ChatMessage("system", "You drive a browser."), ChatMessage("user", "Go.")],
            actions=[ACTIONS["click"], ACTIONS["type"]] if actions else [],
            on_attempt=_keep(self.tries),
            on_retry=_keep(self.notices),
        )


def _keep(into: list[T]) -> Callable[[T], Awaitable[None]]:
    async def keep(item: T) -> None:
        into.append(item)

    return keep


async def plan(
    planner: HttpPlanner, heard: Heard, *, actions: bool = False, budget_ms: int = 5000
) -> str:
    try:
        reply = await planner.plan(
            heard.request(actions=actions), budget=Budget(budget_ms), on_token=heard.on_token
        )
    finally:
        await planner.aclose()
    return reply.text


# A stream cut by a clean close: whole only when the server said it was done


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_cut_without_end_marker_or_finish_reason_is_a_dropped_connection(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.script(Reply(text=TEXT, cut_after_chars=CUT), "never asked for")
    heard = Heard()

    with pytest.raises(LLMUnavailable) as info:
        await plan(make_planner(llm_server, provider, retries=0), heard)

    assert info.value.reason == DROPPED_MID_REPLY
    assert "closed the stream before the reply was complete" in info.value.message
    assert f"after {CUT} characters" in info.value.message
    assert info.value.hint == ""  # the server answered: asking whether it runs would mislead
    assert "".join(heard.pieces) == TEXT[:CUT]
    assert llm_server.pending == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("finish", "done"), [(True, False), (False, True), (True, True)], ids=["finish", "end", "both"]
)
async def test_a_stream_the_server_ended_is_whole_even_when_short(
    llm_server: ScriptedLLMServer, provider: str, finish: bool, done: bool
) -> None:
    # OpenAI: a finish_reason chunk and/or data: [DONE]; Anthropic: message_delta with a
    # stop_reason and/or message_stop.  Either says the server meant to stop there.
    llm_server.script(Reply(text=TEXT, cut_after_chars=CUT, cut_finish=finish, cut_done=done))
    heard = Heard()

    text = await plan(make_planner(llm_server, provider, retries=0), heard)

    assert text == TEXT[:CUT]
    assert heard.tries == [1] and heard.notices == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_connection_that_breaks_after_the_finish_reason_lost_nothing(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.script(Reply(text=TEXT, drop_after_chars=CUT, cut_finish=True))
    heard = Heard()

    text = await plan(make_planner(llm_server, provider, retries=0), heard)

    assert text == TEXT[:CUT]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_cut_stream_is_retried_and_only_the_retry_is_the_reply(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.script(Reply(text="I will click the w", cut_after_chars=CUT), TEXT)
    heard = Heard()

    text = await plan(make_planner(llm_server, provider, backoff=no_wait), heard)

    assert text == TEXT
    assert heard.tries == [1, 2]
    assert heard.notices == [RetryNotice(1, 3, 0, DROPPED_MID_REPLY, len("I will click the w"))]
    # Both tries streamed live, in order; the retry notice is what tells them apart.
    assert "".join(heard.pieces) == "I will click the w" + TEXT
    assert len(llm_server.requests) == 2
    assert llm_server.requests[0] == llm_server.requests[1]  # the same question again


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_cut_before_the_tool_calls_is_retried_not_read_as_a_claim(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    calls = [("type", {"ref": "e5", "text": "Ada"}), ("done", {"summary": "typed"})]
    llm_server.script(
        Reply(text="Typing the name.", tool_calls=calls, cut_after_chars=10),
        Reply(text="Typing the name.", tool_calls=calls),
    )
    heard = Heard()

    text = await plan(make_planner(llm_server, provider, backoff=no_wait), heard, actions=True)

    parsed = parse_reply(text)
    assert [(a.name, a.args) for a in parsed.actions] == calls
    assert parsed.prose == "Typing the name."
    assert [n.discarded_chars for n in heard.notices] == [10]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_cut_on_every_try_gives_up_naming_the_attempts(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.script(*[Reply(text=TEXT, cut_after_chars=CUT)] * 3)
    heard = Heard()

    with pytest.raises(LLMUnavailable) as info:
        await plan(make_planner(llm_server, provider, retries=2, backoff=no_wait), heard)

    assert info.value.reason == DROPPED_MID_REPLY
    assert "gave up after 3 attempts" in info.value.message
    assert heard.tries == [1, 2, 3]
    assert [(n.retry, n.retries, n.discarded_chars) for n in heard.notices] == [
        (1, 2, CUT),
        (2, 2, CUT),
    ]


async def test_a_cut_before_any_text_discards_nothing(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(Reply(text=TEXT, cut_after_chars=0), TEXT)
    heard = Heard()

    text = await plan(make_planner(llm_server, "openai", backoff=no_wait), heard)

    assert text == TEXT
    assert [(n.reason, n.discarded_chars) for n in heard.notices] == [(DROPPED_MID_REPLY, 0)]


# Each retry says why; only a connection never made asks about the server and URL


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_notices_name_the_status_and_the_wait(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.script(
        Reply(status=429, text="slow down", retry_after=0.2),
        Reply(status=500, text="model crashed"),
        TEXT,
    )
    heard = Heard()

    text = await plan(make_planner(llm_server, provider, backoff=lambda retry: 0.05), heard)

    assert text == TEXT
    assert heard.tries == [1, 2, 3]
    assert heard.notices == [
        RetryNotice(1, 3, 200, "HTTP 429", 0),  # the server's Retry-After
        RetryNotice(2, 3, 50, "HTTP 500", 0),  # the backoff
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_5xx_says_what_happened_without_the_connect_hint(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.script(Reply(status=503, text="warming up"))

    with pytest.raises(LLMUnavailable) as info:
        await plan(make_planner(llm_server, provider, retries=0), Heard())

    assert info.value.reason == "HTTP 503"
    assert "HTTP 503: warming up" in info.value.message
    assert info.value.hint == ""


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_drop_mid_body_says_so_without_the_connect_hint(
    llm_server: ScriptedLLMServer, provider: str
) -> None:
    llm_server.script(Reply(text=TEXT, drop_after_chars=CUT))

    with pytest.raises(LLMUnavailable) as info:
        await plan(make_planner(llm_server, provider, retries=0), Heard())

    assert info.value.reason == DROPPED_MID_REPLY
    assert "dropped mid-reply" in info.value.message
    assert info.value.hint == "" and CONNECT_HINT not in str(info.value)


async def test_a_connection_closed_without_an_answer_is_retried_without_the_hint(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(hang_up=True), TEXT)
    heard = Heard()

    text = await plan(make_planner(llm_server, "openai", backoff=no_wait), heard)

    assert text == TEXT
    assert [n.reason for n in heard.notices] == ["connection closed before an answer"]


async def test_a_refused_connection_asks_whether_the_server_runs() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    planner = OpenAICompatPlanner(base_url=base_url, model="m", retries=1, backoff=no_wait)
    heard = Heard()

    with pytest.raises(LLMUnavailable) as info:
        await plan(planner, heard)

    assert info.value.reason == "connection refused"
    assert f"cannot reach the LLM at {base_url}/chat/completions: connection refused" in (
        info.value.message
    )
    assert info.value.hint == CONNECT_HINT
    assert [n.reason for n in heard.notices] == ["connection refused"]


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port whose listener never accepts and whose queue is full: the kernel drops
    further connection attempts, so a client's connect hangs as with a host that is down."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        queued.append(filler)
    yield port
    for sock in [*queued, listener]:
        sock.close()


async def test_no_connection_in_time_asks_whether_the_server_runs(unanswered_port: int) -> None:
    base_url = f"http://127.0.0.1:{unanswered_port}/v1"
    planner = OpenAICompatPlanner(
        base_url=base_url, model="m", retries=1, backoff=no_wait, connect_timeout_ms=200
    )
    heard = Heard()

    with pytest.raises(LLMUnavailable) as info:
        await plan(planner, heard, budget_ms=10_000)

    assert info.value.reason == "connect timeout"
    assert "no connection within 200 ms" in info.value.message
    assert info.value.hint == CONNECT_HINT
    assert [n.reason for n in heard.notices] == ["connect timeout"]  # retried once


async def test_a_connect_that_outlasts_the_budget_is_the_budget_running_out(
    unanswered_port: int,
) -> None:
    base_url = f"http://127.0.0.1:{unanswered_port}/v1"
    planner = OpenAICompatPlanner(base_url=base_url, model="m", connect_timeout_ms=10_000)

    with pytest.raises(BudgetExceeded):
        await plan(planner, Heard(), budget_ms=300)


async def test_an_unknown_host_asks_whether_the_base_url_is_right() -> None:
    planner = OpenAICompatPlanner(base_url="http://no-such-host.invalid/v1", model="m", retries=0)

    with pytest.raises(LLMUnavailable) as info:
        await plan(planner, Heard())

    assert info.value.reason == "host not found"
    assert info.value.hint == CONNECT_HINT


# Usage, with the cache counts when the provider reports them


async def test_openai_usage_carries_cached_tokens_streamed_and_whole(
    llm_server: ScriptedLLMServer,
) -> None:
    llm_server.script(Reply(text=TEXT, cached_tokens=12), Reply(text=TEXT, json_body=True), TEXT)
    planner = make_planner(llm_server, "openai")
    try:
        streamed = await planner.plan(Heard().request(), budget=Budget(5000))
        whole = await planner.plan(Heard().request(), budget=Budget(5000))
        plain = await planner.plan(Heard().request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    assert streamed.usage["cached_tokens"] == 12
    assert streamed.usage["prompt_tokens"] >= 12  # OpenAI counts cached tokens in the prompt
    assert "cached_tokens" not in whole.usage and "cached_tokens" not in plain.usage


@pytest.mark.parametrize("json_body", [False, True], ids=["streamed", "whole"])
async def test_anthropic_usage_carries_cache_reads_and_writes(
    llm_server: ScriptedLLMServer, json_body: bool
) -> None:
    llm_server.script(
        Reply(text=TEXT, json_body=json_body, cached_tokens=30, cache_creation_tokens=7),
        Reply(text=TEXT, json_body=json_body),
    )
    planner = make_planner(llm_server, "anthropic")
    try:
        cached = await planner.plan(Heard().request(), budget=Budget(5000))
        uncached = await planner.plan(Heard().request(), budget=Budget(5000))
    finally:
        await planner.aclose()

    usage = cached.usage
    assert (usage["cached_tokens"], usage["cache_creation_tokens"]) == (30, 7)
    # The API's input_tokens is only the uncached part (the same for the same request);
    # prompt_tokens is the whole prompt.
    assert usage["prompt_tokens"] == uncached.usage["prompt_tokens"] + 30 + 7
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert "cached_tokens" not in uncached.usage
    assert "cache_creation_tokens" not in uncached.usage


# A server that sends without end: read up to a bound, then refused


ENDLESS = {
    "a line that never ends": Reply(raw_sse="data: {" + "a" * (MAX_ANSWER_BYTES + 1)),
    "events never dispatched": Reply(raw_sse="data: x\n" * (MAX_ANSWER_BYTES // 8 + 1)),
    "a whole body past the bound": Reply(text="a" * (MAX_ANSWER_BYTES + 1), json_body=True),
}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", list(ENDLESS))
async def test_an_answer_past_its_bound_is_refused_not_read_to_the_end_of_memory(
    llm_server: ScriptedLLMServer, provider: str, kind: str
) -> None:
    llm_server.script(ENDLESS[kind], "never asked for")
    with pytest.raises(LLMResponseError) as info:  # (parsing 4 MiB takes seconds when busy)
        await plan(make_planner(llm_server, provider), Heard(), budget_ms=HANG_MS)
    assert "sent more than 4 MiB in one answer" in info.value.message
    assert llm_server.pending == 1  # not tried again: the same server would send the same
