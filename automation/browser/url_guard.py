"""Hold every document navigation of a browser context to its URL policy.

``Tab.navigate`` checks the URLs the agent asks for, but pages move on their own: links,
form posts, ``location.href=``, iframes, ``window.open`` and server redirects.  The guard
stops the ones the policy refuses before any request reaches the refused host.

Why not ``context.route``, the obvious tool (measured on Chromium 156, Playwright 1.65):

- Playwright hands a route handler the first request of a navigation only and continues
  the hops of a server redirect itself, unasked ("We do not support intercepting
  redirects"), so a public page that answers 302 to http://169.254.169.254/ gets through.
  ``route.fetch(max_redirects=0)`` shows one hop, fetched by Node (its own DNS and TLS),
  and the browser then follows the next hop unasked again.
- Routing sends every image and script through Python and turns the HTTP cache off.

So the guard asks Chromium itself: one browser-level CDP session per browser, with
``Fetch`` enabled for Document requests only.  Chromium pauses every hop of every
navigation there (main frames, iframes in and out of process, popups, redirects) and
nothing else: subresources never wait for us.  A pause names a frame but not its context,
so the guard places the frame: a page's or an out-of-process iframe's frame id is its
target id (``Target.getTargetInfo`` gives the context); an in-process iframe is found in
the frame trees of the browser's pages.  A frame it cannot place (an iframe inside an
out-of-process iframe) is held to every guard's policy of that browser: when in doubt,
refuse.  When the browser's guards share one policy (a session's do) and it allows the
URL, the navigation goes on without placing its frame at all: the navigation waits for the
guard, and placing costs a round trip to the browser.

Where the policy blocks private addresses, host names are resolved too (a public answer
is remembered for 30 s).  A name that does not resolve at all is let through, as
``UrlPolicy.check_resolved`` explains; one that does not resolve within 3 s is refused.

A session installs the guard on a browser reached by CDP URL only, where it is all there
is (its subresources are not held).  A browser the session launched goes out through the
egress proxy (:mod:`automation.browser.egress`), which holds every connection, documents
included, to the session's policy; a guard there would refuse nothing more and cost every
request of the browser the interception's millisecond.  Measured on Chromium 156, the
guard never sees a navigation to another scheme than http(s): a page's navigation to
``file:``, ``view-source:``, ``chrome:``, ``filesystem:`` or ``ftp:`` is refused by Chromium
itself, and ``data:``, ``blob:``, ``about:`` and ``javascript:`` documents are made in the
browser, not fetched, so they load with or without the guard.  What the proxy alone
changes is how a refused navigation looks: the proxy's 403 page (http) or Chromium's
tunnel error page (https) where the guard kept the page, and ``Tab.navigate`` learns of a
refused hop from the proxy (:meth:`EgressProxy.why_refused`) instead of the guard's note.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Browser, BrowserContext, CDPSession, Page
from playwright.async_api import Error as PlaywrightError

from automation.browser.listen import listener
from automation.browser.url_policy import SHOWN_URL_CHARS, UrlPolicy
from automation.budget import Budget
from automation.errors import BrowserError, BudgetExceeded, UrlBlocked

__all__ = ["DOCUMENTS", "install_url_guard"]

log = logging.getLogger("automation.browser")

OnBlock = Callable[[str, str], None]

# A navigation waits while we resolve its host, so resolving gets less time than a
# caller's check would; a host that resolved to public addresses is not asked again
# for a while, so a page's many same-host navigations stay fast.
RESOLVE_TIMEOUT_MS = 3_000
RESOLVED_TTL_MS = 30_000
MAX_REMEMBERED = 4_096  # hosts per guard, frames per browser: forget all past this

# What the guard has Chromium pause.  Any Fetch interception costs every request of the
# browser about a millisecond (subresources included, whatever the patterns: bench.egress).
DOCUMENTS = [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]
# A tab that shows nothing yet gets an error page ("blocked by client"); one that shows a
# page keeps it: Chromium commits an error page for BlockedByClient but not for Aborted,
# and Playwright never reports a popup whose first navigation was Aborted.  A target's
# url is already the pending one during a navigation; its title is still the old page's.
_EMPTY_TITLES = ("", "about:blank")


async def install_url_guard(
    context: BrowserContext, policy: UrlPolicy, *, on_block: OnBlock | None = None
) -> None:
    """Refuse every document navigation in ``context`` that ``policy`` refuses.

    Refused navigations never leave the browser; ``on_block(url, reason)`` hears of each
    before the frame does.  The guard lasts as long as the context.
    """
    browser = context.browser
    if browser is None:
        raise BrowserError(
            "the URL guard needs a context made by Browser.new_context",
            hint="persistent contexts have no browser-level CDP session",
        )
    interceptor = _interceptors.get(browser)
    if interceptor is None:
        interceptor = _interceptors[browser] = _Interceptor(browser)
        browser.once("disconnected", lambda b: _interceptors.pop(b, None))
    await interceptor.add(_Guard(context, policy, on_block))


class _Guard:
    """One context's policy, its report callback and the hosts it found public."""

    def __init__(
        self, context: BrowserContext, policy: UrlPolicy, on_block: OnBlock | None
    ) -> None:
        self.context = context
        self.policy = policy
        self.on_block = on_block
        self.context_id = ""  # Chromium's browserContextId, learned from one of its pages
        self._public_until: dict[str, float] = {}

    async def refusal(self, url: str) -> str:
        """Why the policy refuses ``url``, or '' when it may load."""
        try:
            self.policy.check(url)
            host = urlsplit(url).hostname or ""
            now = time.monotonic()
            if self._public_until.get(host, 0.0) > now:
                return ""
            budget = Budget(RESOLVE_TIMEOUT_MS, label=f"resolve {host}")
            await self.policy.check_resolved(url, budget=budget)
        except UrlBlocked as exc:
            return str(exc)
        except BudgetExceeded:  # slow DNS must not become a way around the policy
            shown = url[:SHOWN_URL_CHARS]
            return f"refused URL {shown!r}: {host} did not resolve within {RESOLVE_TIMEOUT_MS} ms"
        if len(self._public_until) >= MAX_REMEMBERED:
            self._public_until.clear()
        self._public_until[host] = now + RESOLVED_TTL_MS / 1000
        return ""

    def report(self, url: str, reason: str) -> None:
        log.info("URL guard: %s", reason)
        if self.on_block is not None:
            try:
                self.on_block(url, reason)
            except Exception:  # a broken listener must not let the navigation through
                log.exception("on_block failed for %s", url)


class _Interceptor:
    """The browser-level Fetch session shared by the guards of one browser."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.guards: list[_Guard] = []
        self._session: CDPSession | None = None
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._frames: dict[str, BrowserContext] = {}  # in-process iframes placed so far
        self._page_sessions: dict[Page, CDPSession] = {}

    async def add(self, guard: _Guard) -> None:
        self.guards.append(guard)
        try:
            await self._sync()
        except PlaywrightError as exc:
            self.guards.remove(guard)
            raise BrowserError(f"could not install the URL guard: {exc.message}") from None
        guard.context.once("close", lambda _context: self._remove(guard))

    def _remove(self, guard: _Guard) -> None:
        self.guards.remove(guard)
        self._frames = {f: c for f, c in self._frames.items() if c is not guard.context}
        self._spawn(self._sync())

    async def _sync(self) -> None:
        """Intercept while some guard is installed, and only then."""
        async with self._lock:
            if self.guards and self._session is None:
                session = await self.browser.new_browser_cdp_session()
                session.on("Fetch.requestPaused", listener(self._on_paused))
                await session.send("Fetch.enable", {"patterns": DOCUMENTS})
                self._session = session
            elif not self.guards and self._session is not None:
                session, self._session = self._session, None
                try:
                    await session.detach()  # Chromium lets whatever was paused go on
                except PlaywrightError:
                    pass  # the browser is gone

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_paused(self, event: dict[str, Any]) -> None:
        if self._session is not None:
            self._spawn(self._decide(self._session, event))

    async def _decide(self, session: CDPSession, event: dict[str, Any]) -> None:
        request_id, url = event["requestId"], event["request"]["url"]
        try:
            shared = self._one_policy()
            verdict = await shared.refusal(url) if shared is not None else None
            if verdict == "":
                await session.send("Fetch.continueRequest", {"requestId": request_id})
                return
            guards, empty = await self._guards_for(session, event["frameId"])
            for guard in guards:
                reason = verdict if verdict is not None else await guard.refusal(url)
                if reason:
                    guard.report(url, reason)
                    error = "BlockedByClient" if empty else "Aborted"
                    await session.send(
                        "Fetch.failRequest", {"requestId": request_id, "errorReason": error}
                    )
                    return
            await session.send("Fetch.continueRequest", {"requestId": request_id})
        except PlaywrightError:
            pass  # the navigation was superseded, or the browser is gone: nothing waits
        except Exception:
            log.exception("URL guard failed on %s; refusing it", url)
            try:
                await session.send(
                    "Fetch.failRequest", {"requestId": request_id, "errorReason": "Aborted"}
                )
            except PlaywrightError:
                pass

    def _one_policy(self) -> _Guard | None:
        """A guard whose policy every guard of this browser shares (a session's contexts
        share its policy), else None.  Its verdict is every guard's, whichever context the
        frame is in: an allowed navigation goes on without the round trip that places the
        frame (a page load waits for it), and a refused one is not judged again (a slow
        lookup waited for twice) once placed to be told to its guard.  Guards of several
        policies are asked only once the frame is placed: one context's navigation never
        waits for another's policy."""
        guards = list(self.guards)
        if not guards or any(guard.policy is not guards[0].policy for guard in guards):
            return None
        return guards[0]

    async def _guards_for(self, session: CDPSession, frame_id: str) -> tuple[list[_Guard], bool]:
        """The guards that judge a navigation of this frame, and whether it shows nothing."""
        try:
            reply = await session.send("Target.getTargetInfo", {"targetId": frame_id})
        except PlaywrightError:
            reply = None  # not a target: an iframe in its parent's process
        if reply is not None:
            info = reply["targetInfo"]
            context_id = info.get("browserContextId", "")
            empty = info.get("type") == "page" and info.get("title", "") in _EMPTY_TITLES
            mine = [g for g in list(self.guards) if await self._context_id(g) == context_id]
            return mine, empty
        context = self._frames.get(frame_id) or await self._place(frame_id)
        if context is None:
            return list(self.guards), False
        return [g for g in self.guards if g.context is context], False

    async def _context_id(self, guard: _Guard) -> str:
        if not guard.context_id and guard.context.pages:
            reply = await self._page_send(guard.context.pages[0], "Target.getTargetInfo")
            guard.context_id = reply["targetInfo"]["browserContextId"] if reply else ""
        return guard.context_id

    async def _place(self, frame_id: str) -> BrowserContext | None:
        """Find the context of an in-process iframe in its pages' frame trees, guarded
        contexts first: also placing unguarded ones keeps their frames out of our way."""
        if len(self._frames) >= MAX_REMEMBERED:
            self._frames.clear()
        guarded = [g.context for g in self.guards]
        others = [c for c in self.browser.contexts if c not in guarded]
        for context in guarded + others:
            for page in list(context.pages):
                reply = await self._page_send(page, "Page.getFrameTree")
                stack = [reply["frameTree"]] if reply else []
                while stack:
                    node = stack.pop()
                    self._frames[node["frame"]["id"]] = context
                    stack.extend(node.get("childFrames", ()))
            if frame_id in self._frames:
                return context
        return None

    async def _page_send(self, page: Page, method: str) -> dict[str, Any] | None:
        session = self._page_sessions.get(page)
        try:
            if session is None:
                session = await page.context.new_cdp_session(page)
                self._page_sessions[page] = session
                page.once("close", lambda p: self._page_sessions.pop(p, None))
            return await session.send(method)
        except PlaywrightError:  # the page closed meanwhile: nothing to find there
            self._page_sessions.pop(page, None)
            return None


_interceptors: dict[Browser, _Interceptor] = {}
