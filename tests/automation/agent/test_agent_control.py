"""The loop's control, end to end (real Chromium, real HTTP to the scripted model): done
versus a bare claim, an unchanged page, delta snapshots, a prompt bounded over 50 rounds,
secrets that never reach the model or the events, and a person acting while paused."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from automation import AgentConfig, AgentRun, Tab
from automation.actions import available
from automation.agent.context import Context, ContextLimits
from automation.agent.prompts import system_prompt
from automation.agent.turn import CLAIM_REMINDER
from automation.events import (
    ActionFinished,
    ActionStarted,
    LLMMessage,
    Observation,
    RunPaused,
    ScreenshotTaken,
    StepRecorded,
)
from automation.llm.anthropic import AnthropicPlanner
from automation.llm.openai import OpenAICompatPlanner
from automation.recording.rescue import NOT_RECORDED
from automation.secrets import MASK, Secrets
from tests.fakellm import Reply, ScriptedLLMServer
from tests.sinks import WaitingSink

SECRET = "s3cr3t-Value-42"


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


def make_run(
    tab: Tab, server: ScriptedLLMServer, url: str, task: str = "Sign up as Ada", **config: Any
) -> AgentRun:
    return AgentRun(
        tab=tab,
        planner=OpenAICompatPlanner(base_url=server.base_url, model="test-model", retries=0),
        sink=WaitingSink(),
        task=task,
        start_url=url,
        config=AgentConfig(**{"llm_timeout_ms": 5_000, "screenshots": False, **config}),
        secrets=Secrets({"TABWRIGHT_SECRET_SIGNUP_PW": SECRET}),
    )


def last_message(server: ScriptedLLMServer, n: int) -> str:
    return str(server.requests[n]["messages"][-1]["content"])


async def ref_of(tab: Tab, name: str) -> str:
    snap = await tab.snapshot()
    return next(r.ref for r in snap.refs.values() if r.name == name and r.interactive)


async def test_a_bare_claim_of_success_gets_a_reminder_and_only_done_ends_the_run(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(
        "I have completed the task successfully.", act(action="done", summary="signed up")
    )
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    finished = await run.run()
    assert finished.status == "succeeded" and finished.summary == "signed up"
    assert CLAIM_REMINDER in last_message(llm_server, 1)
    told = [o.text for o in run.sink.of_type(Observation)]  # type: ignore[attr-defined]
    assert CLAIM_REMINDER in told


async def test_done_after_a_failing_action_is_not_taken(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script(
        act(action="click", ref="e999") + act(action="done", summary="too soon"),
        act(action="done", summary="now"),
    )
    finished = await make_run(tab, llm_server, f"{fixture_url}/demo/form.html").run()
    assert finished.summary == "now"
    assert "The done action was not taken" in last_message(llm_server, 1)


async def test_an_unchanged_page_gets_one_nudge_then_a_pause(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    shift, control = act(action="press", key="Shift"), act(action="press", key="Control")
    llm_server.script(shift, control, shift, control)  # nothing on the page changes
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    task = asyncio.create_task(run.run())
    paused = await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    assert paused.reason == "stuck" and "even after a nudge" in paused.detail
    assert "has not changed for 3 rounds" in last_message(llm_server, 3)  # the nudge
    assert "has not changed" not in last_message(llm_server, 2)
    assert len(llm_server.requests) == 4
    llm_server.script(act(action="done", summary="ok"))
    run.control.reply("finish")
    assert (await asyncio.wait_for(task, 60)).status == "succeeded"
    after = last_message(llm_server, 4)
    assert "has not changed" not in after and 'textbox "Name"' in after  # a full page again


async def test_deltas_between_full_snapshots_and_a_full_one_after_navigation(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/agent/long.html")
    add = await ref_of(tab, "Add row")
    llm_server.script(
        act(action="click", ref=add),
        act(action="navigate", url=f"{fixture_url}/demo/form.html"),
        act(action="done", summary="ok"),
    )
    run = make_run(tab, llm_server, "", context=ContextLimits())  # refs of this very page
    assert (await run.run()).status == "succeeded"
    first, second, third = (last_message(llm_server, n) for n in range(3))
    assert "Item 0: spare part" in first and "Added 400" not in first
    assert second.count("# changes since the last snapshot") == 1 and "Added 400" in second
    assert "Item 0: spare part" not in second  # only the change...
    history = json.dumps(llm_server.requests[1]["messages"][:-1])
    assert "Item 0: spare part" in history  # ...while the full page stays in the prompt
    assert "# changes" not in third and 'textbox "Name"' in third  # a new page: full


async def test_the_prompt_stays_bounded_over_fifty_rounds(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/agent/long.html")
    add, refresh = await ref_of(tab, "Add row"), await ref_of(tab, "Refresh")
    chatter = "Let me think about this carefully. " * 150  # ~5 000 characters of prose
    replies = [chatter + act(action="click", ref=add if n % 2 else refresh) for n in range(50)]
    llm_server.script(*replies, act(action="done", summary="ok"))
    limits = ContextLimits(
        round_chars=3_000, notes_chars=500, delta_chars=600, reply_chars=400,
        recent_rounds=3, summary_rounds=10, line_chars=120,
        requests_kept=2, request_chars=300, max_requests=6,
    )  # fmt: skip
    run = make_run(
        tab, llm_server, "", task="Add rows", context=limits, round_cap=60, unchanged_rounds=100
    )
    assert (await run.run()).status == "succeeded"
    assert len(llm_server.requests) == 51
    bound = Context(system_prompt(available(tab.config)), "Task: Add rows", limits).bound()
    sizes = [sum(len(m["content"]) for m in r["messages"]) for r in llm_server.requests]
    assert max(sizes) <= bound, (max(sizes), bound)
    assert bound < 25_000  # independent of the number of rounds
    assert max(sizes[25:]) <= max(sizes[10:25]) * 1.2  # no growth late in the run
    late = json.dumps(llm_server.requests[-1]["messages"])
    assert "earlier rounds left out" in late and "round 45: click" in late
    assert "more characters left out" in late  # the long page was cut to the budget


async def test_secrets_are_filled_only_in_the_browser(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    name, password = await ref_of(tab, "Name"), await ref_of(tab, "Password")
    llm_server.script(
        act(action="fill", ref=password, value="${SECRET:SIGNUP_PW}")
        + act(action="fill", ref=name, value="Ada ${SECRET:SIGNUP_PW}"),  # shows on the page
        act(action="fill", ref=password, value="typed-literally-9"),
        act(action="done", summary="ok"),
    )
    run = make_run(tab, llm_server, "", task="Sign up; the password is ${SECRET:SIGNUP_PW}")
    assert (await run.run()).status == "succeeded"
    assert await tab.page.input_value("#name") == f"Ada {SECRET}"
    sent = json.dumps(llm_server.requests)
    assert SECRET not in sent and "${SECRET:SIGNUP_PW}" in sent
    assert "typed-literally-9" not in json.dumps(llm_server.requests[2:])  # masked after
    events = json.dumps([e.to_dict() for e in run.sink.events], ensure_ascii=False)  # type: ignore[attr-defined]
    assert SECRET not in events
    steps = run.sink.of_type(StepRecorded)  # type: ignore[attr-defined]
    assert [s.args.get("value") for s in steps] == [
        "${SECRET:SIGNUP_PW}", "Ada ${SECRET:SIGNUP_PW}", MASK,
    ]  # fmt: skip
    literal = [
        e for e in run.sink.events  # type: ignore[attr-defined]
        if isinstance(e, ActionStarted | ActionFinished | StepRecorded)
        and "typed-literally-9" in json.dumps(e.to_dict())
    ]  # fmt: skip
    assert not literal
    stored = [m.text for m in run.sink.of_type(LLMMessage)]  # type: ignore[attr-defined]
    assert MASK in stored[1] and "typed-literally-9" not in json.dumps(stored)


async def test_a_password_typed_into_a_field_its_show_switch_made_text_is_masked(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    # "Show password" made the field text; the page still marks it as the password.
    await tab.navigate(f"{fixture_url}/demo/form.html")
    await tab.page.set_content(
        '<form><label>Passcode <input id="pw" type="text" autocomplete="current-password">'
        "</label></form>"
    )
    field = await ref_of(tab, "Passcode")
    llm_server.script(
        act(action="fill", ref=field, value="shown-literally-7"),
        act(action="done", summary="ok"),
    )
    run = make_run(tab, llm_server, "", task="Sign in")
    assert (await run.run()).status == "succeeded"
    assert await tab.page.input_value("#pw") == "shown-literally-7"
    steps = run.sink.of_type(StepRecorded)  # type: ignore[attr-defined]
    assert [s.args.get("value") for s in steps] == [MASK]
    assert "shown-literally-7" not in json.dumps(llm_server.requests[1:])
    events = json.dumps([e.to_dict() for e in run.sink.events], ensure_ascii=False)  # type: ignore[attr-defined]
    assert "shown-literally-7" not in events


async def test_a_missing_secret_is_an_error_for_the_model_not_a_crash(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    password = await ref_of(tab, "Password")
    llm_server.script(
        act(action="fill", ref=password, value="${SECRET:NOT_SET}"),
        act(action="done", summary="gave up"),
    )
    assert (await make_run(tab, llm_server, "").run()).status == "succeeded"
    told = last_message(llm_server, 1)
    assert "TABWRIGHT_SECRET_NOT_SET is not set" in told
    assert await tab.page.input_value("#password") == ""


async def test_what_the_person_does_while_paused_becomes_steps(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    llm_server.script("NEED_HELP: what name should I use?", act(action="done", summary="ok"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html", screenshots=True)
    task = asyncio.create_task(run.run())
    await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    await tab.page.locator("#name").click()
    await tab.page.keyboard.type("Grace")
    await tab.page.locator("#plan").focus()
    run.control.resume()
    assert (await asyncio.wait_for(task, 60)).status == "succeeded"
    by_person = [s for s in run.sink.of_type(StepRecorded) if s.by == "person"]  # type: ignore[attr-defined]
    assert [(s.action, s.args, s.name) for s in by_person] == [("fill", {"value": "Grace"}, "Name")]
    assert by_person[0].identity and by_person[0].identity["id"] == "name"
    assert "the person did: fill textbox 'Name' = 'Grace'" in last_message(llm_server, 1)
    # The page as the person left it is their last step's picture (the run page shows it).
    shots = run.sink.of_type(ScreenshotTaken)  # type: ignore[attr-defined]
    assert by_person[-1].index in [shot.step_index for shot in shots]


async def test_native_tool_calls_drive_a_run_with_either_provider(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/demo/form.html")
    name = await ref_of(tab, "Name")
    planners = [
        OpenAICompatPlanner(base_url=llm_server.base_url, model="m", retries=0),
        AnthropicPlanner(base_url=llm_server.root_url, model="m", retries=0),
    ]
    for planner, value in zip(planners, ["Ada", "Grace"], strict=True):
        llm_server.script(
            Reply(
                text="Filling in the name.", tool_calls=[("fill", {"ref": name, "value": value})]
            ),
            Reply(tool_calls=[("done", {"summary": f"named {value}"})]),
        )
        run = make_run(tab, llm_server, "")
        run.planner = planner
        finished = await run.run()
        assert finished.status == "succeeded" and finished.summary == f"named {value}"
        assert await tab.page.input_value("#name") == value
        request = llm_server.requests[-1]
        names = {t.get("name") or t["function"]["name"] for t in request["tools"]}
        assert {"fill", "act", "done"} <= names and "file_read" not in names
        shared = next(
            t for t in request["tools"] if (t.get("name") or t["function"]["name"]) == "act"
        )
        shared_schema = shared.get("input_schema") or shared["function"]["parameters"]
        offered = shared_schema["properties"]["action"]["enum"]
        assert "file_read" in offered and "shell" not in offered
    assert llm_server.paths[-4:] == ["/v1/chat/completions"] * 2 + ["/v1/messages"] * 2


async def test_a_pause_whose_recorder_could_not_start_says_so(
    tab: Tab, llm_server: ScriptedLLMServer, fixture_url: str, recorder_cannot_start: None
) -> None:
    """The person is told when what they do in the tab will not become steps of theirs."""
    llm_server.script("NEED_HELP: what name should I use?", act(action="done", summary="ok"))
    run = make_run(tab, llm_server, f"{fixture_url}/demo/form.html")
    task = asyncio.create_task(run.run())
    paused = await run.sink.wait_for(RunPaused)  # type: ignore[attr-defined]
    assert paused.detail.startswith("what name should I use?") and NOT_RECORDED in paused.detail
    run.control.resume()
    assert (await asyncio.wait_for(task, 60)).status == "succeeded"
