"""A tab's listeners carry their signatures: Playwright, which looks a listener's
signature up for every event it delivers, then builds none (automation.browser.listen)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from automation import Tab
from automation.browser.listen import listener


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
