"""An MCP client's work in a popup window is kept in the session's scenario as an agent's
is: it clicks "+", selects the popup, fills and saves it (the popup closes itself between
the client's calls) and goes on in the opener; the scenario holds the moves into the popup
and back, and replays green."""

from __future__ import annotations

import json
from pathlib import Path

from automation.browser.session import BrowserSession
from automation.browser.settle import HOLD_TIMER_MS
from automation.browser.tab import Tab
from automation.events import ListSink
from automation.mcp import McpSession
from automation.mcp.stdio import write_scenario
from automation.recording.scenario import Scenario
from tests.automation.mcp.test_mcp import ref_of
from tests.automation.recording.test_popup_replay import replay, through_the_popup
from tests.popupapp import PopupApp, serve


async def test_a_popup_that_closed_itself_between_calls_is_a_step_of_the_scenario(
    tab: Tab, browser: BrowserSession, tmp_path: Path
) -> None:
    # It closes a moment after its Save answered: after the click's call, before the next.
    app = PopupApp(close_after_ms=HOLD_TIMER_MS + 300)
    sink = ListSink()
    session = McpSession(tab, sink=sink)

    async def call(name: str, **args: object) -> str:
        answer = await session.call(name, args)
        assert answer.ok, answer.text
        return answer.text

    with serve(app) as base:
        await call("navigate", url=f"{base}/customer")
        form = await call("snapshot", interactive=True)
        await call("fill", ref=ref_of(form, 'textbox "Name:"'), value="Zeta")
        async with tab.page.expect_popup():
            await call("click", ref=ref_of(form, 'link "+"'))
        assert "/supplier" in await call("tabs", op="list")
        await call("tabs", op="select", index=1)
        popup = await call("snapshot", interactive=True)
        await call("fill", ref=ref_of(popup, 'textbox "Name:"'), value="New Co")
        popup_page = session.tab.page
        await call("click", ref=ref_of(popup, 'button "Save"'))
        assert not popup_page.is_closed()  # it shows "Supplier added" for a moment
        await popup_page.wait_for_event("close")
        form = await call("snapshot", interactive=True)  # the popup closed itself
        assert "New Co" in form, form
        assert form.endswith(f"the session goes on in tab 0: {base}/customer)"), form
        await call("click", ref=ref_of(form, 'button "Save"'))
        assert app.customers == [{"name": "Zeta", "supplier": "2"}]

        out = tmp_path / "session.json"
        write_scenario(sink, out, name="add customer")
        scenario = Scenario.from_dict(json.loads(out.read_text(encoding="utf-8")))
        said = [step.summary() for step in scenario.steps]
        assert said == [*through_the_popup(base), "click button 'Save'"], said
        result = await replay(browser, scenario, base, step_timeout_ms=HOLD_TIMER_MS + 5_000)
        assert result.status == "passed", result.reason
        assert app.customers[-1] == {"name": "Zeta", "supplier": "3"}  # the replay's own
