"""The tabs of one run: one browser context (its own cookies and storage), several pages,
one of them current.  Pages the site opens itself (``target=_blank``, ``window.open``)
join the group, so the agent can list and select them."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError

from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionInvalid, BrowserError

__all__ = ["TabGroup"]

MAX_TABS = 20


class TabGroup:
    def __init__(
        self,
        context: BrowserContext,
        *,
        make_tab: Callable[[Page, TabGroup], Awaitable[Tab]],
        on_close: Callable[[TabGroup], None] | None = None,
    ) -> None:
        self.context = context
        self.tabs: list[Tab] = []
        self.current: Tab | None = None
        self.blocked: deque[tuple[str, str]] = deque(maxlen=100)  # (url, reason), latest last
        self.blocked_total = 0  # navigations the URL guard stopped, ever
        self._make_tab = make_tab
        self._on_close = on_close
        self._closed = False
        self._pending: set[Page] = set()
        context.on("page", self._on_page)

    def note_blocked(self, url: str, reason: str) -> None:
        """The URL guard's report of a navigation it stopped in this context."""
        self.blocked.append((url, reason))
        self.blocked_total += 1

    def _on_page(self, page: Page) -> None:
        """A page the site opened: wrap it when it is first asked for (see :meth:`sync`)."""
        if not any(t.page is page for t in self.tabs):
            self._pending.add(page)

    async def sync(self) -> None:
        """Wrap pages opened by the site since the last call; drop closed ones."""
        for page in list(self._pending):
            self._pending.discard(page)
            if not page.is_closed() and not any(t.page is page for t in self.tabs):
                await self.adopt(page)
        self.tabs = [t for t in self.tabs if not t.page.is_closed()]
        if self.current is not None and self.current not in self.tabs:
            self.current = self.tabs[-1] if self.tabs else None

    async def adopt(self, page: Page) -> Tab:
        tab = await self._make_tab(page, self)
        tab.group = self
        self.tabs.append(tab)
        if self.current is None:
            self.current = tab
        return tab

    async def open(self, url: str = "", *, budget: Budget | None = None) -> Tab:
        """A new page in this context; it becomes the current tab."""
        await self.sync()
        if len(self.tabs) >= MAX_TABS:
            raise ActionInvalid(f"at most {MAX_TABS} tabs per run; close one first")
        budget = budget or Budget(15_000, label="open tab")
        if url and self.current is not None:
            url = await self.current.config.url_policy.check_resolved(url, budget=budget)
        try:
            page = await budget.run(self.context.new_page())
        except PlaywrightError as exc:
            raise BrowserError(f"could not open a tab: {str(exc).splitlines()[0]}") from None
        self._pending.discard(page)
        tab = await self.adopt(page)
        self.current = tab
        if url:
            await tab.navigate(url, budget=budget)
        return tab

    def list(self) -> list[dict[str, Any]]:
        return [
            {"index": i, "url": t.page.url, "current": t is self.current}
            for i, t in enumerate(self.tabs)
        ]

    async def select(self, index: int) -> Tab:
        await self.sync()
        tab = self._at(index)
        self.current = tab
        try:
            await tab.page.bring_to_front()
        except PlaywrightError:
            pass  # only cosmetic in headless mode
        return tab

    async def close_tab(self, index: int) -> Tab | None:
        """Close one tab; the last one opened before it becomes current."""
        await self.sync()
        tab = self._at(index)
        if len(self.tabs) == 1:
            raise ActionInvalid("this is the run's only tab; open another before closing it")
        self.tabs.remove(tab)
        try:
            await tab.page.close()
        except PlaywrightError:
            pass
        if self.current is tab:
            self.current = self.tabs[-1]
        return self.current

    def _at(self, index: int) -> Tab:
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.tabs):
            raise ActionInvalid(
                f"no tab {index!r}; there are {len(self.tabs)} (0 to {len(self.tabs) - 1})",
                hint="list the tabs first",
            )
        return self.tabs[index]

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.context.close()
        except PlaywrightError:
            pass  # the browser is already gone
        if self._on_close is not None:
            self._on_close(self)
