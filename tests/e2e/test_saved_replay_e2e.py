"""A replay saved as a scenario, through the dashboard in a real browser: the scenario it
replayed clears a cookie wall with its handler and signs in again with its login
scenario; the saved one, replayed where the wall shows and the session ended, does both
too.  The app is our own on loopback: a customer list's back office (its sign-in page, a
form behind it, a cookie wall over its signed-in pages, and what it was sent)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Page, expect

from tests.e2e.journeys import import_scenario
from tests.e2e.journeys import scenario_step as _step
from tests.e2e.test_seams_e2e import _Till
from tests.e2e.ui import LIVE_MS, Server, log_in, save
from tests.net import loopback_app

NEW = (
    '<h1>New customer</h1><form method="post" action="/save"><label>Name '
    '<input name="name"></label><button>Save customer</button></form>'
)
# Over the whole page, until its button takes it away (it comes back on every page).
WALL = (
    '<div role="dialog" aria-label="Cookies" style="position:fixed;inset:0;'
    'background:rgba(255,255,255,.9)"><p>We use cookies.</p>'
    '<button onclick="this.parentNode.remove()">Accept all</button></div>'
)
ENDED = ("succeeded", "failed", "paused", "stopped")


class _Office(_Till):
    """A back office, signed in to as the till is (its ``/login``, sessions and
    :meth:`end_sessions`; each sign-in a session): ``/new`` is the form of a new customer
    behind it, with a cookie wall over it; ``/save`` keeps the customer with who saved it
    in ``saved`` and says "Added <name>"."""

    saved: list[dict[str, str]] = []
    sessions: dict[str, str] = {}  # cookie -> user ("": the session ended), the till's apart

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/login" or self._user() is None:
            super().do_GET()
        else:
            self._page(NEW + WALL)

    def do_POST(self) -> None:
        user = self._user()
        if self.path == "/login" or user is None:
            super().do_POST()
            return
        name = self.posted().get("name", "")
        self.saved.append({"name": name, "by": user})
        self._page(f"<h1>Saved</h1><p>Added {name}</p>")


@pytest.fixture(scope="module")
def office() -> Iterator[str]:
    with loopback_app(_Office) as url:
        yield url


def office_sign_in(office: str) -> dict[str, Any]:
    return {"format": "tabwright.scenario", "version": 1, "name": "Office sign-in",
            "base_url": office + "/", "steps": [
                _step("navigate", {"url": office + "/login"}),
                _step("fill", {"value": "ada"}, "textbox", "User"),
                _step("fill", {"value": "${SECRET:PASSWORD}"}, "textbox", "Password"),
                _step("click", {}, "button", "Sign in")]}  # fmt: skip


def new_customer(office: str) -> dict[str, Any]:
    """Adds the customer ``name``; clears the cookie wall with its handler, and signs in
    with "Office sign-in" when the office asks."""
    accept = _step("click", {}, "button", "Accept all")
    return {"format": "tabwright.scenario", "version": 1, "name": "New customer",
            "base_url": office + "/", "login_scenario": "Office sign-in",
            "params": {"name": {"default": "Ada"}},
            "handlers": [{"name": "Cookies", "when": {"role": "dialog", "name": "Cookies"},
                          "steps": [accept]}],
            "steps": [
                _step("navigate", {"url": office + "/new"}),
                _step("fill", {"value": "${name}"}, "textbox", "Name"),
                _step("click", {}, "button", "Save customer"),
                _step("expect", {"kind": "text_visible", "text": "Added ${name}"}),
            ]}  # fmt: skip


async def replayed(page: Page, name: str) -> None:
    """From a scenario's page: replay it for the customer ``name``; it passes."""
    replay = page.locator("#replay")
    await replay.get_by_label("name", exact=True).fill(name)
    await replay.get_by_role("button", name="Replay").click()
    await expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    status = page.locator("#status")
    await expect(status).to_have_text(re.compile("|".join(ENDED)), timeout=LIVE_MS)
    reason = await page.locator("#status-reason").text_content()
    assert await status.text_content() == "succeeded", reason


async def test_a_replay_saved_as_a_scenario_clears_the_cover_and_signs_in_as_its_scenario_did(
    page: Page, server: Server, office: str, tmp_path: Path
) -> None:
    """A scenario with a cookie-wall handler and a login scenario is replayed for Grace
    and the replay saved on its save page, which says the handler and the sign-in
    come along.  The saved one, replayed for Hedy signed out under the wall, signs in and
    clears the wall itself and the office keeps Hedy: it was saved without either, so it
    failed on the sign-in page (and would have stopped for a person at the wall)."""
    await log_in(page, server)
    await import_scenario(page, server, tmp_path / "sign-in.json", office_sign_in(office))
    await import_scenario(page, server, tmp_path / "new.json", new_customer(office))
    await replayed(page, "Grace")
    assert _Office.saved == [{"name": "Grace", "by": "ada"}], _Office.saved

    # The replay's run page offers "Save as scenario…" once it ended (the API's POST
    # /api/runs/{id}/scenario saves through the same service).
    await page.get_by_role("link", name="Save as scenario…").click()
    await expect(page.get_by_role("link", name="Back to the replay")).to_be_visible()
    keeps = page.get_by_test_id("replayed-keeps")
    await expect(keeps).to_contain_text("It clears the 'Cookies' dialog")
    await expect(keeps).to_contain_text("It signs in again with “Office sign-in”")
    await page.get_by_label("Name", exact=True).fill("New customer, as replayed")
    await save(page, "saved-replay-keeps-handlers-and-login.png")
    await page.get_by_role("button", name="Save as scenario").click()
    await expect(page.get_by_role("heading", name="New customer, as replayed")).to_be_visible()

    _Office.end_sessions()
    signed_in = len(_Office.sessions)
    await replayed(page, "Hedy")
    assert _Office.saved[-1] == {"name": "Hedy", "by": "ada"}, _Office.saved
    assert len(_Office.sessions) == signed_in + 1  # it signed in again, with its login scenario
