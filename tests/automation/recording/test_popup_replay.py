"""Work done in a popup window is part of the scenario: an agent run adds a customer whose
new supplier it creates in the "+" popup (whose Save sets the opener's select and closes
itself), and looks the supplier up in the list a ``target=_blank`` link opens.  Saved, the
scenario keeps the popup's steps; it replays and its pytest export passes; where the
popup's Save is refused (the popup stays open) both fail, saying so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from automation import Tab
from automation.agent.loop import AgentConfig, AgentRun
from automation.browser.session import BrowserSession
from automation.events import StepRecorded
from automation.llm.openai import OpenAICompatPlanner
from automation.recording.export import to_pytest
from automation.recording.fromrun import from_run_steps, plan
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.fakellm import ScriptedLLMServer
from tests.popupapp import PopupApp, serve
from tests.refs import fresh_snapshot, ref_of
from tests.sinks import WaitingSink


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


async def record(
    tab: Tab, browser: BrowserSession, llm_server: ScriptedLLMServer, base: str
) -> list[dict[str, Any]]:
    """The agent's run, as its steps are stored."""
    form = await fresh_snapshot(browser, f"{base}/customer")
    popup = await fresh_snapshot(browser, f"{base}/supplier")
    llm_server.script(
        act(action="fill", ref=ref_of(form, "textbox", "Name:"), value="Zeta"),
        act(action="click", ref=ref_of(form, "link", "+")),
        act(action="tabs", op="list"),
        act(action="tabs", op="select", index=1),
        act(action="fill", ref=ref_of(popup, "textbox", "Name:"), value="New Co"),
        act(action="click", ref=ref_of(popup, "button", "Save")),  # the popup closes itself
        act(action="click", ref=ref_of(form, "link", "Suppliers")),  # target=_blank
        act(action="tabs", op="select", index=1),
        act(action="wait_for", text="New Co"),
        act(action="tabs", op="select", index=0),
        act(action="click", ref=ref_of(form, "button", "Save")),
        act(action="done", summary="added Zeta with New Co"),
    )
    run = AgentRun(
        tab=tab, sink=WaitingSink(), task="Add Zeta, supplied by a new supplier New Co",
        planner=OpenAICompatPlanner(base_url=llm_server.base_url, model="test-model"),
        start_url=f"{base}/customer", config=AgentConfig(llm_timeout_ms=5_000),
    )  # fmt: skip
    finished = await run.run()
    assert finished.status == "succeeded", finished.reason
    return [event.to_dict() for event in run.sink.of_type(StepRecorded)]  # type: ignore[attr-defined]


def through_the_popup(base: str) -> list[str]:
    """The scenario's steps that add Zeta's new supplier in the "+" popup, said."""
    return [
        f"navigate {base}/customer",
        "fill textbox 'Name:' = 'Zeta'",
        "click link '+'",
        "go to the popup the steps before opened",
        "fill textbox 'Name:' = 'New Co'",
        "click button 'Save'",
        "go to the opener (the popup closed itself, having changed its form)",
    ]


# A replay meant to pass waits only as long as the page takes: room for a busy machine.
# One meant to fail waits out its step (a popup that never opens or closes): FAILS_MS.
PASSES_MS, FAILS_MS = 30_000, 5_000


async def replay(
    browser: BrowserSession, scenario: Scenario, base: str, step_timeout_ms: int = PASSES_MS,
    *, screenshots: bool = False,
) -> Any:  # fmt: skip
    """``screenshots``: a picture after each step, as the dashboard's replays take."""
    tab = await browser.new_tab()
    try:
        config = ReplayConfig(step_timeout_ms=step_timeout_ms, screenshots=screenshots)
        return await Replay(tab, scenario, base_url=base, config=config).run()
    finally:
        await tab.close()


async def test_a_run_s_popup_work_is_saved_replayed_and_exported(
    tab: Tab, browser: BrowserSession, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    app = PopupApp()
    with serve(app) as base:
        rows = await record(tab, browser, llm_server, base)
        assert app.customers == [{"name": "Zeta", "supplier": "2"}]
        scenario = from_run_steps(rows, name="add customer", base_url=base)
        said = [step.summary() for step in scenario.steps]
        assert said == [
            *through_the_popup(base),
            "click link 'Suppliers'",
            "go to the popup the steps before opened",
            "wait_for text='New Co'",
            "go to the opener",
            "click button 'Save'",
        ], said

        # With a picture after each step: none of the popup that closed itself (the
        # dashboard's replay failed there: "the tab is closed").
        result = await replay(browser, scenario, base, screenshots=True)
        assert result.status == "passed", result.reason
        assert app.customers[-1] == {"name": "Zeta", "supplier": "3"}  # the replay's new one
        code = to_pytest(scenario)
        status, out = await run_exported(code, tmp_path, base)
        assert status == 0, out
        assert app.customers[-1] == {"name": "Zeta", "supplier": "4"}

    refusing = PopupApp(save_fails=True)
    with serve(refusing) as base:
        result = await replay(browser, scenario, base, FAILS_MS)
        assert result.status == "failed"
        # The popup's save answered in place, saying why: its step fails with the words.
        assert "step 5 (click button 'Save')" in result.reason, result.reason
        assert "saying 'A supplier of that name exists already.'" in result.reason
        status, out = await run_exported(code, tmp_path, base, timeout_ms=FAILS_MS)
        assert status != 0 and "saying 'A supplier of that name exists already.'" in out, out
    assert refusing.customers == []  # neither saved the customer without its supplier


def row(action: str, at: int, **args: Any) -> dict[str, Any]:
    return {"index": at, "action": action, "args": args, "ok": True, "url": "http://a.test/"}


def test_the_plan_keeps_steps_in_a_popup_the_run_opened_and_leaves_out_other_tabs() -> None:
    ident = {"role": "button", "name": "Go", "selectors": ["#go"]}
    rows = [
        row("navigate", 0, url="http://a.test/"),
        {**row("click", 1), "identity": ident},
        row("tabs", 2, op="list"),
        row("tabs", 3, op="select", index=1, to="popup"),
        {**row("click", 4), "identity": ident},
        row("tabs", 5, op="closed", to="opener", changed=True),
        row("tabs", 6, op="open", url="http://b.test/"),  # a tab the run opened itself
        {**row("click", 7), "identity": ident},
        row("tabs", 8, op="select", index=0, to="first"),
        {**row("click", 9), "identity": ident},
        row("tabs", 10, op="select", index=2),  # an old run's select: no "to"
        {**row("click", 11), "identity": ident},
    ]
    planned = plan(rows)
    kept = {p.index: p.step.to_dict()["args"] for p in planned if p.kept and p.step}
    assert kept[3] == {"op": "popup"}
    assert kept[5] == {"op": "opener", "closed": True, "changed": True}
    assert 4 in kept and 9 in kept
    reasons = {p.index: p.reason for p in planned if not p.kept}
    assert reasons[2] == "it only read the page"
    assert "did not open as a popup" in reasons[6] and "did not open as a popup" in reasons[7]
    assert reasons[8] == "it went back to the tab the replay is in"  # it was there already
    assert "did not open as a popup" in reasons[10] and "did not open as a popup" in reasons[11]


def test_the_plan_goes_back_to_the_first_tab_from_a_popup() -> None:
    rows = [
        row("tabs", 0, op="select", index=1, to="popup"),
        row("tabs", 1, op="select", index=2, to="popup"),
        row("tabs", 2, op="select", index=0, to="first"),
    ]
    assert [p.step.args for p in plan(rows) if p.step] == [
        {"op": "popup"}, {"op": "popup"}, {"op": "first"},
    ]  # fmt: skip


async def test_a_popup_that_does_not_open_fails_its_step_saying_so(browser: BrowserSession) -> None:
    with serve(PopupApp()) as base:
        scenario = Scenario.from_dict({
            "format": "tabwright.scenario", "version": 1, "name": "no popup", "base_url": base,
            "steps": [{"action": "navigate", "args": {"url": f"{base}/customer"}},
                      {"action": "tabs", "args": {"op": "popup"}}],
        })  # fmt: skip
        result = await replay(browser, scenario, base, FAILS_MS)
    assert result.status == "failed"
    assert result.reason.startswith("step 1 (go to the popup the steps before opened): no popup")


def _between(base: str, *, opens: bool = True) -> Scenario:
    """Zeta's new supplier added in the "+" popup, her name filled in the opener between
    the click that opened the popup and the move into it (``opens`` false: no click)."""
    plus = [{"action": "click", "role": "link", "name": "+"}] if opens else []
    return Scenario.from_dict({
        "format": "tabwright.scenario", "version": 1, "name": "between", "base_url": base,
        "steps": [
            {"action": "navigate", "args": {"url": f"{base}/customer"}},
            *plus,
            {"action": "fill", "role": "textbox", "name": "Name:", "args": {"value": "Zeta"}},
            {"action": "tabs", "args": {"op": "popup"}},
            {"action": "fill", "role": "textbox", "name": "Name:", "args": {"value": "New Co"}},
            {"action": "click", "role": "button", "name": "Save"},
            {"action": "tabs", "args": {"op": "opener", "closed": True, "changed": True}},
            {"action": "click", "role": "button", "name": "Save"},
        ],
    })  # fmt: skip


async def test_a_step_between_the_popup_s_opening_and_the_move_into_it_is_exported_as_replayed(
    browser: BrowserSession, tmp_path: Path
) -> None:
    """The move into a popup takes the popup the steps before opened, in replay and in the
    export alike: the export waited for a popup in the step just before the move (the
    opener's fill here), which opened none, and failed where replay passed."""
    app = PopupApp()
    with serve(app) as base:
        scenario = _between(base)
        result = await replay(browser, scenario, base)
        assert result.status == "passed", result.reason
        assert app.customers[-1] == {"name": "Zeta", "supplier": "2"}
        status, out = await run_exported(to_pytest(scenario), tmp_path, base)
        assert status == 0, out
        assert app.customers[-1] == {"name": "Zeta", "supplier": "3"}

        never = _between(base, opens=False)
        result = await replay(browser, never, base, FAILS_MS)
        assert result.status == "failed" and "no popup window opened" in result.reason
        status, out = await run_exported(to_pytest(never), tmp_path, base, timeout_ms=FAILS_MS)
        assert status != 0 and "no popup window opened" in out, out
    assert len(app.customers) == 2
