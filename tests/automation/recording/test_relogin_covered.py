"""Signing in again where the pages are covered, or where a form has a field like the
sign-in's, judged in replay and in the pytest export, against a small back office.

A cookie wall covers every page until it is accepted, and the scenario keeps a handler
for it.  The replay's sign-in was made without the replay's handlers (a called scenario
gets its caller's), so its "Sign in" stayed covered: "signing in again failed".  The
export signed in inside Playwright's handler of the sign-in page, where Playwright runs no
other: no handler cleared the wall, the handler on the login scenario itself neither.  And
the export signed in again on any page that showed the login scenario's first element, a
"User" field of the new-entry form among them, where replay first asks whether the page
asks to sign in."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from html import escape
from pathlib import Path
from typing import Any

import pytest

from automation import Tab
from automation.recording.export import to_pytest
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

FAST = ReplayConfig(locate_wait_ms=500, step_timeout_ms=8_000)
WALL = (
    '<div role="dialog" aria-label="Cookies" style="position:fixed;inset:0;z-index:9;'
    'background:rgba(0,0,0,.6)"><div style="background:#fff;margin:80px auto;width:300px">'
    "<p>We use cookies.</p><button onclick=\"document.cookie='consent=1; path=/';"
    "this.closest('[role=dialog]').remove()\">Accept all</button></div></div>"
)
LOGIN = (
    "<form method=post action=/login><label>User <input name=user></label>"
    "<label>Password <input type=password name=pw></label><button>Sign in</button></form>"
)


class Office:
    """The back office's side: who signed in, in turn, and the entries saved (name,
    the user it is assigned to)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sessions: set[str] = set()
        self.users: list[str] = []
        self.saved: list[tuple[str, str]] = []
        self.wall = False  # a cookie wall over every page until it is accepted
        self.owner_field = False  # the form assigns an entry to a "User"; /login sends on
        self.ends_at_save = False  # every session ends as an entry is saved
        self.password = "pw"
        self.url = ""


@pytest.fixture
def office() -> Iterator[Office]:
    with office_app() as state:
        yield state


@contextmanager
def office_app() -> Iterator[Office]:
    """The back office on a loopback port, and its side (tests.e2e's journeys too)."""
    state = Office()

    class Handler(QuietHandler):
        def _cookies(self) -> set[str]:
            return {part.strip() for part in (self.headers.get("Cookie") or "").split(";")}

        def _page(self, title: str, body: str) -> None:
            wall = WALL if state.wall and "consent=1" not in self._cookies() else ""
            html = f"<!doctype html><title>{title}</title><h1>{title}</h1>{body}{wall}"
            self.send(200, html.encode())

        def _signed_in(self) -> bool:
            with state.lock:
                return bool(self._cookies() & state.sessions)

        def do_GET(self) -> None:
            if self.path == "/login" and not (state.owner_field and self._signed_in()):
                self._page("Sign in", LOGIN)
            elif not self._signed_in():
                self.send(302, Location="/login")
            elif self.path == "/login":  # a signed-in person is sent on
                self.send(302, Location="/new")
            elif self.path == "/new":
                owner = "<label>User <input name=owner></label>" if state.owner_field else ""
                form = f"<label>Name <input name=name></label>{owner}<button>Save</button>"
                self._page("New entry", f"<form method=post action=/new>{form}</form>")
            else:
                self.send(404)

        def do_POST(self) -> None:
            form = self.posted()
            if self.path == "/login" and form.get("pw") == state.password:
                with state.lock:
                    token = f"s{len(state.users)}=1"
                    state.sessions.add(token)
                    state.users.append(form.get("user", ""))
                self.send(302, Location="/new", **{"Set-Cookie": f"{token}; Path=/"})
            elif self.path != "/new" or not self._signed_in():
                self.send(302, Location="/login")
            else:
                with state.lock:
                    state.saved.append((form["name"], form.get("owner", "")))
                    if state.ends_at_save:
                        state.sessions.clear()
                self._page("Saved", f"<p role=status>Added {escape(form['name'])}</p>")

    with loopback_app(Handler) as state.url:
        yield state


def fill(name: str, value: str) -> dict[str, Any]:
    return {"action": "fill", "args": {"value": value}, "role": "textbox", "name": name}


def click(name: str) -> dict[str, Any]:
    return {"action": "click", "args": {}, "role": "button", "name": name}


def saves(name: str, owner: str | None = None) -> list[dict[str, Any]]:
    """Fill in an entry and save it: its name, and the user it is assigned to."""
    assigned = [] if owner is None else [fill("User", owner)]
    added = {"action": "expect", "args": {"kind": "text_visible", "text": f"Added {name}"}}
    return [fill("Name", name), *assigned, click("Save"), added]


def entry(office: Office, steps: list[dict[str, Any]], *, wall_on: str = "") -> Scenario:
    """A scenario of ``steps`` that signs in again with "Sign in"; the handler of the
    cookie wall is ``wall_on`` that scenario ("entry" or "login"; "": none)."""
    accept = {"name": "Cookies", "when": {"role": "dialog", "name": "Cookies"},
              "steps": [click("Accept all")]}  # fmt: skip
    login = {"version": 1, "name": "Sign in", "base_url": office.url,
             "handlers": [accept] if wall_on == "login" else [],
             "steps": [{"action": "navigate", "args": {"url": f"{office.url}/login"}},
                       fill("User", "ada"), fill("Password", "pw"), click("Sign in")]}  # fmt: skip
    return Scenario.from_dict({
        "version": 1, "name": "New entry", "base_url": office.url, "steps": steps,
        "login_scenario": "Sign in", "callees": {"Sign in": login},
        "handlers": [accept] if wall_on == "entry" else [],
    })  # fmt: skip


@pytest.mark.parametrize("wall_on", ["entry", "login"])
async def test_the_handlers_clear_a_wall_over_the_sign_in_page_in_replay_and_export(
    tab: Tab, office: Office, tmp_path: Path, wall_on: str
) -> None:
    """The session has ended (a fresh tab, a fresh browser): the form's page sends to sign
    in, under the wall.  The sign-in clears it with the handler, the scenario's own or the
    login scenario's, and the entry is saved once, in replay and in its export."""
    office.wall = True
    steps = [{"action": "navigate", "args": {"url": f"{office.url}/new"}}, *saves("Ann")]
    scenario = entry(office, steps, wall_on=wall_on)
    result = await Replay(tab, scenario, config=FAST).run()
    assert result.ok, result.reason
    assert office.users == ["ada"] and office.saved == [("Ann", "")]
    code = to_pytest(scenario)
    status, out = await run_exported(code, tmp_path, office.url, timeout_ms=10_000)
    assert status == 0, out
    assert office.users == ["ada", "ada"] and office.saved == [("Ann", "")] * 2


async def test_the_export_signs_in_again_only_where_the_page_asks_to(
    tab: Tab, office: Office, tmp_path: Path
) -> None:
    """The form assigns each entry to a "User", a field like the sign-in's first, and the
    sign-in page sends a signed-in person on.  The export signed in again on the form and
    failed there; now it goes on as replay does, and signs in again when the session has
    ended (as the first entry is saved) and the next form's page asks to."""
    office.owner_field = office.ends_at_save = True
    new = {"action": "navigate", "args": {"url": f"{office.url}/new"}}
    sign_in = {"action": "call", "args": {"scenario": "Sign in", "params": {}}}
    steps = [sign_in, new, *saves("Ann", "bob"), new, *saves("Ben", "bob")]
    scenario = entry(office, steps)
    result = await Replay(tab, scenario, config=FAST).run()
    assert result.ok, result.reason
    assert office.users == ["ada", "ada"]
    assert office.saved == [("Ann", "bob"), ("Ben", "bob")]
    status, out = await run_exported(to_pytest(scenario), tmp_path, office.url, timeout_ms=10_000)
    assert status == 0, out
    assert office.users == ["ada"] * 4
    assert office.saved == [("Ann", "bob"), ("Ben", "bob")] * 2
