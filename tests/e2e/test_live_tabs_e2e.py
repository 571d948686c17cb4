"""A person who took over a run works in a "+" popup that stays open after its Save, then
goes back to the form that opened it with the tab strip above the live view (before, the
live view showed the popup for good: the opener could not be reached again), finishes the
form there, and the scenario saved from the run replays green: the switch was recorded as
the move back to the opener."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Page, expect

from automation import BrowserSession
from tests.e2e.test_popup_recording_e2e import (
    paused_on_the_form,
    replayed,
    saved_as,
    saves_the_customer,
    type_on_picture,
)
from tests.e2e.ui import LIVE_MS, Server, save
from tests.popupapp import PopupApp, serve

pytestmark = pytest.mark.e2e


async def test_a_person_goes_back_from_a_popup_that_stays_open_with_the_tab_strip(
    page: Page, server: Server, browser: BrowserSession
) -> None:
    app = PopupApp(autoclose=False)
    with serve(app) as base:
        form, popup, where = await paused_on_the_form(page, server, browser, base)
        strip = page.get_by_role("navigation", name="The run's tabs")
        await expect(strip).to_be_hidden()  # one tab: nothing to choose between

        await form.click(page, "Name:")
        await type_on_picture(page, "Zeta")
        await form.click(page, "+")
        await expect(where).to_have_text(f"{base}/supplier", timeout=LIVE_MS)
        tabs = strip.get_by_role("button")
        await expect(tabs).to_have_count(2, timeout=LIVE_MS)
        opener = strip.get_by_role("button", name="Add customer", exact=True)
        added = strip.get_by_role("button", name="Add supplier", exact=True)
        await expect(added).to_have_attribute("aria-current", "true")
        await expect(opener).not_to_have_attribute("aria-current", "true")
        await expect(added).to_have_attribute("title", re.compile("^Opened from Add customer"))
        await popup.click(page, "Name:")
        await type_on_picture(page, "New Co")
        await popup.click(page, "Save")
        # Its Save answers in the popup, which stays open: still the live view's tab.
        done = strip.get_by_role("button", name="Supplier added", exact=True)
        await expect(done).to_have_attribute("aria-current", "true", timeout=LIVE_MS)
        await expect(where).to_have_text(f"{base}/supplier")

        await opener.click()
        await expect(opener).to_have_attribute("aria-current", "true", timeout=LIVE_MS)
        await expect(where).to_have_text(f"{base}/customer", timeout=LIVE_MS)
        await save(page, "run-tab-strip.png")
        await saves_the_customer(page, form, where, base, app, tabs=2)  # the popup still open
        await expect(strip).to_be_hidden()
        scenario_url = await saved_as(page, "Zeta, back from an open popup")

    again = PopupApp(autoclose=False)
    with serve(again) as base:
        said = await replayed(page, scenario_url, base)
        assert said == "succeeded", said
        assert again.customers == [{"name": "Zeta", "supplier": "2"}]
