"""Redesigned back offices (fixtures/reskin/, measured whole by bench/reskin.py): a task
recorded on one design of the back office replays on designs that keep its routes and data
but change markup and navigation, judged by the back office's own data."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from automation import BrowserSession
from bench.reskin import record_on, replay_on
from bench.reskinapp import Store, serve_backoffice

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def backoffice() -> Iterator[tuple[str, Store]]:
    with serve_backoffice() as served:
        yield served


async def test_the_recording_adds_the_customer_and_replays_on_a_sidebar_design(
    browser: BrowserSession, backoffice: tuple[str, Store]
) -> None:
    base, store = backoffice
    recording = await record_on(browser, base, store, "plain")
    assert recording.ok, recording.error
    assert recording.parts[4] == "link:customers/new"
    pair = await replay_on(base, store, recording, "twin")
    assert pair.task_ok and pair.status == "passed" and not pair.wrong, pair
