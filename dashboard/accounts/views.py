"""The API tokens page: a person makes tokens for the JSON API (dashboard/api/), sees
each one once, lists them (name, its first characters, made, last used) and revokes them;
and the page of a sign-in locked after too many failed attempts."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from automation.errors import ActionInvalid
from dashboard.accounts import services
from dashboard.models import ApiToken


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    """GET: the person's tokens; POST (``name``): a new one, shown on this answer only.
    The page's form carries a one-time ``once``: the same form sent again (a reload of
    the answer, the back button) makes no second token, and says so."""
    made, error, status = "", "", 200
    if request.method == "POST":
        once = request.POST.get("once")
        unused: list[str] = request.session.get(_ONCE_KEY, [])
        if once is not None and once not in unused:
            error, status = _SENT_AGAIN, 409
        else:
            if once is not None:
                request.session[_ONCE_KEY] = [o for o in unused if o != once]
            try:
                _, made = services.api_token_create(
                    owner=request.user, name=request.POST.get("name", "")
                )
            except ActionInvalid as exc:
                error, status = exc.message, 400
    once = secrets.token_urlsafe(12)
    request.session[_ONCE_KEY] = [*request.session.get(_ONCE_KEY, [])[-9:], once]
    tokens = ApiToken.objects.filter(owner=request.user)
    response = render(request, "account/tokens.html",
                      {"tokens": tokens, "made": made, "error": error, "once": once},
                      status=status)  # fmt: skip
    response["Cache-Control"] = "no-store"  # the token shown once must not be kept anywhere
    return response


_ONCE_KEY = "token_form_once"  # the session's unused form marks of the tokens page
_SENT_AGAIN = (
    "This form was sent already (a reload, or the back button): no second token was "
    "made. The token made then is listed below; its value was shown once."
)


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    if not services.api_token_revoke(owner=request.user, token_id=token_id):
        raise Http404("no such token of yours")
    return redirect("api_tokens")


def login_locked_out(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None
) -> HttpResponse:
    """django-axes' answer to a login for a username and address locked after too many
    failed attempts (settings AXES_*): a page that says so and for how long, status 429."""
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    context = {
        "username": (credentials or {}).get("username") or request.POST.get("username", ""),
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": minutes,
    }
    return render(request, "registration/locked.html", context, status=429)
