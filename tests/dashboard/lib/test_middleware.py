"""A request's middleware runs on the event loop where nothing can block: the common,
authentication, content-security and (unless a view used them) messages hooks no longer go
to Django's thread for sync code."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.test import AsyncClient

from dashboard.models import Scenario

pytestmark = pytest.mark.django_db(transaction=True)

# Saving a changed session, and the three that Django's deployment checks look for by
# their own names.
MAY_BLOCK = {
    "SessionMiddleware.process_request",
    "SessionMiddleware.process_response",
    "SecurityMiddleware.process_request",
    "SecurityMiddleware.process_response",
    "CsrfViewMiddleware.process_request",
    "CsrfViewMiddleware.process_view",
    "CsrfViewMiddleware.process_response",
    "XFrameOptionsMiddleware.process_response",
}


def handed_to_the_thread(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of each sync function that goes to the request's thread, noted."""
    handed: list[str] = []
    hand = SyncToAsync.__call__

    async def noted(self: SyncToAsync, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(self.func, "__qualname__", ""))
        return await hand(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", noted)
    return handed


async def test_hooks_that_never_block_stay_on_the_event_loop(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = AsyncClient()
    await client.aforce_login(owner)
    handed = handed_to_the_thread(monkeypatch)
    client.cookies["csrftoken"] = "x" * 32
    answer = await client.post(
        "/runs/0/act", data="{}", content_type="application/json", HTTP_X_CSRFTOKEN="x" * 32
    )
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
    hooks = {name for name in handed if ".process_" in name}
    assert hooks <= MAY_BLOCK, hooks - MAY_BLOCK
    # What the response carries is set all the same.
    assert answer["X-Frame-Options"] == "DENY"
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" in answer


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
