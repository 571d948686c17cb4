"""``/mcp``: Tabwright's MCP server over streamable HTTP (the MCP SDK's session manager),
for MCP clients that authenticate with a user's API token (``Authorization: Bearer``,
the same tokens as the JSON API, checked again at every tool call so a revoked token stops
working at once).

Each MCP session is a run of its owner's (kind ``mcp``), created at the session's first
tool call and queued like any run: a worker claims it and opens its tab, and every call
is carried out there (dashboard.runs.carry.carry → RunManager.mcp_call).  So the owner
watches it live, pauses it (the client's calls then answer ``paused_by_person``), takes
over on the live view, and saves it as a scenario, as with an agent's run.  The client
ending the session (HTTP DELETE) ends the run.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from automation import Budget
from automation.budget import MAX_TIMEOUT_MS
from automation.mcp.server import build_server
from automation.mcp.session import DEFAULT_CALL_MS, Answer
from dashboard.accounts import services as token_services
from dashboard.engineconf import browser_config
from dashboard.models import Run
from dashboard.runs import services as run_services
from dashboard.runs.carry import carry, command_where_it_runs
from dashboard.runs.doorbell import wake
from dashboard.runs.messages import mcp_message
from dashboard.runs.runner import runner

__all__ = ["PATH", "McpApp"]

log = logging.getLogger("tabwright.mcp")

PATH = "/mcp"
START_WAIT_MS = 60_000  # a new session's run: claimed and its tab open within this
_ANSWER_MARGIN_MS = 5_000  # past the call's own budget, for the worker's answer to travel
_SESSION_HEADER = "mcp-session-id"
_MAX_PROBE_BYTES = 1 << 20  # a refused stateless request is read this far for its id


class McpApp:
    """The ASGI app mounted at PATH (dashboard.asgi): a token check, then the SDK."""

    def __init__(self) -> None:
        self._manager: StreamableHTTPSessionManager | None = None
        self._started: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._runs: dict[str, tuple[int, int]] = {}  # MCP session id -> (run id, owner id)
        self._opening = asyncio.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        user = await _user_of(headers)
        if user is None:
            await _refuse(send)
            return
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await _refuse_stateless(version, receive, send)
            return
        session_id = headers.get(_SESSION_HEADER, "")
        known = self._runs.get(session_id)
        # The SDK keeps each session to the person whose token opened it (another's token
        # is answered as if there were no such session): it knows them as this principal.
        principal = AccessToken(token="", client_id=f"user:{user.pk}", scopes=[])
        scope = {**scope, "user": AuthenticatedUser(principal)}
        manager = await self._manager_started()
        await manager.handle_request(scope, receive, send)
        if scope.get("method") == "DELETE" and known is not None and known[1] == user.pk:
            self._runs.pop(session_id, None)
            await command_where_it_runs(known[0], "close")

    async def _manager_started(self) -> StreamableHTTPSessionManager:
        """The SDK's session manager, running in a task of its own (daphne has no ASGI
        lifespan to run it in)."""
        if self._manager is None:
            self._started = asyncio.Event()
            self._manager = StreamableHTTPSessionManager(
                app=build_server(await database_sync_to_async(browser_config)(), self._call)
            )
            self._task = asyncio.get_running_loop().create_task(self._keep(), name="mcp")
        assert self._started is not None
        await self._started.wait()
        return self._manager

    async def _keep(self) -> None:
        assert self._manager is not None and self._started is not None
        async with self._manager.run():
            self._started.set()
            await asyncio.Event().wait()

    async def _call(
        self, ctx: ServerRequestContext[Any], name: str, args: dict[str, Any]
    ) -> Answer:
        headers = getattr(ctx.request, "headers", None) or {}
        user = await _user_of({k.lower(): v for k, v in headers.items()})
        if user is None:
            return Answer(False, "error unauthorized: the API token is no longer valid")
        session_id = headers.get(_SESSION_HEADER, "")
        run_id = await self._run_of(session_id, user, _client_name(ctx))
        if run_id is None:
            return Answer(
                False,
                f"error not_started: no worker opened the session's browser within "
                f"{START_WAIT_MS // 1000} s (all are busy); its run was stopped\n"
                "hint: call again later: the next call starts it anew",
            )
        raw = args.get("timeout_ms", DEFAULT_CALL_MS)
        call_ms = raw if isinstance(raw, int) and 0 < raw <= MAX_TIMEOUT_MS else DEFAULT_CALL_MS
        wait = Budget(call_ms + _ANSWER_MARGIN_MS, label=name)
        got = await carry(mcp_message(run_id, name, args), wait)
        if "answer" in got:
            answer = got["answer"]
            image = base64.b64decode(answer["image"]) if answer.get("image") else None
            return Answer(bool(answer["ok"]), str(answer["text"]), image)
        error = got["error"]
        if error["kind"] == "lookup":
            self._runs.pop(session_id, None)
            return Answer(
                False,
                "error session_ended: this session's run has ended (stopped by a person, or "
                "idle too long)\nhint: start a new MCP session",
            )
        text = f"error {error.get('code', error['kind'])}: {error.get('message', '')}"
        return Answer(False, text + (f"\nhint: {error['hint']}" if error.get("hint") else ""))

    async def _run_of(self, session_id: str, user: Any, client: str) -> int | None:
        """The run of the session (made at its first call), once it is live somewhere."""
        if not session_id:  # only a session-based request gets here (see __call__)
            return None
        async with self._opening:
            known = self._runs.get(session_id)
            if known is None:
                await self._forget_ended()
                run = await database_sync_to_async(run_services.run_create_mcp)(
                    owner=user, client=client
                )
                known = self._runs[session_id] = (run.pk, user.pk)
                await wake()
        run_id = known[0]
        budget = Budget(START_WAIT_MS, label="open the session's browser")
        while not runner.is_live(run_id):
            status, holder = await database_sync_to_async(_state)(run_id)
            if holder or status in Run.FINAL:
                break
            # No worker took it in time: stopped while still queued (a later claim would
            # open a browser nobody calls); the session's next call makes a new run.  Not
            # queued any more: claimed just now, seen on the next look.
            if budget.remaining_ms() <= 0 and await runner.stop_queued(run_id):
                self._runs.pop(session_id, None)
                return None
            await asyncio.sleep(0.05)
        return run_id

    async def _forget_ended(self) -> None:
        """Drop the sessions whose runs have ended (stopped by a person, idle, or left by
        the SDK without a DELETE), so the map holds live sessions only."""
        ids = {run_id for run_id, _owner in self._runs.values()}
        if not ids:
            return
        ended = await database_sync_to_async(_ended)(ids)
        for session_id, (run_id, _owner) in list(self._runs.items()):
            if run_id in ended:
                del self._runs[session_id]


async def _refuse_stateless(version: str, receive: Any, send: Any) -> None:
    """A request of the stateless protocol era (2026-07-28: no session, each request on
    its own) is answered -32022 naming the session-based versions: a client falls back to
    them (the SDK's client does), and its session keeps its browser tab."""
    body, more = b"", True
    while more and len(body) <= _MAX_PROBE_BYTES:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        request_id = json.loads(body).get("id")
    except (ValueError, AttributeError):
        request_id = None
    answer = {"jsonrpc": "2.0", "id": request_id, "error": {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": "Tabwright keeps a browser per MCP session: use a session-based protocol "
                   "version (initialize)",
        "data": {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version},
    }}  # fmt: skip
    await _send_json(send, 400, answer)


def _ended(run_ids: set[int]) -> set[int]:
    return set(
        Run.objects.filter(pk__in=run_ids, status__in=Run.FINAL).values_list("pk", flat=True)
    )


def _state(run_id: int) -> tuple[str, str]:
    row = Run.objects.filter(pk=run_id).values_list("status", "holder").first()
    return (row[0], row[1] or "") if row else (Run.Status.FAILED, "")


def _client_name(ctx: ServerRequestContext[Any]) -> str:
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", "") or "an MCP client"
    return str(name)[:80]


async def _user_of(headers: dict[str, str]) -> Any:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return await database_sync_to_async(token_services.api_token_user)(secret=token.strip())


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
