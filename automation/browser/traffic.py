"""A page's requests and main-frame commits, counted as a settle needs them.

:class:`Traffic` listens to one page's request events and keeps counters that only grow
(requests started, waited-for requests started, streams, commits) plus the waited-for
requests still unanswered.  A :class:`Mark` is those counters at one moment (before an
action); what happened since is the difference.  The settle (:mod:`automation.browser.
settle`) reads it; nothing here waits or decides.

Waited for: the requests that change what a snapshot shows (:data:`WAITED_TYPES`:
documents, scripts, stylesheets, fetch and XHR).  Not waited for: answers that never end
(an event stream, or a fetch whose answer turns out to be one), and requests to an
endpoint that once kept a request unanswered for a whole bound (a long poll, learnt by
:meth:`Traffic.learn`; forgotten when one of its requests answers quickly).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page, Request, Response

from automation.browser.listen import follow, listener
from automation.browser.served import WRITES
from automation.budget import Budget

__all__ = ["WAITED_TYPES", "Mark", "Traffic"]

log = logging.getLogger("automation.browser")

# What changes the accessibility tree when it arrives.
WAITED_TYPES = frozenset({"document", "script", "stylesheet", "fetch", "xhr"})
# Answers that never end: the request is not waited for once its headers say so.
_STREAM_TYPES = ("text/event-stream", "multipart/x-mixed-replace", "application/x-ndjson")
_INFLIGHT_CAP = 500
# Endpoints that kept a request unanswered for a whole bound: long polls, from then on
# not waited for (until one of them answers quickly).
_LONG_LIVED_CAP = 64
_LEARNT_TYPES = ("fetch", "xhr")
# Requests whose answer a page's script renders when it comes (a fetch's, an XHR's, an
# event stream's): after one, the page may change any time; without, a loaded document
# is done once its short timers and frames have run (and, pending.js says, it opened no
# web socket or event stream: their messages come any time too).
_ANSWERED_TYPES = frozenset({"fetch", "xhr", "eventsource"})


@dataclass(frozen=True)
class Mark:
    """The page's activity counters when an action began."""

    seq: int  # requests numbered above this were started after the mark
    commits: int  # main-frame commits seen before it
    tracked: int  # waited-for requests started before it
    dropped: int  # ... of which turned out to be streams
    streams: int  # long-lived requests started before it
    armed: bool  # the page's watcher was armed (its DOM changes since are known)
    # An arm sent without waiting for it (Settler.arm_early): its answer, once it comes.
    early: asyncio.Future[dict[str, Any]] | None = field(default=None, compare=False)


class Traffic:
    """One page's requests and navigations, counted from its listeners.

    ``bound_ms`` gives the settle's bound as it is now: a request to a learnt long-poll
    endpoint answered within half of it shows the endpoint is not one."""

    def __init__(self, page: Page, *, bound_ms: Callable[[], int]) -> None:
        self.page = page
        self._bound_ms = bound_ms
        self.seq = 0
        self.tracked = 0
        self.dropped = 0
        self.streams = 0
        self.commits = 0
        self.answered = 0  # requests of _ANSWERED_TYPES seen
        self.answered_at_commit = 0
        self.refused = 0  # waited-for requests answered 4xx/5xx, or failed
        self.writes = 0  # waited-for requests that write (POST, PUT, PATCH, DELETE) seen
        self._inflight: dict[Request, int] = {}
        self._responded: set[Request] = set()  # of those, answered (headers come)
        self._long_lived: OrderedDict[str, None] = OrderedDict()
        self._background: dict[Request, float] = {}  # to a long-lived endpoint: start time
        self.nav: Request | None = None  # the main frame's navigation not yet committed
        self._nav_redirected = False
        self._changed = asyncio.Event()
        follow(page, "request", self._on_request)
        follow(page, "response", self._on_response)
        follow(page, "requestfinished", self._on_done)
        follow(page, "requestfailed", self._on_failed)
        page.on("framenavigated", listener(self._on_committed))
        page.on("close", listener(self._on_gone))
        page.on("crash", listener(self._on_gone))

    def busy(self) -> bool:
        """A navigation not yet committed, or a waited-for request not yet answered."""
        return self.nav is not None or bool(self._inflight)

    def writing(self, after: int = 0) -> bool:
        """A write (POST, PUT, PATCH, DELETE) the page sent not yet answered (of those
        numbered above ``after``)."""
        return any(r.method in WRITES and seq > after for r, seq in self._inflight.items())

    def mark(self, *, armed: bool) -> Mark:
        return Mark(self.seq, self.commits, self.tracked, self.dropped, self.streams, armed)

    def pending(self, mark: Mark) -> int:
        """Waited-for requests started since ``mark`` and not answered yet."""
        return sum(1 for seq in self._inflight.values() if seq > mark.seq)

    def navigating(self, commits: int) -> bool:
        """A main-frame navigation is under way, or one committed since ``commits``."""
        return self.nav is not None or self.commits > commits

    def learn(self, mark: Mark) -> None:
        """The requests a bound ran out on are long polls: not waited for again.  Not one
        that was answered (a script that never reads a body leaves its request
        unfinished), nor a write (a save that took long is no poll)."""
        for request, seq in self._inflight.items():
            if (
                seq > mark.seq
                and request.resource_type in _LEARNT_TYPES
                and request.method not in WRITES
                and request not in self._responded
            ):
                self._long_lived[_endpoint(request)] = None
                while len(self._long_lived) > _LONG_LIVED_CAP:
                    self._long_lived.popitem(last=False)

    async def until(self, ready: Callable[[], bool], budget: Budget) -> None:
        """Wait for the page's events to make ``ready`` true (BudgetExceeded at the end)."""
        while not ready() and not self.page.is_closed():
            self._changed.clear()
            await budget.run(self._changed.wait())

    # -- listeners: inside Playwright's event dispatch, cheap, never raise --------------

    def _on_request(self, request: Request) -> None:
        try:
            self.seq += 1
            if request.resource_type in _ANSWERED_TYPES:
                self.answered += 1
            if self._is_main_navigation(request):
                self.nav, self._nav_redirected = request, False
            elif request.resource_type in _LEARNT_TYPES and _endpoint(request) in self._long_lived:
                self.streams += 1
                if len(self._background) >= _INFLIGHT_CAP:
                    self._background.pop(next(iter(self._background)))
                self._background[request] = time.monotonic()
            elif request.resource_type in WAITED_TYPES:
                self.tracked += 1
                self.writes += request.method in WRITES
                if len(self._inflight) >= _INFLIGHT_CAP:
                    oldest = next(iter(self._inflight))
                    self._inflight.pop(oldest)
                    self._responded.discard(oldest)
                self._inflight[request] = self.seq
            elif request.resource_type == "eventsource":
                self.streams += 1
        except Exception:
            log.debug("request not watched", exc_info=True)
        self._changed.set()

    def _on_response(self, response: Response) -> None:
        try:
            request = response.request
            if request is self.nav:
                self._nav_redirected = 300 <= response.status < 400
            elif request in self._inflight:
                if response.status >= 400:
                    self.refused += 1
                kind = (response.headers.get("content-type") or "").lower()
                if not kind.startswith(_STREAM_TYPES):
                    self._responded.add(request)
                else:
                    self._inflight.pop(request, None)
                    self.dropped += 1
                    self.streams += 1
        except Exception:
            log.debug("response not watched", exc_info=True)
        self._changed.set()

    def _on_done(self, request: Request) -> None:
        self._inflight.pop(request, None)
        self._responded.discard(request)
        started = self._background.pop(request, None)
        if started is not None and (time.monotonic() - started) * 1000 < self._bound_ms() / 2:
            self._long_lived.pop(_endpoint(request), None)  # it answers: not a long poll
        # A redirect's hop finishes before the next hop is reported: still on its way.
        if request is self.nav and not self._nav_redirected:
            self.nav = None
        self._changed.set()

    def _on_failed(self, request: Request) -> None:
        self._responded.discard(request)
        # (Not one the page dropped: a navigation away, or its script aborting it.)
        if self._inflight.pop(request, None) is not None and "ABORTED" not in str(request.failure):
            self.refused += 1
        self._background.pop(request, None)
        if request is self.nav:
            self.nav = None
        self._changed.set()

    def _on_committed(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self.commits += 1
            self.answered_at_commit = self.answered
            self.nav = None
        self._changed.set()

    def _on_gone(self, _page: Page) -> None:
        self._changed.set()

    def _is_main_navigation(self, request: Request) -> bool:
        try:
            return request.is_navigation_request() and request.frame == self.page.main_frame
        except PlaywrightError:
            return False  # a service worker's request has no frame


def _endpoint(request: Request) -> str:
    """A request's URL without its query: what a long poll asks again and again."""
    try:
        parts = urlsplit(request.url)
    except ValueError:  # a malformed host: the whole URL stands for itself
        return request.url
    return f"{parts.scheme}://{parts.netloc}{parts.path}"
