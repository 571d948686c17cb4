"""``/mcp``: Tabwright's MCP server over streamable HTTP (the MCP SDK's session manager),
for MCP clients that authenticate with a user's API token (``Authorization: Bearer``,
the same tokens as the JSON API, checked again at every tool call so a revoked token stops
working at once).

Each MCP session is one run of its owner's (kind ``mcp``), made at the session's first
tool call (calls that come together share it) and queued like any run: a worker claims it
and opens its tab.  A call waits for that within its own budget, as the run's page sees
a run start (dashboard.runs.carry.started), and is then carried out there (carry →
RunManager.mcp_call).  So the owner watches it live, pauses it (the client's calls then
answer ``paused_by_person``), takes over on the live view, and saves it as a scenario,
as with an agent's run.

The run ends when its client goes, so it holds no worker slot (nor waits for one) for
nobody: when the client ends the session (HTTP DELETE), or when a client that kept an
event stream open (a GET, as the SDK's client does) has had no connection to the session
for CLIENT_GONE_S (its process ended, its network went).  Its status says which.

Each request's sync work (its token's lookup, a tool call's reads) runs on a thread of
the request's own (dashboard.asgi serves /mcp under RequestThreads), as a page's does:
not on the process's thread, where the runs' worker claims runs and writes their events.
What may outlive the request that starts it (the SDK's session manager and its token
checks, a tool call, a session's run being made, a run being ended) is a task of the
process with a pooled thread of its own (``thread_task``): a request's thread is refused
once its request has ended.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from automation import Budget
from automation.errors import ActionInvalid, BudgetExceeded, TabwrightError
from automation.mcp.server import build_server
from automation.mcp.session import Answer, call_timeout_ms
from dashboard.accounts import services as token_services
from dashboard.engineconf import browser_config
from dashboard.lib import jsonin
from dashboard.lib.requestthreads import thread_task
from dashboard.models import Run
from dashboard.runs import selectors as run_selectors
from dashboard.runs import services as run_services
from dashboard.runs.carry import carry, command_where_it_runs, started
from dashboard.runs.doorbell import wake
from dashboard.runs.messages import mcp_message
from dashboard.runs.runner import runner
from dashboard.runs.signins import SigninRefused, signin_by_name

__all__ = [
    "CLIENT_GONE_S", "ENDED_BY_CLIENT", "MAX_REQUEST_BYTES", "MAX_REQUEST_VALUES", "WENT_AWAY",
    "McpApp",
]  # fmt: skip

log = logging.getLogger("tabwright.mcp")

# A client that kept an event stream open and has had no connection to its session for
# this long has gone (the SDK's client opens its stream again within a second or two).
CLIENT_GONE_S = 5.0
ENDED_BY_CLIENT = "the MCP client ended the session"
WENT_AWAY = f"the MCP client went away: no connection to its session for {CLIENT_GONE_S:g} s"
EXPIRED = "the MCP session expired: no request for {minutes} min"
REVOKED = "the API token of the MCP session was revoked"
# How often the tokens of the open sessions are checked: a revoked token's session ends
# then, though its client keeps its event stream open and sends nothing more.
TOKEN_CHECK_S = 15.0
# A run being started when its client goes: its tab opens within this, then it is closed.
START_WAIT_MS = 60_000
_ANSWER_MARGIN_MS = 5_000  # past the call's own budget, for the worker's answer to travel
_SESSION_HEADER = "mcp-session-id"
# A session's browser starts signed in with the sign-in profile this header names (at its
# first call; dashboard.runs.signins).
SIGNIN_HEADER = "x-tabwright-signin-profile"
_MAX_PROBE_BYTES = 1 << 20  # a refused stateless request is read this far for its id
# A request of a client's (a tool call and its arguments) is at most this large, and holds
# at most this many values: checked before the SDK parses it on the loop.
MAX_REQUEST_BYTES = 1 << 20
MAX_REQUEST_VALUES = 20_000
# One person's open MCP sessions (opened, not ended, not let go): past this, a new one is
# refused (429).  A session holds no browser until its first tool call, so a client that
# only opens sessions would otherwise fill the SDK's table, which every person's clients
# share (10,000 of them locked everyone out for its 30 minutes of idle time).
MAX_OPEN_SESSIONS = 32
TOO_MANY_SESSIONS = (
    f"too many open MCP sessions: {MAX_OPEN_SESSIONS} of yours are open; end those you are "
    "done with (HTTP DELETE), or wait for them to expire"
)


@dataclass
class _Session:
    """What /mcp knows of one MCP session: whose it is, its run (made at its first call),
    and its client's connections to it."""

    owner_id: int
    token: str = ""  # the API token that opened it (revoked: the session ends)
    run: asyncio.Future[int] | None = None
    requests: int = 0  # HTTP requests of it being served (an open event stream is one)
    streams: bool = False  # its client keeps an event stream open: losing it says it left
    seen: float = field(default_factory=time.monotonic)  # when a request of it last began or ended
    ended: str = ""  # why its run was ended here (its client left)
    gone_check: asyncio.TimerHandle | None = None


class McpApp:
    """The ASGI app at /mcp (dashboard.api.mcpmount): a token check, then the SDK."""

    def __init__(self) -> None:
        self._manager: StreamableHTTPSessionManager | None = None
        self._ready: asyncio.Future[StreamableHTTPSessionManager] | None = None
        self._task: asyncio.Task[None] | None = None
        self._sessions: dict[str, _Session] = {}  # by MCP session id
        # Per person, the new sessions let past the cap whose initialize is still being
        # answered: each holds its place from the check until the session is registered,
        # so a burst of initialize requests can't all pass the check before any counts.
        self._opening: dict[int, int] = {}
        self._ending: set[asyncio.Task[None]] = set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = _headers_of(scope["headers"])
        user = await _user_of(headers)
        if user is None:
            await _refuse(send)
            return
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await _refuse_stateless(version, receive, send)
            return
        if str(scope.get("method", "")) == "POST":
            body = await _request_body(receive, send)
            if body is None:
                return
            receive = _given(body, receive)
        session_id = headers.get(_SESSION_HEADER, "")
        session = self._sessions.get(session_id)
        if session is not None and session.owner_id != user.pk:
            session = None  # another's: the SDK answers as if there were no such session
        method = str(scope.get("method", ""))
        opening = not session_id and method == "POST"  # an initialize: a new session
        if opening and self._over_cap(user.pk):
            error = {"code": -32000, "message": TOO_MANY_SESSIONS}
            await _send_json(send, 429, {"jsonrpc": "2.0", "id": None, "error": error})
            return
        if opening:  # its place, held at once: nothing awaited since the check
            self._opening[user.pk] = self._opening.get(user.pk, 0) + 1
        # The SDK keeps each session to the person whose token opened it (another's token
        # is answered as if there were no such session): it knows them as this principal.
        principal = AccessToken(token="", client_id=f"user:{user.pk}", scopes=[])
        scope = {**scope, "user": AuthenticatedUser(principal)}
        answered: dict[str, Any] = {}

        def let_go() -> None:
            """The place this request held: the session now counts itself (or never will)."""
            nonlocal opening
            if opening:
                opening = False
                self._opening[user.pk] -= 1
                if not self._opening[user.pk]:
                    del self._opening[user.pk]

        async def reply(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and not answered:
                answered["status"] = int(message["status"])
                self._answered(session_id, session, method, user.pk, message,
                               token=_bearer(headers))  # fmt: skip
                let_go()
            await send(message)

        if session is not None:
            self._began(session)
        try:
            manager = await self._manager_started()
            await manager.handle_request(scope, receive, reply)
        finally:
            let_go()
            if session is not None:
                self._ended(session_id, session, method, answered.get("status", 0))

    # -- the client's connections ----------------------------------------------------

    def _began(self, session: _Session) -> None:
        session.requests += 1
        session.seen = time.monotonic()
        if session.gone_check is not None:
            session.gone_check.cancel()
            session.gone_check = None

    def _answered(
        self, session_id: str, session: _Session | None, method: str, owner_id: int,
        start: dict[str, Any], *, token: str = "",
    ) -> None:  # fmt: skip
        """The SDK's answer begins: a new session's id (initialize), or an event stream."""
        ok = 200 <= int(start["status"]) < 300
        if session is None and ok and not session_id:
            new = dict(start.get("headers") or []).get(_SESSION_HEADER.encode())
            if new:
                self._forget_expired()
                self._sessions[new.decode("latin-1")] = _Session(owner_id, token)
        elif session is not None and ok and method == "GET":
            session.streams = True

    def _ended(self, session_id: str, session: _Session, method: str, status: int) -> None:
        session.requests -= 1
        session.seen = time.monotonic()
        if method == "DELETE" and 200 <= status < 300:  # the client ended the session
            self._end(session_id, ENDED_BY_CLIENT)
        elif session.streams and not session.requests and not session.ended:
            loop = asyncio.get_running_loop()
            session.gone_check = loop.call_later(CLIENT_GONE_S, self._gone, session_id)

    def _gone(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is not None and not session.requests:
            session.gone_check = None
            self._end(session_id, WENT_AWAY)

    def _over_cap(self, owner_id: int) -> bool:
        """Whether a new session of ``owner_id``'s would be one too many, counting those
        still being opened (the sessions the SDK let go forgotten first)."""
        if self._manager is not None:
            self._forget_expired()
        mine = [s for s in self._sessions.values() if s.owner_id == owner_id and not s.ended]
        return len(mine) + self._opening.get(owner_id, 0) >= MAX_OPEN_SESSIONS

    def _forget_expired(self) -> None:
        """Forget the sessions the SDK has let go (none of their requests for its idle
        timeout: their ids answer 404 from then on), ending runs still open for them."""
        assert self._manager is not None
        idle_s = self._manager.session_idle_timeout
        if idle_s is None:
            return
        now = time.monotonic()
        for session_id, session in list(self._sessions.items()):
            if not session.requests and now - session.seen > idle_s + 60:
                self._end(session_id, EXPIRED.format(minutes=round(idle_s / 60)))
                del self._sessions[session_id]

    async def _check_tokens(self) -> None:
        """End the open sessions whose token was revoked (or whose person can no longer
        sign in): the token is checked at every request, but a client that keeps its
        event stream open and sends nothing would keep its run for the idle timeout."""
        open_ = {s.token for s in self._sessions.values() if s.token and not s.ended}
        for token in open_:
            if await database_sync_to_async(token_services.api_token_user)(secret=token):
                continue
            for session_id, session in list(self._sessions.items()):
                if session.token == token:
                    self._end(session_id, REVOKED)

    def _end(self, session_id: str, reason: str) -> None:
        """End the session's run (in a task of its own), saying why; its later calls, if
        any come, answer session_ended."""
        session = self._sessions.get(session_id)
        if session is None or session.ended:
            return
        session.ended = reason
        if session.run is None:
            return
        task = thread_task(_end_run(session.run, reason))  # the request may end first
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    # -- the SDK and the calls -------------------------------------------------------

    async def _manager_started(self) -> StreamableHTTPSessionManager:
        """The SDK's session manager, running in a task of its own (daphne has no ASGI
        lifespan to run it in): one, however many requests come at once.  Not the task of
        the request that starts it, which ends long before it does."""
        if self._ready is None or self._task is None or self._task.done():
            self._ready = asyncio.get_running_loop().create_future()
            self._task = thread_task(self._keep(), name="mcp")
        return await asyncio.shield(self._ready)

    async def _keep(self) -> None:
        assert self._ready is not None
        try:
            config = await database_sync_to_async(browser_config)()
            manager = StreamableHTTPSessionManager(app=build_server(config, self._call))
            async with manager.run():
                self._manager = manager
                self._ready.set_result(manager)
                while True:
                    await asyncio.sleep(TOKEN_CHECK_S)
                    try:
                        await self._check_tokens()
                    except Exception:  # the database, for a moment: the next check tries
                        log.exception("the MCP sessions' tokens could not be checked")
        except Exception as exc:  # the requests waiting hear of it; the next tries again
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    async def _call(
        self, ctx: ServerRequestContext[Any], name: str, args: dict[str, Any]
    ) -> Answer:
        """A tool call, in a task with a thread of its own that it awaits (cancelling the
        call cancels it): the SDK runs it in a task that goes on when the request that
        brought it ends (its client gone), whose thread is then refused."""
        return await thread_task(self._answer(ctx, name, args), name="mcp call")

    async def _answer(
        self, ctx: ServerRequestContext[Any], name: str, args: dict[str, Any]
    ) -> Answer:
        headers = _headers_of(getattr(ctx.request, "scope", {}).get("headers", []))
        user = await _user_of(headers)
        if user is None:
            return Answer(False, "error unauthorized: the API token is no longer valid")
        session_id = headers.get(_SESSION_HEADER, "")
        if not session_id:  # the SDK answers a request without a session before this
            return Answer(False, "error action_invalid: a tool call needs an MCP session")
        session = self._sessions.setdefault(session_id, _Session(user.pk, _bearer(headers)))
        if session.ended:
            return _session_ended(session.ended)
        try:  # read as the session will read it, so the answer is waited for as long
            call_ms = call_timeout_ms(name, args.get("timeout_ms"))
        except ActionInvalid as exc:  # refused before any run is made for it
            return _refused(exc)
        wait = Budget(call_ms + _ANSWER_MARGIN_MS, label=name)
        try:
            run_id = await self._run_of(
                session, user, _client_name(ctx), headers.get(SIGNIN_HEADER, "")
            )
        except SigninRefused as exc:  # its first call: no run was made
            return _refused(exc)
        try:  # a session's first call: its browser opens (it waits for a worker) meanwhile
            place = await started(run_id, wait.child(call_ms, label="opening of the browser"))
        except BudgetExceeded:
            return await _not_open(run_id, call_ms)
        if not place.live or session.ended:
            return _session_ended(session.ended or await database_sync_to_async(_reason)(run_id))
        got = await carry(mcp_message(run_id, name, args), wait, place=place)
        if "answer" in got:
            answer = got["answer"]
            image = base64.b64decode(answer["image"]) if answer.get("image") else None
            return Answer(bool(answer["ok"]), str(answer["text"]), image)
        error = got["error"]
        if error["kind"] == "lookup":
            return _session_ended(await database_sync_to_async(_reason)(run_id))
        text = f"error {error.get('code', error['kind'])}: {error.get('message', '')}"
        return Answer(False, text + (f"\nhint: {error['hint']}" if error.get("hint") else ""))

    async def _run_of(self, session: _Session, user: Any, client: str, signin: str = "") -> int:
        """The session's one run, made (queued, a worker woken) at its first call, signed
        in with the profile its ``signin`` header names; calls that come together share it."""
        if session.run is None or (session.run.done() and session.run.exception()):
            # Not in the call's task: that call may end first (cancelled by its client),
            # and its thread with it, while another call of the session waits for the run.
            session.run = thread_task(_new_run(user, client, signin))
        return await asyncio.shield(session.run)


async def _new_run(user: Any, client: str, signin: str = "") -> int:
    profile = await database_sync_to_async(signin_by_name)(user, signin)
    run = await database_sync_to_async(run_services.run_create_mcp)(
        owner=user, client=client, signin_profile=profile
    )
    await wake()
    return run.pk


async def _end_run(made: asyncio.Future[int], reason: str) -> None:
    """The run of a session whose client left, ended wherever it is: stopped while still
    queued, else closed where it runs once it has started (its status: ``reason``)."""
    try:
        run_id = await asyncio.shield(made)
        if await runner.stop_queued(run_id, reason):
            return
        place = await started(run_id, Budget(START_WAIT_MS, label="start of the run to end"))
        if place.live:
            await command_where_it_runs(run_id, "close", reason, place=place)
    except TabwrightError as exc:  # it did not start in time: its idle time ends it
        log.warning("the run of an MCP session whose client left was not ended: %s", exc)
    except Exception:  # a database hiccup: the same
        log.exception("the run of an MCP session whose client left was not ended")


async def _not_open(run_id: int, call_ms: float) -> Answer:
    """A call whose session's browser did not open within its budget: why, and that the
    session keeps its run (and its place in the queue)."""
    place = await database_sync_to_async(_queue_place)(run_id)
    why = (
        f"every worker is busy: its run is queued, {_ordinal(place)} in line"
        if place else "its run is being started"
    )  # fmt: skip
    return Answer(
        False,
        f"error {BudgetExceeded.code}: the session's browser did not open within the call's "
        f"{call_ms:g} ms ({why})\nhint: call again: the session keeps its run and its place; "
        "or give the call a longer timeout_ms",
    )


def _refused(exc: TabwrightError) -> Answer:
    hint = f"\nhint: {exc.hint}" if exc.hint else ""
    return Answer(False, f"error {exc.code}: {exc.message}{hint}")


def _session_ended(reason: str) -> Answer:
    return Answer(
        False,
        f"error session_ended: this session's run has ended ({reason or 'it is over'})\n"
        "hint: start a new MCP session",
    )


def _queue_place(run_id: int) -> int:
    run = Run.objects.filter(pk=run_id).first()
    return run_selectors.run_queue_position(run=run) if run is not None else 0


def _reason(run_id: int) -> str:
    return Run.objects.filter(pk=run_id).values_list("status_reason", flat=True).first() or ""


def _ordinal(n: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(n, f"number {n}")


async def _request_body(receive: Any, send: Any) -> bytes | None:
    """A POST's body, read whole and checked as JSON in a thread of its own before the
    SDK parses it on the loop every session shares (a body of a million small arrays took
    it seconds there, for everyone): None, answered 413 or 400 (JSON-RPC), when it is over
    MAX_REQUEST_BYTES, or is no JSON of at most MAX_REQUEST_VALUES values."""
    body, whole = await _read(receive, MAX_REQUEST_BYTES)
    if body is None:
        return None  # the client went away
    if not whole:
        error = {"code": -32600, "message": f"an MCP request is at most "
                 f"{MAX_REQUEST_BYTES} bytes"}  # fmt: skip
        await _send_json(send, 413, {"jsonrpc": "2.0", "id": None, "error": error})
        return None
    try:
        await asyncio.to_thread(jsonin.loads, body, max_bytes=MAX_REQUEST_BYTES,
                                max_values=MAX_REQUEST_VALUES, what="the MCP request")  # fmt: skip
    except ValueError as exc:  # JsonRefused is a ValueError
        error = {"code": -32700, "message": f"Parse error: {exc}"}
        await _send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
        return None
    return body


async def _read(receive: Any, most: int) -> tuple[bytes | None, bool]:
    """A request's body as far as ``most`` bytes (None when the client went away first),
    and whether that is all of it."""
    body, more = b"", True
    while more and len(body) <= most:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return None, False
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body, len(body) <= most


def _given(body: bytes, receive: Any) -> Any:
    """``receive`` that gives ``body`` (already read) first, then what comes after it."""
    given = False

    async def again() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def _refuse_stateless(version: str, receive: Any, send: Any) -> None:
    """A request of the stateless protocol era (2026-07-28: no session, each request on
    its own) is answered -32022 naming the session-based versions: a client falls back to
    them (the SDK's client does), and its session keeps its browser tab."""
    body, _whole = await _read(receive, _MAX_PROBE_BYTES)
    try:  # bounded: a body of arrays nested thousands deep is no id, not a crash
        request_id = jsonin.loads(body or b"", max_bytes=_MAX_PROBE_BYTES,
                                  what="the request").get("id")  # fmt: skip
    except (ValueError, AttributeError):  # JsonRefused is a ValueError
        request_id = None
    answer = {"jsonrpc": "2.0", "id": request_id, "error": {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": "Tabwright keeps a browser per MCP session: use a session-based protocol "
                   "version (initialize)",
        "data": {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version},
    }}  # fmt: skip
    await _send_json(send, 400, answer)


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", "") or "an MCP client"
    return str(name)[:80]


def _headers_of(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """A request's headers by lower-case name, each value read as UTF-8, as clients send
    text beyond ASCII (a sign-in profile named "Büro"); a value that is not UTF-8 is read
    as latin-1, as HTTP once had it, rather than refused."""
    headers = {}
    for name, value in raw:
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = value.decode("latin-1")
        headers[name.decode("latin-1").lower()] = text
    return headers


def _bearer(headers: Mapping[str, str]) -> str:
    """The token of ``Authorization: Bearer <token>`` (headers by lower-case name)."""
    return token_services.bearer_token(headers.get("authorization", ""))


async def _user_of(headers: dict[str, str]) -> Any:
    token = _bearer(headers)
    if not token:
        return None
    return await database_sync_to_async(token_services.api_token_user)(secret=token)


async def _refuse(send: Any) -> None:
    message = "an API token is needed: Authorization: Bearer <token>"
    extra = [(b"www-authenticate", b'Bearer realm="tabwright"')]
    await _send_json(send, 401, {"error": {"code": "unauthorized", "message": message}}, extra)


async def _send_json(
    send: Any, status: int, answer: object, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send(
        {"type": "http.response.start", "status": status, "headers": [*headers, *(extra or [])]}
    )
    await send({"type": "http.response.body", "body": body})
