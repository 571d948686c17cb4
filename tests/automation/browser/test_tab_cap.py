"""A run's tabs are capped: a site that opens popups in a loop gets the cap, the rest are
closed as they open, and the run is told once (and the total when the group closes)."""

from __future__ import annotations

import asyncio

import pytest

from automation import BrowserSession, ListSink
from automation.errors import ActionInvalid
from automation.events import PageProblem
from tests.conftest import browser_config
from tests.waiting import eventually

CAP = 5


async def test_a_popup_flood_is_capped_closed_and_reported(fixture_url: str) -> None:
    sink = ListSink()
    async with BrowserSession(browser_config(max_tabs=CAP)) as session:
        group = await session.new_group()
        group.report_to(sink.emit)
        tab = group.current
        assert tab is not None
        await tab.navigate(f"{fixture_url}/engine/popup-flood.html")
        seen_open: list[int] = []

        def count(_page: object) -> None:  # after the group's own listener, in order
            seen_open.append(group._open_pages())  # what the group holds, as each arrives

        group.context.on("page", count)
        await tab.page.click("#flood")
        # Every one of the 50 pages was announced and either kept or closed.
        for _ in range(400):
            if len(seen_open) == 50 and not group._closing:
                break
            await asyncio.sleep(0.05)
        await group.sync()

        assert max(seen_open) == CAP  # never more, at any moment of the flood
        assert len(group.tabs) == CAP
        assert group.closed_extra == 50 - (CAP - 1)
        assert sum(1 for p in group.context.pages if not p.is_closed()) == CAP
        first = sink.of_type(PageProblem)
        assert len(first) == 1  # one report for the flood, not one per popup
        assert first[0].kind == "tabs"
        assert f"limit of {CAP}" in first[0].text
        assert first[0].page_url.endswith("/engine/popup-flood.html")
        # The agent can't open one more either.
        with pytest.raises(ActionInvalid, match=f"at most {CAP} tabs"):
            await group.open()
        await group.close()

    reports = sink.of_type(PageProblem)
    assert len(reports) == 2
    assert reports[1].text.startswith(f"{50 - (CAP - 1)} tabs the site opened past")
    assert reports[1].dropped == 50 - (CAP - 1)


def test_the_cap_is_a_whole_number() -> None:
    from automation.browser.tabs import TabGroup

    with pytest.raises(ActionInvalid, match="max_tabs"):
        TabGroup(object(), make_tab=None, max_tabs=0)  # type: ignore[arg-type]


async def test_a_popup_that_opens_while_another_is_wrapped_still_finds_the_group_full(
    fixture_url: str,
) -> None:
    # Wrapping a page the site opened takes a few awaits; popups arriving meanwhile must
    # count it (under load, a 10-popup flood kept one past the cap).
    cap = 3
    async with BrowserSession(browser_config(max_tabs=cap)) as session:
        group = await session.new_group()
        tab = group.current
        assert tab is not None
        await tab.navigate(f"{fixture_url}/engine/popup-flood.html")
        announced: list[object] = []

        def announce(page: object) -> None:
            announced.append(page)

        group.context.on("page", announce)
        await tab.page.evaluate("window.open('popup-flood.html?child=first', '_blank')")
        await eventually(lambda: len(announced) == 1)

        wrap, entered, gate = group._make_tab, asyncio.Event(), asyncio.Event()

        async def slow_wrap(page, owner):  # type: ignore[no-untyped-def]
            entered.set()
            await gate.wait()
            return await wrap(page, owner)

        group._make_tab = slow_wrap
        syncing = asyncio.create_task(group.sync())
        await entered.wait()  # the first popup is being wrapped now
        await tab.page.evaluate(
            "for (let i = 0; i < 5; i++) window.open('popup-flood.html?child=' + i, '_blank')"
        )
        await eventually(lambda: len(announced) == 6 and not group._closing)
        gate.set()
        await syncing
        await group.sync()

        assert len(group.tabs) == cap
        assert group.closed_extra == 6 - (cap - 1)
        await group.close()
