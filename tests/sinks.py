"""An event sink tests can await on."""

from __future__ import annotations

import asyncio

from automation import ListSink
from automation.events import Event


class WaitingSink(ListSink):
    """A ListSink a test can await: ``await sink.wait_for(RunPaused)``."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = asyncio.Condition()

    async def emit(self, event: Event) -> None:
        async with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    async def wait_for(self, cls: type[Event], count: int = 1, timeout_s: float = 60) -> Event:
        """The ``count``-th event of ``cls``, once it came; ``timeout_s`` bounds a hang only."""
        async with asyncio.timeout(timeout_s), self._changed:
            await self._changed.wait_for(lambda: len(self.of_type(cls)) >= count)
            return self.of_type(cls)[count - 1]
