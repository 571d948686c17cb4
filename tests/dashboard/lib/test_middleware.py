"""A request's middleware runs on the event loop where nothing can block: only the hooks
that may reach the database or a file go to Django's thread for sync code."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.test import AsyncClient

pytestmark = pytest.mark.django_db(transaction=True)

# Saving a changed session, the messages' session storage, a form's fields read for CSRF.
MAY_BLOCK = {
    "SessionMiddleware.process_request",
    "SessionMiddleware.process_response",
    "MessageMiddleware.process_request",
    "MessageMiddleware.process_response",
    "CsrfViewMiddleware.process_view",
}


async def test_only_hooks_that_may_block_leave_the_event_loop(
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
    # What the response carries is set all the same: the headers of the security, frame
    # and content-security middlewares.
    assert answer["X-Frame-Options"] == "DENY"
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" in answer
