"""A firing's verdict stays true: a scheduled batch told it waits for a person follows how
its rows end (ok, failed — told again, once — or stopped), however long it runs; the
alerts reach a real webhook receiver on loopback."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from dashboard.jobs import outbox, schedules
from dashboard.jobs import services as job_services
from dashboard.models import Batch, Delivery, Run, Scenario, ScheduleFiring
from dashboard.runs import services as run_services
from tests.dashboard.jobs.conftest import Receiver, make

pytestmark = pytest.mark.django_db

WAITS = "needs_person: which Delete?"


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
