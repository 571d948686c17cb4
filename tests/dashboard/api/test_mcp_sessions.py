"""The dashboard's MCP sessions (dashboard/api/mcp.py) and their runs: one run per session,
however many first calls come at once; a session whose client goes (it ends the session,
or loses the event stream it kept open) has its run ended, saying why, a queued one
stopped before any browser opens for nobody; a session the SDK has let go is forgotten,
its run ended."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest
from channels.db import database_sync_to_async

from automation import Budget
from dashboard.accounts import services as token_services
from dashboard.api import mcp
from dashboard.lib.requestthreads import RequestThreads
from dashboard.models import Run
from dashboard.runs.doorbell import wake
from dashboard.runs.runner import RunManager
from dashboard.runs.services import stopped_by
from tests.dashboard.api.test_api import api, refused, token_of
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.sockets import (
    connected_socket,
    load_run,
    of_type,
    receive_until,
    stored_events,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio(loop_scope="session")]

HANG_S = 60  # bounds a wait that would otherwise hang; it ends when the run has ended
OPENED = {"status": 200, "headers": [(b"content-type", b"text/event-stream")]}


def app_with(owner: Any, *session_ids: str) -> mcp.McpApp:
    """An app that saw ``session_ids`` opened by ``owner`` (their initialize answered)."""
    app = mcp.McpApp()
    app._manager = SimpleNamespace(session_idle_timeout=1800)  # type: ignore[assignment]
    for session_id in session_ids:
        opened = {"status": 200, "headers": [(b"mcp-session-id", session_id.encode())]}
        app._answered("", None, "POST", owner.pk, opened)
    return app


def exchange_of(body: bytes) -> tuple[Any, Any, list[dict[str, Any]]]:
    """An ASGI receive that gives ``body`` in 64 KiB messages, a send, and what it sent."""
    chunks = [{"body": body[at : at + 65_536], "more_body": at + 65_536 < len(body)}
              for at in range(0, len(body), 65_536)]  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", **chunks.pop(0)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    return receive, send, sent


async def mcp_runs() -> list[tuple[int, str, str]]:
    rows = Run.objects.filter(kind=Run.Kind.MCP).order_by("pk")
    return await database_sync_to_async(list)(rows.values_list("pk", "status", "status_reason"))


async def ended(app: mcp.McpApp, run_id: int) -> tuple[str, str]:
    """The run's final status and reason, once the app's tasks that end runs are done too
    (one still telling the queue would hold the database the test's teardown flushes)."""
    async with asyncio.timeout(HANG_S):
        while True:
            await asyncio.gather(*app._ending)
            row = next(row for row in await mcp_runs() if row[0] == run_id)
            if row[1] in Run.FINAL and all(task.done() for task in app._ending):
                return row[1], row[2]
            await asyncio.sleep(0.02)  # a session found gone later starts its end then


async def test_first_calls_that_come_together_share_their_session_s_one_run(owner: Any) -> None:
    app = app_with(owner, "a", "b")
    first = [app._run_of(app._sessions[s], owner, "a client") for s in ("a", "b", "a", "b", "a")]
    ids = await asyncio.gather(*first)
    assert ids[0] == ids[2] == ids[4] != ids[1] == ids[3]
    assert [pk for pk, _status, _reason in await mcp_runs()] == sorted({ids[0], ids[1]})


async def test_a_session_its_client_ends_stops_its_queued_run_and_says_so(owner: Any) -> None:
    """And, over, it takes no message as docs/api.md says: 409 ``refused`` (its client
    never reads one).  It answered 400 ``action_invalid``, as a malformed request does,
    while a live one answered 409."""
    app = app_with(owner, "s")
    session = app._sessions["s"]
    run_id = await app._run_of(session, owner, "a client")
    app._began(session)
    app._ended("s", session, "DELETE", 200)
    assert await ended(app, run_id) == (Run.Status.STOPPED, mcp.ENDED_BY_CLIENT)
    assert session.ended == mcp.ENDED_BY_CLIENT  # its later calls answer session_ended
    client = api(await database_sync_to_async(token_of)(owner))
    said = await client.post(f"/api/runs/{run_id}/messages", {"text": "fill in Email too"})
    error = refused(said, 409, "refused")
    assert "this run is over, and an MCP session takes no messages" in error["message"]
    assert "start a new session from the MCP client" in error["message"]
    assert await ended(app, run_id) == (Run.Status.STOPPED, mcp.ENDED_BY_CLIENT)


async def test_a_client_that_loses_its_event_stream_has_gone(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp, "CLIENT_GONE_S", 0.05)
    app = app_with(owner, "kept", "streamed")
    runs = {s: await app._run_of(app._sessions[s], owner, "a client") for s in app._sessions}
    for session_id, session in app._sessions.items():
        app._began(session)
        app._answered(session_id, session, "GET" if session_id == "streamed" else "POST", 0, OPENED)
    for session_id, session in app._sessions.items():
        app._ended(session_id, session, "GET" if session_id == "streamed" else "POST", 200)
    assert await ended(app, runs["streamed"]) == (Run.Status.STOPPED, mcp.WENT_AWAY)
    # A client that keeps no stream is between calls, not gone: its run waits on.
    assert app._sessions["kept"].ended == ""
    assert (await database_sync_to_async(Run.objects.get)(pk=runs["kept"])).status == "queued"


async def test_a_live_session_s_end_says_who_ended_it_and_it_takes_no_message_nor_extend(
    owner: Any, runs: Runs, worker: RunManager, fixture_url: str, open_socket: OpenSocket
) -> None:
    """Sessions whose tabs are open: one its client ends says so; one the person closes
    (the API's close, the page's whatever words the page sends) or stops ends stopped by
    them ("stopped by the person", whoever it was, before), which
    its client's next call is told (it said the client ended it).  A message (the client
    never reads one) and an extend (a session has no round cap) are refused, saying why,
    on the API and on the page: nothing is stored (they answered 200 and did nothing)."""
    app = app_with(owner, "left", "closed", "closed on the page", "stopped")
    run_ids = {s: await app._run_of(app._sessions[s], owner, "a client") for s in app._sessions}
    await wake()
    for run_id in run_ids.values():
        await runs.claimed(run_id)
        budget = Budget(HANG_S * 1000)
        url = f"{fixture_url}/demo/form.html"
        opened = await worker.mcp_call(run_id, "navigate", {"url": url}, budget=budget)
        assert opened["ok"], opened
    session = app._sessions["left"]
    app._began(session)
    app._ended("left", session, "DELETE", 200)
    assert await ended(app, run_ids["left"]) == (Run.Status.STOPPED, mcp.ENDED_BY_CLIENT)

    run_id = run_ids["closed"]
    client = api(await database_sync_to_async(token_of)(owner))
    said = await client.post(f"/api/runs/{run_id}/messages", {"text": "fill in Email too"})
    assert "an MCP session takes no messages" in refused(said, 409, "refused")["message"]
    more = await client.post(f"/api/runs/{run_id}/extend", {"rounds": 5})
    assert "no round cap to extend" in refused(more, 409, "refused")["message"]
    paused = await client.post(f"/api/runs/{run_id}/pause")
    assert paused.status_code == 200, paused.content
    answer = await client.post(f"/api/runs/{run_id}/reply", {"text": "done, go on"})
    assert "takes no reply" in refused(answer, 409, "refused")["message"]
    assert "user.message" not in {kind for _seq, kind in await stored_events(run_id)}
    closed = await client.post(f"/api/runs/{run_id}/close")
    assert closed.status_code == 200, closed.content
    # Its status reason is what the client's next call is told (mcp._session_ended).
    assert await ended(app, run_id) == (Run.Status.STOPPED, stopped_by(owner))
    late = await client.post(f"/api/runs/{run_id}/messages", {"text": "fill in Email too"})
    assert "an MCP session takes no messages" in refused(late, 409, "refused")["message"]

    run_id = run_ids["closed on the page"]
    page = await connected_socket(open_socket, await load_run(run_id), owner)
    await page.send_json_to({"command": "message", "text": "fill in Email too"})
    error = (await receive_until(page, of_type("error")))[-1]
    assert "an MCP session takes no messages" in error["message"], error
    await page.send_json_to({"command": "extend", "rounds": 5})
    error = (await receive_until(page, of_type("error")))[-1]
    assert "no round cap to extend" in error["message"], error
    await page.send_json_to({"command": "close", "text": mcp.ENDED_BY_CLIENT})
    assert await ended(app, run_id) == (Run.Status.STOPPED, stopped_by(owner))

    stopped = await client.post(f"/api/runs/{run_ids['stopped']}/stop")  # as a stop says
    assert stopped.status_code == 200, stopped.content
    assert await ended(app, run_ids["stopped"]) == (Run.Status.STOPPED, stopped_by(owner))


async def test_a_session_s_run_is_made_and_ended_after_the_requests_that_began_it_ended(
    owner: Any,
) -> None:
    """A session's first call whose client goes while its run is being made (another call
    of the session waits for that run), and a client's end of the session (the DELETE's
    answer is sent before its run is stopped): each request's thread is gone before the
    run is made, or stopped, and neither is left undone."""
    app = app_with(owner, "s")
    session = app._sessions["s"]
    first: list[asyncio.Future[int]] = []

    async def first_call(scope: Any, receive: Any, send: Any) -> None:
        first.append(asyncio.ensure_future(app._run_of(session, owner, "a client")))
        while session.run is None:  # noqa: ASYNC110  (the call has begun making the run)
            await asyncio.sleep(0)
        # ... and its client goes: the request ends here.

    async def client_ends(scope: Any, receive: Any, send: Any) -> None:
        app._began(session)
        app._ended("s", session, "DELETE", 200)

    async with asyncio.timeout(HANG_S):
        await RequestThreads(first_call)({}, None, None)
        run_id = await app._run_of(session, owner, "a client")  # the session's next call
        assert await first[0] == run_id
        await RequestThreads(client_ends)({}, None, None)
    assert await ended(app, run_id) == (Run.Status.STOPPED, mcp.ENDED_BY_CLIENT)


async def test_a_tool_call_is_served_after_the_request_that_brought_it_ended(
    owner: Any,
) -> None:
    """The SDK goes on with a tool call whose request has ended (its client gone): the
    call's sync work is still served, on a thread that is not the request's."""
    app = app_with(owner, "s")
    app._sessions["s"].ended = mcp.ENDED_BY_CLIENT  # answered after the token's lookup
    _, secret = await database_sync_to_async(token_services.api_token_create)(
        owner=owner, name="client"
    )
    headers = [(b"authorization", f"Bearer {secret}".encode()), (b"mcp-session-id", b"s")]
    ctx = SimpleNamespace(request=SimpleNamespace(scope={"headers": headers}), session=None)
    calls: list[asyncio.Future[Any]] = []

    async def brought(scope: Any, receive: Any, send: Any) -> None:
        calls.append(asyncio.ensure_future(app._call(ctx, "snapshot", {})))  # ... and ends

    async with asyncio.timeout(HANG_S):
        await RequestThreads(brought)({}, None, None)
        answer = await calls[0]
    assert not answer.ok and answer.text.startswith("error session_ended"), answer


async def test_a_stream_opened_again_in_time_keeps_the_session(owner: Any) -> None:
    app = app_with(owner, "s")
    session = app._sessions["s"]
    app._began(session)
    app._answered("s", session, "GET", 0, OPENED)
    app._ended("s", session, "GET", 200)  # the stream dropped ...
    assert session.gone_check is not None
    app._began(session)  # ... and the client opened it again
    assert session.gone_check is None and not session.ended


async def test_a_session_the_sdk_let_go_is_forgotten_and_its_run_ended(owner: Any) -> None:
    app = app_with(owner, "old")
    run_id = await app._run_of(app._sessions["old"], owner, "a client")
    app._sessions["old"].seen = time.monotonic() - 2 * 1800  # no request since
    opened = {"status": 200, "headers": [(b"mcp-session-id", b"new")]}
    app._answered("", None, "POST", owner.pk, opened)  # a new session: the expired go
    assert set(app._sessions) == {"new"}
    status, reason = await ended(app, run_id)
    assert status == Run.Status.STOPPED and reason.startswith("the MCP session expired"), reason


async def test_a_session_starts_with_the_sign_in_profile_its_header_names(owner: Any) -> None:
    from dashboard.runs.signins import SigninRefused, signin_save

    app = app_with(owner, "s", "t")
    with pytest.raises(SigninRefused, match="no sign-in profile 'shop'"):
        await app._run_of(app._sessions["s"], owner, "a client", "shop")
    assert await mcp_runs() == []  # refused before a run was made
    profile = await database_sync_to_async(signin_save)(
        owner_id=owner.pk, name="shop", state={"cookies": [], "origins": []}
    )
    run_id = await app._run_of(app._sessions["t"], owner, "a client", "shop")
    run = await Run.objects.aget(pk=run_id)
    assert run.signin_profile_id == profile.pk
    app._end("t", "the test ended")
    await ended(app, run_id)


async def test_one_person_s_open_sessions_are_capped_and_another_s_are_not(
    owner: Any, django_user_model: Any
) -> None:
    """A client that opens sessions without end (an initialize each, no tool call, so no
    browser) is refused past MAX_OPEN_SESSIONS: it fills no table another person's
    clients need.  An ended session leaves room."""
    ids = [f"s{i}" for i in range(mcp.MAX_OPEN_SESSIONS)]
    app = app_with(owner, *ids)
    _, secret = await database_sync_to_async(token_services.api_token_create)(
        owner=owner, name="client"
    )
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/mcp",
             "headers": [(b"authorization", f"Bearer {secret}".encode())]}  # fmt: skip
    await app(scope, receive, send)
    assert sent[0]["status"] == 429
    assert "too many open MCP sessions" in json.loads(sent[1]["body"])["error"]["message"]
    other = await database_sync_to_async(django_user_model.objects.create_user)(
        username="bob", password="bob-password-1"
    )
    assert not app._over_cap(other.pk)
    app._end("s0", mcp.ENDED_BY_CLIENT)
    assert not app._over_cap(owner.pk)


async def test_a_session_whose_token_is_revoked_ends_though_its_client_sends_nothing(
    owner: Any,
) -> None:
    """Its client keeps the event stream open and sends nothing: the revoke is heard at
    the next check of the open sessions' tokens (every TOKEN_CHECK_S), not at the idle
    timeout half an hour later.  A session of another token of the same person goes on."""
    made = database_sync_to_async(token_services.api_token_create)
    (revoked, first), (_kept, second) = (
        await made(owner=owner, name="a"),
        await made(owner=owner, name="b"),
    )
    app = app_with(owner)
    for session_id, token in (("a", first), ("b", second)):
        opened = {"status": 200, "headers": [(b"mcp-session-id", session_id.encode())]}
        app._answered("", None, "POST", owner.pk, opened, token=token)
    runs = {s: await app._run_of(app._sessions[s], owner, "a client") for s in ("a", "b")}
    await app._check_tokens()  # both valid: nothing ends
    assert not app._sessions["a"].ended and not app._sessions["b"].ended
    assert await database_sync_to_async(token_services.api_token_revoke)(
        owner=owner, token_id=revoked.pk
    )
    await app._check_tokens()
    assert await ended(app, runs["a"]) == (Run.Status.STOPPED, mcp.REVOKED)
    assert app._sessions["a"].ended == mcp.REVOKED and not app._sessions["b"].ended


@pytest.mark.parametrize(
    ("body", "request_id"),
    [(b'{"jsonrpc": "2.0", "id": 7, "method": "server/discover"}', 7),
     (b"[" * 5_000 + b"]" * 5_000, None),  # Python's parser: a RecursionError, a crash
     (b'{"id": 8, "x": "' + b"y" * (2 << 20) + b'"}', None)],  # past the probe: not read
    ids=["plain", "nested-too-deep", "too-large"],
)  # fmt: skip
async def test_a_stateless_request_is_refused_whatever_its_body(
    body: bytes, request_id: Any
) -> None:
    receive, send, sent = exchange_of(body)

    await mcp._refuse_stateless("2026-07-28", receive, send)
    assert sent[0]["status"] == 400
    answer = json.loads(sent[1]["body"])
    assert answer["id"] == request_id and "session-based" in answer["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status", "told"),
    [(b"[" + b"[]," * 200_000 + b"[]]", 400, "at most 20000"),  # under 1 MiB, 200,000 arrays
     (b'{"id": 1, "x": "' + b"y" * (mcp.MAX_REQUEST_BYTES + 1) + b'"}', 413, "at most"),
     (b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}', 200, "")],
    ids=["too-many-values", "too-large", "plain"],
)  # fmt: skip
async def test_a_request_is_bounded_before_the_sdk_parses_it(
    owner: Any, body: bytes, status: int, told: str
) -> None:
    """A body of a million small arrays held the loop every session and page shares for
    seconds while the SDK parsed it, before it even looked for the session: it is read
    whole and checked in a thread first, refused as JSON-RPC says, and never reaches the
    SDK; one that passes reaches it as it was sent."""
    app = app_with(owner)
    reached: list[bytes] = []

    async def handle_request(scope: Any, receive: Any, send: Any) -> None:
        reached.append((await receive())["body"])
        await mcp._send_json(send, 200, {})

    sdk = SimpleNamespace(session_idle_timeout=1800, handle_request=handle_request)

    async def started() -> Any:
        return sdk

    app._manager_started = started  # type: ignore[method-assign]
    _, secret = await database_sync_to_async(token_services.api_token_create)(
        owner=owner, name="client"
    )
    receive, send, sent = exchange_of(body)

    scope = {"type": "http", "method": "POST", "path": "/mcp",
             "headers": [(b"authorization", f"Bearer {secret}".encode())]}  # fmt: skip
    await app(scope, receive, send)
    assert sent[0]["status"] == status, sent
    if told:
        assert told in json.loads(sent[1]["body"])["error"]["message"] and not reached
    else:
        assert reached == [body]
