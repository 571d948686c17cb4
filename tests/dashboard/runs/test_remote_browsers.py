"""A worker that reaches running Chromes by CDP URL instead of launching one: with several
(TABWRIGHT_CDP_URL separated by spaces or commas) it spreads its runs over them, passes
over one it can't reach, and a malformed setting is refused when any command starts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from dashboard.models import Run
from tests.conftest import chromium_cdp
from tests.dashboard.conftest import Runs
from tests.dashboard.sockets import load_run
from tests.net import free_port
from tests.tasks import AMBIGUOUS_TASK

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db


@pytest.fixture
def two_chromes() -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        yield stack.enter_context(chromium_cdp()), stack.enter_context(chromium_cdp())


def pages_on(cdp_url: str) -> list[str]:
    """The addresses of the pages open in the Chrome at ``cdp_url``, as it tells them."""
    targets = httpx.get(f"{cdp_url}/json/list", timeout=5).json()
    return [t["url"] for t in targets if t["type"] == "page" and t["url"] != "about:blank"]


async def paused(runs: Runs, owner: Any, url: str) -> Run:
    """A run that pauses on the ambiguous Delete, once it has."""
    run = await runs.start(await runs.create(owner=owner, task=AMBIGUOUS_TASK, start_url=url))
    async with asyncio.timeout(30):
        while True:
            if (await load_run(run.pk)).status == Run.Status.PAUSED:
                return run
            await asyncio.sleep(0.05)


@pytest.mark.django_db(transaction=True)
async def test_runs_spread_over_the_running_chromes_and_skip_one_that_is_down(
    runs: Runs, owner: Any, fixture_url: str, settings: Any, two_chromes: tuple[str, str]
) -> None:
    first, second = two_chromes
    down = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    settings.TABWRIGHT = {**settings.TABWRIGHT, "CDP_URL": f"{down}, {first}  {second}"}
    orders = f"{fixture_url}/demo/list.html"
    one = await paused(runs, owner, orders)
    assert pages_on(first) == [orders] and pages_on(second) == []  # past the one down
    await paused(runs, owner, orders)
    assert pages_on(first) == [orders] and pages_on(second) == [orders]  # the least busy

    await runs.manager.end(one.pk, "the test ended")
    assert (await load_run(one.pk)).status == Run.Status.STOPPED
    assert pages_on(first) == []  # its tab closed in that Chrome; the Chrome runs on
    await paused(runs, owner, orders)
    assert pages_on(first) == [orders]


def test_a_malformed_cdp_url_is_refused_when_a_command_starts(settings: Any) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "CDP_URL": "http://127.0.0.1:9222 chrome:9222"}
    with pytest.raises(SystemCheckError, match=r"TABWRIGHT_CDP_URL 'chrome:9222'"):
        call_command("check")
