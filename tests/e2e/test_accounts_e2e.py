"""Two people on one dashboard: what one runs and keeps, the other neither sees nor opens;
and the run history's filters, as a person uses them."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect

from tests.e2e.ui import (
    LIVE_MS,
    OTHER_PASSWORD,
    OTHER_USERNAME,
    UI_MS,
    Server,
    log_in,
    save,
    save_as_scenario,
    start_run,
)
from tests.tasks import FORM_TASK

pytestmark = pytest.mark.e2e


async def filter_runs(page: Page, **values: str) -> None:
    """Fill the run history's filters by their labels and apply them."""
    filters = page.locator("#run-filters")
    for label, value in values.items():
        field = filters.get_by_label(label, exact=True)
        if await field.evaluate("(el) => el.tagName") == "SELECT":
            await field.select_option(value)
        else:
            await field.fill(value)
    await filters.get_by_role("button", name="Filter").click()


async def test_one_persons_runs_and_scenarios_are_theirs_alone(
    page: Page, server: Server, ui_browser: Browser
) -> None:
    await log_in(page, server)
    run_id = await start_run(page, f"{server.base_url}/demo/form.html", FORM_TASK)
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    run_url = page.url
    await save_as_scenario(page, "Ada signs up")
    await expect(page.get_by_role("heading", name="Ada signs up")).to_be_visible()
    scenario_url = page.url

    # The history, filtered: the run is found by its status and day, and not outside them.
    await page.get_by_role("link", name="Conversations", exact=True).click()
    table = page.get_by_test_id("run-table")
    run_link = table.get_by_role("link", name=str(run_id), exact=True)
    await filter_runs(page, Status="succeeded", Kind="agent")
    await expect(page).to_have_url(re.compile(r"/\?.*status=succeeded&kind=agent"))
    await expect(run_link).to_be_visible()
    row = table.locator("tbody tr").filter(
        has=page.get_by_role("link", name=str(run_id), exact=True)
    )
    await expect(row.locator(".badge")).to_have_text("succeeded")
    await expect(row).to_contain_text("conversation")
    await save(page, "runs-history-filtered.png")

    await filter_runs(page, Status="failed")
    await expect(page.get_by_test_id("no-runs")).to_have_text("Nothing matches these filters.")
    await filter_runs(page, Status="succeeded", From="2001-01-01", To="2001-12-31")
    await expect(page.get_by_test_id("no-runs")).to_be_visible()
    await expect(table).to_have_count(0)

    # A bad value typed into the address bar is explained on the page.
    await page.goto(f"{server.base_url}/?status=exploded&created_from=someday")
    await expect(page.locator("#run-filters .errorlist")).to_have_count(2)
    await expect(run_link).to_be_visible()  # the list itself is still there

    # Another person, in a browser of their own, sees none of it.
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(UI_MS)
    try:
        other = await context.new_page()
        await log_in(other, server, OTHER_USERNAME, OTHER_PASSWORD)
        await expect(other.get_by_test_id("no-runs")).to_have_text(
            "No conversations yet: write the first message above."
        )
        await expect(other.get_by_test_id("run-table")).to_have_count(0)
        await expect(other.locator("#run-filters").get_by_label("Owner")).to_have_count(0)
        await save(other, "second-user-empty.png")
        await other.get_by_role("link", name="Scenarios", exact=True).click()
        await expect(other.get_by_text("No scenarios yet.")).to_be_visible()
        await expect(other.get_by_text("Ada signs up")).to_have_count(0)
        for url in (run_url, scenario_url, f"{scenario_url}export.json"):
            response = await other.goto(url)
            assert response is not None and response.status == 404, url
    finally:
        await context.close()
