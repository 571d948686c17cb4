"""PageLog on a real Chromium: console, uncaught errors and requests of fixtures/engine/log.html."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from playwright.async_api import Route

from automation import Tab
from automation.browser.pagelog import PageLog, _served_from_cache
from automation.errors import ActionInvalid
from tests.waiting import eventually


async def open_log(tab: Tab, fixture_url: str) -> PageLog:
    pagelog = PageLog(tab.page)
    await tab.page.goto(f"{fixture_url}/engine/log.html")
    await eventually(lambda: len(pagelog.console(level="error")) >= 1)
    return pagelog


async def test_console_levels_text_and_location(tab: Tab, fixture_url: str) -> None:
    pagelog = await open_log(tab, fixture_url)
    levels = [entry.level for entry in pagelog.console()]
    assert levels[:4] == ["log", "info", "warning", "error"]
    (warning,) = pagelog.console(level="warn")  # the JS name is accepted too
    assert warning.text == "careful: warning message"
    assert warning.location.endswith("/engine/log.html:20")  # 1-based, as in the file
    assert [e.text for e in pagelog.console(contains="MESSAGE", limit=2)] == [
        "careful: warning message",
        "error message",
    ]
    assert warning.to_dict()["location"] == warning.location


async def test_uncaught_error_with_stack(tab: Tab, fixture_url: str) -> None:
    pagelog = await open_log(tab, fixture_url)
    await tab.page.click("#throw")
    await eventually(lambda: bool(pagelog.errors()))
    (error,) = pagelog.errors()
    assert error.message == "TypeError: boom from the button"
    assert error.stack and "/engine/log.html:10" in error.stack[0]
    assert pagelog.summary()["errors"][0]["message"] == error.message


async def test_requests_status_failure_and_filters(tab: Tab, fixture_url: str) -> None:
    pagelog = await open_log(tab, fixture_url)
    for button, text in (
        ("#fetch-ok", "fetched engine fixture"),
        ("#fetch-missing", "status 404"),
        ("#fetch-refused", "refused"),
    ):
        await tab.page.click(button)
        await tab.page.wait_for_selector(f"#out:text-is('{text}')", timeout=3_000)
    await eventually(lambda: len(pagelog.requests(resource_type="fetch")) == 3)
    ok, missing, refused = pagelog.requests(resource_type="fetch")
    assert (ok.method, ok.status, ok.failure, ok.failed) == ("GET", 200, None, False)
    assert ok.url.endswith("/engine/data.json") and ok.duration_ms is not None
    assert ok.duration_ms >= 0 and not ok.pending and not ok.from_cache
    assert (missing.status, missing.failed) == (404, True)
    assert refused.status is None and refused.failure and refused.failure.startswith("net::")
    assert pagelog.requests(failed_only=True, resource_type="fetch") == [missing, refused]
    assert pagelog.requests(url_contains="data.json") == [ok]
    (document,) = pagelog.requests(resource_type="document")
    assert document.status == 200 and document.url.endswith("/engine/log.html")
    summary = pagelog.summary()
    assert summary["requests"]["failed"] >= 2  # plus the favicon 404 Chromium asks for
    assert {r["url"] for r in summary["failed_requests"]} >= {missing.url, refused.url}
    assert summary["console"]["by_level"]["warning"] == 1
    assert ok.to_dict()["failed"] is False


async def test_pending_request_is_listed_until_it_ends(tab: Tab, fixture_url: str) -> None:
    pagelog = await open_log(tab, fixture_url)
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)  # not answered until the test says so

    await tab.page.route("**/held.json", hold)
    await tab.page.evaluate("() => { fetch('held.json').catch(() => {}); }")
    await eventually(lambda: bool(held))
    (entry,) = pagelog.requests(url_contains="held.json")
    assert entry.pending and entry.status is None and not entry.failed
    assert pagelog.summary()["requests"]["pending"] == 1
    await held[0].abort()
    await eventually(lambda: not pagelog.requests(url_contains="held.json")[0].pending)
    (entry,) = pagelog.requests(url_contains="held.json")
    assert entry.failed and entry.failure and pagelog.summary()["requests"]["pending"] == 0


async def test_console_ring_keeps_the_newest(tab: Tab, fixture_url: str) -> None:
    pagelog = await open_log(tab, fixture_url)
    await tab.page.click("#log-many")
    await eventually(lambda: pagelog.console(limit=1)[0].text == "line 599")
    kept = pagelog.console(limit=10_000)
    assert len(kept) == 500
    assert kept[-1].text == "line 599" and kept[0].text == "line 100"
    assert pagelog.summary()["console"]["seen"] >= 604


async def test_detach_stops_recording(tab: Tab, fixture_url: str) -> None:
    pagelog = await open_log(tab, fixture_url)
    pagelog.detach()
    pagelog.detach()  # twice is harmless
    await tab.page.evaluate("console.log('after detach')")
    await asyncio.sleep(0.1)
    assert not pagelog.console(contains="after detach")


async def test_bad_queries_are_invalid(tab: Tab) -> None:
    pagelog = PageLog(tab.page)
    for bad in (
        lambda: pagelog.console(level="loud"),
        lambda: pagelog.console(limit=0),
        lambda: pagelog.console(limit=True),
        lambda: pagelog.console(contains=""),
        lambda: pagelog.errors(limit=-1),
        lambda: pagelog.requests(resource_type="pdf"),
        lambda: pagelog.requests(url_contains=3),
        lambda: pagelog.requests(failed_only="yes"),
    ):
        with pytest.raises(ActionInvalid):
            bad()


def test_from_cache_reads_the_blank_connection_timing() -> None:
    def request(url: str, request_start: float) -> SimpleNamespace:
        return SimpleNamespace(url=url, timing={"requestStart": request_start, "responseStart": -1})

    response = SimpleNamespace(from_service_worker=False)
    assert _served_from_cache(request("http://a.test/x.js", -1), response)  # type: ignore[arg-type]
    assert not _served_from_cache(request("http://a.test/x.js", 0.3), response)  # type: ignore[arg-type]
    assert not _served_from_cache(request("data:text/plain,x", -1), response)  # type: ignore[arg-type]
    assert not _served_from_cache(request("http://a.test/x.js", -1), None)  # type: ignore[arg-type]
