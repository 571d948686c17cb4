"""A conversation with the agent: after its done, the person's next message continues the
work on the same tab with the rounds so far in the model's context; messages sent while it
works reach the model at its next round (real loop, real Chromium, the real OpenAI client
against the scripted server, and the rule planner)."""

from __future__ import annotations

import asyncio
import json

import pytest

from automation import AgentConfig, AgentRun, Tab
from automation.agent.context import Context, ContextLimits
from automation.errors import ActionInvalid
from automation.events import (
    LLMWaiting,
    RunFinished,
    RunPaused,
    RunStarted,
    StepRecorded,
    UserMessagesSeen,
)
from automation.llm.openai import OpenAICompatPlanner
from automation.llm.rules import RulePlanner
from tests.fakellm import Reply, ScriptedLLMServer
from tests.sinks import WaitingSink


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


def llm_run(tab: Tab, server: ScriptedLLMServer, task: str, url: str) -> AgentRun:
    return AgentRun(
        tab=tab,
        planner=OpenAICompatPlanner(base_url=server.base_url, model="m", native_tools=False),
        sink=WaitingSink(),
        task=task,
        start_url=url,
        config=AgentConfig(llm_timeout_ms=5_000, screenshots=False),
    )


async def test_the_next_message_continues_on_the_same_tab_with_the_history(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    snap = await tab.snapshot()  # the refs the run's snapshots give (the same document)
    run = llm_run(tab, llm_server, "Type Ada into Name", "")
    name = next(r.ref for r in snap.refs.values() if r.name == "Name")
    email = next(r.ref for r in snap.refs.values() if r.name == "Email")
    llm_server.script(
        act(action="fill", ref=name, value="Ada"),
        act(action="done", summary="typed Ada"),
        act(action="fill", ref=email, value="ada@example.org") + act(action="done", summary="ok"),
    )
    first = await run.run()
    assert first.status == "succeeded" and first.summary == "typed Ada"

    second_message = "Now type ada@example.org into Email"
    second = await run.continue_with(second_message)
    assert second.status == "succeeded"
    # The same tab, in the state the first request left it.
    assert await tab.page.input_value("#name") == "Ada"
    assert await tab.page.input_value("#email") == "ada@example.org"
    # The model had the task, what it did, and the new request as what to do now.
    prompt = llm_server.requests[-1]["messages"]
    task = prompt[1]["content"]
    assert task.startswith("Task: Type Ada into Name")
    assert task.endswith("(the last is what to do now):\n- Now type ada@example.org into Email")
    assert any("typed Ada" in m["content"] for m in prompt if m["role"] == "assistant")
    sink = run.sink
    assert isinstance(sink, WaitingSink)
    started = sink.of_type(RunStarted)
    assert [s.task for s in started] == ["Type Ada into Name", second_message]
    assert [f.status for f in sink.of_type(RunFinished)] == ["succeeded", "succeeded"]
    steps = sink.of_type(StepRecorded)
    assert [s.index for s in steps] == list(range(len(steps)))  # one numbering throughout
    assert [s.action for s in steps] == ["fill", "fill"] and all(s.ok for s in steps)


async def test_a_stopped_stretch_ends_only_itself(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    run = llm_run(tab, llm_server, "Wait for the model", f"{fixture_url}/demo/form.html")
    llm_server.script("NEED_HELP: which model?")
    task = asyncio.create_task(run.run())
    await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    run.control.stop()
    assert (await asyncio.wait_for(task, 60)).status == "stopped"

    llm_server.script(act(action="done", summary="went on"))
    again = await run.continue_with("Go on")
    assert again.status == "succeeded" and again.summary == "went on"


async def test_the_rule_planner_runs_each_message_s_commands(tab: Tab, fixture_url: str) -> None:
    run = AgentRun(
        tab=tab,
        planner=RulePlanner(),
        sink=WaitingSink(),
        task="type Ada into Name",
        start_url=f"{fixture_url}/demo/form.html",
        config=AgentConfig(screenshots=False),
    )
    assert (await run.run()).status == "succeeded"
    assert (await run.continue_with("type ada@example.org into Email")).status == "succeeded"
    assert await tab.page.input_value("#name") == "Ada"
    assert await tab.page.input_value("#email") == "ada@example.org"


async def test_a_message_sent_while_the_agent_works_reaches_its_next_round(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    run = llm_run(tab, llm_server, "Look around", f"{fixture_url}/demo/form.html")
    llm_server.script(
        Reply(text=act(action="scroll", dy=200), delay_s=1),
        act(action="done", summary="seen"),
    )
    task = asyncio.create_task(run.run())
    await run.sink.wait_for(LLMWaiting)  # type: ignore[attr-defined]
    run.control.reply("also check the footer")  # while the model thinks: no pause needed
    finished = await asyncio.wait_for(task, 60)

    assert finished.status == "succeeded"
    assert (
        "The person says: also check the footer"
        in llm_server.requests[1]["messages"][-1]["content"]
    )
    seen = run.sink.of_type(UserMessagesSeen)  # type: ignore[attr-defined]
    assert [(s.round, s.count) for s in seen] == [(2, 1)]


async def test_continuing_needs_a_started_run_and_a_message(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    run = llm_run(tab, llm_server, "Look", f"{fixture_url}/demo/form.html")
    with pytest.raises(ActionInvalid, match="has not started"):
        await run.continue_with("more")
    llm_server.script("NEED_HELP: wait", act(action="done", summary="ok"))
    task = asyncio.create_task(run.run())
    await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    with pytest.raises(ActionInvalid, match="still working"):
        await run.continue_with("more")
    run.control.resume()
    assert (await asyncio.wait_for(task, 60)).status == "succeeded"
    with pytest.raises(ActionInvalid, match="empty"):
        await run.continue_with("   ")


def test_the_requests_stay_within_the_bound() -> None:
    limits = ContextLimits(requests_kept=2, max_requests=4, request_chars=50, line_chars=20)
    context = Context("system", "Task: first", limits)
    for i in range(10):
        context.add_request(f"request {i} " + "x" * 100)
    text = context.task_text()
    assert "(6 earlier requests left out)" in text
    assert text.count("\n- ") == 4 and "request 9" in text and "request 5" not in text
    assert len(context.messages("now")[1].content) <= context.bound()


async def test_a_resumed_agent_goes_on_with_the_conversation_so_far_and_numbers_on(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    """Another AgentRun goes on with a conversation whose tab was closed (the dashboard
    restores the page first): the requests so far in the prompt, the note told once,
    rounds and steps numbered on from where the first left them."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    snap = await tab.snapshot()
    email = next(r.ref for r in snap.refs.values() if r.name == "Email")
    run = AgentRun(
        tab=tab,
        planner=OpenAICompatPlanner(base_url=llm_server.base_url, model="m", native_tools=False),
        sink=WaitingSink(),
        task="Type Ada into Name",
        config=AgentConfig(llm_timeout_ms=5_000, screenshots=False),
        resumed=True,
        requests=["Now the email"],
        first_round=7,
        first_step=4,
    )
    llm_server.script(
        act(action="fill", ref=email, value="a@b.c"), act(action="done", summary="ok")
    )
    finished = await run.continue_with(
        "And sign up", note="The page was restored.", said_before=True
    )
    assert finished.status == "succeeded"
    first, second = llm_server.requests[-2]["messages"], llm_server.requests[-1]["messages"]
    task = first[1]["content"]
    assert task.startswith("Task: Type Ada into Name")
    assert "- Now the email\n- And sign up" in task
    assert "The page was restored." in first[-1]["content"]
    assert "The page was restored." not in second[-1]["content"]  # told once
    sink = run.sink
    assert isinstance(sink, WaitingSink)
    assert [(s.task, s.said_before) for s in sink.of_type(RunStarted)] == [("And sign up", True)]
    assert [s.index for s in sink.of_type(StepRecorded)] == [4]
    assert [w.round for w in sink.of_type(LLMWaiting)] == [8, 9]


async def test_a_fresh_agent_that_is_not_resumed_can_not_be_continued(tab: Tab) -> None:
    run = AgentRun(tab=tab, planner=RulePlanner(), sink=WaitingSink(), task="click Go")
    with pytest.raises(ActionInvalid, match="nothing to continue"):
        await run.continue_with("and then")
