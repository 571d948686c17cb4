"""A firing's verdict stays true: a scheduled replay or batch told it waits for a person
follows how it ends (ok, failed — told again, once — or stopped), however long it runs; a
pause its person asked for (to watch it) is no wait for a person, and is never told; the
alerts reach a real webhook receiver on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from dashboard.jobs import outbox, schedules
from dashboard.jobs import services as job_services
from dashboard.models import Batch, Delivery, Run, Scenario, Schedule, ScheduleFiring
from dashboard.runs import services as run_services
from dashboard.runs.runner import RunManager
from dashboard.scenarios import services as scenario_services
from tests.dashboard.api.test_api import Api, token_of
from tests.dashboard.conftest import Runs
from tests.dashboard.jobs.conftest import Receiver, make
from tests.waiting import eventually

pytestmark = pytest.mark.django_db

WAITS = "needs_person: which Delete?"
# As the runner words a pause the person asked for (automation.recording.replayperson).
ASKED = "requested: paused by the person before step 1. Do the step yourself in the live view"


def _batch_firing(scenario: Scenario, hook: str) -> tuple[ScheduleFiring, list[int]]:
    """A scheduled batch of two rows, fired, both rows' replays started."""
    rows = [{"name": name, "greet": name} for name in ("Ada", "Bo")]
    schedule = make(scenario, rows=rows, webhook_url=hook)
    firing = schedules.fire(schedule.pk, schedule.next_fire_at + timedelta(seconds=1))
    assert firing is not None and firing.batch_id is not None
    started = job_services.batch_advance(batch_id=firing.batch_id)
    assert len(started) == 2
    return firing, started


def _told(firing: ScheduleFiring) -> list[tuple[str, str]]:
    """The alerts the receiver got about the firing: (event, outcome) each, in turn."""
    while async_to_sync(outbox.send_due)():
        pass
    bodies = [json.loads(body) for _headers, body in Receiver.got]
    return [(b["event"], b["firing"]["outcome"]) for b in bodies if b["firing"]["id"] == firing.pk]


def _ends(run_id: int, status: Run.Status, reason: str = "") -> None:
    run_services.run_set_status(run_id=run_id, status=status, reason=reason)


def test_a_batch_told_it_waits_for_a_person_is_told_again_when_rows_fail(
    scenario: Scenario, receiver: str
) -> None:
    firing, (first, second) = _batch_firing(scenario, receiver)
    _ends(first, Run.Status.PAUSED, WAITS)
    assert [f.pk for f in schedules.judge_all()] == [firing.pk]
    assert _told(firing) == [("firing.needs_person", "needs_person")]

    _ends(second, Run.Status.FAILED, "step 4: expected text 'Welcome, Bo!' is visible")
    _ends(first, Run.Status.FAILED, "no one came within 900 s")  # the wait given up
    job_services.batch_advance(batch_id=firing.batch_id)
    assert Batch.objects.get(pk=firing.batch_id).status == Batch.Status.DONE
    assert [f.pk for f in schedules.judge_all()] == [firing.pk]
    for _ in range(2):  # later polls: judged, told once
        assert schedules.judge_all() == []
    firing.refresh_from_db()
    assert (firing.outcome, firing.error) == (
        "failed", "2 of 2 rows failed; row 1: no one came within 900 s"
    )  # fmt: skip
    assert _told(firing) == [
        ("firing.needs_person", "needs_person"), ("firing.failed", "failed")
    ]  # fmt: skip
    assert Delivery.objects.filter(firing=firing).count() == 2


@pytest.mark.parametrize(
    ("ended", "outcome"),
    [
        ((Run.Status.SUCCEEDED, Run.Status.SUCCEEDED), "ok"),  # the person answered
        ((Run.Status.STOPPED, None), "stopped"),  # its owner stopped the batch
    ],
)
def test_a_batch_told_it_waits_for_a_person_follows_what_the_person_did_told_once(
    scenario: Scenario, receiver: str, ended: tuple[Run.Status, Any], outcome: str
) -> None:
    firing, (first, second) = _batch_firing(scenario, receiver)
    _ends(first, Run.Status.PAUSED, WAITS)
    schedules.judge_all()
    if outcome == "stopped":
        batch = Batch.objects.get(pk=firing.batch_id)
        for run_id in job_services.batch_stop(batch=batch):
            _ends(run_id, Run.Status.STOPPED, "stopped by olive")
    else:
        for run_id, status in zip((first, second), ended, strict=True):
            _ends(run_id, status)
        job_services.batch_advance(batch_id=firing.batch_id)
    assert schedules.judge_all() == []  # not told again
    firing.refresh_from_db()
    assert firing.outcome == outcome
    assert _told(firing) == [("firing.needs_person", "needs_person")]


def test_a_batch_running_longer_than_a_week_is_judged_when_it_ends(
    scenario: Scenario, receiver: str
) -> None:
    firing, started = _batch_firing(scenario, receiver)
    ScheduleFiring.objects.filter(pk=firing.pk).update(fired_at=timezone.now() - timedelta(days=30))
    assert schedules.judge_all() == []  # at work
    for run_id in started:
        _ends(run_id, Run.Status.FAILED, "step 4: gone")
    job_services.batch_advance(batch_id=firing.batch_id)
    assert [f.pk for f in schedules.judge_all()] == [firing.pk]
    firing.refresh_from_db()
    assert firing.outcome == "failed" and firing.alerted_at is not None
    assert _told(firing) == [("firing.failed", "failed")]


def test_a_batch_row_its_person_paused_is_no_wait_for_a_person(
    scenario: Scenario, receiver: str
) -> None:
    """A row paused by the person watching it is at work: the batch is told only of the
    row that waits for someone, and nothing of the pause asked for."""
    firing, (first, second) = _batch_firing(scenario, receiver)
    _ends(first, Run.Status.PAUSED, ASKED)
    assert schedules.judge_all() == []
    firing.refresh_from_db()
    assert (firing.outcome, firing.alerted_at) == ("", None)

    _ends(second, Run.Status.PAUSED, WAITS)
    assert [f.pk for f in schedules.judge_all()] == [firing.pk]
    firing.refresh_from_db()
    assert (firing.outcome, firing.error) == (
        "needs_person", f"1 of 2 rows needs person; row 2: {WAITS}"
    )  # fmt: skip
    for run_id in (first, second):
        _ends(run_id, Run.Status.SUCCEEDED)
    job_services.batch_advance(batch_id=firing.batch_id)
    assert schedules.judge_all() == []
    firing.refresh_from_db()
    assert firing.outcome == "ok"
    assert _told(firing) == [("firing.needs_person", "needs_person")]


# -- a scheduled replay, run by the worker in a real browser ------------------------------


def _heard(firing_id: int) -> list[str]:
    """The events the webhook receiver got about the firing, in turn (the worker's outbox
    sends them)."""
    bodies = [json.loads(body) for _headers, body in Receiver.got]
    return [body["event"] for body in bodies if body["firing"]["id"] == firing_id]


async def _fired(schedule: Schedule) -> ScheduleFiring:
    """The schedule due now, fired by the workers' poll: its replay claimed by the worker."""
    await Schedule.objects.filter(pk=schedule.pk).aupdate(next_fire_at=timezone.now())
    fired = await schedules.fire_due()
    assert len(fired) == 1 and fired[0].run_id is not None
    return fired[0]


async def _paused(run_id: int, reason: str) -> Run:
    async def check() -> bool:
        run = await Run.objects.aget(pk=run_id)
        return run.status == Run.Status.PAUSED and run.status_reason.startswith(reason)

    await eventually(check, what=f"run {run_id} paused: {reason}")
    return await Run.objects.aget(pk=run_id)


@pytest.mark.django_db(transaction=True)
async def test_a_replay_told_it_waits_for_a_person_is_told_again_when_it_then_fails(
    worker: RunManager, runs: Runs, owner: Any, fixture_url: str, receiver: str
) -> None:
    """The person did the step ("skip"), and a later check failed: told so, once, or the
    receiver's last word is that it waits for a person."""
    deleting = await sync_to_async(scenario_services.scenario_import)(
        owner=owner, data={
            "format": "tabwright.scenario", "version": 1, "name": "Delete an order",
            "steps": [{"action": "navigate", "args": {"url": f"{fixture_url}/demo/list.html"}},
                      {"action": "click", "args": {},  # one of five "Delete"
                       "identity": {"role": "button", "name": "Delete", "tag": "button"}},
                      {"action": "wait_for", "args": {"text": "Order 1001 deleted"}}],
        },
    )  # fmt: skip
    schedule = await sync_to_async(make)(deleting, params={}, webhook_url=receiver)
    firing = await _fired(schedule)
    await runs.claimed(firing.run_id)
    await _paused(firing.run_id, "needs_person:")
    await schedules.judge_outcomes()  # the poll: told it waits
    await eventually(lambda: _heard(firing.pk) == ["firing.needs_person"], what="told it waits")

    api = Api(await sync_to_async(token_of)(owner))
    answer = await api.post(f"/api/runs/{firing.run_id}/reply", {"text": "skip"})
    assert answer.status_code == 200, answer.content
    await runs.manager.wait_closed(firing.run_id)  # its end's hooks ran: judged
    run = await Run.objects.aget(pk=firing.run_id)
    assert run.status == Run.Status.FAILED and "Order 1001 deleted" in run.status_reason
    firing = await ScheduleFiring.objects.aget(pk=firing.pk)
    assert (firing.outcome, firing.error) == ("failed", run.status_reason)
    told = [d.payload["event"] async for d in Delivery.objects.filter(firing=firing).order_by("pk")]
    assert told == ["firing.needs_person", "firing.failed"]
    await eventually(
        lambda: _heard(firing.pk) == ["firing.needs_person", "firing.failed"],
        what="told it failed",
    )
    await schedules.judge_outcomes()  # later polls: told once
    assert await Delivery.objects.filter(firing=firing).acount() == 2


class Held(BaseHTTPRequestHandler):
    """A page whose answer is held until the test lets it go: the replay's first step
    surely at work when the person asks it to pause."""

    reached = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        if self.path == "/held":
            Held.reached.set()
            Held.release.wait(60)
        body = b"<!doctype html><title>Held</title><p>Let go.</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def held() -> Iterator[str]:
    Held.reached, Held.release = threading.Event(), threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Held)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/held"
    Held.release.set()
    server.shutdown()
    server.server_close()


@pytest.mark.django_db(transaction=True)
async def test_a_replay_its_person_paused_to_watch_is_never_told_as_waiting_for_one(
    worker: RunManager, runs: Runs, owner: Any, fixture_url: str, receiver: str, held: str
) -> None:
    """The person paused the scheduled replay themself: nobody is waited for, nothing
    is told; it resumes and passes, and its firing is ok."""
    watched = await sync_to_async(scenario_services.scenario_import)(
        owner=owner, data={
            "format": "tabwright.scenario", "version": 1, "name": "Sign up, watched",
            "steps": [{"action": "navigate", "args": {"url": held}},
                      {"action": "navigate", "args": {"url": f"{fixture_url}/demo/form.html"}},
                      {"action": "fill", "args": {"value": "Ada"},
                       "identity": {"role": "textbox", "name": "Name", "tag": "input"}}],
        },
    )  # fmt: skip
    schedule = await sync_to_async(make)(watched, params={}, webhook_url=receiver)
    firing = await _fired(schedule)
    await runs.claimed(firing.run_id)
    await eventually(Held.reached.is_set, what="the replay's first step at work")
    api = Api(await sync_to_async(token_of)(owner))
    answer = await api.post(f"/api/runs/{firing.run_id}/pause")
    assert answer.status_code == 200, answer.content
    Held.release.set()
    await _paused(firing.run_id, "requested: paused by the person")
    await schedules.judge_outcomes()  # the poll
    firing = await ScheduleFiring.objects.aget(pk=firing.pk)
    assert (firing.outcome, firing.alerted_at) == ("", None)  # at work: the person watches
    assert not await Delivery.objects.filter(firing=firing).aexists()

    answer = await api.post(f"/api/runs/{firing.run_id}/resume")
    assert answer.status_code == 200, answer.content
    await runs.manager.wait_closed(firing.run_id)  # its end's hooks ran: judged
    run = await Run.objects.aget(pk=firing.run_id)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    await schedules.judge_outcomes()
    firing = await ScheduleFiring.objects.aget(pk=firing.pk)
    assert (firing.outcome, firing.alerted_at) == ("ok", None)
    assert not await Delivery.objects.filter(firing=firing).aexists()
    assert _heard(firing.pk) == []
