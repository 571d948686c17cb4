"""Waiting in tests for a condition, never for a fixed time: events reach Python a moment
after the page or the server acted, later on a busy machine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def eventually(check: Callable[[], bool], timeout_s: float = 60, what: str = "") -> None:
    """Poll ``check`` until it holds; fail, naming ``what``, if it never does."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, what or "condition never became true"
        await asyncio.sleep(0.02)
