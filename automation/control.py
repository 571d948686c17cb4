"""What the person can do to a live run (an agent's or a replay's): pause, resume, reply,
extend, stop; and how the host ends it when the run can't go on (``fail``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from automation.budget import Budget

__all__ = ["RunControl"]


class RunControl:
    """Shared between the loop (which waits on it) and the UI (which pokes it).

    ``stop()`` cancels the run's budget, so whatever is in flight (an LLM stream, a click,
    a wait for the person) ends at once with ``Cancelled``; and every budget a wait beside
    that work holds (:meth:`cancelling`), so that wait ends too.
    """

    def __init__(self) -> None:
        self.budget: Budget | None = None  # set by the loop when the run starts
        self.pause_requested = False
        self.paused = False
        self.pause_reason = ""  # why it is paused ("llm_error", "stuck", …), while it is
        self.stopped = False
        self.stop_reason = ""  # the stop's, once stopped
        self.failure = ""  # why the run can't go on (its browser crashed), if it can't
        # The Recorder listening to the person while the run is paused (the live view's
        # "check this" asks it to record a check), else None.
        self.recorder: Any = None
        self._replies: list[str] = []
        self._extension = 0  # rounds granted past the round cap
        self._wake = asyncio.Event()
        self._beside: list[Budget] = []  # waits beside the work (cancelling)

    def request_pause(self) -> None:
        self.pause_requested = True

    def resume(self) -> None:
        self.pause_requested = False
        self._wake.set()

    def reply(self, text: str) -> None:
        """A message from the person; also resumes a paused run."""
        if text.strip():
            self._replies.append(text.strip())
        self.resume()

    def extend(self, rounds: int) -> None:
        """Allow ``rounds`` more rounds past the round cap (resume continues with them)."""
        self._extension += max(0, int(rounds))

    def take_extension(self) -> int:
        rounds, self._extension = self._extension, 0
        return rounds

    def stop(self, reason: str = "stopped by the person") -> None:
        self.stopped = True
        self.stop_reason = reason
        for budget in (self.budget, *self._beside):
            if budget is not None:
                budget.cancel(reason)
        self._wake.set()

    def attach(self, budget: Budget) -> None:
        """The budget of the work starting now, which a stop cancels; a stop asked before
        it started (as the run's tab opened) cancels it at once."""
        self.budget = budget
        if self.stopped:
            budget.cancel(self.stop_reason)

    @contextmanager
    def cancelling(self, budget: Budget) -> Iterator[Budget]:
        """A stop cancels ``budget`` too while in this, without taking the place of the
        work's (a pause waiting for the MCP call in flight to end: the stop ends both); one
        asked before cancels it at once."""
        self._beside.append(budget)
        if self.stopped:
            budget.cancel(self.stop_reason)
        try:
            yield budget
        finally:
            self._beside.remove(budget)

    def fail(self, reason: str) -> None:
        """End the run as failed, at once, even while it waits for the person: for what
        the run can't survive, like its browser crashing."""
        if not self.failure:
            self.failure = reason
        self.stop(reason)

    def replies_pending(self) -> bool:
        return bool(self._replies)

    def take_replies(self) -> list[str]:
        replies, self._replies = self._replies, []
        return replies

    def begin_pause(self, reason: str = "") -> None:
        """The run is paused from now on (before it is ready to wait), for ``reason``."""
        self._wake.clear()
        self.paused = True
        self.pause_reason = reason

    async def wait_for_person(self, budget: Budget) -> None:
        """Block until resume, reply or stop; not bounded by time, only by cancellation.
        A resume or reply since :meth:`begin_pause` counts."""
        if not self.paused:
            self.begin_pause()
        stop = asyncio.ensure_future(budget.wait_cancelled())
        wake = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({stop, wake}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            wake.cancel()
            self.paused = False
            self.pause_reason = ""
        budget.check_cancelled()
