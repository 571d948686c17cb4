"""The dashboard as a person uses it: a real daphne, a real Chromium driving the UI, and the
runner's own Chromium driving the demo pages that the same daphne serves; and as staff
read it in the admin, where what it recorded is read-only."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import closing

import pytest
from playwright.async_api import Page, expect

from automation import BrowserSession
from automation.secrets import MASK
from tests.daphne import api_token
from tests.daphne import log_in as daphne_log_in
from tests.e2e.journeys import script, wait_until
from tests.e2e.ui import (
    ACT_JS,
    LIVE_MS,
    OTHER_PASSWORD,
    OTHER_USERNAME,
    PASSWORD,
    SHOP_PASSWORD,
    USERNAME,
    Server,
    initial_step_count,
    log_in,
    save,
    save_as_scenario,
    socket_step_count,
    start_run,
)
from tests.refs import fresh_snapshot, ref_of
from tests.tasks import FORM_TASK

pytestmark = pytest.mark.e2e


async def test_a_run_is_watched_live_to_success(page: Page, server: Server) -> None:
    await log_in(page, server)
    await save(page, "run-list-empty.png")
    run_id = await start_run(page, f"{server.base_url}/demo/form.html", FORM_TASK)

    steps = page.locator("#steps > li")
    await expect(steps).to_have_count(5, timeout=LIVE_MS)
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(steps.locator(".step-action")).to_have_text(
        ["navigate", "type", "type", "click", "wait_for"]
    )
    await expect(steps.nth(1).locator(".step-target")).to_have_text('textbox "Name"')
    await expect(steps.nth(1).locator(".step-selector")).to_have_text("#name")
    # The page was drawn before the run got going (daphne launches its Chromium first);
    # the rest of the steps came over the socket.
    assert await initial_step_count(page) + await socket_step_count(page) == 5
    assert await socket_step_count(page) >= 1
    await expect(page.locator("#chat")).to_contain_text("All 4 steps done")
    await expect(page.locator("#controls")).to_be_hidden()

    shot = page.locator("#shot")
    await expect(shot).to_be_visible()
    await expect(shot).to_have_attribute("src", f"/runs/{run_id}/screenshots/4.jpg")
    await page.wait_for_function(
        "() => { const i = document.getElementById('shot');"
        " return i.complete && i.naturalWidth > 0; }"
    )
    thumbs = page.locator("#steps img.thumb")
    await expect(thumbs).to_have_count(5)
    widths = await thumbs.evaluate_all("(imgs) => imgs.map((i) => i.complete && i.naturalWidth)")
    assert all(w and w > 0 for w in widths), widths
    await save(page, "run-form-succeeded.png")

    await page.get_by_role("link", name="Conversations", exact=True).click()
    row = (
        page.get_by_test_id("run-table")
        .locator("tbody tr")
        .filter(has=page.get_by_role("link", name=str(run_id), exact=True))
    )
    await expect(row.locator(".badge")).to_have_text("succeeded")
    await expect(row.locator("td").nth(3)).to_have_text("5")
    await save(page, "run-list.png")


async def test_a_macro_shows_as_one_action_with_its_steps(
    page: Page, server: Server, browser: BrowserSession
) -> None:
    form = f"{server.base_url}/demo/form.html"
    snap = await fresh_snapshot(browser, form)  # refs as the run's tab will number them
    steps = [
        {"type": "fill", "ref": ref_of(snap, "textbox", "Name"), "value": "Ada"},
        {"type": "fill", "ref": ref_of(snap, "textbox", "Email"), "value": "ada@example.org"},
        {"type": "click", "ref": ref_of(snap, "button", "Sign up")},
        {"type": "wait_for", "text": "Welcome, Ada!"},
        {"type": "click", "ref": "e999"},
        {"type": "read_page"},
    ]
    server.llm.script(
        "<action>" + json.dumps({"action": "steps", "steps": steps}) + "</action>",
        '<action>{"action": "done", "summary": "signed up"}</action>',
    )
    await log_in(page, server)
    await start_run(page, form, "Sign up as Ada", planner="openai")
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)

    macro = page.locator("#chat .msg.action").filter(has_text="steps (6)")
    await expect(macro).to_contain_text("step 4 (click) failed")
    rows = macro.locator(".macro-step")
    await expect(rows).to_have_count(6)
    await expect(rows.nth(0)).to_have_text(re.compile(r'^fill textbox "Name" = "Ada" — \d+ ms$'))
    await expect(rows.nth(4)).to_contain_text("ref_not_found")
    await expect(rows.nth(5)).to_have_text("read_page — skipped")
    await expect(macro.locator(".macro-step.failed")).to_have_count(1)
    # The scenario keeps each step that ran, not the macro.
    await expect(page.locator("#steps > li .step-action")).to_have_text(
        ["navigate", "fill", "fill", "click", "wait_for", "click"]
    )
    await expect(page.locator("#steps > li").nth(3).locator(".step-target")).to_have_text(
        'button "Sign up"'
    )
    await save(page, "run-macro.png")


async def test_a_run_saved_as_a_scenario_replays_on_the_next_release(
    page: Page, server: Server, fixture_url: str
) -> None:
    await log_in(page, server)
    task = f"type ada@example.org into Email\ntype {SHOP_PASSWORD} into Password\nclick Sign in"
    await start_run(page, f"{fixture_url}/replay/v1/login.html", task + "\nwait for Signed in")
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await save_as_scenario(page, "Sign in to the shop", screenshot="run-save.png")
    await expect(page.get_by_role("heading", name="Sign in to the shop")).to_be_visible()
    scenario_steps = page.get_by_test_id("scenario-steps").locator("li")
    await expect(scenario_steps).to_have_count(7)  # and the two checks the save page ticked
    await expect(page.get_by_test_id("checks")).to_contain_text("the page shows no error")
    await expect(page.get_by_test_id("checks")).to_contain_text("text “ada@example.org” is visible")
    await expect(scenario_steps.nth(2)).to_contain_text("${SECRET:PASSWORD}")
    await expect(page.locator("body")).not_to_contain_text(SHOP_PASSWORD)
    base = page.locator("#replay").get_by_label("Base URL")
    await expect(base).to_have_value(f"{fixture_url}/replay/v1")
    await base.fill(f"{fixture_url}/replay/v2")  # ids, wrappers and words changed there
    await page.get_by_role("button", name="Replay").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    rows = page.locator("#steps > li")
    await expect(rows).to_have_count(7)
    await expect(rows.nth(5).locator(".step-target")).to_have_text("the page shows no error")
    await expect(rows.nth(6).locator(".step-action")).to_have_text("expect")
    await expect(rows.nth(6).locator(".step-target")).to_have_text(
        'text "ada@example.org" is visible'
    )
    await expect(rows.nth(1).locator(".replay-note")).to_contain_text(
        "healed: id: 'email' -> 'login-email'"
    )
    await expect(rows.nth(3).locator(".replay-note")).to_contain_text("Sign in now")
    await expect(page.locator("body")).not_to_contain_text(SHOP_PASSWORD)
    await save(page, "scenario-replay.png")
    await page.get_by_role("link", name="Scenario", exact=True).click()
    await expect(page.get_by_role("heading", name="Healed")).to_be_visible()
    await save(page, "scenario-detail.png")


async def test_a_password_in_the_task_is_nowhere_in_the_scenario_saved_with_the_suggested_name(
    page: Page, server: Server, browser: BrowserSession, fixture_url: str
) -> None:
    """The person's words name the password the model then types: the save page shows
    the task and the suggested name with it masked, refuses a name that spells it, and
    the scenario saved with the suggested name, its page and its exports hold none of
    it."""
    login = f"{fixture_url}/replay/v1/login.html"
    snap = await fresh_snapshot(browser, login)  # refs as the run's tab will number them
    actions = [
        {"action": "fill", "ref": ref_of(snap, "textbox", "Email"), "value": "ada@example.org"},
        {"action": "fill", "ref": ref_of(snap, "textbox", "Password"), "value": SHOP_PASSWORD},
        {"action": "click", "ref": ref_of(snap, "button", "Sign in")},
    ]
    server.llm.script(
        "".join(f"<action>{json.dumps(action)}</action>" for action in actions),
        '<action>{"action": "done", "summary": "signed in"}</action>',
    )
    await log_in(page, server)
    task = f"Sign in as ada with password {SHOP_PASSWORD} and stop there"
    await start_run(page, login, task, planner="openai")
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)

    await page.get_by_role("link", name="Save as scenario…").click()
    suggested = f"Sign in as ada with password {MASK} and stop there"
    await expect(
        page.get_by_role("heading", name=f"Save “{suggested}” as a scenario")
    ).to_be_visible()
    name = page.get_by_label("Name", exact=True)
    await expect(name).to_have_value(suggested)
    await expect(page.locator(".task")).to_contain_text(suggested)
    await expect(page.locator("body")).not_to_contain_text(SHOP_PASSWORD)
    await name.fill(f"Sign in with {SHOP_PASSWORD}")
    await page.get_by_role("button", name="Save as scenario").click()
    await expect(page.locator(".errorlist")).to_contain_text(
        "The name holds a password the run typed"
    )
    await name.fill(suggested)
    await page.get_by_role("button", name="Save as scenario").click()
    await expect(page.get_by_role("heading", name=suggested, exact=True)).to_be_visible()
    await expect(page.get_by_test_id("scenario-steps")).to_contain_text("${SECRET:PASSWORD}")
    await expect(page.locator("body")).not_to_contain_text(SHOP_PASSWORD)
    for export in ("Export JSON", "Export pytest"):
        async with page.expect_download() as download_info:
            await page.get_by_role("link", name=export).click()
        path = await (await download_info.value).path()
        text = await asyncio.to_thread(path.read_text)
        assert SHOP_PASSWORD not in text and MASK in text, export
    await page.get_by_role("link", name="Scenarios", exact=True).click()
    await expect(page.get_by_test_id("scenario-table")).to_contain_text(suggested)
    await expect(page.locator("body")).not_to_contain_text(SHOP_PASSWORD)


async def test_a_paused_run_survives_a_reload_and_resumes_on_reply(
    page: Page, server: Server
) -> None:
    await log_in(page, server)
    await start_run(
        page, f"{server.base_url}/demo/list.html", "click Delete\nwait for Order #1003 deleted"
    )
    status = page.locator("#status")
    steps = page.locator("#steps > li")
    await expect(status).to_have_text("paused", timeout=LIVE_MS)
    await expect(steps).to_have_count(1)
    await expect(page.locator("#status-reason")).to_contain_text("matches 5 elements")

    await page.reload()
    await expect(status).to_have_text("paused")
    await expect(steps).to_have_count(1)
    await expect(steps.locator(".step-action")).to_have_text(["navigate"])
    await expect(page.locator("body")).to_have_attribute("data-live", "1")  # socket is open
    reply_box = page.locator("#reply-text")
    await expect(reply_box).to_be_visible()
    await expect(page.locator("#chat")).to_contain_text("matches 5 elements")
    await save(page, "run-paused-after-reload.png")

    await reply_box.fill("click Delete #3")
    await page.get_by_role("button", name="Send", exact=True).click()
    await expect(status).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(steps).to_have_count(3)
    await expect(steps.locator(".step-action")).to_have_text(["navigate", "click", "wait_for"])
    await expect(steps.nth(1).locator(".step-selector")).to_contain_text('"order-1003"')
    # The first message, then the reply.
    await expect(page.locator("#chat .msg.person .body")).to_have_text(
        [re.compile(r"^click Delete\s+wait for"), "click Delete #3"]
    )
    await expect(page.locator("#reply-label")).to_have_text("Continue the conversation")
    assert await socket_step_count(page) == 2  # both new steps arrived live, no reload
    await save(page, "run-resumed-succeeded.png")


async def test_an_http_client_that_hangs_up_stops_its_script(page: Page, server: Server) -> None:
    await log_in(page, server)
    run_id = await start_run(
        page, f"{server.base_url}/demo/list.html", "click Delete\nwait for Order #1003 deleted"
    )
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    spin = {"action": "evaluate", "args": {"expression": "while (true) {}"}, "timeout_ms": 60_000}
    hung_up = await page.evaluate(ACT_JS, [run_id, spin, 500])
    assert hung_up["aborted"]
    # Had the spin gone on, this would wait out its own budget; it answers at once.
    title = {"action": "evaluate", "args": {"expression": "document.title"}, "timeout_ms": 3_000}
    answer = await page.evaluate(ACT_JS, [run_id, title, 0])
    assert answer["status"] == 200 and answer["body"] == {"ok": True, "result": '"Orders"'}
    assert answer["ms"] < 1_500
    metrics = await page.request.get(f"{server.base_url}/metrics")
    scraped = await metrics.text()
    assert 'tabwright_evaluations_total{route="cdp",outcome="cancelled"} 1' in scraped
    # The server watches its event loop (dashboard.lib.looplag) and says how late it ran.
    assert re.search(r"^tabwright_loop_lag_p99_seconds \d+\.\d+$", scraped, re.M), scraped


def batch_of_one(server: Server, run_id: int) -> None:
    """Through the API: the run saved as a scenario, and a batch of one row of it, done."""
    logged_in = daphne_log_in(server.base_url, (USERNAME, PASSWORD))
    with closing(logged_in), script(server, api_token(logged_in, "records")) as api:
        saved = api.post(f"/runs/{run_id}/scenario", json={"name": "The sign-up page"})
        assert saved.status_code == 201, saved.text
        made = api.post(f"/scenarios/{saved.json()['id']}/batches", json={"rows": [{}]})
        assert made.status_code == 201, made.text
        batch = f"/batches/{made.json()['id']}"
        wait_until("the batch is done", lambda: api.get(batch).json()["status"] == "done")


# What the dashboard recorded as it worked: shown to staff, never added or changed by hand.
RECORDS = ("run", "step", "runevent", "batch")


async def test_staff_open_every_admin_page_and_the_records_are_read_only(
    page: Page, server: Server
) -> None:
    await log_in(page, server)  # a run and a batch of theirs: the records' pages have rows
    run_id = await start_run(page, f"{server.base_url}/demo/form.html", "wait for Sign up")
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    await asyncio.to_thread(batch_of_one, server, run_id)
    await page.context.clear_cookies()
    staff = "update auth_user set is_staff = ?, is_superuser = ? where username = ?"
    server.sql(staff, (1, 1, OTHER_USERNAME))
    try:
        await log_in(page, server, OTHER_USERNAME, OTHER_PASSWORD)
        await page.goto(f"{server.base_url}/admin/")
        await save(page, "journey-admin.png")
        paths = await page.locator("#content-main a").evaluate_all(
            "(all) => all.map((a) => a.pathname)"
        )
        lists = sorted({path for path in paths if re.fullmatch(r"/admin/\w+/\w+/", path)})
        assert {f"/admin/dashboard/{model}/" for model in RECORDS} <= set(lists), lists
        for path in lists:
            opened = await page.goto(server.base_url + path)
            assert opened is not None and opened.status == 200, path
            await expect(page.locator("#changelist")).to_be_visible()
            model = path.rstrip("/").rsplit("/", 1)[-1]
            if model in RECORDS:
                await expect(page.locator(".object-tools a.addlink")).to_have_count(0)
            first = page.locator("#result_list tbody tr th a").first
            if not await first.count():
                assert model not in RECORDS, f"{model}: no row to open"
                continue
            await first.click()
            await expect(page.locator("#content h1")).to_be_visible()
            assert "/change/" in page.url, page.url
            if model in RECORDS:  # read, never written
                await expect(page.locator("input[name=_save]")).to_have_count(0)
                await expect(page.locator("form input:not([type=hidden])")).to_have_count(0)
                await save(page, f"journey-admin-{model}.png")
    finally:
        server.sql(staff, (0, 0, OTHER_USERNAME))
