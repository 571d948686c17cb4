"""Schedules: a scenario replayed (or run as a batch) at the times of a cron expression in
a time zone, each time fired exactly once, a time missed while nothing ran reported and
not run late, *Run now* fired at once by the worker it rings, a firing judged when its
run ends; a firing that fails or waits for a person is told to a signed webhook
(retried with backoff, every try logged) and by e-mail (a real SMTP server on loopback);
the scenario page shows the next times in words and the health of its last replays."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.test import AsyncClient, Client
from django.utils import timezone

from dashboard.jobs import alerts, outbox, schedules
from dashboard.jobs import services as job_services
from dashboard.models import Delivery, Run, Scenario, Schedule, ScheduleFiring
from dashboard.runs import services as run_services
from dashboard.runs.doorbell import RUNS_CHANNEL
from dashboard.runs.runner import RunManager
from dashboard.runs.signins import SigninRefused, signin_save, signin_state_for_run
from dashboard.scenarios import services as scenario_services
from dashboard.worker import RunWorkerConsumer
from tests.dashboard.api.test_api import Api, refused, token_of
from tests.dashboard.conftest import Runs
from tests.dashboard.jobs.conftest import Mailbox, Receiver, make
from tests.net import free_port
from tests.waiting import eventually

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db


# -- when -------------------------------------------------------------------------------


def test_a_daily_time_is_fired_once_the_night_clocks_go_back(scenario: Scenario) -> None:
    schedule = make(scenario, cron="30 2 * * *")
    Schedule.objects.filter(pk=schedule.pk).update(
        next_fire_at=datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30, summer time
    )
    fired = []
    for minutes in (1, 61, 65):  # 02:31 summer time, then 02:31 and 02:35 winter time
        now = datetime(2026, 10, 25, 0, 30, tzinfo=UTC) + timedelta(minutes=minutes)
        fired.append(schedules.fire(schedule.pk, now))
    assert fired[0] is not None and fired[1:] == [None, None]
    schedule.refresh_from_db()
    assert schedule.next_fire_at == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


# -- firing -------------------------------------------------------------------------------


def test_each_time_fires_exactly_once(scenario: Scenario) -> None:
    schedule = make(scenario)
    now = schedule.next_fire_at + timedelta(seconds=1)
    firing = schedules.fire(schedule.pk, now)
    assert firing is not None and firing.run is not None and firing.missed == 0
    assert firing.run.params == {"name": "Ada", "greet": "Ada", "page": "form.html"}
    assert schedules.fire(schedule.pk, now) is None  # a second worker polling: nothing due
    # Even with the schedule's next time put back (a stale read), the time is not fired
    # twice: one firing per schedule and time.
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=firing.due_at)
    assert schedules.fire(schedule.pk, now) is None
    assert ScheduleFiring.objects.count() == 1 and Run.objects.count() == 1
    schedule.refresh_from_db()
    assert schedule.next_fire_at > now


def test_times_missed_while_nothing_ran_are_reported_not_run_late(scenario: Scenario) -> None:
    schedule = make(scenario)
    due = schedule.next_fire_at
    now = due + timedelta(hours=1, minutes=6)  # every 10 minutes: 7 times went by
    firing = schedules.fire(schedule.pk, now)
    assert firing is not None
    assert (firing.outcome, firing.missed, firing.run) == ("missed", 7, None)
    assert "missed 7 time(s)" in firing.error
    assert not Run.objects.exists()
    schedule.refresh_from_db()
    assert now < schedule.next_fire_at <= now + timedelta(minutes=10)
    # A time a little late (a slow poll) still runs, the one before it counted as missed
    # and told: a missed firing of its own, judged and alerted as any bad one.
    other = make(scenario, emails="ops@example.org")
    late = schedules.fire(other.pk, other.next_fire_at + timedelta(minutes=10, seconds=30))
    assert late is not None and late.run is not None and late.missed == 1
    missed = ScheduleFiring.objects.get(schedule=other, outcome="missed")
    assert missed.due_at < late.due_at and missed.missed == 1
    assert missed.error.startswith("missed 1 time(s) while no worker was up; the next one")
    assert missed.pk in [f.pk for f in schedules.judge_all()]  # (with the first's)
    assert Delivery.objects.get(firing=missed).payload["event"] == "firing.missed"
    # A poll a little late with nothing before it missed: nothing to tell.
    third = make(scenario)
    on_time = schedules.fire(third.pk, third.next_fire_at + timedelta(minutes=4))
    assert on_time is not None and on_time.missed == 0
    assert not ScheduleFiring.objects.filter(schedule=third, outcome="missed").exists()


def test_a_value_not_given_is_the_scenario_s_default_of_the_day_it_fires(
    scenario: Scenario,
) -> None:
    schedule = make(scenario)  # the name and the greeting given, not the page
    assert schedule.params == {"name": "Ada", "greet": "Ada"}
    # The scenario's default changes after the schedule was made: the firing uses it.
    Scenario.objects.filter(pk=scenario.pk).update(params={"page": {"default": "list.html"}})
    firing = schedules.fire(schedule.pk, schedule.next_fire_at + timedelta(seconds=1))
    assert firing is not None and firing.run is not None
    assert firing.run.params == {"name": "Ada", "greet": "Ada", "page": "list.html"}
    # And the schedule can still be changed: what it keeps still fits the scenario.
    checked = schedules.check_schedule(scenario=scenario, cron="0 7 * * *",
                                       timezone="UTC", params=schedule.params)  # fmt: skip
    assert checked["params"] == {"name": "Ada", "greet": "Ada"}
    batch = make(scenario, rows=[{"name": "Bo", "greet": "Bo", "page": ""}])
    assert batch.rows == [{"name": "Bo", "greet": "Bo"}]


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        (
            {"emails": ", ".join(f"p{i}@example.com" for i in range(40))},
            "emails",
            "emails is over 500 characters",
        ),
        ({"emails": ", ".join(f"{i}@a.io" for i in range(21))}, "emails", "at most 20 addresses"),
        ({"cron": "0 7 * * " + "1," * 60 + "1"}, "cron", "cron is over 100 characters"),
        ({"base_url": "http://shop.test/" + "x" * 2_000}, "base_url", "over 2000 characters"),
    ],
)
def test_a_field_longer_than_its_column_is_refused_naming_it(
    scenario: Scenario, fields: dict[str, str], field: str, says: str
) -> None:
    """Over the API no form capped them: 20,000 addresses were kept (each failure mailed
    to all), and PostgreSQL answered a long one with a 500."""
    given = {"cron": "0 7 * * *", "timezone": "UTC", "params": {"name": "A", "greet": "A"}}
    with pytest.raises(schedules.ScheduleInvalid) as refused_:
        schedules.check_schedule(scenario=scenario, **{**given, **fields})
    assert refused_.value.field == field and says in refused_.value.message


@pytest.mark.django_db(transaction=True)
def test_a_firing_that_waited_for_a_person_says_why_it_ended_as_it_did(
    scenario: Scenario,
) -> None:
    """The person answered: the firing's reason is no longer the wait's."""
    for status, reason, outcome in [
        (Run.Status.SUCCEEDED, "", "ok"),
        (Run.Status.FAILED, "step 4: expected text 'Order created' is visible", "failed"),
    ]:
        schedule = make(scenario)
        firing = schedules.fire(schedule.pk, schedule.next_fire_at + timedelta(seconds=1))
        assert firing is not None and firing.run is not None
        run_services.run_set_status(run_id=firing.run_id, status=Run.Status.PAUSED,
                                    reason="needs_person: which Delete?")  # fmt: skip
        assert [f.pk for f in schedules.judge_all()] == [firing.pk]  # told it waits
        run_services.run_set_status(run_id=firing.run_id, status=status, reason=reason)
        schedules.judge(firing.pk)
        firing.refresh_from_db()
        assert (firing.outcome, firing.error) == (outcome, reason)


def test_a_firing_that_can_t_start_any_more_fails_saying_why(scenario: Scenario) -> None:
    schedule = make(scenario)
    Schedule.objects.filter(pk=schedule.pk).update(params={"name": "Ada", "nickname": "A"})
    firing = schedules.fire(schedule.pk, schedule.next_fire_at + timedelta(seconds=1))
    assert firing is not None and firing.run is None
    assert (firing.outcome, firing.error) == (
        "failed",
        "could not start: the scenario has no parameter 'nickname'",
    )


@pytest.mark.django_db(transaction=True)
async def test_run_now_is_fired_at_once_by_the_worker_it_rings_and_the_times_go_on(
    owner: Any, stranger: Any, scenario: Scenario
) -> None:
    schedule = await sync_to_async(make)(scenario, cron="0 7 * * *")
    regular = schedule.next_fire_at
    script = Api(await sync_to_async(token_of)(owner))
    answer = await script.post(f"/api/schedules/{schedule.pk}/fire")
    assert answer.status_code == 202, answer.content
    assert answer.json()["firings"] == []  # the worker fires it
    rung = await _rung()
    assert not await ScheduleFiring.objects.aexists()
    await RunWorkerConsumer().schedules_due(rung)  # the worker that hears it
    firing = await ScheduleFiring.objects.select_related("run").aget()
    assert firing.run is not None and firing.run.kind == Run.Kind.REPLAY
    assert firing.run.params == {"name": "Ada", "greet": "Ada", "page": "form.html"}
    assert (await Schedule.objects.aget(pk=schedule.pk)).next_fire_at == regular
    await RunWorkerConsumer().schedules_due(rung)  # heard twice, or polled: fired once
    assert await ScheduleFiring.objects.acount() == 1
    read = await script.get(f"/api/schedules/{schedule.pk}")
    assert [f["run_id"] for f in read.json()["firings"]] == [firing.run_id]

    # The scenario page's button does the same.
    page = AsyncClient()
    await page.aforce_login(owner)
    pressed = await page.post(f"/schedules/{schedule.pk}/run-now")
    assert pressed.url == f"/scenarios/{scenario.pk}/?fired={schedule.pk}&before=1#schedules"
    shown = await page.get(pressed.url)
    assert "Firing now: its run shows under the schedule" in shown.content.decode()
    assert f'data-schedule="{schedule.pk}" data-fired="1"' in shown.content.decode()
    fired = f"/schedules/{schedule.pk}/fired.json"
    assert (await page.get(fired)).json() == {"fired": 1}  # what the page asks until it grows
    await RunWorkerConsumer().schedules_due(await _rung())
    assert await ScheduleFiring.objects.acount() == 2
    assert (await page.get(fired)).json() == {"fired": 2}
    other = AsyncClient()
    await other.aforce_login(stranger)
    assert (await other.get(fired)).status_code == 404

    # Turned off, it is not run; another person's is not found.
    await Schedule.objects.filter(pk=schedule.pk).aupdate(enabled=False, next_fire_at=None)
    off = refused(await script.post(f"/api/schedules/{schedule.pk}/fire"), 409, "schedule_off")
    assert off["message"] == "the schedule is turned off"
    pressed = await page.post(f"/schedules/{schedule.pk}/run-now", follow=True)
    assert "Not run: the schedule is turned off" in pressed.content.decode()
    theirs = Api(await sync_to_async(token_of)(stranger))
    refused(await theirs.post(f"/api/schedules/{schedule.pk}/fire"), 404, "not_found")
    assert (await Schedule.objects.aget(pk=schedule.pk)).next_fire_at is None
    assert await ScheduleFiring.objects.acount() == 2


@pytest.mark.django_db(transaction=True)
async def test_a_firing_no_one_comes_to_ends_after_the_wait_for_a_person(
    runs: Runs, scenario: Scenario, settings: Any
) -> None:
    """A firing whose replay needs a person (its page has no Name field): it waited until
    someone came, though nobody watches a schedule, holding its worker's slot; a few days
    of a daily schedule broken by a release held every slot, and nobody's runs started.
    It waits as a batch's row does (BATCH_PERSON_WAIT_S), then fails saying no one came;
    the firing fails with it (and is alerted as any)."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "BATCH_PERSON_WAIT_S": 1}
    schedule = await sync_to_async(make)(
        scenario, params={"name": "Ada", "greet": "Ada", "page": "list.html"}
    )
    firing = await sync_to_async(schedules.fire)(
        schedule.pk, schedule.next_fire_at + timedelta(seconds=1)
    )
    assert firing is not None and firing.run is not None
    await runs.start(firing.run)
    async with asyncio.timeout(120):  # (bounds a replay paused for good)
        await runs.manager.wait_closed(firing.run.pk)
    firing = await ScheduleFiring.objects.select_related("run").aget(pk=firing.pk)
    assert firing.run.status == Run.Status.FAILED, firing.run.status_reason
    assert firing.run.status_reason.endswith("; no one came to do it within 1 s")
    assert (firing.outcome, firing.error) == ("failed", firing.run.status_reason)


@pytest.mark.django_db(transaction=True)
async def test_a_firing_is_judged_when_its_run_ends(
    runs: Runs, scenario: Scenario, fixture_url: str
) -> None:
    schedule = await sync_to_async(make)(scenario)
    firing = await sync_to_async(schedules.fire)(
        schedule.pk, schedule.next_fire_at + timedelta(seconds=1)
    )
    assert firing is not None and firing.run is not None
    await runs.start(firing.run)
    await runs.manager.wait_closed(firing.run.pk)  # its end's hooks ran, no poll did
    firing = await ScheduleFiring.objects.select_related("run").aget(pk=firing.pk)
    assert firing.run.status == Run.Status.SUCCEEDED, firing.run.status_reason
    assert (firing.outcome, firing.alerted_at) == ("ok", None)

    # A replay that waits for a person and is stopped by them: its
    # firing reads as its run does, in the record, on the schedule's page and in the alert.
    waiting = await sync_to_async(scenario_services.scenario_import)(
        owner=scenario.owner, data={
            "format": "tabwright.scenario", "version": 1, "name": "Delete an order",
            "steps": [{"action": "navigate", "args": {"url": f"{fixture_url}/demo/list.html"}},
                      {"action": "click", "args": {},
                       "identity": {"role": "button", "name": "Delete", "tag": "button"}}],
        },
    )  # fmt: skip
    stopped = await sync_to_async(make)(waiting, params={}, emails="ops@example.org")
    firing = await sync_to_async(schedules.fire)(
        stopped.pk, stopped.next_fire_at + timedelta(seconds=1)
    )
    assert firing is not None and firing.run is not None
    await runs.start(firing.run)
    # Paused by its owner at once (else by the ambiguous "Delete", a moment later).
    await runs.manager.command(firing.run_id, "pause")
    async with asyncio.timeout(60):
        while True:
            if (await Run.objects.aget(pk=firing.run_id)).status == Run.Status.PAUSED:
                break
            await asyncio.sleep(0.05)
    api = Api(await sync_to_async(token_of)(scenario.owner))
    answer = await api.post(f"/api/runs/{firing.run_id}/stop")
    assert answer.status_code == 200 and answer.json()["status"] == "stopped"
    await runs.manager.wait_closed(firing.run_id)
    why = "stopped by olive while it waited for a person"
    assert answer.json()["status_reason"] == why
    firing = await ScheduleFiring.objects.aget(pk=firing.pk)
    assert (firing.outcome, firing.error) == ("stopped", why) and firing.alerted_at
    page = AsyncClient()
    await sync_to_async(page.force_login)(scenario.owner)
    shown = (await page.get(f"/scenarios/{waiting.pk}/")).content.decode()
    assert '<span class="badge stopped">stopped</span>' in shown and why in shown
    alert = await Delivery.objects.aget(firing=firing)
    assert alert.payload["event"] == "firing.stopped"
    assert alert.payload["firing"]["error"] == why
    subject, text = alerts.mail_of(alert.payload)
    assert subject == "Tabwright: Delete an order was stopped" and f"Why: {why}" in text

    # Told that it waited before the person stopped it: the record follows, told once.
    await stopped.arefresh_from_db()
    paused = await sync_to_async(schedules.fire)(
        stopped.pk, stopped.next_fire_at + timedelta(seconds=1)
    )
    assert paused is not None and paused.run is not None
    await sync_to_async(run_services.run_set_status)(
        run_id=paused.run_id, status=Run.Status.PAUSED, reason="needs_person: which Delete?"
    )
    assert [f.pk for f in await sync_to_async(schedules.judge_all)()] == [paused.pk]
    await sync_to_async(run_services.run_set_status)(
        run_id=paused.run_id, status=Run.Status.STOPPED, reason=why
    )
    assert await sync_to_async(schedules.judge)(paused.pk) is None  # told already
    paused = await ScheduleFiring.objects.aget(pk=paused.pk)
    assert (paused.outcome, paused.error) == ("stopped", why)
    told = [d.payload["event"] async for d in Delivery.objects.filter(firing=paused)]
    assert told == ["firing.needs_person"]


async def _rung() -> dict[str, Any]:
    """The schedules' ring on the workers' doorbell (wake-ups before it passed over)."""
    async with asyncio.timeout(10):  # it was sent before: a bound on a lost one only
        while True:
            message = await get_channel_layer().receive(RUNS_CHANNEL)
            if message["type"] == "schedules.due":
                return message


# -- alerts -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_failed_firing_is_told_to_a_signed_retried_webhook_and_by_mail(
    worker: RunManager, runs: Runs, scenario: Scenario, receiver: str, smtp: Mailbox,
    settings: Any,
) -> None:  # fmt: skip
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_RETRY_S": (0, 0, 0)}
    Receiver.statuses = [500, 503]  # down twice, then it takes it
    # Ada is greeted as Ada, never as "Someone else": the replay fails at its last step.
    schedule = await sync_to_async(make)(
        scenario, params={"name": "Ada", "greet": "Someone else"}, webhook_url=receiver,
        emails="ops@example.org, lead@example.org",
    )  # fmt: skip
    await Schedule.objects.filter(pk=schedule.pk).aupdate(next_fire_at=timezone.now())
    fired = await schedules.fire_due()
    assert len(fired) == 1 and fired[0].run_id is not None
    await eventually(lambda: _final(fired[0].run_id), what="the firing's run ended")

    await schedules.judge_outcomes()  # judged, told: a webhook and an e-mail in the outbox
    firing = await ScheduleFiring.objects.aget(pk=fired[0].pk)
    assert firing.outcome == "failed" and firing.alerted_at is not None
    run = await Run.objects.aget(pk=fired[0].run_id)
    assert run.status_reason and firing.error == run.status_reason  # why, as the run says
    kinds = [d.kind async for d in Delivery.objects.order_by("kind")]
    assert kinds == ["email", "webhook"]
    # The worker's outbox sends them (kicked at once, then again after each failed try).
    async with asyncio.timeout(60):
        while True:
            if await Delivery.objects.filter(status="sent").acount() == 2:
                break
            await asyncio.sleep(0.05)
    delivery = await Delivery.objects.aget(kind="webhook")
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 3, "")
    assert [entry.get("status_code") for entry in delivery.log] == [500, 503, 200]
    assert delivery.log[0]["error"] == "HTTP 500"
    mail = await Delivery.objects.aget(kind="email")
    assert (mail.status, mail.attempts, mail.to) == ("sent", 1, "ops@example.org, lead@example.org")
    assert await outbox.send_due() == 0  # sent: never sent again

    headers, body = Receiver.got[-1]
    assert len(Receiver.got) == 3 and all(b == body for _, b in Receiver.got)
    payload = json.loads(body)
    assert payload["event"] == "firing.failed" and payload["run"]["status"] == "failed"
    assert payload["schedule"]["scenario"] == "Sign up people"
    expected = hmac.new(schedule.webhook_secret.encode(),
                        headers["x-tabwright-timestamp"].encode() + b"." + body,
                        hashlib.sha256).hexdigest()  # fmt: skip
    assert headers["x-tabwright-signature"] == f"sha256={expected}"
    assert headers["x-tabwright-delivery"] == str(delivery.pk)

    assert len(smtp.messages) == 1
    message = smtp.messages[0]
    assert sorted(message.rcpt_tos) == ["lead@example.org", "ops@example.org"]
    assert b"Subject: Tabwright: Sign up people failed" in message.content

    await schedules.judge_outcomes()  # told once
    assert await Delivery.objects.acount() == 2
    assert await outbox.send_due() == 0 and len(smtp.messages) == 1


def test_a_failed_batch_firing_says_how_many_rows_failed_and_the_first_one_s_reason(
    scenario: Scenario,
) -> None:
    rows = [{"name": n, "greet": n} for n in ("Ada", "Bo", "Cy")]
    schedule = make(scenario, rows=rows)
    firing = schedules.fire(schedule.pk, schedule.next_fire_at + timedelta(seconds=1))
    assert firing is not None and firing.batch is not None
    ended = [("succeeded", ""), ("failed", "step 4: the check failed"), ("failed", "")]
    for row, (status, reason) in zip(firing.batch.rows.order_by("index"), ended, strict=True):
        row.run = Run.objects.create(
            owner=scenario.owner, kind=Run.Kind.REPLAY, scenario=scenario, status=status,
            status_reason=reason,
        )  # fmt: skip
        row.save(update_fields=["run"])
    firing.batch.status = "done"
    firing.batch.save(update_fields=["status"])
    schedules.judge(firing.pk)
    firing.refresh_from_db()
    assert (firing.outcome, firing.error) == (
        "failed", "2 of 3 rows failed; row 2: step 4: the check failed"
    )  # fmt: skip


async def _final(run_id: int) -> bool:
    return (await Run.objects.aget(pk=run_id)).status in Run.FINAL


def test_a_webhook_that_never_answers_is_given_up_after_its_tries(
    scenario: Scenario, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "ALERT_RETRY_S": (0, 0)}
    nobody = f"http://127.0.0.1:{free_port()}/hook"
    schedule = make(scenario, webhook_url=nobody)
    firing = ScheduleFiring.objects.create(schedule=schedule, due_at=timezone.now(),
                                           outcome="failed", error="x")  # fmt: skip
    told = schedules.judge_all()  # told: the alert in the outbox
    assert [f.pk for f in told] == [firing.pk]
    for _ in range(4):
        async_to_sync(outbox.send_due)()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert all("ConnectError" in entry["error"] for entry in delivery.log)
    assert "ConnectError" in delivery.last_error


# -- the page and the API -------------------------------------------------------------------


def test_the_scenario_page_schedules_it_and_shows_when_and_how_it_went(
    owner: Any, scenario: Scenario
) -> None:
    page = Client()
    page.force_login(owner)
    bad = page.post(f"/scenarios/{scenario.pk}/schedules",
                    {"cron": "0 7 * *", "timezone": "Europe/Paris", "concurrency": 2,
                     "param_name": "Ada", "param_greet": "Ada"})  # fmt: skip
    assert bad.status_code == 400 and "5 fields, not 4" in bad.content.decode()
    made = page.post(f"/scenarios/{scenario.pk}/schedules",
                     {"cron": "0 7 * * 1-5", "timezone": "Europe/Paris", "concurrency": 2,
                      "param_name": "Ada", "param_greet": "Ada"})  # fmt: skip
    assert made.status_code == 302
    schedule = Schedule.objects.get()
    assert schedule.next_fire_at.astimezone(ZoneInfo("Europe/Paris")).hour == 7
    for status in ("succeeded", "failed", "paused"):
        Run.objects.create(owner=owner, scenario=scenario, kind=Run.Kind.REPLAY, task="r",
                           status=status)  # fmt: skip
    shown = page.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert "At 07:00, Monday through Friday" in shown and "Next: " in shown
    assert re.search(r"Next: \w{3} \d+ \w{3} \d{4}, 07:00", shown)  # in the schedule's zone
    assert (
        shown.index("health-cell passed")
        < shown.index("health-cell failed")
        < shown.index("health-cell needs_person")
    )  # oldest first
    assert 'name="enabled" value="0"' in shown  # its button says what it asks for
    # The form shows a parameter's default, and leaves it empty: sent so, it is the
    # default of the day it fires, not today's kept for good.
    field = re.search(r'<input[^>]*id="id_schedule_param_page"[^>]*>', shown)
    assert field is not None and 'placeholder="form.html"' in field.group(0), field
    assert "value=" not in field.group(0)
    page.post(f"/schedules/{schedule.pk}/toggle", {"enabled": "0"})
    schedule.refresh_from_db()
    assert not schedule.enabled and schedule.next_fire_at is None
    # The same press again (a second click, a page shown before): off it stays, said so
    # (a flip turned it back on).
    again = page.post(f"/schedules/{schedule.pk}/toggle", {"enabled": "0"}, follow=True)
    schedule.refresh_from_db()
    assert not schedule.enabled and "The schedule is off already." in again.content.decode()
    page.post(f"/schedules/{schedule.pk}/toggle", {"enabled": "1"})
    schedule.refresh_from_db()
    assert schedule.enabled and schedule.next_fire_at is not None


def test_schedules_over_the_api_refuse_bad_values_and_others_see_none(
    owner: Any, stranger: Any, scenario: Scenario
) -> None:
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    url = f"/api/scenarios/{scenario.pk}/schedules"
    for body, field in [
        ({"cron": "0 7 * * 8", "params": {"name": "A", "greet": "A"}}, "cron"),
        ({"cron": "0 7 * * 1", "timezone": "Nowhere", "params": {"name": "A", "greet": "A"}},
         "timezone"),
        ({"cron": "0 7 * * 1", "params": {"name": "A"}}, "params"),
        ({"cron": "0 7 * * 1", "params": {"name": "A", "greet": "A", "x": "1"}}, "params"),
        ({"cron": "0 7 * * 1", "rows": [{"name": "A", "colour": "red"}]}, "rows"),
        ({"cron": "0 7 * * 1", "params": {"name": "A", "greet": "A"}, "emails": "nobody"},
         "emails"),
        ({"cron": "0 7 * * 1", "params": {"name": "A", "greet": "A"},
          "webhook_url": "ftp://x"}, "webhook_url"),
    ]:  # fmt: skip
        answer = client.post(url, body, content_type="application/json")
        error = refused(answer, 400, "schedule_invalid")
        assert field in error["fields"], (body, error)
    assert not Schedule.objects.exists()

    made = client.post(url, {"cron": "30 6 * * 1-5", "timezone": "America/New_York",
                             "rows": [{"name": "A", "greet": "A"}, {"name": "B", "greet": "B"}],
                             "webhook_url": "http://127.0.0.1:9/hook"},
                       content_type="application/json")  # fmt: skip
    assert made.status_code == 201, made.content
    schedule = made.json()
    assert schedule["description"] == "At 06:30, Monday through Friday"
    assert len(schedule["rows"]) == 2 and len(schedule["next"]) == 3
    assert len(schedule["webhook_secret"]) == 64
    patched = client.patch(f"/api/schedules/{schedule['id']}", {"enabled": False},
                           content_type="application/json")  # fmt: skip
    assert patched.status_code == 200 and patched.json()["next"] == []
    assert patched.json()["rows"] == schedule["rows"]  # the rest stays
    assert schedule["signin_profile"] == ""
    signin_save(owner_id=owner.pk, name="back office", state={"cookies": [], "origins": []})
    signed = client.patch(f"/api/schedules/{schedule['id']}", {"signin_profile": "back office"},
                          content_type="application/json")  # fmt: skip
    assert signed.status_code == 200 and signed.json()["signin_profile"] == "back office"
    assert Schedule.objects.get().signin_profile.name == "back office"
    unknown = refused(client.patch(f"/api/schedules/{schedule['id']}", {"signin_profile": "x"},
                                   content_type="application/json"), 400, "invalid")  # fmt: skip
    assert "signin_profile" in unknown["fields"]
    unsigned = client.patch(f"/api/schedules/{schedule['id']}", {"signin_profile": ""},
                            content_type="application/json")  # fmt: skip
    assert unsigned.json()["signin_profile"] == "" and unsigned.json()["rows"] == schedule["rows"]

    other = Client(headers={"Authorization": f"Bearer {token_of(stranger)}"})
    assert other.get("/api/schedules").json() == []
    refused(other.get(f"/api/schedules/{schedule['id']}"), 404, "not_found")
    refused(other.delete(f"/api/schedules/{schedule['id']}"), 404, "not_found")
    assert client.delete(f"/api/schedules/{schedule['id']}").status_code == 204
    assert not Schedule.objects.exists()


def test_a_sign_in_profile_deleted_since_it_was_chosen_is_told_never_left_out(
    owner: Any, scenario: Scenario
) -> None:
    """A schedule, a batch and a queued replay given a sign-in profile that its owner
    deleted since (to end its saved session, say): the schedule's firing, each row of the
    batch and the replay fail saying so, rather than replay signed out; the schedule says
    which profile it was until another one, or none, is chosen."""
    profile = signin_save(owner_id=owner.pk, name="back office",
                          state={"cookies": [], "origins": []})  # fmt: skip
    schedule = schedules.save(make(scenario), signin_profile_id=profile.pk)
    batch = job_services.batch_create(owner=owner, scenario=scenario, base_url="",
                                      rows=[{"name": "Ada"}, {"name": "Bo"}], concurrency=1,
                                      signin_profile_id=profile.pk)  # fmt: skip
    queued = scenario_services.replay_run_create(
        owner=owner, scenario=scenario, base_url="", params={}, signin_profile_id=profile.pk
    )
    assert signin_state_for_run(queued) == ({"cookies": [], "origins": []}, "back office")
    profile.delete()
    deleted = "the sign-in profile 'back office' was deleted: choose another one, or none"

    firing = schedules.fire(schedule.pk, schedule.next_fire_at + timedelta(seconds=1))
    assert firing is not None and firing.run is None
    assert (firing.outcome, firing.error) == ("failed", f"could not start: {deleted}")
    assert job_services.batch_advance(batch_id=batch.pk) == []  # no row replays signed out
    rows = Run.objects.filter(batch_row__batch=batch)
    assert [(r.status, r.status_reason) for r in rows] == [
        ("failed", f"could not start: {deleted}")
    ] * 2
    with pytest.raises(SigninRefused, match=re.escape(deleted)):
        signin_state_for_run(Run.objects.get(pk=queued.pk))

    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    read = client.get(f"/api/schedules/{schedule.pk}").json()
    assert read["signin_profile"] == "back office (deleted)"
    # Turned off, it can't be turned on again with it, on the page or through the API
    # (turning on checks it all, as it will fire); nor can the batch's failed rows be
    # replayed again with it: each would fail at once.
    schedules.save(Schedule.objects.get(pk=schedule.pk), enabled=False)
    on = client.patch(f"/api/schedules/{schedule.pk}", {"enabled": True},
                      content_type="application/json")  # fmt: skip
    assert refused(on, 400, "schedule_invalid")["fields"] == {"signin_profile": deleted}
    page = Client()
    page.force_login(owner)
    page.post(f"/schedules/{schedule.pk}/toggle", {"enabled": "1"})
    told = page.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert "Not turned on: the sign-in profile &#x27;back office&#x27; was deleted" in told
    assert not Schedule.objects.get(pk=schedule.pk).enabled
    retried = client.post(f"/api/batches/{batch.pk}/retry")
    assert refused(retried, 400, "scenario_invalid")["message"] == deleted
    assert Run.objects.filter(batch_row__batch=batch).count() == 2  # no row tried again
    none = client.patch(f"/api/schedules/{schedule.pk}", {"signin_profile": ""},
                        content_type="application/json")  # fmt: skip
    assert none.json()["signin_profile"] == ""
    assert Schedule.objects.filter(signin_profile_name="").count() == 1  # fires as any
    on = client.patch(f"/api/schedules/{schedule.pk}", {"enabled": True},
                      content_type="application/json")  # fmt: skip
    assert on.status_code == 200 and on.json()["enabled"], on.content
