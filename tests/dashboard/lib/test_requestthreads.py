"""A request's sync code runs on a thread kept from one request to the next (no thread
started and joined per request), with its SQLite connection, requests at the same time
each on their own, and a task a request starts outlives it with its sync calls still
served (on the process's thread, or on a pooled thread of its own)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator
from django.core.signals import request_finished
from django.db import connection
from django.test import AsyncClient

import dashboard.asgi as asgi
from dashboard.lib.requestthreads import RequestThreads, process_task, thread_task

TIMEOUT_S = 30  # a hang, not a slow answer


def _thread() -> threading.Thread:
    return threading.current_thread()


class App:
    """An ASGI app whose request notes the thread its sync code ran on, holds until told
    (``release``), and may start a task that outlives it (``start``)."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.release = asyncio.Event()
        self.release.set()
        self.start: Any = None
        self.started: list[asyncio.Task[Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.threads.append(await sync_to_async(_thread)())
        await self.release.wait()
        if self.start is not None:
            self.started.append(self.start(self.later()))

    async def later(self) -> threading.Thread:
        await asyncio.sleep(0)  # past the end of the request that started it
        return await sync_to_async(_thread)()


async def test_requests_one_after_another_share_a_thread_and_at_once_each_has_its_own() -> None:
    app = App()
    pooled = RequestThreads(app, keep=1)
    async with asyncio.timeout(TIMEOUT_S):
        await pooled({}, None, None)
        await pooled({}, None, None)
        assert app.threads[0] is app.threads[1] and pooled.idle == 1
        app.release.clear()
        both = [asyncio.ensure_future(pooled({}, None, None)) for _ in range(2)]
        while len(app.threads) < 4:  # noqa: ASYNC110  (each notes its thread, then waits)
            await asyncio.sleep(0.01)
        app.release.set()
        await asyncio.gather(*both)
    assert app.threads[2] is not app.threads[3]
    assert app.threads[0] in app.threads[2:]  # the kept one served one of them
    assert pooled.idle == 1  # the other was let go: keep=1


async def test_many_requests_at_once_start_their_threads_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hundred requests at once, none of them with an idle thread to take: each started
    its thread on the event loop, and a thread's start waits until it runs (on a busy
    machine, the loop was held 615 ms).  They are started off the loop."""
    starts: list[tuple[str, int]] = []  # (the thread started, the thread that started it)
    start = threading.Thread.start

    def noted(thread: threading.Thread) -> None:
        starts.append((thread.name, threading.get_ident()))
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", noted)
    app = App()
    app.release.clear()
    pooled = RequestThreads(app, keep=4)
    async with asyncio.timeout(TIMEOUT_S):
        requests = [asyncio.ensure_future(pooled({}, None, None)) for _ in range(100)]
        while len(app.threads) < 100:  # noqa: ASYNC110  (each notes its thread, then waits)
            await asyncio.sleep(0.01)
        app.release.set()
        await asyncio.gather(*requests)
    assert len(set(app.threads)) == 100  # each its own, at once
    loop = threading.get_ident()
    request_starts = [by for name, by in starts if name.startswith("request")]
    assert len(request_starts) == 100, starts
    assert loop not in request_starts
    assert pooled.idle == 4


async def test_a_task_of_the_process_outlives_the_request_that_started_it() -> None:
    app = App()
    pooled = RequestThreads(app)
    app.start = process_task
    async with asyncio.timeout(TIMEOUT_S):
        await pooled({}, None, None)
        assert await app.started[0] is not app.threads[0]  # not the request's thread
        # A plain task would keep the request's context, and its thread, which asgiref
        # refuses once the request has ended.
        app.start = asyncio.ensure_future
        await pooled({}, None, None)
        with pytest.raises(RuntimeError, match="has exited"):
            await app.started[1]


async def test_a_task_with_a_thread_of_its_own_outlives_its_request_off_the_process_s() -> None:
    """thread_task: a task that outlives its request, whose sync calls go to neither the
    request's thread nor the process's (where the runs' worker writes), but to a pooled
    thread of its own: tasks one after the other share one."""
    app = App()
    pooled = RequestThreads(app)
    app.start = thread_task
    async with asyncio.timeout(TIMEOUT_S):
        await pooled({}, None, None)
        first = await app.started[0]
        await pooled({}, None, None)
        second = await app.started[1]
        process = await process_task(sync_to_async(_thread)())
    assert first is second
    assert first not in (app.threads[0], app.threads[1], process)


async def test_a_thread_still_at_a_call_its_request_gave_up_on_serves_no_other() -> None:
    """A request cancelled (its client gone) while its sync call runs on: the call goes on,
    and the next request's sync code runs on another thread, not after it."""
    stuck, started = threading.Event(), threading.Event()

    def hold() -> threading.Thread:
        started.set()
        stuck.wait(TIMEOUT_S)
        return threading.current_thread()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("hold"):
            await sync_to_async(hold)()

    threads: list[threading.Thread] = []

    async def note(scope: dict[str, Any], receive: Any, send: Any) -> None:
        threads.append(await sync_to_async(_thread)())

    pooled = RequestThreads(app, keep=1)
    try:
        async with asyncio.timeout(TIMEOUT_S):
            given_up = asyncio.ensure_future(pooled({"hold": True}, None, None))
            while not started.is_set():  # noqa: ASYNC110  (the call has begun on its thread)
                await asyncio.sleep(0.01)
            given_up.cancel()
            with pytest.raises(asyncio.CancelledError):
                await given_up
            assert pooled.idle == 0  # not kept: it is still at the call
            pooled.app = note
            await pooled({}, None, None)  # would wait on the stuck call with the old pool
            await pooled({}, None, None)
    finally:
        stuck.set()
    assert threads[0] is threads[1] and pooled.idle == 1  # a new one, kept


@pytest.mark.django_db(transaction=True)
async def test_the_dashboards_requests_reuse_their_thread_and_its_connection(owner: Any) -> None:
    client = AsyncClient()
    await client.aforce_login(owner)  # a session: the act view reads it, its user and run
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken={'x' * 32}"
    seen: list[tuple[threading.Thread, Any, float | None]] = []

    def noted(**_kwargs: Any) -> None:  # a sync receiver: on the request's thread, once
        # Django has closed the connection by now, unless it keeps it (close_at None).
        seen.append((threading.current_thread(), connection.connection, connection.close_at))

    request_finished.connect(noted)
    try:
        for _ in range(2):
            comm = HttpCommunicator(asgi.application, "POST", "/runs/0/act", body=b"{}", headers=[
                (b"host", b"127.0.0.1"), (b"cookie", cookie.encode()), (b"x-csrftoken", b"x" * 32),
            ])  # fmt: skip
            assert (await comm.get_response(timeout=TIMEOUT_S))["status"] == 404
            await comm.wait(TIMEOUT_S)  # the request ends after its answer is sent
    finally:
        request_finished.disconnect(noted)
    (first, kept, closes), (second, again, _) = seen
    assert first is second  # one thread for both
    if connection.vendor == "sqlite":
        assert kept is not None and kept is again and closes is None  # one connection, kept
    else:  # a database server's connection holds one of its slots: closed at each end
        assert kept is None and again is None
