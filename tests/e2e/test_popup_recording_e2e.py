"""A person records, on the live view, a customer of a back office whose supplier they add
in the "+" popup: the live view shows the popup while they work in it and their opener
again once its Save closed it; the saved scenario replays the popup's work and its pytest
export passes; where the app's popup Save is refused, both fail and nothing is saved.
(Before, the live view stayed on the opener and the recording kept the opener's steps
only: a replay saved the customer without its supplier, green.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Locator, Page, expect

from automation import BrowserSession
from tests.e2e.test_scenarios_e2e import exported_pytest
from tests.e2e.ui import LIVE_MS, Server, click_picture, live_picture, log_in, save, start_run
from tests.exported import run_exported
from tests.popupapp import PopupApp, serve

pytestmark = pytest.mark.e2e

_RESULTS = "() => window.__socketEvents.filter((e) => e.type === 'input.result')"
# The latest frame is of a window this size, and the picture drawn is that frame's shape.
_SHOWS_SIZE = """([width, height]) => {
  const frames = window.__socketEvents.filter((e) => e.type === "frame");
  const last = frames[frames.length - 1];
  const img = document.getElementById("live-frame");
  if (!last || last.width !== width || last.height !== height || !img.complete) return false;
  return Math.abs(img.naturalWidth / img.naturalHeight - width / height) < 0.02;
}"""


class Places:
    """Where the elements of a page are in a tab of the run's size (viewport CSS px)."""

    def __init__(
        self, width: float, height: float, found: dict[str, tuple[float, float]], tabs: int = 1
    ) -> None:
        self.width, self.height = width, height
        self.found = found
        self.tabs = tabs  # the run's tabs while this page is shown

    @classmethod
    async def of(cls, browser: BrowserSession, url: str, *names: str, popup_of: str = "") -> Places:
        """Each name: a field's label (ending in ":"), else a link's or button's name; on
        ``url``, or in the popup its link ``popup_of`` opens (a window of its own size)."""
        probe = await browser.new_tab()
        try:
            await probe.page.goto(url)
            page = probe.page
            if popup_of:
                async with page.expect_popup() as opening:
                    await page.get_by_role("link", name=popup_of, exact=True).click()
                page = await opening.value
                await page.wait_for_load_state()
            found = {}
            for name in names:
                element = (
                    page.get_by_label(name)
                    if name.endswith(":")
                    else page.get_by_role("link", name=name, exact=True).or_(
                        page.get_by_role("button", name=name, exact=True)
                    )
                )
                box = await element.bounding_box()
                assert box is not None, name
                found[name] = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            width, height = await page.evaluate("() => [innerWidth, innerHeight]")
            return cls(width, height, found, tabs=2 if popup_of else 1)
        finally:
            await probe.close()

    async def click(self, page: Page, name: str, *, tabs: int = 0) -> None:
        """The person clicks ``name`` on the live view's picture, the run having ``tabs``
        tabs open (0: as many as when this page was measured)."""
        x, y = self.found[name]
        # The picture shows this page's window, not the other's (the popup's is of another
        # size): a point measured on one and clicked on the other's picture lands elsewhere.
        await page.wait_for_function(_SHOWS_SIZE, arg=[self.width, self.height])
        # The strip of the run's tabs above the picture is shown while the popup is open:
        # a click measured as it goes (after the popup's frame, before the tabs' message)
        # lands its height lower on the picture.
        strip = page.get_by_test_id("live-tabs")
        shown = (tabs or self.tabs) > 1
        await (expect(strip).to_be_visible() if shown else expect(strip).to_be_hidden())
        await click_picture(page, x, y, self.width)


async def type_on_picture(page: Page, text: str) -> None:
    """The person types ``text`` on the live view; all of it reached the run's tab (the
    live view sends what was typed while an input is on its way as one more, so the
    answers are counted by their characters, and none is left to come)."""
    answered = len(await page.evaluate(_RESULTS))
    await page.locator("#live").focus()
    await page.keyboard.type(text)
    typed = r"(r) => r.ok && Number((/^typed (\d+) characters/.exec(r.done) || [0, 0])[1])"
    await page.wait_for_function(
        f"() => ({_RESULTS})().slice({answered}).map({typed}).reduce((a, b) => a + b, 0)"
        f" >= {len(text)}"
    )


async def paused_on_the_form(
    page: Page, server: Server, browser: BrowserSession, base: str
) -> tuple[Places, Places, Locator]:
    """A run of the person's on the app's customer form at ``base``, paused for them with
    its picture drawn: where the form's and its "+" popup's elements are, and the live
    view's address."""
    form = await Places.of(browser, f"{base}/customer", "Name:", "+", "Save")
    popup = await Places.of(browser, f"{base}/customer", "Name:", "Save", popup_of="+")
    await log_in(page, server)
    await start_run(page, f"{base}/customer", "click Nowhere at all")
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    await live_picture(page)
    where = page.locator("#live-url")
    await expect(where).to_have_text(f"{base}/customer")
    return form, popup, where


async def saves_the_customer(
    page: Page, form: Places, where: Locator, base: str, app: PopupApp, *, tabs: int = 1
) -> Locator:
    """Back on the form, the person saves the customer with the new supplier and ends
    the pause (``tabs``: the run's tabs open then): the run's steps, those of the popup
    and the moves there and back with them."""
    await form.click(page, "Save", tabs=tabs)
    await expect(where).to_have_text(f"{base}/done", timeout=LIVE_MS)
    assert app.customers == [{"name": "Zeta", "supplier": "2"}]
    await page.locator("#reply-text").fill("skip")
    await page.get_by_role("button", name="Send", exact=True).click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    steps = page.locator("#steps > li")
    await expect(steps.locator(".step-action")).to_have_text(
        ["navigate", "fill", "click", "go to", "fill", "click", "go to", "click"]
    )
    return steps


async def saved_as(page: Page, name: str) -> str:
    """The finished run saved as the scenario ``name``: its page's address."""
    await page.get_by_role("link", name="Save as scenario…").click()
    await page.get_by_label("Name", exact=True).fill(name)
    await page.get_by_role("button", name="Save as scenario").click()
    await expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    return page.url


async def replayed(page: Page, scenario_url: str, base: str) -> str:
    """Replay the scenario on ``base``: "succeeded", or "failed: " and why."""
    await page.goto(scenario_url)
    await page.locator("#replay").get_by_label("Base URL").fill(base)
    await page.get_by_role("button", name="Replay").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    status = page.locator("#status")
    await expect(status).to_have_text(re.compile("succeeded|failed"), timeout=LIVE_MS)
    said = await status.text_content() or ""
    if said == "failed":
        said += ": " + (await page.locator("#status-reason").text_content() or "")
    return said


async def test_a_person_records_the_plus_popup_on_the_live_view_and_its_replay_does_it(
    page: Page, server: Server, browser: BrowserSession, tmp_path: Path
) -> None:
    app = PopupApp()
    with serve(app) as base:
        form, popup, where = await paused_on_the_form(page, server, browser, base)

        await form.click(page, "Name:")
        await type_on_picture(page, "Zeta")
        await form.click(page, "+")
        # The live view shows the popup: the person works in it there.
        await expect(where).to_have_text(f"{base}/supplier", timeout=LIVE_MS)
        await popup.click(page, "Name:")
        await type_on_picture(page, "New Co")
        await save(page, "run-popup-recording.png")
        await popup.click(page, "Save")
        # Its Save closed it: the opener again, its select set to the new supplier.
        await expect(where).to_have_text(f"{base}/customer", timeout=LIVE_MS)
        steps = await saves_the_customer(page, form, where, base, app)
        await expect(steps.nth(4).locator(".step-by")).to_have_text("by the person")
        scenario_url = await saved_as(page, "Zeta with a new supplier")
        listed = page.get_by_test_id("scenario-steps").locator("li.sstep")
        await expect(listed.nth(3)).to_contain_text("popup")
        await expect(listed.nth(6)).to_contain_text("closed itself")
        code = await exported_pytest(page)

    again = PopupApp()
    with serve(again) as base:
        said = await replayed(page, scenario_url, base)
        assert said == "succeeded", said
        assert again.customers == [{"name": "Zeta", "supplier": "2"}]
        status, out = await run_exported(code, tmp_path, base, timeout_ms=5_000)
        assert status == 0, out
        assert again.customers[-1] == {"name": "Zeta", "supplier": "3"}

    refusing = PopupApp(save_fails=True)
    with serve(refusing) as base:
        said = await replayed(page, scenario_url, base)
        assert said.startswith("failed"), said
        assert "saying 'A supplier of that name exists already.'" in said, said
        status, out = await run_exported(code, tmp_path, base, timeout_ms=2_000)
        assert status != 0 and "saying 'A supplier of that name exists already.'" in out, out
    assert refusing.customers == []
