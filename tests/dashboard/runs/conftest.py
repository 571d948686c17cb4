"""Fixtures of the run tests: the back office (tests/backoffice.py) with the secrets
that sign in to it in the environment; conversations' tabs kept between messages."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.backoffice import PASSWORD, SEED, BackOffice, back_office


@pytest.fixture
def office(monkeypatch: pytest.MonkeyPatch) -> Iterator[BackOffice]:
    monkeypatch.setenv("TABWRIGHT_SECRET_BO_PASSWORD", PASSWORD)
    monkeypatch.setenv("TABWRIGHT_SECRET_BO", SEED)
    with back_office() as office:
        yield office


@pytest.fixture
def keep_tabs(settings: Any) -> Callable[..., None]:
    """Keep a conversation's tab between messages (conftest keeps none by default)."""

    def keep(idle_s: int = 60, per_user: int = 3) -> None:
        settings.TABWRIGHT = {
            **settings.TABWRIGHT, "SESSION_IDLE_S": idle_s, "SESSIONS_PER_USER": per_user,
        }  # fmt: skip

    keep()
    return keep


@pytest.fixture
def form_url(fixture_url: str) -> str:
    return f"{fixture_url}/demo/form.html"
