"""A person puts a scenario to work on its page: a batch from a CSV file, followed live
to the end with its rows' results and downloaded; then a schedule for weekday mornings in
their time zone, told in words with its next times.  A batch stopped while its rows wait
for a person shows them stopped as they end."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.dashboard.signup import sign_up
from tests.e2e.ui import LIVE_MS, Server, log_in, run_batch, save

pytestmark = pytest.mark.e2e

PEOPLE = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov"]


async def test_a_csv_batch_runs_to_the_end_and_a_schedule_reads_in_words(
    page: Page, server: Server, tmp_path: Path
) -> None:
    await log_in(page, server)
    scenario_url = await import_sign_up(page, server, tmp_path)

    rows = tmp_path / "people.csv"
    rows.write_text("name,greet\n" + "".join(f'"{p}","{p}"\n' for p in PEOPLE))
    await run_batch(page, rows, at_once=2)
    counts = page.get_by_test_id("batch-counts")
    await expect(counts).to_contain_text("5 of 5 done")
    await expect(counts).to_contain_text("5 passed")
    table = page.locator("#batch-rows tr")
    await expect(table).to_have_count(5)
    await expect(table.locator(".badge")).to_have_text(["passed"] * 5)
    await expect(table.nth(1)).to_contain_text("Grace Hopper")
    await expect(page.locator("#batch-retry")).to_be_hidden()  # no row to retry
    await save(page, "batch-done.png")

    async with page.expect_download() as download_info:
        await page.get_by_role("link", name="Download results (CSV)").click()
    saved = tmp_path / "results.csv"
    await (await download_info.value).save_as(saved)
    lines = list(csv.reader(io.StringIO(saved.read_text())))
    assert [line[2] for line in lines[1:]] == PEOPLE  # the name column, in row order
    assert [line[4] for line in lines[1:]] == ["passed"] * 5

    await page.goto(scenario_url)
    health = page.get_by_test_id("health").locator(".health-cell")
    await expect(health).to_have_count(5)  # each a replay that passed (some after healing)
    for cell in await health.all():
        assert await cell.get_attribute("class") in ("health-cell passed", "health-cell healed")
    await page.get_by_text("Schedule it").click()
    form = page.get_by_test_id("schedule-form")
    await form.get_by_label("When (cron)").fill("0 7 * * 1-5")
    await form.locator("input[name=timezone]").fill("Europe/Paris")
    await form.get_by_label("name", exact=True).fill("Ada Lovelace")
    await form.get_by_label("greet", exact=True).fill("Ada Lovelace")
    await form.get_by_role("button", name="Schedule").click()
    schedule = page.get_by_test_id("schedule")
    await expect(schedule).to_contain_text("At 07:00, Monday through Friday")
    await expect(schedule).to_contain_text("Europe/Paris")
    await expect(schedule.get_by_test_id("upcoming")).to_contain_text("07:00")
    await save(page, "scenario-schedule.png")


async def test_a_stopped_batch_shows_its_rows_stopped_without_a_reload(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """Stop ends the replays waiting for a person a moment after the page came back: the
    page follows them until they have ended, and offers to retry them."""
    await log_in(page, server)
    await import_sign_up(page, server, tmp_path)
    rows = tmp_path / "people.csv"
    # The list page has no Name field: each replay pauses for a person.
    rows.write_text("name,greet,page\nAda,Ada,list.html\nGrace,Grace,list.html\n")
    form = page.get_by_test_id("batch-form")
    await form.get_by_label("Rows (.csv or .json)").set_input_files(rows)
    await form.get_by_label("Rows at once").fill("2")
    await form.get_by_role("button", name="Run the batch").click()
    badges = page.locator("#batch-rows tr .badge")
    await expect(badges).to_have_text(["needs a person"] * 2, timeout=4 * LIVE_MS)
    await expect(page.locator("#batch-retry")).to_be_hidden()

    await page.get_by_role("button", name="Stop").click()
    await expect(page.get_by_test_id("batch-status")).to_have_text("stopped")
    await page.evaluate("() => { window.__sameLoad = true; }")
    await expect(badges).to_have_text(["stopped"] * 2, timeout=LIVE_MS)
    assert await page.evaluate("() => window.__sameLoad === true")  # never reloaded
    await expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    await expect(page.locator("#batch-retry")).to_be_visible()
    await save(page, "batch-stopped.png")


async def import_sign_up(page: Page, server: Server, tmp_path: Path) -> str:
    """Import the demo form's sign-up scenario on the scenarios page; its page's URL."""
    scenario_file = tmp_path / "sign-up.json"
    scenario_file.write_text(json.dumps(sign_up(server.base_url)))
    await page.goto(f"{server.base_url}/scenarios/")
    await page.get_by_label("Scenario file (.json)").set_input_files(scenario_file)
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("heading", name="Sign up people", exact=True)).to_be_visible()
    return page.url
