"""What every router of the JSON API shares: the token check, the bounded body parser,
the one error shape."""

from __future__ import annotations

from typing import Annotated, Any

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from ninja import Schema
from ninja.parser import Parser
from ninja.security import HttpBearer
from pydantic import BeforeValidator, ConfigDict

from dashboard.accounts import services
from dashboard.api.bodylimit import PARSED, TOKEN_USER
from dashboard.lib import jsonin
from dashboard.scenarios.forms import MAX_SCENARIO_BYTES

API_CODES = (
    "unauthorized", "not_found", "forbidden", "invalid", "too_large", "not_live", "refused",
    "unreachable", "http_error", "server_error", "method_not_allowed",
)  # fmt: skip
MAX_EVENTS = 1_000  # per call; ask again with ``after`` for more
MAX_LIST = 500


# A replay's parameter values: texts, numbers and true/false taken as their text.
ParamValues = dict[str, Annotated[str, BeforeValidator(jsonin.as_text)]]


class ApiError(Exception):
    """An answer in the one error shape; ``fields``: the request's fields at fault."""

    def __init__(
        self, status: int, code: str, message: str, hint: str = "",
        fields: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.status, self.code, self.message, self.hint, self.fields = (
            status, code, message, hint, fields or {},
        )  # fmt: skip


class TokenAuth(HttpBearer):
    """``Authorization: Bearer <token>``: the token's owner, if the token is known."""

    def authenticate(self, request: HttpRequest, token: str) -> AbstractBaseUser | None:
        checked = getattr(request, TOKEN_USER, None)  # by ApiBodyLimit, before the body
        if checked is not None and checked[0] == token:
            user = checked[1]
        else:
            user = services.api_token_user(secret=token)
        if user is not None:
            request.user = user  # type: ignore[assignment]  # what the selectors are given
        return user


class BodyIn(Schema):
    """A request's body: each field of the JSON type it declares, as the OpenAPI schema
    says (pydantic's lax mode took ``true`` for a number, 1 and 0 for true and false, and
    ``"3"`` for 3: a mistake answered as if it were meant), and no field it does not
    declare (a misspelt one was dropped, and the call went on without it: a PUT of the
    login scenario forgot the login).  (No body holds a NUL: ApiBodyLimit's parse refuses
    one, off the event loop.)"""

    model_config = ConfigDict(strict=True, extra="forbid")


class BoundedParser(Parser):
    """Request bodies through dashboard.lib.jsonin: bounded in size and nesting, so no body
    can exhaust the parser (the page's commands and the act API are read the same way).
    The body was read and parsed off the event loop, within the call's limit, by
    dashboard.api.bodylimit.ApiBodyLimit; a request that did not pass there (a test's
    request factory) is parsed here, within the largest limit."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        parsed = getattr(request, PARSED, None)
        if parsed is None:
            parsed = jsonin.loads(request.body, max_bytes=MAX_SCENARIO_BYTES, no_nul=True)
        if isinstance(parsed, jsonin.JsonRefused):
            raise parsed
        if not isinstance(parsed, dict):  # else read as {}: every field its default
            raise jsonin.JsonRefused("bad_json", "the body must be a JSON object")
        return parsed


class ErrorBody(Schema):
    code: str
    message: str
    hint: str = ""
    fields: dict[str, str] = {}


class ErrorOut(Schema):
    error: ErrorBody


ERRORS: dict[int, type[Schema]] = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut}
