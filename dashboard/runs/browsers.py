"""The browsers a process shares among its runs: one per launch settings.

A run's tab opens in the browser of the settings of the moment it starts (URL rules,
evaluate and the like are read then), so no run shares a browser launched with other
switches; a browser of settings since changed closes once no run uses it or is opening a
tab in it.  With TABWRIGHT_CDP_URL naming several running Chromes, a run's tab opens in
the one with the fewest of this process's runs, the next when it can't be reached.  On
a worker each browser is kept warm (:meth:`automation.BrowserSession.warm`): started
before any run asks, with a context open ahead of the next run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import Counter
from collections.abc import Callable

from channels.db import database_sync_to_async

from automation import BrowserConfig, BrowserSession, Tab
from automation.errors import BrowserError, TabwrightError
from dashboard.engineconf import browser_config, cdp_urls
from dashboard.lib.requestthreads import process_task
from dashboard.runs.live import LiveRun

__all__ = ["Browsers"]

log = logging.getLogger("tabwright.runner")


class Browsers:
    """``serving`` says whether this process is a worker (its browsers are kept warm)."""

    def __init__(self, serving: Callable[[], bool]) -> None:
        self._serving = serving
        self._browsers: dict[BrowserConfig, BrowserSession] = {}
        self._lock = asyncio.Lock()
        self._warming: set[asyncio.Task[None]] = set()
        self._opening: Counter[BrowserSession] = Counter()  # runs opening a tab in each

    @property
    def restarts(self) -> int:
        """How often a shared browser had to be started again (0 before the first run)."""
        return sum(b.restarts for b in self._browsers.values())

    @property
    def open(self) -> list[BrowserSession]:
        """One per launch settings a run of this process started with."""
        return list(self._browsers.values())

    async def of(self, config: BrowserConfig | None = None) -> BrowserSession:
        """The shared browser of ``config``'s launch settings (default: the settings'
        now).  On a worker it is kept warm; a browser of launch settings since changed (a
        URL rule added, say) closes once no run uses it."""
        if config is None:
            config = await database_sync_to_async(browser_config)()
        config = config.launch_settings()
        async with self._lock:
            session = self._browsers.get(config)
            if session is None:
                session = self._browsers[config] = BrowserSession(config)
                if self._serving():
                    self._warming.add(process_task(_warm(session)))
                    self._warming = {task for task in self._warming if not task.done()}
            await self._close_outdated(config)
            return session

    async def warm(self) -> None:
        """Start the browser (each of TABWRIGHT_CDP_URL's) before any run asks, with a
        context open ahead of the first run; a failure is logged (a run that starts later
        tries again, and says why it could not)."""
        try:
            config = await database_sync_to_async(browser_config)()
            urls = cdp_urls()
            configs = [dataclasses.replace(config, cdp_url=url) for url in urls] or [config]
            for each in configs:
                await _warm(await self.of(each))
        except Exception:  # the settings or the database: a run started later says why
            log.exception("the browser could not be started ahead of the runs")

    async def new_tab(self, live: LiveRun, in_use: Counter[str]) -> Tab:
        """The run's first tab: in the launched Chromium, or in one of the running Chromes
        of TABWRIGHT_CDP_URL — the one with the fewest of this process's runs (``in_use``,
        by CDP URL), the next when it can't be reached."""
        urls = cdp_urls()
        config = await database_sync_to_async(browser_config)()
        if len(urls) <= 1:
            return await self._open_tab(await self.of(config), live, config)
        failure: BrowserError | None = None
        for url in sorted(urls, key=lambda url: (in_use[url], urls.index(url))):
            each = dataclasses.replace(config, cdp_url=url)
            browser = await self.of(each)
            try:
                tab = await self._open_tab(browser, live, each)
            except BrowserError as exc:
                log.warning("run %s: the Chrome at %s: %s", live.run_id, url, exc)
                failure = exc
                continue
            live.cdp_url = url
            return tab
        assert failure is not None
        raise failure

    async def close(self) -> None:
        for task in self._warming:
            task.cancel()
        await asyncio.gather(*self._warming, return_exceptions=True)
        self._warming.clear()
        for browser in self._browsers.values():
            await browser.close()
        self._browsers.clear()

    async def _close_outdated(self, config: BrowserConfig) -> None:
        """Close the browsers of other launch settings than ``config``'s that no run uses
        or is opening a tab in (those of the other running Chromes of TABWRIGHT_CDP_URL
        are not other settings)."""
        now = dataclasses.replace(config, cdp_url="")
        for other, session in list(self._browsers.items()):
            if dataclasses.replace(other, cdp_url="") == now:
                continue
            if not session.in_use and not self._opening[session]:
                del self._browsers[other]
                await session.close()

    async def _open_tab(self, browser: BrowserSession, live: LiveRun, config: BrowserConfig) -> Tab:
        """A tab of ``browser`` for the run, with ``config``'s tab settings; meanwhile the
        browser counts as in use."""
        self._opening[browser] += 1
        try:
            return await browser.new_tab(
                workspace=live.workspace, storage_state=live.storage_state, config=config
            )
        finally:
            self._opening[browser] -= 1
            if not self._opening[browser]:
                del self._opening[browser]


async def _warm(session: BrowserSession) -> None:
    try:
        await session.warm()
    except TabwrightError as exc:
        log.warning("the browser could not be started ahead of the runs: %s", exc)
