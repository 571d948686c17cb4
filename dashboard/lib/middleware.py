"""Django's and django-csp's middleware whose hooks never wait on anything, run on the loop.

Under ASGI, Django runs each hook of a ``MiddlewareMixin`` middleware (``process_request``,
``process_response``) through ``sync_to_async`` on its one thread for sync code: a thread
hop per hook, fifteen a request for the dashboard's list, part of the fixed cost of every
small request (an act call's snapshot, a JSON API read).  The hooks of these middlewares
only read and set headers and attributes of the request (the user is a lazy one, read
when a view asks): no database, no file, nothing that blocks.  So here they run in the
event loop itself, the same code in the same order.  A hook that did reach the database
would raise Django's SynchronousOnlyOperation, not block the loop.

The messages' too, unless a view read or added some: only then may their storage load or
change the session, and their hook goes to the thread.

Left as they are: the session's (saving a changed session writes it), and the security,
CSRF and frame-options middlewares, which Django's deployment checks (``check --deploy``)
look for by their own names and would otherwise skip the checks of their settings.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from csp.middleware import CSPMiddleware as _CSPMiddleware
from django.contrib.auth.middleware import AuthenticationMiddleware as _AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as _MessageMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.middleware.common import CommonMiddleware as _CommonMiddleware

__all__ = ["AuthenticationMiddleware", "CSPMiddleware", "CommonMiddleware", "MessageMiddleware"]


class _OnTheLoop:
    """``MiddlewareMixin.__acall__`` without the thread hops: the hooks are called here."""

    get_response: Any

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class CommonMiddleware(_OnTheLoop, _CommonMiddleware):
    pass


class AuthenticationMiddleware(_OnTheLoop, _AuthenticationMiddleware):
    """Sets the lazy ``request.user`` and ``request.auser``: the user is read when asked."""


class CSPMiddleware(_OnTheLoop, _CSPMiddleware):
    pass


class MessageMiddleware(_MessageMiddleware):
    """The messages' storage set up on the loop (it reads nothing yet); stored on the
    request's thread only when a view read or added some."""

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        self.process_request(request)
        response = await self.get_response(request)
        storage = request._messages  # type: ignore[attr-defined]
        if storage.used or storage.added_new:
            return await sync_to_async(self.process_response)(request, response)
        return response
