"""A person's week, as journeys across the dashboard's features in a real Chromium.

The long one: sign in; a conversation on a todo app with a message while the agent works
and one after; the person takes over the tab for a tick the agent can't tell; the tab
closed and restored; the conversation saved as a scenario, replayed on another build of
the app and exported as a pytest file that passes on both builds; a typed value made a
parameter, a batch of five rows all passing; a schedule whose firing fails, told to a
webhook whose signature checks out.  Before it, a conversation written to while it
starts (its worker's browser is held at a gate until the test opens it)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from automation import BrowserSession, Scenario
from tests.daphne import api_token
from tests.daphne import log_in as daphne_log_in
from tests.e2e.journeys import (
    HEADER_SPY,
    ITEMS,
    SECOND_BUILD,
    WAIT_S,
    Gate,
    Hook,
    Todos,
    prompt_of,
    reload_and_check,
    script,
    send,
    signed_by,
    tag,
    todos_as_the_run_sees_them,
    until,
    wait_until,
)
from tests.e2e.ui import (
    LIVE_MS,
    OTHER_PASSWORD,
    OTHER_USERNAME,
    PASSWORD,
    UI_MS,
    USERNAME,
    Server,
    click_picture,
    e2e_server,
    live_picture,
    log_in,
    replay_heals,
    run_batch,
    save,
    start_run,
)
from tests.exported import run_exported
from tests.fakellm import Reply
from tests.net import free_port, loopback_app

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Gate:
    return Gate(tmp_path_factory.mktemp("gate"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, gate: Gate) -> Iterator[Server]:
    with e2e_server(
        tmp_path_factory,
        TABWRIGHT_CHROMIUM_PATH=str(gate.chromium),
        # The alerts go to a receiver of the test's on 127.0.0.1.
        TABWRIGHT_WEBHOOK_BLOCK_PRIVATE_ADDRESSES="0",
    ) as running:
        yield running


async def test_a_message_written_while_the_conversation_starts_reads_below_its_request(
    page: Page, server: Server, gate: Gate
) -> None:
    form = f"{server.base_url}/demo/form.html"
    server.llm.requests.clear()
    server.llm.script(tag({"action": "done", "summary": "Noted: her email too."}))
    await log_in(page, server)
    run_id = await start_run(page, form, "Sign Ada Lovelace up on this form", planner="openai")
    # Its worker claimed it; its browser waits at the gate.
    await until("the run is claimed", lambda: server.sql(
        "select status from dashboard_run where id = ?", (run_id,)) == [("pending",)])  # fmt: skip
    await page.reload()
    await expect(page.locator("#status")).to_have_text("pending")
    # Nothing to pause or take over before the run starts: only Stop, and why; the
    # composer says when a message goes.
    controls = page.locator("#controls")
    await expect(controls.get_by_role("button")).to_have_text(["Stop"])
    await expect(page.get_by_test_id("controls-hint")).to_have_text(
        "Pause and Take over come when the run starts."
    )
    await expect(page.locator("#reply-label")).to_have_text(
        "Message the agent (sent when the run starts)"
    )
    said = page.locator("#chat .msg.person")
    await expect(said).to_have_count(1)  # the first request, shown before the run starts
    await expect(said.first).to_contain_text("Sign Ada Lovelace up on this form")
    await send(page, "Her email is ada@example.org")
    await expect(said).to_have_count(2)
    await expect(said.nth(0)).to_contain_text("Sign Ada Lovelace up on this form")
    await expect(said.nth(1)).to_contain_text("Her email is ada@example.org")
    await save(page, "journey-message-while-pending.png")

    gate.open()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    assert "Her email is ada@example.org" in prompt_of(server.llm.requests[0])
    for _ in range(2):  # as it happened, then from the stored events
        await expect(said.nth(0)).to_contain_text("Sign Ada Lovelace up on this form")
        await expect(said.nth(1)).to_contain_text("Her email is ada@example.org")
        await expect(said.nth(1)).not_to_have_class(re.compile(r"\bwaiting\b"))  # read
        await expect(said).to_have_count(2)
        await page.reload()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def the(browser: BrowserSession, fixture_url: str) -> Todos:
    return await todos_as_the_run_sees_them(browser, f"{fixture_url}/crossimpl/classic/index.html")


@pytest.fixture
def hook() -> Iterator[str]:
    Hook.got = []
    Hook.came.clear()
    with loopback_app(Hook) as url:
        yield f"{url}/hook"


async def test_a_persons_week_from_a_conversation_to_a_verified_webhook(
    page: Page,
    server: Server,
    gate: Gate,
    the: Todos,
    fixture_url: str,
    ui_browser: Browser,
    hook: str,
    tmp_path: Path,
) -> None:
    gate.open()
    todos = f"{fixture_url}/crossimpl/classic/index.html"
    thought = threading.Event()  # the model answers its first request once the person wrote
    server.llm.requests.clear()
    server.llm.script(
        # 1: the model takes its time, so the person writes meanwhile.
        Reply(text="Milk first.\n" + tag({"action": "fill", "ref": the.field,
                                           "value": "Buy milk", "submit": True}), gate=thought),
        "And the dog, as you say.\n"
        + tag({"action": "fill", "ref": the.field, "value": "Walk the dog", "submit": True})
        + tag({"action": "done", "summary": "Added Buy milk and Walk the dog."}),
        # 2: after the answer, on the same tab; the person ticks the second box.
        "Ticking milk.\n" + tag({"action": "check", "ref": the.milk}),
        "NEED_HELP: I can't tell which box is the dog's; please tick it.",
        tag({"action": "done", "summary": "Both todos are ticked."}),
        # 3: after the tab was closed and the page restored.
        tag({"action": "done", "summary": "Still both ticked."}),
    )  # fmt: skip
    await log_in(page, server)
    run_id = await start_run(page, todos, "Add Buy milk to my todos", planner="openai")
    chat = page.locator("#chat")
    status = page.locator("#status")
    steps = page.locator("#steps > li.step")

    # 1, and a message while the model works on its first answer.
    await expect(chat.locator(".msg.model.waiting")).to_have_count(1, timeout=LIVE_MS)
    # Running: Pause and Take over are there, the hint of before the start is not.
    await expect(page.locator("#controls").get_by_role("button")).to_have_text(
        ["Pause", "Take over", "Stop"]
    )
    await expect(page.get_by_test_id("controls-hint")).to_be_hidden()
    await expect(page.locator("#reply-label")).to_have_text(
        "Message the agent (it reads it at its next step)"
    )
    await send(page, "Also add Walk the dog")
    during = chat.locator(".msg.person").nth(1)
    await expect(during).to_have_class(re.compile(r"\bwaiting\b"))  # shown at once, unread
    await expect(during).to_contain_text("not read yet")
    await save(page, "journey-message-while-working.png")
    thought.set()
    await expect(status).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(during).not_to_have_class(re.compile(r"\bwaiting\b"))  # the model read it
    assert "Also add Walk the dog" in prompt_of(server.llm.requests[1])
    await expect(page.locator("#session")).to_have_text("tab open")
    await expect(chat).to_contain_text("The tab stays open")
    await reload_and_check(page, person_messages=2, steps=3)  # navigate, two fills

    # 2, after the answer: the same tab; the agent asks for help with the second box.
    await send(page, "Tick both")
    await expect(chat.locator(".stretch-divider")).to_have_text(["request 2"], timeout=LIVE_MS)
    await expect(status).to_have_text("paused", timeout=LIVE_MS)
    await expect(page.locator("#status-reason")).to_contain_text("need_help")
    second_prompt = prompt_of(server.llm.requests[2])
    assert "Tick both" in second_prompt and "Add Buy milk" in second_prompt
    # The thread opens with the first request; the Browser card names the page.
    await expect(chat.locator("li.msg").first).to_contain_text("Add Buy milk to my todos")
    await expect(page.locator("#live-url")).to_have_text(todos)

    # The person takes over: the picture enlarged, a click on the dog's box, Resume.
    await live_picture(page)
    await expect(page.get_by_test_id("live-view")).to_have_class(re.compile(r"\btakeover\b"))
    await page.get_by_role("button", name="Enlarge").click()
    box = the.dog_box
    await click_picture(
        page, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, the.viewport["width"],
        log=server.log,
    )  # fmt: skip
    await page.wait_for_function(
        "() => window.__socketEvents.some((e) => e.type === 'input.result' && e.ok)"
    )
    await save(page, "journey-takeover.png")
    await page.get_by_role("button", name="Resume").click()
    await expect(status).to_have_text("succeeded", timeout=LIVE_MS)
    await expect(chat).to_contain_text("Both todos are ticked.")
    await expect(steps.locator(".step-action")).to_have_text(
        ["navigate", "fill", "fill", "tick", "tick"]
    )
    # A tick says which box (its row: the box has no name), and who ticked it.
    await expect(steps.nth(3).locator(".step-target")).to_have_text(
        'the checkbox in row "Buy milk"'
    )
    person = steps.nth(4)
    await expect(person.locator(".step-target")).to_have_text('the checkbox in row "Walk the dog"')
    await expect(person.locator(".step-by")).to_have_text("by the person")
    # The person's step has its picture, and the Browser card shows it: the page as the
    # person left it, not the agent's last picture.
    thumb = person.locator("img.thumb")
    await expect(thumb).to_have_count(1)
    await expect(page.locator("#shot")).to_have_attribute(
        "src", await thumb.get_attribute("src") or "?"
    )
    ticks = chat.locator(".msg.agent .chip").filter(has_text=re.compile(r"^tick e\d+$"))
    await expect(ticks).to_have_count(1)  # the model's own words, told the same way
    # The agent's action line names the box by its row, in the step list's words; no
    # action line says "check" of a box.
    actions = chat.locator(".msg.action")
    await expect(actions.filter(has_text="tick the checkbox").locator(".body")).to_have_text(
        [re.compile(r'^tick the checkbox in row "Buy milk" — ticked the checkbox.* \(\d+ ms\)$')]
    )
    await expect(actions.filter(has_text=re.compile(r"\b(un)?check(ed)?\b"))).to_have_count(0)
    await expect(page.locator("#live-url")).to_have_text(todos)  # still, after request 2
    await save(page, "journey-after-takeover.png")
    await reload_and_check(page, person_messages=3, steps=5)

    # The person closes the tab; the next message restores the page by replay first.
    await page.get_by_role("button", name="Close tab").click()
    await expect(page.locator("#session")).to_have_text("tab closed", timeout=LIVE_MS)
    await expect(chat).to_contain_text("closed by the person")
    await expect(page.get_by_role("button", name="Close tab")).to_be_hidden()
    await reload_and_check(page, person_messages=3, steps=5)
    await expect(page.locator("#reply-label")).to_have_text("Continue (the page is restored first)")
    await page.evaluate(HEADER_SPY)
    await send(page, "Are both still ticked?")
    await expect(chat).to_contain_text("Page restored (5 steps replayed).", timeout=LIVE_MS)
    await expect(chat.locator(".msg.restore.ok")).to_have_count(5)
    await expect(chat).to_contain_text("Still both ticked.", timeout=LIVE_MS)
    await expect(status).to_have_text("succeeded")
    await expect(page.locator("#session")).to_have_text("tab open")
    headers = await page.evaluate("() => window.__headers")
    assert ["running", "tab closed"] not in headers, headers  # never both at once
    # At work while it restores: the page shows it running (its Stop and Pause), not the
    # last request's end.
    assert ["running", "restoring the tab"] in headers, headers
    restored_prompt = prompt_of(server.llm.requests[-1])
    assert "restored by replaying the 5 steps" in restored_prompt
    assert "Are both still ticked?" in restored_prompt and "Tick both" in restored_prompt
    await expect(page.locator("#live-url")).to_have_text(todos)
    await save(page, "journey-restored.png")
    await reload_and_check(page, person_messages=4, steps=5)  # the restore added no step

    # Saved as one scenario: every request's steps, a check of each tick proposed.
    await page.get_by_role("link", name="Save as scenario…").click()
    stretches = page.get_by_test_id("stretches").get_by_role("checkbox")
    await expect(stretches).to_have_count(3)
    for each in await stretches.all():
        await expect(each).to_be_checked()
    proposed = page.get_by_test_id("proposed-checks")
    for row in ("Buy milk", "Walk the dog"):
        box = proposed.get_by_label(f"the checkbox in row '{row}' is ticked")
        await expect(box).to_be_checked()
    await expect(page.get_by_test_id("kept-steps")).to_contain_text(
        "tick the checkbox in row 'Walk the dog'"
    )
    await save(page, "journey-save.png")
    await page.get_by_label("Name", exact=True).fill("Todos")
    await page.get_by_role("button", name="Save as scenario").click()
    await expect(page.get_by_role("heading", name="Todos", exact=True)).to_be_visible()
    scenario_url = page.url

    # Replayed on another build of the app: it heals, and passes.
    await replay_heals(page, scenario_url, f"{fixture_url}/crossimpl/{SECOND_BUILD}")
    scenario_steps = page.get_by_test_id("scenario-steps").locator("li.sstep")
    await expect(scenario_steps.nth(1)).to_contain_text("found by")
    last = scenario_steps.nth(1).locator(".sstep-last a")
    await expect(last).to_have_text(re.compile(r"run \d+"))
    for badge in await page.get_by_test_id("checks").locator(".badge").all():
        await expect(badge).to_have_text("passed")
    await save(page, "journey-replay-report.png")

    # Exported as a pytest file, it passes on both builds, as the replay does.
    async with page.expect_download() as download_info:
        await page.get_by_role("link", name="Export pytest").click()
    path = await (await download_info.value).path()
    code = await asyncio.to_thread(Path(path).read_text)
    assert ".or_(" in code
    for build in ("classic", SECOND_BUILD):
        folder = tmp_path / f"pytest-{build}"
        folder.mkdir()
        exit_status, out = await run_exported(code, folder, f"{fixture_url}/crossimpl/{build}")
        assert exit_status == 0 and "1 passed" in out, (build, out)

    # "Buy milk" becomes the parameter item: the steps and checks that used the value
    # follow it, and the page says which.
    typed = page.locator("#step-1")
    await expect(typed.locator(".sstep-args")).to_contain_text("Buy milk")
    await typed.get_by_label("Parameter name for step 1").fill("item")
    await typed.get_by_role("button", name="Make parameter").click()
    told = page.get_by_role("status")
    await expect(told).to_contain_text("Step 1 takes its value from ${item} now")
    # The replay on the other build healed the elements to what they are called there
    # (the box is "Toggle Todo Buy milk"): the parameter follows into those names too.
    await expect(told).to_contain_text("step 6: tick checkbox 'Toggle Todo ${item}'")
    await expect(told).to_contain_text("expect checkbox 'Toggle Todo ${item}' is ticked")
    await expect(told).to_contain_text("expect at least 1 row(s) show '${item}'")
    await expect(told).not_to_contain_text("Walk the dog")
    await expect(page.locator("#step-6 .sstep-target")).to_have_text(
        "checkbox “Toggle Todo ${item}”"
    )
    await save(page, "journey-parameter.png")

    # A batch of five todos: every row adds its own, ticks it and checks it.
    rows = tmp_path / "todos.csv"
    rows.write_text("item\n" + "".join(f"{item}\n" for item in ITEMS))
    await run_batch(page, rows, at_once=2)
    counts = page.get_by_test_id("batch-counts")
    await expect(counts).to_contain_text("5 of 5 done")
    await expect(counts).to_contain_text("5 passed")
    table = page.locator("#batch-rows tr")
    await expect(table.locator(".badge")).to_have_text(["passed"] * 5)
    await expect(table.nth(3)).to_contain_text("Read a book")
    await expect(page.locator("#batch-retry")).to_be_hidden()  # no row to retry
    await save(page, "journey-batch.png")
    async with page.expect_download() as download_info:
        await page.get_by_role("link", name="Download results (CSV)").click()
    results = tmp_path / "results.csv"
    await (await download_info.value).save_as(results)
    lines = list(csv.DictReader(io.StringIO(results.read_text())))
    assert [line["item"] for line in lines] == ITEMS, lines  # in row order
    assert [line["status"] for line in lines] == ["passed"] * 5, lines

    await page.goto(scenario_url)
    await expect(page.locator("#step-6 .sstep-target")).to_have_text(
        "checkbox “Toggle Todo ${item}”"
    )  # a row's replay wrote no value of its own into the identity
    health = page.get_by_test_id("health").locator(".health-cell")
    await expect(health).to_have_count(6)  # the replay on the other build, the five rows
    for cell in await health.all():
        assert await cell.get_attribute("class") in ("health-cell passed", "health-cell healed")

    # A schedule for weekday mornings; its firing finds the app down and says so.
    down = f"http://127.0.0.1:{free_port()}/crossimpl/classic"
    await page.get_by_text("Schedule it").click()
    form = page.get_by_test_id("schedule-form")
    await form.get_by_label("When (cron)").fill("0 7 * * 1-5")
    await form.locator("input[name=timezone]").fill("Europe/Paris")
    await form.get_by_label("Base URL").fill(down)
    await form.get_by_label("item", exact=True).fill("Buy bread")
    await form.get_by_label("Webhook URL").fill(hook)
    await form.get_by_role("button", name="Schedule").click()
    schedule = page.get_by_test_id("schedule")
    await expect(schedule).to_contain_text("At 07:00, Monday through Friday")
    await expect(schedule).to_contain_text("Europe/Paris")
    await expect(schedule.get_by_test_id("upcoming")).to_contain_text("07:00")
    secret = await schedule.locator("code.secret").text_content() or ""
    assert len(secret) >= 16, secret
    await save(page, "journey-schedule.png")
    # Due now (as if the morning came): the worker's next look fires it.
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    server.sql("update dashboard_schedule set next_fire_at = ? where webhook_url = ?", (now, hook))
    await asyncio.to_thread(Hook.came.wait, WAIT_S)
    assert len(Hook.got) == 1, Hook.got
    headers, body = Hook.got[0]
    assert signed_by(secret, headers, body)
    assert headers["x-tabwright-event"] == "firing.failed"
    payload = json.loads(body)
    assert payload["event"] == "firing.failed" and payload["run"]["status"] == "failed"
    assert payload["schedule"]["scenario"] == "Todos"
    # Its links are the dashboard's own origin.
    assert payload["run"]["url"] == f"{server.base_url}/runs/{payload['run']['id']}/"
    assert payload["schedule"]["url"].startswith(f"{server.base_url}/scenarios/")
    await page.reload()
    await expect(schedule.get_by_test_id("delivery")).to_contain_text("sent")
    await save(page, "journey-webhook.png")
    # Run now: the page shows the new firing once a worker made it, with no reload.
    await schedule.get_by_role("button", name="Run now").click()
    await expect(page.get_by_text("Firing now: its run shows under the schedule")).to_be_visible()
    await expect(schedule.locator(".firings > li")).to_have_count(2)
    await save(page, "journey-run-now.png")

    # Another person sees none of it.
    context = await ui_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(UI_MS)
    try:
        other = await context.new_page()
        await log_in(other, server, OTHER_USERNAME, OTHER_PASSWORD)
        await expect(other.get_by_text("Add Buy milk")).to_have_count(0)
        for url in (f"{server.base_url}/runs/{run_id}/", scenario_url):
            response = await other.goto(url)
            assert response is not None and response.status == 404, url
    finally:
        await context.close()


def test_a_script_does_the_week_through_the_json_api(
    server: Server, gate: Gate, the: Todos, fixture_url: str, hook: str
) -> None:
    """The same week by a script with a token: the conversation (a message while the agent
    works, one after, one to the closed tab), saved as a scenario, replayed on the other
    build, made a parameter (the engine's library edits the exported file, the API imports
    it), a batch of five rows, and a schedule whose failing firing is told to a webhook.
    Another person's token sees none of it; a revoked token is refused."""
    gate.open()
    thought = threading.Event()  # the model answers its first request once the message is in
    todos = f"{fixture_url}/crossimpl/classic/index.html"
    server.llm.requests.clear()
    server.llm.script(
        Reply(text=tag({"action": "fill", "ref": the.field, "value": "Buy milk",
                        "submit": True}), gate=thought),
        tag({"action": "fill", "ref": the.field, "value": "Walk the dog", "submit": True})
        + tag({"action": "done", "summary": "Added both."}),
        tag({"action": "check", "ref": the.milk}) + tag({"action": "check", "ref": the.dog}),
        tag({"action": "done", "summary": "Both ticked."}),
        tag({"action": "done", "summary": "Still both ticked."}),
    )  # fmt: skip
    logged_in = daphne_log_in(server.base_url, (USERNAME, PASSWORD))
    api = script(server, api_token(logged_in, "week script"))
    with closing(logged_in), api:

        def run_is(run_id: int, *statuses: str) -> Callable[[], bool]:
            return lambda: api.get(f"/runs/{run_id}").json()["status"] in statuses

        made = api.post("/runs", json={"task": "Add Buy milk to my todos", "start_url": todos,
                                       "planner": "openai"})  # fmt: skip
        assert made.status_code == 201, made.text
        run_id = made.json()["id"]
        wait_until("the model is asked", lambda: len(server.llm.requests) >= 1)
        told = api.post(f"/runs/{run_id}/messages", json={"text": "Also add Walk the dog"})
        assert told.status_code == 200, told.text
        thought.set()
        wait_until("the first request is done", run_is(run_id, "succeeded", "failed"))
        assert "Also add Walk the dog" in prompt_of(server.llm.requests[1])

        def said(kind: str) -> int:
            events = api.get(f"/runs/{run_id}/events").json()["events"]
            return sum(1 for event in events if event["type"] == kind)

        for done, text in enumerate(("Tick both", "Are both still ticked?"), start=2):
            told = api.post(f"/runs/{run_id}/messages", json={"text": text})
            assert told.status_code == 200, told.text
            wait_until(f"{text!r} is done", lambda n=done: said("run.finished") == n)
            if text == "Tick both":  # the tab closed: the next message restores it
                assert api.post(f"/runs/{run_id}/close").status_code == 200
                wait_until("the tab closed", lambda: said("session.closed") == 1)
        run = api.get(f"/runs/{run_id}").json()
        assert run["status"] == "succeeded", run
        assert [s["action"] for s in run["steps"]] == ["navigate", "fill", "fill", "check", "check"]
        events = [e["type"] for e in api.get(f"/runs/{run_id}/events").json()["events"]]
        assert "session.restored" in events

        proposals = api.get(f"/runs/{run_id}/proposals").json()
        described = [p["check"] for p in proposals if p["picked"]]
        for row in ("Buy milk", "Walk the dog"):
            assert f"expect the checkbox in row '{row}' is ticked" in described, described
        # The run's events tell each tick by its row, as the run page does.
        finished = [e for e in api.get(f"/runs/{run_id}/events").json()["events"]
                    if e["type"] == "action.finished" and e["name"] == "check"]  # fmt: skip
        assert [e["words"]["text"] for e in finished] == [
            f'tick the checkbox in row "{row}"' for row in ("Buy milk", "Walk the dog")
        ], finished
        assert all(e["result"].startswith("ticked the checkbox") for e in finished), finished
        saved = api.post(f"/runs/{run_id}/scenario", json={"name": "Todos by script"})
        assert saved.status_code == 201, saved.text
        scenario_id = saved.json()["id"]
        replay = api.post(f"/scenarios/{scenario_id}/replays",
                          json={"base_url": f"{fixture_url}/crossimpl/{SECOND_BUILD}"})  # fmt: skip
        assert replay.status_code == 201, replay.text
        wait_until("the replay ends", run_is(replay.json()["id"], "succeeded", "failed",
                                              "paused", "stopped"))  # fmt: skip
        assert api.get(f"/runs/{replay.json()['id']}").json()["status"] == "succeeded"

        document = Scenario.from_dict(api.get(f"/scenarios/{scenario_id}").json())
        typed = next(i for i, s in enumerate(document.steps) if s.args.get("value") == "Buy milk")
        with_item = document.with_param(typed, "item").to_dict()
        with_item["name"] = "Todos by script, any item"
        imported = api.post("/scenarios", json=with_item)
        assert imported.status_code == 201, imported.text
        any_item = imported.json()["id"]
        rows = [{"item": item} for item in ITEMS]
        batch = api.post(f"/scenarios/{any_item}/batches", json={"rows": rows, "concurrency": 2})
        assert batch.status_code == 201, batch.text
        batch_id = batch.json()["id"]
        wait_until("the batch is done", lambda: api.get(f"/batches/{batch_id}").json()[
            "status"] == "done")  # fmt: skip
        rows = api.get(f"/batches/{batch_id}").json()["rows"]
        assert [(r["params"]["item"], r["status"]) for r in rows] == [
            (item, "passed") for item in ITEMS], rows  # fmt: skip

        down = f"http://127.0.0.1:{free_port()}/crossimpl/classic"
        made = api.post(f"/scenarios/{any_item}/schedules", json={
            "cron": "0 7 * * 1-5", "timezone": "Europe/Paris", "params": {"item": "Buy bread"},
            "base_url": down, "webhook_url": hook,
        })  # fmt: skip
        assert made.status_code == 201, made.text
        schedule = made.json()
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        server.sql("update dashboard_schedule set next_fire_at = ? where id = ?",
                   (now, schedule["id"]))  # fmt: skip
        Hook.came.wait(WAIT_S)
        assert len(Hook.got) == 1, Hook.got
        headers, body = Hook.got[0]
        assert signed_by(schedule["webhook_secret"], headers, body)
        payload = json.loads(body)
        assert payload["event"] == "firing.failed" and payload["run"]["status"] == "failed"
        assert payload["schedule"]["id"] == schedule["id"]
        assert payload["run"]["url"] == f"{server.base_url}/runs/{payload['run']['id']}/"
        firings = api.get(f"/schedules/{schedule['id']}").json()["firings"]
        assert firings[0]["outcome"] == "failed", firings
        wait_until("the delivery is marked sent", lambda: [
            d["status"] for d in api.get(f"/schedules/{schedule['id']}").json()["firings"][0][
                "deliveries"]] == ["sent"])  # fmt: skip

        # A picture is the page's (the token is not a login); the page shows the same run.
        shot = httpx.get(server.base_url + run["steps"][0]["screenshot_url"])
        assert shot.status_code == 302
        assert logged_in.get(f"/runs/{run_id}/").status_code == 200
        # Another person's token sees none of it.
        with closing(daphne_log_in(server.base_url, (OTHER_USERNAME, OTHER_PASSWORD))) as other:
            theirs = script(server, api_token(other, "theirs"))
        with theirs:
            assert all(r["id"] != run_id for r in theirs.get("/runs").json())
            for path in (f"/runs/{run_id}", f"/runs/{run_id}/events"):
                answer = theirs.get(path)
                assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
            assert theirs.post(f"/runs/{run_id}/stop").status_code == 404
            # A revoked token is refused; only that one.
            listed = logged_in.get("/account/tokens").text
            token_id = re.search(r"/account/tokens/(\d+)/revoke", listed).group(1)
            csrf = {"csrfmiddlewaretoken": logged_in.cookies["csrftoken"]}
            logged_in.post(f"/account/tokens/{token_id}/revoke", data=csrf)
            gone = api.get("/runs")
            assert gone.status_code == 401 and gone.json()["error"]["code"] == "unauthorized"
            assert theirs.get("/runs").status_code == 200
        assert api.get("/openapi.json").status_code == 200  # the schema is public
