"""An MCP client's work in a popup window is kept in the session's scenario as an agent's
is: it clicks "+", selects the popup, fills and saves it (the popup closes itself between
the client's calls) and goes on in the opener; the scenario holds the moves into the popup
and back, and replays green."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

from automation.browser.session import BrowserSession
from automation.browser.settle import HOLD_TIMER_MS
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.events import ListSink
from automation.mcp import McpSession
from automation.mcp.stdio import write_scenario
from automation.recording.scenario import Scenario
from tests.automation.mcp.test_mcp import ref_of
from tests.automation.recording.test_popup_replay import replay, through_the_popup
from tests.popupapp import PopupApp, serve
from tests.waiting import eventually


def caller(session: McpSession) -> Callable[..., Awaitable[str]]:
    """A tool call of ``session`` by name and arguments: its answer's text (it must be ok)."""

    async def call(name: str, **args: object) -> str:
        answer = await session.call(name, args)
        assert answer.ok, answer.text
        return answer.text

    return call


def saved(sink: ListSink, folder: Path) -> Scenario:
    """The session's scenario as its file says it (written as the stdio server does)."""
    out = folder / "session.json"
    write_scenario(sink, out, name="add customer")
    return Scenario.from_dict(json.loads(out.read_text(encoding="utf-8")))


async def test_a_popup_that_closed_itself_between_calls_is_a_step_of_the_scenario(
    tab: Tab, browser: BrowserSession, tmp_path: Path
) -> None:
    # It closes a moment after its Save answered: after the click's call, before the next;
    # its form comes half a second after the "+" click (told once it has, by the click).
    app = PopupApp(close_after_ms=HOLD_TIMER_MS + 300, popup_ms=500)
    sink = ListSink()
    session = McpSession(tab, sink=sink)
    call = caller(session)

    with serve(app) as base:
        await call("navigate", url=f"{base}/customer")
        form = await call("snapshot", interactive=True)
        await call("fill", ref=ref_of(form, 'textbox "Name:"'), value="Zeta")
        opened = await call("click", ref=ref_of(form, 'link "+"'))
        assert f"it opened tab 1 ({base}/supplier); this one stays current" in opened, opened
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

        scenario = saved(sink, tmp_path)
        said = [step.summary() for step in scenario.steps]
        assert said == [*through_the_popup(base), "click button 'Save'"], said
        result = await replay(browser, scenario, base, step_timeout_ms=HOLD_TIMER_MS + 5_000)
        assert result.status == "passed", result.reason
        assert app.customers[-1] == {"name": "Zeta", "supplier": "3"}  # the replay's own


async def test_a_person_who_leaves_a_paused_session_in_a_popup_hands_it_over_there(
    tab: Tab, browser: BrowserSession, tmp_path: Path
) -> None:
    """While the session is paused, the person adds the supplier in the "+" popup, which
    stays open after its Save; resumed, the client's calls act in the popup (where the
    recording left off) until it goes back: the scenario says every move, and replays."""
    app = PopupApp(autoclose=False)
    sink = ListSink()
    session = McpSession(tab, sink=sink)
    call = caller(session)

    with serve(app) as base:
        await call("navigate", url=f"{base}/customer")
        session.control.request_pause()
        hold = asyncio.ensure_future(session.hold_for_person(Budget(600_000, label="pause")))
        await eventually(lambda: session.control.recorder is not None, what="recording")
        page = tab.page
        await page.get_by_label("Name:").fill("Zeta")
        async with page.expect_popup() as opening:
            await page.get_by_role("link", name="+").click()
        popup = await opening.value
        assert tab.group is not None
        await eventually(lambda: tab.group.current.page is popup, what="the popup is shown")
        await popup.get_by_label("Name:").fill("New Co")
        await popup.get_by_role("button", name="Save").click()
        await popup.get_by_text("Supplier added.").wait_for()
        session.control.resume()
        await hold
        assert "Supplier added" in await call("snapshot")  # the popup, where they left it
        await call("tabs", op="select", index=0)
        form = await call("snapshot", interactive=True)
        await call("click", ref=ref_of(form, 'button "Save"'))
        assert app.customers == [{"name": "Zeta", "supplier": "2"}]

        scenario = saved(sink, tmp_path)
        said = [step.summary() for step in scenario.steps]
        assert said == [*through_the_popup(base)[:-1], "go to the opener",
                        "click button 'Save'"], said  # fmt: skip
    again = PopupApp(autoclose=False)
    with serve(again) as base2:
        result = await replay(browser, scenario, base2)
    assert result.status == "passed", result.reason
    assert again.customers == [{"name": "Zeta", "supplier": "2"}]


async def test_a_link_to_a_new_tab_is_told_and_one_still_loading_is_said_to_be(
    tab: Tab,
) -> None:
    """A ``target=_blank`` link's page (no opener to reach back) is told as the popup's is;
    a popup whose page has not come when the wait for it ends is said to be on its way
    (once), and listed once it has come."""
    app = PopupApp(popup_ms=3_000)
    session = McpSession(tab, sink=ListSink())
    session.steps.opened_wait_ms = 500  # shorter than the popup takes
    call = caller(session)
    with serve(app) as base:
        await call("navigate", url=f"{base}/customer")
        form = await call("snapshot", interactive=True)
        opened = await call("click", ref=ref_of(form, 'link "Suppliers"'))
        assert f"it opened tab 1 ({base}/suppliers); this one stays current" in opened, opened
        opened = await call("click", ref=ref_of(form, 'link "+"'))
        assert opened.endswith("it opened a tab still loading: tabs with op list shows it "
                               "once its page has come"), opened  # fmt: skip
        # Told once: the next action neither waits for it again nor says it again.
        assert "it opened" not in await call("hover", ref=ref_of(form, 'textbox "Name:"'))

        async def listed() -> bool:
            return f"2: {base}/supplier" in await call("tabs", op="list")

        await eventually(listed, what="the popup listed once its page came")
