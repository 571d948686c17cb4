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
from django.db import IntegrityError
from django.utils import timezone

from automation.errors import Cancelled
from automation.events import RunFinished, RunStarted, SessionRestoring
from dashboard.models import Run, RunEvent, Step
from dashboard.runs import services
from dashboard.runs.runner import runner
from dashboard.runs.sink import DashboardSink
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


def test_a_run_whose_worker_died_before_it_started_is_queued_again(owner: Any) -> None:
    past = timezone.now() - timedelta(seconds=5)
    dead = "specific.a1b2!web-2.worker4242"
    # Claimed, its tab opened, its work not begun: nothing of it ran.
    fresh = a_run(owner, "fresh", status="pending", session="open", holder=dead,
                  lease_until=past)  # fmt: skip
    # A closed conversation that a message queued: claimed, its page not restored yet.
    again = a_run(owner, "again", status="pending", session="closed", holder=dead,
                  lease_until=past, queued_message="and now the invoices")  # fmt: skip
    RunEvent.objects.create(run=again, seq=1, type="run.started", data={"stretch": 1})
    RunEvent.objects.create(run=again, seq=2, type="user.message",
                            data={"text": "and now the invoices", "stretch": 1})  # fmt: skip
    Step.objects.create(run=again, index=0, action="navigate", args={"url": "x"})
    working = a_run(owner, "working", status="running", holder=dead, lease_until=past)

    swept = dict(services.runs_sweep_lost())

    assert set(swept) == {fresh.pk, again.pk, working.pk}
    for run, session in ((fresh, ""), (again, "closed")):
        run.refresh_from_db()
        assert (run.status, run.status_reason) == ("queued", services.REQUEUED)
        assert (run.holder, run.lease_until, run.finished_at) == ("", None, None)
        assert run.session == session  # no tab yet, or closed as before the claim
        assert swept[run.pk] == [{"type": "run.requeued", "reason": services.REQUEUED,
                                  "worker": "web-2.worker4242", "session": session,
                                  "seq": run.events.count(), "stretch": 1}]  # fmt: skip
    assert again.queued_message == "and now the invoices"  # the next worker goes on with it
    assert again.steps.count() == 1
    working.refresh_from_db()
    assert (working.status, working.status_reason) == ("failed", services.LOST_RUN)
    # Back in the queue where it was (the oldest first), for any worker to claim.
    assert services.run_claim(holder="specific.c3d4!web-3.worker7", lease_s=30) == fresh.pk
    assert services.run_claim(holder="specific.c3d4!web-3.worker7", lease_s=30) == again.pk


@pytest.mark.django_db(transaction=True)
async def test_a_worker_whose_claim_was_queued_again_writes_nothing_more_of_it(
    owner: Any,
) -> None:
    run = await sync_to_async(a_run)(owner, "t")
    slow, other = "specific.a1!web-1.worker1", "specific.b2!web-2.worker2"
    assert await sync_to_async(services.run_claim)(holder=slow, lease_s=30) == run.pk
    # The slow worker's lease ran out before its run started: swept, claimed by another.
    past = timezone.now() - timedelta(seconds=1)
    await sync_to_async(lambda: Run.objects.filter(pk=run.pk).update(lease_until=past))()
    await sync_to_async(services.runs_sweep_lost)()
    assert await sync_to_async(services.run_claim)(holder=other, lease_s=30) == run.pk

    late = DashboardSink(run.pk, 1, holder=slow, worker="web-1.worker1")
    with pytest.raises(Cancelled, match="no longer holds it"):  # it stops, at its start
        await late.emit(RunStarted("t", "", "rules"))
    await late.emit(RunFinished("failed", reason="stopped"))  # and says nothing more
    stored = await load_run(run.pk)
    assert (stored.status, stored.holder) == ("pending", other)
    types = await sync_to_async(lambda: list(run.events.values_list("type", flat=True)))()
    assert types == ["run.requeued"]

    mine = DashboardSink(run.pk, 1, holder=other, worker="web-2.worker2")
    await mine.emit(SessionRestoring(2))  # a restore is work under way: no longer pending
    assert (await load_run(run.pk)).status == "running"
    await mine.emit(RunStarted("t", "", "rules"))
    started = await sync_to_async(lambda: run.events.get(type="run.started").data)()
    assert started["worker"] == "web-2.worker2"  # each stretch says where it ran


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
    # Both in one trip to the thread this process's renewals and sweeps also take, so that
    # neither comes between (a renewal would undo the one, its own sweep do the other).

    def swept_elsewhere() -> list[int]:
        past = timezone.now() - timedelta(seconds=1)
        Run.objects.filter(pk=run.pk).update(lease_until=past)
        return [rid for rid, _ in services.runs_sweep_lost()]

    assert await sync_to_async(swept_elsewhere)() == [run.pk]
    ended = await receive_until(comm, of_type("run.finished"))
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


def test_a_status_and_the_event_that_sets_it_are_written_together_or_not_at_all(
    owner: Any,
) -> None:
    # A reader that sees a run ended finds its run.finished too: one transaction.
    run = a_run(owner, "ends", status="running", holder="me:1:a")
    RunEvent.objects.create(run=run, seq=1, type="run.started", data={})
    ended = {"status": "succeeded", "reason": "done"}
    finished = {"type": "run.finished", "status": "succeeded"}
    with pytest.raises(IntegrityError):  # the event can't be stored: the status isn't set
        services.run_set_status_with_event(
            run_id=run.pk, holder="me:1:a", status=ended, seq=1, type="run.finished", data=finished
        )
    run.refresh_from_db()
    assert run.status == "running" and run.finished_at is None
    # Not this holder's run any more: neither is written.
    assert not services.run_set_status_with_event(
        run_id=run.pk, holder="other:2:b", status=ended, seq=2, type="run.finished", data=finished
    )
    run.refresh_from_db()
    assert run.status == "running" and run.events.count() == 1
    assert services.run_set_status_with_event(
        run_id=run.pk, holder="me:1:a", status=ended, seq=2, type="run.finished", data=finished
    )
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert list(run.events.values_list("type", flat=True).order_by("seq")) == [
        "run.started", "run.finished"]  # fmt: skip


@pytest.mark.django_db(transaction=True)
async def test_an_event_another_process_took_the_number_of_goes_after_it_and_a_refused_one_says_so(
    owner: Any,
) -> None:
    """A store that failed was always taken for another process's event at the same number:
    a row the database refused ended the run as "no free event number", its cause unsaid."""
    from automation.events import LLMWaiting

    run = await sync_to_async(a_run)(owner, "t")
    sink = DashboardSink(run.pk, 0)
    await sink.emit(RunStarted("t", "", "rules"))
    # Another process (which declared the run lost) appended the next number meanwhile.
    await sync_to_async(RunEvent.objects.create)(run=run, seq=2, type="run.requeued", data={})
    await sink.emit(LLMWaiting(round=1, attempt=1))
    seqs = await sync_to_async(lambda: list(run.events.values_list("type", "seq")))()
    assert sorted(seqs, key=lambda pair: pair[1]) == [
        ("run.started", 1), ("run.requeued", 2), ("llm.waiting", 3),
    ]  # fmt: skip

    await sync_to_async(Run.objects.filter(pk=run.pk).delete)()  # its row is gone
    with pytest.raises(RuntimeError, match=r"the database refused its llm\.waiting event"):
        await sink.emit(LLMWaiting(round=2, attempt=1))
