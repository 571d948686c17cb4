"""A page's console held to a rate, so that a page writing to it in a loop stalls no other
run of the browser.

Every console message a page writes comes to Playwright's driver (the one Node.js process
that speaks to the browser for every context of the session) as a DevTools event with its
arguments as remote objects, and reaches this process too while a page log listens.
Measured on Chromium 156: a page calling ``console.log("x" + i, {a: i})`` five thousand
times a turn drowns that driver, and every other run of the browser stalls (its snapshot,
click and new tab each ran out of its 15 s budget); neither Chromium's switches nor its
DevTools domains limit console messages.

So each frame (an init script) and each dedicated worker (held as it starts until the
script is in it, see :class:`ConsoleLimit`; a worker's workers too) gets
``consolelimit.js``: a burst of :data:`BURST` messages, then :data:`RATE` a second; what
is past that is dropped and counted, and about once a second, while it drops, the page
says how many in one message of its own, marked with :data:`MARK`.  The page log reads
that message as a :class:`ConsoleDropped` count instead of keeping it.  Kept messages keep
their text, level and the page's own file and line.

Not covered: a worker a popup starts before its watch is in place (the watch is made as
Chromium makes the page, a race won in practice, see :class:`ConsoleLimit`); the workers
of a cross-site (out-of-process) frame; service workers (their console reaches
Playwright's driver); the initial empty document of a frame a page makes and writes to at
once (an init script never runs there).  Shared workers' consoles never reach the driver
(Playwright does not listen to them).  Each frame and worker has a rate of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
import weakref
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext, CDPSession, Page

from automation.browser.listen import listener

__all__ = ["BURST", "CONSOLE_LIMIT_JS", "MARK", "RATE", "ConsoleLimit", "limit_console"]

log = logging.getLogger("automation.browser")

BURST = 1000
RATE = 100  # messages a second, past the burst
# A mark of this process's own, so a page can't write a count that is not one (it never
# sees the script's text).
MARK = "tabwright-console-dropped-" + secrets.token_hex(8)
CONSOLE_LIMIT_JS = (
    Path(__file__)
    .with_name("consolelimit.js")
    .read_text(encoding="utf-8")
    .replace("const BURST = 1000;", f"const BURST = {BURST};")
    .replace("const RATE = 100;", f"const RATE = {RATE};")
    .replace("__MARK__", MARK)
)

# A dedicated worker is reported to this session (flattened, so that Chromium holds the
# worker until every session that asked for the hold lets it go) and to Playwright's own,
# which lets it go at once.  Workers only: frames are held by the init script.
_WORKERS = [{"type": "worker"}, {"exclude": True}]
# New pages of the browser, told of as they are made (see ConsoleLimit).
_PAGES = [{"type": "page"}, {"exclude": True}]
# How long a worker may wait for its limit before it is let go without one.
_HOLD_TIMEOUT_S = 5.0


async def limit_console(context: BrowserContext) -> ConsoleLimit:
    """Hold the console of every page of ``context`` to the rate, frames and workers; the
    returned object lets go of the context's workers when closed (it closes with the
    context too)."""
    await context.add_init_script(script=CONSOLE_LIMIT_JS)
    limit = ConsoleLimit(context)
    await limit.start()
    return limit


class ConsoleLimit:
    """One context's dedicated workers, each held as it starts until the limit is in it.

    A browser-level CDP session of the context's own asks Chromium to report each worker
    its pages (and their workers) start, held before its first line
    (``Target.autoAttachRelated``).  Playwright's CDP sessions can't address such a
    flattened session, so the limit goes in over a second, unflattened one
    (``Target.sendMessageToTarget``) before the held session is let go.  Measured on
    Chromium 156: an unflattened session alone does not hold a worker (Playwright's own
    session lets it go at once), and a worker held there has no ``setTimeout`` yet (the
    script takes it when it first tells a count).

    A page this process opens is handed over once its workers are watched
    (:meth:`watched`).  A page a site opens (a popup) runs its first document before
    this process hears of it from Playwright: watched then, its workers started unheld
    (six of eight, measured).  So the session is also told of each new page of the
    browser as Chromium makes it (``Target.setDiscoverTargets``) and watches this
    context's at once, while Playwright is still setting the page up and its document is
    on its way.  A race, not a hold, and won in practice: 24 popups of 24, 23 beside four
    processes spinning on two cores.  A hold (``Target.setAutoAttach``, waiting) can't be
    let go from here: Playwright's sessions can't address the page's own session to run
    it, and a page opened with ``noopener`` stays held when the session detaches
    (Chromium 156, measured)."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self._session: CDPSession | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._answers: dict[tuple[str, int], asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._context_id = ""  # the context's id in the browser, once a page of it told it
        self._closer: asyncio.Task[None] | None = None
        # Each page's watch, until it is in place (see watched).
        self._watching: weakref.WeakKeyDictionary[Page, asyncio.Task[None]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def busy(self) -> int:
        """Workers being held and pages being watched right now."""
        return len(self._tasks)

    async def start(self) -> None:
        browser = self.context.browser
        if browser is None:  # a persistent context: no browser session to ask
            log.debug("a context's workers' consoles are not held to the rate: no browser")
            return
        try:
            session = await browser.new_browser_cdp_session()
        except Exception as exc:  # not Chromium, or the browser went away
            log.debug("a context's workers' consoles are not held to the rate: %s", exc)
            return
        self._session = session
        session.on("Target.attachedToTarget", listener(self._on_attached))
        session.on("Target.receivedMessageFromTarget", listener(self._on_message))
        session.on("Target.targetCreated", listener(self._on_created))
        try:
            await session.send("Target.setDiscoverTargets", {"discover": True, "filter": _PAGES})
        except Exception as exc:  # the browser went away
            log.debug("a context's new pages are not told of: %s", exc)
        self.context.on("page", listener(self._on_page))
        self.context.once("close", lambda _context: self._begin_close())
        for page in self.context.pages:
            self._on_page(page)

    @property
    def closed(self) -> bool:
        return self._closer is not None

    async def close(self) -> None:
        """Stop watching: the tasks end and the browser session goes (a held worker is let
        go with it)."""
        await self._begin_close()

    def _begin_close(self) -> asyncio.Task[None]:
        if self._closer is None:
            self._closer = asyncio.get_running_loop().create_task(self._close())
        return self._closer

    async def _close(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for answer in self._answers.values():
            answer.cancel()
        self._answers.clear()
        session, self._session = self._session, None
        if session is not None:
            try:
                await session.detach()
            except Exception:
                pass  # gone with its browser

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
        if self.closed:
            work.close()
            return None
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _on_page(self, page: Page) -> None:
        if page not in self._watching and (task := self._spawn(self._watch(page))):
            self._watching[page] = task

    async def watched(self, page: Page) -> None:
        """Once the workers ``page`` starts are held as they start: a page opened for a
        caller is handed over only then, else the first document it is sent to could start
        a worker before the watch is in place (a caller's cancel leaves the watch going)."""
        self._on_page(page)  # (the context tells of a new page as it makes it: seldom first)
        task = self._watching.get(page)
        if task is not None:
            await asyncio.shield(task)

    async def _watch(self, page: Page) -> None:
        """Ask for the page's workers, held as they start."""
        try:
            probe = await self.context.new_cdp_session(page)
            try:
                info = (await probe.send("Target.getTargetInfo"))["targetInfo"]
            finally:
                await probe.detach()
            self._context_id = info["browserContextId"]
            await self._watch_target(info["targetId"])
        except Exception as exc:  # the page closed first, or it is not a CDP target
            log.debug("a page's workers' consoles are not held to the rate: %s", exc)

    async def _watch_target(self, target_id: str) -> None:
        assert self._session is not None
        related = {"targetId": target_id, "waitForDebuggerOnStart": True, "filter": _WORKERS}
        await self._session.send("Target.autoAttachRelated", related)

    def _on_attached(self, event: dict[str, Any]) -> None:
        # Only the held ones: the others are this session's own attaches (the watched
        # target itself, the unflattened session below).
        if event.get("waitingForDebugger") and event["targetInfo"]["type"] == "worker":
            self._spawn(self._limit_worker(event["sessionId"], event["targetInfo"]["targetId"]))

    def _on_created(self, event: dict[str, Any]) -> None:
        """A new page of the browser: this context's (known once a page of it was watched,
        and a page opens another only after) has its workers watched at once."""
        info = event["targetInfo"]
        if info.get("browserContextId") == self._context_id:
            self._spawn(self._watch_new(info["targetId"]))

    async def _watch_new(self, target_id: str) -> None:
        try:
            await self._watch_target(target_id)
        except Exception as exc:  # the page closed first
            log.debug("a page's workers' consoles are not held to the rate: %s", exc)

    def _on_message(self, event: dict[str, Any]) -> None:
        try:
            message = json.loads(event["message"])
        except ValueError:
            return
        answer = self._answers.pop((event["sessionId"], message.get("id")), None)
        if answer is not None and not answer.done():
            answer.set_result(message)

    async def _limit_worker(self, held: str, target_id: str) -> None:
        session = self._session
        assert session is not None
        inside = ""
        try:
            async with asyncio.timeout(_HOLD_TIMEOUT_S):
                attached = await session.send(
                    "Target.attachToTarget", {"targetId": target_id, "flatten": False}
                )
                inside = attached["sessionId"]
                answer = await self._ask(inside, "Runtime.evaluate", CONSOLE_LIMIT_JS)
                if "exceptionDetails" in answer.get("result", {}) or "error" in answer:
                    log.debug("a worker's console limit failed: %s", str(answer)[:300])
                await self._watch_target(target_id)  # the workers it starts in turn
        except Exception as exc:  # the worker ended first, or its page went away
            log.debug("a worker's console is not held to the rate: %s", exc)
        finally:
            # Let go of it whatever happened: a worker is never left held by this session.
            for session_id in (inside, held):
                if session_id:
                    try:
                        await session.send("Target.detachFromTarget", {"sessionId": session_id})
                    except Exception:
                        pass  # gone with its page

    async def _ask(self, inside: str, method: str, expression: str) -> dict[str, Any]:
        assert self._session is not None
        number = next(self._ids)
        answer = asyncio.get_running_loop().create_future()
        self._answers[(inside, number)] = answer
        message = {"id": number, "method": method, "params": {"expression": expression}}
        try:
            await self._session.send(
                "Target.sendMessageToTarget",
                {"sessionId": inside, "message": json.dumps(message)},
            )
            return await answer
        finally:
            self._answers.pop((inside, number), None)
