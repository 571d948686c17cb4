"""A recorder's way in to a page that a frame of another site holds.

Playwright puts a recorder's binding and init script into every frame of the page and
waits for each: a widget whose script hangs (a frame of another site, in a renderer of its
own) holds both for good, the page's own documents included.  This listener is the page's
alone: a CDP session of its own on the page's target, with ``Runtime.addBinding`` and
``Page.addScriptToEvaluateOnNewDocument``, which only the page's own renderer answers.  It
reaches the page's documents, after every navigation, and those of its frames of the same
site (one renderer); frames of other sites are targets of their own and are left out (the
recorder says so, :attr:`Recorder.left_out`).

The binding takes one text: recorder.js sends each event as JSON (``encoded``), and a flush
sends a mark that :meth:`CdpListener.arrived` waits for: once it has come, so has every
event the document sent before it.  The events come to ``on_event`` as Playwright's do,
with a source that says the page and whether the document is the top one (the context
they came from, of the page's main frame or not).  Closing detaches the session, which
takes its binding and script away with it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from playwright.async_api import CDPSession, Page

from automation.browser.pwcall import call
from automation.budget import Budget

__all__ = ["MAX_EVENT_CHARS", "CdpListener"]

log = logging.getLogger(__name__)

MAX_EVENT_CHARS = 1_000_000  # an event longer than this (sent by the page) is dropped
_MARKS_KEPT = 64  # flush marks that came before their flush was answered

OnEvent = Callable[[dict[str, Any], Any], None]


class CdpListener:
    """Listen to ``page`` through ``binding`` (a name of the recorder's own)."""

    def __init__(self, page: Page, binding: str, on_event: OnEvent) -> None:
        self.page = page
        self.binding = binding
        self._on_event = on_event
        self._session: CDPSession | None = None
        self._main = ""  # the page's target id, which is its main frame's id
        self._frames: dict[int, str] = {}  # execution context id -> its frame's id
        self._came: deque[str] = deque(maxlen=_MARKS_KEPT)
        self._waiting: dict[str, asyncio.Future[None]] = {}

    async def open(self, script: str, what: str, budget: Budget) -> None:
        """The session, the binding in every document of the page's renderer (those loaded
        and those to come) and ``script`` in each new one; ActionFailed, BrowserClosed or
        BudgetExceeded when the page does not let it (the caller closes it then)."""
        gone = self.page.is_closed
        session = await call(what, budget, self.page.context.new_cdp_session(self.page), gone=gone)
        self._session = session
        session.on("Runtime.executionContextCreated", self._context_created)
        session.on("Runtime.executionContextDestroyed", self._context_destroyed)
        session.on("Runtime.executionContextsCleared", lambda _params: self._frames.clear())
        session.on("Runtime.bindingCalled", self._called)
        info = await call(what, budget, session.send("Target.getTargetInfo"), gone=gone)
        self._main = str(info["targetInfo"]["targetId"])
        # Page and Runtime on: the binding stays in the documents to come, and the script
        # runs there (neither does without both).
        for method, params in (
            ("Page.enable", None),
            ("Runtime.enable", None),
            ("Runtime.addBinding", {"name": self.binding}),
            ("Page.addScriptToEvaluateOnNewDocument", {"source": script}),
        ):
            await call(what, budget, session.send(method, params), gone=gone)

    async def arrived(self, mark: str) -> None:
        """Once the flush that sent ``mark`` has come (at once when it has)."""
        if mark in self._came:
            return
        waiting = self._waiting[mark] = asyncio.get_running_loop().create_future()
        try:
            await waiting
        finally:
            self._waiting.pop(mark, None)

    async def close(self, budget: Budget) -> None:
        session, self._session = self._session, None
        for waiting in self._waiting.values():
            waiting.cancel()
        self._waiting.clear()
        if session is not None:
            try:
                await call("stop recording", budget, session.detach())
            except Exception as exc:  # the page or browser is gone: so is the session
                log.debug("a recorder's CDP session did not detach: %s", exc)

    # -- the session's events (a listener that raised would fail Playwright's next call)

    def _context_created(self, params: dict[str, Any]) -> None:
        context = params.get("context") or {}
        frame = (context.get("auxData") or {}).get("frameId")
        if isinstance(context.get("id"), int) and isinstance(frame, str):
            self._frames[context["id"]] = frame

    def _context_destroyed(self, params: dict[str, Any]) -> None:
        self._frames.pop(params.get("executionContextId"), None)  # type: ignore[arg-type]

    def _called(self, params: dict[str, Any]) -> None:
        payload = params.get("payload")
        if params.get("name") != self.binding or not isinstance(payload, str):
            return
        if len(payload) > MAX_EVENT_CHARS:
            log.warning("a recorded event of %d characters was dropped", len(payload))
            return
        try:
            event = json.loads(payload)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        if event.get("kind") == "flush":
            mark = event.get("mark")
            if isinstance(mark, str):
                self._came.append(mark)
                waiting = self._waiting.get(mark)
                if waiting is not None and not waiting.done():
                    waiting.set_result(None)
            return
        top = self._frames.get(params.get("executionContextId"), "") == self._main  # type: ignore[arg-type]
        try:
            self._on_event({"page": self.page, "frame": None, "top": top}, event)
        except Exception:
            log.exception("a recorded event could not be handled")
