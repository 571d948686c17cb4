"""One Playwright connection per browser; each run or caller gets its own tab in its own context.

``BrowserSession`` launches Debian's Chromium through Playwright (path from the config) or
connects to a running Chrome by CDP URL.  If the browser died, the next ``new_tab()``
starts (or reconnects) a fresh one and says so in ``restarts``.
"""

from __future__ import annotations

import asyncio
import logging

from playwright.async_api import Browser, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from automation.browser.config import BrowserConfig
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import BrowserError

__all__ = ["BrowserSession"]

log = logging.getLogger("automation.browser")


class BrowserSession:
    def __init__(self, config: BrowserConfig | None = None) -> None:
        self.config = config or BrowserConfig()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = asyncio.Lock()
        self._tabs: set[Tab] = set()
        self.restarts = 0

    @property
    def connected(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    async def start(self, *, budget: Budget | None = None) -> None:
        budget = budget or Budget(self.config.launch_timeout_ms, label="browser start")
        async with self._lock:
            if self.connected:
                return
            if self._browser is not None:
                self.restarts += 1
                log.warning("browser was gone; starting a new one (restart %d)", self.restarts)
                await self._drop_browser()
            await budget.run(self._start_browser(budget))

    async def _start_browser(self, budget: Budget) -> None:
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        chromium = self._playwright.chromium
        try:
            if self.config.cdp_url:
                self._browser = await chromium.connect_over_cdp(
                    self.config.cdp_url, timeout=budget.playwright_timeout()
                )
            else:
                self._browser = await chromium.launch(
                    executable_path=self.config.executable_path or None,
                    headless=self.config.headless,
                    args=list(self.config.args),
                    timeout=budget.playwright_timeout(),
                )
        except PlaywrightError as exc:
            where = self.config.cdp_url or self.config.executable_path
            raise BrowserError(
                f"could not start or reach the browser at {where}: {_first_line(exc)}",
                hint="check TABWRIGHT_CHROMIUM_PATH or TABWRIGHT_CDP_URL",
            ) from None

    async def new_tab(self, *, budget: Budget | None = None) -> Tab:
        """A fresh page in a fresh browser context (own cookies and storage)."""
        budget = budget or Budget(self.config.launch_timeout_ms, label="new tab")
        await self.start(budget=budget)
        assert self._browser is not None
        try:
            context = await budget.run(
                self._browser.new_context(
                    viewport={
                        "width": self.config.viewport_width,
                        "height": self.config.viewport_height,
                    }
                )
            )
            page = await budget.run(context.new_page())
        except PlaywrightError as exc:
            raise BrowserError(f"could not open a tab: {_first_line(exc)}") from None
        tab = Tab(page, context=context, config=self.config, on_close=self._tabs.discard)
        self._tabs.add(tab)
        return tab

    async def close(self) -> None:
        async with self._lock:
            for tab in list(self._tabs):
                await tab.close()
            await self._drop_browser()
            if self._playwright is not None:
                await self._playwright.stop()
                self._playwright = None

    async def _drop_browser(self) -> None:
        browser, self._browser = self._browser, None
        if browser is not None:
            try:
                await browser.close()
            except PlaywrightError:
                pass  # already gone: nothing to close

    async def __aenter__(self) -> BrowserSession:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
