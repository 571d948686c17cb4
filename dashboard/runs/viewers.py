"""The pages that watch each run, for its live view.

A page of a run on this process is counted from its socket's ``run.watch`` until it
closes; a page on another process (a web process beside separate workers) is counted for
a time it renews (:meth:`Viewers.watch_remote`), so a page whose process died stops
counting by itself.  Each says how wide it shows the live picture (device pixels, 0: not
said): the live view runs while any page watches, its frames as large as the widest one
shows them (dashboard.runs.liveview).  ``changed`` is called with a run's id whenever its
pages may have changed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["Viewers"]


class Viewers:
    def __init__(self, changed: Callable[[int], None]) -> None:
        self._changed = changed
        # Open pages per run on this process: each one's channel and its width.
        self._here: dict[int, dict[str, int]] = {}
        # Pages on other processes: their channel, until when (time.monotonic()) they
        # count, and their width.
        self._remote: dict[int, dict[str, tuple[float, int]]] = {}

    def watch(self, run_id: int, viewer: str, width: int = 0) -> bool:
        """A page here opened, or says anew how wide it shows the picture; whether it is
        new."""
        viewers = self._here.setdefault(run_id, {})
        new = viewer not in viewers
        viewers[viewer] = width
        self._changed(run_id)
        return new

    def unwatch(self, run_id: int, viewer: str) -> None:
        viewers = self._here.get(run_id, {})
        viewers.pop(viewer, None)
        if not viewers:
            self._here.pop(run_id, None)
        self._changed(run_id)

    def watch_remote(self, run_id: int, viewer: str, ttl_s: float, width: int = 0) -> bool:
        """A page on another process watches for the next ``ttl_s`` seconds, unless it
        says so again; whether it is new."""
        viewers = self._remote.setdefault(run_id, {})
        new = viewer not in viewers
        viewers[viewer] = (time.monotonic() + ttl_s, width)
        asyncio.get_running_loop().call_later(ttl_s + 0.05, self._changed, run_id)
        self._changed(run_id)
        return new

    def unwatch_remote(self, run_id: int, viewer: str) -> None:
        self._remote.get(run_id, {}).pop(viewer, None)
        self._changed(run_id)

    def remote_until(self, run_id: int, viewer: str) -> float | None:
        """Until when (time.monotonic()) a page on another process counts, if it does."""
        counted = self._remote.get(run_id, {}).get(viewer)
        return counted[0] if counted is not None else None

    def widths(self, run_id: int) -> list[int]:
        """The width each page watching the run shows it at (0: not said): pages here,
        and on other processes until their time is up."""
        now = time.monotonic()
        remote = self._remote.get(run_id, {})
        for viewer in [viewer for viewer, (until, _w) in remote.items() if until <= now]:
            del remote[viewer]
        if not remote:
            self._remote.pop(run_id, None)
        here = self._here.get(run_id, {})
        return [*here.values(), *(width for _until, width in remote.values())]
