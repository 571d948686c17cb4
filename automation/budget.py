"""One deadline per call, handed down through every layer.

A caller creates a :class:`Budget` from ``timeout_ms`` (or derives a child from a parent
budget); every layer below asks it how much time is left instead of picking its own
timeout.  ``run()`` bounds an awaitable by the remaining time *and* by cancellation, so a
stop button or a dropped socket ends whatever is in flight.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable
from typing import TypeVar

from automation.errors import ActionInvalid, BudgetExceeded, Cancelled

__all__ = ["DEFAULT_HEADROOM_MS", "MAX_TIMEOUT_MS", "Budget", "close_unawaited", "timeout_ms_of"]

T = TypeVar("T")

# Time kept back for serialising and delivering a result after the work itself ends.
DEFAULT_HEADROOM_MS = 50
# The most a caller may ask for one call (an action, a step, a request).
MAX_TIMEOUT_MS = 600_000


def timeout_ms_of(value: object, *, what: str) -> float:
    """A caller's timeout in ms, checked: a number between 1 and MAX_TIMEOUT_MS."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= MAX_TIMEOUT_MS
    ):
        raise ActionInvalid(f"{what} must be between 1 and {MAX_TIMEOUT_MS}")
    return float(value)


class Budget:
    """An absolute deadline (monotonic clock) plus a cancellation flag shared with children."""

    def __init__(
        self,
        timeout_ms: float,
        *,
        label: str = "call",
        parent: Budget | None = None,
        _clock: object = time.monotonic,
    ) -> None:
        if timeout_ms < 0:
            raise ValueError("timeout_ms must be >= 0")
        self._clock = _clock
        self.label = label
        self.timeout_ms = timeout_ms
        deadline = self._now() + timeout_ms / 1000
        if parent is not None:
            deadline = min(deadline, parent.deadline)
        self.deadline = deadline
        self.parent = parent
        self._cancel_event = parent._cancel_event if parent else asyncio.Event()
        self._cancel_reason = ""

    def _now(self) -> float:
        return self._clock()  # type: ignore[operator]

    def child(self, timeout_ms: float | None = None, *, label: str = "") -> Budget:
        """A budget that ends no later than this one and is cancelled with it.  One with a
        timeout of its own is named for what it bounds (``label``): running out, it names
        itself, and a 2 s lookup must not read as the run's budget running out."""
        own = self.remaining_ms() if timeout_ms is None else timeout_ms
        if not label:
            label = self.label if timeout_ms is None else f"part of the {self.label}"
        return Budget(own, label=label, parent=self, _clock=self._clock)

    def reserve(self, ms: float, *, label: str = "") -> Budget:
        """A child that ends ``ms`` before this budget does: the time after it is kept for
        what must still happen inside the caller's deadline (stopping a script, answering)."""
        return self.child(self.remaining_ms(headroom_ms=ms), label=label or self.label)

    def extend(self, ms: float) -> None:
        """Push the deadline back: for time spent waiting on a person, not working."""
        self.deadline += ms / 1000

    def remaining_ms(self, *, headroom_ms: float = 0) -> float:
        return max(0.0, (self.deadline - self._now()) * 1000 - headroom_ms)

    @property
    def expired(self) -> bool:
        return self.remaining_ms() <= 0

    @property
    def cancelled(self) -> bool:
        return self._cancel_event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        root = self
        while root.parent is not None:
            root = root.parent
        root._cancel_reason = reason
        self._cancel_event.set()

    @property
    def cancel_reason(self) -> str:
        root = self
        while root.parent is not None:
            root = root.parent
        return root._cancel_reason or "cancelled"

    async def wait_cancelled(self) -> None:
        await self._cancel_event.wait()

    def check_cancelled(self) -> None:
        if self.cancelled:
            raise Cancelled(f"{self.label} cancelled: {self.cancel_reason}")

    def binding(self) -> Budget:
        """The budget whose deadline this one ends at: itself, or the outermost ancestor
        that cut it short (a 10 s snapshot with 2 s of the run left ends with the run)."""
        found: Budget = self
        node = self.parent
        while node is not None:
            if node.deadline <= found.deadline + 1e-9:  # float noise of min() in child()
                found = node
            node = node.parent
        return found

    def exceeded(self, detail: str = "") -> BudgetExceeded:
        """The error for this budget running out, naming the budget that did: its label and
        its own timeout, not the caller's or the run's."""
        spent = self.binding()
        return BudgetExceeded(
            f"the {spent.label} ran out of its {spent.timeout_ms:.0f} ms budget{detail}",
            hint="give it more time or split the task",
        )

    def check(self) -> None:
        """Raise if cancelled or out of time; call between steps of a longer job."""
        self.check_cancelled()
        if self.expired:
            raise self.exceeded()

    def playwright_timeout(self, *, headroom_ms: float = DEFAULT_HEADROOM_MS) -> float:
        """The ``timeout=`` to hand Playwright: what is left, less headroom, at least 1 ms."""
        self.check()
        return max(1.0, self.remaining_ms(headroom_ms=headroom_ms))

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` within the remaining time; raise BudgetExceeded or Cancelled."""
        try:
            self.check()
        except (BudgetExceeded, Cancelled):
            close_unawaited(awaitable)
            raise
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._cancel_event.wait())
        try:
            done, _ = await asyncio.wait(
                {work, stop},
                timeout=self.remaining_ms() / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            work.cancel()
            raise
        finally:
            stop.cancel()
        if work in done:
            return work.result()
        work.cancel()
        try:
            await work
        except (asyncio.CancelledError, Exception):
            pass
        self.check()
        raise self.exceeded()

    def __repr__(self) -> str:
        return f"<Budget {self.label} {self.remaining_ms():.0f}/{self.timeout_ms:.0f} ms>"


def close_unawaited(awaitable: Awaitable[object]) -> None:
    """Close a coroutine that will never run, so it is not reported as never awaited."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()
