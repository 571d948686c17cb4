"""A replay saved as a scenario keeps what its scenario brought to the replay besides its
steps: its interruption handlers and its login scenario (they record no step of the run,
so a save from the steps alone lost them: the saved scenario stopped for a person at the
cover its original cleared, and no longer signed in again).  A run that replayed nothing
keeps none; a replay whose scenario was deleted since, or whose login scenario is
another person's, says in the description what it could not keep."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from dashboard.models import Run, Scenario
from dashboard.runs import services as run_services
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios import services as scenario_services
from tests.dashboard.conftest import ended

pytestmark = pytest.mark.django_db

BASE = "http://crm.test"
COOKIES = {"name": "Cookies", "when": {"role": "dialog", "name": "Cookies"},
           "steps": [{"action": "click", "args": {},
                      "identity": {"role": "button", "name": "Accept all"}}]}  # fmt: skip
NAVIGATE = {"action": "navigate", "args": {"url": f"{BASE}/new"}}
FILL = {"action": "fill", "args": {"value": "${name}"},
        "identity": {"role": "textbox", "name": "Name", "tag": "input"}}  # fmt: skip
SAVE = {"action": "click", "args": {}, "identity": {"role": "button", "name": "Save customer"}}


def new_customer(owner: Any) -> Scenario:
    """A scenario that clears a cookie wall and signs in again with "CRM sign-in"."""
    scenario_services.scenario_import(owner=owner, data={
        "version": 1, "name": "CRM sign-in", "base_url": BASE,
        "steps": [{"action": "navigate", "args": {"url": f"{BASE}/login"}}],
    })  # fmt: skip
    return scenario_services.scenario_import(owner=owner, data={
        "version": 1, "name": "New customer", "base_url": BASE,
        "params": {"name": {"default": "Ada"}}, "login_scenario": "CRM sign-in",
        "handlers": [COOKIES], "steps": [NAVIGATE, FILL, SAVE],
    })  # fmt: skip


def replayed(owner: Any, scenario: Scenario) -> Run:
    """An ended replay of ``scenario`` by ``owner``, its steps recorded as a replay's."""
    run = scenario_services.replay_run_create(
        owner=owner, scenario=scenario, base_url=BASE, params={"name": "Grace"}
    )
    for index, step in enumerate((NAVIGATE, FILL, SAVE)):
        run_services.step_record(run_id=run.pk, data={**step, "index": index, "by": "replay"})
    ended(run)
    return run


def test_a_saved_replay_keeps_its_scenario_s_handlers_and_login_scenario(owner: Any) -> None:
    original = new_customer(owner)
    run = replayed(owner, original)
    saved = scenario_services.scenario_from_run(owner=owner, run=run, name="Saved")
    document = scenario_selectors.scenario_document(scenario=saved)
    assert [h.describe() for h in document.handlers] == ["'Cookies' dialog"]
    assert saved.handlers == original.handlers
    assert document.login_scenario == "CRM sign-in"
    assert saved.login_scenario == Scenario.objects.get(name="CRM sign-in")
    assert [s.action for s in document.steps] == ["navigate", "fill", "click"]
    assert document.params == {"name": {"default": "Grace"}}
    assert "not kept" not in document.description


def test_the_save_page_says_what_of_the_replayed_scenario_it_keeps(owner: Any) -> None:
    """The person sees, before saving, that the handler and the sign-in come along; the
    page's save keeps them (the API's save is the same service)."""
    original = new_customer(owner)
    run = replayed(owner, original)
    client = Client()
    client.force_login(owner)
    page = client.get(f"/runs/{run.pk}/save").content.decode()
    assert "It clears the &#x27;Cookies&#x27; dialog" in page
    assert "It signs in again with “CRM sign-in”" in page
    client.post(f"/runs/{run.pk}/save", {"name": "Saved from the page"})
    saved = Scenario.objects.get(name="Saved from the page")
    assert saved.handlers == original.handlers
    assert saved.login_scenario is not None and saved.login_scenario.name == "CRM sign-in"


def test_a_run_that_replayed_nothing_keeps_no_handler_or_login_scenario(owner: Any) -> None:
    new_customer(owner)
    run = run_services.run_create(owner=owner, task="add Ada", start_url="", planner="rules")
    run_services.step_record(run_id=run.pk, data={**NAVIGATE, "index": 0})
    ended(run)
    saved = scenario_services.scenario_from_run(owner=owner, run=run, name="Agent's")
    assert saved.handlers == [] and saved.login_scenario is None
    assert "not kept" not in saved.description
    client = Client()
    client.force_login(owner)
    assert 'data-testid="replayed-keeps"' not in client.get(f"/runs/{run.pk}/save").content.decode()


def test_a_replay_whose_scenario_was_deleted_since_says_what_it_could_not_keep(
    owner: Any,
) -> None:
    original = new_customer(owner)
    run = replayed(owner, original)
    original.delete()
    run.refresh_from_db()
    saved = scenario_services.scenario_from_run(owner=owner, run=run, name="Orphan")
    assert saved.handlers == [] and saved.login_scenario is None
    assert "The scenario this run replayed was deleted since" in saved.description
    assert [s.action for s in saved.steps.order_by("index")] == ["navigate", "fill", "click"]


def test_another_person_s_login_scenario_is_left_out_saying_so(owner: Any, staff: Any) -> None:
    """A staff member replays someone else's scenario and saves it as their own: the
    handler comes along, the login scenario (the other person's) does not, and the
    description says why."""
    original = new_customer(owner)
    run = replayed(staff, original)
    saved = scenario_services.scenario_from_run(owner=staff, run=run, name="Staff's")
    assert saved.owner == staff and saved.handlers == original.handlers != []
    assert saved.login_scenario is None
    assert "Its login scenario 'CRM sign-in' is another person's" in saved.description
