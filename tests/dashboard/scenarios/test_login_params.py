"""A parameter only a scenario's login scenario has (it types ``${user}``, the scenario
does not): every way of giving a replay its values takes it (it was refused everywhere as
a parameter the scenario does not have, so signing in again never had it), none needs it
before the replay signs in again, and a name no one has is still refused."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from dashboard.models import Batch, Run, Scenario, Schedule
from dashboard.scenarios import services as scenario_services
from tests.dashboard.api.test_api import refused
from tests.dashboard.scenarios.test_scenario_calls import api, sign_in, signed_orders

pytestmark = pytest.mark.django_db


def orders(owner: Any) -> Scenario:
    """ "Orders", whose login scenario "Sign in" types a user no default gives."""
    scenario_services.scenario_import(owner=owner, data=sign_in())
    scenario_services.scenario_import(owner=owner, data=signed_orders())
    return Scenario.objects.get(owner=owner, name="Orders")


def test_the_api_the_page_a_batch_and_a_schedule_take_it_and_need_it_nowhere(
    client: Client, owner: Any
) -> None:
    scenario = orders(owner)
    replays = f"/scenarios/{scenario.pk}/replays"
    answer = api(client, owner, "post", replays, {"params": {"user": "bob"}})
    assert answer.status_code == 201, answer.json()
    assert Run.objects.get(pk=answer.json()["id"]).params == {"user": "bob"}
    answer = api(client, owner, "post", replays, {})
    assert answer.status_code == 201, answer.json()
    assert Run.objects.get(pk=answer.json()["id"]).params == {}
    error = refused(api(client, owner, "post", replays, {"params": {"who": "bob"}}), 400, "invalid")
    assert "params.who" in error["fields"], error

    client.force_login(owner)
    page = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert "For signing in again (Sign in)" in page
    field = re.search(r'<input [^>]*name="param_user"[^>]*>', page)
    assert field is not None and "required" not in field.group(0), page

    batches = f"/scenarios/{scenario.pk}/batches"
    answer = api(client, owner, "post", batches, {"csv": "user\nbob\nmeg\n"})
    assert answer.status_code == 201, answer.json()
    rows = Batch.objects.get(pk=answer.json()["id"]).rows.order_by("index")
    assert [row.params for row in rows] == [{"user": "bob"}, {"user": "meg"}]
    answer = api(client, owner, "post", batches, {"csv": "who\nbob\n"})
    assert "'who'" in refused(answer, 400, "batch_file_invalid")["message"]

    schedules = f"/scenarios/{scenario.pk}/schedules"
    answer = api(client, owner, "post", schedules, {"cron": "0 7 * * *", "params": {"user": "bob"}})
    assert answer.status_code == 201, answer.json()
    assert Schedule.objects.get(pk=answer.json()["id"]).params == {"user": "bob"}
    # An edit of its steps keeps the schedule's user a parameter it takes.
    scenario_services.scenario_step_update(
        scenario=scenario, index=0, args={"url": "http://shop.test/orders?all=1"}
    )
