"""Features a person combines in an afternoon, each journey through the dashboard in a real
browser: a step a person did on the live view, its value then made a parameter, the change
approved, then a batch; a value edited to another parameter; a call to a scenario recorded
elsewhere; a name judged where its save led; a dialog answered by kind; batch rows naming
someone not there, or a name the app refuses.  The apps are our own on loopback: a list
of invoices (who was paid), sign-ups, orders and people."""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.async_api import Locator, Page, expect

from automation import BrowserSession
from tests.automation.recording.test_calls import Mounted
from tests.automation.recording.test_param_rows import _People
from tests.automation.recording.test_refused_in_place import Office
from tests.daphne import api_token
from tests.daphne import log_in as client_log_in
from tests.e2e.journeys import exported_pytest, import_scenario, script, until
from tests.e2e.journeys import scenario_step as _step
from tests.e2e.ui import (
    LIVE_MS,
    PASSWORD,
    USERNAME,
    Server,
    click_picture,
    live_picture,
    log_in,
    run_batch,
    save,
    start_run,
)  # fmt: skip
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app
from tests.refs import fresh_snapshot, ref_of

CUSTOMERS = ("Ada", "Bob", "Cyd")


class _Invoices(QuietHandler):
    """A list of invoices, a row per customer with its button (``Mark paid``; on
    ``release`` 2, ``Settle``; on release 3, a link ``Pay``), which sends
    ``/paid?who=<customer>``; ``paid`` keeps who was paid, in order."""

    release = 1
    paid: list[str] = []

    def do_GET(self) -> None:
        where = urlsplit(self.path)
        if where.path == "/paid":
            who = parse_qs(where.query).get("who", [""])[0]
            self.paid.append(who)
            body = f"<h1>Paid</h1><p>{html.escape(who)} paid</p>"
        elif self.release == 3:
            rows = "".join(f'<tr><td>{who}</td><td><a href="/paid?who={who}">Pay</a></td></tr>'
                           for who in CUSTOMERS)  # fmt: skip
            body = f'<h1>Orders</h1><label>Find <input name="q"></label><table>{rows}</table>'
        else:
            button = "Mark paid" if self.release == 1 else "Settle"
            rows = "".join(
                f'<tr><td>{who}</td><td><form action="/paid"><input type="hidden" name="who" '
                f'value="{who}"><button>{button}</button></form></td></tr>'
                for who in CUSTOMERS
            )
            body = f'<h1>Orders</h1><label>Find <input name="q"></label><table>{rows}</table>'
        self.send(200, f"<!doctype html><title>Invoices</title>{body}".encode())


@pytest.fixture(scope="module")
def invoices() -> Iterator[str]:
    with loopback_app(_Invoices) as url:
        yield url


def pay_ada(invoices: str) -> dict[str, Any]:
    """Ada's invoice paid, as recorded on the first release: her name typed into Find,
    then the "Mark paid" of her row (told from the others by her name alone), and a check
    that no error shows."""
    mark_paid = {"role": "button", "kind": "press", "name": "Mark paid", "text": "Mark paid",
                 "tag": "button", "target": f"{invoices}/paid", "method": "get", "row": "Ada",
                 "section": "Orders", "name_count": 3, "row_peers": 1,
                 "row_words": ["ada"]}  # fmt: skip
    return {"format": "tabwright.scenario", "version": 1, "name": "Pay an invoice",
            "base_url": invoices + "/", "steps": [
                _step("navigate", {"url": invoices + "/orders"}),
                _step("type", {"text": "Ada"}, "textbox", "Find"),
                {"action": "click", "args": {}, "identity": mark_paid},
                _step("expect", {"kind": "no_error"}),
            ]}  # fmt: skip


async def make_parameter(page: Page, index: int, name: str) -> None:
    """On a scenario's page: make step ``index``'s typed value the parameter ``name``."""
    typed = page.locator(f"#step-{index}")
    await typed.get_by_label(f"Parameter name for step {index}").fill(name)
    await typed.get_by_role("button", name="Make parameter").click()
    await expect(page.get_by_role("status")).to_contain_text(
        f"Step {index} takes its value from ${{{name}}} now"
    )


async def person_settles_ada_in_a_replay(
    page: Page, server: Server, invoices: str, browser: BrowserSession, tmp_path: Path
) -> tuple[str, int]:
    """Ada's invoice paid as recorded on the first release, replayed on the second: the
    replay waits for a person, who clicks Ada's "Settle" on the live view and resumes.
    The scenario's page URL and the replay's run id."""
    _Invoices.release, _Invoices.paid = 1, []
    await log_in(page, server)
    scenario_url = await import_scenario(page, server, tmp_path / "pay.json", pay_ada(invoices))
    _Invoices.release = 2
    probe = await browser.new_tab()  # where Ada's button is, in a tab of the run's size
    try:
        await probe.page.goto(f"{invoices}/orders")
        ada = probe.page.locator("tr", has_text="Ada").get_by_role("button", name="Settle")
        box = await ada.bounding_box()
        width = await probe.page.evaluate("() => innerWidth")
    finally:
        await probe.close()
    assert box is not None

    await page.locator("#replay").get_by_role("button", name="Replay").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    replay_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    await expect(page.locator("#status")).to_have_text("paused", timeout=LIVE_MS)
    await expect(page.locator("#status-reason")).to_contain_text(
        "Do the step yourself in the live view"
    )
    await live_picture(page)
    await page.get_by_role("button", name="Enlarge").click()
    await click_picture(page, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, width,
                        log=server.log)  # fmt: skip
    await until("the person's click paid Ada's invoice", lambda: _Invoices.paid == ["Ada"])
    await page.get_by_role("button", name="Resume").click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    return scenario_url, replay_id


async def test_a_replay_whose_step_the_person_did_is_saved_with_it_and_its_replay_does_it(
    page: Page, server: Server, invoices: str, browser: BrowserSession, tmp_path: Path
) -> None:
    """The next release renames "Mark paid": the replay waits for a person, who clicks
    Ada's "Settle" on the live view and resumes.  A script saves that replay as a scenario
    (the API's save of a run): the step the person did was left out (recorded as failed,
    its element unknown), so the saved scenario typed Ada, checked no error showed and
    passed, paying nobody.  It keeps the click now, on the button the person clicked, and
    its replay pays Ada's invoice."""
    _, replay_id = await person_settles_ada_in_a_replay(page, server, invoices, browser, tmp_path)

    token = await asyncio.to_thread(
        api_token, client_log_in(server.base_url, (USERNAME, PASSWORD)), "save replay"
    )

    def save_replay() -> dict[str, Any]:
        with script(server, token) as api:
            saved = api.post(f"/runs/{replay_id}/scenario", json={"name": "Pay Ada, settled"})
            assert saved.status_code == 201, saved.text
            return api.get(f"/scenarios/{saved.json()['id']}").json()

    document = await asyncio.to_thread(save_replay)
    steps = document["steps"]
    assert [step["action"] for step in steps] == ["navigate", "type", "click", "expect"], steps
    assert steps[2]["identity"]["name"] == "Settle" and steps[2]["identity"]["row"] == "Ada"

    await page.goto(f"{server.base_url}/scenarios/")
    await page.get_by_role("link", name="Pay Ada, settled").click()
    await page.locator("#replay").get_by_role("button", name="Replay").click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    assert _Invoices.paid == ["Ada", "Ada"], _Invoices.paid  # the replay paid it again
    await save(page, "seams-replay-done-by-person-saved.png")


async def test_a_change_a_person_proposed_before_its_value_was_made_a_parameter_keeps_it(
    page: Page, server: Server, invoices: str, browser: BrowserSession, tmp_path: Path
) -> None:
    """The next release renames each row's "Mark paid" to "Settle": the replay waits for
    a person, who clicks Ada's on the live view and resumes, which proposes her button as
    the step's.  They then make the typed "Ada" a parameter, and approve the change.  A
    batch of Bob and Cyd pays Bob's invoice, then Cyd's (the approved change wrote "Ada"
    back into the step's row: each row paid Ada's invoice, and passed)."""
    scenario_url, _ = await person_settles_ada_in_a_replay(page, server, invoices, browser,
                                                           tmp_path)  # fmt: skip

    await page.get_by_role("link", name="Scenario", exact=True).click()
    await expect(page).to_have_url(scenario_url)
    proposed = page.get_by_test_id("proposed").locator("li")
    await expect(proposed).to_have_count(1)
    await expect(proposed).to_contain_text("Step 2: the element the person did it on")
    await make_parameter(page, 1, "customer")
    await proposed.get_by_role("button", name="Approve").click()
    await expect(page.get_by_test_id("proposed")).to_have_count(0)

    rows = tmp_path / "customers.csv"
    await asyncio.to_thread(rows.write_text, "customer\nBob\nCyd\n")
    await run_batch(page, rows, at_once=1)  # one row after the other: Bob's, then Cyd's
    table = page.locator("#batch-rows tr")
    await expect(table.locator(".badge")).to_have_text(["passed"] * 2)
    await expect(table.nth(0)).to_contain_text("Bob")
    await expect(table.nth(1)).to_contain_text("Cyd")
    paid = _Invoices.paid[1:]  # after the person's click on Ada's
    assert paid[:1] == ["Bob"], f"Bob's row paid the invoice of {paid[:1]}"
    assert paid == ["Bob", "Cyd"], paid
    await save(page, "seams-heal-approved-after-parameter.png")
    # The step is the button approved, in the row of the customer given.
    await page.goto(scenario_url)
    await expect(page.locator("#step-2 .sstep-target")).to_have_text(
        "button “Settle” in row “${customer}”"
    )


def pay_whom(invoices: str) -> dict[str, Any]:
    """:func:`pay_ada` with the customer a parameter: the name typed, and the row whose
    "Mark paid" is clicked."""
    data = pay_ada(invoices)
    data["params"] = {"customer": {"default": "Ada"}}
    data["steps"][1]["args"] = {"text": "${customer}"}
    data["steps"][2]["identity"] |= {"row": "${customer}", "row_words": []}
    return data


async def test_a_replay_for_one_customer_saved_as_a_scenario_pays_each_batch_row_s_customer(
    page: Page, server: Server, invoices: str, tmp_path: Path
) -> None:
    """A scenario that pays the invoice of its parameter ``customer`` is replayed for Bob
    from its page, and a script saves that replay as a scenario (the API's save of a run).
    A batch of the saved one, a row for Cyd, pays Cyd's invoice: the replay had recorded
    the click on the element as it found it (in Bob's row, by Bob's name), so every row of
    the saved scenario paid Bob's invoice again, and passed."""
    _Invoices.release, _Invoices.paid = 1, []
    await log_in(page, server)
    await import_scenario(page, server, tmp_path / "pay.json", pay_whom(invoices))
    replay = page.locator("#replay")
    await replay.get_by_label("customer").fill("Bob")
    await replay.get_by_role("button", name="Replay").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    replay_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    assert _Invoices.paid == ["Bob"], _Invoices.paid

    token = await asyncio.to_thread(
        api_token, client_log_in(server.base_url, (USERNAME, PASSWORD)), "save replay"
    )

    def save_replay() -> int:
        with script(server, token) as api:
            saved = api.post(f"/runs/{replay_id}/scenario", json={"name": "Pay, as replayed"})
            assert saved.status_code == 201, saved.text
            return int(saved.json()["id"])

    saved_id = await asyncio.to_thread(save_replay)
    await page.goto(f"{server.base_url}/scenarios/{saved_id}/")
    await expect(page.locator("#step-2 .sstep-target")).to_have_text(
        "button “Mark paid” in row “${customer}”"
    )

    rows = tmp_path / "customers.csv"
    await asyncio.to_thread(rows.write_text, "customer\nCyd\n")
    await run_batch(page, rows, at_once=1)
    await expect(page.locator("#batch-rows tr .badge")).to_have_text(["passed"])
    await expect(page.locator("#batch .hint")).to_contain_text("1 row from customers.csv")
    assert _Invoices.paid == ["Bob", "Cyd"], f"Cyd's row paid {_Invoices.paid[1:]}"
    await save(page, "seams-replay-saved-keeps-parameter.png")


async def each_row_pays_its_own(page: Page, tmp_path: Path, column: str, rows: list[str]) -> None:
    """From a scenario's page: a batch of ``rows`` (the values of ``column``), one after
    the other; each passes, and each paid its own customer's invoice, in order."""
    before = len(_Invoices.paid)
    file = tmp_path / f"{column}.csv"
    await asyncio.to_thread(file.write_text, "\n".join([column, *rows]) + "\n")
    await run_batch(page, file, at_once=1)
    await expect(page.locator("#batch-rows tr .badge")).to_have_text(["passed"] * len(rows))
    paid = _Invoices.paid[before:]
    assert paid[:1] == rows[:1], f"{rows[0]}'s row paid the invoice of {paid[:1]}"
    assert paid == rows, paid


async def test_a_value_made_a_parameter_follows_into_where_each_row_s_link_leads(
    page: Page, server: Server, invoices: str, tmp_path: Path
) -> None:
    """Each row has its own "Pay" link, to ``/paid?who=<customer>``.  A scenario recorded
    paying Bob's (his name typed into Find, then his row's link) is imported, the typed
    "Bob" made the parameter ``customer`` on its page, and a batch of Ada and Cyd run:
    each row pays its own customer's invoice.  The link was found by where Bob's led,
    which making the parameter left alone: every row paid Bob's, and passed."""
    _Invoices.release, _Invoices.paid = 3, []
    pay = {"role": "link", "name": "Pay", "text": "Pay", "tag": "a", "row": "Bob",
           "target": f"{invoices}/paid?who=Bob", "section": "Orders", "name_count": 3,
           "row_peers": 1, "row_words": ["bob"]}  # fmt: skip
    recorded = {"format": "tabwright.scenario", "version": 1, "name": "Pay by link",
                "base_url": invoices + "/", "steps": [
                    _step("navigate", {"url": invoices + "/orders"}),
                    _step("type", {"text": "Bob"}, "textbox", "Find"),
                    {"action": "click", "args": {}, "identity": pay},
                ]}  # fmt: skip
    await log_in(page, server)
    scenario_url = await import_scenario(page, server, tmp_path / "pay.json", recorded)
    await make_parameter(page, 1, "customer")
    await expect(page.locator("#step-2 .sstep-target")).to_have_text(
        "link “Pay” in row “${customer}”"
    )

    await each_row_pays_its_own(page, tmp_path, "customer", ["Ada", "Cyd"])
    await save(page, "seams-parameter-in-link-target.png")
    await page.goto(scenario_url)
    await expect(page.locator("#step-2 .sstep-target")).to_have_text(
        "link “Pay” in row “${customer}”"
    )


async def test_a_value_edited_to_another_parameter_takes_the_row_it_pays_along(
    page: Page, server: Server, invoices: str, tmp_path: Path
) -> None:
    """A scenario pays the invoice of its parameter ``customer`` (typed into Find, and
    the row whose "Mark paid" is clicked).  The person changes the typed value to
    ``${client}`` on its page and runs a batch of clients, Bob and Cyd: each row pays its
    client's invoice.  The row kept ``${customer}`` (its default Ada): every row typed its
    client and paid Ada's invoice, and passed.  And ``client`` takes the default
    ``customer`` had: a replay given no value pays Ada's invoice, as before the edit (the
    new parameter had no default, and the replay asked for a value)."""
    _Invoices.release, _Invoices.paid = 1, []
    await log_in(page, server)
    scenario_url = await import_scenario(page, server, tmp_path / "pay.json", pay_whom(invoices))
    typed = page.get_by_test_id("scenario-steps").locator("li.sstep").nth(1)
    await typed.get_by_text("Change values").click()
    await typed.get_by_label("text", exact=True).fill("${client}")
    await typed.get_by_role("button", name="Save step 1").click()
    await expect(page.get_by_role("status")).to_contain_text(
        "Step 1 changed, and so did the steps and checks that used its value: step 2: "
    )
    await expect(page.locator("#step-2 .sstep-target")).to_have_text(
        "button “Mark paid” in row “${client}”"
    )

    await expect(page.get_by_role("textbox", name="Default of client")).to_have_value("Ada")

    await each_row_pays_its_own(page, tmp_path, "client", ["Bob", "Cyd"])
    await save(page, "seams-edited-value-takes-its-row-along.png")
    await page.goto(scenario_url)
    await page.locator("#replay").get_by_role("button", name="Replay").click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    assert _Invoices.paid[-1:] == ["Ada"], _Invoices.paid


async def test_a_call_to_a_scenario_recorded_elsewhere_on_the_site_replays_and_exports(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """ "Orders" (recorded under ``/orders``) gets a step that calls "Open sign-in"
    (recorded at the site's root) on its page, and is replayed from there, at its own
    base URL, then at another build's mount; its pytest export runs there too.  Each opens
    the sign-in page where it is: the called scenario was moved into the caller's folder
    (``/orders/login``, not found), and every replay of "Orders" failed."""
    with loopback_app(Mounted) as app:
        await log_in(page, server)
        opens = {"format": "tabwright.scenario", "version": 1, "name": "Open sign-in",
                 "base_url": app + "/", "steps": [
                     _step("navigate", {"url": f"{app}/login"}),
                     _step("expect", {"kind": "text_visible", "text": "Sign in"})]}  # fmt: skip
        orders = {"format": "tabwright.scenario", "version": 1, "name": "Orders",
                  "base_url": f"{app}/orders/", "steps": [
                      _step("navigate", {"url": f"{app}/orders/list.html"}),
                      _step("expect", {"kind": "text_visible", "text": "Orders"})]}  # fmt: skip
        await import_scenario(page, server, tmp_path / "opens.json", opens)
        await import_scenario(page, server, tmp_path / "orders.json", orders)
        await page.get_by_text("Add a step that calls another scenario").click()
        form = page.locator("#add-call")
        await form.get_by_label("Scenario").select_option(label="Open sign-in")
        await form.get_by_label("At step").fill("0")
        await form.get_by_role("button", name="Add the call").click()
        await expect(page.get_by_role("status")).to_contain_text("Step 0 calls another scenario")
        scenario_url = page.url

        for at, login in (("", "/login"), (f"{app}/v2/orders/", "/v2/login")):
            Mounted.asked = []
            await page.goto(scenario_url)
            replay = page.locator("#replay")
            if at:
                await replay.get_by_label("Base URL").fill(at)
            await replay.get_by_role("button", name="Replay").click()
            await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
            assert Mounted.asked[:1] == [login], Mounted.asked
        await save(page, "seams-call-recorded-elsewhere.png")

        await page.goto(scenario_url)
        code = await exported_pytest(page)
        Mounted.asked = []
        await asyncio.to_thread((tmp_path / "export").mkdir)
        status, out = await run_exported(code, tmp_path / "export", f"{app}/v2/orders/")
        assert status == 0, out[-3000:]
        assert Mounted.asked == ["/v2/login", "/v2/orders/list.html"], Mounted.asked


class _Signups(QuietHandler):
    """A new customer's form whose save leads, as a script or a template writes an
    address, to ``/customers?created=<name, spaces as %20>``; ``saved`` keeps the names."""

    saved: list[str] = []

    def do_GET(self) -> None:
        where = urlsplit(self.path)
        if where.path == "/customers/new":
            body = (
                '<h1>New customer</h1><form method="post" action="/customers/new">'
                '<label>Name <input name="name"></label><button>Save</button></form>'
            )
        else:
            created = html.escape(parse_qs(where.query).get("created", [""])[0])
            body = f"<h1>Customers</h1><p>Customer {created} was added</p>"
        self.send(200, f"<!doctype html><title>Customers</title>{body}".encode())

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        name = parse_qs(self.rfile.read(length).decode()).get("name", [""])[0]
        self.saved.append(name)
        self.send(303, Location=f"/customers?created={quote(name, safe='')}")


async def test_a_name_made_a_parameter_is_judged_where_its_save_led_however_encoded(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """A new customer saved as Ada Lovelace leads to ``?created=Ada%20Lovelace``: the
    person makes the typed name a parameter and runs a batch of two names.  Each passes,
    the app having saved it: replay looked for ``?created=Grace+Hopper`` where the app
    wrote ``Grace%20Hopper``, and failed every row the app had saved."""
    with loopback_app(_Signups) as app:
        _Signups.saved = []
        name = {"role": "textbox", "name": "Name", "tag": "input", "name_attr": "name"}
        save_button = {"role": "button", "name": "Save", "tag": "button"}
        added = {"kind": "text_visible", "text": "Customer Ada Lovelace was added"}
        recorded = {"format": "tabwright.scenario", "version": 1, "name": "Add a customer",
                    "base_url": app + "/", "steps": [
                        _step("navigate", {"url": f"{app}/customers/new"}),
                        {"action": "fill", "args": {"value": "Ada Lovelace"}, "identity": name},
                        {"action": "click", "args": {}, "identity": save_button,
                         "led_to": f"{app}/customers?created=Ada%20Lovelace"},
                        _step("expect", added)]}  # fmt: skip
        await log_in(page, server)
        await import_scenario(page, server, tmp_path / "add.json", recorded)
        await make_parameter(page, 1, "name")
        rows = tmp_path / "names.csv"
        await asyncio.to_thread(rows.write_text, "name\nGrace Hopper\nKatherine Johnson\n")
        await run_batch(page, rows, at_once=1)
        await expect(page.locator("#batch-rows tr .badge")).to_have_text(["passed"] * 2)
        assert _Signups.saved == ["Grace Hopper", "Katherine Johnson"], _Signups.saved
        await save(page, "seams-parameter-where-its-save-led.png")


class _Orders(QuietHandler):
    """Order 12 on two builds: ``/v1/`` asks ``confirm("Delete order 12?")`` before its
    Delete deletes it; ``/v2/`` says instead, in an alert, that it can't be deleted (an
    invoice holds it), and deletes nothing.  Each delete is kept in ``deleted``."""

    deleted: list[str] = []

    def do_GET(self) -> None:
        build = urlsplit(self.path).path.split("/")[1]
        click = ('if (confirm("Delete order 12?")) fetch("delete", {method: "POST"})'
                 '.then(() => { state.textContent = "Deleted"; });') if build == "v1" else (
                 'alert("Order 12 cannot be deleted: an invoice holds it");')  # fmt: skip
        self.send(
            200,
            f"""<!doctype html><title>Order 12</title><main><h1>Order 12</h1>
            <p id=state>Open</p><button id=remove>Delete</button></main>
            <script>remove.onclick = () => {{ {click} }};</script>""".encode(),
        )

    def do_POST(self) -> None:
        self.deleted.append(self.path)
        self.send(200, b"{}", Content_Type="application/json")


async def test_a_dialog_the_run_answered_is_answered_in_replay_only_when_of_its_kind(
    page: Page, server: Server, browser: BrowserSession, tmp_path: Path
) -> None:
    """The agent accepts the confirm that order 12's Delete asks, and the order is deleted;
    the person saves the run as a scenario (no check ticked).  The next build says in an
    alert that the order can't be deleted, and deletes nothing: the alert took the answer
    meant for the question, and the replay and its export passed.  The saved dialog step
    answers a confirm only, as its run did: the alert fails the Delete in both."""
    _Orders.deleted = []
    with loopback_app(_Orders) as app:
        snap = await fresh_snapshot(browser, f"{app}/v1/orders/12")
        delete = {"action": "click", "ref": ref_of(snap, "button", "Delete")}
        server.llm.script(
            '<action>{"action": "dialog", "accept": true}</action>',
            "<action>" + json.dumps(delete) + "</action>",
            '<action>{"action": "done", "summary": "order 12 deleted"}</action>',
        )
        await log_in(page, server)
        await start_run(page, f"{app}/v1/orders/12", "Delete order 12", planner="openai")
        await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
        assert _Orders.deleted == ["/v1/orders/delete"], _Orders.deleted

        await page.get_by_role("link", name="Save as scenario…").click()
        await page.get_by_label("Name", exact=True).fill("Delete order 12")
        for box in await page.get_by_test_id("proposed-checks").get_by_role("checkbox").all():
            await box.uncheck()
        await page.get_by_role("button", name="Save as scenario").click()
        heading = page.get_by_role("heading", name="Delete order 12", exact=True)
        await expect(heading).to_be_visible()
        scenario_url = page.url
        await expect(page.get_by_test_id("scenario-steps")).to_contain_text("kind")
        await save(page, "seams-dialog-kind-saved.png")

        await page.locator("#replay").get_by_label("Base URL").fill(f"{app}/v2/orders/")
        await page.get_by_role("button", name="Replay").click()
        await expect(page.locator("#status")).to_have_text("failed", timeout=LIVE_MS)
        await expect(page.locator("body")).to_contain_text(
            "unexpected dialog appeared and was dismissed: alert"
        )
        await save(page, "seams-dialog-of-another-kind-failed.png")

        await page.goto(scenario_url)
        code = await exported_pytest(page)
        status, out = await run_exported(code, tmp_path, f"{app}/v2/orders/")
        assert status == 1, out[-3000:]
        assert "alert 'Order 12 cannot be deleted: an invoice holds it'" in out, out[-3000:]
        status, out = await run_exported(code, tmp_path, f"{app}/v1/orders/")  # its own build
        assert status == 0, out[-3000:]
        assert _Orders.deleted == ["/v1/orders/delete"] * 2, _Orders.deleted


def delete_whom(app: str) -> dict[str, Any]:
    """Delete a person, the name a parameter: the search for them, then the Delete of the
    row that shows them (the search's only one, as recorded), and a check of no error."""
    delete = {"role": "button", "kind": "press", "name": "Delete", "text": "Delete",
              "tag": "button", "target": f"{app}/delete", "method": "post",
              "row": "${name} Sales Leeds Active", "name_count": 1, "row_peers": 1}  # fmt: skip
    return {"format": "tabwright.scenario", "version": 1, "name": "Delete a person",
            "base_url": app + "/", "params": {"name": {"default": "Ada Lovelace"}},
            "steps": [_step("navigate", {"url": app + "/people?q=${name}"}),
                      {"action": "click", "args": {}, "identity": delete},
                      _step("expect", {"kind": "no_error"})]}  # fmt: skip


async def batch_of(page: Page, rows: Path, names: list[str], at_once: int) -> Locator:
    """From a scenario's page: a batch of one row per name (its ``name`` column), ``at_once``
    rows at a time, started; the rows' status badges, once each row is listed."""
    await asyncio.to_thread(rows.write_text, "name\n" + "".join(f"{n}\n" for n in names))
    form = page.get_by_test_id("batch-form")
    await form.get_by_label("Rows (.csv or .json)").set_input_files(rows)
    await form.get_by_label("Rows at once").fill(str(at_once))
    await form.get_by_role("button", name="Run the batch").click()
    badges = page.locator("#batch-rows tr .badge")
    await expect(badges).to_have_count(len(names))
    return badges


async def test_a_batch_row_naming_someone_not_there_deletes_no_one_else(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """A batch of a scenario that deletes the person its row names: the row "Ann Lee",
    where only Ann Leeds is left (deleted already, or a typo in the file), deleted Ann
    Leeds (her row the search's only one, reading as his in all but one word) and
    passed; so did the row "Ann" (her name begins with it), and the step was written
    back as the row of "${name} Leeds".  Now each deletes no one and waits for a person,
    saying no row shows the name; the next row deletes its own, and the step is as it
    was."""
    _People.narrows = True
    _People.people = ["Ann Leeds", "Bob Smith", "Carl Jung"]
    with loopback_app(_People) as app:
        await log_in(page, server)
        scenario_url = await import_scenario(
            page, server, tmp_path / "delete.json", delete_whom(app)
        )
        names = ["Ann Lee", "Ann", "Bob Smith"]
        badges = await batch_of(page, tmp_path / "people.csv", names, 2)
        await expect(badges.nth(2)).to_have_text("passed", timeout=LIVE_MS)
        # The rows for "Ann Lee" and "Ann" wait for a person: no row shows either.
        for at, name in enumerate(names[:2]):
            row = page.locator("#batch-rows tr").nth(at)
            await expect(row).to_contain_text(f'row without "{name}"', timeout=LIVE_MS)
            await expect(badges.nth(at)).not_to_have_text("passed")
        await save(page, "seams-batch-row-of-someone-not-there.png")
        assert _People.people == ["Ann Leeds", "Carl Jung"], _People.people
        kept = await page.request.get(scenario_url.rstrip("/") + "/export.json")
        delete = json.loads(await kept.text())["steps"][1]["identity"]
        assert delete["row"] == "${name} Sales Leeds Active", delete


def rename_customer(app: str) -> dict[str, Any]:
    """Rename customer 1 to the name a parameter gives, saved with no check after it."""
    name = {"role": "textbox", "name": "Name:", "tag": "input", "name_attr": "name"}
    save_ = {"role": "button", "name": "Save and continue editing", "tag": "button",
             "text": "Save and continue editing", "name_attr": "_continue"}  # fmt: skip
    return {"format": "tabwright.scenario", "version": 1, "name": "Rename a customer",
            "base_url": app + "/", "params": {"name": {"default": "Acme Ltd"}},
            "steps": [_step("navigate", {"url": app + "/customers/1/change/"}),
                      {"action": "fill", "args": {"value": "${name}"}, "identity": name},
                      {"action": "click", "args": {}, "identity": save_}]}  # fmt: skip


async def test_a_batch_row_whose_name_the_app_refuses_on_its_form_fails(
    page: Page, server: Server, tmp_path: Path, office: Office
) -> None:
    """A batch of a scenario that renames a customer, no check after its Save: the row
    whose name another customer holds is refused by the app on the form itself (HTTP 200,
    the same address, an error list above the field), and that row fails, saying what the
    page said; before, it passed having saved nothing.  The next row renames."""
    office.reset(taken={"Acme Holdings"})
    await log_in(page, server)
    await import_scenario(page, server, tmp_path / "rename.json", rename_customer(office.url))
    badges = await batch_of(page, tmp_path / "names.csv", ["Acme Holdings", "Acme Group"], 1)
    await expect(badges.nth(1)).to_have_text("passed", timeout=LIVE_MS)
    await expect(badges.nth(0)).to_have_text("failed")
    refused = page.locator("#batch-rows tr").first
    await expect(refused).to_contain_text("the app answered what it sent on the same page")
    await expect(refused).to_contain_text("Please correct the error below.")
    await save(page, "seams-batch-row-refused-on-its-form.png")
    assert office.customers == {1: "Acme Group"}, office.customers
