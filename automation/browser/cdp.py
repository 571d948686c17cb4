"""A CDP connection of our own: one websocket to the browser, one flattened session per page.

Playwright queues a page's commands behind whatever the page is doing, and its Python
``CDPSession`` cannot address the flattened child sessions of a browser connection.  The
evaluate engine therefore talks to the browser's debugging endpoint directly.  What makes
this worth it: ``Runtime.terminateExecution`` frees a page spinning in ``while(true)`` only
when it is sent on a session that was attached *before* the script started, so every page
gets its session the moment it is created (:meth:`CdpConnection.attach`).

Where the endpoint comes from:

- a browser reached by CDP URL: ``/json/version`` of that URL (or the ``ws://`` URL itself);
- a browser Playwright launched with ``--remote-debugging-port=0``: Chromium writes the port
  it chose into ``DevToolsActivePort`` in its profile folder, found through the browser
  process's command line (``SystemInfo.getProcessInfo`` gives its pid).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from playwright.async_api import Browser
from playwright.async_api import Error as PlaywrightError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from automation.budget import Budget
from automation.errors import BrowserClosed, BrowserError

__all__ = [
    "CdpConnection",
    "CdpError",
    "backend_node_id_of",
    "endpoint_of_launched",
    "endpoint_of_url",
]

log = logging.getLogger("automation.browser")

# The error code of a command sent on a session the browser no longer has.
_SESSION_NOT_FOUND = -32001
# Results are capped in the page long before this; the limit guards against a runaway event.
_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class CdpError(Exception):
    """An error answer to one CDP command (internal: callers turn it into an engine error)."""

    def __init__(self, method: str, message: str, code: int = 0) -> None:
        super().__init__(f"{method}: {message}")
        self.method = method
        self.message = message
        self.code = code


class CdpConnection:
    """Commands out, answers matched back by id; an answer nobody waits for any more (its
    caller's budget ended) is dropped."""

    def __init__(self, ws: ClientConnection, url: str) -> None:
        self.url = url
        self._ws = ws
        self._next_id = 0
        self._pending: dict[int, tuple[asyncio.Future[dict[str, Any]], str]] = {}
        # Event listeners per session id; a listener gets (method, params).
        self._listeners: dict[str, Callable[[str, dict[str, Any]], None]] = {}
        self._detached: set[str] = set()  # sessions the browser said it detached
        self.closed = False
        self._reader = asyncio.create_task(self._read(), name="cdp-reader")

    @classmethod
    async def open(cls, url: str, *, budget: Budget) -> CdpConnection:
        try:
            ws = await budget.run(connect(url, max_size=_MAX_MESSAGE_BYTES, open_timeout=None))
        except (OSError, InvalidHandshake, InvalidURI) as exc:
            raise BrowserError(f"could not open the debugging connection {url}: {exc}") from None
        return cls(ws, url)

    async def post(
        self, method: str, params: dict[str, Any] | None = None, *, session_id: str = ""
    ) -> asyncio.Future[dict[str, Any]]:
        """Send one command; the returned future gets its raw answer (``result`` or
        ``error``).  For callers that wait on the answer in their own way."""
        if self.closed:
            raise BrowserClosed("the browser's debugging connection is closed")
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = (future, session_id)
        try:
            await self._ws.send(json.dumps(message))
        except ConnectionClosed:
            self._pending.pop(self._next_id, None)
            raise BrowserClosed("the browser's debugging connection is closed") from None
        return future

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str = "",
        budget: Budget,
    ) -> dict[str, Any]:
        """One command and its result, within the budget; CdpError for an error answer."""
        future = await self.post(method, params, session_id=session_id)
        return result_of(method, await budget.run(future))

    async def attach(self, target_id: str, *, budget: Budget) -> str:
        """A flattened session on the target; its id addresses later commands."""
        found = await self.send(
            "Target.attachToTarget", {"targetId": target_id, "flatten": True}, budget=budget
        )
        return str(found["sessionId"])

    async def detach(self, session_id: str) -> None:
        """Best effort: the page may be gone already, and then so is the session."""
        if self.closed:
            return
        try:
            await self.post("Target.detachFromTarget", {"sessionId": session_id})
        except BrowserClosed:
            pass

    def attached(self, session_id: str) -> bool:
        """Whether commands on the session can still be answered: the connection is open
        and the browser has not said it detached the session."""
        return not self.closed and session_id not in self._detached

    def listen(self, session_id: str, listener: Callable[[str, dict[str, Any]], None]) -> None:
        """Hand the session's events to ``listener`` (one per session)."""
        self._listeners[session_id] = listener

    async def close(self) -> None:
        self.closed = True
        await self._ws.close()
        await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                message = json.loads(raw)
                if "id" in message:
                    waiting = self._pending.pop(message["id"], None)
                    if waiting is not None and not waiting[0].done():
                        waiting[0].set_result(message)
                    continue
                method, params = message.get("method", ""), message.get("params", {})
                if method == "Target.detachedFromTarget":
                    self._detached.add(params.get("sessionId", ""))
                    self._fail_session(params.get("sessionId", ""))
                    self._listeners.pop(params.get("sessionId", ""), None)
                listener = self._listeners.get(message.get("sessionId", ""))
                if listener is not None:
                    listener(method, params)
        except (ConnectionClosed, OSError, ValueError) as exc:
            log.info("the debugging connection ended: %s", exc)
        finally:
            self.closed = True
            for future, _session in self._pending.values():
                if not future.done():
                    future.set_exception(BrowserClosed("the browser's debugging connection closed"))
            self._pending.clear()

    def _fail_session(self, session_id: str) -> None:
        """The page of this session closed (or crashed): nobody will answer its commands."""
        for key, (future, session) in list(self._pending.items()):
            if session == session_id:
                del self._pending[key]
                if not future.done():
                    future.set_exception(BrowserClosed("the tab closed during the call"))


async def backend_node_id_of(
    send: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]], expression: str
) -> int | None:
    """The backend node id of the element ``expression`` gives, asked through ``send`` (a
    Playwright CDP session or a session of our own), or None if it gives no object."""
    found = await send("Runtime.evaluate", {"expression": expression})
    object_id = found.get("result", {}).get("objectId")
    if not object_id:
        return None
    try:
        node = await send("DOM.describeNode", {"objectId": object_id})
    finally:
        await send("Runtime.releaseObject", {"objectId": object_id})
    return int(node["node"]["backendNodeId"])


def session_lost(exc: CdpError) -> bool:
    """The browser no longer knows the session the command was sent on (it was detached,
    and the command never reached the page)."""
    return exc.code == _SESSION_NOT_FOUND or "Session with given id not found" in exc.message


def result_of(method: str, answer: dict[str, Any]) -> dict[str, Any]:
    if "error" in answer:
        error = answer["error"]
        raise CdpError(method, str(error.get("message", "error")), int(error.get("code", 0)))
    return answer.get("result", {})


async def endpoint_of_url(cdp_url: str, *, budget: Budget) -> str:
    """The browser websocket of a CDP URL (``http://host:9222`` or a ``ws://`` URL)."""
    if cdp_url.startswith(("ws://", "wss://")):
        return cdp_url
    import httpx  # only for a browser reached by URL: not on a launched browser's start

    base = urlsplit(cdp_url)
    try:
        async with httpx.AsyncClient(trust_env=False) as client:
            reply = await budget.run(client.get(f"{cdp_url.rstrip('/')}/json/version"))
        ws_url = str(reply.json()["webSocketDebuggerUrl"])
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        raise BrowserError(f"no debugging endpoint at {cdp_url}: {exc}") from None
    # Chrome names itself as it sees itself (often 127.0.0.1); reach it the way we did.
    found = urlsplit(ws_url)
    scheme = "wss" if base.scheme == "https" else "ws"
    return urlunsplit((scheme, base.netloc, found.path, found.query, ""))


async def endpoint_of_launched(browser: Browser, *, budget: Budget) -> str:
    """The websocket of a Chromium that Playwright launched with ``--remote-debugging-port=0``."""
    try:
        session = await budget.run(browser.new_browser_cdp_session())
        try:
            info = await budget.run(session.send("SystemInfo.getProcessInfo"))
        finally:
            await budget.run(session.detach())
    except PlaywrightError as exc:
        raise BrowserError(f"could not ask the browser for its process: {exc}") from None
    pids = [p["id"] for p in info.get("processInfo", []) if p.get("type") == "browser"]
    if not pids:
        raise BrowserError("the browser did not name its process")
    try:
        cmdline = await asyncio.to_thread(Path(f"/proc/{pids[0]}/cmdline").read_bytes)
        argv = cmdline.decode().split("\0")
    except OSError as exc:
        raise BrowserError(f"could not read the browser's command line: {exc}") from None
    profile = next((a.split("=", 1)[1] for a in argv if a.startswith("--user-data-dir=")), "")
    if not profile:
        raise BrowserError("the browser's command line names no profile folder")
    port_file = Path(profile) / "DevToolsActivePort"
    while True:  # written once the port is bound, usually before Playwright is connected
        try:
            port, path = (await asyncio.to_thread(port_file.read_text)).split()[:2]
            return f"ws://127.0.0.1:{int(port)}{path}"
        except (OSError, ValueError):
            budget.check()
            await asyncio.sleep(0.02)
