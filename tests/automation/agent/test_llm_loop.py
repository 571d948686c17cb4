"""LLM failures as the agent loop lives them (real Chromium, real fixture pages, the real
clients talking to the scripted server): a reply cut mid-stream is asked for again within
the round, every try and retry is announced, and only the retried text is the reply."""

from __future__ import annotations

import asyncio
import json

from automation import AgentConfig, AgentRun, Tab
from automation.events import (
    Event,
    LLMMessage,
    LLMRetry,
    LLMToken,
    LLMWaiting,
    Observation,
    RunPaused,
)
from automation.llm.anthropic import AnthropicPlanner
from automation.llm.http import DROPPED_MID_REPLY, HttpPlanner
from automation.llm.openai import OpenAICompatPlanner
from tests.fakellm import Reply, ScriptedLLMServer
from tests.sinks import WaitingSink

WAIT_S = 0.05  # the backoff before each retry
CONNECT_HINT = "is the model server running and the base URL right?"


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


class RequestCountingSink(WaitingSink):
    """Notes, for each llm.waiting, how many requests the server had received by then."""

    def __init__(self, server: ScriptedLLMServer) -> None:
        super().__init__()
        self.server = server
        self.requests_at_waiting: list[int] = []

    async def emit(self, event: Event) -> None:
        if isinstance(event, LLMWaiting):
            self.requests_at_waiting.append(len(self.server.requests))
        await super().emit(event)


def make_run(tab: Tab, server: ScriptedLLMServer, url: str, planner: HttpPlanner) -> AgentRun:
    return AgentRun(
        tab=tab,
        planner=planner,
        sink=RequestCountingSink(server),
        task="Sign up as Ada",
        start_url=url,
        config=AgentConfig(llm_timeout_ms=5_000, screenshots=False),
    )


def sink_of(run: AgentRun) -> RequestCountingSink:
    assert isinstance(run.sink, RequestCountingSink)
    return run.sink


async def test_a_reply_cut_mid_stream_is_retried_and_the_run_goes_on(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    reply = "I'll fill in the name first.\n" + act(action="type", ref=form_refs["Name"], text="Ada")
    llm_server.script(
        Reply(text=reply, cut_after_chars=25),  # the connection closes, no finish, no [DONE]
        reply,
        act(action="done", summary="name typed"),
    )
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url, model="m", backoff=lambda retry: WAIT_S
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", planner)
    try:
        finished = await run.run()
    finally:
        await planner.aclose()
    sink = sink_of(run)

    assert finished.status == "succeeded" and finished.summary == "name typed"
    assert sink.of_type(RunPaused) == []
    assert sink.of_type(LLMRetry) == [
        LLMRetry(round=1, retry=1, retries=3, wait_ms=50, reason=DROPPED_MID_REPLY,
                 discarded_chars=25),
    ]  # fmt: skip
    assert [(w.round, w.attempt) for w in sink.of_type(LLMWaiting)] == [(1, 1), (1, 2), (2, 1)]
    # Each llm.waiting went out before its request did.
    assert sink.requests_at_waiting == [0, 1, 2]
    # The round's message is the retried reply alone; the page saw the cut part, then the
    # retry notice, then the retried reply streamed afresh.
    first = next(m for m in sink.of_type(LLMMessage) if m.round == 1)
    assert first.text == reply
    round_one = [e for e in sink.events if getattr(e, "round", None) == 1]
    kinds = [type(e).__name__ for e in round_one if not isinstance(e, LLMToken)]
    assert kinds[:4] == ["LLMWaiting", "LLMRetry", "LLMWaiting", "LLMMessage"]
    retry_at = round_one.index(sink.of_type(LLMRetry)[0])
    before = "".join(e.text for e in round_one[:retry_at] if isinstance(e, LLMToken))
    after = "".join(e.text for e in round_one[retry_at:] if isinstance(e, LLMToken))
    assert (before, after) == (reply[:25], reply)
    # The action ran once, and the model was asked the same first question twice.
    assert await tab.page.input_value("#name") == "Ada"
    assert llm_server.requests[0] == llm_server.requests[1]
    assert llm_server.requests[2]["messages"][-1]["content"].startswith("OK type")


async def test_a_tool_reply_cut_before_its_calls_is_retried_not_taken_as_a_claim(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    calls = [("type", {"ref": form_refs["Name"], "text": "Ada"}), ("done", {"summary": "typed"})]
    llm_server.script(
        Reply(text="Typing the name, then done.", tool_calls=calls, cut_after_chars=12),
        Reply(text="Typing the name, then done.", tool_calls=calls),
    )
    planner = AnthropicPlanner(
        base_url=llm_server.root_url, model="m", native_tools=True, backoff=lambda retry: 0
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", planner)
    try:
        finished = await run.run()
    finally:
        await planner.aclose()
    sink = sink_of(run)

    assert finished.status == "succeeded" and finished.summary == "typed"
    assert [(r.reason, r.discarded_chars) for r in sink.of_type(LLMRetry)] == [
        (DROPPED_MID_REPLY, 12)
    ]
    assert sink.of_type(Observation) == []  # no "you claimed to be done" for the cut part
    (message,) = sink.of_type(LLMMessage)
    assert message.text.startswith("Typing the name, then done.\n<action>")
    assert len(llm_server.requests) == 2
    assert await tab.page.input_value("#name") == "Ada"


async def test_cuts_on_every_try_pause_saying_what_happened(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(*[Reply(text="Let me look at the form first.", cut_after_chars=20)] * 2)
    planner = OpenAICompatPlanner(
        base_url=llm_server.base_url, model="m", retries=1, backoff=lambda retry: 0
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", planner)
    task = asyncio.create_task(run.run())
    try:
        paused = await sink_of(run).wait_for(RunPaused)
        assert isinstance(paused, RunPaused)
        assert paused.reason == "llm_error"
        assert "closed the stream before the reply was complete" in paused.detail
        assert "gave up after 2 attempts" in paused.detail
        assert "the 20 characters it streamed are discarded" in paused.detail
        assert CONNECT_HINT not in paused.detail
        assert [r.retry for r in sink_of(run).of_type(LLMRetry)] == [1]
        assert sink_of(run).of_type(LLMMessage) == []
    finally:
        run.control.stop()
        finished = await asyncio.wait_for(task, 60)
        await planner.aclose()
    assert finished.status == "stopped"
