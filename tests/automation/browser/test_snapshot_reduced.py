"""A page too big to snapshot in time: the snapshot is reduced to the elements one can act
on (with a head saying so and why) instead of failing, and a budget that runs out names
itself.  The full walk's time is set by configuration (1 ms), so the reduced path is taken
whatever the machine's speed."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest_asyncio

from automation import AgentConfig, AgentRun, BrowserSession, Budget, ListSink, SnapshotOptions, Tab
from automation.events import RunFinished
from automation.llm.rules import RulePlanner
from tests.bounds import room
from tests.conftest import browser_config

ELEMENTS = 200_000


@pytest_asyncio.fixture(loop_scope="session")
async def hurried_tab() -> AsyncIterator[Tab]:
    """A tab whose snapshots give the full walk 1 ms before they reduce."""
    async with BrowserSession(browser_config(snapshot_full_pass_ms=1)) as session:
        tab = await session.new_tab()
        yield tab


async def big_page(tab: Tab, fixture_url: str) -> None:
    # Building 200,000 elements is slow on a busy machine: no test of speed here.
    url = f"{fixture_url}/engine/big-page.html?rows={ELEMENTS // 10}"
    await tab.navigate(url, budget=Budget(120_000))
    count = await tab.page.evaluate("document.getElementsByTagName('*').length")
    assert count >= ELEMENTS


async def test_a_page_too_big_to_walk_in_time_gets_a_reduced_snapshot(
    hurried_tab: Tab, fixture_url: str
) -> None:
    tab = hurried_tab
    await big_page(tab, fixture_url)
    snap = await tab.snapshot(budget=Budget(60_000, label="snapshot"))

    assert snap.reduced and not snap.delta
    head = snap.text.splitlines()[0]
    assert re.match(
        r"# reduced snapshot: the page \(\d{6} elements\) is too big to show whole within the "
        r"snapshot's 60000 ms budget; only the elements one can act on are listed",
        head,
    ), head
    # Interactive elements only, one line each, no structure or text.
    assert "- heading" not in snap.text and "- text:" not in snap.text
    assert len([r for r in snap.refs.values() if r.role == "link"]) == ELEMENTS // 10
    assert len([r for r in snap.refs.values() if r.role == "textbox"]) == ELEMENTS // 10
    # Within a character budget it stops looking once the budget is full, and says so.
    snap = await tab.snapshot(
        SnapshotOptions(max_chars=16_000), budget=Budget(60_000, label="snapshot")
    )
    assert snap.reduced and len(snap.text) <= 16_000
    cut = re.search(
        r"# … cut: (\d+) more elements one can act on are not shown \((.*?)\)", snap.text
    )
    assert cut is not None, snap.text[:600]
    assert int(cut.group(1)) > 30_000
    assert "past the snapshot's character budget" in cut.group(2)
    # Its refs work like any others.
    top = snap.find("Top action")[0]
    await tab.click(top.ref, budget=room())  # (a page of 200,000 elements: busy machines)
    await tab.wait_for(text="Top clicked", budget=room())


async def test_a_small_page_still_gets_its_full_snapshot(tab: Tab, fixture_url: str) -> None:
    await tab.navigate(f"{fixture_url}/engine/big-page.html?rows=5")
    snap = await tab.snapshot(SnapshotOptions(), budget=room("snapshot"))
    assert not snap.reduced
    assert '- heading "Orders"' in snap.text and "- text: Order 0" in snap.text


async def test_the_run_goes_on_with_a_reduced_snapshot(hurried_tab: Tab, fixture_url: str) -> None:
    sink = ListSink()
    run = AgentRun(
        tab=hurried_tab,
        planner=RulePlanner(),
        sink=sink,
        task="click Top action\nwait for Top clicked",
        # Smaller: the 1 ms full walk reduces any page; the 200,000 are tested above.
        start_url=f"{fixture_url}/engine/big-page.html?rows=2000",
        config=AgentConfig(
            screenshots=False,
            record_person=False,
            snapshot_timeout_ms=60_000,
            action_timeout_ms=120_000,
        ),
    )
    finished = await run.run()
    assert finished.status == "succeeded", finished.reason


async def test_a_snapshot_out_of_time_fails_the_run_naming_the_snapshot(
    tab: Tab, fixture_url: str
) -> None:
    """Not "the run ran out of its 1800000 ms budget": the snapshot's own budget did."""
    sink = ListSink()
    run = AgentRun(
        tab=tab,
        planner=RulePlanner(),
        sink=sink,
        task="click Top action",
        start_url=f"{fixture_url}/engine/big-page.html?rows=5",
        config=AgentConfig(screenshots=False, record_person=False, snapshot_timeout_ms=0),
    )
    finished = await run.run()
    assert finished.status == "failed"
    assert finished.reason == "the snapshot ran out of its 0 ms budget"
    assert sink.of_type(RunFinished) == [finished]
