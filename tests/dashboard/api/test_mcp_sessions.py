"""The dashboard's MCP sessions (dashboard/api/mcp.py) and their runs: a session whose run no
worker opens in time is told so and its run is stopped while still queued (no browser is
opened later for nobody); the sessions of runs that have ended are forgotten."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from dashboard.api import mcp
from dashboard.models import Run
from dashboard.runs import services
from dashboard.runs.services import STOPPED_QUEUED

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio(loop_scope="session")]


async def test_a_session_no_worker_opens_is_stopped_and_its_next_call_starts_anew(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp, "START_WAIT_MS", 300)  # no worker runs in this test
    app = mcp.McpApp()
    assert await app._run_of("s1", owner, "a client") is None
    first = await database_sync_to_async(Run.objects.get)(kind=Run.Kind.MCP)
    assert (first.status, first.status_reason) == (Run.Status.STOPPED, STOPPED_QUEUED)
    assert await app._run_of("s1", owner, "a client") is None  # a new run, stopped too
    ids = await database_sync_to_async(list)(
        Run.objects.filter(kind=Run.Kind.MCP).values_list("status", flat=True)
    )
    assert ids == [Run.Status.STOPPED, Run.Status.STOPPED]
    assert app._runs == {}


async def test_the_sessions_of_ended_runs_are_forgotten(owner: Any) -> None:
    make = database_sync_to_async(services.run_create_mcp)
    ended, live = await make(owner=owner, client="a"), await make(owner=owner, client="b")
    await database_sync_to_async(services.run_stop_queued)(run_id=ended.pk)
    app = mcp.McpApp()
    app._runs = {"old": (ended.pk, owner.pk), "new": (live.pk, owner.pk)}
    await app._forget_ended()
    assert app._runs == {"new": (live.pk, owner.pk)}
