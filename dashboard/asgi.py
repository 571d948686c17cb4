"""ASGI entry point for daphne: HTTP through Django, WebSockets through Channels."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

from dashboard.origin import SameOriginValidator  # noqa: E402
from dashboard.routing import websocket_urlpatterns  # noqa: E402
from dashboard.startup import on_server_start  # noqa: E402
from dashboard.worker import channel_application, start_embedded  # noqa: E402

application = ProtocolTypeRouter(
    {
        # One self-hosted process: it serves its own few static files.
        "http": ASGIStaticFilesHandler(django_asgi_app),
        # Scheme, host and port of the Origin must be the dashboard's own (or trusted):
        # AllowedHostsOriginValidator would let any port of an allowed host in.
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        # The runs' worker (dashboard/worker.py): in this process, or in runworker ones.
        "channel": channel_application,
    }
)

# When daphne's reactor starts, before it serves anything: runs a dead server left live
# are closed (dashboard/startup.py).  Not at import: tests and commands import this too,
# and the reactor runs only in the server.  django.setup() installed daphne's reactor.
from twisted.internet import reactor  # noqa: E402

reactor.addSystemEventTrigger("before", "startup", on_server_start)
# Then, inside the running loop, the runs' worker (unless TABWRIGHT_EMBEDDED_WORKER=0).
reactor.callLater(0, start_embedded)
