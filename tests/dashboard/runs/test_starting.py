"""What the person does as a run starts: a stop or a message that comes while the worker
has claimed the run and is still reading it from the database (not live yet), or while
its tab opens (live, its work not begun), reaches the run as it would a moment later.
A real Chromium against a page on 127.0.0.1, the real runner and database; the moment is
held open by making one of the start's own steps wait for the test."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from channels.testing import WebsocketCommunicator

from dashboard.models import Run, Step
from dashboard.runs import selectors as run_selectors
from dashboard.runs.runner import RunManager, runner
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.sockets import (
    ANSWER_S,
    connected_socket,
    load_run,
    of_type,
    one,
    receive_until,
    types,
)

pytestmark = pytest.mark.django_db(transaction=True)

NEVER = "wait for Text that never appears"
NAME_TASK = "type Ada Lovelace into Name"
EMAIL_TASK = "type ada@example.org into Email"
STOPPED = "stopped by the person"

until = functools.partial(receive_until, skip=frozenset({"frame", "llm.token"}))


@dataclass
class Starting:
    """A run started in the background, held at one of its start's steps until
    :meth:`release`."""

    run: Run
    comm: WebsocketCommunicator
    task: asyncio.Task[Any]
    go_on: threading.Event

    def release(self) -> None:
        self.go_on.set()

    async def started(self) -> None:
        """The start is over (live, or ended), within the answer's time."""
        self.release()
        async with asyncio.timeout(ANSWER_S):
            await self.task


@pytest_asyncio.fixture(loop_scope="session")
async def start_held(
    runs: Runs,
    open_socket: OpenSocket,
    owner: Any,
    fixture_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Callable[..., Any]]:
    """``await start_held(task, at)``: a run of ``task`` on the demo form, watched, started
    in the background and held ``at`` "claimed" (its start reads the database: the run is
    claimed, not live here yet) or "opening" (live, its tab opening)."""
    held: list[Starting] = []

    async def start(task: str, at: str) -> Starting:
        reached, go_on = threading.Event(), threading.Event()
        if at == "claimed":
            last_seq = run_selectors.run_last_seq

            def slow_last_seq(**kw: Any) -> int:
                reached.set()
                go_on.wait(ANSWER_S)
                return last_seq(**kw)

            monkeypatch.setattr(run_selectors, "run_last_seq", slow_last_seq)
        else:
            new_tab = RunManager.new_tab

            async def slow_new_tab(self: RunManager, live: Any) -> Any:
                reached.set()
                await asyncio.to_thread(go_on.wait, ANSWER_S)
                return await new_tab(self, live)

            monkeypatch.setattr(RunManager, "new_tab", slow_new_tab)
        run = await runs.create(owner=owner, task=task, start_url=f"{fixture_url}/demo/form.html")
        comm = await connected_socket(open_socket, run, owner)
        await until(comm, of_type("state"))
        starting = Starting(run, comm, asyncio.create_task(runs.start(run)), go_on)
        held.append(starting)
        assert await asyncio.to_thread(reached.wait, ANSWER_S), f"the start never got {at}"
        assert runner.is_live(run.pk) == (at == "opening")
        return starting

    yield start
    for starting in held:
        starting.release()
        async with asyncio.timeout(ANSWER_S):
            await asyncio.gather(starting.task, return_exceptions=True)


@pytest.mark.parametrize("at", ["claimed", "opening"])
async def test_a_stop_as_the_run_starts_stops_it(start_held: Any, at: str) -> None:
    """Stop pressed a moment after Start: the run ends stopped, by the person, before
    any of its work (not refused as not live, not forgotten once the work begins)."""
    starting = await start_held(NEVER, at)
    stop = asyncio.create_task(runner.command(starting.run.pk, "stop"))
    await starting.started()
    async with asyncio.timeout(ANSWER_S):
        await stop  # answered once the run is live: no LookupError
    ended = await until(starting.comm, of_type("run.finished"))
    assert ended[-1]["status"] == "stopped", ended[-1]
    assert ended[-1]["reason"] == STOPPED
    assert not [m for m in ended if m["type"] == "action.started" and m["name"] == "wait_for"]
    assert (await load_run(starting.run.pk)).status == Run.Status.STOPPED


async def test_a_message_as_the_run_starts_is_read_by_its_model(start_held: Any) -> None:
    """A message written while the worker is still starting the run goes to that run
    (shown once, and its model reads it at its next round: the rule planner does what it
    says), not to a second session of the same conversation started beside it."""
    starting = await start_held(NAME_TASK, "claimed")
    said = asyncio.create_task(runner.message(starting.run.pk, EMAIL_TASK))
    await starting.started()
    async with asyncio.timeout(ANSWER_S):
        await said
    session = await until(starting.comm, of_type("session.closed"))
    assert types(session).count("run.started") == 1, types(session)
    assert [m["text"] for m in session if m["type"] == "user.message"] == [EMAIL_TASK]
    assert one(session, "user.seen")["count"] == 1
    assert one(session, "run.finished")["status"] == "succeeded"
    async with asyncio.timeout(ANSWER_S):
        await runner.wait_closed(starting.run.pk)
    steps = [
        (s.index, s.action, s.stretch)
        async for s in Step.objects.filter(run_id=starting.run.pk).order_by("index")
    ]
    assert steps == [(0, "navigate", 1), (1, "type", 1), (2, "type", 1)]  # both, in one stretch
