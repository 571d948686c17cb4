"""Macros on real Chromium: several safe steps in one call, each checked, one small answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from automation import Budget, Tab
from automation.actions import ACTIONS, act, available, execute
from automation.agent.parser import parse_reply
from automation.agent.prompts import system_prompt
from automation.browser.macro import Macro, StepResult, run_macro
from automation.browser.snapshot import Snapshot
from automation.errors import ActionInvalid, StepFailed
from tests.bounds import room
from tests.refs import ref_of


@pytest.fixture
async def page(tab: Tab, fixture_url: str) -> Snapshot:
    await tab.navigate(f"{fixture_url}/engine/macro.html")
    return await tab.snapshot()


async def status(tab: Tab) -> str:
    return await tab.page.text_content("#status") or ""


def macro(*steps: dict[str, Any], **options: Any) -> Macro:
    return Macro.parse({"steps": list(steps), **options})


async def test_click_wait_read_in_one_call_returns_only_the_final_page(
    tab: Tab, page: Snapshot
) -> None:
    go = ref_of(page, "button", "Go")
    result = await run_macro(
        tab,
        macro(
            {"type": "read_page"},
            {"type": "click", "ref": go},
            {"type": "wait_for", "text": "Clicked"},
            {"type": "read_page"},
        ),
        budget=room(),
    )
    assert result.ok and result.failed_index is None
    assert [s.type for s in result.steps] == ["read_page", "click", "wait_for", "read_page"]
    assert all(s.url.endswith("/engine/macro.html") for s in result.steps)
    assert result.steps[0].page == "" and "Clicked" in result.steps[3].page
    assert await status(tab) == "Clicked"
    text = result.to_text()
    assert text.count("Page: ") == 1 and "Clicked" in text


async def test_delta_returns_only_what_changed(tab: Tab, page: Snapshot) -> None:
    result = await run_macro(
        tab,
        macro(
            {"type": "click", "ref": ref_of(page, "button", "Go")},
            {"type": "wait_for", "text": "Clicked"},
            {"type": "read_page"},
            return_mode="delta",
        ),
        budget=room(),
    )
    final = result.steps[-1].page
    assert "changes since the last snapshot" in final and "Clicked" in final
    assert "textbox" not in final  # unchanged parts are not repeated


async def test_a_missing_ref_stops_the_macro_and_names_the_step(tab: Tab, page: Snapshot) -> None:
    result = await run_macro(
        tab,
        macro(
            {"type": "fill", "ref": ref_of(page, "textbox", "Name"), "value": "Ada"},
            {"type": "click", "ref": "e999"},
            {"type": "click", "ref": ref_of(page, "button", "Go")},
            {"type": "read_page"},
        ),
        budget=room(),
    )
    assert not result.ok and result.failed_index == 1
    failed = result.steps[1]
    assert failed.error is not None and failed.error["code"] == "ref_not_found"
    assert [s.skipped for s in result.steps] == [False, False, True, True]
    assert await status(tab) == "Waiting"  # the skipped click did not run
    assert "1 click: ERROR [ref_not_found]" in result.to_text()


async def test_without_fail_fast_the_next_steps_still_run(tab: Tab, page: Snapshot) -> None:
    result = await run_macro(
        tab,
        macro(
            {"type": "click", "ref": "e999"},
            {"type": "click", "ref": ref_of(page, "button", "Go")},
            {"type": "wait_for", "text": "Clicked", "timeout_ms": 3_000},
            fail_fast=False,
        ),
        budget=room(),
    )
    assert [s.ok for s in result.steps] == [False, True, True]
    assert result.failed_index == 0 and await status(tab) == "Clicked"


async def test_a_stale_ref_never_acts_on_another_element(tab: Tab, page: Snapshot) -> None:
    go = ref_of(page, "button", "Go")
    await tab.page.evaluate("document.querySelector('button').textContent = 'Renamed'")
    result = await run_macro(tab, macro({"type": "click", "ref": go}), budget=room())
    assert result.steps[0].error is not None and result.steps[0].error["code"] == "stale_ref"
    assert await status(tab) == "Waiting"


async def test_a_backend_node_id_can_be_the_target(tab: Tab, page: Snapshot) -> None:
    node = await tab.backend_node_id(ref_of(page, "textbox", "Name"))
    tab.state.backend_ids.clear()  # looked up in the page, not just remembered
    result = await run_macro(
        tab,
        macro({"type": "fill", "backend_node_id": node, "value": "Grace"},
              {"type": "click", "backend_node_id": 987_654}),
        budget=room(),
    )  # fmt: skip
    assert result.steps[0].ok and await tab.page.input_value("#name") == "Grace"
    assert result.steps[1].error is not None and result.steps[1].error["code"] == "ref_not_found"


async def test_navigate_is_under_the_url_policy(tab: Tab, page: Snapshot) -> None:
    result = await run_macro(
        tab, macro({"type": "navigate", "url": "file:///etc/passwd"}), budget=room()
    )
    assert result.steps[0].error is not None and result.steps[0].error["code"] == "url_blocked"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"steps": [{"type": "read_page"}] * 11}, "at most 10 steps"),
        ({"steps": []}, "non-empty"),
        ({"steps": [{"type": "teleport"}]}, "not a step type"),
        ({"steps": [{"type": "evaluate", "expression": "1"}]}, "not a step type"),
        ({"steps": [{"type": "scroll"}]}, "not a step type"),
        ({"steps": [{"action": "click", "ref": "e1"}]}, r"no type \(its keys: action, ref\)"),
        ({"steps": [{"type": "click"}]}, "needs a ref or a backend_node_id"),
        ({"steps": [{"type": "fill", "ref": "e1"}]}, "fill needs a value"),
        ({"steps": [{"type": "navigate"}]}, "explicit url"),
        ({"steps": [{"type": "wait_for"}]}, "wait_for needs one of"),
        ({"steps": ["click"]}, "expected an object"),
        ({"steps": [{"type": "read_page"}], "return_mode": "everything"}, "return_mode"),
        ({"steps": [{"type": "read_page"}], "fail_fast": "no"}, "fail_fast"),
        ({"steps": [{"type": "read_page"}], "per_step_timeout_ms": 0}, "per_step_timeout_ms"),
    ],
)
async def test_validation_rejects_before_anything_runs(
    tab: Tab, page: Snapshot, args: dict[str, Any], message: str
) -> None:
    go = {"type": "click", "ref": ref_of(page, "button", "Go")}
    steps = [go, *args.get("steps", [])]
    with pytest.raises(ActionInvalid, match=message):
        await execute(tab, "steps", {**args, "steps": steps if args["steps"] else []},
                      budget=Budget(5_000))  # fmt: skip
    assert await status(tab) == "Waiting"  # the valid click before the bad step never ran


async def test_the_agent_can_send_steps(tab: Tab, page: Snapshot) -> None:
    go = ref_of(page, "button", "Go")
    steps = [{"type": "click", "ref": go}, {"type": "wait_for", "text": "Clicked"},
             {"type": "read_page"}]  # fmt: skip
    reply = f"<action>{json.dumps({'action': 'steps', 'steps': steps})}</action>"
    parsed = parse_reply(reply)
    assert not parsed.errors and parsed.actions[0].name == "steps"
    text = await execute(tab, "steps", parsed.actions[0].args, budget=room())
    assert text.startswith("0 click: ok") and "Clicked" in text
    bad = parse_reply('<action>{"action": "steps", "steps": [{"type": "evaluate"}]}</action>')
    assert not bad.actions and "not a step type" in str(bad.errors[0])


async def test_the_act_answer_has_each_step_and_names_the_failing_one(
    tab: Tab, page: Snapshot
) -> None:
    go = ref_of(page, "button", "Go")
    good = await act(tab, "steps", {"steps": [{"type": "click", "ref": go},
                                              {"type": "wait_for", "text": "Clicked"}]},
                     budget=room())  # fmt: skip
    assert good["ok"] is True and "error" not in good
    assert [(s["index"], s["type"], s["ok"]) for s in good["steps"]] == [
        (0, "click", True),
        (1, "wait_for", True),
    ]
    assert all(s["url"].endswith("/engine/macro.html") for s in good["steps"])
    assert good["result"].startswith("0 click: ok")

    bad = await act(tab, "steps", {"steps": [{"type": "read_page"}, {"type": "click", "ref": "e9"},
                                             {"type": "read_page"}]},
                    budget=room())  # fmt: skip
    assert bad["ok"] is False and bad["failed_index"] == 1
    assert bad["error"]["code"] == "step_failed"
    assert bad["error"]["message"].startswith("step 1 (click) failed: [ref_not_found]")
    assert bad["steps"][1]["error"]["code"] == "ref_not_found"
    assert [s["skipped"] for s in bad["steps"]] == [False, False, True]
    json.dumps(bad)  # the answer goes out as JSON as it is


async def test_execute_raises_step_failed_naming_the_step(tab: Tab, page: Snapshot) -> None:
    with pytest.raises(StepFailed, match=r"step 0 \(click\) failed") as raised:
        await execute(tab, "steps", {"steps": [{"type": "click", "ref": "e9"}]},
                      budget=Budget(5_000))  # fmt: skip
    assert raised.value.index == 0 and raised.value.code == "step_failed"


async def test_recording_takes_each_target_before_its_step_runs(tab: Tab, page: Snapshot) -> None:
    heard: list[StepResult] = []

    async def on_step(step: StepResult) -> None:
        heard.append(step)

    name, go = ref_of(page, "textbox", "Name"), ref_of(page, "button", "Go")
    node = await tab.backend_node_id(go)
    result = await run_macro(
        tab,
        macro({"type": "fill", "ref": name, "value": "Ada"},
              {"type": "click", "backend_node_id": node},
              {"type": "wait_for", "text": "Clicked"}),
        budget=room(), on_step=on_step, record=True,
    )  # fmt: skip
    assert heard == result.steps  # each step as soon as it ended
    fill, click, wait = heard
    assert fill.target is not None and fill.target.selector == "#name"
    assert (fill.target.role, fill.target.name) == ("textbox", "Name")
    assert click.args == {"ref": go} and click.target is not None
    assert click.target.name == "Go"
    assert click.target.selector == "html > body > button:nth-of-type(1)"
    assert wait.target is None and wait.args == {"text": "Clicked"}


async def test_a_step_that_is_stale_when_recorded_does_not_act(tab: Tab, page: Snapshot) -> None:
    go = ref_of(page, "button", "Go")
    await tab.page.evaluate("document.querySelector('button').textContent = 'Renamed'")
    result = await run_macro(tab, macro({"type": "click", "ref": go}), budget=room(), record=True)
    assert result.steps[0].error is not None and result.steps[0].error["code"] == "stale_ref"
    assert await status(tab) == "Waiting"


async def test_read_page_is_an_action_for_callers_but_not_offered_to_the_model(
    tab: Tab, page: Snapshot
) -> None:
    assert "read_page" in ACTIONS
    assert "read_page" not in [s.name for s in available(tab.config)]
    assert "\n- read_page(" not in system_prompt(available(tab.config))
    full = await execute(tab, "read_page", {}, budget=room())
    assert full.startswith("Page: 'Macro'") and 'button "Go"' in full
    await tab.page.evaluate("document.getElementById('status').textContent = 'Changed'")
    delta = await execute(tab, "read_page", {"delta": True}, budget=room())
    assert "changes since the last snapshot" in delta and "Changed" in delta
    assert 'button "Go"' not in delta
