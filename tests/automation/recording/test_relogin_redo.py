"""Signing in again in the middle of a form: the steps done on the page the session lost
are done again.  A back office that checks its session as a person types sends them to
its sign-in page while they fill in a new entry; the replay signs in again, goes back to
the form and tried only the step that failed: "Save" sent a form whose customer was
empty, and the replay said passed.  Now the fills since the form's navigate are done again
first; and when one of the steps there sent something to the server, it is not sent
twice: the step fails, saying why."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from automation import Tab
from automation.budget import Budget
from automation.errors import ScenarioInvalid
from automation.recording.export import to_pytest
from automation.recording.replay import Replay
from automation.recording.scenario import Scenario, ScenarioStep
from automation.recording.takes import Taken, replay_takes
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

FORM = b"""<!doctype html><title>New entry</title><h1>New entry</h1>
<form method="post" action="/save">
  <label>Customer <input name="customer"></label>
  <label>Amount <input name="amount"></label>
  <button type="button" id="draft">Keep a draft</button>
  <button>Save</button>
</form>
<form method="post" action="/logout"><button>Sign out</button></form>
<script>
  // The session is checked as the person types: ended, the page goes to sign in.
  for (const field of document.querySelectorAll("input")) {
    field.addEventListener("input", async () => {
      const answer = await fetch("/alive");
      if (answer.status === 401) location.href = "/login";
    });
  }
  document.getElementById("draft").addEventListener("click", () => {
    fetch("/draft", { method: "POST", body: new FormData(document.forms[0]) });
  });
</script>"""
LOGIN = (
    b"<!doctype html><title>Sign in</title><form method=post action=/login>"
    b"<label>User <input name=user></label>"
    b"<label>Password <input type=password name=pw></label><button>Sign in</button></form>"
)


class Ledger:
    """The back office's side: the entries saved, the drafts kept, and its sessions (all
    end at the ``end_at``-th session check)."""

    def __init__(self) -> None:
        self.saved: list[tuple[str, str]] = []
        self.drafts = 0
        self.sessions: set[str] = set()
        self.checks = 0
        self.end_at = 0
        self.ends_at_save = False  # the session ends as the form is saved
        self.users: list[str] = []  # who signed in, in turn
        self.url = ""


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    state = Ledger()

    class Handler(QuietHandler):
        def _session(self) -> bool:
            cookie = self.headers.get("Cookie") or ""
            return any(part.strip() in state.sessions for part in cookie.split(";"))

        def do_GET(self) -> None:
            if self.path == "/login":
                self.send(200, LOGIN)
            elif self.path == "/alive":
                state.checks += 1
                alive = self._session()
                if state.checks == state.end_at:
                    state.sessions.clear()  # after this answer: the next check is refused
                self.send(200 if alive else 401)
            elif not self._session():
                self.send(302, Location="/login")
            else:
                self.send(200, FORM)

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size).decode()
            if self.path == "/save" and state.ends_at_save:
                state.ends_at_save = False
                state.sessions.clear()
            if self.path == "/login":
                state.users += parse_qs(body).get("user", [""])
                token = f"s{len(state.sessions) + 1}=1"
                state.sessions.add(token)
                self.send(302, Location="/new", **{"Set-Cookie": f"{token}; Path=/"})
            elif self.path == "/logout":
                state.sessions.clear()
                self.send(302, Location="/login")
            elif not self._session():
                self.send(302, Location="/login")
            elif self.path == "/draft":
                state.drafts += 1
                self.send(204)
            else:
                form = parse_qs(body, keep_blank_values=True)
                state.saved.append((form["customer"][0], form["amount"][0]))
                self.send(200, b"<!doctype html><title>Saved</title><p>Saved")

    with loopback_app(Handler) as state.url:
        yield state


def field(name: str, value: str) -> ScenarioStep:
    identity = {"role": "textbox", "name": name, "tag": "input", "name_attr": name.lower()}
    return ScenarioStep.from_dict({"action": "fill", "args": {"value": value},
                                   "identity": identity})  # fmt: skip


def button(name: str) -> ScenarioStep:
    identity = {"role": "button", "name": name, "tag": "button"}
    return ScenarioStep.from_dict({"action": "click", "args": {}, "identity": identity})


def replay_of(tab: Tab, ledger: Ledger, *steps: ScenarioStep, relogin: bool = True) -> Replay:
    async def sign_in(budget: Budget) -> str:
        await signed_in(tab, ledger)
        return "signed in again"

    scenario = Scenario("New entry", (ScenarioStep("navigate", {"url": f"{ledger.url}/new"}),
                                      *steps), base_url=ledger.url)  # fmt: skip
    return Replay(tab, scenario, relogin=sign_in if relogin else None)


async def signed_in(tab: Tab, ledger: Ledger) -> None:
    await tab.navigate(f"{ledger.url}/login")
    await tab.page.fill("input[name=pw]", "pw")
    await tab.page.click("button")
    await tab.page.wait_for_url("**/new")


async def test_the_fills_the_lost_session_took_are_done_again_before_the_save(
    tab: Tab, ledger: Ledger
) -> None:
    await signed_in(tab, ledger)
    ledger.end_at = 1  # the customer's check is the last one the session answers
    steps = (field("Customer", "Cust03"), field("Amount", "103"), button("Save"))
    result = await replay_of(tab, ledger, *steps).run()
    assert result.ok, result.to_dict()
    assert ledger.saved == [("Cust03", "103")]  # not ("", "103")


async def test_a_step_that_sent_something_there_is_not_sent_twice(tab: Tab, ledger: Ledger) -> None:
    await signed_in(tab, ledger)
    ledger.end_at = 1
    steps = (button("Keep a draft"), field("Customer", "Cust04"), field("Amount", "104"),
             button("Save"))  # fmt: skip
    result = await replay_of(tab, ledger, *steps).run()
    assert result.status == "failed", result.to_dict()
    assert "step 1 (click button 'Keep a draft') sent something to the server" in result.reason
    assert "it may be saved twice" in result.reason
    assert ledger.drafts == 1 and ledger.saved == []


@pytest.mark.parametrize("relogin", [False, True])
async def test_a_save_the_server_answers_with_its_sign_in_page_is_not_passed(
    tab: Tab, ledger: Ledger, relogin: bool
) -> None:
    """The session ends as the form is saved: the server answers the POST with its
    sign-in page (a redirect, then 200).  The step passed, and a later check of "no rows
    left" would have held there.  Now it fails, saying so; a replay that can sign in
    again does, fills the form again and saves it once."""
    await signed_in(tab, ledger)
    ledger.ends_at_save = True
    steps = (field("Customer", "Cust05"), field("Amount", "105"), button("Save"))
    result = await replay_of(tab, ledger, *steps, relogin=relogin).run()
    if relogin:
        assert result.ok, result.to_dict()
        assert ledger.saved == [("Cust05", "105")]
        return
    last = result.steps[-1]
    assert result.status == "failed" and last.status == "failed", result.to_dict()
    assert last.error is not None
    assert "the server answered with its sign-in page" in last.error["message"]
    assert ledger.saved == []


@pytest.mark.parametrize("action", ["click", "double_click"])
async def test_a_save_answered_with_the_sign_in_page_fails_its_export_as_its_replay(
    tab: Tab, ledger: Ledger, tmp_path: Path, action: str
) -> None:
    """Signed in by its first steps, the session then ends as the form is saved: the
    replay fails the save (nothing it sent was kept), and its export passed there, on the
    sign-in page.  Its own "Sign in", sent from that page, is no such save.  A double-click
    on Save sends the form too (neither judged it before)."""
    password = field("Password", "pw")
    save = replace(button("Save"), action=action)
    steps = (ScenarioStep("navigate", {"url": f"{ledger.url}/login"}), password,
             button("Sign in"), field("Customer", "Cust06"), field("Amount", "106"),
             save)  # fmt: skip
    scenario = Scenario("New entry", steps, base_url=ledger.url)
    ledger.ends_at_save = True
    result = await Replay(tab, scenario).run()
    last = result.steps[-1]
    assert result.status == "failed" and last.index == 5 and last.error is not None
    assert "the server answered with its sign-in page" in last.error["message"]
    ledger.ends_at_save = True
    status, out = await run_exported(to_pytest(scenario), tmp_path, ledger.url)
    assert status == 1 and "the server answered with its sign-in page" in out, out
    assert "sent_to_sign_in(page, sent, asked, 'Save')" in out  # the save's line, not another
    assert ledger.saved == [] and len(ledger.users) == 2


async def test_signing_out_and_signing_in_land_where_they_should_and_pass(
    tab: Tab, ledger: Ledger
) -> None:
    """A step that signs out lands on the sign-in page, and one that signs in sent its
    form from it: neither is a save the server refused."""
    await signed_in(tab, ledger)
    result = await replay_of(tab, ledger, button("Sign out"), relogin=False).run()
    assert result.ok, result.to_dict()
    assert "/login" in tab.page.url
    password = ScenarioStep.from_dict({"action": "fill", "args": {"value": "pw"}, "identity": {
        "role": "textbox", "name": "Password", "tag": "input", "name_attr": "pw"}})  # fmt: skip
    scenario = Scenario("Sign in", (ScenarioStep("navigate", {"url": f"{ledger.url}/login"}),
                                    password, button("Sign in")), base_url=ledger.url)  # fmt: skip
    result = await Replay(tab, scenario).run()
    assert result.ok, result.to_dict()
    assert tab.page.url.endswith("/new")


def signing_in(ledger: Ledger, user: dict[str, str], customer: str = "${user}'s", *,
               own: dict[str, Any] | None = None) -> Scenario:  # fmt: skip
    """A new entry for ``customer`` that signs in again with "Sign in", whose parameter
    ``user`` is declared ``user``; ``own``: the entry's own parameters."""
    login = {"version": 1, "name": "Sign in", "base_url": ledger.url,
             "params": {"user": user}, "steps": [
                 {"action": "navigate", "args": {"url": f"{ledger.url}/login"}},
                 field("User", "${user}").to_dict(), field("Password", "pw").to_dict(),
                 button("Sign in").to_dict()]}  # fmt: skip
    return Scenario.from_dict({
        "version": 1, "name": "New entry", "base_url": ledger.url, "login_scenario": "Sign in",
        "callees": {"Sign in": login}, "params": own or {},
        "steps": [{"action": "navigate", "args": {"url": f"{ledger.url}/new"}},
                  *(s.to_dict() for s in (field("Customer", customer), field("Amount", "7"),
                                          button("Save")))]})  # fmt: skip


async def test_the_login_scenario_signs_in_again_with_the_values_the_replay_was_given(
    tab: Tab, ledger: Ledger
) -> None:
    """A batch row replays as bob: when its session ends, the login scenario signs in as
    bob again, not as its default user (the pytest export, reading one value a name for
    both, did)."""
    scenario = signing_in(ledger, {"default": "ada"}, own={"user": {"default": "ada"}})
    await signed_in(tab, ledger)
    ledger.ends_at_save = True
    result = await Replay(tab, scenario, params={"user": "bob"}).run()
    assert result.ok, result.to_dict()
    assert ledger.users == ["", "bob"] and ledger.saved == [("bob's", "7")]


async def test_the_entrys_own_default_is_the_value_its_login_scenario_signs_in_with(
    tab: Tab, ledger: Ledger, tmp_path: Path
) -> None:
    """A parameter both have is the entry's: not given, its default signs in, not the login
    scenario's (which it was: only the values given reached the login scenario); the
    pytest export (a fresh browser: it signs in first) signs in with it too, needing no
    value for it."""
    scenario = signing_in(ledger, {"default": "ada"}, own={"user": {"default": "carol"}})
    await signed_in(tab, ledger)
    ledger.ends_at_save = True
    result = await Replay(tab, scenario).run()
    assert result.ok, result.to_dict()
    assert ledger.users == ["", "carol"] and ledger.saved == [("carol's", "7")]
    ledger.ends_at_save = False
    status, out = await run_exported(to_pytest(scenario), tmp_path, ledger.url)
    assert status == 0, out
    assert ledger.users[-1] == "carol" and ledger.saved[-1] == ("carol's", "7"), ledger.users


async def test_a_parameter_only_the_login_scenario_has_is_needed_only_to_sign_in_again(
    tab: Tab, ledger: Ledger
) -> None:
    """The entry types no user, its login scenario does, with no default: a replay takes
    it (it was "no such parameter"), needs it only when it signs in again, and then fails
    the step at once naming it and the login scenario, rather than type nothing."""
    scenario = signing_in(ledger, {}, "Grace")
    assert replay_takes(scenario) == {"user": Taken(None, login="Sign in")}
    await signed_in(tab, ledger)
    result = await Replay(tab, scenario).run()  # signed in all along
    assert result.ok, result.to_dict()
    ledger.ends_at_save = True
    result = await Replay(tab, scenario).run()
    assert result.status == "failed", result.to_dict()
    assert ("the login scenario 'Sign in' signs in with the parameter 'user', and the replay "
            "has no value for it") in result.reason  # fmt: skip
    assert ledger.users == [""] and ledger.saved == [("Grace", "7")]
    result = await Replay(tab, scenario, params={"user": "bob"}).run()  # starts signed out
    assert result.ok, result.to_dict()
    assert ledger.users == ["", "bob"] and ledger.saved[-1] == ("Grace", "7")
    with pytest.raises(ScenarioInvalid, match="no such parameter: who"):
        Replay(tab, scenario, params={"who": "bob"})
