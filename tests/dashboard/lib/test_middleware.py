"""A request's middleware runs on the event loop where nothing can block: Django's security,
session, common, CSRF, authentication, frame-options and content-security hooks no longer
go to Django's thread for sync code; what may block (saving a changed session, stored
messages, a form's CSRF check that parses its body, a refusal's page) still does."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.test import AsyncClient

from dashboard.models import Scenario
from tests.dashboard.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "x" * 32


def handed_to_the_thread(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of each sync function that goes to the request's thread, noted."""
    handed: list[str] = []
    hand = SyncToAsync.__call__

    async def noted(self: SyncToAsync, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(self.func, "__qualname__", ""))
        return await hand(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", noted)
    return handed


async def checked_client(owner: Any) -> AsyncClient:
    """Logged in as ``owner``, with a CSRF cookie of TOKEN, checked as a browser is."""
    client = AsyncClient(enforce_csrf_checks=True)
    await client.aforce_login(owner)
    client.cookies["csrftoken"] = TOKEN
    return client


def hooks(handed: list[str]) -> set[str]:
    return {name for name in handed if ".process_" in name or "._reject" in name}


async def test_a_json_call_s_hooks_all_stay_on_the_event_loop(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await checked_client(owner)
    handed = handed_to_the_thread(monkeypatch)
    answer = await client.post(
        "/runs/0/act", data="{}", content_type="application/json", headers={"X-CSRFToken": TOKEN}
    )
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
    assert hooks(handed) == set()
    # What the response carries is set all the same.
    assert answer["X-Frame-Options"] == "DENY"
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" in answer
    assert "Cookie" in answer["Vary"]  # the session was read


async def test_the_csrf_check_on_the_loop_still_refuses_a_wrong_or_missing_token(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await checked_client(owner)
    handed = handed_to_the_thread(monkeypatch)
    for header in ({"X-CSRFToken": "y" * 32}, {}):
        refused = await client.post(
            "/runs/0/act", data="{}", content_type="application/json", headers=header
        )
        assert refused.status_code == 403
        assert "CSRF verification failed" in refused.content.decode()
    # The refusal's page (a template) was made on the thread; the check itself was not.
    assert hooks(handed) == {"CsrfViewMiddleware._reject"}


async def test_a_form_s_csrf_check_reads_its_body_on_the_thread(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await checked_client(owner)
    scenario = await Scenario.objects.acreate(owner=owner, name="Kept")
    handed = handed_to_the_thread(monkeypatch)
    refused = await client.post(f"/scenarios/{scenario.pk}/delete", {"other": "field"})
    assert refused.status_code == 403
    assert await Scenario.objects.filter(pk=scenario.pk).aexists()
    assert {"CsrfViewMiddleware.process_view", "CsrfViewMiddleware._reject"} <= hooks(handed)
    handed.clear()
    gone = await client.post(f"/scenarios/{scenario.pk}/delete", {"csrfmiddlewaretoken": TOKEN})
    assert gone.status_code == 302
    assert not await Scenario.objects.filter(pk=scenario.pk).aexists()
    assert "CsrfViewMiddleware.process_view" in hooks(handed)


async def test_a_csrf_secret_kept_in_the_session_is_checked_on_the_thread(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.CSRF_USE_SESSIONS = True
    client = AsyncClient(enforce_csrf_checks=True)
    login = await client.get("/accounts/login/")  # its form's token; the secret, in the session
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.content.decode())
    assert token is not None
    handed = handed_to_the_thread(monkeypatch)
    refused = await client.post("/runs/0/act", data="{}", content_type="application/json")
    assert refused.status_code == 403
    assert {"CsrfViewMiddleware.process_request", "CsrfViewMiddleware.process_view"} <= hooks(
        handed
    )
    passed = await client.post(
        "/runs/0/act", data="{}", content_type="application/json",
        headers={"X-CSRFToken": token[1]},
    )  # fmt: skip
    assert passed.status_code == 401  # past the CSRF check: the act API asks for a login


async def test_a_changed_session_is_saved_on_the_thread(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = AsyncClient()
    handed = handed_to_the_thread(monkeypatch)
    login = await client.post(
        "/accounts/login/", {"username": owner.username, "password": PASSWORD}
    )
    assert login.status_code == 302
    assert "SessionMiddleware.process_response" in hooks(handed)
    handed.clear()
    page = await client.get("/")  # the saved session logs the next request in
    assert page.status_code == 200 and owner.username in page.content.decode()
    assert hooks(handed) == set()


async def test_messages_a_view_adds_are_stored_on_the_thread_and_shown_next(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = AsyncClient()
    await client.aforce_login(owner)
    scenario = await Scenario.objects.acreate(owner=owner, name="Old one")
    handed = handed_to_the_thread(monkeypatch)
    gone = await client.post(f"/scenarios/{scenario.pk}/delete")
    assert gone.status_code == 302
    assert "MessageMiddleware.process_response" in handed  # the session stores it
    shown = await client.get(gone["Location"])
    assert "Scenario &#x27;Old one&#x27; deleted." in shown.content.decode()
    again = await client.get(gone["Location"])  # shown once: read, then gone
    assert "deleted." not in again.content.decode()
