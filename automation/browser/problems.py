"""A run's page problems as they happen: console errors, uncaught exceptions and failed
requests of every tab of the run, popups included, each reported as a :class:`PageProblem`.

What counts as a problem, chosen to keep the run page readable:

- console messages of level ``error`` only; warnings are mostly deprecation and
  third-party noise, and stay readable in the tab's :class:`PageLog`.  Chromium's own
  "Failed to load resource: ..." lines are left out: the failed request behind each is
  reported with its method and status.
- every uncaught exception (``pageerror``).
- a page writing its console faster than it is kept (``console_flood``,
  :mod:`automation.browser.consolelimit`): once a page, with the count of its first
  second of dropping, past ``max_problems`` too; its page log counts the rest.
- requests that failed on the network or got an HTTP status of 400 or more, except
  ``net::ERR_ABORTED`` (the page cancelled them itself: it navigated away, called
  ``AbortController.abort()`` or ``window.stop()``) and the ``/favicon.ico`` Chromium
  fetches on its own for every document.  One the egress proxy refused (its 403, or a
  tunnel it would not open) says so, and why: the policy, not the site, answered.

Entries come from :class:`PageLog` subscriptions.  A tab the run already has is followed
through its own ``tab.log``.  A page opened later (a popup, a new tab) gets a log of the
watcher's own, made the moment the context announces the page: its Tab is only made when
the group next syncs, and by then the popup has usually logged and fetched what it does on
load.  For the same reason the watcher also listens on the context (see
``_CONTEXT_SUBSCRIPTIONS``).

Subscribers run inside Playwright's event dispatch, so they only turn the entry into an
event and queue it; one task awaits ``on_problem`` for each, in order.  Past
``max_problems`` problems are counted, not queued, and :meth:`ProblemWatcher.stop` ends
with one problem of kind ``summary`` that says how many were left out.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit

from playwright.async_api import Page

from automation.browser.consolelimit import BURST, RATE
from automation.browser.listen import listener
from automation.browser.pagelog import (
    ConsoleDropped,
    ConsoleEntry,
    LogEntry,
    LogSubscriber,
    PageErrorEntry,
    PageLog,
    RequestEntry,
)
from automation.browser.tab import Tab
from automation.browser.tabs import TabGroup
from automation.budget import Budget
from automation.events import PageProblem

__all__ = ["DEFAULT_MAX_PROBLEMS", "STOP_TIMEOUT_MS", "OnProblem", "ProblemWatcher"]

log = logging.getLogger("automation.browser")

OnProblem = Callable[[PageProblem], Awaitable[None]]

DEFAULT_MAX_PROBLEMS = 200
# Long enough for a callback that writes to a database to catch up with a full queue.
STOP_TIMEOUT_MS = 5_000

# What the page asked for itself; reporting it would flag every navigation away.
_IGNORED_FAILURES = frozenset({"net::ERR_ABORTED"})
_NETWORK_ECHO = "Failed to load resource:"
# Playwright's server sends a page's console messages and request events only while someone
# listens for them, on the page or on its context.  A new page's own listeners reach the
# server a moment after the page exists, and a popup's first requests often beat them;
# listening on the context too makes the server send them from each page's first moment,
# and the client still hands each to the page's listeners (measured: without it, a popup's
# failed request on load went unreported now and then).
_CONTEXT_SUBSCRIPTIONS = ("console", "request", "requestfinished", "requestfailed")
# The watcher's own logs are only listened to, never queried: their buffers stay small.
# ``requests_size`` also caps the requests still pending, so it stays large enough for a
# request's method and type to be known when it ends.
_OWN_LOG_SIZES = {"console_size": 1, "errors_size": 1, "requests_size": 200}


@dataclass
class _Followed:
    log: PageLog
    subscriber: LogSubscriber
    owned: bool  # made by the watcher, detached by it
    popups: bool  # a "popup" listener on the page is the watcher's


class ProblemWatcher:
    """Follows every tab of a run and reports each page problem to ``on_problem``.

    Give it a tab (its group, if it has one, is followed: every tab now and every page
    the context opens later) or a group.  A tab without a group is followed with the
    popups it opens.  Construct it inside the running event loop; it listens at once.
    """

    def __init__(
        self,
        tabs: Tab | TabGroup,
        on_problem: OnProblem,
        *,
        max_problems: int = DEFAULT_MAX_PROBLEMS,
    ) -> None:
        if isinstance(max_problems, bool) or not isinstance(max_problems, int) or max_problems < 0:
            raise ValueError(f"max_problems must be a whole number >= 0, not {max_problems!r}")
        loop = asyncio.get_running_loop()  # before listening: without a loop, nothing is left
        self.max_problems = max_problems
        self._on_problem = on_problem
        self._queue: asyncio.Queue[PageProblem | None] = asyncio.Queue()
        self._followed: dict[Page, _Followed] = {}
        self._flooded: set[Page] = set()  # pages told to have flooded their console
        self._reported = 0
        self._dropped: Counter[str] = Counter()
        self._closed = False
        self._stop_task: asyncio.Task[None] | None = None
        group = tabs if isinstance(tabs, TabGroup) else tabs.group
        self._group = group
        first = tabs if isinstance(tabs, Tab) else next(iter(tabs.tabs), None)
        self._why_unreachable = first.why_unreachable if first is not None else None
        self._why_refused = first.why_refused if first is not None else None
        self._context = group.context if group is not None else tabs.context
        self._subscribed = listener(self._keep_subscribed)
        for event in _CONTEXT_SUBSCRIPTIONS:
            self._context.on(event, self._subscribed)  # type: ignore[call-overload]
        if group is not None:
            for tab in group.tabs:
                self._follow(tab.page, tab.log)
            group.context.on("page", self._on_page)
            for page in group.context.pages:  # opened by the site, not yet wrapped by the group
                self._follow(page, None)
        else:
            assert isinstance(tabs, Tab)
            self._follow(tabs.page, tabs.log)
        self._drain_task = loop.create_task(self._drain(), name="page problems")

    @property
    def reported(self) -> int:
        """Problems accepted for ``on_problem`` (delivered or still queued)."""
        return self._reported

    @property
    def dropped(self) -> int:
        """Problems seen past ``max_problems``, counted and not reported."""
        return sum(self._dropped.values())

    @property
    def stopped(self) -> bool:
        return self._closed

    # -- following pages (inside Playwright's dispatch: cheap, never raise) ------------

    def _keep_subscribed(self, _event: object) -> None:
        """Listens so that the server sends the event; the page logs record it."""

    def _follow(self, page: Page, pagelog: PageLog | None) -> None:
        if page in self._followed or page.is_closed():
            return
        owned = pagelog is None
        if pagelog is None:
            pagelog = PageLog(page, **_OWN_LOG_SIZES)
        subscriber = functools.partial(self._on_entry, page)
        pagelog.subscribe(subscriber)
        popups = self._group is None
        if popups:
            page.on("popup", self._on_page)
        self._followed[page] = _Followed(pagelog, subscriber, owned, popups)

    def _on_page(self, page: Page) -> None:
        try:
            if self._closed:
                return
            for gone in [p for p in self._followed if p.is_closed()]:
                self._unfollow(gone)
            self._follow(page, None)
        except Exception:
            log.exception("page problems: a new page is not followed")

    def _unfollow(self, page: Page) -> None:
        followed = self._followed.pop(page)
        self._flooded.discard(page)
        followed.log.unsubscribe(followed.subscriber)
        try:
            if followed.owned:
                followed.log.detach()
            if followed.popups:
                page.remove_listener("popup", self._on_page)
        except Exception:
            # A browser that is gone has no listeners left to remove.
            log.debug("page problems: listeners of a closed page not removed", exc_info=True)

    def _on_entry(self, page: Page, entry: LogEntry) -> None:
        if self._closed:
            return
        flood = isinstance(entry, ConsoleDropped)
        if flood:
            if page in self._flooded:
                return
            self._flooded.add(page)
        problem = _problem_of(
            entry, page_url=page.url, why_unreachable=self._why_unreachable,
            why_refused=self._why_refused,
        )  # fmt: skip
        if problem is None:
            return
        # A flood of console errors fills the limit first; its count is told regardless
        # (once a page).
        if self._reported >= self.max_problems and not flood:
            self._dropped[problem.kind] += 1
            return
        self._reported += 1
        self._queue.put_nowait(problem)

    # -- reporting ---------------------------------------------------------------------

    async def _drain(self) -> None:
        while (problem := await self._queue.get()) is not None:
            try:
                await self._on_problem(problem)
            except Exception:
                # One broken report must not silence the rest of the run's problems.
                log.exception("page problems: on_problem failed for %r", problem.text[:200])

    async def stop(self, *, budget: Budget | None = None) -> None:
        """Stop listening, report what is queued and then, if problems were left out past
        the limit, one ``summary`` problem with their count.  Safe to call again (later
        calls wait for the first) and on a closed or crashed browser; within ``budget``
        (default STOP_TIMEOUT_MS), after which what is still queued is given up and logged."""
        if self._stop_task is None:
            self._stop_task = asyncio.get_running_loop().create_task(
                self._stop(budget or Budget(STOP_TIMEOUT_MS, label="stop page problems"))
            )
        # Shielded: a caller that is cancelled does not leave listeners behind.
        await asyncio.shield(self._stop_task)

    async def _stop(self, budget: Budget) -> None:
        self._closed = True
        self._detach()
        if self._dropped:
            self._queue.put_nowait(self._summary())
        self._queue.put_nowait(None)
        await asyncio.wait({self._drain_task}, timeout=budget.remaining_ms() / 1000)
        if not self._drain_task.done():
            # Not awaited: a callback stuck in a dead connection must not hold stop() too.
            self._drain_task.cancel()
            log.warning(
                "page problems: %d left unreported, on_problem took longer than %.0f ms",
                self._queue.qsize(),
                budget.timeout_ms,
            )

    def _detach(self) -> None:
        listeners: list[tuple[str, Callable[[object], None]]] = [
            (event, self._subscribed) for event in _CONTEXT_SUBSCRIPTIONS
        ]
        if self._group is not None:
            listeners.append(("page", self._on_page))  # type: ignore[arg-type]
        for event, callback in listeners:
            try:
                self._context.remove_listener(event, callback)  # type: ignore[call-overload]
            except Exception:
                # A browser that is gone has no listeners left to remove.
                log.debug("page problems: context listener not removed", exc_info=True)
        for page in list(self._followed):
            self._unfollow(page)

    def _summary(self) -> PageProblem:
        dropped = self.dropped
        parts = ", ".join(f"{count} {kind}" for kind, count in self._dropped.most_common())
        return PageProblem(
            kind="summary",
            text=(
                f"{dropped} more page problem{'s' if dropped != 1 else ''} not reported "
                f"(limit {self.max_problems}): {parts}"
            ),
            dropped=dropped,
        )

    async def __aenter__(self) -> ProblemWatcher:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()


def _problem_of(
    entry: LogEntry,
    *,
    page_url: str,
    why_unreachable: Callable[[str], str | None] | None = None,
    why_refused: Callable[[str], str | None] | None = None,
) -> PageProblem | None:
    """The problem a log entry shows, or None when it is not one (see the module's doc)."""
    if isinstance(entry, ConsoleEntry):
        if entry.level != "error" or entry.text.startswith(_NETWORK_ECHO):
            return None
        return PageProblem(
            kind="console", text=entry.text, url=entry.location, page_url=page_url, level="error"
        )
    if isinstance(entry, ConsoleDropped):
        return PageProblem(
            kind="console_flood",
            text=(
                f"the page wrote {entry.written:,} console messages; {entry.dropped:,} were "
                f"not kept (a page's console keeps {BURST:,} at once, then {RATE} a second)"
            ),
            page_url=page_url,
            dropped=entry.dropped,
        )
    if isinstance(entry, PageErrorEntry):
        where = _frame_location(entry.stack[0]) if entry.stack else ""
        return PageProblem(kind="pageerror", text=entry.message, url=where, page_url=page_url)
    if isinstance(entry, RequestEntry):
        if not entry.failed or entry.failure in _IGNORED_FAILURES:
            return None
        if urlsplit(entry.url).path == "/favicon.ico":
            return None
        outcome = entry.failure or str(entry.status)
        if entry.failure and why_unreachable is not None:
            outcome = why_unreachable(entry.url) or outcome  # behind the proxy's closed door
        if why_refused is not None and (entry.failure or entry.status == 403):
            if refused := why_refused(entry.url):  # the proxy's own 403, or a tunnel it refused
                outcome = f"refused: {refused}"
        return PageProblem(
            kind="request",
            text=f"{entry.method} {entry.url} → {outcome}",
            url=entry.url,
            page_url=page_url,
            status=entry.status,
            method=entry.method,
            resource_type=entry.resource_type,
        )
    return None


def _frame_location(frame: str) -> str:
    """'at f (http://x/a.js:3:9)' or 'at http://x/a.js:3:9' -> 'http://x/a.js:3:9'."""
    where = frame.removeprefix("at ").strip()
    if where.endswith(")") and "(" in where:
        where = where[where.rindex("(") + 1 : -1]
    return where
