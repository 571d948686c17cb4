"""Leases: the process that drives a run vouches for it in the database, renews it while
the run lives, and a run whose process stopped renewing is marked lost by another (its
steps and events kept, the loss appended as an event).  SQLite here; the same on
PostgreSQL with several processes in tests/e2e/test_shared_backends_e2e.py."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from dashboard.models import Run, RunEvent, Step
from dashboard.runs import services
from dashboard.runs.runner import runner
from tests.dashboard.conftest import OpenSocket, Runs
from tests.dashboard.sockets import connected_socket, load_run, of_type, receive_until
from tests.tasks import AMBIGUOUS_TASK

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db


def a_run(owner: Any, task: str, **fields: Any) -> Run:
    return Run.objects.create(owner=owner, task=task, start_url="", **fields)


def test_runs_whose_lease_ran_out_are_lost_and_say_so(owner: Any) -> None:
    past, future = timezone.now() - timedelta(seconds=5), timezone.now() + timedelta(hours=1)
    working = a_run(owner, "working", status="running", holder="gone:1:a", lease_until=past)
    RunEvent.objects.create(run=working, seq=1, type="run.started", data={"stretch": 1})
    Step.objects.create(run=working, index=0, action="navigate", args={"url": "x"})
    idle = a_run(owner, "idle", status="succeeded", session="open", lease_until=past)
    held = a_run(owner, "held", status="paused", holder="alive:2:b", lease_until=future)
    unheld = a_run(owner, "unheld", status="running")  # no lease: not the sweep's

    swept = dict(services.runs_sweep_lost())

    assert set(swept) == {working.pk, idle.pk}
    working.refresh_from_db()
    assert (working.status, working.status_reason) == ("failed", services.LOST_RUN)
    assert working.finished_at is not None and working.lease_until is None
    assert working.steps.count() == 1  # what it did is kept
    stored = list(working.events.order_by("seq").values_list("seq", "type", "data"))
    assert [(seq, kind) for seq, kind, _ in stored] == [(1, "run.started"), (2, "run.finished")]
    assert stored[1][2]["reason"] == services.LOST_RUN and stored[1][2]["seq"] == 2
    assert swept[working.pk] == [stored[1][2]]  # what is relayed is what is stored
    idle.refresh_from_db()
    assert (idle.status, idle.session, idle.session_reason) == (
        "succeeded", "closed", services.LOST_SESSION,
    )  # fmt: skip
    assert [e["type"] for e in swept[idle.pk]] == ["session.closed"]
    for run in (held, unheld):
        before = (run.status, run.lease_until)
        run.refresh_from_db()
        assert (run.status, run.lease_until) == before
    assert services.runs_sweep_lost() == []  # done once


def test_at_start_a_shared_database_closes_only_runs_nobody_holds(owner: Any) -> None:
    old = timezone.now() - timedelta(minutes=10)
    stale = a_run(owner, "stale", status="running")
    fresh = a_run(owner, "fresh", status="pending")  # its process may be about to hold it
    held = a_run(owner, "held", status="running", lease_until=timezone.now() + timedelta(60))
    queued = a_run(owner, "queued", status="queued")  # waits for any worker, however long
    Run.objects.filter(pk__in=[stale.pk, held.pk, queued.pk]).update(created_at=old)
    assert services.runs_mark_unheld(older_than_s=60) == 1
    assert [Run.objects.get(pk=r.pk).status for r in (stale, fresh, held, queued)] == [
        "failed", "pending", "running", "queued",
    ]  # fmt: skip


async def paused_with_leases(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str, settings: Any
) -> tuple[Run, WebsocketCommunicator]:
    """Leases on (3 s), and a run paused by its ambiguous click, watched."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "LEASE_S": 3}
    run = await runs.create(
        owner=owner, task=AMBIGUOUS_TASK, start_url=f"{fixture_url}/demo/list.html"
    )
    comm = await connected_socket(open_socket, run, owner)
    await runs.start(run)
    await receive_until(comm, of_type("run.paused"))
    return run, comm


@pytest.mark.django_db(transaction=True)
async def test_a_live_run_holds_its_lease_renews_it_and_lets_it_go(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str, settings: Any
) -> None:
    run, _ = await paused_with_leases(runs, open_socket, owner, fixture_url, settings)
    first = await load_run(run.pk)
    assert first.holder == runner.leases.holder and first.lease_until is not None
    await asyncio.sleep(1.5)  # a renewal comes every third of the lease
    renewed = await load_run(run.pk)
    assert renewed.lease_until is not None and renewed.lease_until > first.lease_until
    await runner.end(run.pk, "the test is done")
    assert (await load_run(run.pk)).lease_until is None  # nobody needs to vouch for it


@pytest.mark.django_db(transaction=True)
async def test_a_run_declared_lost_elsewhere_is_stopped_by_its_process(
    runs: Runs, open_socket: OpenSocket, owner: Any, fixture_url: str, settings: Any
) -> None:
    run, comm = await paused_with_leases(runs, open_socket, owner, fixture_url, settings)
    # Another process found the lease run out (this one was too slow to renew) and swept
    # it: its lease made to have run out, then its sweep, as that process would do it.
    past = timezone.now() - timedelta(seconds=1)
    await sync_to_async(lambda: Run.objects.filter(pk=run.pk).update(lease_until=past))()
    assert [rid for rid, _ in await sync_to_async(services.runs_sweep_lost)()] == [run.pk]
    ended = await receive_until(comm, of_type("run.finished"), timeout_s=10)
    assert ended[-1]["status"] == "failed" and "lost" in ended[-1]["reason"]
    await runner.wait_closed(run.pk)
    assert not runner.is_live(run.pk)
    # Its own last events went after the one the sweep appended: none was lost.
    seqs = await sync_to_async(
        lambda: list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    )()
    assert sorted(seqs) == list(range(1, len(seqs) + 1))
    kinds = await sync_to_async(
        lambda: list(
            RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True)
        )
    )()
    assert kinds.count("run.finished") == 2  # the sweep's, then the holder's own stop
