"""How big a body each call of the JSON API takes, enforced before the body is read.

Django reads a body only up to DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB) and answers an HTML
400 past it, whatever the call; the API needs more for a scenario file or a batch's rows,
and far less for everything else.  So this middleware, first in MIDDLEWARE, looks at each
call under /api/ before anything reads its body: past the call's limit (BODY_LIMITS, else
MAX_BODY_BYTES), by its Content-Length or the size the server received, the answer is
the API's JSON error (413 ``too_large``), and nothing reads the body.  A call with a body
and no valid token is answered 401 before its body is read: no stranger's body is parsed.
Within the limit, the body is read here, in a worker thread, and parsed there too
(dashboard.lib.jsonin: bounded in size, values and nesting, so that the parse, which holds
the interpreter, is short); the API's parser (dashboard.api.common.BoundedParser) takes
what was parsed, and its token check the person found here.

A JSON body sent to a call that takes none (the API's OpenAPI schema says which) is
refused (``invalid``), not ignored; null and ``{}`` are no body.

A path under /api/ that is no call of the API, or a method its path does not take, is
answered here in the API's error shape too (``not_found``, ``method_not_allowed``), not
as Django's HTML page; so is a call the server failed on (``server_error``, 500).
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import markcoroutinefunction
from channels.db import database_sync_to_async
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.urls import Resolver404, resolve

from dashboard.accounts.services import api_token_user, bearer_token
from dashboard.jobs.batchfile import MAX_BATCH_BYTES
from dashboard.lib import jsonin
from dashboard.scenarios.forms import MAX_SCENARIO_BYTES

__all__ = ["BODY_LIMITS", "MAX_BODY_BYTES", "MAX_REQUEST_BYTES", "MAX_ROWS_BODY_BYTES",
           "ApiBodyLimit", "no_such_call", "schema_from", "server_failed"]  # fmt: skip

PREFIX = "/api/"
MAX_BODY_BYTES = 1024 * 1024  # a run, a replay, a stop: a task and a few fields
# A batch's CSV (at most MAX_BATCH_BYTES) as a JSON string, or its rows as JSON: room for
# JSON's escapes (a quote or a newline is two characters, a non-ASCII one up to six).
MAX_ROWS_BODY_BYTES = 4 * MAX_BATCH_BYTES
# (method, route under /api/): the calls that take more than MAX_BODY_BYTES.
BODY_LIMITS: dict[tuple[str, str], int] = {
    ("POST", "scenarios"): MAX_SCENARIO_BYTES,  # a scenario file, as on the import page
    ("POST", "scenarios/<scenario_id>/batches"): MAX_ROWS_BODY_BYTES,
    ("POST", "scenarios/<scenario_id>/schedules"): MAX_ROWS_BODY_BYTES,
    ("PATCH", "schedules/<schedule_id>"): MAX_ROWS_BODY_BYTES,
}
# Any request's body, page or call, held where the server reads it (dashboard.lib.bodycap):
# the largest a page or call takes (a scenario file uploaded, a batch's rows) and room for
# a form's multipart framing.
MAX_REQUEST_BYTES = max(MAX_BODY_BYTES, MAX_SCENARIO_BYTES, MAX_BATCH_BYTES,
                        *BODY_LIMITS.values()) + 1024 * 1024  # fmt: skip
PARSED = "tabwright_json"  # the request's attribute with the parsed body (or its refusal)
TOKEN_USER = "tabwright_token_user"  # ... with (token, its person), checked here


def _api_route(path: str) -> str | None:
    """The route under /api/ of ``path`` ("runs/<run_id>/stop"); None for a path outside
    the API, or one it does not have."""
    if not path.startswith(PREFIX):
        return None
    try:
        route = resolve(path).route
    except Resolver404:
        return None
    return str(route).removeprefix(PREFIX.lstrip("/"))


def _says_something(parsed: object) -> bool:
    """A body parsed as JSON that is more than null or an empty object (a body that is not
    JSON, a form's empty one, is left to the call: one that takes none reads none)."""
    return not isinstance(parsed, jsonin.JsonRefused) and parsed is not None and parsed != {}


async def _bodiless() -> frozenset[tuple[str, str]]:
    return bodiless() if bodiless.cache_info().currsize else await asyncio.to_thread(bodiless)


# The API's OpenAPI schema, as dashboard.api.app makes the API (which imports this module).
_SCHEMA: list[Callable[[], dict[str, Any]]] = []


def schema_from(read: Callable[[], dict[str, Any]]) -> None:
    """Where the API's OpenAPI schema is read: the calls it gives without a request body
    take none (:func:`bodiless`)."""
    _SCHEMA[:] = [read]
    bodiless.cache_clear()


@functools.cache
def bodiless() -> frozenset[tuple[str, str]]:
    """(method, route under /api/) of each call that takes no body, as the API's OpenAPI
    schema says (read once, on the first body sent to the API)."""
    paths = _SCHEMA[0]()["paths"] if _SCHEMA else {}
    return frozenset(
        (method.upper(), re.sub(r"\{(\w+)\}", r"<\1>", path.removeprefix(PREFIX)))
        for path, operations in paths.items()
        for method, operation in operations.items()
        if "requestBody" not in operation
    )


def no_body(request: HttpRequest) -> JsonResponse:
    """A body sent to a call that takes none: refused, not ignored (what it says would
    not be done, as a field a body does not declare is refused)."""
    message = f"{request.method} {request.path_info} takes no body"
    hint = "send it without one (null or an empty object, {}, is taken as none)"
    error = {"code": "invalid", "message": message, "hint": hint, "fields": {"body": message}}
    return JsonResponse({"error": error}, status=400)


def too_large(limit: int, size: int) -> JsonResponse:
    mib = f"{limit / (1024 * 1024):g} MiB"
    message = f"the body has {size} bytes; this call takes at most {limit} ({mib})"
    error = {"code": "too_large", "message": message, "hint": "", "fields": {"body": message}}
    return JsonResponse({"error": error}, status=413)


def unauthorized() -> JsonResponse:
    message = "a valid API token is needed"
    hint = "send Authorization: Bearer <token>; make one on the API tokens page"
    error = {"code": "unauthorized", "message": message, "hint": hint, "fields": {}}
    return JsonResponse({"error": error}, status=401)


def no_such_call(request: HttpRequest, allowed: str = "") -> JsonResponse:
    """A path under /api/ that is no call of the API (404, ``not_found``), or a method its
    path does not take (405, ``method_not_allowed``, with the methods it takes): the API's
    error JSON, not Django's HTML page or Ninja's text."""
    call = f"{request.method} {request.path_info}"
    if allowed:
        message, hint = f"{call}: this path takes {allowed}", ""
    else:
        message, hint = f"{call} is no call of the API", "the calls are listed at /api/docs"
    code = "method_not_allowed" if allowed else "not_found"
    error = {"code": code, "message": message, "hint": hint, "fields": {}}
    answer = JsonResponse({"error": error}, status=405 if allowed else 404)
    if allowed:
        answer["Allow"] = allowed
    return answer


def server_failed(request: HttpRequest, status: int) -> JsonResponse:
    """A call the server failed on (a bug of ours, logged with its traceback by Django):
    the API's error JSON, never Django's page, which with DEBUG shows the traceback."""
    message = f"{request.method} {request.path_info}: the server failed on this call"
    hint = "the server's log says why; try again, or tell its operator"
    error = {"code": "server_error", "message": message, "hint": hint, "fields": {}}
    return JsonResponse({"error": error}, status=status)


def _size(request: HttpRequest) -> int:
    """The body's size as the server received it (ASGI: a file), else as announced."""
    stream: Any = getattr(request, "_stream", None)  # Django's own; read() reads it
    if stream is not None and getattr(stream, "seekable", lambda: False)():
        size = stream.seek(0, os.SEEK_END)
        stream.seek(0)
        return int(size)
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def _read(request: HttpRequest, limit: int) -> bytes:
    """The body, at most ``limit`` + 1 bytes of it, set as the request's body (as Django's
    own ``HttpRequest.body`` does) so that whatever reads it later gets these bytes."""
    data = request.read(limit + 1)
    request._body = data  # type: ignore[attr-defined]
    return data


def _parse(data: bytes, limit: int) -> Any:
    try:
        return jsonin.loads(data, max_bytes=limit, no_nul=True)
    except jsonin.JsonRefused as exc:
        return exc


class ApiBodyLimit:
    """The middleware; see the module's docstring."""

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Awaitable[HttpResponse]]) -> None:
        self.get_response = get_response
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(PREFIX):
            return await self.get_response(request)
        route = _api_route(request.path_info)
        if route is None:
            return no_such_call(request)
        answer = await self._call(request, route)
        if isinstance(answer, HttpResponseNotAllowed):  # Ninja's, in plain text
            return no_such_call(request, allowed=answer["Allow"])
        if answer.status_code == 404 and answer["Content-Type"].startswith("text/html"):
            return no_such_call(request)  # Django's page (for /api/ itself: Ninja's root)
        if answer.status_code >= 500 and answer["Content-Type"].startswith("text/html"):
            return server_failed(request, answer.status_code)  # Django's page of an error
        return answer

    async def _call(self, request: HttpRequest, route: str) -> HttpResponse:
        limit = BODY_LIMITS.get((request.method or "", route), MAX_BODY_BYTES)
        announced = _size(request)
        if announced > limit:
            return too_large(limit, announced)
        if announced or request.META.get("HTTP_TRANSFER_ENCODING"):
            token = bearer_token(str(request.META.get("HTTP_AUTHORIZATION", "")))
            user = await database_sync_to_async(api_token_user)(secret=token) if token else None
            if user is None:
                return unauthorized()
            setattr(request, TOKEN_USER, (token, user))
            data = await asyncio.to_thread(_read, request, limit)
            if len(data) > limit:  # more came than was announced
                return too_large(limit, len(data))
            if data and not data.isspace():  # (no copy of a big body, on the loop)
                parsed = await asyncio.to_thread(_parse, data, limit)
                if _says_something(parsed) and (request.method, route) in await _bodiless():
                    return no_body(request)
                setattr(request, PARSED, parsed)
        return await self.get_response(request)
