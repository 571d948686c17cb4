"""What a click sent when recorded (a step's ``sent``) is kept from the run's steps to the
scenario saved from them, and through its JSON: a replay of it judges the click by it
(automation.recording.sent)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from automation.errors import ScenarioInvalid
from dashboard.models import Run
from dashboard.runs import services as run_services
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios import services as scenario_services
from tests.dashboard.conftest import ended

SAVE = {"role": "button", "name": "Save", "tag": "button"}
NAME = {"role": "textbox", "name": "Name", "tag": "input"}


@pytest.mark.django_db
def test_what_a_click_sent_is_kept_from_the_run_to_its_scenario_and_its_json(owner: Any) -> None:
    run = run_services.run_create(owner=owner, task="rename", start_url="", planner="rules")
    ended(run)
    for row in [
        {"index": 0, "action": "navigate", "args": {"url": "http://bo.test/profile"}},
        {"index": 1, "action": "fill", "args": {"ref": "e2", "value": "Ann"}, "identity": NAME},
        {"index": 2, "action": "click", "args": {"ref": "e3"}, "identity": SAVE,
         "sent": "POST /api/profile"},
    ]:  # fmt: skip
        run_services.step_record(run_id=run.pk, data=row)
    run_services.run_set_status(run_id=run.pk, status=Run.Status.SUCCEEDED, summary="done")
    scenario = scenario_services.scenario_from_run(owner=owner, run=run, name="Rename")
    document = scenario_selectors.scenario_document(scenario=scenario)
    assert [s.sent for s in document.steps] == ["", "", "POST /api/profile"]
    data = document.to_dict()
    copy = scenario_services.scenario_import(owner=owner, data=data)
    assert scenario_selectors.scenario_document(scenario=copy).steps[2].sent == "POST /api/profile"
    data["steps"][2]["sent"] = "GET /api/profile"  # no write: refused, nothing stored
    with pytest.raises(ScenarioInvalid, match="step 2: sent must be a write's method and path"):
        scenario_services.scenario_import(owner=owner, data=data)


@pytest.mark.django_db
def test_what_a_click_sent_is_changed_or_emptied_on_the_scenario_page(owner: Any) -> None:
    """An app that no longer sends one there (it saves over a socket now): the person
    empties the step's "sent" and replay judges the click so no more; a GET is refused."""
    data = {
        "format": "tabwright.scenario", "version": 1, "name": "Rename", "base_url": "",
        "steps": [{"action": "click", "args": {}, "identity": SAVE, "sent": "POST /api/p"}],
    }  # fmt: skip
    scenario = scenario_services.scenario_import(owner=owner, data=data)
    client = Client()
    client.force_login(owner)
    page = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert 'name="step0-sent"' in page and 'value="POST /api/p"' in page
    refused = client.post(f"/scenarios/{scenario.pk}/steps/0/values", {"step0-sent": "GET /p"})
    assert refused.status_code == 400
    assert "sent must be a write&#x27;s method and path" in refused.content.decode()
    assert scenario.steps.get().sent == "POST /api/p"
    client.post(f"/scenarios/{scenario.pk}/steps/0/values", {"step0-sent": ""})
    assert scenario.steps.get().sent == ""
    assert scenario_selectors.scenario_document(scenario=scenario).steps[0].sent == ""
