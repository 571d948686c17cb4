"""What a schedule is given, over the API and the page's form: a cron expression holds
only what fires at the times it shows and reads in words (not croniter's random R or
hashed H), and one kept before that was refused still shows and can be deleted; a
change checks what it changes, so a schedule whose scenario renamed a parameter can still
be turned off and its alerts sent elsewhere."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone as dj_timezone

from dashboard.jobs import schedules
from dashboard.models import Batch, Scenario, ScenarioStep, Schedule, SecretGrant
from dashboard.scenarios import services
from tests.dashboard.api.test_api import refused, token_of
from tests.dashboard.jobs.conftest import make
from tests.dashboard.signup import sign_up

pytestmark = pytest.mark.django_db


def test_a_random_cron_is_refused_by_the_api_and_the_form(owner: Any, scenario: Scenario) -> None:
    api = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    answer = api.post(f"/api/scenarios/{scenario.pk}/schedules",
                      {"cron": "0 R * * *", "timezone": "UTC",
                       "params": {"name": "Ada", "greet": "Ada"}},
                      content_type="application/json")  # fmt: skip
    error = refused(answer, 400, "schedule_invalid")
    assert "the hour field holds 'R'" in error["fields"]["cron"], error
    page = Client()
    page.force_login(owner)
    shown = page.post(f"/scenarios/{scenario.pk}/schedules",
                      {"cron": "R * * * *", "timezone": "UTC", "concurrency": 2,
                       "param_name": "Ada", "param_greet": "Ada"})  # fmt: skip
    assert shown.status_code == 400
    assert "the minute field holds &#x27;R&#x27;" in shown.content.decode()
    assert not Schedule.objects.exists()


def test_a_random_cron_kept_before_is_shown_without_words_and_can_be_deleted(
    owner: Any, scenario: Scenario
) -> None:
    kept = [make(scenario), make(scenario)]
    for schedule in kept:  # kept before such were refused
        Schedule.objects.filter(pk=schedule.pk).update(cron="0 R * * *")
    api = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    listed = api.get("/api/schedules")
    assert listed.status_code == 200
    assert [s["description"] for s in listed.json()] == ["", ""]
    assert api.get(f"/api/schedules/{kept[0].pk}").json()["cron"] == "0 R * * *"
    page = Client()
    page.force_login(owner)
    shown = page.get(f"/scenarios/{scenario.pk}/")
    assert shown.status_code == 200 and "<code>0 R * * *</code>" in shown.content.decode()
    assert api.delete(f"/api/schedules/{kept[0].pk}").status_code == 204
    assert page.post(f"/schedules/{kept[1].pk}/delete").status_code == 302
    assert not Schedule.objects.exists()


def test_after_its_scenario_renamed_a_parameter_a_schedule_is_turned_off_and_its_alerts_moved(
    owner: Any, scenario: Scenario
) -> None:
    replay = make(scenario, webhook_url="https://hooks.example.com/old")
    batch = make(scenario, rows=[{"name": "Ada", "greet": "Ada"}])
    Schedule.objects.filter(pk=batch.pk).update(cron="0 R * * *")  # kept before it was refused
    for step in ScenarioStep.objects.filter(scenario=scenario):  # ${greet} is ${greeting} now
        step.args = json.loads(json.dumps(step.args).replace("${greet}", "${greeting}"))
        step.save()
    api = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})

    def patch(schedule: Schedule, body: dict[str, Any]) -> Any:
        return api.patch(f"/api/schedules/{schedule.pk}", body, content_type="application/json")

    for schedule in (replay, batch):
        for body in ({"enabled": False}, {"webhook_url": "https://hooks.example.com/new"},
                     {"emails": "ops@example.org"}):  # fmt: skip
            assert patch(schedule, body).status_code == 200, (body, patch(schedule, body).content)
        schedule.refresh_from_db()
        assert not schedule.enabled and schedule.next_fire_at is None
        assert schedule.webhook_url == "https://hooks.example.com/new"
        assert schedule.emails == "ops@example.org"
    assert Schedule.objects.get(pk=replay.pk).params == {"name": "Ada", "greet": "Ada"}  # as kept
    # What is given is checked; turning it on checks it all, as it will fire.
    error = refused(patch(replay, {"emails": "nobody"}), 400, "schedule_invalid")
    assert "emails" in error["fields"]
    error = refused(patch(replay, {"enabled": True}), 400, "schedule_invalid")
    assert "no parameter 'greet'" in error["fields"]["params"]
    error = refused(patch(batch, {"enabled": True}), 400, "schedule_invalid")
    assert "the hour field holds 'R'" in error["fields"]["cron"]
    # The page's Turn on checks it all too, saying why not, and leaves it off.
    page = Client()
    page.force_login(owner)
    for schedule, says in ((replay, "no parameter &#x27;greet&#x27;"),
                           (batch, "the hour field holds &#x27;R&#x27;")):  # fmt: skip
        shown = page.post(f"/schedules/{schedule.pk}/toggle", {"enabled": "1"}, follow=True)
        assert "Not turned on: " in shown.content.decode() and says in shown.content.decode()
        assert not Schedule.objects.get(pk=schedule.pk).enabled
    error = refused(patch(replay, {"params": {"greet": "Ada"}}), 400, "schedule_invalid")
    assert "no parameter 'greet'" in error["fields"]["params"]
    fixed = patch(replay, {"params": {"name": "Ada", "greeting": "Ada"}, "enabled": True})
    assert fixed.status_code == 200 and fixed.json()["enabled"] and fixed.json()["next"]


def test_a_schedule_s_values_may_be_numbers_as_a_replay_s_and_a_batch_s(
    owner: Any, scenario: Scenario
) -> None:
    """A number or true/false given over the API is taken as its text, as an API replay
    and a batch file's JSON take them; a list is refused naming the parameter."""
    api = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    made = api.post(f"/api/scenarios/{scenario.pk}/schedules",
                    {"cron": "0 7 * * *", "params": {"name": 1906, "greet": True}},
                    content_type="application/json")  # fmt: skip
    assert made.status_code == 201, made.content
    schedule = Schedule.objects.get()
    assert schedule.params == {"name": "1906", "greet": "true"}
    patched = api.patch(f"/api/schedules/{schedule.pk}", {"params": {"name": 7, "greet": 1.5}},
                        content_type="application/json")  # fmt: skip
    assert patched.status_code == 200, patched.content
    schedule.refresh_from_db()
    assert schedule.params == {"name": "7", "greet": "1.5"}
    bad = api.patch(f"/api/schedules/{schedule.pk}", {"params": {"name": ["x"], "greet": "y"}},
                    content_type="application/json")  # fmt: skip
    error = refused(bad, 400, "invalid")
    assert any(field.startswith("params.name") for field in error["fields"]), error


def test_a_change_of_what_a_schedule_replays_keeps_a_time_due_that_has_not_fired_yet(
    owner: Any, scenario: Scenario
) -> None:
    """Its time came a moment ago and the poll (every few seconds) has not fired it yet:
    moving its alerts elsewhere keeps that time due, and the next poll fires it.  Every
    change set the next time from now, and the firing due was skipped, never told as
    missed.  A new cron sets it anew."""
    schedule = make(scenario)
    due = dj_timezone.now() - timedelta(seconds=2)
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=due)
    api = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    moved = api.patch(f"/api/schedules/{schedule.pk}",
                      {"webhook_url": "https://hooks.example.com/new"},
                      content_type="application/json")  # fmt: skip
    assert moved.status_code == 200, moved.content
    assert Schedule.objects.get(pk=schedule.pk).next_fire_at == due
    assert [f.schedule_id for f in async_to_sync(schedules.fire_due)()] == [schedule.pk]
    api.patch(f"/api/schedules/{schedule.pk}", {"cron": "0 6 * * *"},
              content_type="application/json")  # fmt: skip
    assert Schedule.objects.get(pk=schedule.pk).next_fire_at > dj_timezone.now()


def test_a_batch_or_schedule_typing_a_secret_its_owner_was_not_granted_is_refused(
    owner: Any, fixture_url: str
) -> None:
    """Each of its replays would fail at once, saying so (every row of the batch, every
    firing of the schedule, unattended): the API and the scenario page's forms refuse it,
    naming the secret, and make nothing; once an admin grants it, the same are taken."""
    data = sign_up(fixture_url)
    data["steps"][2]["args"]["value"] = "${SECRET:SHOP_PW}"
    scenario = services.scenario_import(owner=owner, data=data)
    api = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    values = {"name": "Ada", "greet": "Ada"}

    def by_api() -> tuple[Any, Any]:
        batch = api.post(f"/api/scenarios/{scenario.pk}/batches", {"rows": [values]},
                         content_type="application/json")  # fmt: skip
        schedule = api.post(f"/api/scenarios/{scenario.pk}/schedules",
                            {"cron": "0 7 * * *", "timezone": "UTC", "params": values},
                            content_type="application/json")  # fmt: skip
        return batch, schedule

    batch, schedule = by_api()
    for answer in (batch, schedule):
        error = refused(answer, 400, "secret_not_granted")
        assert "the secret SHOP_PW is not granted" in error["message"], error
    assert "SHOP_PW" in error["fields"]["scenario"]
    page = Client()
    page.force_login(owner)
    rows = SimpleUploadedFile("rows.csv", b"name,greet\r\nAda,Ada\r\n", content_type="text/csv")
    shown = [
        page.post(f"/scenarios/{scenario.pk}/batches", {"file": rows, "concurrency": 2}),
        page.post(
            f"/scenarios/{scenario.pk}/schedules",
            {
                "cron": "0 7 * * *",
                "timezone": "UTC",
                "concurrency": 2,
                "param_name": "Ada",
                "param_greet": "Ada",
            },
        ),
    ]
    for answer in shown:
        assert answer.status_code == 400
        assert "the secret SHOP_PW is not granted" in answer.content.decode()
    assert not Batch.objects.exists() and not Schedule.objects.exists()
    SecretGrant.objects.create(name="SHOP_PW").users.set([owner])
    batch, schedule = by_api()
    assert (batch.status_code, schedule.status_code) == (201, 201), batch.content[:300]
    # Turned off after the grant was taken back: a change that keeps what it replays.
    SecretGrant.objects.all().delete()
    off = api.patch(f"/api/schedules/{schedule.json()['id']}", {"enabled": False},
                    content_type="application/json")  # fmt: skip
    assert off.status_code == 200 and off.json()["enabled"] is False, off.content[:300]
    on = api.patch(f"/api/schedules/{schedule.json()['id']}", {"enabled": True},
                   content_type="application/json")  # fmt: skip
    refused(on, 400, "secret_not_granted")
