"""Saving a run lists every step it leaves out (and keeps the ones the person keeps) and
the checks its final page proposed; checks are added and edited on the scenario page;
a replay whose check fails is failed, in the dashboard and in its report."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from automation.recording import expect
from automation.recording.scenario import STEP_ACTIONS
from dashboard.models import Run, Scenario, ScenarioStep
from dashboard.runs import services as run_services
from dashboard.scenarios import services as scenario_services
from dashboard.scenarios.forms import StepValuesForm
from tests.dashboard.conftest import Runs, ended

BOX = {"role": "checkbox", "name": "", "tag": "input", "type": "checkbox", "row": "Buy milk",
       "selectors": ["li:nth-of-type(1) > input"]}  # fmt: skip
FIELD = {"role": "textbox", "name": "New todo", "tag": "input", "id": "new",
         "selectors": ["#new"]}  # fmt: skip


def saved_run(owner: Any) -> Run:
    """A finished run: a failed tick whose effect the page shows, a read, an evaluate,
    and the checks its final page proposed."""
    run = run_services.run_create(owner=owner, task="add milk", start_url="", planner="rules")
    ended(run)
    rows = [
        {"index": 0, "action": "navigate", "args": {"url": "http://todo.test/app/"}},
        {"index": 1, "action": "fill", "args": {"ref": "e3", "value": "Buy milk",
         "submit": True}, "identity": FIELD, "led_to": "http://todo.test/app/?added=1"},
        {"index": 2, "action": "check", "args": {"ref": "e9", "checked": True}, "ok": False,
         "error": {"code": "budget_exceeded", "message": "check e9: out of time"},
         "identity": BOX},
        {"index": 3, "action": "read_page", "args": {}},
        {"index": 4, "action": "evaluate", "args": {"expression": "1 + 1"}},
    ]  # fmt: skip
    for row in rows:
        run_services.step_record(run_id=run.pk, data=row)
    checks = [
        {"check": {"action": "expect", "args": {"kind": "checked"}, "identity": BOX},
         "why": "what step 2 left on the page", "picked": True},
        {"check": {"action": "expect", "args": {"kind": "rows", "text": "Buy milk",
                                                "count": 1}},
         "why": "a text the run typed", "picked": True},
        {"check": {"action": "expect", "args": {"kind": "url", "url": "http://todo.test/app/"}},
         "why": "the page's address", "picked": False},
    ]  # fmt: skip
    run_services.run_event_append(run_id=run.pk, seq=1, type="checks.proposed",
                              data={"type": "checks.proposed", "checks": checks})  # fmt: skip
    run_services.run_set_status(run_id=run.pk, status=Run.Status.SUCCEEDED, summary="added")
    return run


@pytest.mark.django_db
def test_the_save_page_lists_what_it_leaves_out_and_what_the_run_proposes(
    owner: Any, stranger: Any
) -> None:
    run = saved_run(owner)
    client = Client()
    client.force_login(owner)
    page = client.get(f"/runs/{run.pk}/save").content.decode()
    assert 'Steps it leaves out <span class="hint">(3)</span>' in page
    assert "it failed: check e9: out of time" in page
    assert "it only read the page" in page and "replay can&#x27;t do &#x27;evaluate&#x27;" in page
    assert page.count('name="keep"') == 1  # only the failed tick can be kept
    assert page.count('name="checks"') == 3
    assert page.count("checked>") >= 2  # the picked checks start ticked
    assert "the checkbox in row &#x27;Buy milk&#x27; is ticked" in page
    assert "1 row(s) show &#x27;Buy milk&#x27;" in page
    # The failed step ticked a box: it says which; "check" is never said of a box.
    assert "tick the checkbox in row &#x27;Buy milk&#x27;" in page
    assert " is checked" not in page and "check the" not in page

    response = client.post(
        f"/runs/{run.pk}/save", {"name": "Milk", "keep": ["2"], "checks": ["0", "1"]}
    )
    scenario = Scenario.objects.get()
    assert response.status_code == 302 and scenario.name == "Milk"
    steps = list(scenario.steps.order_by("index"))
    assert [s.action for s in steps] == ["navigate", "fill", "check", "expect", "expect"]
    assert steps[1].led_to == "http://todo.test/app/?added=1"  # where the run's step led
    assert steps[3].args == {"kind": "checked"} and steps[3].identity["row"] == "Buy milk"
    assert "step 3 (read_page): it only read the page" in scenario.description
    assert "step 2" not in scenario.description  # kept by the person

    bad = client.post(f"/runs/{run.pk}/save", {"name": "x", "checks": ["7"], "keep": ["3"]})
    assert bad.status_code == 400 and Scenario.objects.count() == 1
    assert "Select a valid choice" in bad.content.decode()
    other = Client()
    other.force_login(stranger)
    assert other.get(f"/runs/{run.pk}/save").status_code == 404
    assert other.post(f"/runs/{run.pk}/save", {"name": "mine"}).status_code == 404


@pytest.mark.django_db
def test_a_run_that_proposed_nothing_says_so_and_saves_without_checks(owner: Any) -> None:
    run = run_services.run_create(owner=owner, task="open", start_url="", planner="rules")
    ended(run)
    run_services.step_record(
        run_id=run.pk, data={"index": 0, "action": "navigate", "args": {"url": "http://a.test/"}}
    )
    client = Client()
    client.force_login(owner)
    page = client.get(f"/runs/{run.pk}/save").content.decode()
    assert 'data-testid="no-checks"' in page and 'data-testid="nothing-left-out"' in page
    client.post(f"/runs/{run.pk}/save", {"name": "Open"})
    assert [s.action for s in Scenario.objects.get().steps.all()] == ["navigate"]


@pytest.mark.django_db
def test_checks_are_added_and_edited_on_the_scenario_page(owner: Any, stranger: Any) -> None:
    run = saved_run(owner)
    scenario = scenario_services.scenario_from_run(owner=owner, run=run, name="Milk", keep=[2])
    client = Client()
    client.force_login(owner)
    page = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert 'data-testid="no-checks"' in page
    url = f"/scenarios/{scenario.pk}/checks"
    ok = client.post(url, {"check-kind": "text_visible", "check-text": "1 item left"})
    assert ok.status_code == 302
    box, page_step = (scenario.steps.get(index=i).pk for i in (2, 0))  # a step by its id
    ok = client.post(url, {"check-kind": "checked", "check-step": box})
    assert ok.status_code == 302
    for bad, error in [
        ({"check-kind": "rows", "check-text": "Buy milk"}, "needs its rows"),
        ({"check-kind": "checked"}, "Choose the step"),
        (
            {"check-kind": "value", "check-step": page_step, "check-value": "x"},
            "choose the step again",
        ),
        ({"check-kind": "text_visible", "check-text": "${SECRET:PW}"}, "can&#x27;t hold a secret"),
    ]:
        response = client.post(url, bad)
        assert response.status_code == 400 and error in response.content.decode(), bad
    steps = list(scenario.steps.order_by("index"))
    assert [(s.action, s.args) for s in steps[3:]] == [
        ("expect", {"kind": "text_visible", "text": "1 item left"}),
        ("expect", {"kind": "checked"}),
    ]
    assert steps[4].identity == steps[2].identity
    page = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert "text “1 item left” is visible" in page
    assert '<strong class="step-action">expect</strong>' in page  # a check expects
    assert "the checkbox in row “Buy milk” is ticked" in page
    edited = client.post(
        f"/scenarios/{scenario.pk}/steps/3/values",
        {"step3-text": "2 items left", "step_id": steps[3].pk},
    )
    assert edited.status_code == 302
    assert ScenarioStep.objects.get(pk=steps[3].pk).args["text"] == "2 items left"
    other = Client()
    other.force_login(stranger)
    assert other.post(url, {"check-kind": "url", "check-url": "/x"}).status_code == 404
    export = client.get(f"/scenarios/{scenario.pk}/export.py").content.decode()
    assert "expect_text(page, '2 items left')" in export  # read as replay reads it


@pytest.mark.django_db(transaction=True)
async def test_a_replay_whose_check_fails_is_failed(
    runs: Runs, owner: Any, fixture_url: str
) -> None:
    data = {
        "format": "tabwright.scenario", "version": 1, "name": "Sign-in page",
        "base_url": f"{fixture_url}/replay/v1",
        "steps": [
            {"action": "navigate", "args": {"url": f"{fixture_url}/replay/v1/login.html"}},
            {"action": "expect", "args": {"kind": "text_visible", "text": "Sign in"}},
            {"action": "expect", "args": {"kind": "text_hidden", "text": "Email"}},
        ],
    }  # fmt: skip
    scenario = await sync_to_async(scenario_services.scenario_import)(owner=owner, data=data)
    run = await sync_to_async(scenario_services.replay_run_create)(
        owner=owner, scenario=scenario, base_url="", params={}
    )
    await runs.start(run)
    await runs.manager.wait(run.pk)
    run = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert run.status == Run.Status.FAILED
    assert "expected text 'Email' is not visible, but it is shown" in run.status_reason
    statuses = await sync_to_async(list)(
        scenario.steps.order_by("index").values_list("last_status", flat=True)
    )
    assert statuses == ["passed", "passed", "failed"]


@pytest.mark.django_db
def test_a_person_s_rescue_waits_as_a_proposed_change_to_approve(owner: Any) -> None:
    scenario = scenario_services.scenario_from_run(owner=owner, run=saved_run(owner), name="Milk")
    now = {**FIELD, "name": "Add a task", "id": "task"}
    outcome = {"index": 1, "status": "skipped", "strategy": "person", "score": None,
               "heal": "proposed", "healed": now,
               "changes": ["done by the person", "name: 'New todo' -> 'Add a task'"]}  # fmt: skip
    scenario_services.scenario_step_replayed(scenario_id=scenario.pk, outcome=outcome)
    heal = scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome)
    assert heal is not None and heal.status == "proposed"
    step = ScenarioStep.objects.get(scenario=scenario, index=1)
    assert step.identity["name"] == "New todo" and step.last_status == "skipped"
    client = Client()
    client.force_login(owner)
    page = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert "the element the person did it on" in page
    client.post(f"/heals/{heal.pk}/decide", {"approve": "1"})
    step.refresh_from_db()
    assert step.identity["name"] == "Add a task"
    assert [v["name"] for v in step.identity["variants"]] == ["New todo"]


FORM = {"role": "textbox", "name": "Notes", "tag": "textarea", "selectors": ["#notes"]}
TIER = {"role": "combobox", "name": "Tier", "tag": "select", "selectors": ["#tier"]}
LIST = {"role": "list", "name": "Steps", "tag": "ul", "selectors": ["#steps"]}
# A step of every action and a check of every kind the format takes, their values spaced
# and broken into lines as a person may have typed them.
EVERY_STEP: dict[str, dict[str, Any]] = {
    "navigate": {"args": {"url": "http://todo.test/app/"}},
    "back": {}, "forward": {}, "reload": {},
    "dialog": {"args": {"accept": True, "prompt_text": " yes \n please", "times": 2}},
    "click": {"args": {"button": "right", "modifiers": ["Shift"]}, "identity": FIELD},
    "double_click": {"identity": FIELD}, "hover": {"identity": FIELD},
    "fill": {"args": {"value": "Line 1\nLine 2 ", "submit": True}, "identity": FORM},
    "type": {"args": {"text": " a\r\nb", "delay_ms": 5}, "identity": FORM},
    "select_option": {"args": {"values": [" Gold ", "Silver"]}, "identity": TIER},
    "check": {"args": {"checked": False}, "identity": BOX},
    "upload": {"args": {"files": ["orders.csv"]}, "identity": FIELD},
    "press": {"args": {"key": " "}, "identity": BOX},
    "scroll": {"args": {"dy": 300}},
    "wait_for": {"args": {"text": " Saved\n", "time_ms": 500}},
    "call": {"args": {"scenario": "Sign in", "params": {"who": " Ada "}}},
    "tabs": {"args": {"op": "opener", "closed": True, "changed": True}},
    "text_visible": {"args": {"text": " Line 1\nLine 2 "}},
    "text_hidden": {"args": {"text": "Error"}},
    "rows": {"args": {"text": "Buy milk ", "count": 1, "at_least": True}},
    "url": {"args": {"url": "/app/"}}, "no_error": {},
    "visible": {"identity": FIELD}, "checked": {"identity": BOX},
    "unchecked": {"identity": BOX},
    "value": {"args": {"value": "Line 1\nLine 2 "}, "identity": FORM},
    "items": {"args": {"items": [" One", "Two "]}, "identity": LIST},
    "download": {"args": {"name": "orders-*.csv", "type": "csv", "header": ["id", " name"],
                          "rows": 3, "min_bytes": 10}},
}  # fmt: skip


def every_step() -> list[dict[str, Any]]:
    steps = []
    for what, step in EVERY_STEP.items():
        action, args = (what, {}) if what in STEP_ACTIONS else ("expect", {"kind": what})
        steps.append({"action": action, **step, "args": {**args, **step.get("args", {})}})
    return steps


def test_every_step_and_check_the_format_takes_has_a_page_and_its_values_form(
    owner: Any,
) -> None:
    """The page (and the form to change a step's values) of a scenario with a step of
    each action and a check of each kind: saved as shown, each keeps its values exactly,
    spaces and line breaks and all (a textarea sends its lines CRLF)."""
    assert set(EVERY_STEP) == (STEP_ACTIONS - {"expect"}) | set(expect.KINDS)  # a new one
    sign_in = {"action": "navigate", "args": {"url": "http://todo.test/"}}
    callee = {"format": "tabwright.scenario", "version": 1, "name": "Sign in",
              "params": {"who": {"default": "Ada"}}, "steps": [sign_in]}  # fmt: skip
    scenario_services.scenario_import(owner=owner, data=callee)
    data = {"format": "tabwright.scenario", "version": 1, "name": "Everything",
            "base_url": "http://todo.test/app/", "steps": every_step()}  # fmt: skip
    scenario = scenario_services.scenario_import(owner=owner, data=data)
    client = Client()
    client.force_login(owner)
    page = client.get(f"/scenarios/{scenario.pk}/")
    assert page.status_code == 200
    for step in scenario.steps.order_by("index"):
        form = StepValuesForm(step=step)
        what = step.args.get("kind", step.action)
        shown = {name: form[name].value() for name in form.fields}
        # (A tabs step says where the steps after it happen, as the run went: no values.)
        assert step.action == "tabs" or set(step.args) - {"kind", "scenario"} <= {
            *shown,
            "params",
        }, what
        if form.fields:
            assert f"Save step {step.index}</button>" in page.content.decode(), what
        sent = {form.add_prefix(k): "" if v is None else str(v).replace("\n", "\r\n")
                for k, v in shown.items()}  # fmt: skip
        saved = client.post(
            f"/scenarios/{scenario.pk}/steps/{step.index}/values",
            {**sent, "step_id": step.pk, "step_version": step.version},
        )
        assert saved.status_code == 302, (what, saved.content.decode()[-2000:])
        assert ScenarioStep.objects.get(pk=step.pk).args == step.args, what
