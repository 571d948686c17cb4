"""Django's and django-csp's middleware, their hooks run on the event loop where they can't block.

Under ASGI, Django runs each hook of a ``MiddlewareMixin`` middleware (``process_request``,
``process_view``, ``process_response``) through ``sync_to_async`` on its one thread for
sync code: a thread hop per hook, fifteen a request for the dashboard's list, most of the
fixed cost of every small request (an act call's snapshot, a JSON API read).  The hooks
here only read and set headers and attributes of the request (the user is a lazy one,
read when a view asks; the session too): no database, no file, nothing that blocks.  So
they run in the event loop itself, the same code in the same order.  A hook that did
reach the database would raise Django's SynchronousOnlyOperation, not block the loop.

What may block still goes to the thread, and only then:
- saving a changed session (the session's response hook, when the view changed it);
- the messages' storage, when a view read or added some (it may load or change the
  session);
- the CSRF check of a form's POST: it reads ``request.POST``, which parses the body (a
  multipart upload spools to disk); and a refusal, whose page is a rendered template;
- all of CSRF when its secret is kept in the session (``CSRF_USE_SESSIONS``).

Django's deployment checks (``check --deploy``) look for the security, session, CSRF and
frame-options middleware by Django's own names; :mod:`dashboard.checks` runs them for
these.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from csp.middleware import CSPMiddleware as _CSPMiddleware
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as _AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as _MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as _SessionMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware as _XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware as _CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware as _CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware as _SecurityMiddleware

__all__ = [
    "AS_DJANGO",
    "AuthenticationMiddleware",
    "CSPMiddleware",
    "CommonMiddleware",
    "CsrfViewMiddleware",
    "MessageMiddleware",
    "SecurityMiddleware",
    "SessionMiddleware",
    "XFrameOptionsMiddleware",
]

# Each of ours that Django's deployment checks know by Django's name.
AS_DJANGO = {
    "dashboard.lib.middleware.SecurityMiddleware": "django.middleware.security.SecurityMiddleware",
    "dashboard.lib.middleware.SessionMiddleware": (
        "django.contrib.sessions.middleware.SessionMiddleware"
    ),
    "dashboard.lib.middleware.CsrfViewMiddleware": "django.middleware.csrf.CsrfViewMiddleware",
    "dashboard.lib.middleware.XFrameOptionsMiddleware": (
        "django.middleware.clickjacking.XFrameOptionsMiddleware"
    ),
}
# The content types whose POST body request.POST parses.
_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


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
    """HTTPS redirect, HSTS and the other security headers."""


class SessionMiddleware(_SessionMiddleware):
    """A lazy session store set on the loop (nothing is read until a view asks); the
    response's hook on the loop too, unless the session is to be saved."""

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        self.process_request(request)
        response = await self.get_response(request)
        if request.session.modified or settings.SESSION_SAVE_EVERY_REQUEST:
            return await sync_to_async(self.process_response)(request, response)
        return self.process_response(request, response)


class CommonMiddleware(_OnTheLoop, _CommonMiddleware):
    pass


class CsrfViewMiddleware(_OnTheLoop, _CsrfViewMiddleware):
    """The CSRF check on the loop for what reads no body (a safe method, a JSON or empty
    POST, a header's token); a form's POST, and a refusal's page, on the thread."""

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        if settings.CSRF_USE_SESSIONS:  # the secret is read from, and kept in, the session
            return await _CsrfViewMiddleware.__acall__(self, request)  # type: ignore[misc]
        return await super().__acall__(request)

    async def process_view(  # type: ignore[override]
        self, request: HttpRequest, callback: Any, callback_args: Any, callback_kwargs: Any
    ) -> HttpResponseBase | None:
        check = super().process_view
        if settings.CSRF_USE_SESSIONS or (
            request.method == "POST" and request.content_type in _FORM_TYPES
        ):
            verdict = await sync_to_async(check)(request, callback, callback_args, callback_kwargs)
        else:
            verdict = check(request, callback, callback_args, callback_kwargs)
        if isinstance(verdict, _Refused):
            return await sync_to_async(super()._reject)(request, verdict.reason)
        return verdict

    def _reject(self, request: HttpRequest, reason: str) -> Any:
        return _Refused(reason)  # answered by process_view, its page made on the thread


class _Refused:
    def __init__(self, reason: str) -> None:
        self.reason = reason


class AuthenticationMiddleware(_OnTheLoop, _AuthenticationMiddleware):
    """Sets the lazy ``request.user`` and ``request.auser``: the user is read when asked."""


class XFrameOptionsMiddleware(_OnTheLoop, _XFrameOptionsMiddleware):
    pass


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
