"""The tabs of one run: one browser context (its own cookies and storage), several pages,
one of them current.  Pages the site opens itself (``target=_blank``, ``window.open``)
join the group, so the agent can list and select them; the group remembers which page
opened each (:meth:`TabGroup.opener_of`), so a run's steps in a popup its own step opened
can be saved and replayed (automation.recording.replaytabs).

Each tab has an id of its own for as long as it is open (:meth:`TabGroup.id_of`), never
reused: a tab's number in the list changes as tabs before it close, its id does not, so a
person's choice on the live view's tab strip (:meth:`TabGroup.overview`,
:meth:`TabGroup.select_id`) never lands on another tab than the one they saw.

A group holds at most ``max_tabs`` pages (``BrowserConfig.max_tabs``): a page the site
opens past that is closed as it opens, and counted.  The first one closed is reported at
once as a :class:`PageProblem` of kind ``tabs``, and the total once more when the group
closes, so a site that opens popups in a loop costs two reports, not one per popup.

Before that, each document's ``window.open`` opens a window only as a person's browser
lets it (:data:`WINDOW_LIMIT_JS`, an init script of the context: while the page has a
person's activation, and at most a burst then a few a second); Chromium's headless shell
has no popup blocker, and a page opening windows in a loop held the event loop every run
of the process shares while each one was set up to be closed."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext, Page
from playwright.async_api import Error as PlaywrightError

from automation.browser.consolelimit import ConsoleLimit
from automation.browser.downloads import DownloadKeeper
from automation.browser.tab import Tab
from automation.budget import Budget
from automation.errors import ActionInvalid, BrowserError, TabNotFound, TabwrightError
from automation.events import Event, PageProblem

__all__ = ["MAX_TABS", "WINDOW_LIMIT_JS", "TabGroup"]

log = logging.getLogger("automation.browser")

MAX_TABS = 20  # the default of BrowserConfig.max_tabs
WINDOW_LIMIT_JS = Path(__file__).with_name("windowlimit.js").read_text(encoding="utf-8")
_CLOSE_TIMEOUT_MS = 5_000
# How long closing a context waits for the downloads its tabs began to end and be saved:
# within the run's END_STEP_S (dashboard.runs.live), past it they are cancelled.
DOWNLOADS_FINISH_S = 10.0
# How long a look at the tabs waits for pages being wrapped (a new tab's own CDP session
# and the evaluate engine's): past it, the look goes on without them and a later one finds
# them.
_WRAP_WAIT_S = 10.0
_OPENED_POLL_S = 0.05  # how often a tab Chromium has opened is looked for in the group
_TITLE_MS = 1_000  # a tab's title for the overview: past it, the title as last read
MAX_TITLE_CHARS = 200

Report = Callable[[Event], Awaitable[None]]


class TabGroup:
    def __init__(
        self,
        context: BrowserContext,
        *,
        make_tab: Callable[[Page, TabGroup], Awaitable[Tab]],
        on_close: Callable[[TabGroup], None] | None = None,
        max_tabs: int = MAX_TABS,
        console_limit: ConsoleLimit | None = None,
    ) -> None:
        if isinstance(max_tabs, bool) or not isinstance(max_tabs, int) or max_tabs < 1:
            raise ActionInvalid(f"max_tabs must be a whole number >= 1, not {max_tabs!r}")
        self.context = context
        self.max_tabs = max_tabs
        self.closed_extra = 0  # pages the site opened past max_tabs, closed as they opened
        self._closing: set[asyncio.Task[None]] = set()
        self._report: Report | None = None
        self._reported_extra = 0
        self.tabs: list[Tab] = []
        self.current: Tab | None = None
        self._ids: dict[Tab, int] = {}  # each tab's id while it is in the group
        self._titles: dict[Tab, str] = {}  # each tab's title as last read
        self._next_id = 1
        self.blocked: deque[tuple[str, str]] = deque(maxlen=100)  # (url, reason), latest last
        self.blocked_total = 0  # navigations the URL guard stopped, ever
        self._make_tab = make_tab
        self.console_limit = console_limit  # closed with the group
        self._on_close = on_close
        self._closed = False
        self._pending: set[Page] = set()  # opened by the site, not wrapped yet
        # Each page being wrapped (in neither set above nor tabs), its wrapping under way.
        self._wrapping: dict[Page, asyncio.Future[Tab]] = {}
        self._told: set[str] = set()  # targets :meth:`opened_by` has told of
        # The download keepers of the tabs closed before the group: waited for at its close.
        self._closed_keepers: list[DownloadKeeper] = []
        context.on("page", self._on_page)

    def note_blocked(self, url: str, reason: str) -> None:
        """The URL guard's report of a navigation it stopped in this context."""
        self.blocked.append((url, reason))
        self.blocked_total += 1

    def report_to(self, report: Report) -> None:
        """Where the group says it closed pages past ``max_tabs`` (a run's event sink)."""
        self._report = report

    def _open_pages(self) -> int:
        """Pages the group holds, whether wrapped, being wrapped or not yet asked for."""
        pages = self._pending | set(self._wrapping) | {t.page for t in self.tabs}
        return sum(1 for p in pages if not p.is_closed())

    def _on_page(self, page: Page) -> None:
        """A page the site opened: wrap it when it is first asked for (see :meth:`sync`),
        or close it at once when the group is full."""
        if any(t.page is page for t in self.tabs):
            return
        if self._open_pages() < self.max_tabs:
            self._pending.add(page)
            return
        # Runs inside Playwright's event dispatch: the close and the report are tasks.
        self.closed_extra += 1
        task = asyncio.get_running_loop().create_task(self._close_extra(page))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close_extra(self, page: Page) -> None:
        opener: Page | None = None
        budget = Budget(_CLOSE_TIMEOUT_MS, label="close a tab")
        try:
            opener = await budget.run(page.opener())
            await budget.run(page.close())
        except Exception as exc:  # the browser may be gone; a page left open is counted
            log.warning("a tab past the limit of %d was not closed: %s", self.max_tabs, exc)
        if self._reported_extra == 0:  # checked and set with no await between: once
            await self._say(
                f"the site opened more tabs than the run's limit of {self.max_tabs}: "
                f"{self.closed_extra} closed as it opened; later ones are closed too",
                page_url=opener.url if opener is not None else "",
            )

    async def _say(self, text: str, *, page_url: str = "") -> None:
        self._reported_extra = self.closed_extra
        if self._report is None:
            return
        problem = PageProblem(kind="tabs", text=text, page_url=page_url, dropped=self.closed_extra)
        try:
            await self._report(problem)
        except Exception:  # a report that fails must not leave the page's event unhandled
            log.exception("tabs: the report of closed tabs failed")

    async def sync(self) -> None:
        """Wrap pages opened by the site since the last call, and wait (up to
        ``_WRAP_WAIT_S``) for those being wrapped already: a look that comes while another
        wraps a popup sees it too (the live view following a popup while its tab strip
        looks).  Drop closed ones."""
        for page in list(self._pending):
            self._pending.discard(page)
            if not page.is_closed() and not any(t.page is page for t in self.tabs):
                self._wrap(page)
        if self._wrapping:  # each goes on when a look is cut off: the next one finds it
            await asyncio.wait(set(self._wrapping.values()), timeout=_WRAP_WAIT_S)
        self.tabs = [t for t in self.tabs if not t.page.is_closed()]
        self._ids = {t: self._ids[t] for t in self.tabs if t in self._ids}
        self._titles = {t: self._titles[t] for t in self.tabs if t in self._titles}
        if self.current is not None and self.current not in self.tabs:
            self.current = self.tabs[-1] if self.tabs else None

    async def adopt(self, page: Page) -> Tab:
        """``page``'s tab in the group, wrapped now unless it is (or is being) already."""
        found = next((t for t in self.tabs if t.page is page), None)
        if found is not None:
            return found
        return await asyncio.shield(self._wrap(page))

    def _wrap(self, page: Page) -> asyncio.Future[Tab]:
        """The one wrapping of ``page`` (a task of its own, shared by whoever waits)."""
        wrapping = self._wrapping.get(page)
        if wrapping is None:
            wrapping = self._wrapping[page] = asyncio.ensure_future(self._make(page))
            wrapping.add_done_callback(lambda done: self._wrapped(page, done))
        return wrapping

    def _wrapped(self, page: Page, done: asyncio.Future[Tab]) -> None:
        self._wrapping.pop(page, None)
        if not done.cancelled() and done.exception() is not None:  # read: not left unseen
            log.warning("a tab the site opened could not be wrapped: %s", done.exception())

    async def _make(self, page: Page) -> Tab:
        # Counted while it is wrapped (in _wrapping): popups go on arriving.
        tab = await self._make_tab(page, self)
        tab.group = self
        self.tabs.append(tab)
        self.id_of(tab)
        if self.current is None:
            self.current = tab
        return tab

    async def open(self, url: str = "", *, budget: Budget | None = None) -> Tab:
        """A new page in this context; it becomes the current tab."""
        await self.sync()
        if len(self.tabs) >= self.max_tabs:
            raise ActionInvalid(f"at most {self.max_tabs} tabs per run; close one first")
        budget = budget or Budget(15_000, label="open tab")
        if url and self.current is not None:
            url = await self.current.config.url_policy.check_resolved(url, budget=budget)
        try:
            page = await budget.run(self.context.new_page())
        except PlaywrightError as exc:
            raise BrowserError(f"could not open a tab: {str(exc).splitlines()[0]}") from None
        self._pending.discard(page)
        tab = await self.adopt(page)
        if self.console_limit is not None:  # before its first document
            await budget.run(self.console_limit.watched(page))
        self.current = tab
        if url:
            await tab.navigate(url, budget=budget)
        return tab

    async def opener_of(self, tab: Tab) -> Tab | None:
        """The tab of the group whose page opened ``tab``'s (a popup, its opener still
        open), or None."""
        try:
            opener = await tab.page.opener()
        except PlaywrightError:  # it closed meanwhile
            return None
        return next((t for t in self.tabs if t.page is opener), None)

    def target_ids(self) -> set[str]:
        """The CDP targets of the group's tabs (to tell, after an action, which are new)."""
        return {t.target_id for t in self.tabs if t.target_id}

    async def opened_by(
        self, tab: Tab, known: set[str], budget: Budget
    ) -> tuple[list[Tab], list[str]]:
        """The tabs ``tab``'s page opened that are not among ``known`` (target ids, from
        :meth:`target_ids` before an action): a popup, a ``target=_blank`` page.  Chromium
        has the new window the moment the page asks for it; Playwright tells of it only
        once its first page has come (seconds, for a slow one), often after the action
        returned.  So each one Chromium has is waited for until the group holds it (or it
        closed, or ``budget`` ran out): whoever acted is told of it, and a ``tabs`` select
        right after finds it; a cancelled ``budget`` ends the wait at once.  (the tabs
        held, the URLs of those still on their way)."""
        known = known | self._told
        new = await _opened_targets(tab, known, budget) or {}
        self._told.update(new)  # told once: a page that never comes is not waited for again
        while True:
            await self.sync()
            held = [t for t in self.tabs if t.target_id in new]
            if len(held) == len(new) or budget.expired or budget.cancelled:
                ids = {t.target_id for t in held}
                return held, [url for target, url in new.items() if target not in ids]
            await asyncio.sleep(_OPENED_POLL_S)
            # One that closed meanwhile is not waited for; asked too late, the last answer holds.
            now = await _opened_targets(tab, known, budget)
            new = new if now is None else {t: now[t] for t in new if t in now}

    def id_of(self, tab: Tab) -> int:
        """``tab``'s id in the group: the same while it is open, never another tab's."""
        if tab not in self._ids:
            self._ids[tab] = self._next_id
            self._next_id += 1
        return self._ids[tab]

    async def overview(self) -> list[dict[str, Any]]:
        """The open tabs, oldest first: ``{"id", "url", "title", "current", "opener"}``,
        ``opener`` the id of the tab whose page opened it (a popup, a ``target=_blank``
        page), else None; ``title`` "" when the page has none (as last read when the page
        is too busy to say: a title does not flicker while a page works)."""
        await self.sync()
        rows = []
        for tab in self.tabs:
            opener = await self.opener_of(tab)
            title = await _title(tab)
            if title is not None:
                self._titles[tab] = title
            rows.append({"id": self.id_of(tab), "url": tab.page.url,
                         "title": self._titles.get(tab, ""),
                         "current": tab is self.current,
                         "opener": self.id_of(opener) if opener is not None else None})  # fmt: skip
        return rows

    async def select_id(self, tab_id: object) -> Tab:
        """Make the tab of id ``tab_id`` current, as :meth:`select` does; TabNotFound for
        an id of no open tab (closed since), ActionInvalid for one that is no id."""
        if isinstance(tab_id, bool) or not isinstance(tab_id, int):
            raise ActionInvalid("a tab id is a whole number", hint="choose one of the run's tabs")
        await self.sync()
        found = next((t for t in self.tabs if self._ids.get(t) == tab_id), None)
        if found is None:
            raise TabNotFound(f"the run has no tab {tab_id} open (it may have closed)",
                              hint="choose one of the run's tabs as listed now")  # fmt: skip
        return await self.select(self.tabs.index(found))

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
        if tab.downloads is not None:  # (what it began still comes: kept at the end)
            self._closed_keepers.append(tab.downloads)
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
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=_CLOSE_TIMEOUT_MS / 1000)
        if self.closed_extra > self._reported_extra:
            await self._say(
                f"{self.closed_extra} tabs the site opened past the run's limit of "
                f"{self.max_tabs} were closed in all"
            )
        wrapping = list(self._wrapping.values())
        for task in wrapping:  # a tab being made for a page about to close with the rest
            task.cancel()
        await asyncio.gather(*wrapping, return_exceptions=True)
        await finish_downloads([*self._closed_keepers, *(t.downloads for t in self.tabs)])
        try:
            await self.context.close()
        except PlaywrightError:
            pass  # the browser is already gone
        if self.console_limit is not None:
            await self.console_limit.close()
        if self._on_close is not None:
            self._on_close(self)


async def finish_downloads(kept: list[DownloadKeeper | None]) -> None:
    """The downloads a context's tabs began, ended and saved before it closes (at most
    DOWNLOADS_FINISH_S); those still coming then are logged, cancelled with the context."""
    keepers = [keeper for keeper in kept if keeper is not None]
    if not keepers:
        return
    coming = await asyncio.gather(*(keeper.finish(DOWNLOADS_FINISH_S) for keeper in keepers))
    for url in (url for urls in coming for url in urls):
        log.warning("a download still coming at %.0f s was cancelled: %s", DOWNLOADS_FINISH_S, url)


async def _title(tab: Tab) -> str | None:
    """The page's title, one line of at most MAX_TITLE_CHARS; None when it can't be read
    within _TITLE_MS (a page that hangs must not hold the overview)."""
    budget = Budget(_TITLE_MS, label="a tab's title")
    try:
        title = await budget.run(tab.page.title())
    except (PlaywrightError, TabwrightError):  # closed, busy, navigating
        return None
    return " ".join(str(title).split())[:MAX_TITLE_CHARS]


async def _opened_targets(tab: Tab, known: set[str], budget: Budget) -> dict[str, str] | None:
    """The page targets Chromium has open whose opener is ``tab``'s page and that are not
    among ``known``, with their URLs; None when that can't be asked (no CDP session, the
    page closed, out of time)."""
    session = tab.cdp
    if session is None or not tab.target_id or budget.expired:
        return None
    try:
        answer = await budget.run(session.send("Target.getTargets"))
    except (PlaywrightError, TabwrightError):
        return None
    return {
        info["targetId"]: str(info.get("url", ""))
        for info in answer.get("targetInfos", [])
        if info.get("type") == "page"
        and info.get("openerId") == tab.target_id
        and info["targetId"] not in known
    }
