"""Features a person combines in an afternoon, each journey through the dashboard in a real
browser: a scenario that signs in again with its login scenario, with parameters, in a
batch and on a schedule, exported; uploads whose file is a parameter; what a batch, a
schedule and a replay refuse alike.  The app is our own on loopback: a till (its sign-in
page, a form behind it, and what it was sent).  (The journeys of a replay's values: in
test_seams_values_e2e.)"""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Iterator
from email.parser import BytesParser
from email.policy import default
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.daphne import api_token
from tests.daphne import log_in as client_log_in
from tests.e2e.journeys import exported_pytest, import_scenario, script, until, wait_until
from tests.e2e.journeys import scenario_step as _step
from tests.e2e.ui import (
    LIVE_MS,
    OTHER_PASSWORD,
    OTHER_USERNAME,
    PASSWORD,
    SHOP_PASSWORD,
    UPLOADS,
    USERNAME,
    Server,
    log_in,
    run_batch,
    save,
    save_sign_in,
)  # fmt: skip
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

LOGIN = (
    '<form method="post" action="/login"><label>User <input name="user"></label>'
    '<label>Password <input type="password" name="pw"></label><button>Sign in</button></form>'
)
ENTRY = (
    '<h1>New entry</h1><form method="post" action="/save"><label>Customer '
    '<input name="customer"></label><label>Amount <input name="amount"></label>'
    "<button>Save</button></form>"
)


class _Till(QuietHandler):
    """A till: ``/login`` signs a user in (the password is the shop's), ``/new`` is the
    form of a new entry behind it (no session: sent to ``/login``), ``/save`` keeps the
    entry with who saved it in ``saved`` and says "Saved for <customer>";
    :meth:`end_sessions` signs everyone out."""

    saved: list[dict[str, str]] = []
    sessions: dict[str, str] = {}  # cookie -> user ("": the session ended)

    @classmethod
    def end_sessions(cls) -> None:
        """Every session ends now (its cookie is never given to anyone else)."""
        for token in cls.sessions:
            cls.sessions[token] = ""

    def _user(self) -> str | None:
        cookies = (self.headers.get("Cookie") or "").split(";")
        return next((self.sessions[c.strip()] for c in cookies if self.sessions.get(c.strip())),
                    None)  # fmt: skip

    def _page(self, body: str) -> None:
        self.send(200, f"<!doctype html><title>Till</title><main>{body}</main>".encode())

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/login":
            self._page(LOGIN)
        elif self._user() is None:
            self.send(302, Location="/login")
        else:
            self._page(ENTRY)

    def do_POST(self) -> None:
        form = self.posted()
        if self.path == "/login":
            if form.get("pw") != SHOP_PASSWORD or not form.get("user"):
                self._page("<p>Wrong password</p>" + LOGIN)
                return
            token = f"s{len(self.sessions) + 1}=1"
            self.sessions[token] = form["user"]
            self.send(302, Location="/new", **{"Set-Cookie": f"{token}; Path=/"})
            return
        user = self._user()
        if user is None:
            self.send(302, Location="/login")
            return
        self.saved.append({**form, "by": user})
        self._page(f"<h1>Saved</h1><p>Saved for {form.get('customer', '')}</p>")


class _Expenses(QuietHandler):
    """An expense form: ``/expense`` sends a receipt (a file); what it was sent is kept in
    ``received`` (file name, text) and said: "Received <file name>"."""

    received: list[tuple[str, str]] = []

    def do_GET(self) -> None:
        self.send(200, b"<!doctype html><title>Expenses</title><main><h1>New expense</h1>"
                  b'<form method="post" action="/expense" enctype="multipart/form-data">'
                  b'<label>Receipt <input type="file" name="receipt"></label>'
                  b"<button>Send</button></form></main>")  # fmt: skip

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        head = f"Content-Type: {self.headers.get('Content-Type')}\r\n\r\n".encode()
        sent = BytesParser(policy=default).parsebytes(head + self.rfile.read(length))
        files = [(part.get_filename() or "", part.get_content()) for part in sent.iter_parts()]
        name, data = files[0] if files else ("", b"")
        self.received.append((name, data.decode() if isinstance(data, bytes) else data))
        self.send(200, self.answer(name))

    def answer(self, name: str) -> bytes:
        return f"<!doctype html><h1>Sent</h1><p>Received {html.escape(name)}</p>".encode()


class _CheckedExpenses(_Expenses):
    """The expense form of an app that checks a receipt as it is chosen: a file whose
    name is not a receipt's is refused there (the input emptied, "avatar.txt is not a
    receipt" said beside it); sent, an expense says "Expense sent", with a file or not."""

    def do_GET(self) -> None:
        self.send(200, b"<!doctype html><title>Expenses</title><main><h1>New expense</h1>"
                  b'<form method="post" action="/expense" enctype="multipart/form-data">'
                  b'<label>Receipt <input type="file" name="receipt"></label>'
                  b'<p id="said"></p><button>Send</button></form><script>'
                  b'document.querySelector("input").addEventListener("change", (e) => {'
                  b"  const file = e.target.files[0];"
                  b"  if (file && !file.name.startsWith('receipt')) {"
                  b'    e.target.value = "";'
                  b'    const said = document.getElementById("said");'
                  b'    said.className = "error";'
                  b"    said.textContent = `${file.name} is not a receipt`;"
                  b"  }"
                  b"});</script></main>")  # fmt: skip

    def answer(self, name: str) -> bytes:
        return b"<!doctype html><h1>Expense sent</h1>"


@pytest.fixture(scope="module")
def till() -> Iterator[str]:
    with loopback_app(_Till) as url:
        yield url


def sign_in(till: str, params: dict[str, Any], name: str) -> dict[str, Any]:
    """The till's login scenario: the user is a parameter (``params``: its declaration)."""
    return {"format": "tabwright.scenario", "version": 1, "name": name,
            "base_url": till + "/", "params": params, "steps": [
                _step("navigate", {"url": till + "/login"}),
                _step("fill", {"value": "${user}"}, "textbox", "User"),
                _step("fill", {"value": "${SECRET:PASSWORD}"}, "textbox", "Password"),
                _step("click", {}, "button", "Sign in")]}  # fmt: skip


def new_entry(till: str, name: str, login: str) -> dict[str, Any]:
    """A new entry for a customer (a parameter with a default), which signs in with the
    till's login scenario ``login`` when the till asks."""
    return {"format": "tabwright.scenario", "version": 1, "name": name,
            "base_url": till + "/", "login_scenario": login,
            "params": {"customer": {"default": "Ada"}}, "steps": [
                _step("navigate", {"url": till + "/new"}),
                _step("fill", {"value": "${customer}"}, "textbox", "Customer"),
                _step("fill", {"value": "12"}, "textbox", "Amount"),
                _step("click", {}, "button", "Save"),
                _step("expect", {"kind": "text_visible", "text": "Saved for ${customer}"}),
            ]}  # fmt: skip


def entry_over_api(api: httpx.Client, till: str, name: str) -> int:
    """The till's login scenario (its user a parameter) and a new entry signing in with
    it, both made over the API as ``name`` sign-in and ``name`` entry; the entry's id."""
    made = api.post("/scenarios", json=sign_in(till, {"user": {}}, f"{name} sign-in"))
    assert made.status_code == 201, made.text
    made = api.post("/scenarios", json=new_entry(till, f"{name} entry", f"{name} sign-in"))
    assert made.status_code == 201, made.text
    return made.json()["id"]


async def imported(page: Page, server: Server, folder: Path, data: dict[str, Any]) -> str:
    """``data`` imported on the scenario list; the scenario's page URL."""
    return await import_scenario(page, server, folder / f"{data['name']}.json", data)


async def test_a_login_scenario_with_a_parameter_of_its_own_signs_in_from_the_export(
    page: Page, server: Server, till: str, tmp_path: Path
) -> None:
    """The till's login scenario needs a user, with no default; the entry's pytest export
    signs in again with it.  Run without the user, the export fails before its first step
    naming the parameter and its variable (its handler raised a KeyError the page never
    heard of: the step waited its time out on the sign-in page); with it, it signs in as
    that user and saves."""
    await log_in(page, server)
    await imported(page, server, tmp_path, sign_in(till, {"user": {}}, "Till sign-in"))
    await imported(page, server, tmp_path, new_entry(till, "Till entry", "Till sign-in"))
    code = await exported_pytest(page)
    env = {"TABWRIGHT_SECRET_PASSWORD": SHOP_PASSWORD, "TABWRIGHT_PARAM_customer": "Grace"}
    (tmp_path / "without").mkdir()
    status, out = await run_exported(code, tmp_path / "without", till, env=env)
    assert status == 1, out[-3000:]
    assert "no value for parameter 'user' (environment variable TABWRIGHT_PARAM_user)" in out
    assert "KeyError" not in out, out[-3000:]
    (tmp_path / "with").mkdir()
    env["TABWRIGHT_PARAM_user"] = "bob"
    status, out = await run_exported(code, tmp_path / "with", till, env=env)
    assert status == 0, out[-3000:]
    assert _Till.saved[-1] == {"customer": "Grace", "amount": "12", "by": "bob"}


async def test_a_batch_signs_each_row_in_as_its_own_user_with_the_login_scenario(
    page: Page, server: Server, till: str, tmp_path: Path
) -> None:
    """The till's login scenario needs a user the entry itself does not have: the replay
    form offers it in a group of its own, optional; a batch gives each row's user in a
    column, and each row, starting signed out, signs in as its user; a row without one
    fails naming the parameter and the login scenario (the batch refused the column: a
    replay could give it no value, and every sign-in again failed)."""
    await log_in(page, server)
    await imported(page, server, tmp_path, sign_in(till, {"user": {}}, "Batch sign-in"))
    scenario_url = await imported(
        page, server, tmp_path, new_entry(till, "Batch entry", "Batch sign-in")
    )
    group = page.locator("#replay").get_by_test_id("login-params")
    await expect(group.locator("legend")).to_have_text("For signing in again (Batch sign-in)")
    user = group.get_by_label("user", exact=True)
    await expect(user).to_have_value("")
    assert not await user.evaluate("(field) => field.required")
    await group.scroll_into_view_if_needed()
    await save(page, "scenario-replay-login-params.png")
    rows = tmp_path / "rows.csv"
    await asyncio.to_thread(rows.write_text, "customer,user\nLinus,lin\nMargaret,meg\nNobody,\n")
    await run_batch(page, rows, 1)
    table = page.locator("#batch-rows tr")
    await expect(table.locator(".badge")).to_have_text(["passed", "passed", "failed"])
    await expect(table.nth(2)).to_contain_text(
        "the login scenario 'Batch sign-in' signs in with the parameter 'user', and the "
        "replay has no value for it"
    )
    # What to do about it fits the cause (it said "the page lost" the steps before it).
    href = await table.nth(2).get_by_role("link").first.get_attribute("href") or ""
    run_id = int(href.rstrip("/").rsplit("/", 1)[-1])
    token = await asyncio.to_thread(
        api_token, client_log_in(server.base_url, (USERNAME, PASSWORD)), "row"
    )
    with script(server, token) as api:
        steps = (await asyncio.to_thread(api.get, f"/runs/{run_id}")).json()["steps"]
    hints = [step["error"]["hint"] for step in steps if step["error"]]
    assert hints and "the page lost them" not in hints[-1], steps
    assert "give it to the replay as one of its parameters" in hints[-1], steps
    saved = [(entry["customer"], entry["by"]) for entry in _Till.saved]
    assert ("Linus", "lin") in saved and ("Margaret", "meg") in saved, saved
    assert "Nobody" not in {customer for customer, _ in saved}, saved
    # Replayed from its page with a user, it signs in as that user.
    await page.goto(scenario_url)
    await group.get_by_label("user", exact=True).fill("ada")
    await page.locator("#replay").get_by_role("button", name="Replay").click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    assert _Till.saved[-1] == {"customer": "Ada", "amount": "12", "by": "ada"}


async def test_a_batch_row_signed_in_as_its_own_user_leaves_the_shared_sign_in_profile_alone(
    page: Page, server: Server, till: str, tmp_path: Path
) -> None:
    """A person signs in to the till as ada in a conversation and saves the tab's sign-in
    as a profile; the till ends every session; a batch of entries starting with that
    profile has a row that signs in again as its own user (lin); the next replay with the
    profile signs in again as ada, the login scenario's own user, and saves its entry as
    ada (the row's sign-in was saved over the profile: every later run with it was lin's)."""
    await log_in(page, server)
    await imported(page, server, tmp_path,
                   sign_in(till, {"user": {"default": "ada"}}, "Profile sign-in"))  # fmt: skip
    scenario_url = await imported(
        page, server, tmp_path, new_entry(till, "Profile entry", "Profile sign-in")
    )
    await page.goto(f"{server.base_url}/")
    task = "\n".join([f"go to {till}/login", 'type "ada" into "User"',
                      'type "${SECRET:PASSWORD}" into "Password"', 'click "Sign in"',
                      "wait for New entry", "click Nowhere"])  # fmt: skip
    await save_sign_in(page, f"{till}/login", task, "till")
    _Till.end_sessions()

    await page.goto(scenario_url)
    batch = page.get_by_test_id("batch-form")
    await batch.get_by_label("Sign-in profile").select_option(label="till")
    rows = tmp_path / "rows.csv"
    await asyncio.to_thread(rows.write_text, "customer,user\nLinus,lin\n")
    await run_batch(page, rows, 1)
    table = page.locator("#batch-rows tr")
    await expect(table.locator(".badge")).to_have_text(["passed"])
    assert _Till.saved[-1] == {"customer": "Linus", "amount": "12", "by": "lin"}
    await table.get_by_role("link").first.click()
    await expect(page.locator("#chat")).to_contain_text(
        "signed in again with the login scenario 'Profile sign-in'; the sign-in profile "
        "'till' was not saved again: the login scenario signed in with the value this "
        "replay gave 'user', not its own"
    )

    await page.goto(scenario_url)
    replay = page.locator("#replay")
    await replay.get_by_label("Sign-in profile").select_option(label="till")
    await replay.get_by_role("button", name="Replay").click()
    await expect(page.locator("#status")).to_have_text("succeeded", timeout=LIVE_MS)
    assert _Till.saved[-1] == {"customer": "Ada", "amount": "12", "by": "ada"}
    await expect(page.locator("#chat")).to_contain_text(
        "signed in again with the login scenario 'Profile sign-in'; the sign-in profile "
        "'till' was saved again"
    )
    await save(page, "replay-profile-saved-again.png")


async def _receipts_batch(page: Page, server: Server, folder: Path, app: str, said: str) -> str:
    """A scenario that sends an expense with a receipt, its file the parameter ``file``,
    checked by the page saying ``said``, imported (its page's address is returned) and run
    as a batch of two rows: receipt.txt and avatar.txt."""
    field = {"tag": "input", "name_attr": "receipt", "selectors": ["input[name=receipt]"]}
    receipt = {"format": "tabwright.scenario", "version": 1, "name": "Send an expense",
               "base_url": app + "/", "params": {"file": {"default": "receipt.txt"}},
               "steps": [
                   _step("navigate", {"url": app + "/expense"}),
                   {"action": "upload", "args": {"files": ["${file}"]}, "identity": field},
                   _step("click", {}, "button", "Send"),
                   _step("expect", {"kind": "text_visible", "text": said}),
               ]}  # fmt: skip
    await log_in(page, server)
    scenario_url = await imported(page, server, folder, receipt)
    rows = folder / "rows.csv"
    await asyncio.to_thread(rows.write_text, "file\nreceipt.txt\navatar.txt\n")
    await run_batch(page, rows, 1)
    return scenario_url


async def test_an_upload_whose_file_is_a_parameter_sends_each_row_s_file_and_the_export_s(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """A receipt's upload, its file a parameter: a batch sends each row's file from the
    upload folder, and the pytest export sends the file its variable names from
    TABWRIGHT_UPLOAD_DIR (it sent a file named "${file}" from the folder it ran in);
    without the variable, or given a name outside the folder, it fails saying so."""
    with loopback_app(_Expenses) as app:
        scenario_url = await _receipts_batch(page, server, tmp_path, app, "Received ${file}")
        table = page.locator("#batch-rows tr")
        await expect(table.locator(".badge")).to_have_text(["passed", "passed"])
        sent = {name: text for name, text in _Expenses.received}
        assert sent == {"receipt.txt": "receipt 2026-11\n", "avatar.txt": "portrait\n"}, sent

        await page.goto(scenario_url)
        code = await exported_pytest(page)
        env = {"TABWRIGHT_UPLOAD_DIR": str(UPLOADS), "TABWRIGHT_PARAM_file": "receipt.txt"}
        _Expenses.received.clear()
        (tmp_path / "given").mkdir()
        status, out = await run_exported(code, tmp_path / "given", app, env=env)
        assert status == 0, out[-3000:]
        assert _Expenses.received == [("receipt.txt", "receipt 2026-11\n")]
        (tmp_path / "no-folder").mkdir()
        status, out = await run_exported(code, tmp_path / "no-folder", app,
                                         env={**env, "TABWRIGHT_UPLOAD_DIR": ""})  # fmt: skip
        assert status == 1, out[-3000:]
        assert "TABWRIGHT_UPLOAD_DIR names no upload folder" in out, out[-3000:]
        (tmp_path / "outside").mkdir()
        env["TABWRIGHT_PARAM_file"] = "../../pyproject.toml"
        status, out = await run_exported(code, tmp_path / "outside", app, env=env)
        assert status == 1, out[-3000:]
        assert "refused upload '../../pyproject.toml': it is outside the upload folder" in out
        assert _Expenses.received == [("receipt.txt", "receipt 2026-11\n")]


async def test_a_batch_row_whose_file_the_app_refuses_fails_at_its_upload_and_sends_nothing(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """The receipt's file is a parameter; the app refuses a file that is not a receipt as
    it is chosen (it empties the input and says so) and sends an expense without one all
    the same.  The batch's row of such a file fails at its upload, saying what the page
    said, and sends nothing; the row of a receipt passes.  (Its upload passed, the expense
    went without the file and the row said passed, as did the export.)"""
    _Expenses.received.clear()
    with loopback_app(_CheckedExpenses) as app:
        scenario_url = await _receipts_batch(page, server, tmp_path, app, "Expense sent")
        table = page.locator("#batch-rows tr")
        await expect(table.locator(".badge")).to_have_text(["passed", "failed"])
        await expect(table.nth(1)).to_contain_text(
            "the page refused avatar.txt: 'avatar.txt is not a receipt'"
        )
        await save(page, "batch-row-upload-refused.png")
        assert _Expenses.received == [("receipt.txt", "receipt 2026-11\n")]  # nothing else

        await page.goto(scenario_url)
        code = await exported_pytest(page)
        env = {"TABWRIGHT_UPLOAD_DIR": str(UPLOADS), "TABWRIGHT_PARAM_file": "avatar.txt"}
        status, out = await run_exported(code, tmp_path / "export", app, env=env)
        assert status == 1, out[-3000:]
        assert "the page refused avatar.txt: 'avatar.txt is not a receipt'" in out, out[-3000:]
        assert _Expenses.received == [("receipt.txt", "receipt 2026-11\n")]


async def test_a_login_scenario_s_parameter_is_not_renamed_under_a_schedule_that_signs_in_with_it(
    page: Page, server: Server, till: str, tmp_path: Path
) -> None:
    """The entry's schedule gives the user its login scenario signs in with; on the login
    scenario's page ``${user}`` renamed ``${login}`` is refused, naming the entry and its
    schedule (the edit went, and each firing was then refused: no such parameter 'user').
    Naming another login scenario, which signs in with no 'user', is refused alike."""
    await log_in(page, server)
    login_url = await imported(page, server, tmp_path, sign_in(till, {"user": {}}, "Edit sign-in"))
    other = sign_in(till, {"login": {}}, "Other sign-in")
    other["steps"][1]["args"]["value"] = "${login}"
    await imported(page, server, tmp_path, other)
    entry_url = await imported(
        page, server, tmp_path, new_entry(till, "Edit entry", "Edit sign-in")
    )
    await page.get_by_text("Schedule it").click()
    form = page.get_by_test_id("schedule-form")
    await form.get_by_label("When (cron)").fill("0 7 * * 1-5")
    await form.get_by_label("user", exact=True).fill("bob")
    await form.get_by_role("button", name="Schedule").click()
    schedule = page.get_by_test_id("schedule")
    await expect(schedule).to_contain_text("At 07:00, Monday through Friday")
    schedule_id = await schedule.get_attribute("data-schedule")

    await page.goto(login_url)
    user = page.locator("#step-1")
    await user.get_by_text("Change values").click()
    await user.get_by_label("value", exact=True).fill("${login}")
    await user.get_by_role("button", name="Save step 1").click()
    await expect(page.locator("body")).to_contain_text(
        f"'Edit entry' signs in with it: schedule {schedule_id} (0 7 * * 1-5) gives the "
        "parameter 'user', which it would no longer have"
    )
    await page.goto(login_url)
    await expect(page.locator("#step-1 .sstep-args")).to_contain_text("${user}")

    await page.goto(entry_url)
    await page.get_by_text("Settings: name, login scenario, delete").click()
    login = page.get_by_label("Login scenario")
    await login.select_option(label="Other sign-in")
    await page.get_by_role("button", name="Save the login scenario").click()
    await expect(page.locator("body")).to_contain_text(
        f"schedule {schedule_id} (0 7 * * 1-5) gives the parameter 'user', which it would "
        "no longer have"
    )
    await page.get_by_text("Settings: name, login scenario, delete").click()
    await expect(login.locator("option:checked")).to_have_text("Edit sign-in")


async def test_a_schedule_of_rows_from_a_file_fires_a_batch_that_signs_each_row_in(
    page: Page, server: Server, till: str, tmp_path: Path
) -> None:
    """*Schedule it* with a file of rows (a value with a comma, one with quotes and
    letters beyond ASCII, an empty cell, and the user each row signs in as with the login
    scenario): the page keeps the rows, *Run now* fires a batch of them, and the till got
    each entry from its user, the empty cell taking the default (the page answered a
    server error: the schedule's form read the file as batches no longer read one)."""
    await log_in(page, server)
    await imported(page, server, tmp_path, sign_in(till, {"user": {}}, "Rows sign-in"))
    await imported(page, server, tmp_path, new_entry(till, "Rows entry", "Rows sign-in"))
    rows = tmp_path / "rows.csv"
    await asyncio.to_thread(
        rows.write_text, 'customer,user\n"Hopper, Grace",lin\n"Quote ""Q"" Ünï",meg\n,bob\n'
    )
    await page.get_by_text("Schedule it").click()
    form = page.get_by_test_id("schedule-form")
    await form.get_by_label("When (cron)").fill("0 7 * * 1-5")
    await form.get_by_label("Batch rows (.csv or .json)").set_input_files(rows)
    await form.get_by_label("Rows at once").fill("1")
    await form.get_by_role("button", name="Schedule").click()
    schedule = page.get_by_test_id("schedule")
    await expect(schedule).to_contain_text("At 07:00, Monday through Friday")
    schedule_id = int(await schedule.get_attribute("data-schedule") or 0)
    stored = server.sql("select params, rows from dashboard_schedule where id = ?", (schedule_id,))
    assert stored, schedule_id
    assert json.loads(stored[0][1]) == [
        {"customer": "Hopper, Grace", "user": "lin"},
        {"customer": 'Quote "Q" Ünï', "user": "meg"},
        {"user": "bob"},  # the default of the day it fires
    ], stored
    await schedule.get_by_role("button", name="Run now").click()
    await expect(schedule.locator(".firings > li")).to_have_count(1, timeout=LIVE_MS)
    wanted = {("Hopper, Grace", "lin"), ('Quote "Q" Ünï', "meg"), ("Ada", "bob")}

    def entered() -> bool:
        return wanted <= {(entry["customer"], entry["by"]) for entry in _Till.saved}

    await until("the batch's three rows saved their entries", entered)
    firing = "select outcome from dashboard_schedulefiring where schedule_id = ?"

    def judged() -> bool:
        return [row[0] for row in server.sql(firing, (schedule_id,))] == ["ok"]

    await until("the firing is judged ok", judged)


async def test_a_batch_or_schedule_of_a_secret_not_granted_is_refused_before_it_runs(
    page: Page, server: Server, till: str, tmp_path: Path
) -> None:
    """A person nobody granted the till's password imports its entry (whose login
    scenario types ``${SECRET:PASSWORD}``), then asks for a batch of it and schedules it:
    each form says the secret is not granted, and no batch nor schedule is made (each
    was, and every row and firing failed at once, unattended, for the same reason)."""
    await log_in(page, server, OTHER_USERNAME, OTHER_PASSWORD)
    await imported(
        page, server, tmp_path, sign_in(till, {"user": {"default": "ada"}}, "Ungranted sign-in")
    )
    await imported(page, server, tmp_path, new_entry(till, "Ungranted entry", "Ungranted sign-in"))
    said = "the secret PASSWORD is not granted to this run's owner"
    rows = tmp_path / "rows.csv"
    await asyncio.to_thread(rows.write_text, "customer\nLinus\n")
    form = page.get_by_test_id("batch-form")
    await form.get_by_label("Rows (.csv or .json)").set_input_files(rows)
    await form.get_by_role("button", name="Run the batch").click()
    await expect(page.get_by_test_id("batch-form")).to_contain_text(said)
    await page.get_by_text("Schedule it").click()
    form = page.get_by_test_id("schedule-form")
    await form.get_by_label("When (cron)").fill("0 7 * * 1-5")
    await form.get_by_label("customer", exact=True).fill("Linus")
    await form.get_by_role("button", name="Schedule").click()
    await expect(page.get_by_test_id("schedule-form")).to_contain_text(said)
    await save(page, "scenario-schedule-secret-not-granted.png")
    made = "select count(*) from {} b join dashboard_scenario s on s.id = b.scenario_id"
    for table in ("dashboard_batch", "dashboard_schedule"):
        count = server.sql(made.format(table) + " where s.name = ?", ("Ungranted entry",))
        assert count == [(0,)], (table, count)


def test_a_schedule_given_both_values_and_rows_is_refused_and_keeps_what_it_had(
    server: Server, till: str
) -> None:
    """Over the API a schedule fires a replay with values or a batch of rows.  Given both,
    it is refused naming both, and nothing is stored; a change giving both to a schedule
    leaves it as it was (the values were dropped for the rows, silently, and a change
    giving both made it a replay with neither: each firing typed the defaults).  Given
    rows alone, it fires a batch of them, each row signing in as its user."""
    token = api_token(client_log_in(server.base_url, (USERNAME, PASSWORD)), "both")
    with script(server, token) as api:
        scenario = entry_over_api(api, till, "Both")
        when = {"cron": "0 7 * * 1-5", "timezone": "UTC"}
        values = {"customer": "Grace", "user": "gus"}
        both = {"params": values, "rows": [{"customer": "Linus", "user": "lin"}]}
        refused = api.post(f"/scenarios/{scenario}/schedules", json={**when, **both})
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["code"] == "schedule_invalid", error
        assert "params" in error["fields"] and "rows" in error["message"], error
        assert [s for s in api.get("/schedules").json() if s["scenario_id"] == scenario] == []

        kept = api.post(f"/scenarios/{scenario}/schedules", json={**when, "params": values})
        assert kept.status_code == 201, kept.text
        schedule = kept.json()["id"]
        refused = api.patch(f"/schedules/{schedule}", json=both)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == "schedule_invalid", refused.text
        now = api.get(f"/schedules/{schedule}").json()
        assert (now["params"], now["rows"]) == (values, None), now

        batch = api.patch(f"/schedules/{schedule}", json={"rows": both["rows"]})
        assert batch.status_code == 200, batch.text
        assert (batch.json()["params"], batch.json()["rows"]) == ({}, both["rows"]), batch.text
        fired = api.post(f"/schedules/{schedule}/fire")
        assert fired.status_code == 202, fired.text
        entry = {"customer": "Linus", "amount": "12", "by": "lin"}
        wait_until("the scheduled batch's row saved its entry", lambda: entry in _Till.saved)


def test_a_value_too_long_for_a_replay_is_refused_by_a_schedule_too(
    server: Server, till: str
) -> None:
    """A value over 10,000 characters is refused by the API's replay and batch, naming
    the parameter; a schedule of the same values, as a replay or as rows, is refused alike
    and stores nothing (it was kept, and each firing typed it)."""
    token = api_token(client_log_in(server.base_url, (USERNAME, PASSWORD)), "long")
    with script(server, token) as api:
        scenario = entry_over_api(api, till, "Long")
        long = "x" * 10_001
        refusals = [
            api.post(f"/scenarios/{scenario}/replays", json={"params": {"customer": long}}),
            api.post(f"/scenarios/{scenario}/batches", json={"rows": [{"customer": long}]}),
        ]
        when = {"cron": "0 7 * * 1-5", "timezone": "UTC"}
        for what in ({"params": {"customer": long}}, {"rows": [{"customer": "Ada"},
                                                             {"customer": long}]}):  # fmt: skip
            refusals.append(api.post(f"/scenarios/{scenario}/schedules", json={**when, **what}))
        for refused in refusals:
            assert refused.status_code == 400, refused.text[:500]
            error = refused.json()["error"]
            assert "customer" in json.dumps(error) and "10000" in json.dumps(error), error
        assert [s for s in api.get("/schedules").json() if s["scenario_id"] == scenario] == []
        kept = api.post(f"/scenarios/{scenario}/schedules", json={**when, "params": {}})
        assert kept.status_code == 201, kept.text
        changed = api.patch(f"/schedules/{kept.json()['id']}", json={"params": {"customer": long}})
        assert changed.status_code == 400, changed.text[:500]
        assert api.get(f"/schedules/{kept.json()['id']}").json()["params"] == {}


def test_an_empty_value_takes_the_default_in_an_api_replay_as_in_a_batch_s_cell(
    server: Server, till: str
) -> None:
    """A value given empty (or null) takes the parameter's default, in the API's replay
    as in a batch's empty cell or JSON row (the docs: the replay takes its values as a
    batch file's JSON takes them): the till gets the same entry from each (the replay
    typed an empty customer, and its check of "Saved for " held all the same)."""
    token = api_token(client_log_in(server.base_url, (USERNAME, PASSWORD)), "empty")
    with script(server, token) as api:
        scenario = entry_over_api(api, till, "Empty")
        batch = api.post(f"/scenarios/{scenario}/batches",
                         json={"csv": "customer,user\n,cel\n", "concurrency": 1})  # fmt: skip
        assert batch.status_code == 201, batch.text
        runs = []
        for user, customer in (("api", ""), ("nul", None)):
            replay = api.post(f"/scenarios/{scenario}/replays",
                              json={"params": {"customer": customer, "user": user}})  # fmt: skip
            assert replay.status_code == 201, replay.text
            assert replay.json()["params"]["customer"] == "Ada", replay.text
            runs.append(replay.json()["id"])
        entries = [{"customer": "Ada", "amount": "12", "by": by} for by in ("cel", "api", "nul")]
        wait_until("each saved its entry", lambda: all(e in _Till.saved for e in entries))
        ended = ("succeeded", "failed", "stopped", "paused")
        for run in runs:
            status = lambda run=run: api.get(f"/runs/{run}").json()["status"]  # noqa: E731
            wait_until("the replay ended", lambda status=status: status() in ended)
            assert status() == "succeeded", api.get(f"/runs/{run}").text


def test_a_base_url_a_schedule_refuses_is_refused_by_a_replay_and_a_batch_too(
    server: Server, till: str
) -> None:
    """A base URL with a line break or a tab in it is refused by a schedule, naming the
    field and where the character is; a replay and a batch of the same scenario refuse
    it alike, over the API and nothing starts (they queued a run whose start address
    held the line break, its checks of addresses then read against it)."""
    token = api_token(client_log_in(server.base_url, (USERNAME, PASSWORD)), "base")
    with script(server, token) as api:
        scenario = entry_over_api(api, till, "Base")
        before = len(api.get("/runs?limit=100").json())
        for bad in (f"{till}/\r\nX-Injected: 1", f"{till}/\tnew"):
            refusals = [
                api.post(f"/scenarios/{scenario}/schedules",
                         json={"cron": "0 7 * * *", "timezone": "UTC", "base_url": bad}),
                api.post(f"/scenarios/{scenario}/replays", json={"base_url": bad}),
                api.post(f"/scenarios/{scenario}/batches",
                         json={"rows": [{"customer": "Ada"}], "base_url": bad}),
            ]  # fmt: skip
            for refused in refusals:
                assert refused.status_code == 400, refused.text
                fields = refused.json()["error"]["fields"]
                assert "at character" in fields.get("base_url", ""), fields
        assert len(api.get("/runs?limit=100").json()) == before


async def test_a_check_its_parameter_left_empty_fails_in_the_replay_and_the_export(
    page: Page, server: Server, till: str, tmp_path: Path
) -> None:
    """The entry checks that the page shows its customer.  Replayed from its page with the
    customer emptied, the till saves an entry for nobody: the replay fails that check,
    saying its text is empty, and so does the pytest export run with the customer's
    variable empty (both passed: an empty text is "shown" on any page)."""
    await log_in(page, server)
    await imported(page, server, tmp_path, sign_in(till, {"user": {}}, "Blank sign-in"))
    entry = new_entry(till, "Blank entry", "Blank sign-in")
    entry["steps"].append(_step("expect", {"kind": "text_visible", "text": "${customer}"}))
    scenario_url = await imported(page, server, tmp_path, entry)
    form = page.locator("#replay")
    await form.get_by_label("customer", exact=True).fill("")
    await form.get_by_test_id("login-params").get_by_label("user", exact=True).fill("eve")
    await form.get_by_role("button", name="Replay").click()
    await expect(page.locator("#status")).to_have_text("failed", timeout=LIVE_MS)
    assert _Till.saved[-1] == {"customer": "", "amount": "12", "by": "eve"}
    await expect(page.locator("body")).to_contain_text(
        "its text is empty with the values it was given"
    )

    await page.goto(scenario_url)
    code = await exported_pytest(page)
    env = {"TABWRIGHT_SECRET_PASSWORD": SHOP_PASSWORD, "TABWRIGHT_PARAM_user": "eve",
           "TABWRIGHT_PARAM_customer": ""}  # fmt: skip
    (tmp_path / "empty").mkdir()
    status, out = await run_exported(code, tmp_path / "empty", till, env=env)
    assert status == 1, out[-3000:]
    assert "its text is empty with the values it was given" in out, out[-3000:]
    (tmp_path / "given").mkdir()
    status, out = await run_exported(
        code, tmp_path / "given", till, env={**env, "TABWRIGHT_PARAM_customer": "Hedy"}
    )
    assert status == 0, out[-3000:]
    assert _Till.saved[-1] == {"customer": "Hedy", "amount": "12", "by": "eve"}


def test_a_run_saved_through_the_api_refuses_a_step_to_keep_it_can_t_keep(
    server: Server, till: str
) -> None:
    """The save page offers a *keep it* box only beside a failed step whose element is
    known; the API's ``keep`` naming any other step (one that passed, one that is not
    there) is refused naming it, and nothing is stored, as an out-of-range check is (it
    was dropped without a word: the scenario lacked what the script asked to keep)."""
    token = api_token(client_log_in(server.base_url, (USERNAME, PASSWORD)), "keep")
    with script(server, token) as api:
        made = api.post("/runs", json={"task": "type ada into User", "planner": "rules",
                                       "start_url": f"{till}/login"})  # fmt: skip
        assert made.status_code == 201, made.text
        run = made.json()["id"]
        ended = ("succeeded", "failed", "stopped", "paused")
        wait_until("the run ended", lambda: api.get(f"/runs/{run}").json()["status"] in ended)
        steps = api.get(f"/runs/{run}").json()["steps"]
        assert steps and all(step["ok"] for step in steps), steps
        before = len(api.get("/scenarios").json())
        for keep in ([steps[-1]["index"]], [999]):
            refused = api.post(f"/runs/{run}/scenario", json={"name": "Kept", "keep": keep})
            assert refused.status_code == 400, refused.text
            error = refused.json()["error"]
            assert "keep" in error["fields"] and str(keep[0]) in error["message"], error
        assert len(api.get("/scenarios").json()) == before
        saved = api.post(f"/runs/{run}/scenario", json={"name": "Kept"})
        assert saved.status_code == 201, saved.text
