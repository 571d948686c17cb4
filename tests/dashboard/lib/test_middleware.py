"""A request's middleware runs on the event loop where nothing can block: the common,
authentication and content-security hooks no longer go to Django's thread for sync code."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.test import AsyncClient

pytestmark = pytest.mark.django_db(transaction=True)

# Saving a changed session, the messages' session storage, and the three that Django's
# deployment checks look for by their own names.
MAY_BLOCK = {
    "SessionMiddleware.process_request",
    "SessionMiddleware.process_response",
    "MessageMiddleware.process_request",
    "MessageMiddleware.process_response",
    "SecurityMiddleware.process_request",
    "SecurityMiddleware.process_response",
    "CsrfViewMiddleware.process_request",
    "CsrfViewMiddleware.process_view",
    "CsrfViewMiddleware.process_response",
    "XFrameOptionsMiddleware.process_response",
}


async def test_hooks_that_never_block_stay_on_the_event_loop(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = AsyncClient()
    await client.aforce_login(owner)
    handed: list[str] = []
    hand = SyncToAsync.__call__

    async def noted(self: SyncToAsync, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(self.func, "__qualname__", ""))
        return await hand(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", noted)
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
