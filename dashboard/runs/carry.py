"""Where a run lives, and a call carried there: a command, an act, a live-view input or an
MCP tool call for a live run is carried out by this process when it drives the run, else
sent to the worker that holds it (its lease names the worker's channel) and answered on
a reply channel of the caller's own.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from automation import Budget
from automation.errors import ActionInvalid, TabwrightError
from dashboard.runs import selectors
from dashboard.runs.runner import runner

__all__ = ["COMMAND_ANSWER_MS", "VIEWER_RENEW_S", "answer_of", "call_holder", "carry_out",
           "command_where_it_runs"]  # fmt: skip

COMMAND_ANSWER_MS = 15_000  # a command for a run held elsewhere: its answer within this
# A page on one process watching a run held on another says so every VIEWER_RENEW_S (the
# worker counts it for a while after each: dashboard.worker).
VIEWER_RENEW_S = 5.0


async def answer_of(work: Awaitable[Any]) -> dict[str, Any]:
    """What a command or an act ended in, as a page's process is told it, here or from a
    worker elsewhere: ``{"answer": ...}``, or ``{"error": {"kind": "lookup" (the run is not
    live) | "value" (not now) | "invalid" (a bad request: ActionInvalid's code, message,
    hint) | "refused" (any other engine error: code, message, hint)}}``."""
    try:
        return {"answer": await work}
    except LookupError as exc:
        return {"error": {"kind": "lookup", "message": str(exc)}}
    except ValueError as exc:
        return {"error": {"kind": "value", "message": str(exc)}}
    except ActionInvalid as exc:
        return {"error": {"kind": "invalid", **exc.to_dict()}}
    except TabwrightError as exc:
        return {"error": {"kind": "refused", **exc.to_dict()}}


async def carry_out(
    run_id: int, message: dict[str, Any], wait: Budget, here: Callable[[], Awaitable[Any]]
) -> dict[str, Any]:
    """Whatever a page asks of a live run, carried out where the run lives: ``here()`` when
    this process drives it (or nobody does: then ``here()`` finds it not live), else
    ``message`` (a ``run.command``, ``run.act`` or ``run.input``) at the worker that holds
    it, within ``wait``.  :func:`answer_of`'s shape either way; a worker that does not
    answer in time is ``{"kind": "refused", "code": "budget_exceeded"}``."""
    if not runner.is_live(run_id):
        holder = await database_sync_to_async(selectors.run_holder)(
            run_id=run_id, other_than=runner.leases.holder
        )
        if holder:
            try:
                return await call_holder(holder, {**message, "run_id": run_id}, wait)
            except TabwrightError as exc:  # out of time, or cancelled, waiting for it
                return {"error": {"kind": "refused", **exc.to_dict()}}
    return await answer_of(here())


async def command_where_it_runs(run_id: int, command: str) -> dict[str, Any]:
    """:meth:`RunManager.command` on the run, here or at the worker that holds it
    (:func:`carry_out`), answered within COMMAND_ANSWER_MS."""
    return await carry_out(
        run_id,
        {"type": "run.command", "command": command, "text": "", "rounds": 0},
        Budget(COMMAND_ANSWER_MS),
        lambda: runner.command(run_id, command),
    )


async def call_holder(holder: str, message: dict[str, Any], wait: Budget) -> dict[str, Any]:
    """Send ``message`` to the worker ``holder`` and await its answer (:func:`answer_of`'s
    shape) on a reply channel of its own, within ``wait``; when ``wait`` is cancelled or
    runs out, or the caller is cancelled, the worker is told to stop (``run.cancel``)."""
    layer = get_channel_layer()
    reply = await layer.new_channel()
    call_id = secrets.token_hex(8)
    await layer.send(holder, {**message, "id": call_id, "reply_to": reply})
    try:
        return await wait.run(layer.receive(reply))
    except (TabwrightError, asyncio.CancelledError):  # nobody waits: the worker stops too
        await asyncio.shield(layer.send(holder, {"type": "run.cancel", "id": call_id}))
        raise
