"""Macros on real Chromium: several safe steps in one call, each checked, one small answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from automation import Budget, Tab
from automation.agent.parser import parse_reply
from automation.browser.actions import execute
from automation.browser.macro import Macro, run_macro
from automation.browser.snapshot import Snapshot
from automation.errors import ActionInvalid
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
        budget=Budget(10_000),
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
        budget=Budget(10_000),
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
        budget=Budget(10_000),
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
        budget=Budget(10_000),
    )
    assert [s.ok for s in result.steps] == [False, True, True]
    assert result.failed_index == 0 and await status(tab) == "Clicked"


async def test_a_stale_ref_never_acts_on_another_element(tab: Tab, page: Snapshot) -> None:
    go = ref_of(page, "button", "Go")
    await tab.page.evaluate("document.querySelector('button').textContent = 'Renamed'")
    result = await run_macro(tab, macro({"type": "click", "ref": go}), budget=Budget(5_000))
    assert result.steps[0].error is not None and result.steps[0].error["code"] == "stale_ref"
    assert await status(tab) == "Waiting"


async def test_a_backend_node_id_can_be_the_target(tab: Tab, page: Snapshot) -> None:
    node = await tab.backend_node_id(ref_of(page, "textbox", "Name"))
    tab.state.backend_ids.clear()  # looked up in the page, not just remembered
    result = await run_macro(
        tab,
        macro({"type": "fill", "backend_node_id": node, "value": "Grace"},
              {"type": "click", "backend_node_id": 987_654}),
        budget=Budget(5_000),
    )  # fmt: skip
    assert result.steps[0].ok and await tab.page.input_value("#name") == "Grace"
    assert result.steps[1].error is not None and result.steps[1].error["code"] == "ref_not_found"


async def test_navigate_is_under_the_url_policy(tab: Tab, page: Snapshot) -> None:
    result = await run_macro(
        tab, macro({"type": "navigate", "url": "file:///etc/passwd"}), budget=Budget(5_000)
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
    text = await execute(tab, "steps", parsed.actions[0].args, budget=Budget(10_000))
    assert text.startswith("0 click: ok") and "Clicked" in text
    bad = parse_reply('<action>{"action": "steps", "steps": [{"type": "evaluate"}]}</action>')
    assert not bad.actions and "not a step type" in str(bad.errors[0])
