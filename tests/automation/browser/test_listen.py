"""A tab's listeners carry their signatures: Playwright, which looks a listener's
signature up for every event it delivers, then builds none (automation.browser.listen)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from automation import Tab
from automation.browser.listen import PER_REQUEST_EVENTS, follow, listener, unfollow
from automation.budget import Budget


async def test_a_page_load_and_a_fetch_build_no_listener_signature(
    tab: Tab, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The load pauses at the URL guard, commits a frame, and its requests and the fetch's
    # are heard by the tab's settle and page log: each event reaches a listener of ours.
    built: list[Any] = []
    signature = inspect.signature

    def spy(fn: Any, *args: Any, **kwargs: Any) -> inspect.Signature:
        if getattr(fn, "__signature__", None) is None:
            built.append(fn)
        return signature(fn, *args, **kwargs)

    monkeypatch.setattr(inspect, "signature", spy)
    await tab.page.goto(f"{fixture_url}/demo/list.html")
    await tab.page.evaluate("fetch(location.href).then(r => r.text())")
    assert tab.log.requests()[-1].status == 200  # the page log heard the fetch end
    assert built == []


def test_a_listener_passes_its_one_argument_and_the_answer() -> None:
    heard: list[object] = []
    call = listener(lambda event: heard.append(event) or "answer")
    assert call("request") == "answer" and heard == ["request"]
    assert len(inspect.signature(call).parameters) == 1


def page_listeners(tab: Tab) -> dict[str, int]:
    impl = tab.page._impl_obj  # type: ignore[attr-defined]
    return {event: len(impl.listeners(event)) for event in PER_REQUEST_EVENTS}


async def test_a_pages_request_events_reach_one_listener_the_settle_and_page_log_share(
    tab: Tab, fixture_url: str
) -> None:
    # Playwright converts an event's objects and calls anew for each listener of the page:
    # the settle's traffic and the page log hear each request event through one.
    assert page_listeners(tab) == dict.fromkeys(PER_REQUEST_EVENTS, 1)
    traffic = tab.settler.traffic
    seen = traffic.seq
    await tab.page.goto(f"{fixture_url}/demo/list.html")
    await tab.page.evaluate("fetch(location.href).then(r => r.text())")
    assert tab.log.requests()[-1].status == 200  # the page log heard the fetch end
    heard = Budget(10_000, label="the request events")
    await traffic.until(lambda: traffic.seq >= seen + 2, heard)  # the document, the fetch
    tab.log.detach()
    seen = traffic.seq
    await tab.page.evaluate("fetch(location.href).then(r => r.text())")
    await traffic.until(lambda: traffic.seq == seen + 1, heard)  # still heard, on the same listener
    assert page_listeners(tab) == dict.fromkeys(PER_REQUEST_EVENTS, 1)
    for event, handler in (("request", traffic._on_request), ("response", traffic._on_response),
                           ("requestfinished", traffic._on_done),
                           ("requestfailed", traffic._on_failed)):  # fmt: skip
        unfollow(tab.page, event, handler)
    # Nobody follows them: the page has no listener, and Playwright stops sending them.
    assert page_listeners(tab) == dict.fromkeys(PER_REQUEST_EVENTS, 0)


def test_each_follower_is_called_in_order_whatever_another_does() -> None:
    class Page:
        def __init__(self) -> None:
            self.listeners: dict[str, list[Any]] = {}

        def on(self, event: str, call: Any) -> None:
            self.listeners.setdefault(event, []).append(call)

        def remove_listener(self, event: str, call: Any) -> None:
            self.listeners[event].remove(call)

    page, heard = Page(), []

    def broken(event: object) -> None:
        raise RuntimeError("broken")

    def leaves(event: object) -> None:
        heard.append(("leaves", event))
        unfollow(page, "request", leaves)

    follow(page, "request", broken)
    follow(page, "request", leaves)
    follow(page, "request", lambda event: heard.append(("stays", event)))
    assert len(page.listeners["request"]) == 1
    page.listeners["request"][0]("first")
    page.listeners["request"][0]("second")
    assert heard == [("leaves", "first"), ("stays", "first"), ("stays", "second")]
