"""A page's console held to a rate (automation.browser.consolelimit) on a real Chromium: a
page writing its console in a loop stalls no other run of the browser and is told what was
not kept; a page writing a normal amount keeps every message, and can't take the rate off."""

from __future__ import annotations

import asyncio
import threading

import pytest

from automation import BrowserSession, ProblemWatcher, Tab
from automation.browser.consolelimit import BURST, RATE, ConsoleLimit
from tests.automation.browser.test_problems import Collected
from tests.conftest import FIXTURES, browser_config
from tests.net import QuietHandler, loopback_app
from tests.waiting import eventually

# fixtures/engine/console-flood.html: five thousand messages each turn of the page's loop,
# with an object each (objects), as errors (error), through a console.log the page kept
# aside first (cached), or after trying to put the browser's own methods back (restore).
SHAPES = ("objects", "error", "cached", "restore")


async def test_a_page_flooding_its_console_stalls_no_other_context(fixture_url: str) -> None:
    """While another run's page floods its console, a run's tab in another context of the
    same browser snapshots and clicks within the product's own budgets, a new tab opens and
    the flooding tab closes; the flooding run is told how many messages were not kept.
    Without the rate Playwright's driver drowns in the messages and each of these runs
    out of its budget."""
    async with BrowserSession(browser_config()) as session:
        other = await session.new_tab()
        await other.navigate(f"{fixture_url}/engine/console-flood.html?calm")
        for shape in SHAPES:
            hostile = await session.new_tab()
            told = Collected()
            watcher = ProblemWatcher(hostile, told)
            await hostile.navigate(f"{fixture_url}/engine/console-flood.html?shape={shape}")
            await eventually(lambda t=hostile: t.log.summary()["console"]["seen"] >= BURST)

            snap = await other.snapshot()
            await other.click(snap.find("Press")[0].ref)
            assert "Pressed" in (await other.snapshot()).text
            third = await session.new_tab()
            await eventually(lambda t=told: "console_flood" in t.kinds(), what=shape)
            await watcher.stop()
            await hostile.close()
            await third.close()

            (flood,) = [p for p in told.problems if p.kind == "console_flood"]
            assert flood.dropped > 0 and flood.page_url.endswith(f"shape={shape}")
            assert flood.text.startswith("the page wrote ")
            assert f"; {flood.dropped:,} were not kept" in flood.text
            assert f"keeps {BURST:,} at once, then {RATE} a second" in flood.text
            assert hostile.log.summary()["console"]["not_kept"] >= flood.dropped
            assert len(hostile.log.console(limit=10_000)) <= 500  # it saw no more than kept


async def test_a_normal_amount_is_all_kept_with_its_lines(tab: Tab, fixture_url: str) -> None:
    await tab.page.goto(f"{fixture_url}/engine/log.html")
    await tab.page.click("#log-many")
    await eventually(lambda: tab.log.console(limit=1)[0].text == "line 599")
    assert tab.log.summary()["console"]["seen"] >= 604
    assert tab.log.summary()["console"]["not_kept"] == 0
    # The page's own line, not the rate's: log.html:14 holds the button's handler.
    assert tab.log.console(limit=1)[0].location.endswith("/engine/log.html:14")


async def test_the_page_cannot_take_the_rate_off(tab: Tab, fixture_url: str) -> None:
    await tab.page.goto(f"{fixture_url}/engine/log.html")
    answers = await tab.page.evaluate(
        """() => {
            const held = console.log;
            const deleted = delete console.log;
            let redefined = true;
            try { Object.defineProperty(console, "log", { value: () => {} }); }
            catch (e) { redefined = false; }
            const mine = (...args) => held(...args);
            console.log = mine;  // a page's own logger, in front of the console's
            const kept = console.log === mine;
            console.log = held;
            return { deleted, redefined, kept, name: held.name, again: console.log === held };
        }"""
    )
    assert answers == {
        "deleted": False,
        "redefined": False,
        "kept": True,
        "name": "log",
        "again": True,
    }


async def test_a_worker_is_held_from_its_first_line(tab: Tab, fixture_url: str) -> None:
    """A worker writing twenty thousand messages from its very first line, and one started
    by a worker: each finds its console held as it begins, and what was past the rate is
    not kept.  Without the hold the limit reached a worker only after its first lines (all
    twenty thousand came through to the driver: ~15 s in which every other run stalled)."""
    for shape, said in (("", "held"), ("?nested", "nested held")):
        await tab.page.goto(f"{fixture_url}/engine/console-worker.html{shape}")
        said_it = "document.getElementById('status').textContent !== 'Starting'"
        await tab.page.wait_for_function(said_it)
        assert await tab.page.locator("#status").inner_text() == said
        await eventually(lambda: tab.log.summary()["console"]["not_kept"] > 0, what=shape)
        assert tab.log.summary()["console"]["seen"] < 20_000


async def test_the_pages_a_site_opens_have_their_workers_held_from_the_first_line(
    browser: BrowserSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page a site opens (a popup, with or without its opener) runs its first document
    before this process hears of it from Playwright (which tells of it once its document
    came); its workers were watched only then, and most of them started unheld (six of
    eight, measured: twenty thousand messages each through to the driver).  They are
    watched as Chromium makes the page: here each popup's document comes only once its
    workers are watched, and its worker is held from its first line."""
    worker_page = (FIXTURES / "engine" / "console-worker.html").read_bytes()
    watched = threading.Event()  # the popup's document waits for its watch

    class Site(QuietHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/popup"):
                watched.wait(timeout=30)  # (then the worker tells it was not held)
                self.send(200, worker_page)
            else:
                self.send(200, b"<!doctype html><title>Opener</title><p>Opener</p>")

    tab = await browser.new_tab()
    opener = ""
    watch = ConsoleLimit._watch_target

    async def telling(self: ConsoleLimit, target_id: str) -> None:
        await watch(self, target_id)
        if opener and target_id != opener:
            watched.set()

    monkeypatch.setattr(ConsoleLimit, "_watch_target", telling)
    try:
        with loopback_app(Site) as site:
            await tab.navigate(f"{site}/")
            probe = await tab.page.context.new_cdp_session(tab.page)
            opener = (await probe.send("Target.getTargetInfo"))["targetInfo"]["targetId"]
            await probe.detach()
            for n, features in enumerate(("", "noopener")):
                watched.clear()
                async with tab.page.context.expect_page(timeout=90_000) as opened:
                    await tab.page.evaluate(
                        "([u, f]) => { window.open(u, '_blank', f); }",
                        [f"{site}/popup?{n}", features],
                    )
                popup = await opened.value
                await popup.wait_for_function(
                    "document.getElementById('status').textContent !== 'Starting'"
                )
                assert await popup.locator("#status").inner_text() == "held", features
                await popup.close()
    finally:
        watched.set()
        await tab.close()


async def test_a_new_tab_is_handed_over_once_its_workers_are_watched(
    browser: BrowserSession, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy machine the watch of a new tab's workers came after the tab was handed
    over: the document it was sent to at once started its worker unheld, and the flood
    went through (seen under load).  A watch made slow here: the tab comes once it is in
    place, and the worker is held."""
    slow = ConsoleLimit._watch_target

    async def slowly(self: ConsoleLimit, target_id: str) -> None:
        await asyncio.sleep(0.5)  # a driver busy with other runs
        await slow(self, target_id)

    monkeypatch.setattr(ConsoleLimit, "_watch_target", slowly)
    tab = await browser.new_tab()
    try:
        await tab.page.goto(f"{fixture_url}/engine/console-worker.html")
        said_it = "document.getElementById('status').textContent !== 'Starting'"
        await tab.page.wait_for_function(said_it)
        assert await tab.page.locator("#status").inner_text() == "held"
    finally:
        await tab.close()


async def test_a_closed_session_leaves_nothing_watching(fixture_url: str) -> None:
    """The workers' watch belongs to its context: closing the session ends its tasks and
    lets go of its CDP session, while workers are still being started."""
    async with BrowserSession(browser_config()) as session:
        tab = await session.new_tab()
        await tab.navigate(f"{fixture_url}/engine/console-worker.html")
        limit = tab.group.console_limit
        assert limit is not None and not limit.closed
    assert limit.closed and limit.busy == 0
    left = [t for t in asyncio.all_tasks() if "consolelimit" in repr(t.get_coro())]
    assert left == []
