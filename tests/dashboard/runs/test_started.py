"""A call for a run that may not have started yet waits for it (dashboard.runs.carry.started),
as the run's page sees it start: while the run is queued, and while a worker has claimed it
but not yet put it to work, within the caller's budget; then it is found where it lives.
A run that ends before it starts is live nowhere.  An MCP session's first call acts on a
run that has started, and its worker can end it while it waits for the next call."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from automation import Budget
from automation.errors import BudgetExceeded
from automation.mcp.session import McpSession
from dashboard.models import Run
from dashboard.runs import selectors, services
from dashboard.runs.carry import Place, started
from dashboard.runs.doorbell import wake
from dashboard.runs.runner import RunManager
from dashboard.runs.sink import relay_event
from tests.dashboard.conftest import Runs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio(loop_scope="session")]

HOLDER = "specific.worker!a1b2.worker42"  # a worker's channel, as its lease names it
HANG_S = 60  # bounds a wait that would otherwise hang; it ends when the run starts


async def new_run(owner: Any) -> int:
    run = await database_sync_to_async(services.run_create_mcp)(owner=owner, client="a client")
    return run.pk


def claim(run_id: int) -> None:
    """What a worker elsewhere does: the run is pending, held by it, not at work yet."""
    assert services.run_claim(holder=HOLDER, lease_s=30, run_id=run_id) == run_id


def at_work(run_id: int) -> None:
    Run.objects.filter(pk=run_id).update(
        status=Run.Status.RUNNING, lease_until=timezone.now() + timedelta(seconds=30)
    )


@pytest.mark.parametrize("claimed", [False, True], ids=["queued", "claimed, not at work"])
async def test_a_run_not_at_work_yet_is_waited_for_within_the_budget(
    owner: Any, claimed: bool
) -> None:
    run_id = await new_run(owner)
    if claimed:  # its holder is known already: it is not there yet all the same
        await database_sync_to_async(claim)(run_id)
    with pytest.raises(BudgetExceeded, match="opening"):
        await started(run_id, Budget(300, label="opening"))


async def test_a_run_that_starts_is_found_where_it_runs(owner: Any) -> None:
    run_id = await new_run(owner)
    waiting = asyncio.create_task(started(run_id, Budget(HANG_S * 1000)))
    await database_sync_to_async(claim)(run_id)
    await database_sync_to_async(at_work)(run_id)
    await relay_event(run_id, {"type": "run.started", "seq": 1})  # as its sink says it
    async with asyncio.timeout(HANG_S):
        place = await waiting
    assert place == Place(here=False, holder=HOLDER)


async def test_a_run_stopped_before_it_starts_is_live_nowhere(owner: Any) -> None:
    run_id = await new_run(owner)
    waiting = asyncio.create_task(started(run_id, Budget(HANG_S * 1000)))
    assert await database_sync_to_async(services.run_stop_queued)(run_id=run_id, reason="gone")
    async with asyncio.timeout(HANG_S):
        place = await waiting
    assert not place.live
    assert not (await started(run_id + 1000, Budget(1000))).live  # no such run


async def test_an_mcp_session_s_first_call_acts_on_a_started_run_and_the_worker_can_end_it(
    owner: Any, runs: Runs, worker: RunManager, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = await new_run(owner)
    runs.started.append(run_id)
    seen: list[str | None] = []  # the run's status as the call begins to act
    real_call = McpSession.call

    async def call(self: McpSession, *args: Any, **kwargs: Any) -> Any:
        seen.append(await database_sync_to_async(selectors.run_status)(run_id=run_id))
        return await real_call(self, *args, **kwargs)

    monkeypatch.setattr(McpSession, "call", call)
    await wake()
    await runs.claimed(run_id)  # live here; its tab may still be opening
    url = f"{fixture_url}/demo/form.html"
    answer = await worker.mcp_call(run_id, "navigate", {"url": url}, budget=Budget(HANG_S * 1000))
    assert answer["ok"], answer
    assert seen == [Run.Status.RUNNING]
    # The worker ends the session (as when it drains): at once, not at the session's idle
    # time, while it waits for its client's next call.
    async with asyncio.timeout(HANG_S):
        await worker.end(run_id, "the worker stopped")
    assert await database_sync_to_async(selectors.run_status)(run_id=run_id) == "stopped"
