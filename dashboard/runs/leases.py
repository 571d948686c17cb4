"""Which server process drives a run, told by the database: a lease the process renews.

Each process that runs runs (dashboard.runs.runner) holds a lease on every run it drives — the
run's row names the process (``holder``) and how long it vouches for it (``lease_until``,
``TABWRIGHT_LEASE_S``) — and renews them every third of that while they live, a
conversation's idle tab included.  Every such process also sweeps: a run whose lease ran
out has lost its process (killed, its machine gone), so it is marked failed (lost) and its
open tab closed, with an event that says so relayed to its open pages; its steps and
events are kept.  A run it had claimed but not started yet (``pending``) goes back to the
queue instead: nothing of it ran.  A process that finds one of its own runs swept (it
could not renew in time) stops that run: a run is never driven by two processes, and
never by one that the database says is gone.

``TABWRIGHT_LEASE_S=0`` turns leases off (one process and nothing else: the start-up lock
of dashboard.startup covers it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Callable, Collection

from channels.db import database_sync_to_async
from django.conf import settings

from dashboard.lib.requestthreads import process_task
from dashboard.models import worker_name
from dashboard.runs import services
from dashboard.runs.doorbell import wake
from dashboard.runs.sink import announce_queue, relay_event

__all__ = ["Leases", "lease_seconds"]

log = logging.getLogger("tabwright.leases")

MIN_LEASE_S = 3


def lease_seconds() -> int:
    """The lease length in seconds, 0 when leases are off."""
    value = int(settings.TABWRIGHT["LEASE_S"])
    return 0 if value <= 0 else max(MIN_LEASE_S, value)


class Leases:
    """One process's leases.  ``live_ids`` tells which runs it drives now; ``lost`` is told
    of those it must stop (swept by another)."""

    def __init__(self, live_ids: Callable[[], Collection[int]], lost: Callable[[int], None]):
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._live_ids = live_ids
        self._lost = lost
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        """This process's name as a run's holder, for people (the log, the run's page)."""
        return worker_name(self.holder)

    async def hold(self, run_id: int) -> None:
        """This process drives ``run_id`` from now (before it starts, so a renewal never
        finds it unheld)."""
        lease_s = lease_seconds()
        if lease_s:
            await database_sync_to_async(services.run_hold)(
                run_id=run_id, holder=self.holder, lease_s=lease_s
            )
            self.keep()

    async def let_go(self, run_id: int) -> None:
        if lease_seconds():
            await database_sync_to_async(services.run_let_go)(run_id=run_id, holder=self.holder)

    def keep(self) -> None:
        """Renew and sweep from now on, while leases are on (idempotent; call it from the
        event loop: when a run starts, or a page opens)."""
        if lease_seconds() and (self._task is None or self._task.done()):
            self._task = process_task(self._loop(), name="run leases")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        while lease_s := lease_seconds():
            try:
                await self.tick(lease_s)
            except Exception:  # a database hiccup: the next tick tries again
                log.exception("renewing and sweeping run leases failed")
            await asyncio.sleep(lease_s / 3)

    async def tick(self, lease_s: int) -> None:
        """Renew this process's leases, stop its runs swept by another, and sweep the runs
        whose process is gone."""
        ids = list(self._live_ids())
        if ids:
            renewed = await database_sync_to_async(services.runs_renew)(
                run_ids=ids, holder=self.holder, lease_s=lease_s
            )
            for run_id in set(ids) - renewed:
                log.warning("run %s was declared lost by another process: stopping it", run_id)
                self._lost(run_id)
        swept = await database_sync_to_async(services.runs_sweep_lost)()
        requeued = False
        for run_id, events in swept:
            if any(event["type"] == "run.requeued" for event in events):
                requeued = True
                log.warning("run %s lost its worker before it started: queued again", run_id)
            else:
                log.warning("run %s lost its process (its lease ran out): marked lost", run_id)
            for event in events:
                await relay_event(run_id, event)
        if requeued:  # its page is told its place, and a worker with room claims it
            await announce_queue()
            await wake()
