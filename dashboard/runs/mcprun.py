"""An MCP session's run, on the worker that holds it: the runner opens its tab, then
:func:`serve` keeps the session (:class:`automation.mcp.McpSession`) for the client's
calls (dashboard.api.mcp sends them here, :meth:`RunManager.mcp_call`) and serves a person's
pause (calls are refused meanwhile; what the person does becomes steps), until the client
ends the session, a person stops it, or no call comes for TABWRIGHT_SESSION_IDLE_S.

The run never ends "succeeded": only the client knows whether its task worked.  A session
the client ended is "stopped" with that reason; one that lost its browser is "failed".  As
it stops, checks of its last page are proposed, as an agent's run proposes them at its end,
for whoever saves it as a scenario.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from django.conf import settings

from automation import Budget
from automation.errors import Cancelled
from automation.events import RunFinished, RunStarted
from automation.mcp.session import McpSession

if TYPE_CHECKING:
    from dashboard.models import Run
    from dashboard.runs.live import LiveRun

__all__ = ["DEFAULT_IDLE_S", "serve"]

DEFAULT_IDLE_S = 30 * 60  # when the server keeps no conversation tabs (SESSION_IDLE_S=0)
_PAUSE_MS = 24 * 3600 * 1000  # a pause lasts until the person resumes or stops
_PROPOSE_MS = 5_000  # reading the session's last page for checks to propose (as an agent's)


async def serve(run: Run, live: LiveRun) -> None:
    assert live.tab is not None
    session = McpSession(
        live.tab, sink=live.sink, secrets=live.secrets, control=live.control, screenshots=True
    )
    live.mcp = session
    # Started (its page and the database say so) before any call is let in: a call that
    # waited for the tab acts on a run past ``pending``, its steps after ``run.started``.
    await live.sink.emit(RunStarted(run.task, "", "mcp"))
    live.mcp_ready.set()
    idle_s = int(settings.TABWRIGHT["SESSION_IDLE_S"]) or DEFAULT_IDLE_S
    control = live.control
    while True:
        if control.failure:
            await live.sink.emit(RunFinished("failed", reason=control.failure))
            return
        if control.stopped or live.closing:
            reason = live.closing or control.stop_reason or "stopped by the person"
            await session.propose_checks(Budget(_PROPOSE_MS, label="propose checks"))
            await live.sink.emit(RunFinished("stopped", reason=reason))
            return
        if control.pause_requested:
            try:  # the pause's own budget: the call in flight keeps its, which a stop cancels
                await session.hold_for_person(Budget(_PAUSE_MS, label="pause"))
            except Cancelled:
                pass  # stopped while paused: the loop ends it
            session.last_call = time.monotonic()  # the person's time is not the client's idle
            continue
        left_s = idle_s - (time.monotonic() - session.last_call)
        if left_s <= 0:
            live.closing = f"no MCP call for {idle_s} s"
            continue
        try:  # a command (pause, stop, close) pokes the inbox
            async with asyncio.timeout(left_s):
                await live.inbox.get()
        except TimeoutError:
            pass
