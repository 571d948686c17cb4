"""The worker: where runs are claimed and driven, a Channels consumer on a fixed channel.
The one module that imports runs/ and jobs/ together: it registers what jobs do when a
run ends (dashboard.runs.live.on_ended), polls the queue, schedules and batches, and
sends the alerts' outbox (dashboard.jobs.outbox) in a task of its own beside the poll.

The web side never drives a run: it creates the run *queued* and rings the doorbell
(dashboard.runs.doorbell.wake, a message to RUNS_CHANNEL).  Channels delivers such a
message at most once, so the database decides who runs what: a worker with room claims
the oldest queued run with one conditional UPDATE (``services.run_claim``: of two
workers, exactly one gets it), holds a lease on it while it lives (dashboard.runs.leases)
and claims the next when one ends.  Every worker also looks at the queue every
QUEUE_POLL_S, so a lost wake-up only delays a run, never strands it.

One code path, two ways to run it:

- ``manage.py runworker tabwright.runs``: the worker in a process of its own (this
  project's ``runworker`` is Channels' with the queue poll beside it); the web processes
  then run with ``TABWRIGHT_EMBEDDED_WORKER=0``.
- By default, daphne starts the same worker inside itself (dashboard/asgi.py), so one
  process with SQLite and the in-memory layer needs nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import socket

from channels.consumer import AsyncConsumer
from channels.layers import get_channel_layer
from channels.worker import Worker
from django.conf import settings

from dashboard.jobs import batches, outbox, schedules
from dashboard.lib import looplag
from dashboard.runs import carry
from dashboard.runs.carry import VIEWER_RENEW_S
from dashboard.runs.doorbell import RUNS_CHANNEL, layer_failed, ring
from dashboard.runs.live import on_ended
from dashboard.runs.liveview import view_width
from dashboard.runs.messages import (
    ActMessage,
    CancelMessage,
    CommandMessage,
    InputMessage,
    McpMessage,
    SchedulesDueMessage,
    SigninMessage,
    UnwatchMessage,
    WakeMessage,
    WatchMessage,
    frame_message,
)
from dashboard.runs.runner import runner

__all__ = ["RunWorkerConsumer", "RunsWorker", "channel_application", "drain", "start_embedded"]

log = logging.getLogger("tabwright.worker")

# A run's end: a batch's next rows may start, a schedule's firing is judged (runs know
# nothing of batches or schedules).
on_ended("start the batch's next rows", batches.run_ended)
on_ended("judge the schedule's firing", schedules.run_ended)

QUEUE_POLL_S = 5.0
LISTEN_AGAIN_S = 1.0  # after the channel layer failed under the worker's listener
# A page on another process watching a run of this worker renews its watch every
# VIEWER_RENEW_S: it counts for VIEWER_TTL_S after each (a page whose process died stops
# counting).
VIEWER_TTL_S = 3 * VIEWER_RENEW_S


class RunWorkerConsumer(AsyncConsumer):
    """The worker's consumer.  A wake-up on RUNS_CHANNEL: claim what this worker has room
    for.  On the worker's own channel (its runs' ``holder``): the calls of other processes
    for its runs (commands, acts, live-view inputs, MCP tool calls), each carried out and
    answered by dashboard.runs.carry.serve, and the watches of their pages."""

    # Its messages come from the worker's listeners (RunsWorker), never from a channel of
    # the consumer's own: with no layer of its own (an alias that names none) it reads
    # none, which would only end it with an error whenever the layer fails.
    channel_layer_alias = ""

    async def runs_wake(self, message: WakeMessage) -> None:
        await runner.claim_logged()

    async def schedules_due(self, message: SchedulesDueMessage) -> None:
        """A schedule was made due now (Run now): fired as the poll fires it."""
        await schedules.fire_due()

    async def run_command(self, message: CommandMessage) -> None:
        carry.serve(message)

    async def run_act(self, message: ActMessage) -> None:
        carry.serve(message)

    async def run_mcp(self, message: McpMessage) -> None:
        """A tool call of an MCP session (dashboard.api.mcp) served on another process."""
        carry.serve(message)

    async def run_signin(self, message: SigninMessage) -> None:
        """Save a run's sign-in, asked for by a page on another process."""
        carry.serve(message)

    async def run_input(self, message: InputMessage) -> None:
        """A live-view click, key or text from a page on another process."""
        carry.serve(message)

    async def run_cancel(self, message: CancelMessage) -> None:
        """The page that asked for a call is gone: nobody will read its answer."""
        carry.serve_cancel(str(message.get("id")))

    async def run_watch(self, message: WatchMessage) -> None:
        """A page on another process watches (and renews its watch every VIEWER_RENEW_S):
        the run's live view streams to the run's group while it does; a page new here gets
        the latest frame at once."""
        run_id, viewer = int(message["run_id"]), str(message["viewer"])
        frame = runner.watch_remote(run_id, viewer, VIEWER_TTL_S,
                                    view_width(message.get("width")) or 0)  # fmt: skip
        if frame is not None:
            await ring(viewer, frame_message(frame))

    async def run_unwatch(self, message: UnwatchMessage) -> None:
        runner.unwatch_remote(int(message["run_id"]), str(message["viewer"]))


# The worker hands this only what arrives on its channels: RUNS_CHANNEL and its own.
channel_application = RunWorkerConsumer.as_asgi()


class RunsWorker(Worker):
    """Channels' worker on RUNS_CHANNEL and a channel of its own, with the queue polled
    beside them.  Its own channel names it as the holder of the runs it claims, so pages
    on any process reach them (dashboard.runs.consumers).  As a process of its own
    (``runworker``), SIGTERM or Ctrl-C drains it (:func:`drain`)."""

    def run(self) -> None:
        asyncio.run(self._serve_until_stopped())

    async def _serve_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        looplag.watch()  # the worker's loop is watched as daphne's is (dashboard.asgi)
        serving = loop.create_task(self.arun(), name="runs worker")
        stopped = loop.create_task(stop.wait())
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        await drain(serving)

    async def handle(self) -> None:
        # A channel of this process's own, like its sockets' (channels_redis reads all of a
        # process's channels through one list: a second kind would wait its turn), named
        # for the machine and the process so that an operator (or a test) can tell which
        # worker holds what (Run.worker_name).
        own = own_channel(await self.channel_layer.new_channel())
        runner.leases.holder = own  # claims and leases name this channel from now
        self.channels = [*self.channels, own]
        runner.serving = True
        runner.leases.keep()  # sweeps runs of lost workers, even before it drives one
        # The browser starts now, not when the first run is claimed (which then waits
        # only for its context, one opened ahead).
        warming = asyncio.ensure_future(runner.warm())
        poll = asyncio.ensure_future(_poll())
        # The alerts' outbox apart from the poll: a slow receiver never delays a firing.
        sending = asyncio.ensure_future(outbox.serve())
        try:
            await asyncio.gather(*(self._listen(channel) for channel in self.channels))
        finally:
            runner.serving = False
            warming.cancel()
            poll.cancel()
            sending.cancel()
            for instance in self.application_instances.values():
                instance["future"].cancel()

    async def _listen(self, channel: str) -> None:
        """Channels' listener on ``channel``, started again after a channel-layer error
        (Redis restarting, a dropped connection): that must not end the worker, nor the
        runs it drives (the queue poll finds what a lost wake-up would have said)."""
        while True:
            try:
                await self.listener(channel)
            except Exception as exc:
                layer_failed(exc, f"the runs worker's listener on {channel}")
                await asyncio.sleep(LISTEN_AGAIN_S)


def own_channel(fresh: str) -> str:
    """The worker's own channel, made from a ``fresh`` one of the layer's:
    ``<its process prefix>!<host>.worker<pid>`` (a channel name's characters, within its
    100)."""
    host = re.sub(r"[^\w.-]", "-", socket.gethostname())[:40] or "host"
    return f"{fresh.partition('!')[0]}!{host}.worker{os.getpid()}"


async def drain(worker: asyncio.Task[None] | None) -> None:
    """Stop a worker: it claims nothing more; its runs at work go on for the grace period
    (TABWRIGHT_WORKER_GRACE_S), then those still live end failed (interrupted), their
    steps kept; idle conversation tabs close at once (a message restores them)."""
    if worker is not None:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    grace_s = max(0.0, float(settings.TABWRIGHT["WORKER_GRACE_S"]))
    # What is true of this process: a web process that drives no runs says nothing.
    working = sum(1 for run_id in runner.live_ids() if runner.is_working(run_id))
    idle = runner.live_count - working
    said = []
    if working:
        gets = "run at work gets" if working == 1 else "runs at work get"
        said.append(f"{working} {gets} {grace_s} s to end")
    if idle:
        said.append(f"{idle} idle conversation tab{'' if idle == 1 else 's'} close now")
    if said:
        log.info("the runs worker stops: %s", "; ".join(said))
    elif worker is not None:
        log.info("the runs worker stops: no run is live")
    await runner.drain(grace_s)


async def _poll() -> None:
    from dashboard.jobs import (
        batches,  # (they import this module)
    )

    while True:
        await runner.claim_logged()
        await schedules.fire_due()  # a time of a schedule that is due starts its replay
        await batches.advance_all()  # rows whose replay ended unseen (a worker died)
        await schedules.judge_outcomes()  # firings that ended badly: alerts in the outbox
        await asyncio.sleep(QUEUE_POLL_S)


def start_embedded() -> asyncio.Task[None] | None:
    """The worker inside this (web) process, unless TABWRIGHT_EMBEDDED_WORKER=0.  Call it
    in the running event loop."""
    if not settings.TABWRIGHT["EMBEDDED_WORKER"]:
        return None
    worker = RunsWorker(
        application=channel_application, channels=[RUNS_CHANNEL], channel_layer=get_channel_layer()
    )
    return asyncio.get_running_loop().create_task(worker.arun(), name="runs worker")
