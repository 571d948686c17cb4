"""The JSON API under /api/: what a script does with the dashboard (runs, scenarios,
replays, batches, schedules), with a person's token: one router per resource, mounted
here on one NinjaAPI.

Built on Django Ninja: async views like the rest of the run paths, request and answer
schemas (pydantic) that are also the OpenAPI schema (``/api/openapi.json``) and the
interactive docs (``/api/docs``).  Every call sends ``Authorization: Bearer tw_…``, a token
its owner made on the tokens page (dashboard/accounts/views.py); the token acts as its owner
and sees exactly what the owner sees on the pages (the same selectors), no more.

Every error has one shape, whatever went wrong::

    {"error": {"code": "not_found", "message": "no such run", "hint": "", "fields": {}}}

``code`` is one of API_CODES or an engine error's code (automation.errors); ``fields``
names the request's fields at fault, when it is about them.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.operation import Operation

from automation.errors import TabwrightError
from dashboard.api import batches, handlers, runs, scenarios, schedules
from dashboard.api.bodylimit import schema_from
from dashboard.api.common import ApiError, BoundedParser, TokenAuth
from dashboard.lib.jsonin import JsonRefused


class _Api(NinjaAPI):
    """Operation ids as they were when the API was one module (``dashboard_api_<view>``):
    clients generated from the OpenAPI schema keep their method names."""

    def get_openapi_operation_id(self, operation: Operation) -> str:
        return f"dashboard_api_{operation.view_func.__name__}"


api = _Api(
    title="Tabwright",
    parser=BoundedParser(),
    version="1",
    description="Runs, replays and scenarios of a Tabwright dashboard. Authenticate with "
    "`Authorization: Bearer <token>` (make a token on the dashboard's API tokens page).",
    auth=TokenAuth(),
    urls_namespace="api",
)
schema_from(api.get_openapi_schema)  # a body sent to a call that takes none is refused


# -- one error shape --------------------------------------------------------------------


def _error(
    request: HttpRequest, status: int, code: str, message: str, hint: str = "",
    fields: dict[str, str] | None = None,
) -> HttpResponse:  # fmt: skip
    body = {"error": {"code": code, "message": message, "hint": hint, "fields": fields or {}}}
    return api.create_response(request, body, status=status)


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return _error(request, exc.status, exc.code, exc.message, exc.hint, exc.fields)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    hint = "send Authorization: Bearer <token>; make one on the API tokens page"
    return _error(request, 401, "unauthorized", "a valid API token is needed", hint)


@api.exception_handler(NinjaValidationError)
def _invalid(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    fields = {}
    for error in exc.errors:
        loc = [str(part) for part in error.get("loc", ())]
        # ("query", "limit"), or ("body", <the body parameter>, "task"): name the field.
        parts = loc[2:] if loc[:1] == ["body"] and len(loc) > 2 else loc[1:]
        said = "no such field" if error.get("type") == "extra_forbidden" else error.get("msg")
        fields[".".join(parts) or "body"] = str(said or "invalid")
    return _error(request, 400, "invalid", "the request is not valid", fields=fields)


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, 404, "not_found", str(exc) or "not found")


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    cause = exc.__cause__
    if isinstance(cause, JsonRefused):  # the body, read by BoundedParser
        status, code = (413, "too_large") if cause.code == "too_large" else (400, "invalid")
        return _error(request, status, code, cause.message, fields={"body": cause.message})
    return _error(request, exc.status_code, "http_error", str(exc))


@api.exception_handler(TabwrightError)
def _engine_error(request: HttpRequest, exc: TabwrightError) -> HttpResponse:
    return _error(request, 400, exc.code, exc.message, exc.hint)


for resource in (runs, scenarios, handlers, batches, schedules):
    api.add_router("", resource.router)
