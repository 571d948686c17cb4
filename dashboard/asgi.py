"""ASGI entry point for daphne: HTTP through Django, WebSockets through Channels."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from automation.loading import pause_gc, resume_gc

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
pause_gc()  # while the server loads: resumed at the end of this module

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()
pause_gc()  # again: the apps' ready() resumed it (for manage.py's commands)


def _import_pages() -> None:
    """The URL conf (every view, the API's routers) and the template engine, loaded now:
    else the first request does it on the event loop (~0.3 s), and every page, socket and
    run of the process waits."""
    from django.template import engines
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (the property imports the URL conf)
    for engine in engines.all():  # each imported on first use
        engine.engine.template_libraries  # noqa: B018
        engine.engine.template_loaders  # noqa: B018
        engine.engine.template_context_processors  # noqa: B018


_import_pages()

from dashboard.lib.logredact import redact_server_logs  # noqa: E402

redact_server_logs()  # the server's logs show no token of an address

from dashboard.api.bodylimit import MAX_REQUEST_BYTES  # noqa: E402
from dashboard.lib import daphnelimits  # noqa: E402
from dashboard.lib.rate import MESSAGES_BURST, MESSAGES_PER_S  # noqa: E402

# Past them, a request is answered before it is all read; a socket's messages are dropped.
daphnelimits.install(
    body_limit=MAX_REQUEST_BYTES, messages_per_s=MESSAGES_PER_S, burst=MESSAGES_BURST
)

from dashboard.api.mcpmount import PATH as MCP_PATH  # noqa: E402
from dashboard.api.mcpmount import McpMount  # noqa: E402
from dashboard.lib import looplag  # noqa: E402
from dashboard.lib.origin import SameOriginValidator  # noqa: E402
from dashboard.lib.requestthreads import RequestThreads  # noqa: E402
from dashboard.routing import websocket_urlpatterns  # noqa: E402
from dashboard.startup import on_server_start, serves_runs  # noqa: E402
from dashboard.worker import channel_application, drain, start_embedded  # noqa: E402

# It serves its own few static files; each request's sync code on a pooled thread.
_pages = RequestThreads(ASGIStaticFilesHandler(django_asgi_app))
# Each socket's sync code (its session's lookup, its checks, its backlog's reads) on a
# pooled thread of its own too: on the process's one default thread, a person's pages
# reading long backlogs held every other socket's handshake and the runs' own writes.
# Scheme, host and port of the Origin must be the dashboard's own (or trusted):
# AllowedHostsOriginValidator would let any port of an allowed host in.
_sockets = RequestThreads(
    SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
)
_mcp = McpMount()  # the MCP SDK loads at the first request to /mcp
# Each MCP request's sync code (its token's lookup, its tool call's reads) on a pooled
# thread of its own as well: on the process's one default thread, a flood of requests
# (even with bad tokens: each is looked up first) held the runs' claims and event writes.
_mcp_requests = RequestThreads(_mcp)


async def http_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """/mcp to the MCP server (dashboard.api.mcp), everything else to Django."""
    if scope["path"].rstrip("/") == MCP_PATH:
        await _mcp_requests(scope, receive, send)
    else:
        await _pages(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http_application,
        "websocket": _sockets,
        # The runs' worker (dashboard/worker.py): in this process, or in runworker ones.
        "channel": channel_application,
    }
)

# When daphne's reactor starts, before it serves anything: runs a dead server left live
# are closed (dashboard/startup.py).  Not at import: tests and commands import this too,
# and the reactor runs only in the server.  django.setup() installed daphne's reactor.
from twisted.internet import reactor  # noqa: E402
from twisted.internet.defer import Deferred  # noqa: E402

reactor.addSystemEventTrigger("before", "startup", on_server_start)

# Then, inside the running loop, the runs' worker (unless TABWRIGHT_EMBEDDED_WORKER=0, or
# another live server drives the runs of this SQLite database); drained when daphne stops
# (SIGTERM): no new claims, its runs get TABWRIGHT_WORKER_GRACE_S to end.
_worker: list[asyncio.Task[None]] = []


def _start_worker() -> None:
    if serves_runs():
        _worker.extend(task for task in [start_embedded()] if task is not None)


def _drain_worker() -> Deferred[None]:
    return Deferred.fromFuture(asyncio.ensure_future(drain(_worker[0] if _worker else None)))


def _watch_loop() -> None:
    looplag.watch()  # its lag on /metrics; a stall past 250 ms logged with what held it


reactor.callLater(0, _watch_loop)
reactor.callLater(0, _start_worker)
reactor.addSystemEventTrigger("before", "shutdown", _drain_worker)
resume_gc()
