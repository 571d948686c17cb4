"""The run's one writer: each engine event becomes rows (RunEvent, Step, the run's
status and session), files (screenshots, through the storage API) and a channel-layer message to
the group ``run_<id>`` that the run's open pages have joined, in that order.  The message is
a doorbell (dashboard.runs.doorbell): one that can't be sent is dropped and the run goes on;
its pages read what they missed from the database when they reconnect."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from channels.db import database_sync_to_async
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import IntegrityError
from django.urls import reverse

from automation.errors import Cancelled
from automation.events import (
    Event,
    LLMMessage,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStarted,
    ScreenshotTaken,
    SessionClosed,
    SessionRestored,
    SessionRestoring,
    StepRecorded,
    StepReplayed,
)
from automation.limits import fit
from automation.secrets import Secrets
from dashboard.models import Run
from dashboard.runs import selectors
from dashboard.runs import services as run_services
from dashboard.runs.doorbell import ring_group
from dashboard.runs.messages import event_message, queue_message
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios import services as scenario_services

__all__ = ["DashboardSink", "announce_queue", "group_name", "relay_event"]

# Events stamped with the server's time (``at_ms``, epoch ms): a model call's wait, retry
# and answer.
TIMED_EVENTS = frozenset({"llm.waiting", "llm.retry", "llm.message"})


def group_name(run_id: int) -> str:
    return f"run_{run_id}"


async def relay_event(run_id: int, event: dict[str, Any]) -> None:
    """A stored event of the run said by no sink of its (a sweep, a stop or a message while
    no worker drives it), to the run's open pages."""
    await ring_group(group_name(run_id), event_message(event))


async def announce_queue() -> None:
    """Tell the open pages of every queued run its place in the queue (it moved)."""
    for run_id, place in await database_sync_to_async(selectors.run_queue_positions)():
        await ring_group(group_name(run_id), queue_message(place))


class DashboardSink:
    """Stores, numbers and relays one run's events.  Serialised: the loop and the person's
    replies emit from different tasks, and the sequence numbers must match the store."""

    def __init__(
        self,
        run_id: int,
        next_seq: int,
        *,
        scenario_id: int | None = None,
        stretch: int = 0,
        holder: str | None = None,
        worker: str = "",
        secrets: Secrets | None = None,
    ) -> None:
        self.run_id = run_id
        # The run's secrets: a mark of each password it typed literally is kept
        # (run_passwords_mark) before the event that shows it masked.
        self.secrets = secrets
        self._marked: set[str] = set()  # its hidden passwords marked so far
        self.worker = worker  # its name: each stretch's run.started says where it ran
        # The worker whose lease the run is under (None: leases are off).  A status it
        # can't write as the holder means the run was queued again for another worker
        # (its lease ran out before it started): from then on nothing more is written, and
        # the emit that found out raises Cancelled, so this worker stops driving it.
        self.holder = holder
        self.fenced = False
        self.scenario_id = scenario_id  # a replay: where its healed identities go
        self._callees: dict[str, int] | None = None  # the scenarios it calls, by name
        # What its steps found changed, each with the scenario it goes to: written once
        # the replay ends (see _write_heals).
        self._heals: list[tuple[int, dict[str, Any]]] = []
        self._seq = next_seq
        # The conversation's stretch of work (1: the first message's): each stored event
        # and step says which it belongs to.
        self.stretch = stretch
        self._lock = asyncio.Lock()
        self.status = ""  # the latest status it set (the run's, as stored)

    async def emit(self, event: Event) -> None:
        async with self._lock:
            if self.fenced:
                return
            if isinstance(event, RunStarted):
                self.stretch += 1
            data = event.to_dict()
            if isinstance(event, RunStarted) and self.worker:
                data["worker"] = self.worker
            data["stretch"] = max(1, self.stretch)
            if event.type in TIMED_EVENTS:
                # The server's clock: the run page counts a wait from here, also after a
                # reload, and tells a finished round how long the model took.
                data["at_ms"] = int(time.time() * 1000)
            if isinstance(event, ScreenshotTaken):
                data["src"] = await self._save_screenshot(event)
            await self._mark_passwords()
            if isinstance(event, StepRecorded):
                await database_sync_to_async(run_services.step_record)(
                    run_id=self.run_id, data=data
                )
            if isinstance(event, LLMMessage) and event.usage:
                await database_sync_to_async(run_services.run_usage_add)(
                    run_id=self.run_id, usage=event.usage
                )
            scenario_id = await self._scenario_of(event)
            if isinstance(event, StepReplayed) and scenario_id is not None:
                await database_sync_to_async(scenario_services.scenario_step_replayed)(
                    scenario_id=scenario_id, outcome=data, run_id=self.run_id
                )
                if event.heal:
                    self._heals.append((scenario_id, dict(data)))
            if isinstance(event, RunFinished):
                await self._write_heals(succeeded=event.status == Run.Status.SUCCEEDED)
            if isinstance(event, SessionClosed):
                await database_sync_to_async(run_services.run_set_session)(
                    run_id=self.run_id, session=Run.Session.CLOSED, reason=event.reason
                )
            status = _status_change(event)
            # One event is one message to the page, stored and relayed within its limit.
            data = fit(_jsonable(data))
            # A status and the event that changes it are written together: who reads the
            # run ended also reads how (run.finished), never one without the other.
            held = await self._store(event.type, data, status) if event.persist else True
            if status is not None and not event.persist:
                held = await database_sync_to_async(run_services.run_set_status)(
                    run_id=self.run_id, holder=self.holder, **status
                )
            if not held:
                self.fenced = True
                raise Cancelled(f"run {self.run_id}: this worker no longer holds it")
            if status is not None:
                self.status = status["status"]
            await ring_group(group_name(self.run_id), event_message(data))

    async def _write_heals(self, *, succeeded: bool) -> None:
        """Keep what the replay's steps found changed, once it ended: written unasked
        only where it succeeded (scenario_services.heal_record)."""
        heals, self._heals = self._heals, []
        for scenario_id, data in heals:
            await database_sync_to_async(scenario_services.heal_record)(
                scenario_id=scenario_id, outcome=data, run_id=self.run_id, succeeded=succeeded
            )

    async def _mark_passwords(self) -> None:
        hidden = self.secrets.hidden() if self.secrets is not None else []
        new = [value for value in hidden if value not in self._marked]
        if new:
            await database_sync_to_async(run_services.run_passwords_mark)(
                run_id=self.run_id, values=new
            )
            self._marked.update(new)

    async def _scenario_of(self, event: Event) -> int | None:
        """The stored scenario a replayed step is a step of: the replay's, or one it
        called (the step's healed identity goes there, for every caller of it)."""
        if not isinstance(event, StepReplayed) or not event.scenario or self.scenario_id is None:
            return self.scenario_id
        if self._callees is None:
            self._callees = await database_sync_to_async(scenario_selectors.scenario_callee_ids)(
                scenario_id=self.scenario_id
            )
        return self._callees.get(event.scenario)

    async def _store(
        self, kind: str, data: dict[str, Any], status: dict[str, Any] | None = None
    ) -> bool:
        """Store the event as the run's next one, with the ``status`` it sets, if any;
        False when the run's status is no longer this worker's to set (nothing stored).
        Another process may have appended one meanwhile (it declared the run lost): then
        this one goes after it."""
        for _ in range(2):
            self._seq += 1
            data["seq"] = self._seq
            try:
                if status is None:
                    await database_sync_to_async(run_services.run_event_append)(
                        run_id=self.run_id, seq=self._seq, type=kind, data=data
                    )
                    return True
                return await database_sync_to_async(run_services.run_set_status_with_event)(
                    run_id=self.run_id, holder=self.holder, status=status, seq=self._seq,
                    type=kind, data=data,
                )  # fmt: skip
            except IntegrityError as exc:
                last = await database_sync_to_async(selectors.run_last_seq)(run_id=self.run_id)
                if last < self._seq:  # the number was free: the row itself was refused
                    raise RuntimeError(
                        f"run {self.run_id}: the database refused its {kind} event: {exc}"
                    ) from exc
                self._seq = last
        raise RuntimeError(f"run {self.run_id}: no free event number after {self._seq}")

    async def _save_screenshot(self, event: ScreenshotTaken) -> str:
        name = f"runs/{self.run_id}/step-{event.step_index}.jpg"
        stored = await asyncio.to_thread(_store_file, name, event.jpeg)
        await database_sync_to_async(run_services.step_attach_screenshot)(
            run_id=self.run_id, index=event.step_index, path=stored
        )
        return reverse("run_screenshot", args=[self.run_id, event.step_index])


def _store_file(name: str, data: bytes) -> str:
    """Through Django's storage API (STORAGES["default"]: MEDIA_ROOT unless configured),
    so every process of the dashboard sees the file; a step tried again replaces its
    picture.  Returns the name it was stored under."""
    storage = storages["default"]
    if storage.exists(name):
        storage.delete(name)
    return storage.save(name, ContentFile(data))


def _status_change(event: Event) -> dict[str, Any] | None:
    # A closed conversation's page being restored is work under way: its steps replay
    # (``pending`` means nothing of the run's work has started: dashboard.runs.services).
    if isinstance(event, RunStarted | RunResumed | SessionRestoring):
        return {"status": Run.Status.RUNNING}
    if isinstance(event, RunPaused):
        return {"status": Run.Status.PAUSED, "reason": f"{event.reason}: {event.detail}"}
    if isinstance(event, SessionRestored) and not event.ok:
        # The message's work never started: the status says how the restore ended, not
        # "paused" by a pause of the restore's that nobody can answer any more.
        status = Run.Status.STOPPED if event.stopped else Run.Status.FAILED
        return {"status": status, "reason": f"the page was not restored: {event.reason}"}
    if isinstance(event, RunFinished):
        return {
            "status": event.status,
            "reason": event.reason,
            "summary": event.summary,
            "output": event.output,
        }
    return None


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not isinstance(v, bytes)}
