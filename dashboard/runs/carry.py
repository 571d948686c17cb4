"""Where a run lives, and every call for it carried there: the one place that knows.

A call for a live run is a command (pause, resume, stop, reply, extend, message, close),
an act by the person, a live-view input, an MCP client's tool call or saving its sign-in
(dashboard.runs.messages).  :func:`carry` carries it out where the run lives
(:func:`where`): on this process's runner when this process drives the run (or nobody
does: the runner then finds it not live), else at the worker in another process that
holds it, whose lease names the worker's channel (:func:`call_holder`).  The worker's
consumer hands such calls to :func:`serve`, which answers each on the caller's reply
channel.

One budget rule, here or elsewhere: a call is carried within its caller's ``wait`` (an
act's or an MCP call's own budget; COMMAND_ANSWER_MS for a command; the page's consumer gives a
live-view input its own).  Sent elsewhere, the call carries what is left of it (``timeout_ms``), the
worker works within that, and the caller waits as long; when the wait runs out or is
cancelled, or the caller is cancelled, the worker is told to stop (``run.cancel``) and the
answer is the budget's error.  Every answer has :func:`answer_of`'s shape.  A call for a
run that may not have started yet (an MCP session's first) waits for it first, within
the same budget: :func:`started`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from automation import Budget
from automation.errors import ActionInvalid, TabwrightError
from dashboard.models import Run
from dashboard.runs import messages, selectors
from dashboard.runs.doorbell import layer_failed, ring
from dashboard.runs.messages import Answer, CallMessage
from dashboard.runs.runner import runner
from dashboard.runs.sink import group_name

__all__ = ["COMMAND_ANSWER_MS", "LOOK_AGAIN_S", "UNREACHABLE", "VIEWER_RENEW_S", "Place",
           "answer_of", "call_holder", "carry", "command_where_it_runs", "serve",
           "serve_cancel", "started", "tell_watching", "unreachable", "where"]  # fmt: skip

log = logging.getLogger("tabwright.worker")

COMMAND_ANSWER_MS = 15_000  # a command: carried out, here or elsewhere, within this
# A run waited for (started) is looked for in the database this often, besides its events.
LOOK_AGAIN_S = 1.0
_STARTING = frozenset({Run.Status.QUEUED, Run.Status.PENDING})
UNREACHABLE = "the worker that holds the run can't be reached now (the channel layer fails)"
# A page on one process watching a run held on another says so every VIEWER_RENEW_S (the
# worker counts it for a while after each: dashboard.worker).
VIEWER_RENEW_S = 5.0


@dataclass(frozen=True)
class Place:
    """Where a run lives now: on this process (``here``; ``working``: at work, not
    waiting for a message), at the worker whose channel is ``holder``, or nowhere."""

    here: bool
    holder: str = ""
    working: bool = False

    @property
    def elsewhere(self) -> bool:
        return bool(self.holder)

    @property
    def live(self) -> bool:
        return self.here or self.elsewhere


async def where(run_id: int) -> Place:
    """Where the run lives now (its lease says which worker holds it elsewhere)."""
    if runner.is_live(run_id):
        return Place(here=True, working=runner.is_working(run_id))
    holder = await database_sync_to_async(selectors.run_holder)(
        run_id=run_id, other_than=runner.leases.holder
    )
    return Place(here=False, holder=holder)


async def started(run_id: int, wait: Budget) -> Place:
    """Where the run lives once it has started: claimed by a worker that has it at work
    (past ``pending``: an MCP session's tab is open and its session ready), as its page
    sees it start.  While it is queued or starting, this waits within ``wait`` (raising
    its BudgetExceeded or Cancelled): the run's own events ring (its group, as its pages
    hear them), and the database says, looked at again every LOOK_AGAIN_S whatever
    comes.  A run that ended, or never was: ``Place(here=False)``, live nowhere."""
    place = await _started_place(run_id)
    if place is not None:
        return place
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = group_name(run_id)
    await layer.group_add(group, channel)  # before looking again: a start meanwhile rings
    try:
        while (place := await _started_place(run_id)) is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LOOK_AGAIN_S):
                    await wait.run(layer.receive(channel))
        return place
    finally:
        await layer.group_discard(group, channel)


async def _started_place(run_id: int) -> Place | None:
    """Where the run lives when it has started or ended; None while queued or starting."""
    status = await database_sync_to_async(selectors.run_status)(run_id=run_id)
    if status is None or status in Run.FINAL:
        return Place(here=False)
    return None if status in _STARTING else await where(run_id)


async def carry(call: CallMessage, wait: Budget, *, place: Place | None = None) -> Answer:
    """``call`` carried out where its run lives (``place``, when the caller has just
    looked), within ``wait``: :func:`answer_of`'s shape either way."""
    if place is None:
        place = await where(call["run_id"])
    if place.elsewhere:
        try:
            return await call_holder(place.holder, call, wait)
        except TabwrightError as exc:  # out of time, or cancelled, waiting for it
            return {"error": {"kind": "refused", **exc.to_dict()}}  # type: ignore[typeddict-item]
    return await answer_of(_work(call, wait))


async def command_where_it_runs(run_id: int, command: str, text: str = "", rounds: int = 0,
                                *, place: Place | None = None,
                                wait: Budget | None = None) -> Answer:  # fmt: skip
    """:meth:`RunManager.command` on the run, wherever it runs, within COMMAND_ANSWER_MS,
    or within ``wait``: the caller's, when what it does after the command is bounded by
    the same deadline (a stop's wait for the run's work to end)."""
    if wait is None:
        wait = Budget(COMMAND_ANSWER_MS, label="answer of the worker holding the run")
    return await carry(messages.command_message(run_id, command, text, rounds), wait, place=place)


async def answer_of(work: Awaitable[Any]) -> Answer:
    """What a call ended in, as its caller is told it, here or from a worker elsewhere:
    ``{"answer": ...}``, or ``{"error": {"kind": "lookup" (the run is not live) | "value"
    (not now) | "invalid" (a bad request: ActionInvalid's code, message, hint) | "refused"
    (any other engine error: code, message, hint)}}``."""
    try:
        return {"answer": await work}
    except LookupError as exc:
        return {"error": {"kind": "lookup", "message": str(exc)}}
    except ValueError as exc:
        return {"error": {"kind": "value", "message": str(exc)}}
    except ActionInvalid as exc:
        return {"error": {"kind": "invalid", **exc.to_dict()}}  # type: ignore[typeddict-item]
    except TabwrightError as exc:
        return {"error": {"kind": "refused", **exc.to_dict()}}  # type: ignore[typeddict-item]


def _work(call: CallMessage, budget: Budget) -> Awaitable[Any]:
    """The call, on this process's runner, within ``budget``."""
    run_id = call["run_id"]
    if call["type"] == "run.command":
        return runner.command(run_id, call["command"], call["text"], rounds=call["rounds"])
    if call["type"] == "run.act":
        return runner.act(run_id, call["action"], call["args"], budget=budget)
    if call["type"] == "run.input":
        return runner.person_input(run_id, call["event"], budget=budget)
    if call["type"] == "run.signin":
        return runner.save_signin(run_id, call["name"], budget=budget)
    return runner.mcp_call(run_id, call["name"], call["args"], budget=budget)


async def call_holder(holder: str, call: CallMessage, wait: Budget) -> Answer:
    """Send ``call`` to the worker ``holder`` with what is left of ``wait`` and await its
    answer on a reply channel of its own, within ``wait``; when ``wait`` is cancelled or
    runs out, or the caller is cancelled, the worker is told to stop (``run.cancel``).  A
    channel layer that fails meanwhile (Redis restarting) is an answer too: the worker
    can't be reached now (:func:`unreachable`)."""
    layer = get_channel_layer()
    reply = await layer.new_channel()
    call_id = secrets.token_hex(8)
    sent = {**call, "id": call_id, "reply_to": reply, "timeout_ms": wait.remaining_ms()}
    if not await ring(holder, sent):
        return unreachable()
    try:
        got = await wait.run(layer.receive(reply))
    except (TabwrightError, asyncio.CancelledError):  # nobody waits: the worker stops too
        await asyncio.shield(ring(holder, messages.cancel_message(call_id)))
        raise
    except Exception as exc:  # the layer failed while the answer was awaited
        layer_failed(exc, f"the answer to a {call['type']} message")
        await asyncio.shield(ring(holder, messages.cancel_message(call_id)))
        return unreachable()
    return {key: got[key] for key in ("answer", "error") if key in got}  # type: ignore[return-value]


def unreachable() -> Answer:
    """The answer of a call that the channel layer could not carry (or bring back)."""
    hint = "try again in a moment"
    return {"error": {"kind": "refused", "code": "unreachable", "message": UNREACHABLE,
                      "hint": hint}}  # fmt: skip


async def tell_watching(
    holder: str, run_id: int, viewer: str, *, watching: bool, width: int = 0
) -> None:
    """Tell the worker ``holder`` that the page whose channel is ``viewer`` watches the
    run (renewed every VIEWER_RENEW_S), showing it ``width`` device pixels wide, or has
    stopped watching it."""
    if watching:
        await ring(holder, messages.watch_message(run_id, viewer, width))
    else:
        await ring(holder, messages.unwatch_message(run_id, viewer))


# -- the holder's side: calls from other processes ---------------------------------------

_answering: set[asyncio.Task[None]] = set()
_serving: dict[str, Budget] = {}  # calls for callers on other processes, by call id
_LABELS = {"run.command": "command", "run.input": "live-view input",
           "run.signin": "saving the sign-in"}  # fmt: skip


def serve(call: CallMessage) -> None:
    """Carry out a call sent by another process (:func:`call_holder`) on this process's
    runner, within the budget it was given, and send the answer to its reply channel (an
    answer the layer can't carry is dropped: its caller stops waiting in time); not
    awaited: one slow call must not hold up the others."""
    label = {"run.act": call.get("action"), "run.mcp": call.get("name")}.get(call["type"])
    budget = Budget(float(call["timeout_ms"]), label=str(label or _LABELS[call["type"]]))
    call_id = str(call["id"])
    _serving[call_id] = budget  # a run.cancel stops it

    async def answer() -> None:
        try:
            got = await answer_of(_work(call, budget))
        except Exception as exc:  # a bug: the caller hears of it rather than waiting in vain
            log.exception("a call for run %s failed", call.get("run_id"))
            got = {"error": {"kind": "refused", "code": "internal", "message": repr(exc)}}
        finally:
            _serving.pop(call_id, None)
        await ring(call["reply_to"], messages.answer_message(call_id, got))

    task = asyncio.get_running_loop().create_task(answer())
    _answering.add(task)
    task.add_done_callback(_answering.discard)


def serve_cancel(call_id: str) -> None:
    """The caller of a call being served here stopped waiting: nobody will read its
    answer."""
    budget = _serving.get(call_id)
    if budget is not None:
        budget.cancel("the page disconnected")
