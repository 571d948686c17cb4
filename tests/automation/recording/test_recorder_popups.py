"""The recorder follows a person into the popups their tab opens: what they do in the "+"
window (its Save sets the opener's select and closes itself) is recorded with the moves
there and back, the tab group's current tab (what the live view shows) follows, and the
recording replays the popup's work; where the popup's Save is refused, the replay fails.
Before, the recording kept the click on "+" and the main form's Save only, and its replay
passed saving nothing of the popup's."""

from __future__ import annotations

from playwright.async_api import Page

from automation import BrowserSession, Tab
from automation.recording.fromrun import plan
from automation.recording.recorder import Recorder
from automation.recording.scenario import Scenario, ScenarioStep
from tests.automation.recording.test_popup_replay import FAILS_MS, replay, through_the_popup
from tests.popupapp import PopupApp, serve
from tests.waiting import eventually


def recorded(steps: list[ScenarioStep], base: str) -> Scenario:
    scenario = Scenario(name="add", steps=tuple(steps), base_url=base)
    return Scenario.from_dict(scenario.to_dict())  # read back as saved


def shown(tab: Tab) -> Page | None:
    """The page of the tab group's current tab: the one the live view shows."""
    assert tab.group is not None
    return tab.group.current.page if tab.group.current is not None else None


async def add_new_supplier(tab: Tab, *, closes: bool = True) -> Page:
    """Zeta's name, then a new supplier "New Co" in the "+" popup, saved there."""
    page = tab.page
    await page.get_by_label("Name:").fill("Zeta")
    async with page.expect_popup() as opening:
        await page.get_by_role("link", name="+").click()
    popup = await opening.value
    await eventually(lambda: shown(tab) is popup, what="the live view shows the popup")
    await popup.get_by_label("Name:").fill("New Co")
    save = popup.get_by_role("button", name="Save")
    if closes:
        async with popup.expect_event("close"):
            await save.click()
    else:
        await save.click()
        await popup.get_by_text("Supplier added.").wait_for()
    return popup


async def test_a_person_s_work_in_a_popup_that_closes_itself_is_recorded_and_replayed(
    tab: Tab, browser: BrowserSession
) -> None:
    app = PopupApp()
    seen: dict[int, ScenarioStep] = {}

    async def on_step(index: int, step: ScenarioStep) -> None:
        seen[index] = step

    with serve(app) as base:
        await tab.navigate(f"{base}/customer")
        recorder = Recorder(tab, on_step=on_step)
        await recorder.start()
        await add_new_supplier(tab)
        await eventually(lambda: shown(tab) is tab.page, what="the live view is back")
        await tab.page.get_by_role("button", name="Save").click()
        await tab.page.wait_for_url(f"{base}/done")
        steps = await recorder.stop()
    assert app.customers == [{"name": "Zeta", "supplier": "2"}]
    said = [step.summary() for step in steps]
    assert said == [*through_the_popup(base), "click button 'Save'"], said
    assert [seen[i].args for i in range(len(steps))] == [s.args for s in steps]  # "changed" too
    assert not any(step.note for step in steps)
    # The Save that closed the popup led nowhere there; the move's address is no check.
    assert steps[5].led_to == ""
    scenario = recorded(steps, base)

    again = PopupApp()
    with serve(again) as base2:
        result = await replay(browser, scenario, base2, screenshots=True)
    # A picture after each step, as the dashboard's replays take: none of the popup that
    # closed itself (it failed the replay: "the tab is closed").
    assert result.status == "passed", result.reason
    assert again.customers == [{"name": "Zeta", "supplier": "2"}]

    refusing = PopupApp(save_fails=True)
    with serve(refusing) as base3:
        result = await replay(browser, scenario, base3, FAILS_MS)
    assert result.status == "failed"
    assert "saying 'A supplier of that name exists already.'" in result.reason, result.reason
    assert refusing.customers == []
    silent = PopupApp(save_fails=True, says_why=False)  # the form back, nothing said
    with serve(silent) as base4:
        result = await replay(browser, scenario, base4, FAILS_MS)
    assert result.status == "failed"
    assert "the popup did not close" in result.reason, result.reason
    assert silent.customers == []


async def test_a_person_who_goes_back_to_the_opener_is_recorded_going_back(
    tab: Tab, browser: BrowserSession
) -> None:
    """A popup that stays open after its Save: the person's next act is in the opener's
    window (a visible browser), recorded as the move back to it."""
    app = PopupApp(autoclose=False)
    with serve(app) as base:
        await tab.navigate(f"{base}/customer")
        recorder = Recorder(tab)
        await recorder.start()
        popup = await add_new_supplier(tab, closes=False)
        await tab.page.get_by_role("button", name="Save").click()
        await tab.page.wait_for_url(f"{base}/done")
        steps = await recorder.stop()
        assert shown(tab) is tab.page  # where the person's last step was
        assert not popup.is_closed()
    said = [step.summary() for step in steps]
    assert said == [*through_the_popup(base)[:-1], "go to the opener", "click button 'Save'"]
    scenario = recorded(steps, base)
    again = PopupApp(autoclose=False)
    with serve(again) as base2:
        result = await replay(browser, scenario, base2)
    assert result.status == "passed", result.reason
    assert again.customers == [{"name": "Zeta", "supplier": "2"}]


async def test_a_popup_the_person_did_not_act_in_adds_no_step(tab: Tab) -> None:
    """The list a ``target=_blank`` link opens, only looked at: no move into it; once the
    recording stops, the tab the person last acted in is current again."""
    app = PopupApp()
    with serve(app) as base:
        await tab.navigate(f"{base}/customer")
        recorder = Recorder(tab)
        await recorder.start()
        async with tab.page.expect_popup() as opening:
            await tab.page.get_by_role("link", name="Suppliers").click()
        popup = await opening.value
        await eventually(lambda: shown(tab) is popup, what="the live view shows the list")
        steps = await recorder.stop()
    assert [step.summary() for step in steps] == [
        f"navigate {base}/customer",
        "click link 'Suppliers'",
    ]
    assert shown(tab) is tab.page


def test_a_person_s_moves_are_kept_when_their_run_is_saved() -> None:
    """A person's recorded moves (``by="person"``) say where they went in their op, as a
    replay's do; before, they were left out as switches to another tab."""
    ident = {"role": "button", "name": "Save", "selectors": ["button"]}
    rows = [
        {"index": 0, "action": "navigate", "args": {"url": "http://a.test/"}},
        {"index": 1, "action": "click", "args": {}, "identity": ident},
        {"index": 2, "action": "tabs", "args": {"op": "popup"}, "by": "person"},
        {"index": 3, "action": "click", "args": {}, "identity": ident, "by": "person"},
        {
            "index": 4,
            "action": "tabs",
            "args": {"op": "opener", "closed": True, "changed": True},
            "by": "person",
        },
        {"index": 5, "action": "click", "args": {}, "identity": ident, "by": "person"},
    ]
    rows = [{"ok": True, "url": "http://a.test/", **row} for row in rows]
    kept = {p.index: p.step.args for p in plan(rows) if p.kept and p.step}
    assert kept[2] == {"op": "popup"}
    assert kept[4] == {"op": "opener", "closed": True, "changed": True}
    assert set(kept) == {0, 1, 2, 3, 4, 5}
