"""Actions settle before they return, on real Chromium against a loopback server whose
answers take their time: the next snapshot shows what the action set off, and the report
says what was waited for and why the wait ended."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from automation import Budget, Tab
from automation.actions import execute
from automation.browser.macro import Macro, run_macro
from automation.browser.settle import BOUND, BUSY, IDLE, SETTLED
from automation.errors import ActionInvalid, Cancelled
from tests.bounds import room
from tests.conftest import FIXTURES


class _SlowHandler(SimpleHTTPRequestHandler):
    """fixtures/, plus answers that take a while: ``/api/slow?ms=&text=`` (JSON),
    ``/slow-page?ms=&title=`` (HTML), ``/redirect?to=`` (302), ``/api/never`` (no answer)
    and ``/events`` (an event stream that sends one message and stays open)."""

    stop: threading.Event

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        delay_s = int(query.get("ms", "0")) / 1000
        if url.path == "/api/slow":
            time.sleep(delay_s)
            self._answer("application/json", json.dumps({"text": query.get("text", "")}))
        elif url.path == "/slow-page":
            time.sleep(delay_s)
            title = query.get("title", "Arrived")
            self._answer("text/html", f"<!doctype html><title>{title}</title><h1>{title}</h1>")
        elif url.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", query["to"])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif url.path == "/api/never":
            self.stop.wait(60)
        elif url.path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(b"data: hello\n\n")
            self.wfile.flush()
            self.stop.wait(60)
        else:
            super().do_GET()

    def _answer(self, kind: str, text: str) -> None:
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def slow_url() -> Iterator[str]:
    stop = threading.Event()
    handler = type("Handler", (_SlowHandler,), {"stop": stop})
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(FIXTURES))
    )
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    stop.set()  # the requests held open end, then the server
    server.shutdown()
    server.server_close()


async def open_page(tab: Tab, url: str) -> dict[str, str]:
    """Navigate, snapshot, and name -> ref of the page's buttons, links and textboxes."""
    await tab.navigate(url)
    snap = await tab.snapshot()
    return {entry.name: entry.ref for entry in snap.refs.values()}


def ops_asked(tab: Tab, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The settle's page ops (arm, probe, quiet, stop), in order, as the tab asks them."""
    asked: list[str] = []
    op = tab.settler._op

    def recording(*args: object) -> Any:
        asked.append(str(args[0]))
        return op(*args)

    monkeypatch.setattr(tab.settler, "_op", recording)
    return asked


async def status(tab: Tab) -> str:
    return await tab.page.text_content("#status") or ""


async def test_a_click_or_a_drop_that_fetches_returns_once_the_answer_is_drawn(
    tab: Tab, slow_url: str
) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.click(refs["Load orders"])  # the server answers after 400 ms
    snap = await tab.snapshot()
    assert "3 orders loaded" in snap.text
    report = tab.settler.last
    assert report is not None
    assert (report.reason, report.requests, report.pending) == (SETTLED, 1, 0)
    assert not report.navigated
    # A file dropped on an uploader, as an agent or a replay drops it: the upload's answer
    # is drawn as the action returns.
    said = await execute(tab, "drop_files", {"ref": refs["Drop a file"], "files": ["avatar.txt"]},
                         budget=room())  # fmt: skip
    assert said == "dropped avatar.txt on region 'Drop a file'"
    assert await status(tab) == "avatar.txt uploaded"
    report = tab.settler.last
    assert report is not None and (report.reason, report.requests) == (SETTLED, 1)


async def test_without_settling_the_same_click_shows_the_page_before_the_answer(
    tab: Tab, slow_url: str
) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    tab.settler.enabled = False
    await tab.click(refs["Load orders"])
    assert "Loading" in (await tab.snapshot()).text
    await tab.wait_for(text="3 orders loaded")


async def test_requests_started_by_an_answer_are_waited_for_too(tab: Tab, slow_url: str) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.click(refs["Load totals"])  # a second request once the first is answered
    assert await status(tab) == "first then second"
    assert tab.settler.last is not None and tab.settler.last.requests == 2


async def test_typing_that_fetches_returns_with_the_results(tab: Tab, slow_url: str) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.type(refs["Search"], "abc")
    assert "found abc" in (await tab.snapshot()).text
    assert tab.settler.last is not None and tab.settler.last.reason == SETTLED


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("Slow page", "Arrived"),
        ("Go by script", "Arrived"),
        ("Send form", "Submitted"),
        ("Redirected page", "Redirected"),
        ("Go soon", "Soon"),  # from a timer the click set
        ("Save and go", "Saved"),  # once a request is answered, long after the click
        ("Draw and go", "Left"),  # location= after drawing at once
    ],
)
async def test_a_click_that_navigates_to_a_slow_page_returns_on_the_new_page(
    tab: Tab, slow_url: str, name: str, title: str
) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.click(refs[name])  # a link, location=, a form, a redirect: 500-700 ms each
    snap = await tab.snapshot()
    assert snap.title == title and "/slow-page" in snap.url
    report = tab.settler.last
    assert report is not None and report.navigated and report.reason == SETTLED


async def test_without_settling_a_navigation_after_a_request_is_missed(
    tab: Tab, slow_url: str
) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    tab.settler.enabled = False
    await tab.click(refs["Save and go"])
    assert (await tab.snapshot()).title == "Settle"
    await tab.page.wait_for_url("**/slow-page*")


async def test_a_click_that_sets_nothing_off_waits_for_nothing(tab: Tab, slow_url: str) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    result = await tab.click(refs["Do nothing"])
    assert result == "clicked button 'Do nothing'"
    report = tab.settler.last
    assert report is not None
    assert report.reason == IDLE
    assert (report.requests, report.pending, report.mutations) == (0, 0, 0)
    assert not report.navigated
    assert await tab.page.evaluate("window.clicks") == 1


async def test_a_click_that_sets_nothing_off_asks_the_page_nothing_after_it(
    tab: Tab, slow_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The click's arm answers once its event was handled: at most the probe follows (when
    that answer was not back yet), never a stop for a watcher the page already disarmed."""
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    asked = ops_asked(tab, monkeypatch)
    for _ in range(3):
        await tab.click(refs["Do nothing"])
        report = tab.settler.last
        assert report is not None and report.reason == IDLE
    assert asked.count("arm") == 3
    assert set(asked) <= {"arm", "probe"}
    assert await tab.page.evaluate("window.clicks") == 3


async def test_a_click_is_judged_on_its_own_element_when_the_page_clicks_another(
    tab: Tab, slow_url: str
) -> None:
    """Only the click's own event ends the wait for it: a click on a button whose press a
    page script answers with a click of another button (which draws nothing) is still
    judged by what the button's own click drew."""
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.page.evaluate(
        """() => {
          const nothing = [...document.querySelectorAll("button")]
            .find((b) => b.textContent.trim() === "Do nothing");
          window.addEventListener("pointerdown", () => nothing.click(), true);
        }"""
    )
    await tab.click(refs["Show note"])
    report = tab.settler.last
    assert report is not None and report.reason == SETTLED
    assert report.mutations >= 1
    assert "A note" in (await tab.snapshot()).text


async def test_a_page_that_tampers_with_events_still_gets_its_click_on_the_ref(
    tab: Tab, slow_url: str
) -> None:
    """The selector engine asks the page's registry through events; a page that rewrites
    how events are made, sent and read afterwards neither redirects nor stops the click."""
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    other = refs["Show note"]
    await tab.page.evaluate(
        """(other) => {
          Object.defineProperty(CustomEvent.prototype, "detail", { get: () => other });
          EventTarget.prototype.dispatchEvent = function () { return true; };
          window.Event = function () { throw new Error("no events"); };
        }""",
        other,
    )
    await tab.click(refs["Do nothing"])
    assert await tab.page.evaluate("window.clicks") == 1
    assert "A note" not in (await tab.snapshot()).text


async def test_a_change_drawn_by_the_click_itself_needs_no_request(
    tab: Tab, slow_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A click whose own handling drew the change, leaving nothing for later, is settled
    once the frame after it has run, in the click's own round trip (at most a probe that
    waits for the same answer): no quiet wait, no stop."""
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    # The frame is waited for up to the quiet window: a busy machine may hold it back.
    tab.settler.configure(quiet_ms=2_000)
    asked = ops_asked(tab, monkeypatch)
    await tab.click(refs["Show note"])
    report = tab.settler.last
    assert report is not None and report.reason == SETTLED
    assert report.mutations >= 1 and report.requests == 0
    assert asked.count("arm") == 1 and set(asked) <= {"arm", "probe"}
    assert "A note" in (await tab.snapshot()).text


@pytest.mark.parametrize(
    ("name", "drawn", "requests", "changes"),
    [
        ("Fetch soon", "Fetched soon", 1, 0),  # from a 30 ms timer, nothing drawn before
        ("Draw in a microtask", "Drawn in a microtask", 0, 0),
        ("Fetch by message", "Fetched by message", 1, 0),  # from a task the page posted
        ("Fetch by a later message", "Fetched by message", 1, 0),  # ... in a frame
        ("Fetch on scroll", "Fetched on scroll", 1, 0),  # from the scroll event of a frame
        # ... of the frame after the next: scrolled in the next one's animation frame.
        ("Fetch on a later scroll", "Fetched on scroll", 1, 0),
        # Drawn at once, and more left for later: a 30 ms timer's fetch, a microtask, a
        # ResizeObserver's report with the next frame.
        ("Draw and fetch soon", "Fetched after drawing", 1, 2),
        ("Draw and fetch", "Fetched at once", 1, 1),  # a spinner drawn, a fetch started
        ("Draw now and in a microtask", "Drawn at once, then in a microtask", 0, 2),
        ("Draw and measure", "Measured wide", 0, 2),
    ],
)
async def test_what_a_click_leaves_for_later_is_waited_for(
    tab: Tab, slow_url: str, name: str, drawn: str, requests: int, changes: int
) -> None:
    """A click that set nothing off is decided once its event has been handled, one that
    drew at once once its next frame has run; one that left work for later (a timer, a
    microtask, a task of its own, a scroll whose event comes with the next frame, an
    observer's report) is waited for."""
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.click(refs[name])
    report = tab.settler.last
    assert report is not None and report.reason == SETTLED
    assert report.requests == requests
    assert report.mutations >= changes  # those drawn at once: the settle saw the last one
    assert await status(tab) == drawn


async def test_a_clicks_arm_goes_to_the_page_before_the_click(tab: Tab, slow_url: str) -> None:
    """The arm sent beside a click (not waited for) is written to Playwright before the
    click: the page runs it first.  Written after it, a busy machine's pause between the two
    let the click's input reach the page before the arm, which heard nothing: "nothing
    pending" for a click that drew (seen in a full run)."""
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    connection = tab.page._impl_obj._connection  # what goes to Playwright, in order
    sent: list[str] = []
    write = connection.send_message_to_server

    def spy(owner: Any, method: str, params: Any, options: Any) -> Any:
        if method == "click" or (method == "evaluateExpression" and '"arm"' in json.dumps(params)):
            sent.append(method)
        return write(owner, method, params, options)

    connection.send_message_to_server = spy
    try:
        await tab.click(refs["Draw now and in a microtask"])
    finally:
        del connection.send_message_to_server
    assert sent[:2] == ["evaluateExpression", "click"], sent
    assert tab.settler.last is not None and tab.settler.last.reason == SETTLED


async def test_a_click_after_which_the_page_hands_work_over_again_and_again_is_not_idle(
    tab: Tab, slow_url: str
) -> None:
    """A page that posts itself a message after each one: a few frames are waited for what
    it hands over, then the quiet wait takes it (nothing changes: settled), long before
    the bound."""
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.click(refs["Post forever"])
    report = tab.settler.last
    assert report is not None and report.reason == SETTLED
    assert report.waited_ms < tab.settler.bound_ms


async def test_a_page_that_never_stops_changing_is_waited_for_one_capped_while(
    tab: Tab, slow_url: str
) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/ticker.html")
    # The page changes every 20 ms; a machine busy enough to hold its timer back past the
    # quiet window would make it look quiet (measured: 300 ms on two cores under three test
    # processes; an interval is not a timer the short quiet waits for, so it would end on a
    # 30 ms gap), so here the window is 1 s, the cap 3 s (in a bound of 6 s), no short quiet.
    tab.settler.configure(quiet_ms=1_000, quiet_max_ms=3_000, bound_ms=6_000, short_quiet_ms=0)
    assert await tab.click(refs["Do nothing"]) == "clicked button 'Do nothing'"
    report = tab.settler.last
    assert report is not None and report.reason == BUSY
    assert report.mutations > 1 and report.requests == 0


async def test_a_fetch_that_never_answers_ends_at_the_bound_and_the_click_succeeds(
    tab: Tab, slow_url: str
) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    tab.settler.configure(bound_ms=1_000)
    result = await tab.click(refs["Ask forever"])
    assert result == "clicked button 'Ask forever'"
    report = tab.settler.last
    assert report is not None
    assert (report.reason, report.pending, report.requests) == (BOUND, 1, 0)
    assert await status(tab) == "Asked"
    # What the page still waits for is not waited for again by the next settle.
    again = await tab.settle(budget=room())
    assert again.reason == IDLE and again.pending == 0
    # The endpoint that kept the bound busy is a long poll now: not waited for again.
    await tab.click(refs["Ask forever"])
    report = tab.settler.last
    assert report is not None
    assert report.reason == SETTLED and (report.pending, report.ignored) == (0, 1)


async def test_the_bound_is_taken_from_the_callers_budget(tab: Tab, slow_url: str) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    # Far less than the settle's bound: the settle ends with the caller's time (give or
    # take a busy machine's scheduling), and no error.
    tab.settler.configure(bound_ms=30_000)
    budget = Budget(1_500, label="step")
    await tab.click(refs["Ask forever"], budget=budget)
    report = tab.settler.last
    assert report is not None and report.reason == BOUND and report.pending == 1
    assert report.waited_ms < 15_000  # the caller's 1.5 s, not the bound's 30 s


async def test_a_stop_during_the_settle_cancels_the_action(tab: Tab, slow_url: str) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    budget = room("run")
    asyncio.get_running_loop().call_later(0.3, budget.cancel, "stopped by the person")
    with pytest.raises(Cancelled):
        await tab.click(refs["Ask forever"], budget=budget)


async def test_event_streams_and_long_polls_are_not_waited_for(tab: Tab, slow_url: str) -> None:
    # The page holds an event stream and a long poll open all along.
    refs = await open_page(tab, f"{slow_url}/settle/streams.html")
    await tab.wait_for(text="hello")
    await tab.click(refs["Do nothing"])
    report = tab.settler.last
    assert report is not None and report.reason == IDLE and report.pending == 0
    await tab.click(refs["Subscribe"])  # opens one more event stream
    report = tab.settler.last
    assert report is not None and report.ignored == 1 and report.pending == 0
    assert report.reason != BOUND
    await tab.click(refs["Stream by fetch"])  # a fetch answered with an event stream
    report = tab.settler.last
    assert report is not None and report.ignored == 1 and report.pending == 0
    assert report.reason == SETTLED


async def test_a_macro_reads_the_page_after_its_click_settled(tab: Tab, slow_url: str) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    macro = Macro.parse(
        {"steps": [{"type": "click", "ref": refs["Load orders"]}, {"type": "read_page"}]}
    )
    result = await run_macro(tab, macro, budget=room())
    assert result.ok and "3 orders loaded" in result.steps[-1].page


async def test_navigate_reports_the_new_page(tab: Tab, slow_url: str) -> None:
    await tab.navigate(f"{slow_url}/settle/actions.html")
    report = tab.settler.last
    assert report is not None and report.navigated and report.reason == SETTLED


@pytest.mark.parametrize(
    "how",
    [
        "now",  # at load
        "timer",  # a 95 ms timer set at load
        "chain",  # three 30 ms timers, each set by the one before
        "frame",  # two animation frames
        "frame-then-timer",  # a frame, then a 90 ms timer
        "message",  # a message to itself, then a 90 ms timer
        "idle",  # an idle callback, then a 60 ms timer
        "fetch",  # a fetch's answer (150 ms)
        "fetch-before-load",  # a fetch answered before load, drawn a task after
    ],
)
async def test_what_a_new_page_draws_as_it_loads_is_there_when_navigate_returns(
    tab: Tab, slow_url: str, how: str
) -> None:
    await tab.navigate(f"{slow_url}/settle/loading.html?how={how}")
    assert await status(tab) == "Drawn"
    report = tab.settler.last
    assert report is not None and report.navigated and report.reason == SETTLED


async def test_a_new_page_that_asked_for_no_answer_needs_only_the_short_quiet(
    tab: Tab, slow_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document whose scripts and styles ran by its load, and which asked for nothing a
    script answers (a fetch, an XHR), is done once its short timers and frames since its
    start have run (pending.js counts them from there); one that fetched may still draw
    the answer, and gets the whole quiet."""
    shorts: list[int] = []
    in_page = tab.settler._in_page

    async def recording(budget: Budget, op: str, *args: int) -> dict[str, object]:
        if op == "quiet":
            shorts.append(args[3])
        return await in_page(budget, op, *args)

    monkeypatch.setattr(tab.settler, "_in_page", recording)
    await tab.navigate(f"{slow_url}/settle/loading.html?how=timer")
    assert shorts == [tab.settler.short_quiet_ms]
    shorts.clear()
    await tab.navigate(f"{slow_url}/settle/loading.html?how=fetch-before-load")
    assert shorts and shorts[0] == 0
    assert await tab.page.evaluate("window.__tabwrightPending.due()") == 0  # disarmed


@pytest.mark.parametrize("setting", [{"bound_ms": 0}, {"quiet_ms": -5}, {"bound_ms": True}])
async def test_settle_settings_are_checked(tab: Tab, setting: dict[str, int]) -> None:
    with pytest.raises(ActionInvalid):
        tab.settler.configure(**setting)


# -- short timers and frames (pending.js) ---------------------------------------------


@pytest.mark.parametrize(
    ("name", "drawn"),
    [
        ("Draw later", "Drawn later"),  # nothing changes at the click: a 60 ms timer does
        ("Draw twice", "Drawn twice"),  # at once, then again from an 80 ms timer
        ("Draw by held timer", "Drawn by a held timer"),  # setTimeout kept since load
        ("Draw after a frame", "Drawn after a frame"),  # a frame, then a timer
    ],
)
async def test_what_a_short_timer_set_by_the_action_draws_is_waited_for(
    tab: Tab, slow_url: str, name: str, drawn: str
) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.click(refs[name])
    report = tab.settler.last
    # (The report says which way the settle decided, should the page not show it yet.)
    assert await status(tab) == drawn, report
    assert report is not None and report.reason == SETTLED and report.mutations >= 1


async def test_a_socket_or_stream_opened_leaves_no_short_quiet(tab: Tab, slow_url: str) -> None:
    await open_page(tab, f"{slow_url}/settle/actions.html")
    seen = """() => {
      const p = window.__tabwrightPending;
      p.arm(100);
      const found = [p.idle()];
      for (const Open of [WebSocket, EventSource]) {
        p.arm(100);
        const opened = new Open(`${Open === WebSocket ? "ws" : "http"}://${location.host}/x`);
        found.push(p.idle());
        opened.close();
      }
      p.disarm();
      return found;
    }"""
    # Their messages may come any time: only the whole quiet wait (a fetch's answer's).
    assert await tab.page.evaluate(seen) == [True, False, False]


async def test_an_idle_callback_is_due_until_it_ran_or_was_cancelled(
    tab: Tab, slow_url: str
) -> None:
    await open_page(tab, f"{slow_url}/settle/actions.html")
    seen = """() => new Promise((done) => {
      const p = window.__tabwrightPending;
      p.arm(100);
      requestIdleCallback(() => {});
      cancelIdleCallback(requestIdleCallback(() => {}));
      const due = [p.due(), p.handed()];
      requestIdleCallback(() => { due.push(p.due()); p.disarm(); done(due); });
    })"""
    # One due (the other cancelled), two handed over; by the last one's turn none.
    assert await tab.page.evaluate(seen) == [1, 2, 0]


@pytest.mark.parametrize("name", ["Cancel a timer", "Cancel a timer as an interval"])
async def test_a_cancelled_timer_is_not_waited_for(tab: Tab, slow_url: str, name: str) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.click(refs[name])
    report = tab.settler.last
    assert report is not None and report.reason == IDLE


async def test_timers_that_never_end_still_let_the_action_settle(tab: Tab, slow_url: str) -> None:
    refs = await open_page(tab, f"{slow_url}/settle/actions.html")
    await tab.click(refs["Poll quietly"])  # a 20 ms timer after each, changing nothing
    report = tab.settler.last
    assert report is not None and report.reason == SETTLED and report.mutations == 0
    assert await tab.page.evaluate("window.polls") > 1


async def test_outside_a_settle_the_pages_timers_are_its_own(tab: Tab, slow_url: str) -> None:
    await open_page(tab, f"{slow_url}/settle/actions.html")
    # Nothing is counted between actions, and the page's timers still work.
    assert (
        await tab.page.evaluate(
            "new Promise((done) => setTimeout(() => done(window.__tabwrightPending.due()), 10))"
        )
        == 0
    )
    assert await tab.page.evaluate("new Promise((done) => requestAnimationFrame(() => done(1)))")
    handed = """() => new Promise((done) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = (e) => done([e.data, window.__tabwrightPending.handed()]);
      channel.port2.postMessage("delivered");
    })"""
    assert await tab.page.evaluate(handed) == ["delivered", 0]
    ticks = """() => new Promise((done) => {
      let n = 0;
      const id = setInterval(function () {
        if (++n < 2) return;
        clearInterval(id);
        done([n, this === window, window.__tabwrightPending.ticked()]);
      }, 5);
    })"""
    assert await tab.page.evaluate(ticks) == [2, True, 0]
    # They read as the browser's own to a page that looks.
    names = ["setTimeout", "setInterval", "clearTimeout", "clearInterval", "requestAnimationFrame"]
    names += ["postMessage", "requestIdleCallback", "cancelIdleCallback", "EventSource"]
    names += ["WebSocket", "scrollTo"]
    shown = await tab.page.evaluate(
        "(names) => names.map((n) => [window[n].name, Function.prototype.toString.call("
        "window[n])])",
        names,
    )
    assert [name for name, _text in shown] == names
    assert all(text.endswith("{ [native code] }") for _name, text in shown), shown
