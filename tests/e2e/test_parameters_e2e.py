"""A typed value put to work, as a person does it in the dashboard: a run adds two todos and
ticks both (the run page says which box each tick was); the save page proposes a check of
each tick; on the scenario page "Buy milk" becomes the parameter ``item``, and the page
says which later steps and checks follow it; a batch of five rows, each another todo,
passes whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from automation import BrowserSession, Budget
from automation.actions import execute
from tests.e2e.ui import LIVE_MS, Server, log_in, run_batch, save, start_run
from tests.refs import ref_of

pytestmark = pytest.mark.e2e

ITEMS = ["Buy milk", "Call mom", "Pay the rent", "Read a book", "Water the plants"]
FIELD = "What needs to be done?"


def tag(action: dict[str, object]) -> str:
    return "<action>" + json.dumps(action) + "</action>"


async def refs_of_the_run(browser: BrowserSession, url: str) -> tuple[str, str, str]:
    """The refs the run's tab gives the field and the two boxes: the same page, the same
    actions, a snapshot where the run takes one (before each of its rounds)."""
    probe = await browser.new_tab()
    try:
        await probe.navigate(url)
        field = ref_of(await probe.snapshot(), "textbox", FIELD)
        for title in ("Buy milk", "Walk the dog"):
            await execute(probe, "fill", {"ref": field, "value": title, "submit": True},
                          budget=Budget(5_000))  # fmt: skip
            snapshot = await probe.snapshot()
        return field, ref_of(snapshot, "checkbox", "", 0), ref_of(snapshot, "checkbox", "", 1)
    finally:
        await probe.close()


async def test_a_typed_value_becomes_a_parameter_that_a_batch_of_rows_fills_in(
    page: Page, server: Server, browser: BrowserSession, fixture_url: str, tmp_path: Path
) -> None:
    todos = f"{fixture_url}/crossimpl/classic/index.html"
    field, milk, dog = await refs_of_the_run(browser, todos)
    server.llm.script(
        tag({"action": "fill", "ref": field, "value": "Buy milk", "submit": True}),
        tag({"action": "fill", "ref": field, "value": "Walk the dog", "submit": True}),
        tag({"action": "check", "ref": milk}),
        tag({"action": "check", "ref": dog}),
        tag({"action": "done", "summary": "Added two todos and ticked both."}),
    )
    await log_in(page, server)
    await start_run(page, todos, "Add two todos and tick both", planner="openai")
    # Five rounds of the model, then the checks of the final page.
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=3 * LIVE_MS)
    steps = page.locator("#steps > li.step")
    # A tick says which box: its row, since the box has no name.  "check" is an assertion.
    await expect(steps.locator(".step-action")).to_have_text(
        ["navigate", "fill", "fill", "tick", "tick"]
    )
    await expect(steps.nth(3).locator(".step-target")).to_have_text(
        'the checkbox in row "Buy milk"'
    )
    await expect(steps.nth(4).locator(".step-target")).to_have_text(
        'the checkbox in row "Walk the dog"'
    )
    ticks = page.locator("#chat .msg.agent .chip").filter(has_text=re.compile(r"^tick e\d+$"))
    await expect(ticks).to_have_count(2)  # the model's own words, told the same way
    await save(page, "parameters-run.png")

    # The save page proposes a check of each tick, ticked to begin with.
    await page.get_by_role("link", name="Save as scenario…").click()
    proposed = page.get_by_test_id("proposed-checks")
    for row in ("Buy milk", "Walk the dog"):
        box = proposed.get_by_label(f"the checkbox in row '{row}' is checked")
        await expect(box).to_be_checked()
    await expect(page.get_by_test_id("kept-steps")).to_contain_text(
        "tick the checkbox in row 'Walk the dog'"
    )
    await save(page, "parameters-save.png")
    await page.get_by_label("Name", exact=True).fill("Todos")
    await page.get_by_role("button", name="Save as scenario").click()
    await expect(page.get_by_role("heading", name="Todos", exact=True)).to_be_visible()
    scenario_url = page.url

    # "Buy milk" becomes the parameter item: the steps and checks that used the value
    # follow it, and the page says which.
    typed = page.locator("#step-1")
    await expect(typed.locator(".sstep-args")).to_contain_text("Buy milk")
    await typed.get_by_label("Parameter name for step 1").fill("item")
    await typed.get_by_role("button", name="Make parameter").click()
    told = page.get_by_role("status")
    await expect(told).to_contain_text("Step 1 takes its value from ${item} now")
    await expect(told).to_contain_text("step 3: tick the checkbox in row '${item}'")
    await expect(told).to_contain_text("check: the checkbox in row '${item}' is checked")
    await expect(told).to_contain_text("check: 1 row(s) show '${item}'")
    await expect(told).not_to_contain_text("Walk the dog")
    actions = page.get_by_test_id("scenario-steps").locator(".step-action")
    await expect(actions.nth(3)).to_have_text("tick")
    target = page.locator("#step-3 .sstep-target")
    await expect(target).to_have_text("the checkbox in row “${item}”")
    await save(page, "parameters-scenario.png")

    # A batch of five todos: every row adds its own, ticks it and checks it.
    rows = tmp_path / "todos.csv"
    rows.write_text("item\n" + "".join(f"{item}\n" for item in ITEMS))
    await run_batch(page, rows, at_once=2)
    await expect(page.get_by_test_id("batch-counts")).to_contain_text("5 passed")
    table = page.locator("#batch-rows tr")
    await expect(table.locator(".badge")).to_have_text(["passed"] * 5)
    await expect(table.nth(3)).to_contain_text("Read a book")
    await save(page, "parameters-batch.png")
    await page.goto(scenario_url)
    await expect(page.locator("#step-3 .sstep-target")).to_have_text(
        re.compile(r"the checkbox in row “\$\{item\}”")
    )  # a row's replay wrote no value of its own into the identity
