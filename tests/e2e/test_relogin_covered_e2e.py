"""A person's afternoon with a back office whose new release puts a cookie wall over every
page: a login scenario and an entry that signs in again with it are imported, the wall's
handler is written on the entry's page, and the entry, its session ended, is replayed
and exported.  The replay's sign-in was made without the entry's handlers, and the
export's ran inside Playwright's handler of the sign-in page, where no other runs: both
failed on the covered "Sign in"."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.automation.recording.test_relogin_covered import Office, office_app, saves
from tests.e2e.journeys import exported_pytest, import_scenario
from tests.e2e.journeys import scenario_step as _step
from tests.e2e.ui import LIVE_MS, SHOP_PASSWORD, Server, log_in
from tests.exported import run_exported


@pytest.fixture
def walled() -> Iterator[Office]:
    with office_app() as office:
        office.password = SHOP_PASSWORD  # the secret PASSWORD the dashboard's runs type
        yield office


async def test_a_handler_written_on_the_page_clears_the_wall_as_it_signs_in_again(
    page: Page, server: Server, walled: Office, tmp_path: Path
) -> None:
    url = walled.url
    sign_in = {"format": "tabwright.scenario", "version": 1, "name": "Walled sign-in",
               "base_url": url + "/", "steps": [
                   _step("navigate", {"url": url + "/login"}),
                   _step("fill", {"value": "ada"}, "textbox", "User"),
                   _step("fill", {"value": "${SECRET:PASSWORD}"}, "textbox", "Password"),
                   _step("click", {}, "button", "Sign in")]}  # fmt: skip
    entry = {"format": "tabwright.scenario", "version": 1, "name": "Walled entry",
             "base_url": url + "/", "login_scenario": "Walled sign-in",
             "steps": [_step("navigate", {"url": url + "/new"}), *saves("Ann")]}  # fmt: skip
    await log_in(page, server)
    await import_scenario(page, server, tmp_path / "sign-in.json", sign_in)
    scenario_url = await import_scenario(page, server, tmp_path / "entry.json", entry)

    await page.get_by_text("Add a handler").click()
    form = page.locator("#add-handler")
    await form.get_by_label("Handler name").fill("Cookies")
    await form.get_by_label("and name").fill("Cookies")
    await form.get_by_label("named").fill("Accept all")
    await form.get_by_role("button", name="Add handler").click()
    await expect(page.locator("[data-handler=Cookies]")).to_be_visible()

    walled.wall = True  # the new release; the run starts with no session
    await page.goto(scenario_url)
    await page.locator("#replay").get_by_role("button", name="Replay").click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    assert walled.users == ["ada"] and walled.saved == [("Ann", "")]

    await page.goto(scenario_url)
    code = await exported_pytest(page)
    await asyncio.to_thread((tmp_path / "export").mkdir)
    env = {"TABWRIGHT_SECRET_PASSWORD": SHOP_PASSWORD}
    status, out = await run_exported(code, tmp_path / "export", url, env, timeout_ms=10_000)
    assert status == 0, out[-3000:]
    assert walled.users == ["ada", "ada"] and walled.saved == [("Ann", "")] * 2
