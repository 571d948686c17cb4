"""Each run page's socket does its sync work (its session's lookup, its checks, its
backlog's reads) on a thread of its own, through the whole ASGI application: a socket
whose work is slow holds neither another person's socket nor the runs' writes, which
go to the process's own thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from dashboard.asgi import application
from dashboard.lib.requestthreads import process_task
from dashboard.models import Run
from dashboard.runs import selectors, services
from tests.dashboard.conftest import Socket
from tests.dashboard.sockets import ANSWER_S, of_type, receive_until, stored_events

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = "http://127.0.0.1:8000"  # the dashboard as the browser reached it


class Pages:
    """Run pages' sockets on the whole ASGI application, each with a person's session;
    every one disconnected at the end."""

    def __init__(self) -> None:
        self.opened: list[WebsocketCommunicator] = []

    def socket(self, run: Run, session: str) -> WebsocketCommunicator:
        headers = [(b"host", b"127.0.0.1:8000"), (b"origin", ORIGIN.encode()),
                   (b"cookie", f"sessionid={session}".encode())]  # fmt: skip
        comm = Socket(application, f"/ws/runs/{run.pk}/", headers=headers)
        self.opened.append(comm)
        return comm


@pytest_asyncio.fixture(loop_scope="session")
async def pages() -> AsyncIterator[Pages]:
    opened = Pages()
    yield opened
    for comm in opened.opened:
        if not comm.future.done():
            await comm.disconnect()


async def session_of(user: Any) -> str:
    client = Client()
    await sync_to_async(client.force_login)(user)
    return client.cookies["sessionid"].value


async def run_of(user: Any) -> Run:
    return await sync_to_async(services.run_create)(
        owner=user, task="click OK", start_url="", planner="rules"
    )


async def test_a_socket_held_in_its_sync_work_holds_no_other_socket_nor_the_runs_writes(
    pages: Pages, owner: Any, stranger: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One person's page whose sync work does not end (a slow read of a long backlog, a
    database lock) while another person's page connects and a run stores an event: both
    are done meanwhile."""
    held_run, other_run = await run_of(owner), await run_of(stranger)
    held_session, other_session = await session_of(owner), await session_of(stranger)
    entered, release = threading.Event(), threading.Event()
    can_view = selectors.run_can_view

    def held(*, user: Any, id: int) -> bool:
        if id == held_run.pk:  # on the held socket's thread, until the test ends
            entered.set()
            release.wait(ANSWER_S)
        return can_view(user=user, id=id)

    monkeypatch.setattr(selectors, "run_can_view", held)
    held_page = pages.socket(held_run, held_session)
    connecting = asyncio.ensure_future(held_page.connect())
    try:
        async with asyncio.timeout(ANSWER_S):  # a hang fails, it does not wait forever
            while not entered.is_set():  # noqa: ASYNC110  (the held socket is at its check)
                await asyncio.sleep(0.01)
            other_page = pages.socket(other_run, other_session)
            assert (await other_page.connect())[0]
            state = (await receive_until(other_page, of_type("state")))[-1]
            assert state["status"] == Run.Status.QUEUED
            # A run's event, written as a run's session writes them: in a task of the
            # process (dashboard.runs.runner), on the process's own thread.
            write = database_sync_to_async(services.run_event_append)
            await process_task(write(run_id=other_run.pk, seq=1, type="note", data={}))
        assert not connecting.done()  # still held all along
    finally:
        release.set()
    assert (await connecting)[0]
    assert (await receive_until(held_page, of_type("state")))[-1]["status"] == Run.Status.QUEUED
    assert await stored_events(other_run.pk) == [(1, "note")]
