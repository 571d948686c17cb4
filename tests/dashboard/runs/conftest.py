"""Fixtures of the run tests: the back office (tests/backoffice.py) with the secrets
that sign in to it in the environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.backoffice import PASSWORD, SEED, BackOffice, back_office


@pytest.fixture
def office(monkeypatch: pytest.MonkeyPatch) -> Iterator[BackOffice]:
    monkeypatch.setenv("TABWRIGHT_SECRET_BO_PASSWORD", PASSWORD)
    monkeypatch.setenv("TABWRIGHT_SECRET_BO", SEED)
    with back_office() as office:
        yield office
