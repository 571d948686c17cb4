"""The model adds a customer whose supplier it creates in the "+" popup, a popup whose form
is slow to come: the click's outcome tells the model the tab it opened (before, the
outcome said nothing of it, and a select of it right after could find no such tab), the
run page shows the same words, the run goes there and back, and the scenario saved from
it replays green on a fresh app."""

from __future__ import annotations

import json

import pytest
from playwright.async_api import Page, expect

from automation import BrowserSession
from tests.e2e.test_popup_recording_e2e import replayed, saved_as
from tests.e2e.ui import LIVE_MS, Server, log_in, save, start_run
from tests.popupapp import PopupApp, serve
from tests.refs import fresh_snapshot, ref_of

pytestmark = pytest.mark.e2e


def tag(action: dict[str, object]) -> str:
    return "<action>" + json.dumps(action) + "</action>"


async def test_the_model_is_told_of_the_popup_its_click_opened_and_the_run_replays(
    page: Page, server: Server, browser: BrowserSession
) -> None:
    app = PopupApp(popup_ms=1_000)  # its form comes a second after the click
    with serve(app) as base:
        form = await fresh_snapshot(browser, f"{base}/customer")  # refs as the run's tab
        popup = await fresh_snapshot(browser, f"{base}/supplier")  # and the popup's
        server.llm.script(
            "The name, then a new supplier.\n"
            + tag({"action": "fill", "ref": ref_of(form, "textbox", "Name:"), "value": "Zeta"})
            + tag({"action": "click", "ref": ref_of(form, "link", "+")}),
            "To the popup.\n" + tag({"action": "tabs", "op": "select", "index": 1}),
            "The supplier.\n"
            + tag({"action": "fill", "ref": ref_of(popup, "textbox", "Name:"), "value": "New Co"})
            + tag({"action": "click", "ref": ref_of(popup, "button", "Save")}),
            "Save the customer.\n"
            + tag({"action": "click", "ref": ref_of(form, "button", "Save")}),
            tag({"action": "done", "summary": "Zeta added with New Co"}),
        )
        await log_in(page, server)
        await start_run(
            page,
            f"{base}/customer",
            "Add customer Zeta with a new supplier New Co",
            planner="openai",
        )
        await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        assert app.customers == [{"name": "Zeta", "supplier": "2"}]

        told = f"it opened tab 1 ({base}/supplier); this one stays current"
        asked = json.dumps(server.llm.requests[1])  # the round after the click
        assert told in asked, asked[-2_000:]
        shown = page.locator("#chat li").filter(has_text=told)
        await expect(shown).to_have_count(1)
        await shown.scroll_into_view_if_needed()
        await save(page, "run-agent-popup.png")

        scenario_url = await saved_as(page, "Customer with a new supplier")
    again = PopupApp(popup_ms=1_000)
    with serve(again) as base2:
        assert await replayed(page, scenario_url, base2) == "succeeded"
    assert again.customers == [{"name": "Zeta", "supplier": "2"}]
