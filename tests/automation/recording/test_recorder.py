"""The recorder on real Chromium: what a person does in a tab (real mouse and keyboard
events, in frames and shadow roots, across navigations) becomes scenario steps, one per
intent, that read back as a scenario and find their elements again; and the live view's
click_at, which finds the element under a point over CDP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from playwright.async_api import Frame, Page

from automation import ActionFailed, ActionInvalid, BrowserClosed, BrowserSession, Budget, Tab
from automation.browser.identity import locate
from automation.errors import BudgetExceeded
from automation.recording import recorder as recorder_module
from automation.recording.recorder import Recorder
from automation.recording.scenario import ScenarioStep
from tests.bounds import room
from tests.waiting import eventually

PASSWORD = "hunter2-Very!Secret"
# Pushes the document's content down by args[0] px and scrolls by args[1] px.
SCROLL = """([pad, by]) => {
  document.body.style.paddingTop = pad + "px";
  document.body.style.minHeight = "3000px";
  scrollTo(0, by);
}"""


@pytest.fixture
async def recorder(tab: Tab) -> AsyncIterator[Recorder]:
    recorder = Recorder(tab)
    yield recorder
    await recorder.stop()


async def center(frame: Frame | Page, js: str) -> tuple[float, float]:
    """The viewport center of the element ``js`` returns, in that frame's own viewport."""
    x, y = await frame.evaluate(
        f"() => {{ const r = ({js}).getBoundingClientRect(); "
        "return [r.x + r.width / 2, r.y + r.height / 2]; }"
    )
    return x, y


def summary(steps: list[ScenarioStep]) -> list[tuple[str, dict, str]]:
    return [(s.action, s.args, s.identity.name if s.identity else "") for s in steps]


def replayable(steps: list[ScenarioStep]) -> None:
    """Every step reads back as a scenario step, equal to itself, without a ref."""
    for i, step in enumerate(steps):
        assert "ref" not in step.args
        assert ScenarioStep.from_dict(step.to_dict(), index=i) == step


async def found_id(tab: Tab, step: ScenarioStep) -> str:
    """The id of the element replay finds for the step's identity."""
    assert step.identity is not None
    located = await locate(tab.page, step.identity, budget=room())
    assert located.element is not None, located.reason
    return str(await located.element.evaluate("(e) => e.id"))


async def test_typing_a_login_form_records_one_fill_per_field_and_a_secret(
    tab: Tab, fixture_url: str
) -> None:
    url = f"{fixture_url}/recorder/form.html"
    await tab.navigate(url)
    seen: list[tuple[int, str]] = []

    async def on_step(index: int, step: ScenarioStep) -> None:
        seen.append((index, step.action))

    recorder = Recorder(tab, on_step=on_step)
    await recorder.start()
    page = tab.page
    await page.locator("#user").click()
    await page.keyboard.type("ada")
    await page.locator("#pw").click()
    await page.keyboard.type(PASSWORD)
    steps = await recorder.stop()
    assert summary(steps) == [
        ("navigate", {"url": url}, ""),
        ("fill", {"value": "ada"}, "Username"),
        ("fill", {"value": "${SECRET:PASSWORD}"}, "Password"),
    ]
    assert all(s.url == url for s in steps)
    assert steps[2].identity is not None and steps[2].identity.type == "password"
    assert PASSWORD not in json.dumps([s.to_dict() for s in steps])
    # Each key replaced the field's step (the same index), never added one.
    assert seen[0] == (0, "navigate") and {i for i, _ in seen} == {0, 1, 2}
    assert seen.count((1, "fill")) == 3 and seen.count((2, "fill")) == len(PASSWORD)
    replayable(steps)
    assert [await found_id(tab, s) for s in steps[1:]] == ["user", "pw"]


async def test_a_click_on_a_span_in_a_button_records_the_button(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/form.html")
    await recorder.start()
    x, y = await center(tab.page, "document.querySelector('#noop b')")
    await tab.page.mouse.click(x, y)
    await tab.page.mouse.click(x, y, button="right")
    steps = await recorder.stop()
    assert summary(steps)[1:] == [
        ("click", {}, "Do nothing"),
        ("click", {"button": "right"}, "Do nothing"),
    ]
    button = steps[1].identity
    assert button is not None and (button.role, button.tag, button.id) == (
        "button",
        "button",
        "noop",
    )
    assert await tab.page.text_content("#out") == "clicked"
    replayable(steps)
    assert await found_id(tab, steps[1]) == "noop"


async def test_a_double_click_is_one_double_click_step(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/form.html")
    await recorder.start()
    await tab.page.locator("#noop").dblclick()
    await tab.page.locator("#noop").click()
    steps = await recorder.stop()
    assert summary(steps)[1:] == [("double_click", {}, "Do nothing"), ("click", {}, "Do nothing")]
    replayable(steps)


async def test_select_checkbox_and_radio_record_their_new_state_once(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/form.html")
    await recorder.start()
    page = tab.page
    await page.focus("#country")
    await page.keyboard.type("Ca")  # a closed select picks the option typed
    await page.get_by_text("Remember me").click()  # its label: one step, not a click too
    await page.locator("#remember").click()
    await page.get_by_text("Pro", exact=True).click()
    steps = await recorder.stop()
    assert summary(steps)[1:] == [
        ("select_option", {"values": ["Canada"]}, "Country"),
        ("check", {"checked": True}, "Remember me"),
        ("check", {"checked": False}, "Remember me"),
        ("check", {"checked": True}, "Pro"),
    ]
    assert [s.identity.role for s in steps[1:] if s.identity] == [
        "combobox", "checkbox", "checkbox", "radio",
    ]  # fmt: skip
    replayable(steps)
    assert [await found_id(tab, s) for s in steps[1:]] == [
        "country",
        "remember",
        "remember",
        "plan-pro",
    ]


async def test_keys_that_matter_are_presses_and_enter_owns_its_navigation(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/form.html")
    await recorder.start()
    page = tab.page
    await page.locator("#user").click()
    await page.keyboard.type("ada")
    await page.keyboard.press("ArrowLeft")  # moves the caret: the fill says it all
    await page.keyboard.press("Control+a")
    await page.keyboard.press("Escape")
    await page.keyboard.press("Tab")
    await page.keyboard.type("pw")
    await page.keyboard.press("Enter")  # submits the form, which leaves for the welcome page
    await page.wait_for_url("**/welcome.html")
    steps = await recorder.stop()
    assert summary(steps)[1:] == [
        ("fill", {"value": "ada"}, "Username"),
        ("press", {"key": "Control+a"}, "Username"),
        ("press", {"key": "Escape"}, "Username"),
        ("press", {"key": "Tab"}, "Username"),
        ("fill", {"value": "${SECRET:PASSWORD}"}, "Password"),
        ("press", {"key": "Enter"}, "Password"),
    ]  # no click of the default button, no navigate: Enter did both
    replayable(steps)


async def test_a_click_that_navigates_then_typing_on_the_next_page(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    first, second = f"{fixture_url}/recorder/form.html", f"{fixture_url}/recorder/welcome.html"
    await tab.navigate(first)
    await recorder.start()
    page = tab.page
    x, y = await center(page, "document.querySelector('#next img')")
    await page.mouse.click(x, y)  # on the image inside the link
    await page.wait_for_url(second)
    await page.locator("#note").click()
    await page.keyboard.type("hello")
    await page.locator("#save").click()
    steps = await recorder.stop()
    assert summary(steps) == [
        ("navigate", {"url": first}, ""),
        ("click", {}, "Continue"),
        ("fill", {"value": "hello"}, "Note"),
        ("click", {}, "Save note"),
    ]
    link = steps[1].identity
    assert link is not None and (link.role, link.tag, link.id) == ("link", "a", "next")
    assert [s.url for s in steps] == [first, first, second, second]
    # Where each step led: the link to the next page, the rest where they were.
    assert [s.led_to for s in steps] == [first, second, second, second]
    replayable(steps)
    assert await found_id(tab, steps[2]) == "note"


async def test_navigations_no_step_caused_are_navigate_steps(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    first, second = f"{fixture_url}/recorder/form.html", f"{fixture_url}/recorder/welcome.html"
    await recorder.start()  # on about:blank: nothing to navigate to yet
    assert recorder.steps == []
    await tab.navigate(first)
    await eventually(lambda: len(recorder.steps) == 1)
    await tab.navigate(second)
    steps = await recorder.stop()
    assert summary(steps) == [("navigate", {"url": first}, ""), ("navigate", {"url": second}, "")]
    assert [s.led_to for s in steps] == [first, second]
    replayable(steps)


async def test_the_page_reports_from_shadow_roots_and_frames(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/frames.html")
    await recorder.start()
    page = tab.page
    x, y = await center(page, "card.shadowRoot.querySelector('#follow span:last-child')")
    await page.mouse.click(x, y)  # e.target would be the <x-card> host
    await page.locator("#message").click()
    await page.keyboard.type("Hi Ada")
    frame = page.frame(url=lambda u: u.endswith("/frame-inner.html"))
    assert frame is not None
    await frame.locator("#pay-now b").click()
    steps = await recorder.stop()
    assert summary(steps)[1:] == [
        ("click", {}, "Follow"),
        ("fill", {"value": "Hi Ada"}, "Message"),
        ("click", {}, "Pay now"),
    ]
    assert [s.identity.frame_url for s in steps[1:] if s.identity] == ["", "", frame.url]
    replayable(steps)
    assert [await found_id(tab, s) for s in steps[1:]] == ["follow", "message", "pay-now"]


async def test_click_at_finds_the_element_in_a_shadow_root_and_in_a_frame(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/frames.html")
    await recorder.start()
    page = tab.page
    x, y = await center(page, "card.shadowRoot.querySelector('#follow span:last-child')")
    follow = await recorder.click_at(x, y, budget=room())
    frame = page.frame(url=lambda u: u.endswith("/frame-inner.html"))
    assert frame is not None
    fx, fy = await center(frame, "document.querySelector('#pay-now b')")
    host = await page.locator("#pay").bounding_box()
    assert host is not None
    pay = await recorder.click_at(host["x"] + 2 + fx, host["y"] + 2 + fy, budget=room())
    assert follow.identity is not None and pay.identity is not None
    assert (follow.action, follow.identity.role, follow.identity.name) == (
        "click",
        "button",
        "Follow",
    )
    assert follow.identity.frame_url == "" and follow.identity.backend_node_id
    assert (pay.action, pay.identity.role, pay.identity.name) == ("click", "button", "Pay now")
    assert pay.identity.frame_url == frame.url
    measured = await frame.evaluate(
        "() => { const r = document.querySelector('#pay-now').getBoundingClientRect(); "
        "return [r.x + scrollX, r.y + scrollY, r.width, r.height]; }"
    )
    assert pay.identity.box == tuple(round(v) for v in measured)  # in the frame's document
    steps = await recorder.stop()
    # The page's own report of each click is not a second step; each step led where the
    # page stayed (known once the next step came, or the recording stopped).
    assert [replace(s, led_to="") for s in steps[1:]] == [follow, pay]
    assert [s.led_to for s in steps] == [page.url] * 3
    replayable(steps)
    assert await found_id(tab, follow) == "follow" and await found_id(tab, pay) == "pay-now"


async def test_click_at_enters_a_scrolled_frame_of_another_site(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/cross.html")
    await eventually(
        lambda: tab.page.frame(url=lambda u: u.startswith("http://localhost:")) is not None
    )
    frame = tab.page.frame(url=lambda u: u.startswith("http://localhost:"))
    assert frame is not None
    await frame.wait_for_load_state()
    # Both documents scrolled: points are in the viewport, hit testing is in the documents.
    await tab.page.evaluate(SCROLL, [900, 700])
    await frame.evaluate(SCROLL, [300, 250])
    await recorder.start()
    fx, fy = await center(frame, "document.querySelector('#pay-now b')")
    host = await tab.page.locator("#pay").bounding_box()
    assert host is not None
    pay = await recorder.click_at(host["x"] + 2 + fx, host["y"] + 2 + fy, budget=room())
    assert pay.identity is not None
    assert (pay.identity.role, pay.identity.name, pay.identity.frame_url) == (
        "button", "Pay now", frame.url,
    )  # fmt: skip
    await frame.locator("#card").click()  # the page's own events come from that frame too
    await tab.page.keyboard.type("4242")
    steps = await recorder.stop()
    assert summary(steps)[1:] == [
        ("click", {}, "Pay now"),
        ("fill", {"value": "4242"}, "Card number"),
    ]
    assert steps[2].identity is not None and steps[2].identity.frame_url == frame.url
    replayable(steps)
    assert await found_id(tab, steps[2]) == "card"


async def test_click_at_a_checkbox_label_records_the_check(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/form.html")
    await recorder.start()
    x, y = await center(tab.page, "document.querySelector('#remember').parentElement")
    step = await recorder.click_at(x + 30, y, budget=room())  # on the label's text
    assert step.action == "check" and step.args == {"checked": True}
    assert step.identity is not None and step.identity.role == "checkbox"
    assert await tab.page.is_checked("#remember")
    steps = await recorder.stop()
    assert [replace(s, led_to="") for s in steps[1:]] == [step]  # where it led: known later
    replayable(steps)


async def test_identity_at_takes_a_point_of_the_viewport_of_a_scrolled_page(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/form.html")
    await tab.page.evaluate(SCROLL, [900, 700])
    x, y = await center(tab.page, "document.querySelector('#noop b')")
    button = await Recorder(tab).identity_at(x, y, budget=room())
    assert (button.role, button.name, button.id) == ("button", "Do nothing", "noop")
    measured = await tab.page.evaluate(
        "() => { const r = noop.getBoundingClientRect(); "
        "return [r.x + scrollX, r.y + scrollY, r.width, r.height]; }"
    )
    assert button.box == tuple(round(v) for v in measured) and button.box[1] > 900
    assert await found_id(tab, ScenarioStep("click", {}, button)) == "noop"


async def test_identity_at_needs_an_element(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/recorder/frames.html")
    recorder = Recorder(tab)  # not recording: identity_at only looks
    with pytest.raises(ActionFailed, match=r"no element at \(600, 700\)"):
        await recorder.identity_at(600, 700, budget=Budget(5_000))  # the page's background
    with pytest.raises(ActionFailed, match="outside the page"):
        await recorder.identity_at(5_000, 5_000, budget=Budget(5_000))
    h1 = await recorder.identity_at(40, 40, budget=Budget(5_000))
    assert (h1.role, h1.name) == ("heading", "Frames and shadows")  # no interactive ancestor
    assert recorder.steps == []


async def test_start_and_stop_are_safe_to_repeat(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/recorder/form.html")
    await recorder.start()
    await recorder.start()  # already recording: nothing more
    await tab.page.locator("#noop").click()
    steps = await recorder.stop()
    assert [s.action for s in steps] == ["navigate", "click"]
    assert await recorder.stop() == steps
    await tab.page.locator("#noop").click()  # not recorded any more
    await tab.page.evaluate("() => new Promise(requestAnimationFrame)")
    assert recorder.steps == steps
    with pytest.raises(ActionInvalid, match="stopped"):
        await recorder.start()


async def test_a_closed_tab_is_browser_closed(browser: BrowserSession, fixture_url: str) -> None:
    tab = await browser.new_tab()
    await tab.navigate(f"{fixture_url}/recorder/form.html")
    recorder = Recorder(tab)
    await recorder.start()
    await tab.page.locator("#noop").click()
    await eventually(lambda: len(recorder.steps) == 2)
    await tab.close()
    with pytest.raises(BrowserClosed):
        await recorder.identity_at(40, 40, budget=Budget(5_000))
    assert [s.action for s in await recorder.stop()] == ["navigate", "click"]
    with pytest.raises(BrowserClosed):
        await Recorder(tab).start()


async def test_a_crashed_tab_is_browser_closed_and_keeps_its_steps(
    browser: BrowserSession, fixture_url: str
) -> None:
    tab = await browser.new_tab()
    try:
        await tab.navigate(f"{fixture_url}/recorder/form.html")
        recorder = Recorder(tab)
        await recorder.start()
        await tab.page.locator("#noop").click()
        await eventually(lambda: len(recorder.steps) == 2)
        with contextlib.suppress(Exception):
            await tab.page.goto("chrome://crash")  # the page's renderer dies
        await eventually(lambda: tab.crashed)
        with pytest.raises(BrowserClosed, match="crashed"):
            await recorder.click_at(40, 40, budget=Budget(5_000))
        started = time.monotonic()
        assert [s.action for s in await recorder.stop()] == ["navigate", "click"]
        # The crashed documents are not asked to flush: stop does not wait out its budget.
        assert time.monotonic() - started < recorder_module._STOP_MS / 1000
    finally:
        await tab.close()


async def test_a_page_without_the_registry_is_recorded_all_the_same(
    browser: BrowserSession, tab: Tab, fixture_url: str
) -> None:
    assert tab.page.context.browser is not None
    context = await tab.page.context.browser.new_context()  # none of the session's scripts
    try:
        bare = await browser.adopt(await context.new_page())
        await bare.page.goto(f"{fixture_url}/recorder/form.html")
        assert not await bare.page.evaluate("() => '__tabwright' in window")
        recorder = Recorder(bare)
        x, y = await center(bare.page, "document.querySelector('#noop b')")
        assert (await recorder.identity_at(x, y, budget=room())).name == "Do nothing"
        await recorder.start()
        await bare.page.locator("#user").click()
        await bare.page.keyboard.type("ada")
        steps = await recorder.stop()
        assert summary(steps)[1:] == [("fill", {"value": "ada"}, "Username")]
    finally:
        await context.close()


# -- checkboxes on pages that redraw them (fixtures/rerender/) ------------------------------


async def click_center(page: Page, selector: str) -> None:
    """A person's click: the real mouse at the element's centre (shadow roots pierced)."""
    box = await page.locator(selector).first.bounding_box()
    assert box is not None, selector
    await page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


async def recorded_checks(tab: Tab, fixture_url: str, *selectors: str) -> list[ScenarioStep]:
    await tab.navigate(f"{fixture_url}/rerender/index.html")
    recorder = Recorder(tab)
    await recorder.start()
    for selector in selectors:
        await click_center(tab.page, selector)
        await asyncio.sleep(0.3)
    steps = await recorder.stop()
    replayable(steps)
    return [s for s in steps if s.action != "navigate"]


async def test_a_box_redrawn_in_its_click_handler_is_recorded_with_its_new_state(
    tab: Tab, fixture_url: str
) -> None:
    # The app redraws the list in its click handler: the change event never reaches the
    # window, and the box clicked is gone before anyone reads it.
    steps = await recorded_checks(tab, fixture_url, "[data-c='1']", "[data-c='1']")
    assert [(s.action, s.args, s.note) for s in steps] == [
        ("check", {"checked": True}, ""),
        ("check", {"checked": False}, ""),
    ]
    assert steps[0].identity is not None and "Take out the bins" in steps[0].identity.name
    located = await locate(tab.page, steps[0].identity, budget=room())
    assert await located.element.evaluate("(e) => e.dataset.c") == "1"  # type: ignore[union-attr]


async def test_boxes_in_shadow_roots_controlled_and_aria_boxes_are_recorded(
    tab: Tab, fixture_url: str
) -> None:
    steps = await recorded_checks(
        tab, fixture_url, "todo-list #t1", "#controlled", "#notify", "[data-i='0']"
    )
    assert [(s.action, s.args) for s in steps] == [("check", {"checked": True})] * 4
    assert [s.note for s in steps] == [""] * 4
    names = [s.identity.name if s.identity else None for s in steps]
    assert names == ["Toggle Todo Water plants", "Controlled", "Notify me", ""]
    assert steps[3].identity is not None and steps[3].identity.row == "Buy milk"
    shadow = await tab.page.evaluate("() => document.getElementById('shadow').state()")
    assert [i["done"] for i in shadow] == [False, True]


async def test_a_box_the_recorder_cannot_confirm_is_kept_with_a_warning(
    tab: Tab, fixture_url: str
) -> None:
    steps = await recorded_checks(tab, fixture_url, "#stuck", "#archive")
    assert [s.action for s in steps] == ["check", "check"]
    assert steps[0].args == {"checked": False} and "did not take the state" in steps[0].note
    assert steps[1].args == {"checked": True} and "could not be read" in steps[1].note


async def test_click_at_a_box_the_app_redraws_records_the_state_it_shows(
    tab: Tab, recorder: Recorder, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/rerender/index.html")
    await recorder.start()
    x, y = await center(tab.page, "document.querySelector('#controlled')")
    step = await recorder.click_at(x, y, budget=room())
    assert step.action == "check" and step.args == {"checked": True} and not step.note
    assert await tab.page.evaluate("() => model.controlled") is True
    steps = await recorder.stop()
    # The page's own report of the click is not a second step (where it led: known later).
    assert [replace(s, led_to="") for s in steps[1:]] == [step]


async def test_typing_in_a_field_the_app_draws_anew_on_every_key_is_one_fill(
    tab: Tab, fixture_url: str
) -> None:
    await tab.navigate(f"{fixture_url}/rerender/index.html")
    recorder = Recorder(tab)
    await recorder.start()
    await click_center(tab.page, "#note")
    await tab.page.keyboard.type("hello")
    await tab.page.keyboard.press("Enter")
    steps = await recorder.stop()
    assert [(s.action, s.args) for s in steps[1:]] == [
        ("fill", {"value": "hello"}), ("press", {"key": "Enter"}),
    ]  # fmt: skip
    assert steps[1].identity is not None and steps[1].identity.id == "note"


async def test_a_recorder_that_could_not_listen_in_the_page_fails_to_start(
    tab: Tab, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy machine the page's document may not answer within the start's budget:
    the recorder would then hear nothing of the page as it stands (a person's acts left
    out of the run), so its start fails instead of returning as if it listened."""
    await tab.navigate(f"{fixture_url}/demo/form.html")

    async def never_answers(self: Frame, expression: str, arg: object = None) -> object:
        await asyncio.Event().wait()

    monkeypatch.setattr(Frame, "evaluate", never_answers)
    with pytest.raises(BudgetExceeded):
        await Recorder(tab).start(budget=Budget(1_000))
    monkeypatch.undo()
    # A page that answers: the recorder starts and hears a click.
    recorder = Recorder(tab)
    await recorder.start(budget=room())
    x, y = await center(tab.page, "document.querySelector('#terms')")
    await tab.page.mouse.click(x, y)
    assert [step.action for step in await recorder.stop()][-1] == "check"


async def test_a_persons_last_act_on_a_page_busy_for_seconds_is_kept_at_stop(
    tab: Tab, fixture_url: str
) -> None:
    """A person ticks a box and resumes at once, while the page is busy for 3 s (or the
    machine is): stop waits for what the page sent before its flush instead of giving up
    after 2 s and dropping it."""
    await tab.navigate(f"{fixture_url}/demo/form.html")
    recorder = Recorder(tab)
    await recorder.start(budget=room())
    await tab.page.evaluate(
        "() => document.querySelector('#terms').addEventListener('click', () => setTimeout("
        "() => { const t = Date.now(); while (Date.now() - t < 3000) {} }, 0))"
    )
    x, y = await center(tab.page, "document.querySelector('#terms')")
    await tab.page.mouse.click(x, y)
    steps = await recorder.stop()
    assert [step.action for step in steps][-1] == "check", summary(steps)
