"""A back-office page whose chat widget hangs (fixtures/engine/hung-frame.html?hang: a frame
of another site whose script never returns once loaded), as a person meets it on the
dashboard: their run pauses there, they type a note and save the order on the live view,
and what they did is their steps, saved as a scenario that replays on the same page.  The
pause says what is not recorded (inside the widget).  Before, the recorder could not start
past the widget: the pause said nothing they did was recorded, and nothing was."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from automation import BrowserSession
from tests.e2e.journeys import exported_pytest
from tests.e2e.test_popup_recording_e2e import Places, replayed, saved_as, type_on_picture
from tests.e2e.ui import LIVE_MS, Server, click_picture, live_picture, log_in, save, start_run
from tests.exported import run_exported

pytestmark = pytest.mark.e2e


async def places_on(browser: BrowserSession, url: str) -> Places:
    """Where the note's field, the Save button and the widget are in a tab of the run's
    size."""
    probe = await browser.new_tab()
    try:
        await probe.page.goto(url)
        found = {}
        for name, element in (
            ("Note", probe.page.get_by_label("Note", exact=True)),
            ("Save order", probe.page.get_by_role("button", name="Save order")),
            ("widget", probe.page.locator("#widget")),
        ):
            box = await element.bounding_box()
            assert box is not None, name
            found[name] = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        width, height = await probe.page.evaluate("() => [innerWidth, innerHeight]")
        return Places(width, height, found)
    finally:
        await probe.close()


async def test_a_person_s_work_on_a_page_whose_widget_hangs_is_recorded_and_replayed(
    page: Page, server: Server, browser: BrowserSession, fixture_url: str, tmp_path: Path
) -> None:
    orders = f"{fixture_url}/engine/hung-frame.html?hang"
    places = await places_on(browser, f"{fixture_url}/engine/hung-frame.html")
    await log_in(page, server)
    await start_run(page, orders, "click Nowhere at all")
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    reason = page.locator("#status-reason")
    await expect(reason).to_contain_text(
        re.compile(r"inside frames of other sites is not recorded: the frame \S+hung-widget")
    )
    await expect(reason).not_to_contain_text("its recorder did not start")
    await live_picture(page)
    # A click on the widget is answered at once, saying why nothing there can be clicked
    # (it held the person's live view for the whole of an action's time, their next acts
    # behind it, and then said only that time ran out).
    x, y = places.found["widget"]
    refused = await click_picture(page, x, y, places.width, refused=True)
    said = refused["error"]["message"]
    assert re.search(r"can be acted on: the frame \S+/hung-widget\.html did not answer", said)
    await places.click(page, "Note")
    await type_on_picture(page, "rush")
    await places.click(page, "Save order")
    await page.locator("#reply-text").fill("skip")
    await page.get_by_role("button", name="Send", exact=True).click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    steps = page.locator("#steps > li")
    await expect(steps.locator(".step-action")).to_have_text(["navigate", "fill", "click"])
    await save(page, "run-hung-widget.png")
    await expect(steps.nth(1).locator(".step-by")).to_have_text("by the person")
    await expect(steps.nth(1).locator(".step-target")).to_have_text(re.compile('textbox "Note"'))

    # The run did not propose that its page shows no error: the widget could not be read.
    scenario = await saved_as(page, "Order with a note")
    listed = page.locator("li.sstep")
    await expect(listed).to_have_count(3)  # the person's steps, and their page
    await expect(listed.filter(has_text="the page shows no error")).to_have_count(0)
    # The person adds that check: its replay on the same page does their work, and does
    # not say the page shows no error (the widget, which can't be read, may show one).
    # Its pytest export says the same (it waited for the widget for good: Playwright's
    # reads have no timeout).
    await add_check(page, "the page shows no error")
    base = f"{fixture_url}/engine"
    cant_tell = (
        r"it can't be told: the frame \S+/engine/hung-widget\.html did not answer within "
        r"3000 ms of the page around it"
    )
    said = await replayed(page, scenario, base)
    assert re.fullmatch(
        rf"failed: step (\d+) \(expect the page shows no error\): .*{cant_tell}.*", said
    )
    await page.goto(scenario)
    status, out = await run_exported(await exported_pytest(page), tmp_path, base, timeout_ms=3_000)
    assert status == 1 and re.search(rf"expected the page to show no error .*{cant_tell}", out), out
    # The person checks the page's own answer instead: the replay proves it, green.
    last = await listed.count() - 1
    page.once("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name=f"Delete step {last}").click()
    deleted = f"Step {last} (expect the page shows no error) deleted"
    await expect(page.get_by_role("status")).to_contain_text(deleted)
    await add_check(page, "text is shown", "Order saved: rush")
    assert await replayed(page, scenario, base) == "succeeded"
    await page.goto(scenario)
    status, out = await run_exported(await exported_pytest(page), tmp_path, base)
    assert status == 0, out


async def add_check(page: Page, kind: str, text: str = "") -> None:
    """On the scenario's page, the person adds a check of ``kind`` (its label)."""
    await page.get_by_text("Add a check").click()
    form = page.locator("#add-check")
    await form.get_by_label("Check").select_option(label=kind)
    if text:
        await form.get_by_label("Text", exact=True).fill(text)
    await form.get_by_role("button", name="Add check").click()
    await expect(page.get_by_role("status")).to_contain_text("Check added")
