"""Interruptions over the page, in a real browser against the back office's new release: a
"What's new" dialog and a cookie wall over the page from the second page on.  A replay
with handlers clears each when it covers a step's element and says so; without them (or
with one that can't clear it) the step needs a person and nothing is clicked through.  A
replay that lands on the sign-in page signs in again before the step it can't do there.
bench.daily's short day: a relogin, a cover that needs a person, then handlers at work."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from automation import BrowserSession
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.control import RunControl
from automation.events import ActionFinished, HandlerProposed, ListSink, Observation
from automation.recording.export import to_pytest
from automation.recording.handlers import Interruptions
from automation.recording.replay import Replay, ReplayConfig
from automation.recording.scenario import Scenario
from tests.backoffice import (
    COOKIES,
    EXPIRY,
    WHATS_NEW,
    BackOffice,
    back_office,
    handler,
    order_scenario,
)
from tests.bounds import room
from tests.busypage import busy_once
from tests.exported import run_exported
from tests.net import QuietHandler, loopback_app

FAST = ReplayConfig(locate_wait_ms=500, step_timeout_ms=8_000)  # fmt: skip
AT_ONCE = ReplayConfig(locate_wait_ms=0, step_timeout_ms=8_000)  # a missing element: no wait


@pytest.fixture
def office() -> Iterator[BackOffice]:
    with back_office() as office:
        office.switch_release("2026.12", after_views=1)  # the list as before, then covered
        yield office


async def signed_in(tab: Tab, office: BackOffice) -> None:
    """The tab holds a session of the back office (as a sign-in profile would give it)."""
    token = secrets.token_hex(16)
    with office.lock:
        office.sessions[token] = time.monotonic()
    await tab.context.add_cookies([{"name": "bo_session", "value": token, "url": office.url}])


def orders(url: str, *handlers: dict[str, Any]) -> Scenario:
    return Scenario.from_dict(order_scenario(url, *handlers))


def notes(sink: ListSink) -> list[str]:
    return [e.text for e in sink.events if isinstance(e, Observation)]


async def test_handlers_clear_a_new_releases_interruptions_at_any_step(
    tab: Tab, office: BackOffice
) -> None:
    await signed_in(tab, office)
    sink = ListSink()
    scenario = orders(office.url, COOKIES, WHATS_NEW)  # the cookie wall is beneath
    result = await Replay(tab, scenario, sink=sink, config=FAST).run()
    assert result.ok, result.reason
    assert [o.status for o in result.steps] == ["passed"] * 5
    # Step 3 (on the order's page) was covered: the dialog on top first, then the wall.
    assert notes(sink) == ["handled 'What's new' dialog", "handled 'Cookie consent' banner"]
    cookies = {c["name"]: c["value"] for c in await tab.context.cookies()}
    assert cookies["bo_seen"] == "2026.12" and cookies["bo_cookies"] == "all"
    assert not [e for e in sink.events if isinstance(e, HandlerProposed)]

    # Once cleared they stay away: the next replay has nothing to handle.
    again = ListSink()
    assert (await Replay(tab, scenario, sink=again, config=FAST).run()).ok
    assert notes(again) == []


async def test_an_interruption_on_a_page_slow_to_answer_is_still_handled(
    tab: Tab, fixture_url: str
) -> None:
    """Whether an interruption shows is the page's answer, waited for as a step waits: a
    page whose script is busy for 4 s (a heavy app, a loaded machine) was taken to show
    none once a fixed 3 s ran out, and the step under it failed covered."""
    await tab.navigate(f"{fixture_url}/demo/form.html", budget=Budget(60_000))
    await tab.page.set_content(
        '<div role=dialog aria-label="What\'s new"><p>Our new release</p>'
        "<button onclick=this.parentNode.remove()>Got it</button></div>"
    )
    ran: list[str] = []

    async def clear(found: Any, budget: Budget) -> str:
        ran.append(found.name)
        await tab.page.get_by_role("button", name="Got it").click()
        return ""

    scenario = Scenario.from_dict({**order_scenario(fixture_url, WHATS_NEW)})
    sink = ListSink()
    interruptions = Interruptions(tab, scenario.handlers, sink, clear)
    await tab.page.evaluate(busy_once(4_000))
    assert await interruptions.handle(room())
    assert ran == ["What's new"]
    assert notes(sink) == ["handled 'What's new' dialog"]


async def test_a_callers_handlers_clear_an_interruption_inside_the_scenario_it_calls(
    tab: Tab, office: BackOffice
) -> None:
    """The handlers are kept on the scenario that calls "Order 1001", which has none:
    the interruptions over the called scenario's order page are cleared by the caller's,
    as the pytest export clears them (its handlers hold for the whole test), and no step
    fails first.  They paused the replay for a person (here, for no one who came), and
    then the whole call was done again (a form it sent, sent twice)."""
    await signed_in(tab, office)
    callee = order_scenario(office.url)
    caller = Scenario.from_dict({
        "format": "tabwright.scenario", "version": 1, "name": "Morning", "base_url": office.url,
        "handlers": [COOKIES, WHATS_NEW], "callees": {"Order 1001": callee},
        "steps": [{"action": "call", "args": {"scenario": "Order 1001", "params": {}}}],
    })  # fmt: skip
    sink = ListSink()
    config = replace(FAST, person_wait_ms=1_000)
    result = await Replay(tab, caller, sink=sink, config=config, control=RunControl()).run()
    assert result.ok, result.reason
    assert [e for e in sink.events if isinstance(e, ActionFinished) and not e.ok] == []
    assert notes(sink) == ["handled 'What's new' dialog", "handled 'Cookie consent' banner"]
    cookies = {c["name"]: c["value"] for c in await tab.context.cookies()}
    assert cookies["bo_seen"] == "2026.12" and cookies["bo_cookies"] == "all"


async def test_a_handler_that_does_not_clear_it_fails_honestly(
    tab: Tab, office: BackOffice
) -> None:
    await signed_in(tab, office)
    wrong = handler("What's new", "dialog", "Close")
    sink = ListSink()
    result = await Replay(tab, orders(office.url, wrong, COOKIES), sink=sink, config=FAST).run()
    assert result.status == "needs_person"
    assert "covered by dialog 'What's new'" in result.reason
    said = notes(sink)
    assert said and said[0].startswith("the handler 'What's new' dialog did not clear it: ")
    assert tab.url.endswith("/orders/1001")


async def test_a_prompt_that_comes_back_on_every_page_is_handled_each_time(
    tab: Tab, office: BackOffice
) -> None:
    await signed_in(tab, office)
    office.release = ""  # only "your session will expire soon", over every page
    office.expiry_prompt_s = 0
    sink = ListSink()
    result = await Replay(tab, orders(office.url, EXPIRY), sink=sink, config=FAST).run()
    assert result.ok, result.reason
    assert notes(sink) == ["handled 'Session will expire' dialog"] * 2  # both links covered
    assert office.keepalives == 2


async def test_a_replay_on_the_sign_in_page_signs_in_again_before_the_step_it_lacks(
    tab: Tab,
) -> None:
    """The session ended: the scenario's first page sends the tab to the sign-in page.
    The next step's element can't be there: the replay signs in again at once (rather
    than wait the step's time for it, then fail it) and goes on from the first page."""
    with back_office() as plain:
        said: list[str] = []

        async def relogin(budget: Budget) -> str:
            said.append(tab.url)
            await signed_in(tab, plain)
            return "signed in again"

        sink = ListSink()
        result = await Replay(tab, orders(plain.url), sink=sink, config=FAST,
                              relogin=relogin).run()  # fmt: skip
        assert result.ok, result.reason
        assert said == [f"{plain.url}/login"]
        assert notes(sink) == ["signed in again"]
        finished = [(e.index, e.ok) for e in sink.events if isinstance(e, ActionFinished)]
        assert finished == [(0, True), (0, True), (1, True), (2, True), (3, True), (4, True)]
        assert plain.views["/orders/1001"] == 1


async def test_a_short_day_of_firings_across_an_expiry_and_a_release(
    browser: BrowserSession,
) -> None:
    """bench.daily's day, three firings at once: the session ends and the release switches
    before the second, which signs in again and then needs a person for the cover; once
    the handlers are kept, the third clears both by itself."""
    from bench.daily import daily

    day = await daily(3, 0, browser=browser, config=FAST, quiet=True)
    assert day.line() == (
        "RESULT daily firings=3 passed=2 relogins=1 interruptions_handled=2 person_needed=1"
    ), day.reasons
    # Without a handler, the covered step needs a person (no one comes: the firing ends).
    assert day.reasons == ["step 1 (click link '1001'): its element is covered by dialog "
                           "'What's new' (and 1 more)"]  # fmt: skip


async def test_a_sign_up_page_is_no_sign_in_page_to_sign_in_again_on_or_hint_at(
    tab: Tab, fixture_url: str
) -> None:
    """A step's element missing on a sign-up form (a password field among a name, an email,
    a plan): the replay neither signs in again nor says the page asks to sign in.  On a
    sign-in form it does both (the step's element is not there either)."""
    hint = "the page asks to sign in: start the replay with a sign-in profile"

    async def replayed(page: str) -> tuple[str, list[str], list[str]]:
        said: list[str] = []

        async def relogin(budget: Budget) -> str:
            said.append(tab.url)
            return "signed in again"

        scenario = Scenario.from_dict({"version": 1, "name": "Orders", "steps": [
            {"action": "navigate", "args": {"url": f"{fixture_url}/{page}"}},
            {"action": "click", "args": {}, "identity": {"role": "link", "name": "Orders",
                                                         "tag": "a"}},
        ]})  # fmt: skip
        sink = ListSink()
        result = await Replay(tab, scenario, sink=sink, config=AT_ONCE, relogin=relogin,
                              signed_out_hint=hint).run()  # fmt: skip
        assert not result.ok and result.steps[0].status == "passed"
        return result.reason, said, notes(sink)

    reason, said, noted = await replayed("demo/form.html")
    assert said == [] and noted == []
    assert reason.startswith("step 1 (") and hint not in reason
    reason, said, noted = await replayed("signin/login.html")
    assert said == [f"{fixture_url}/signin/login.html"] and noted == ["signed in again"]
    assert reason.endswith(f"({hint})")


# A page covered by a "What's new" dialog, its "Done" beneath it; and a page before it.
NEWS = """<!doctype html><title>Orders</title><h1>Orders</h1>
<button onclick="document.body.insertAdjacentHTML('beforeend', '<p>Finished</p>')">Done</button>
<div role="dialog" aria-label="What's new" id="news"
  style="position: fixed; inset: 0; background: white"><button onclick="news.remove()">Got
it</button></div>"""


class _News(QuietHandler):
    def do_GET(self) -> None:
        self.send(200, NEWS.encode() if self.path == "/orders" else b"<h1>Start</h1>")


@pytest.mark.parametrize("callers", [False, True])
async def test_a_called_scenarios_handlers_end_with_its_call_in_replay_and_export(
    tab: Tab, tmp_path: Path, callers: bool
) -> None:
    """ "Open" handles the dialog while it runs; its caller then meets the dialog on a page
    of its own.  Without a handler of its own there, the replay needs a person: the export
    kept the called scenario's handler for the rest of the test and passed.  With one of
    its own (another name, the same dialog), both clear it: the called one's, taken away,
    must not take the caller's with it (Playwright removes a locator's every handler)."""
    with loopback_app(_News) as base:
        news = handler("News", "dialog", "Got it") | {
            "when": {"role": "dialog", "name": "What's new"}}  # fmt: skip
        opens = {"version": 1, "name": "Open", "base_url": base, "handlers": [news],
                 "steps": [{"action": "navigate", "args": {"url": f"{base}/start"}}]}  # fmt: skip
        done = {"action": "click", "args": {}, "identity": {"role": "button", "name": "Done",
                                                            "tag": "button"}}  # fmt: skip
        caller = Scenario.from_dict({
            "version": 1, "name": "Morning", "base_url": base, "callees": {"Open": opens},
            "handlers": [WHATS_NEW] if callers else [], "steps": [
                {"action": "call", "args": {"scenario": "Open", "params": {}}},
                {"action": "navigate", "args": {"url": f"{base}/orders"}}, done,
                {"action": "expect", "args": {"kind": "text_visible", "text": "Finished"}}],
        })  # fmt: skip
        result = await Replay(tab, caller, config=AT_ONCE).run()
        assert result.ok is callers, result.to_dict()
        if not callers:
            assert result.status == "needs_person" and result.steps[2].status == "needs_person"
        status, out = await run_exported(to_pytest(caller), tmp_path, base, timeout_ms=3_000)
        assert (status == 0 and "1 passed" in out) is callers, out
        if not callers:
            assert "1 failed" in out and 'get_by_role("button", name="Done"' in out, out
