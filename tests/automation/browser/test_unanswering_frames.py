"""A page whose widget frame hangs (fixtures/engine/hung-frame.html: a frame from another
site, in a renderer of its own, whose script a message sends into an endless loop): the
page around it is still seen and acted on, the frame is said to be left out, and a replay
looking for an element that is in no frame asks a person instead of running out of time;
its pictures are taken.  And a page too busy to answer a replay's search for the whole of
it: the step asks a person, as for an element not found, and keeps its time for acting."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from automation import ActionFailed, BudgetExceeded, CheckFailed, Tab
from automation.browser.frames import unanswering
from automation.browser.identity import ElementIdentity, locate
from automation.browser.screencast import person_input
from automation.budget import Budget
from automation.recording import expect
from automation.recording import recorder as recording
from automation.recording.export import to_pytest
from automation.recording.propose import propose_checks
from automation.recording.recorder import Recorder
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.rescue import start_recorder, unrecorded
from automation.recording.scenario import Scenario
from tests.bounds import room
from tests.busypage import busy_once
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import ref_of
from tests.waiting import eventually

MISSING = {"role": "button", "name": "Delete account", "tag": "button"}
DELETE_ACCOUNT = Scenario.from_dict({
    "format": "tabwright.scenario", "version": 1, "name": "Delete the account",
    "steps": [{"action": "click", "args": {}, "identity": MISSING}],
})  # fmt: skip


async def hung(tab: Tab, fixture_url: str) -> None:
    """The page open, its widget's script in an endless loop."""
    await tab.navigate(f"{fixture_url}/engine/hung-frame.html")
    before = await tab.snapshot(budget=room())
    assert 'button "Open chat"' in before.text  # the widget, while it answers
    await hang_widget(tab)


async def hang_widget(tab: Tab) -> None:
    """The widget told to hang, once it does: it says so as the task that starts its loop
    ends, and a loaded renderer may answer a question or a key before that loop runs."""
    await tab.page.evaluate("window.hangWidget()")
    widget = next(f for f in tab.page.frames if f.url.endswith("/engine/hung-widget.html"))
    await eventually(lambda: unanswering([widget], room()), what="the widget never hung")


async def test_a_snapshot_shows_the_page_and_says_which_frame_did_not_answer(
    tab: Tab, fixture_url: str
) -> None:
    await hung(tab, fixture_url)
    snap = await tab.snapshot(budget=room())
    lines = snap.text.splitlines()
    assert 'heading "Orders"' in snap.text and "Open chat" not in snap.text
    at = next(i for i, line in enumerate(lines) if line.startswith("- iframe "))
    assert "/engine/hung-widget.html did not answer within" in lines[at + 1]
    assert "loading, busy or hung" in lines[at + 1] and lines[at + 1].startswith("  # ")
    # The page around it is acted on as ever, by the refs of that snapshot.
    await tab.click(ref_of(snap, "button", "Save order"), budget=room())
    assert re.search(r"- status \[e\d+\]: Order saved\n", (await tab.snapshot(budget=room())).text)


async def test_a_search_leaves_the_frame_out_and_says_so(tab: Tab, fixture_url: str) -> None:
    await hung(tab, fixture_url)
    save = ElementIdentity.from_dict({"role": "button", "name": "Save order", "tag": "button"})
    found = await locate(tab.page, save, budget=room())
    assert found.ok and found.frame is tab.page.main_frame
    missing = await locate(tab.page, ElementIdentity.from_dict(MISSING), budget=room())
    assert not missing.ok
    assert "/engine/hung-widget.html did not answer within" in missing.reason


async def test_a_replay_asks_a_person_for_an_element_in_no_frame(
    tab: Tab, fixture_url: str
) -> None:
    await hung(tab, fixture_url)
    result = await Replay(tab, DELETE_ACCOUNT, config=ReplayConfig(locate_wait_ms=300)).run()
    step = result.steps[0]
    assert (result.status, step.status) == ("needs_person", "needs_person")
    assert step.error is not None and "can't tell which element" in step.error["message"]
    assert "did not answer within" in step.error["message"]


async def test_a_page_too_busy_for_the_whole_search_has_the_step_ask_a_person(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/engine/hung-frame.html")
    # The page's own script busy for longer than the step may look (a long task: a big
    # report drawn, a bundle parsed), then free again.
    await tab.page.evaluate(
        "setTimeout(() => { const end = Date.now() + 4000; while (Date.now() < end); }, 0)"
    )
    config = ReplayConfig(step_timeout_ms=3_000, locate_wait_ms=300)
    result = await Replay(tab, DELETE_ACCOUNT, config=config).run()
    step = result.steps[0]
    assert (result.status, step.status) == ("needs_person", "needs_person"), step.error
    assert step.error is not None and "the search for it took all of its" in step.error["message"]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


async def test_pictures_are_taken_past_the_frame(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/engine/hung-frame.html")
    snap = await tab.snapshot(budget=room())
    await hang_widget(tab)
    width, height = png_size(await tab.screenshot(budget=room()))
    viewport = tab.page.viewport_size
    assert viewport is not None and (width, height) == (viewport["width"], viewport["height"])
    assert png_size(await tab.screenshot(full_page=True, budget=room()))[0] == width
    assert (await tab.screenshot_jpeg(budget=room()))[:2] == b"\xff\xd8"
    box = await tab.page.locator("#save").bounding_box()
    assert box is not None
    button = png_size(await tab.screenshot(ref=ref_of(snap, "button", "Save order"), budget=room()))
    assert button == (round(box["width"]), round(box["height"]))
    with pytest.raises(ActionFailed, match=r"hung-widget\.html did not answer within"):
        await tab.screenshot(ref=ref_of(snap, "button", "Open chat"), budget=room())
    # The style drawing passwords blank was put in for the picture and taken out after it.
    assert await tab.page.locator("#tabwright-picture-style").count() == 0


async def test_what_the_page_shows_is_read_around_the_frame_and_no_no_is_guessed(
    tab: Tab, fixture_url: str
) -> None:
    """A check or a wait that finds what it looks for where the page answers holds; one
    that would hold on not finding it can't tell, with the frame unread, and says why."""
    await hung(tab, fixture_url)
    await tab.page.click("#save")
    await tab.wait_for(text="Order saved", budget=room())
    await expect.check(tab, {"kind": "text_visible", "text": "Orders"}, None, budget=room())
    rows = {"kind": "rows", "text": "Order saved", "count": 0, "at_least": True}
    await expect.check(tab, rows, None, budget=room())
    with pytest.raises(BudgetExceeded, match=r"can't be told gone: the frame .*hung-widget"):
        await tab.wait_for(text_gone="Open chat", budget=Budget(2_000, label="wait"))
    for kind in ({"kind": "text_hidden", "text": "Open chat"}, {"kind": "no_error"}):
        with pytest.raises(CheckFailed, match=r"it can't be told: the frame .*did not answer"):
            await expect.check(tab, kind, None, budget=Budget(2_000, label="check"))


async def test_a_frame_is_judged_beside_its_page_not_by_the_clock(
    tab: Tab, fixture_url: str
) -> None:
    """The page's own script busy for 4 s holds the frames of its site too (one renderer):
    its payment frame answers late, but no later than the page does, and is read, not left
    out as a frame that hangs (a loaded machine slows every frame the same way)."""
    await tab.navigate(f"{fixture_url}/engine/identity.html")
    await tab.page.evaluate(busy_once(4_000))
    snap = await tab.snapshot(budget=room())
    assert "did not answer" not in snap.text
    assert 'button "Pay now"' in snap.text


async def test_a_person_is_recorded_past_the_frame_and_told_what_is_left_out(
    tab: Tab, fixture_url: str
) -> None:
    """Playwright puts a recorder's binding and script into every frame and waits for each:
    on the page with the hung widget the recorder could not start, and a pause told the
    person nothing they did was recorded.  It listens through a CDP session of its own on
    the page's renderer instead: what they do on the page is recorded (their typing, a
    click just before the stop, a new document's acts while the widget hangs again), what
    is left out is said, and nothing of it stays in the page after the stop."""
    await hung(tab, fixture_url)
    recorder = await start_recorder(tab, room())
    assert recorder is not None
    assert recorder.left_out == unrecorded(recorder)
    assert re.fullmatch(
        r"what is done inside frames of other sites is not recorded: the frame "
        r"http://localhost:\d+/engine/hung-widget\.html did not answer .*",
        recorder.left_out,
    )
    await tab.page.locator("#note").fill("rush")
    await tab.page.locator("#save").click()
    await tab.page.goto(f"{fixture_url}/engine/hung-frame.html?hang")  # hangs once loaded
    await tab.page.wait_for_function("() => window.widgetHung")
    await tab.page.evaluate("() => window.widgetHung")
    await tab.page.locator("#note").fill("second")
    await tab.page.locator("#save").click()
    steps = await recorder.stop()
    acts = [(step.describe(), step.args) for step in steps if step.action != "navigate"]
    assert acts == [
        ("fill textbox 'Note'", {"value": "rush"}), ("click button 'Save order'", {}),
        ("fill textbox 'Note'", {"value": "second"}), ("click button 'Save order'", {}),
    ], steps  # fmt: skip
    await tab.page.reload(wait_until="domcontentloaded")
    left = "Object.getOwnPropertyNames(window).filter((n) => n.startsWith('__tabwright_rec'))"
    assert await tab.page.evaluate(left) == []


async def test_no_error_is_not_proposed_where_a_frame_can_t_be_read(
    tab: Tab, fixture_url: str
) -> None:
    """A run done on the page with the hung widget was proposed, ticked, that its page
    showed no error, which nobody could read there: every replay of the scenario saved
    with it failed that check ("it can't be told").  Not proposed; on the same page with
    the widget answering, it is."""
    acted = [{"action": "click", "ok": True}]
    for hangs in (True, False):
        await tab.navigate(f"{fixture_url}/engine/hung-frame.html")
        assert 'button "Open chat"' in (await tab.snapshot(budget=room())).text
        if hangs:
            await hang_widget(tab)
        proposed = await propose_checks(tab, acted, budget=room())
        kinds = [proposal.check.args["kind"] for proposal in proposed]
        assert ("no_error" in kinds) is not hangs, kinds


async def test_a_point_on_the_frame_is_refused_naming_it_and_the_page_is_acted_on_after(
    tab: Tab, fixture_url: str
) -> None:
    """A person's click or check at a point of the live view over the hung widget: the
    element there was asked of the widget's own renderer, which held the click (and the
    person's next acts behind it) for the whole of its time, and then its session's detach
    as long again.  It is refused naming the frame, recording nothing, and the next click
    on the page is done and recorded."""
    await hung(tab, fixture_url)
    recorder = Recorder(tab)
    await recorder.start(budget=room())
    widget = await tab.page.locator("#widget").bounding_box()
    save = await tab.page.locator("#save").bounding_box()
    assert widget is not None and save is not None
    for act in (recorder.click_at, recorder.check_at):
        with pytest.raises(ActionFailed, match=r"can be acted on: the frame \S+hung-widget"):
            await act(widget["x"] + 20, widget["y"] + 20, budget=room())
    await recorder.click_at(save["x"] + 5, save["y"] + 5, budget=room())
    await tab.wait_for(text="Order saved", budget=room())
    steps = await recorder.stop()
    assert [step.describe() for step in steps] == ["navigate", "click button 'Save order'"]


async def test_an_action_on_the_frame_s_element_after_it_hung_ends_naming_the_frame(
    tab: Tab, fixture_url: str
) -> None:
    """The agent took its snapshot while the widget answered, and the widget hung before
    the action: each action on the widget's element waited for its whole budget (15 s by
    default; a minute here) and said only that time ran out ("give it more time").  It
    ends once the frame is found not answering, naming it; the page around it is acted
    on after."""
    await tab.navigate(f"{fixture_url}/engine/hung-frame.html")
    snap = await tab.snapshot(budget=room())
    chat = ref_of(snap, "button", "Open chat")
    await hang_widget(tab)
    actions = {
        "click": lambda: tab.click(chat, budget=room()),
        "press": lambda: tab.press_key("Enter", ref=chat, budget=room()),  # as the tools say
        "check": lambda: tab.set_checked(chat, True, budget=room()),
        "fill_form": lambda: tab.fill_form([{"ref": chat, "value": True}], budget=room()),
    }
    for name, action in actions.items():
        with pytest.raises(ActionFailed) as failed:
            await action()
        assert not isinstance(failed.value, BudgetExceeded), name
        assert failed.value.message.startswith(f"{name} {chat} (button 'Open chat'): "), name
        assert "the frame " in failed.value.message and "hung-widget.html did not answer" in (
            failed.value.message
        )
        assert "act on the page around it" in failed.value.hint
    await tab.click(ref_of(snap, "button", "Save order"), budget=room())
    assert "Order saved" in (await tab.snapshot(budget=room())).text


async def test_an_action_a_live_frame_keeps_waiting_longer_than_its_question_goes_on(
    tab: Tab,
) -> None:
    """A wait on the frame's element that lasts four and a half seconds, past the first
    question put to the frame: the frame answers, so the wait goes on to its end."""

    class Site(QuietHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/widget"):
                self.send(200, SLOW_WIDGET)
            else:
                port = self.server.server_address[1]
                self.send(200, SLOW_PAGE.replace(b"PORT", str(port).encode()))

    with loopback_app(Site) as site:
        await tab.navigate(f"{site}/")
        await tab.page.frame_locator("#widget").locator("button").wait_for()
        snap = await tab.snapshot(budget=room())
        await tab.wait_for(ref=ref_of(snap, "button", "Sending"), state="hidden", budget=room())
        widget = tab.page.frame_locator("#widget")
        assert await widget.locator("#said").inner_text() == "Sent"


# A page with a widget from another site (localhost beside 127.0.0.1) whose button goes
# after 4.5 s.
SLOW_PAGE = b"""<!doctype html><title>Slow widget</title><h1>Page</h1>
<iframe id="widget" src="http://localhost:PORT/widget" title="Widget"></iframe>"""
SLOW_WIDGET = b"""<!doctype html><title>Widget</title>
<button type="button">Sending</button><p id="said"></p>
<script>
  setTimeout(() => {
    document.querySelector("button").hidden = true;
    document.getElementById("said").textContent = "Sent";
  }, 4500);
</script>"""


async def test_a_recording_whose_widget_hangs_meanwhile_stops_without_waiting_for_it(
    tab: Tab, fixture_url: str
) -> None:
    """The widget hangs while the person records: the stop keeps their steps, leaves the
    frame out of its flush and removes the recorder's scripts without waiting for it
    (each removal waits for every frame); it waited for its whole budget."""
    await tab.navigate(f"{fixture_url}/engine/hung-frame.html")
    assert 'button "Open chat"' in (await tab.snapshot(budget=room())).text
    recorder = Recorder(tab)
    await recorder.start(budget=room())
    await tab.page.locator("#save").click()
    await tab.page.evaluate("window.hangWidget()")
    started = time.monotonic()
    steps = await recorder.stop()
    assert time.monotonic() - started < recording._STOP_MS / 1000, "it waited its whole budget"
    assert [step.describe() for step in steps][-1] == "click button 'Save order'"


async def test_keys_for_a_focus_in_the_frame_are_refused_naming_it_and_go_to_the_page_after(
    tab: Tab, fixture_url: str
) -> None:
    """A person clicks the widget on the live view, so the focus goes into it, and it
    hangs: what they typed and the keys they pressed waited for an acknowledgement the
    widget never gives, the whole of the input's budget (their next inputs behind), as did
    an agent's press with no ref.  Each is refused naming the frame; once the person
    clicks the page's field, what they type goes there."""
    await tab.navigate(f"{fixture_url}/engine/hung-frame.html")
    assert 'button "Open chat"' in (await tab.snapshot(budget=room())).text
    widget = await tab.page.locator("#widget").bounding_box()
    note = await tab.page.locator("#note").bounding_box()
    assert widget is not None and note is not None
    click = {"kind": "click", "x": widget["x"] + 40, "y": widget["y"] + 15}
    await person_input(tab, click, budget=room())
    assert await tab.page.evaluate("document.activeElement.id") == "widget"
    await hang_widget(tab)
    frame = r"the frame \S+/engine/hung-widget\.html did not answer within"
    for event in ({"kind": "type", "text": "rush"}, {"kind": "key", "key": "Enter"}):
        with pytest.raises(ActionFailed, match=f"keys can't reach the focus: {frame}"):
            await person_input(tab, event, budget=room())
    with pytest.raises(
        ActionFailed, match=f"press Enter: the focus is where keys can't reach: {frame}"
    ):
        await tab.press("Enter", budget=room())
    click = {"kind": "click", "x": note["x"] + 5, "y": note["y"] + 5}
    await person_input(tab, click, budget=room())
    await person_input(tab, {"kind": "type", "text": "rush"}, budget=room())
    await person_input(tab, {"kind": "key", "key": "End"}, budget=room())
    assert await tab.page.locator("#note").input_value() == "rush"


async def test_a_press_where_the_focus_is_in_the_frame_fails_in_replay_and_export(
    tab: Tab, fixture_url: str, tmp_path: Path
) -> None:
    """A step pressing a key where the focus is, the focus inside the hung widget: the
    replay's press waited out its step, and the export's waited for good (Playwright's
    keyboard has no timeout).  Both fail saying where the focus is."""
    page = f"{fixture_url}/engine/hung-frame.html?focus-hang"  # says "Chat is busy" once hung
    scenario = Scenario.from_dict({
        "format": "tabwright.scenario", "version": 1, "name": "Send the chat",
        "base_url": fixture_url,
        "steps": [
            {"action": "navigate", "args": {"url": page}},
            {"action": "wait_for", "args": {"text": "Chat is busy"}},
            {"action": "press", "args": {"key": "Enter"}},
        ],
    })  # fmt: skip
    said = r"press Enter: the focus is where keys can't reach: the frame \S+hung-widget\.html"
    result = await Replay(tab, scenario, config=ReplayConfig(step_timeout_ms=30_000)).run()
    press = result.steps[2]
    assert result.status == "failed" and press.status == "failed", result.steps
    assert press.error is not None and re.search(said, press.error["message"]), press.error
    code, out = await run_exported(to_pytest(scenario), tmp_path, fixture_url)
    assert code == 1 and re.search(said, out), out
