"""Django's and django-csp's middleware whose hooks never wait on anything, run on the loop.

Under ASGI, Django runs each hook of a ``MiddlewareMixin`` middleware (``process_request``,
``process_response``) through ``sync_to_async`` on its one thread for sync code: two
thread hops a request per middleware, fifteen for the dashboard's list, a few tenths of a
millisecond each on a busy machine, and most of the fixed cost of a small request (an act
call's snapshot, a JSON API read).  The hooks of these middlewares only read and set
headers, cookies and attributes of the request: no database, no file, nothing that blocks.
So here they run in the event loop itself, the same code in the same order.  A hook that
did reach the database would raise Django's SynchronousOnlyOperation, not block the loop.

Left as they are: the session's (saving a changed session writes it), the messages' (its
session storage may load the session), and CSRF's view hook (reading a form's fields may
read a large body from disk); the check itself is the same either way.
"""

from __future__ import annotations

from typing import Any

from csp.middleware import CSPMiddleware as _CSPMiddleware
from django.contrib.auth.middleware import AuthenticationMiddleware as _AuthenticationMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware as _XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware as _CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware as _CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware as _SecurityMiddleware

__all__ = [
    "AuthenticationMiddleware",
    "CSPMiddleware",
    "CommonMiddleware",
    "CsrfViewMiddleware",
    "SecurityMiddleware",
    "XFrameOptionsMiddleware",
]


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


class SecurityMiddleware(_OnTheLoop, _SecurityMiddleware):
    pass


class CommonMiddleware(_OnTheLoop, _CommonMiddleware):
    pass


class CsrfViewMiddleware(_OnTheLoop, _CsrfViewMiddleware):
    """The token's cookie read and set on the loop (CSRF_USE_SESSIONS is off: a cookie,
    never the session); the check of a form's fields stays on Django's thread."""


class AuthenticationMiddleware(_OnTheLoop, _AuthenticationMiddleware):
    """Sets the lazy ``request.user`` and ``request.auser``: the user is read when asked."""


class XFrameOptionsMiddleware(_OnTheLoop, _XFrameOptionsMiddleware):
    pass


class CSPMiddleware(_OnTheLoop, _CSPMiddleware):
    pass
