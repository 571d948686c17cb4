"""Waiting in tests for a condition, never for a fixed time: events reach Python a moment
after the page or the server acted, later on a busy machine."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable

# How often a condition is looked at again: soon enough that a test hardly waits past
# the moment it holds, seldom enough that the looks (a walk of /proc, a read of a page's
# list) cost the machine nothing the test's own work would notice.
EVERY_S = 0.05


async def eventually(
    check: Callable[[], object],
    timeout_s: float = 60,
    what: str = "",
    *,
    said: Callable[[], str] | None = None,
    every_s: float = EVERY_S,
) -> None:
    """Poll ``check`` (a function, or a coroutine function) every ``every_s`` until it
    holds; fail, naming ``what`` and then ``said()`` (what the servers logged, say), if it
    never does."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        held = check()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if asyncio.get_running_loop().time() >= deadline:
            failed = what or "condition never became true"
            raise AssertionError(f"{failed}; {said()}" if said else failed)
        await asyncio.sleep(every_s)
