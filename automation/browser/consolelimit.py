"""A page's console held to a rate, so that a page writing to it in a loop stalls no other
run of the browser.

Every console message a page writes comes to Playwright's driver (the one Node.js process
that speaks to the browser for every context of the session) as a DevTools event with its
arguments as remote objects, and reaches this process too while a page log listens.
Measured on Chromium 156: a page calling ``console.log("x" + i, {a: i})`` five thousand
times a turn drowns that driver, and every other run of the browser stalls (its snapshot,
click and new tab each ran out of its 15 s budget); neither Chromium's switches nor its
DevTools domains limit console messages.

So each frame (an init script) and each dedicated worker (sent to it as it starts, see
:func:`_watch_workers`) gets ``consolelimit.js``: a burst of :data:`BURST` messages, then
:data:`RATE` a second; what is past that is dropped and counted, and about once a second,
while it drops, the page says how many in one message of its own, marked with
:data:`MARK`.  The page log reads that message as a :class:`ConsoleDropped` count instead
of keeping it.  Kept messages keep their text, level and the page's own file and line.

Not covered: a worker's first messages, before the script reaches it (measured: a worker
flooding from its first lines gets a few thousand out, and the other runs stall for
several seconds; a first action of theirs ran out of its 15 s budget); shared and service
workers; the initial empty document of a frame a page makes and writes to at once (an
init script never runs there).  Each frame and worker has a rate of its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext, CDPSession, Page

from automation.browser.listen import listener

__all__ = ["BURST", "CONSOLE_LIMIT_JS", "MARK", "RATE", "limit_console"]

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

# Workers only; a page's frames are held by the init script.  Not flattened: Playwright's
# CDP sessions can't address a child session, but they can send it messages.
_AUTO_ATTACH = {
    "autoAttach": True,
    "waitForDebuggerOnStart": True,
    "flatten": False,
    "filter": [{"type": "worker"}, {"exclude": True}],
}
_held: set[asyncio.Task[Any]] = set()
_sessions: dict[Page, CDPSession] = {}


async def limit_console(context: BrowserContext) -> None:
    """Hold the console of every page of ``context`` to the rate, frames and workers."""
    await context.add_init_script(script=CONSOLE_LIMIT_JS)
    context.on("page", _on_page)
    for page in context.pages:
        _on_page(page)


def _spawn(work: Any) -> None:
    task = asyncio.get_running_loop().create_task(work)
    _held.add(task)
    task.add_done_callback(_held.discard)


@listener
def _on_page(page: Page) -> None:
    _spawn(_watch_workers(page))


async def _watch_workers(page: Page) -> None:
    """A session of our own on the page, to which each dedicated worker it starts is
    attached paused (Chromium starts it once every session that asked for the pause has
    let it go): the limit is sent to it ahead of the word to go on.  Measured: the worker
    evaluates it only once its script has loaded and run its first lines (a worker has no
    scope to evaluate in before), so a flood from a worker's first lines sends its first
    thousands of messages, a few seconds' stall for the others."""
    try:
        session = await page.context.new_cdp_session(page)
        session.on("Target.attachedToTarget", lambda event: _spawn(_limit_worker(session, event)))
        await session.send("Target.setAutoAttach", _AUTO_ATTACH)
    except Exception as exc:  # the page closed first, or it is not a CDP target
        log.debug("a page's workers' consoles are not held to the rate: %s", exc)
        return
    _sessions[page] = session
    page.once("close", lambda _page: _sessions.pop(page, None))


async def _limit_worker(session: CDPSession, event: dict[str, Any]) -> None:
    child = event["sessionId"]
    try:
        # In this order on the worker's session: the limit, then the word to go on.
        for number, method, params in (
            (1, "Runtime.evaluate", {"expression": CONSOLE_LIMIT_JS}),
            (2, "Runtime.runIfWaitingForDebugger", {}),
        ):
            message = json.dumps({"id": number, "method": method, "params": params})
            to_worker = {"sessionId": child, "message": message}
            await session.send("Target.sendMessageToTarget", to_worker)
        await session.send("Target.detachFromTarget", {"sessionId": child})
    except Exception as exc:  # the worker ended first, or its page went away
        log.debug("a worker's console is not held to the rate: %s", exc)
        try:  # a worker left paused by our session goes on once the session lets go
            await session.send("Target.detachFromTarget", {"sessionId": child})
        except Exception:
            pass  # gone with its page
