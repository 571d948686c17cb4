"""A sign-in profile and the rows that sign in as someone else, through the dashboard in
a real browser: a batch (and a schedule) that starts with a profile signed in as one user
while a row gives the login scenario another user.  The app is our own on loopback: a
notebook with two users, each with a password of their own, that shows who is signed in
and keeps who wrote each note."""

from __future__ import annotations

import asyncio
import html
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Page, expect

from tests.e2e.journeys import import_scenario, scenario_step, until
from tests.e2e.ui import Server, log_in, run_batch, save, save_sign_in
from tests.net import QuietHandler, loopback_app

PASSWORDS = {"ada": "ada-pass-41", "lin": "lin-pass-73"}
LOGIN = (
    '<form method="post" action="/login"><label>User <input name="user"></label>'
    '<label>Password <input type="password" name="pw"></label><button>Sign in</button></form>'
)


class _Notebook(QuietHandler):
    """``/login`` signs a user in with their own password (each sign-in kept in
    ``logins``); ``/new`` says who is signed in above the form of a new note (no session:
    sent to ``/login``); ``/save`` keeps the note with who wrote it in ``notes``."""

    notes: list[tuple[str, str]] = []  # (note, who wrote it)
    logins: list[str] = []
    sessions: dict[str, str] = {}  # cookie -> user

    def _user(self) -> str | None:
        cookies = (self.headers.get("Cookie") or "").split(";")
        return next((self.sessions[c.strip()] for c in cookies if c.strip() in self.sessions),
                    None)  # fmt: skip

    def _page(self, body: str) -> None:
        self.send(200, f"<!doctype html><title>Notebook</title><main>{body}</main>".encode())

    def do_GET(self) -> None:
        user = self._user()
        if urlsplit(self.path).path == "/login":
            self._page(LOGIN)
        elif user is None:
            self.send(302, Location="/login")
        else:
            self._page(f"<p>Signed in as {html.escape(user)}</p><h1>New note</h1>"
                       '<form method="post" action="/save"><label>Note <input name="note">'
                       "</label><button>Save</button></form>")  # fmt: skip

    def do_POST(self) -> None:
        form, user = self.posted(), self._user()
        if self.path == "/login":
            self._sign_in(form.get("user", ""), form.get("pw", ""))
        elif user is None:
            self.send(302, Location="/login")
        else:
            self.notes.append((form.get("note", ""), user))
            self._page(f"<h1>Saved</h1><p>Saved the note of {html.escape(user)}</p>")

    def _sign_in(self, user: str, password: str) -> None:
        if user not in PASSWORDS or password != PASSWORDS[user]:
            self._page("<p>Wrong user or password</p>" + LOGIN)
            return
        self.logins.append(user)
        token = f"n{len(self.sessions) + 1}=1"
        self.sessions[token] = user
        self.send(302, Location="/new", **{"Set-Cookie": f"{token}; Path=/"})


@pytest.fixture(scope="module")
def notebook() -> Iterator[str]:
    with loopback_app(_Notebook) as url:
        yield url


def _sign_in(notebook: str) -> dict[str, Any]:
    """The notebook's login scenario: the user and the password are parameters, ada's by
    default."""
    return {"format": "tabwright.scenario", "version": 1, "name": "Notebook sign-in",
            "base_url": notebook + "/",
            "params": {"user": {"default": "ada"}, "password": {"default": PASSWORDS["ada"]}},
            "steps": [
                scenario_step("navigate", {"url": notebook + "/login"}),
                scenario_step("fill", {"value": "${user}"}, "textbox", "User"),
                scenario_step("fill", {"value": "${password}"}, "textbox", "Password"),
                scenario_step("click", {}, "button", "Sign in")]}  # fmt: skip


def _new_note(notebook: str) -> dict[str, Any]:
    """A new note (a parameter), which signs in with the login scenario when asked."""
    return {"format": "tabwright.scenario", "version": 1, "name": "New note",
            "base_url": notebook + "/", "login_scenario": "Notebook sign-in",
            "params": {"note": {"default": "Hello"}}, "steps": [
                scenario_step("navigate", {"url": notebook + "/new"}),
                scenario_step("fill", {"value": "${note}"}, "textbox", "Note"),
                scenario_step("click", {}, "button", "Save"),
                scenario_step("expect", {"kind": "text_visible", "text": "Saved the note"}),
            ]}  # fmt: skip


async def test_a_row_that_gives_the_login_scenario_another_user_acts_as_that_user(
    page: Page, server: Server, notebook: str, tmp_path: Path
) -> None:
    """A person signs in to the notebook as ada in a conversation and saves the sign-in
    as a profile, still valid; a batch starting with that profile has a row for ada (the
    login scenario's own user) and one for lin (its user and password in the row's
    columns): ada's row writes as ada without signing in again, lin's starts signed out,
    signs in as lin and writes as lin, and its run says why.  A schedule's firing that
    gives lin does the same.  (Both wrote lin's notes as ada and passed: every row started
    with the profile's sign-in, the row's user unused.)"""
    await log_in(page, server)
    await import_scenario(page, server, tmp_path / "sign-in.json", _sign_in(notebook))
    scenario_url = await import_scenario(page, server, tmp_path / "note.json", _new_note(notebook))
    await page.goto(f"{server.base_url}/")
    task = "\n".join([f"go to {notebook}/login", 'type "ada" into "User"',
                      f'type "{PASSWORDS["ada"]}" into "Password"', 'click "Sign in"',
                      "wait for New note", "click Nowhere"])  # fmt: skip
    await save_sign_in(page, f"{notebook}/login", task, "notebook")
    assert _Notebook.logins == ["ada"]

    await page.goto(scenario_url)
    batch = page.get_by_test_id("batch-form")
    await batch.get_by_label("Sign-in profile").select_option(label="notebook")
    rows = tmp_path / "rows.csv"
    await asyncio.to_thread(
        rows.write_text,
        f"note,user,password\nFrom ada,ada,{PASSWORDS['ada']}\nFrom lin,lin,{PASSWORDS['lin']}\n",
    )
    await run_batch(page, rows, 1)
    table = page.locator("#batch-rows tr")
    await expect(table.locator(".badge")).to_have_text(["passed", "passed"])
    assert _Notebook.notes == [("From ada", "ada"), ("From lin", "lin")]
    assert _Notebook.logins == ["ada", "lin"]  # ada's row started with the profile
    await table.nth(1).get_by_role("link").first.click()
    await expect(page.locator("#chat")).to_contain_text(
        "started signed out, not with the sign-in profile 'notebook': this replay gives the "
        "login scenario 'Notebook sign-in' its own 'password', 'user', and it signs in "
        "with them"
    )
    await expect(page.locator("#chat")).to_contain_text(
        "signed in again with the login scenario 'Notebook sign-in'"
    )
    await save(page, "batch-row-signed-out-for-its-user.png")

    await page.goto(scenario_url)
    await page.get_by_text("Schedule it").click()
    form = page.get_by_test_id("schedule-form")
    await form.get_by_label("When (cron)").fill("0 7 * * 1-5")
    await form.get_by_label("note", exact=True).fill("Scheduled")
    await form.get_by_label("user", exact=True).fill("lin")
    await form.get_by_label("password", exact=True).fill(PASSWORDS["lin"])
    await form.get_by_label("Sign-in profile").select_option(label="notebook")
    await form.get_by_role("button", name="Schedule").click()
    schedule = page.get_by_test_id("schedule")
    await expect(schedule).to_contain_text("At 07:00, Monday through Friday")
    await schedule.get_by_role("button", name="Run now").click()
    await until("the firing saved its note", lambda: len(_Notebook.notes) == 3)
    assert _Notebook.notes[-1] == ("Scheduled", "lin")
