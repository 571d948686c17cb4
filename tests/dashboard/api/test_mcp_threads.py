"""/mcp does its sync work (each request's token lookup, its session's run and reads) on
threads of its own, through the whole ASGI application, as pages and sockets do: an MCP
request whose sync work is slow (a flood of them, a database lock) holds neither another
client's request nor the runs' writes, which go to the process's own thread; and the
work that outlives a request (the open sessions' token checks) still gets done."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from channels.testing import HttpCommunicator

import dashboard.asgi as asgi
from dashboard.accounts import services as token_services
from dashboard.api.mcpmount import McpMount
from dashboard.lib.requestthreads import process_task
from dashboard.runs import services as run_services
from tests.dashboard.conftest import ANSWER_S
from tests.dashboard.sockets import stored_events

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio(loop_scope="session")]

HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "a client", "version": "1"},
}}  # fmt: skip


@pytest_asyncio.fixture(loop_scope="session")
async def endpoint(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[McpMount]:
    """/mcp of the whole application, loaded afresh at the test's first request; its MCP
    sessions and their checks stopped at the end (they would outlive the test's data)."""
    mount = asgi._mcp
    monkeypatch.setattr(mount, "_app", None)
    monkeypatch.setattr(mount, "_loading", None)
    yield mount
    app = mount._app
    if app is not None and app._task is not None:
        app._task.cancel()
        await asyncio.gather(app._task, return_exceptions=True)


async def hello(token: str) -> dict[str, Any]:
    """An MCP client's initialize with ``token``, through the whole application: the
    answer (status, headers by name, body)."""
    headers = [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {token}".encode()),
               (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream")]  # fmt: skip
    comm = HttpCommunicator(asgi.application, "POST", "/mcp", json.dumps(HELLO).encode(), headers)
    answer = await comm.get_response(timeout=ANSWER_S)
    await comm.wait(ANSWER_S)  # the request ends after its answer is sent
    return {**answer, "headers": {k.decode(): v.decode() for k, v in answer["headers"]}}


async def token_of(user: Any, name: str) -> tuple[Any, str]:
    return await database_sync_to_async(token_services.api_token_create)(owner=user, name=name)


async def test_an_mcp_request_held_in_its_sync_work_holds_no_other_nor_the_runs_writes(
    endpoint: McpMount, owner: Any, stranger: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One client's request whose token lookup does not end (a database lock; a flood of
    requests, each looked up first) while a run stores an event and another person's
    client opens its session: both are done meanwhile."""
    (_, held_token), (_, other_token) = await token_of(owner, "held"), await token_of(stranger, "b")
    run = await database_sync_to_async(run_services.run_create)(
        owner=stranger, task="click OK", start_url="", planner="rules"
    )
    entered, release = threading.Event(), threading.Event()
    lookup = token_services.api_token_user

    def held(*, secret: str) -> Any:
        if secret == held_token:  # on the held request's thread, until the test ends
            entered.set()
            release.wait(ANSWER_S)
        return lookup(secret=secret)

    monkeypatch.setattr(token_services, "api_token_user", held)
    held_hello = asyncio.ensure_future(hello(held_token))
    try:
        async with asyncio.timeout(ANSWER_S):  # a hang fails, it does not wait forever
            while not entered.is_set():  # noqa: ASYNC110  (the held request is at its lookup)
                await asyncio.sleep(0.01)
            # A run's event, written as a run's session writes them: in a task of the
            # process (dashboard.runs.runner), on the process's own thread.
            write = database_sync_to_async(run_services.run_event_append)
            await process_task(write(run_id=run.pk, seq=1, type="note", data={}))
            other = await hello(other_token)
            assert other["status"] == 200, other
            assert other["headers"]["mcp-session-id"]
        assert not held_hello.done()  # still held all along
    finally:
        release.set()
        (answer,) = await asyncio.gather(held_hello, return_exceptions=True)  # (bounded)
    assert await stored_events(run.pk) == [(1, "note")]
    assert answer["status"] == 200 and answer["headers"]["mcp-session-id"], answer


async def test_the_open_sessions_tokens_are_checked_after_the_request_that_began_it_ended(
    endpoint: McpMount, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's session manager, and the checks of the open sessions' tokens it runs,
    start at the first request to /mcp and go on long after it has ended (with its
    thread): a token revoked then still ends its session at the next check."""
    from dashboard.api import mcp

    monkeypatch.setattr(mcp, "TOKEN_CHECK_S", 0.02)
    token, secret = await token_of(owner, "revoked later")
    answer = await hello(secret)  # the first request: the manager starts, the request ends
    assert answer["status"] == 200, answer
    session_id = answer["headers"]["mcp-session-id"]
    revoke = database_sync_to_async(token_services.api_token_revoke)
    assert await revoke(owner=owner, token_id=token.pk)
    session = endpoint._app._sessions[session_id]
    async with asyncio.timeout(ANSWER_S):
        while session.ended != mcp.REVOKED:  # noqa: ASYNC110  (the next check ends it)
            await asyncio.sleep(0.02)
