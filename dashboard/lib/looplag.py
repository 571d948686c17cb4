"""The event loop's watchdog: how late the loop is, and what held it when it was too late.

Every page, socket and run of a process shares one event loop; one piece of work that runs
on it without yielding (a slow regular expression, a blocking call) holds up everyone.  A
heartbeat task on the loop wakes every ``interval_s`` and measures how late it woke (the
*lag*), kept for ``/metrics`` (the latest minute's 99th percentile, the largest ever).  A
thread beside the loop watches the heartbeat: when it has not beaten for ``warn_ms``, the
loop is stuck *now*, so the thread reads the loop thread's stack -- the code that holds it
-- and logs it once per stall (the loop itself can't say so while it is held); once the
loop is free again, the heartbeat logs how long it was held in all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass

__all__ = ["LoopWatch", "Stats", "watch", "watching"]

log = logging.getLogger("dashboard.looplag")

INTERVAL_S = 0.1
WARN_MS = 250
WINDOW = 600  # samples: the latest minute at INTERVAL_S


@dataclass(frozen=True)
class Stats:
    p99_ms: float  # over the latest WINDOW samples
    max_ms: float  # the largest lag since the watch began
    stalls: int  # times the loop was held past warn_ms (each logged with its stack)


class LoopWatch:
    def __init__(
        self, loop: asyncio.AbstractEventLoop, *, interval_s: float = INTERVAL_S,
        warn_ms: float = WARN_MS,
    ) -> None:  # fmt: skip
        self.loop = loop
        self.interval_s = interval_s
        self.warn_ms = warn_ms
        self.samples: deque[float] = deque(maxlen=WINDOW)
        self.max_ms = 0.0
        self.stalls = 0
        self._beat = time.monotonic()
        self._loop_thread = threading.get_ident()
        self._task: asyncio.Task[None] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Call in the loop's own thread, with the loop running."""
        self._loop_thread = threading.get_ident()
        self._beat = time.monotonic()
        self._task = self.loop.create_task(self._heartbeat(), name="event loop watchdog")
        self._thread = threading.Thread(target=self._watch, name="loop watchdog", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 5)

    def stats(self) -> Stats:
        ordered = sorted(self.samples)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
        return Stats(p99_ms=p99, max_ms=self.max_ms, stalls=self.stalls)

    async def _heartbeat(self) -> None:
        while True:
            expected = self.loop.time() + self.interval_s
            await asyncio.sleep(self.interval_s)
            lag_ms = max(0.0, (self.loop.time() - expected) * 1000)
            self.samples.append(lag_ms)
            self.max_ms = max(self.max_ms, lag_ms)
            self._beat = time.monotonic()
            if lag_ms >= self.warn_ms:  # free again: how long it was held, in all
                log.warning("the event loop was held for %d ms in all", lag_ms)

    def _watch(self) -> None:
        warned_for = 0.0  # the beat a stall was reported for: once per stall
        while not self._stop.wait(self.interval_s / 2):
            beat = self._beat
            held_ms = (time.monotonic() - beat) * 1000 - self.interval_s * 1000
            if held_ms < self.warn_ms or beat == warned_for:
                continue
            warned_for = beat
            self.stalls += 1
            frame = sys._current_frames().get(self._loop_thread)
            stack = "".join(traceback.format_stack(frame)) if frame else "(no stack)\n"
            log.warning(
                "the event loop has been held for %d ms (every page and run of this process "
                "waits); it is running:\n%s", held_ms, stack,
            )  # fmt: skip


_watches: dict[asyncio.AbstractEventLoop, LoopWatch] = {}


def watch() -> LoopWatch:
    """The running loop's watch, started on the first call (daphne and runworker call it)."""
    loop = asyncio.get_running_loop()
    found = _watches.get(loop)
    if found is None:
        found = _watches[loop] = LoopWatch(loop)
        found.start()
    return found


def watching() -> LoopWatch | None:
    """The watch of this process's loop, if one was started (for /metrics, from a thread)."""
    return next(iter(_watches.values()), None)
