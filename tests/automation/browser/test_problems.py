"""ProblemWatcher on a real Chromium: the page problems of fixtures/problems/ as they happen."""

from __future__ import annotations

import asyncio
import time

import pytest

from automation import BrowserSession, Budget, ProblemWatcher, Tab
from automation.browser.pagelog import ConsoleEntry, LogEntry, PageLog
from automation.events import PageProblem
from tests.conftest import browser_config
from tests.net import free_port
from tests.waiting import eventually


class Collected:
    """An ``on_problem`` that keeps what it is given."""

    def __init__(self) -> None:
        self.problems: list[PageProblem] = []

    async def __call__(self, problem: PageProblem) -> None:
        self.problems.append(problem)

    def kinds(self) -> list[str]:
        return [p.kind for p in self.problems]


async def settle() -> None:
    """Time for events already on their way; what a test asserts is absent stays absent."""
    await asyncio.sleep(0.3)


async def open_problems(tab: Tab, fixture_url: str, *, refused_port: int = 0) -> str:
    url = f"{fixture_url}/problems/problems.html?refused={refused_port or ''}"
    await tab.page.goto(url)
    await tab.page.wait_for_function("document.title === 'Problems: done'", timeout=5_000)
    return url


async def test_four_problems_in_order_with_their_fields(tab: Tab, fixture_url: str) -> None:
    got = Collected()
    watcher = ProblemWatcher(tab, got)
    port = free_port()
    url = await open_problems(tab, fixture_url, refused_port=port)
    await eventually(lambda: len(got.problems) >= 4)
    await settle()
    await watcher.stop()
    # log, info, warning and debug are not problems; neither is Chromium's favicon 404 nor
    # its "Failed to load resource" echo of each failed request.
    console, error, missing, refused = got.problems
    assert got.kinds() == ["console", "pageerror", "request", "request"]
    assert all(p.type == "page.problem" and p.page_url == url for p in got.problems)
    assert (console.text, console.level) == ("console error on purpose", "error")
    assert console.url == f"{url}:20"  # where console.error is, 1-based
    assert (console.status, console.method, console.dropped) == (None, "", 0)
    assert error.text == "TypeError: uncaught on purpose"
    assert error.url.startswith(f"{url}:21:")  # the throw, line and column
    missing_url = f"{fixture_url}/problems/missing.json"
    assert missing.text == f"GET {missing_url} → 404"
    assert (missing.url, missing.status, missing.method) == (missing_url, 404, "GET")
    assert missing.resource_type == "fetch" and missing.level == ""
    refused_url = f"http://127.0.0.1:{port}/nothing"
    assert refused.text == f"GET {refused_url} → could not connect: connection refused"
    assert (refused.url, refused.status, refused.resource_type) == (refused_url, None, "fetch")
    assert missing.to_dict() == {
        "type": "page.problem",
        "kind": "request",
        "text": missing.text,
        "url": missing_url,
        "page_url": url,
        "level": "",
        "status": 404,
        "method": "GET",
        "resource_type": "fetch",
        "dropped": 0,
    }
    assert PageProblem.persist and watcher.reported == 4 and watcher.dropped == 0


async def test_aborted_requests_are_not_problems(tab: Tab, fixture_url: str) -> None:
    await open_problems(tab, fixture_url)
    got = Collected()
    async with ProblemWatcher(tab, got):
        await tab.page.click("#abort")
        await tab.page.wait_for_function("document.title === 'Problems: aborted'")
        await tab.page.click("#again")  # a marker: everything before it has arrived
        await eventually(lambda: bool(got.problems))
        await settle()
    assert [p.text for p in got.problems] == ["clicked error"]
    assert tab.log.requests(failed_only=True, url_contains="data.json")[0].failure == (
        "net::ERR_ABORTED"
    )


async def test_a_page_that_navigates_is_still_followed(tab: Tab, fixture_url: str) -> None:
    got = Collected()
    async with ProblemWatcher(tab, got):
        await tab.page.goto(f"{fixture_url}/problems/opener.html")
        url = await open_problems(tab, fixture_url)
        await eventually(lambda: len(got.problems) >= 3)
        await settle()
    assert got.kinds() == ["console", "pageerror", "request"]
    assert {p.page_url for p in got.problems} == {url}


async def test_a_popup_reports_its_own_problems(tab: Tab, fixture_url: str) -> None:
    got = Collected()
    watcher = ProblemWatcher(tab, got)
    await tab.page.goto(f"{fixture_url}/problems/opener.html")
    async with tab.page.expect_popup() as opened:
        await tab.page.click("#open")
    popup = await opened.value
    await eventually(lambda: len(got.problems) >= 2)
    await settle()
    # Not wrapped by the group until it syncs: the watcher saw the popup from its birth.
    assert tab.group is not None and len(tab.group.tabs) == 1
    popup_url = f"{fixture_url}/problems/popup.html"
    assert [(p.kind, p.page_url) for p in got.problems] == [
        ("console", popup_url),
        ("request", popup_url),
    ]
    assert got.problems[0].text == "error from the popup"
    assert got.problems[1].text == f"GET {fixture_url}/problems/popup-missing.json → 404"
    await tab.group.sync()  # now a Tab: still reported once, through the watcher's own log
    await popup.evaluate("console.error('later in the popup')")
    await eventually(lambda: len(got.problems) >= 3)
    await settle()
    assert [p.text for p in got.problems[2:]] == ["later in the popup"]
    await watcher.stop()


async def test_a_tab_without_a_group_is_followed_with_its_popups(
    browser: BrowserSession, tab: Tab, fixture_url: str
) -> None:
    await tab.page.goto(f"{fixture_url}/problems/opener.html")
    lone = await browser.adopt(tab.page)  # as when connecting to a page made elsewhere
    assert lone.group is None
    got = Collected()
    watcher = ProblemWatcher(lone, got)
    async with lone.page.expect_popup() as opened:
        await lone.page.click("#open")
    popup = await opened.value
    await eventually(lambda: len(got.problems) >= 2)
    await watcher.stop()
    assert [p.text for p in got.problems] == [
        "error from the popup",
        f"GET {fixture_url}/problems/popup-missing.json → 404",
    ]
    assert listener_counts(lone.page, ("popup",)) == {"popup": 0}
    assert listener_counts(popup, ("popup",)) == {"popup": 0}
    lone.log.detach()


async def test_a_watcher_given_the_group_follows_its_tabs(tab: Tab, fixture_url: str) -> None:
    assert tab.group is not None
    got = Collected()
    async with ProblemWatcher(tab.group, got):
        second = await tab.group.open(f"{fixture_url}/problems/opener.html")
        await second.page.evaluate("console.error('from the second tab')")
        await tab.page.evaluate("console.error('from the first tab')")
        await eventually(lambda: len(got.problems) >= 2)
    assert [p.text for p in got.problems] == ["from the second tab", "from the first tab"]


async def test_past_the_limit_problems_are_counted_then_summed_up(
    tab: Tab, fixture_url: str
) -> None:
    await open_problems(tab, fixture_url)
    got = Collected()
    watcher = ProblemWatcher(tab, got, max_problems=3)
    await tab.page.click("#many")
    await eventually(lambda: watcher.reported + watcher.dropped >= 10)
    await watcher.stop()
    assert [p.text for p in got.problems[:3]] == ["error 0", "error 1", "error 2"]
    summary = got.problems[3]
    assert len(got.problems) == 4 and (summary.kind, summary.dropped) == ("summary", 7)
    assert summary.text == "7 more page problems not reported (limit 3): 7 console"
    await watcher.stop()  # idempotent: no second summary
    assert len(got.problems) == 4 and watcher.stopped


async def test_no_summary_when_nothing_was_dropped(tab: Tab, fixture_url: str) -> None:
    got = Collected()
    watcher = ProblemWatcher(tab, got, max_problems=0)
    await watcher.stop()
    assert got.problems == []
    with pytest.raises(ValueError):
        ProblemWatcher(tab, got, max_problems=-1)


async def test_a_callback_that_raises_does_not_stop_later_reports(
    tab: Tab, fixture_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    async def fragile(problem: PageProblem) -> None:
        seen.append(problem.text)
        if len(seen) == 1:
            raise RuntimeError("the database is down")

    async with ProblemWatcher(tab, fragile):
        await open_problems(tab, fixture_url)
        await eventually(lambda: len(seen) >= 3)
    assert seen == [
        "console error on purpose",
        "TypeError: uncaught on purpose",
        f"GET {fixture_url}/problems/missing.json → 404",
    ]
    assert "on_problem failed" in caplog.text and "the database is down" in caplog.text


async def test_stop_after_the_tab_closed_returns_promptly(
    browser: BrowserSession, fixture_url: str
) -> None:
    tab = await browser.new_tab()
    got = Collected()
    watcher = ProblemWatcher(tab, got, max_problems=1)
    await open_problems(tab, fixture_url)
    await eventually(lambda: watcher.dropped >= 1)
    await tab.close()  # the run's last tab: its browser context goes too
    started = time.monotonic()
    await watcher.stop()
    assert time.monotonic() - started < 3  # not the stop's 5 s
    assert got.kinds() == ["console", "summary"]


async def test_stop_after_the_browser_closed_returns_promptly(fixture_url: str) -> None:
    session = BrowserSession(browser_config())
    tab = await session.new_tab()
    got = Collected()
    watcher = ProblemWatcher(tab, got)
    await open_problems(tab, fixture_url)
    await eventually(lambda: len(got.problems) >= 3)
    await session.close()
    started = time.monotonic()
    await watcher.stop()
    await watcher.stop()
    assert time.monotonic() - started < 3  # not the stop's 5 s
    assert got.kinds() == ["console", "pageerror", "request"]


async def test_a_stuck_callback_does_not_hold_stop(tab: Tab, fixture_url: str) -> None:
    stuck = asyncio.Event()

    async def never_returns(problem: PageProblem) -> None:
        stuck.set()
        await asyncio.Event().wait()

    watcher = ProblemWatcher(tab, never_returns)
    await open_problems(tab, fixture_url)
    await asyncio.wait_for(stuck.wait(), 60)
    started = time.monotonic()
    await watcher.stop(budget=Budget(200, label="stop"))
    assert time.monotonic() - started < 30  # the callback never returns


CONTEXT_EVENTS = ("console", "request", "requestfinished", "requestfailed", "page")


def listener_counts(emitter: object, events: tuple[str, ...]) -> dict[str, int]:
    impl = emitter._impl_obj  # type: ignore[attr-defined]
    return {event: len(impl.listeners(event)) for event in events}


async def test_no_listener_is_left_after_stop(tab: Tab, fixture_url: str) -> None:
    got = Collected()
    before_watcher = listener_counts(tab.context, CONTEXT_EVENTS)
    watcher = ProblemWatcher(tab, got)
    assert listener_counts(tab.context, CONTEXT_EVENTS) != before_watcher
    await tab.page.goto(f"{fixture_url}/problems/opener.html")
    async with tab.page.expect_popup() as opened:
        await tab.page.click("#open")
    popup = await opened.value
    await eventually(lambda: len(got.problems) >= 2)
    await watcher.stop()
    before = len(got.problems)
    assert tab.log._subscribers == []
    assert listener_counts(tab.context, CONTEXT_EVENTS) == before_watcher
    await tab.page.evaluate("console.error('after stop')")
    await popup.evaluate("console.error('after stop, in the popup')")
    second = await tab.group.open() if tab.group else None
    assert second is not None
    await second.page.evaluate("console.error('after stop, in a new tab')")
    await tab.page.wait_for_function("true")
    await settle()
    assert len(got.problems) == before
    # The tab's own log is untouched by the watcher: it still records.
    assert tab.log.console(contains="after stop")


async def test_page_log_subscribers_hear_each_new_entry(tab: Tab, fixture_url: str) -> None:
    pagelog = PageLog(tab.page)
    heard: list[LogEntry] = []

    def broken(entry: LogEntry) -> None:
        raise RuntimeError("a subscriber bug")

    pagelog.subscribe(broken)  # its errors are logged; the log and the others carry on
    pagelog.subscribe(heard.append)
    pagelog.subscribe(heard.append)  # once is enough
    await tab.page.goto(f"{fixture_url}/problems/opener.html")
    await tab.page.evaluate("console.warn('heard')")
    await eventually(lambda: any(isinstance(e, ConsoleEntry) for e in heard))
    (message,) = [e for e in heard if isinstance(e, ConsoleEntry)]
    assert (message.level, message.text) == ("warning", "heard")
    assert pagelog.console(contains="heard") == [message]
    pagelog.unsubscribe(heard.append)
    pagelog.unsubscribe(heard.append)  # twice is harmless
    count = len(heard)
    await tab.page.evaluate("console.warn('not heard')")
    await eventually(lambda: bool(pagelog.console(contains="not heard")))
    assert len(heard) == count
    pagelog.detach()
