"""The agent loop end to end: real Chromium, real fixture pages, the real OpenAI-compatible
client talking to a scripted server on loopback (or the rule planner)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable

from automation import AgentConfig, AgentRun, ListSink, Tab
from automation.events import (
    ActionFinished,
    LLMMessage,
    LLMToken,
    Observation,
    RunFinished,
    RunPaused,
    RunResumed,
    ScreenshotTaken,
    StepRecorded,
)
from automation.llm.base import PlannerReply
from automation.llm.openai import OpenAICompatPlanner
from automation.llm.rules import RulePlanner
from tests.fakellm import Reply, ScriptedLLMServer
from tests.net import free_port
from tests.popupapp import PopupApp, serve
from tests.sinks import WaitingSink


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


def make_run(tab: Tab, server: ScriptedLLMServer, url: str, **config: object) -> AgentRun:
    planner = OpenAICompatPlanner(base_url=server.base_url, model="test-model")
    return AgentRun(
        tab=tab,
        planner=planner,
        sink=WaitingSink(),
        task="Sign up as Ada",
        start_url=url,
        config=AgentConfig(**{"llm_timeout_ms": 5_000, **config}),  # type: ignore[arg-type]
    )


async def test_llm_run_over_several_rounds(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    llm_server.script(
        "I'll fill in the name first.\n" + act(action="type", ref=form_refs["Name"], text="Ada"),
        act(action="type", ref=form_refs["Email"], text="ada@example.org")
        + act(action="click", ref=form_refs["Sign up"]),
        act(action="wait_for", text="Welcome, Ada!") + act(action="done", summary="signed up"),
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    finished = await run.run()
    sink = run.sink
    assert isinstance(sink, WaitingSink)

    assert finished.status == "succeeded" and finished.summary == "signed up"
    steps = sink.of_type(StepRecorded)
    assert [s.action for s in steps] == ["navigate", "type", "type", "click", "wait_for"]
    assert all(s.ok for s in steps)
    assert [s.selector for s in steps[1:4]] == ["#name", "#email", "#signup > button"]
    assert steps[3].role == "button" and steps[3].name == "Sign up"
    assert steps[3].identity is not None and steps[3].identity["name"] == "Sign up"
    assert steps[0].identity is None and steps[4].identity is None  # no element
    assert len(sink.of_type(ScreenshotTaken)) == 5
    assert await tab.page.text_content("#result") == "Welcome, Ada!"

    # What the model was sent: the rules, the task, the snapshot with refs, then outcomes.
    first = llm_server.requests[0]
    assert first["model"] == "test-model" and first["stream"] is True
    system = first["messages"][0]
    # The actions went as native tools, so the system prompt does not list them again.
    assert system["role"] == "system" and "call done" in system["content"]
    assert "<action>" not in system["content"] and first["tools"]
    assert llm_server.requests[1]["messages"][0] == system  # the same bytes every round
    assert llm_server.requests[1]["tools"] == first["tools"]
    assert f'textbox "Name" [{form_refs["Name"]}]' in first["messages"][-1]["content"]
    second = llm_server.requests[1]["messages"]
    assert second[-1]["content"].startswith("OK type: typed 3 characters")
    assert [m["role"] for m in second[-3:]] == ["user", "assistant", "user"]
    # Streamed tokens add up to each stored message.
    for message in sink.of_type(LLMMessage):
        tokens = [t.text for t in sink.of_type(LLMToken) if t.round == message.round]
        assert "".join(tokens) == message.text
    assert sink.of_type(LLMMessage)[0].usage["total_tokens"] > 0


async def test_a_macro_is_one_action_and_records_each_step(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    steps = [
        {"type": "fill", "ref": form_refs["Name"], "value": "Ada"},
        {"type": "fill", "ref": form_refs["Email"], "value": "ada@example.org"},
        {"type": "click", "ref": form_refs["Sign up"]},
        {"type": "wait_for", "text": "Welcome, Ada!"},
        {"type": "read_page"},
    ]
    llm_server.script(
        act(action="steps", steps=steps, return_mode="delta"),
        act(action="done", summary="signed up"),
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    finished = await run.run()
    sink = run.sink
    assert isinstance(sink, WaitingSink)

    assert finished.status == "succeeded"
    actions = sink.of_type(ActionFinished)
    assert [a.name for a in actions] == ["navigate", "steps"]
    macro = actions[1]
    assert macro.ok and macro.index == 1
    assert [(s["index"], s["type"], s["ok"]) for s in macro.steps] == [
        (0, "fill", True), (1, "fill", True), (2, "click", True), (3, "wait_for", True),
        (4, "read_page", True),
    ]  # fmt: skip
    recorded = sink.of_type(StepRecorded)
    assert [(s.index, s.action) for s in recorded] == [
        (0, "navigate"), (1, "fill"), (2, "fill"), (3, "click"), (4, "wait_for"), (5, "read_page"),
    ]  # fmt: skip
    assert [s.selector for s in recorded[1:4]] == ["#name", "#email", "#signup > button"]
    assert recorded[3].role == "button" and recorded[3].name == "Sign up"
    assert recorded[1].args == {"ref": form_refs["Name"], "value": "Ada"}
    assert recorded[4].args == {"text": "Welcome, Ada!"}
    # One screenshot per action, the macro's after its last step.
    assert [s.step_index for s in sink.of_type(ScreenshotTaken)] == [0, 5]
    seen = llm_server.requests[1]["messages"][-1]["content"]
    assert "OK steps: 0 fill: ok" in seen and "Welcome, Ada!" in seen


async def test_fill_form_records_each_field_as_a_step_of_its_own(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    fields = [
        {"ref": form_refs["Name"], "value": "Ada"},
        {"ref": form_refs["Password"], "value": "hunter2-secret"},
        {"ref": form_refs["Plan"], "value": "Pro"},
        {"ref": form_refs["I accept the terms"], "value": True},
    ]
    bad = [*fields, {"ref": "e999", "value": "never"}]
    llm_server.script(
        act(action="fill_form", fields=bad),  # refused whole: nothing is filled
        act(action="fill_form", fields=fields),
        act(action="done", summary="ok"),
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    await run.run()
    sink = run.sink
    assert isinstance(sink, WaitingSink)

    recorded = sink.of_type(StepRecorded)
    assert [(s.action, s.ok) for s in recorded] == [
        ("navigate", True), ("fill_form", False), ("fill", True), ("fill", True),
        ("select_option", True), ("check", True),
    ]  # fmt: skip
    assert recorded[1].error["code"] == "ref_not_found"
    assert "field 4 (e999)" in recorded[1].error["message"]
    assert [s.args for s in recorded[2:]] == [
        {"value": "Ada"}, {"value": "••••••••"}, {"values": ["Pro"]}, {"checked": True},
    ]  # fmt: skip
    assert [s.identity["id"] for s in recorded[2:]] == ["name", "password", "plan", "terms"]
    # The password never shows, in the action as started, finished or stored.
    assert "hunter2-secret" not in json.dumps([e.to_dict() for e in sink.events])
    assert await tab.page.input_value("#password") == "hunter2-secret"


async def test_a_failing_macro_records_the_steps_that_ran_and_tells_the_model(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    steps = [
        {"type": "fill", "ref": form_refs["Name"], "value": "Ada"},
        {"type": "click", "ref": "e999"},
        {"type": "wait_for", "text": "Welcome"},
    ]
    llm_server.script(act(action="steps", steps=steps), act(action="done", summary="gave up"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    await run.run()
    sink = run.sink
    assert isinstance(sink, WaitingSink)

    macro = sink.of_type(ActionFinished)[1]
    assert not macro.ok and macro.error["code"] == "step_failed"
    assert [(s["ok"], s["skipped"]) for s in macro.steps] == [
        (True, False),
        (False, False),
        (False, True),
    ]
    recorded = sink.of_type(StepRecorded)
    assert [(s.action, s.ok) for s in recorded] == [
        ("navigate", True),
        ("fill", True),
        ("click", False),
    ]
    assert recorded[2].error["code"] == "ref_not_found"
    seen = llm_server.requests[1]["messages"][-1]["content"]
    assert "ERROR steps [step_failed]: step 1 (click) failed: [ref_not_found]" in seen
    assert "2 wait_for: skipped" in seen
    assert await tab.page.input_value("#name") == "Ada"  # the step before the failure ran


async def test_an_invalid_macro_runs_nothing_and_goes_back_to_the_model(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(
        act(action="steps", steps=[{"type": "read_page"}], return_mode="sideways"),
        act(action="done", summary="ok"),
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    await run.run()
    recorded = run.sink.of_type(StepRecorded)  # type: ignore[attr-defined]
    # The parser already refuses it: nothing ran, the model is told why.
    assert [s.action for s in recorded] == ["navigate"]
    assert "return_mode must be one of" in llm_server.requests[1]["messages"][-1]["content"]


async def test_malformed_and_unknown_actions_go_back_to_the_model(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(
        '<action>{"action": "click", "ref": </action>',
        '<action>{"action": "teleport", "to": "mars"}</action>',
        act(action="done", summary="ok"),
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    finished = await run.run()
    observations = run.sink.of_type(Observation)  # type: ignore[attr-defined]
    assert finished.status == "succeeded"
    assert [o.error["code"] for o in observations] == ["action_invalid", "action_invalid"]
    assert "not valid JSON" in observations[0].text
    assert "unknown action 'teleport'" in observations[1].text
    assert "ERROR [action_invalid]" in llm_server.requests[1]["messages"][-1]["content"]
    assert "teleport" in llm_server.requests[2]["messages"][-1]["content"]


async def test_too_many_failing_rounds_end_the_run(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script("no tags at all", "<action>[1, 2]</action>", act(action="click", ref="e999"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", max_failed_rounds=3)
    finished = await run.run()
    assert finished.status == "failed"
    assert "3 rounds in a row" in finished.reason
    failed = [a for a in run.sink.of_type(ActionFinished) if not a.ok]  # type: ignore[attr-defined]
    assert failed[0].error["code"] == "ref_not_found"
    steps = run.sink.of_type(StepRecorded)  # type: ignore[attr-defined]
    assert steps[-1].ok is False and steps[-1].error["code"] == "ref_not_found"


async def test_a_repeat_with_an_effect_runs_and_one_without_pauses_unrun(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    # The first click shows "Email is required" (the page changed): the same click again
    # is work and runs.  The second changes nothing: a third is stuck, and is not run.
    click = act(action="click", ref=form_refs["Sign up"])
    llm_server.script(click, click, click, act(action="done", summary="ok"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    task = asyncio.create_task(run.run())
    paused = await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    assert paused.reason == "stuck" and "click" in paused.detail
    assert "the page did not change" in paused.detail
    assert run.control.paused
    clicks = [a for a in run.sink.of_type(ActionFinished) if a.name == "click"]  # type: ignore[attr-defined]
    assert len(clicks) == 2  # the repeat without effect was not executed
    run.control.reply("The form shows an error; just finish.")
    finished = await asyncio.wait_for(task, 60)
    assert finished.status == "succeeded"
    assert run.sink.of_type(RunResumed)  # type: ignore[attr-defined]
    last = llm_server.requests[-1]["messages"][-1]["content"]
    assert "The person says: The form shows an error; just finish." in last
    assert "was not run" in last
    clicks = [a for a in run.sink.of_type(ActionFinished) if a.name == "click"]  # type: ignore[attr-defined]
    assert len(clicks) == 2  # resuming asked the model; nothing was replayed


async def test_resuming_a_stuck_run_does_not_run_the_repeat(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    press = act(action="press", key="Escape")  # changes nothing on this page
    llm_server.script(press, press, press, act(action="done", summary="ok"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    task = asyncio.create_task(run.run())
    await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    run.control.resume()  # no word from the person, no change to the page
    sink = run.sink
    assert isinstance(sink, WaitingSink)
    await sink.wait_for(RunPaused, count=2)
    presses = [a for a in sink.of_type(ActionFinished) if a.name == "press"]
    assert len(presses) == 1  # the model sent it twice more; neither ran
    run.control.resume()
    assert (await asyncio.wait_for(task, 60)).status == "succeeded"


async def test_the_same_action_twice_in_one_reply_runs_once(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    name = form_refs["Name"]
    twice = act(action="type", ref=name, text="Ada") + act(action="type", ref=name, text="Ada")
    llm_server.script(twice + act(action="done", summary="typed"), act(action="done", summary="ok"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    finished = await run.run()

    assert finished.status == "succeeded" and finished.summary == "ok"  # not the first done
    typed = [a for a in run.sink.of_type(ActionFinished) if a.name == "type"]  # type: ignore[attr-defined]
    assert len(typed) == 1
    told = llm_server.requests[1]["messages"][-1]["content"]
    assert "twice in a row: it ran once" in told
    assert not run.sink.of_type(RunPaused)  # type: ignore[attr-defined]


async def test_need_help_pauses_and_reply_resumes(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script("NEED_HELP: which plan should I pick?", act(action="done", summary="ok"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    task = asyncio.create_task(run.run())
    paused = await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    assert paused.reason == "need_help" and paused.detail == "which plan should I pick?"
    run.control.reply("Pro")
    assert (await asyncio.wait_for(task, 60)).status == "succeeded"
    assert "The person says: Pro" in llm_server.requests[1]["messages"][-1]["content"]


async def test_the_round_cap_pauses_and_the_person_grants_more_rounds(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(act(action="press", key="Tab"), act(action="press", key="Shift+Tab"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", round_cap=2)
    task = asyncio.create_task(run.run())
    paused = await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    assert paused.reason == "round_cap" and "round cap (2 rounds)" in paused.detail
    assert len(llm_server.requests) == 2 and not task.done()
    llm_server.script(act(action="press", key="Tab"), act(action="done", summary="ok"))
    run.control.extend(1)
    run.control.resume()
    again = await run.sink.wait_for(RunPaused, count=2)  # type: ignore[attr-defined]
    assert again.reason == "round_cap" and "(3 rounds)" in again.detail  # one more, as granted
    run.control.resume()  # a plain resume grants the configured cap again
    assert (await asyncio.wait_for(task, 60)).status == "succeeded"
    assert len(llm_server.requests) == 4


async def test_unreachable_llm_pauses_within_budget_and_keeps_steps(
    tab: Tab, fixture_url: str
) -> None:
    port = free_port()
    run = AgentRun(
        tab=tab,
        planner=OpenAICompatPlanner(base_url=f"http://127.0.0.1:{port}/v1", model="m"),
        sink=WaitingSink(),
        task="anything",
        start_url=f"{fixture_url}/demo/form.html",
    )
    started = time.monotonic()
    task = asyncio.create_task(run.run())
    paused = await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    assert time.monotonic() - started < 20  # refused at once: not the model's budget
    assert paused.reason == "llm_error" and f"127.0.0.1:{port}" in paused.detail
    run.control.stop()
    finished = await asyncio.wait_for(task, 60)
    assert finished.status == "stopped"
    steps = run.sink.of_type(StepRecorded)  # type: ignore[attr-defined]
    assert [s.action for s in steps] == ["navigate"]


async def test_stalled_stream_ends_with_the_llm_budget(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(Reply(text="Let me think about this " * 4, stall_after_chars=10))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", llm_timeout_ms=600)
    task = asyncio.create_task(run.run())
    started = time.monotonic()
    paused = await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    assert time.monotonic() - started < 10  # the stall never ends by itself
    assert paused.reason == "llm_error" and "within 600 ms" in paused.detail
    tokens = "".join(t.text for t in run.sink.of_type(LLMToken))  # type: ignore[attr-defined]
    assert tokens.startswith("Let me th")
    run.control.stop()
    assert (await asyncio.wait_for(task, 60)).status == "stopped"


async def test_stop_during_streaming_ends_at_once(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(Reply(text="Working on it " * 10, stall_after_chars=12))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", llm_timeout_ms=60_000)
    task = asyncio.create_task(run.run())
    await run.sink.wait_for(LLMToken)  # type: ignore[attr-defined]
    started = time.monotonic()
    run.control.stop("stop button")
    finished = await asyncio.wait_for(task, 30)
    assert time.monotonic() - started < 30  # not the model's 60 s
    assert finished.status == "stopped" and finished.reason == "stop button"


async def test_person_can_pause_a_running_run(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, form_refs: dict[str, str]
) -> None:
    llm_server.script(
        act(action="type", ref=form_refs["Name"], text="Ada"), act(action="done", summary="ok")
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    run.control.request_pause()  # takes effect at the next round boundary
    task = asyncio.create_task(run.run())
    paused = await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    assert paused.reason == "requested"
    assert llm_server.requests == []  # nothing planned while paused
    run.control.resume()
    assert (await asyncio.wait_for(task, 60)).status == "succeeded"


async def test_blocked_start_url_fails_clearly(tab: Tab) -> None:
    run = AgentRun(tab=tab, planner=RulePlanner(), sink=ListSink(), task="x",
                   start_url="file:///etc/passwd")  # fmt: skip
    finished = await run.run()
    assert finished.status == "failed" and "file: is not allowed" in finished.reason


async def test_rule_planner_run_on_a_two_page_flow(tab: Tab, fixture_url: str) -> None:
    task = "type Acme into Company\nclick Continue\nwait for Company: Acme\nclick Confirm\n" \
        "wait for Order confirmed"  # fmt: skip
    run = AgentRun(tab=tab, planner=RulePlanner(), sink=ListSink(), task=task,
                   start_url=f"{fixture_url}/demo/flow/step1.html")  # fmt: skip
    finished = await run.run()
    assert finished.status == "succeeded", finished.reason
    steps = run.sink.of_type(StepRecorded)  # type: ignore[attr-defined]
    assert [s.action for s in steps] == ["navigate", "type", "click", "wait_for", "click",
                                         "wait_for"]  # fmt: skip
    assert steps[1].selector == "#company" and steps[4].selector == "#confirm"
    assert steps[4].url.endswith("step2.html?company=Acme")
    assert isinstance(run.sink.events[-1], RunFinished)


class PagePlanner:
    """A model that reads each round's page: a function of the snapshot per round."""

    name = "page-reading"

    def __init__(self, *rounds: object) -> None:
        self.rounds = list(rounds)
        self.seen: list[str] = []  # the last message of each request

    async def plan(self, request, *, budget, on_token=None) -> PlannerReply:  # type: ignore[no-untyped-def]
        self.seen.append(request.messages[-1].content)
        text = self.rounds.pop(0)(request.snapshot)  # type: ignore[operator]
        return PlannerReply(text, usage={})


def ref_of(snapshot, name: str, role: str) -> str:  # type: ignore[no-untyped-def]
    return next(r.ref for r in snapshot.find(name) if r.role == role)


def zeta_through_the_popup(select: Callable[[PagePlanner], int]) -> PagePlanner:
    """A model that adds Zeta with a new supplier in the "+" popup (which closes itself
    after its Save), selecting the tab ``select`` gives it (reading the planner's own
    last observation, say)."""
    planner = PagePlanner(
        lambda s: act(action="fill", ref=ref_of(s, "Name:", "textbox"), value="Zeta"),
        lambda s: act(action="click", ref=ref_of(s, "+", "link")),
        lambda s: act(action="tabs", op="select", index=select(planner)),
        lambda s: act(action="fill", ref=ref_of(s, "Name:", "textbox"), value="New Co"),
        lambda s: act(action="click", ref=ref_of(s, "Save", "button")),  # the popup closes
        lambda s: act(action="click", ref=ref_of(s, "Save", "button")),
        lambda s: act(action="done", summary="added"),
    )
    return planner


async def add_zeta(tab: Tab, app: PopupApp, planner: PagePlanner) -> tuple[AgentRun, str]:
    """``planner``'s run on ``app``'s customer form, ended as it succeeded: (the run, the
    app's base URL)."""
    with serve(app) as base:
        run = AgentRun(tab=tab, planner=planner, sink=ListSink(), task="Add Zeta",
                       start_url=f"{base}/customer")  # fmt: skip
        finished = await run.run()
    assert finished.status == "succeeded", finished.reason
    assert app.customers == [{"name": "Zeta", "supplier": "2"}]
    return run, base


async def test_a_popup_closing_itself_leaves_the_run_in_its_opener(tab: Tab) -> None:
    planner = zeta_through_the_popup(lambda _planner: 1)
    run, base = await add_zeta(tab, PopupApp(autoclose=True), planner)
    assert "The tab you were in closed; the run goes on in tab 0" in planner.seen[5]
    steps = run.sink.of_type(StepRecorded)  # type: ignore[attr-defined]
    assert all(s.ok for s in steps) and steps[-1].url == f"{base}/done"


def told_tab(seen: str) -> int:
    """The tab number an observation says the last action opened (a model reading it)."""
    match = re.search(r"it opened tab (\d+) \(", seen)
    assert match, seen
    return int(match.group(1))


async def test_a_popup_slow_to_come_is_told_to_the_model_and_selected_at_once(tab: Tab) -> None:
    # Playwright tells of a popup only once its page came: a second after the click here.
    planner = zeta_through_the_popup(lambda planner: told_tab(planner.seen[-1]))
    _run, base = await add_zeta(tab, PopupApp(autoclose=True, popup_ms=1_000), planner)
    assert f"it opened tab 1 ({base}/supplier); this one stays current" in planner.seen[2]
