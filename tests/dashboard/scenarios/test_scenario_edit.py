"""Keeping a scenario: search the list, rename it, reorder, delete and change its steps,
edit parameter defaults, and read how its latest replay did.  Only the owner changes a
scenario; a refused edit says why and leaves the stored scenario as it was."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from automation.errors import ScenarioInvalid
from automation.recording.scenario import Scenario as Document
from dashboard.accounts.services import api_token_create
from dashboard.models import IdentityHeal, Run, Scenario, ScenarioStep
from dashboard.runs import services as run_services
from dashboard.scenarios import call_services, selectors
from dashboard.scenarios import services as scenario_services
from dashboard.scenarios.edit_services import ReplayLive
from dashboard.scenarios.forms import ReplayForm

pytestmark = pytest.mark.django_db

BASE = "http://shop.test/app"
EMAIL = {"role": "textbox", "name": "Email", "tag": "input", "type": "email",
         "test_ids": {"data-testid": "login-email"}, "selectors": ["#email", "input[name=email]"],
         "placeholder": "you@example.org"}  # fmt: skip
REGION = {"role": "combobox", "name": "Region", "tag": "select", "selectors": ["#region"]}
REMEMBER = {"role": "checkbox", "name": "Remember me", "tag": "input", "type": "checkbox"}
SIGN_IN = {"role": "button", "name": "Sign in", "tag": "button", "selectors": ["#signin"]}


def shop(**extra: Any) -> dict[str, Any]:
    return {
        "format": "tabwright.scenario", "version": 1, "name": "Sign in to the shop",
        "description": "The weekly check of the login page", "base_url": BASE,
        "params": {"email": {"default": "ada@example.org"}},
        "steps": [
            {"action": "navigate", "args": {"url": f"{BASE}/login.html"}},
            {"action": "fill", "args": {"value": "${email}"}, "identity": EMAIL},
            {"action": "select_option", "args": {"values": "Europe"}, "identity": REGION},
            {"action": "check", "args": {}, "identity": REMEMBER},
            {"action": "click", "args": {}, "identity": SIGN_IN},
            {"action": "press", "args": {"key": "Enter"}},
            {"action": "wait_for", "args": {"text": "Signed in"}},
        ],
        **extra,
    }  # fmt: skip


@pytest.fixture
def scenario(owner: Any) -> Scenario:
    return scenario_services.scenario_import(owner=owner, data=shop())


@pytest.fixture
def client(owner: Any) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def url(scenario: Scenario, tail: str = "") -> str:
    return f"/scenarios/{scenario.pk}/{tail}"


def actions(scenario: Scenario) -> list[str]:
    return list(scenario.steps.order_by("index").values_list("action", flat=True))


def stored(scenario: Scenario) -> dict[str, Any]:
    """Everything an edit could change, to show a refused one changed nothing."""
    scenario.refresh_from_db()
    return {**selectors.scenario_data(scenario=scenario), "updated_at": scenario.updated_at}


def page_of(response: Any) -> str:
    return response.content.decode()


def test_search_matches_name_description_or_address_in_what_the_user_may_see(
    owner: Any, stranger: Any, staff: Any, client: Client
) -> None:
    scenario_services.scenario_import(owner=owner, data=shop(name="Close the account"))
    scenario_services.scenario_import(
        owner=owner, data=shop(name="Billing run", description="Monthly INVOICES")
    )
    scenario_services.scenario_import(
        owner=owner, data=shop(name="Stock count", base_url="http://erp.test")
    )
    scenario_services.scenario_import(owner=stranger, data=shop(name="Invoices of Sam"))

    page = page_of(client.get("/scenarios/", {"q": "invoices"}))
    assert "Billing run" in page and "Invoices of Sam" not in page
    assert "Close the account" not in page
    assert 'value="invoices"' in page  # the query stays in the box
    page = page_of(client.get("/scenarios/", {"q": "  ERP.test "}))
    assert "Stock count" in page and "Billing run" not in page and 'value="ERP.test"' in page
    page = page_of(client.get("/scenarios/", {"q": "nothing like it"}))
    assert "No scenario matches “nothing like it”" in page
    # A NUL no name holds (SQLite's LIKE stopped at it: every scenario matched).
    for nul in ("\x00", "Stock\x00 count"):
        page = page_of(client.get("/scenarios/", {"q": nul}))
        assert "No scenario matches" in page and "Stock count" not in page
    page = page_of(client.get("/scenarios/"))
    assert all(name in page for name in ("Close the account", "Billing run", "Stock count"))
    assert "Invoices of Sam" not in page
    staff_client = Client()
    staff_client.force_login(staff)
    page = page_of(staff_client.get("/scenarios/", {"q": "invoices"}))
    assert "Invoices of Sam" in page and "Billing run" in page


def test_rename_and_describe_shows_in_both_exports(scenario: Scenario, client: Client) -> None:
    before = scenario.updated_at
    response = client.post(
        url(scenario, "edit"), {"name": "  Log in, then out ", "description": "Nightly."}
    )
    assert response.status_code == 302 and response["Location"] == url(scenario)
    scenario.refresh_from_db()
    assert (scenario.name, scenario.description) == ("Log in, then out", "Nightly.")
    assert scenario.updated_at > before
    exported = json.loads(client.get(url(scenario, "export.json")).content)
    assert exported["name"] == "Log in, then out" and exported["description"] == "Nightly."
    # The name is a constant written by repr(), never text in the module's docstring.
    assert "SCENARIO = 'Log in, then out'" in page_of(client.get(url(scenario, "export.py")))
    assert "Name and description saved." in page_of(client.get(url(scenario)))


@pytest.mark.parametrize(
    "data, message",
    [
        ({"name": "   ", "description": "x"}, "This field is required."),
        ({"description": "no name at all"}, "This field is required."),
        ({"name": "x" * 201}, "at most 200 characters"),
    ],
)
def test_a_bad_name_is_refused_and_kept_in_the_form(
    scenario: Scenario, client: Client, data: dict[str, str], message: str
) -> None:
    before = stored(scenario)
    response = client.post(url(scenario, "edit"), data)
    assert response.status_code == 400 and message in page_of(response)
    assert '<details class="edit-meta" open>' in page_of(response)
    assert stored(scenario) == before


def test_settings_from_a_page_shown_before_another_rename_keep_that_rename(
    scenario: Scenario, client: Client
) -> None:
    """Two tabs show the settings.  One renames the scenario; the other, shown before,
    changes only the description: that is saved, and the name stays (its callers' steps
    with it).  A name changed in both is refused, naming what it is now, as typed."""
    shown = {"shown-name": scenario.name, "shown-description": scenario.description}
    client.post(url(scenario, "edit"), {**shown, "name": "Nightly sign-in",
                                        "description": scenario.description})  # fmt: skip
    stale = {**shown, "name": shown["shown-name"], "description": "Ada signs in\r\nat 7."}
    assert client.post(url(scenario, "edit"), stale).status_code == 302
    scenario.refresh_from_db()
    assert (scenario.name, scenario.description) == ("Nightly sign-in", "Ada signs in\r\nat 7.")
    before = stored(scenario)
    both = {**shown, "name": "Morning sign-in", "description": "Ada signs in\nat 7."}
    refused = client.post(url(scenario, "edit"), both)
    page = page_of(refused)
    assert refused.status_code == 400 and "changed to &#x27;Nightly sign-in&#x27;" in page
    assert 'value="Morning sign-in"' in page  # what was typed, for another try
    assert stored(scenario) == before
    with pytest.raises(call_services.SettingsChanged) as refusal:
        call_services.scenario_rename(scenario=scenario, description="x",
                                      shown={"description": "The weekly check"})  # fmt: skip
    assert refusal.value.code == "settings_changed" and refusal.value.field == "description"


def test_the_rename_service_refuses_an_empty_name(scenario: Scenario) -> None:
    with pytest.raises(ScenarioInvalid, match="needs a name"):
        call_services.scenario_rename(scenario=scenario, name="  ")
    with pytest.raises(ScenarioInvalid, match="at most 200"):
        call_services.scenario_rename(scenario=scenario, name="n" * 201)


def test_a_name_another_of_ones_scenarios_has_is_refused(scenario: Scenario) -> None:
    """Calls find scenarios by name: "Order is paid" renamed "Sign in", a scenario that
    calls both would run the sign-in twice and its check of the payment never."""
    base = "http://shop.test"
    paid = {"action": "expect", "args": {"kind": "text_visible", "text": "Paid"}}
    verify = scenario_services.scenario_import(owner=scenario.owner, data={
        "version": 1, "name": "Order is paid", "base_url": base, "steps": [paid]})  # fmt: skip
    with pytest.raises(ScenarioInvalid, match=f"another scenario named {scenario.name!r}"):
        call_services.scenario_rename(scenario=verify, name=scenario.name)
    verify.refresh_from_db()
    assert verify.name == "Order is paid"
    call_services.scenario_rename(scenario=verify, name="Order is paid in full")  # its own


def test_steps_move_up_and_down_with_their_heals_and_exports_follow(
    scenario: Scenario, client: Client
) -> None:
    click = ScenarioStep.objects.get(scenario=scenario, index=4)
    renamed = {**SIGN_IN, "name": "Log in"}
    outcome = {"index": 4, "heal": "proposed", "healed": renamed, "changes": ["name"]}
    heal = scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome)
    assert heal is not None
    before = scenario.updated_at
    response = client.post(url(scenario, "steps/4/move"), {"direction": "up", "step_id": click.pk})
    assert response["Location"] == url(scenario) + "#step-3"
    assert actions(scenario) == ["navigate", "fill", "select_option", "click", "check", "press",
                                 "wait_for"]  # fmt: skip
    click.refresh_from_db()
    heal.refresh_from_db()
    assert click.index == 3 and heal.step_id == click.pk
    scenario.refresh_from_db()
    assert scenario.updated_at > before
    client.post(url(scenario, "steps/0/move"), {"direction": "down"})
    assert actions(scenario)[:2] == ["fill", "navigate"]
    exported = json.loads(client.get(url(scenario, "export.json")).content)
    assert [s["action"] for s in exported["steps"]][:5] == [
        "fill", "navigate", "select_option", "click", "check"]  # fmt: skip
    code = page_of(client.get(url(scenario, "export.py")))
    assert code.index("get_by_role('button', name='Sign in'") < code.index("Remember me")
    assert list(scenario.steps.order_by("index").values_list("index", flat=True)) == list(range(7))


@pytest.mark.parametrize(
    "tail, data, message",
    [
        ("steps/0/move", {"direction": "up"}, "Step 0 is already the first."),
        ("steps/6/move", {"direction": "down"}, "Step 6 is already the last."),
        ("steps/2/move", {"direction": "sideways"}, "Move a step up or down."),
        ("steps/2/move", {}, "Move a step up or down."),
        ("steps/9/move", {"direction": "up"}, "No step 9 in this scenario (it has 7 steps)."),
        ("steps/9/delete", {}, "No step 9 in this scenario"),
        ("steps/9/values", {"step9-value": "x"}, "No step 9 in this scenario"),
        ("steps/9/param", {"name": "x"}, "No step 9 in this scenario"),
        ("steps/2/delete", {"step_id": "0"}, "The scenario changed since this page was shown"),
        ("steps/2/move", {"direction": "up", "step_id": "abc"}, "step 2 is another step now"),
        ("params/nope/default", {"param-nope-default": "1"}, "no parameter &#x27;nope&#x27;"),
    ],
)
def test_a_bad_step_edit_says_why_and_changes_nothing(
    scenario: Scenario, client: Client, tail: str, data: dict[str, str], message: str
) -> None:
    before = stored(scenario)
    response = client.post(url(scenario, tail), data, follow=True)
    assert response.status_code == 200 and message in page_of(response)
    assert stored(scenario) == before


def test_steps_keep_their_places_while_a_replay_of_them_is_live(
    owner: Any, scenario: Scenario, client: Client
) -> None:
    run = scenario_services.replay_run_create(
        owner=owner, scenario=scenario, base_url="", params={}
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)  # claimed: live
    before = stored(scenario)
    for tail, data in [("steps/3/move", {"direction": "up"}), ("steps/3/delete", {})]:
        response = client.post(url(scenario, tail), data, follow=True)
        assert f"run {run.pk} is replaying this scenario" in page_of(response)
    assert stored(scenario) == before
    run_services.run_set_status(run_id=run.pk, status=Run.Status.STOPPED)
    client.post(url(scenario, "steps/3/move"), {"direction": "up"})
    assert actions(scenario)[2:4] == ["check", "select_option"]


def test_a_called_scenario_keeps_its_step_numbers_while_a_replay_that_reaches_it_is_live(
    owner: Any, scenario: Scenario
) -> None:
    """A live replay finds the steps of the scenarios it calls and signs in with by their
    numbers (its heals go to them so): a replay of a scenario that calls this one, through
    another, or signs in with it, refuses moving or deleting its steps, naming the run and
    how it comes to this scenario."""

    def calling(name: str, callee: str) -> Scenario:
        call = {"action": "call", "args": {"scenario": callee, "params": {}}}
        data = {**shop(), "name": name, "params": {}, "steps": [call]}
        return scenario_services.scenario_import(owner=owner, data=data)

    checkout = calling("Checkout", "Sign in to the shop")
    weekly = calling("Weekly", "Checkout")
    orders = scenario_services.scenario_import(owner=owner, data={**shop(), "name": "Orders"})
    call_services.login_set(scenario=orders, login_id=scenario.pk)
    before = stored(scenario)
    for replayed, how in [
        (weekly, "'Weekly', which calls 'Checkout', which calls it"),
        (orders, "'Orders', which signs in with it"),
    ]:
        live = Run.objects.create(owner=owner, kind=Run.Kind.REPLAY, scenario=replayed,
                                  planner="replay", status=Run.Status.PAUSED)  # fmt: skip
        for edit in (
            lambda: scenario_services.scenario_step_move(scenario=scenario, index=2, to=1),
            lambda: scenario_services.scenario_step_delete(scenario=scenario, index=1),
        ):
            with pytest.raises(ReplayLive, match=f"run {live.pk} is replaying {how}") as refusal:
                edit()
            assert refusal.value.run_id == live.pk and refusal.value.code == "replay_live"
        assert stored(scenario) == before
        run_services.run_set_status(run_id=live.pk, status=Run.Status.SUCCEEDED)
    Run.objects.create(owner=owner, kind=Run.Kind.REPLAY, scenario=checkout, planner="replay")
    scenario_services.scenario_step_move(scenario=scenario, index=2, to=1)  # queued: goes
    assert actions(scenario)[1:3] == ["select_option", "fill"]


def test_deleting_a_step_closes_the_gap_and_drops_its_unused_parameter(
    scenario: Scenario, client: Client
) -> None:
    fill = ScenarioStep.objects.get(scenario=scenario, index=1)
    scenario_services.heal_record(
        scenario_id=scenario.pk,
        outcome={
            "index": 1,
            "heal": "confident",
            "healed": {**EMAIL, "id": "mail"},
            "changes": ["id"],
        },
    )
    assert IdentityHeal.objects.filter(step=fill).exists()
    response = client.post(url(scenario, "steps/1/delete"), {"step_id": fill.pk})
    assert response["Location"] == url(scenario) + "#step-0"
    assert actions(scenario) == ["navigate", "select_option", "check", "click", "press",
                                 "wait_for"]  # fmt: skip
    assert list(scenario.steps.values_list("index", flat=True)) == list(range(6))
    scenario.refresh_from_db()
    assert scenario.params == {} and not IdentityHeal.objects.exists()
    exported = json.loads(client.get(url(scenario, "export.json")).content)
    assert exported["params"] == {} and len(exported["steps"]) == 6
    assert "EMAIL" not in page_of(client.get(url(scenario, "export.py")))
    page = page_of(client.get(url(scenario)))
    assert "Step 1 (fill textbox &#x27;Email&#x27;) deleted." in page and "Default of" not in page


def test_the_last_step_is_not_deleted(owner: Any, client: Client) -> None:
    one = scenario_services.scenario_import(owner=owner, data=shop(steps=shop()["steps"][:1]))
    response = client.post(url(one, "steps/0/delete"), follow=True)
    assert "a scenario keeps at least one step" in page_of(response)
    assert one.steps.count() == 1


@pytest.mark.parametrize(
    "index, data, args",
    [
        (0, {"step0-url": "http://shop.test/app/start.html"},
         {"url": "http://shop.test/app/start.html"}),
        (1, {"step1-value": "  grace@example.org ", "step1-submit": "true"},
         {"value": "  grace@example.org ", "submit": True}),
        (1, {"step1-value": "", "step1-submit": ""}, {"value": ""}),
        (2, {"step2-values": "Asia\nAmericas\n"}, {"values": ["Asia", "Americas"]}),
        (2, {"step2-values": "Asia"}, {"values": "Asia"}),
        (3, {"step3-checked": "false"}, {"checked": False}),
        (5, {"step5-key": "Control+A"}, {"key": "Control+A"}),
        (5, {"step5-key": " "}, {"key": " "}),  # the space bar
        # Values as written, spaces and lines (a textarea sends CRLF) and all.
        (1, {"step1-value": "Line 1\r\nLine 2 "}, {"value": "Line 1\nLine 2 "}),
        (2, {"step2-values": " Asia \r\nAmericas\r\n"}, {"values": [" Asia ", "Americas"]}),
        (6, {"step6-text": " Welcome\r\nback "}, {"text": " Welcome\nback "}),
        (6, {"step6-text": "", "step6-time_ms": "500"}, {"time_ms": 500}),
        (6, {"step6-text": "Welcome back", "step6-load_state": "load"},
         {"text": "Welcome back", "load_state": "load"}),
    ],
)  # fmt: skip
def test_a_step_gets_new_values(
    scenario: Scenario, client: Client, index: int, data: dict[str, str], args: dict[str, Any]
) -> None:
    before = scenario.updated_at
    response = client.post(url(scenario, f"steps/{index}/values"), data)
    assert response.status_code == 302 and response["Location"].endswith(f"#step-{index}")
    step = ScenarioStep.objects.get(scenario=scenario, index=index)
    assert step.args == args
    scenario.refresh_from_db()
    assert scenario.updated_at > before
    exported = Document.from_dict(json.loads(client.get(url(scenario, "export.json")).content))
    assert exported.steps[index].args == args


def test_a_changed_value_shows_in_the_pytest_export_and_unused_params_go(
    scenario: Scenario, client: Client
) -> None:
    client.post(url(scenario, "steps/1/values"), {"step1-value": "grace@example.org"})
    client.post(url(scenario, "steps/0/values"), {"step0-url": f"{BASE}/${{page}}.html"})
    scenario.refresh_from_db()
    assert scenario.params == {}  # email is no longer used; page has no default yet
    code = page_of(client.get(url(scenario, "export.py")))
    assert "grace@example.org" in code and "'EMAIL'" not in code
    page = page_of(client.get(url(scenario)))
    assert "Default of <code>page</code>" in page
    response = client.post(url(scenario, "params/page/default"), {"param-page-default": "login"})
    assert response.status_code == 302
    scenario.refresh_from_db()
    assert scenario.params == {"page": {"default": "login"}}
    exported = page_of(client.get(url(scenario, "export.py")))
    assert "os.environ.get('TABWRIGHT_PARAM_page', 'login')" in exported


@pytest.mark.parametrize(
    "index, data, message",
    [
        (0, {"step0-url": "not a url"}, "Enter an http:// or https:// address"),
        (0, {"step0-url": ""}, "navigate needs its url (absolute URL)."),
        (0, {}, "navigate needs its url"),
        (5, {"step5-key": ""}, "press needs its key"),
        (6, {"step6-time_ms": "soon"}, "Enter a whole number."),
        (2, {"step2-values": "\n \n"}, "This field is required."),
        (3, {"step3-checked": "perhaps"}, "Select a valid choice"),
    ],
)
def test_a_bad_value_is_refused_with_the_typed_values_kept(
    scenario: Scenario, client: Client, index: int, data: dict[str, str], message: str
) -> None:
    before = stored(scenario)
    response = client.post(url(scenario, f"steps/{index}/values"), data)
    page = page_of(response)
    assert response.status_code == 400 and message in page
    assert '<details class="sstep-edit" open>' in page
    if data.get("step0-url"):
        assert f'value="{data["step0-url"]}"' in page
    assert stored(scenario) == before


def test_the_step_service_checks_the_whole_scenario_before_writing(scenario: Scenario) -> None:
    before = stored(scenario)
    with pytest.raises(ScenarioInvalid, match="'values' must be"):
        scenario_services.scenario_step_update(scenario=scenario, index=2, args={"values": 5})
    with pytest.raises(ScenarioInvalid, match="press needs 'key'"):
        scenario_services.scenario_step_update(scenario=scenario, index=5, args={})
    with pytest.raises(ScenarioInvalid, match="no step 7"):
        scenario_services.scenario_step_update(scenario=scenario, index=7, args={})
    with pytest.raises(ScenarioInvalid, match="can't move to position 7"):
        scenario_services.scenario_step_move(scenario=scenario, index=6, to=7)
    assert stored(scenario) == before


def test_parameter_defaults_are_set_and_cleared(scenario: Scenario, client: Client) -> None:
    before = scenario.updated_at
    client.post(url(scenario, "params/email/default"), {"param-email-default": "grace@example.org"})
    scenario.refresh_from_db()
    assert scenario.params == {"email": {"default": "grace@example.org"}}
    assert scenario.updated_at > before
    assert "os.environ.get('TABWRIGHT_PARAM_email', 'grace@example.org')" in page_of(
        client.get(url(scenario, "export.py"))
    )
    client.post(url(scenario, "params/email/default"), {"param-email-default": ""})
    scenario.refresh_from_db()
    assert scenario.params == {"email": {}}
    # With no default, replay asks for the value.
    response = client.post(url(scenario, "replay"), {"base_url": ""})
    assert response.status_code == 400 and "This field is required." in page_of(response)


def test_only_the_owner_changes_a_scenario(scenario: Scenario, stranger: Any, staff: Any) -> None:
    edits = [
        ("edit", {"name": "Mine now"}),
        ("steps/1/values", {"step1-value": "x"}),
        ("steps/1/move", {"direction": "up"}),
        ("steps/1/delete", {}),
        ("steps/1/param", {"name": "x"}),
        ("params/email/default", {"param-email-default": "x"}),
    ]
    before = stored(scenario)
    for user in (stranger, staff):
        other = Client()
        other.force_login(user)
        for tail, data in edits:
            assert other.post(url(scenario, tail), data).status_code == 404, (user, tail)
    assert stored(scenario) == before
    staff_client = Client()
    staff_client.force_login(staff)
    page = page_of(staff_client.get(url(scenario)))
    assert "Sign in to the shop" in page and "only they can change it" in page
    assert "Save name and description" not in page and "Move step" not in page
    assert "Change values" not in page
    anonymous = Client().post(url(scenario, "edit"), {"name": "x"})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_every_edit_needs_the_csrf_token(scenario: Scenario, owner: Any) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    before = stored(scenario)
    for tail, data in [
        ("edit", {"name": "x"}),
        ("steps/1/values", {"step1-value": "x"}),
        ("steps/1/move", {"direction": "up"}),
        ("steps/1/delete", {}),
        ("params/email/default", {"param-email-default": "x"}),
    ]:
        assert strict.post(url(scenario, tail), data).status_code == 403, tail
    assert stored(scenario) == before
    # The page's own forms carry the token: a post with it goes through.
    page = page_of(strict.get(url(scenario)))
    token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    response = strict.post(url(scenario, "edit"), {"name": "x", "csrfmiddlewaretoken": token})
    assert response.status_code == 302


def test_edits_are_only_posted(scenario: Scenario, client: Client) -> None:
    for tail in ("edit", "steps/1/values", "steps/1/move", "steps/1/delete",
                 "params/email/default"):  # fmt: skip
        assert client.get(url(scenario, tail)).status_code == 405


def test_the_page_tells_each_step_identity_and_how_the_latest_replay_did(
    owner: Any, scenario: Scenario, client: Client
) -> None:
    older = scenario_services.replay_run_create(
        owner=owner, scenario=scenario, base_url="", params={}
    )
    scenario_services.scenario_step_replayed(
        scenario_id=scenario.pk, outcome={"index": 6, "status": "passed"}, run_id=older.pk
    )
    run = scenario_services.replay_run_create(
        owner=owner, scenario=scenario, base_url="", params={}
    )
    run_services.run_set_status(run_id=run.pk, status=Run.Status.PAUSED, reason="needs_person: x")
    outcomes = [
        {"index": 0, "status": "passed"},
        {"index": 1, "status": "passed", "strategy": "test_id", "score": 0.93, "heal": "confident",
         "healed": {**EMAIL, "id": "login-email"}, "changes": ["id: 'email' -> 'login-email'"]},
        {"index": 2, "status": "passed", "strategy": "similarity", "score": 0.71,
         "heal": "proposed", "healed": {**REGION, "name": "Area"}, "changes": ["name"]},
        {"index": 3, "status": "passed", "strategy": "role_name", "score": 1.0},
        {"index": 4, "status": "needs_person", "strategy": "", "score": None},
    ]  # fmt: skip
    for outcome in outcomes:
        scenario_services.scenario_step_replayed(
            scenario_id=scenario.pk, outcome=outcome, run_id=run.pk
        )
        scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome, run_id=run.pk)
    page = page_of(client.get(url(scenario)))
    report = page.split('data-testid="healing-report"', 1)[1].split("</dl>", 1)[0]

    def count(outcome: str) -> str:
        row = report.split(f'data-outcome="{outcome}"', 1)[1].split("</div>", 1)[0]
        return row.split('class="count">', 1)[1].split("<", 1)[0]

    assert [count(o) for o in ("passed", "healed", "proposed", "failed", "needs_person")] == [
        "2", "1", "1", "0", "1"]  # fmt: skip
    assert count("not_reached") == "2"  # press, and wait_for (reached only by the older run)
    assert '<a href="#step-2">step 2</a>' in report
    assert f'<a href="/runs/{run.pk}/">Run {run.pk}</a>' in page and "paused" in page
    step1 = page.split('id="step-1"', 1)[1].split("</li>", 1)[0]
    assert "textbox “Email”" in step1 and "data-testid=login-email" in step1
    assert "you@example.org" in step1 and "#email  ·  input[name=email]" in step1
    assert "input type=email" in step1 and "Full identity" in step1
    assert "found by <strong>test_id</strong> (score 0.93)" in step1
    assert f'<a href="/runs/{run.pk}/">run {run.pk}</a>' in step1
    assert '<span class="badge healed"' in step1
    step6 = page.split('id="step-6"', 1)[1].split("</li>", 1)[0]
    assert f"run {older.pk}</a>" in step6 and '<span class="badge passed"' in step6
    assert "Changes to approve" in page
    listing = page_of(client.get("/scenarios/"))
    assert f'<a href="/runs/{run.pk}/" class="badge paused">paused</a>' in listing


def test_a_proposed_change_is_told_in_the_pytest_export_until_it_is_approved(
    scenario: Scenario, client: Client
) -> None:
    sign_in = ScenarioStep.objects.get(scenario=scenario, identity__name="Sign in")
    renamed = {**SIGN_IN, "name": "Sign in now", "selectors": ["#btn-login"]}
    heal = IdentityHeal.objects.create(step=sign_in, status=IdentityHeal.Status.PROPOSED,
                                       changes=["name: 'Sign in' → 'Sign in now'"],
                                       after=renamed)  # fmt: skip
    code = page_of(client.get(url(scenario, "export.py")))
    step = code.split(f"# step {sign_in.index}: ", 1)[1].split("# step ", 1)[0]
    assert "waits for approval on the scenario's page" in step
    assert "Sign in now" not in step  # a proposal is not the scenario yet

    approved = client.post(f"/heals/{heal.pk}/decide", {"approve": "1"})
    assert approved.status_code == 302
    code = page_of(client.get(url(scenario, "export.py")))
    step = code.split(f"# step {sign_in.index}: ", 1)[1].split("# step ", 1)[0]
    assert "waits for approval" not in step
    assert ".or_(" in step and "Sign in now" in step and "'Sign in'" in step  # either name


def settle(customer: str) -> dict[str, Any]:
    """Find a customer, settle their row's invoice: the row is told by the name typed."""
    return {
        "format": "tabwright.scenario", "version": 1, "name": "Settle an invoice",
        "base_url": BASE,
        "steps": [
            {"action": "navigate", "args": {"url": f"{BASE}/invoices"}},
            {"action": "fill", "args": {"value": customer},
             "identity": {"role": "searchbox", "name": "Find", "tag": "input"}},
            {"action": "click", "args": {},
             "identity": {"role": "button", "name": "Pay", "tag": "button",
                          "row": f"{customer} 12.00 EUR Pay"}},
        ],
    }  # fmt: skip


RENAMED = {"role": "button", "name": "Settle", "tag": "button", "row": "Ada 12.00 EUR Settle"}


def test_a_change_proposed_before_its_value_was_made_a_parameter_is_approved_with_it(
    owner: Any, client: Client
) -> None:
    """A replay proposed the renamed button, found in Ada's row; the person then made the
    typed "Ada" a parameter, and approved: the step's row was "Ada" again, so a batch's
    every row paid Ada's invoice, each "passed"."""
    scenario = scenario_services.scenario_import(owner=owner, data=settle("Ada"))
    pay = ScenarioStep.objects.get(scenario=scenario, index=2)
    heal = IdentityHeal.objects.create(
        step=pay, status=IdentityHeal.Status.PROPOSED, changes=["name → 'Settle'"], after=RENAMED
    )
    assert client.post(url(scenario, "steps/1/param"), {"name": "customer"}).status_code == 302
    heal.refresh_from_db()  # shown as it would be written
    assert heal.after["row"] == "${customer} 12.00 EUR Settle"

    assert client.post(f"/heals/{heal.pk}/decide", {"approve": "1"}).status_code == 302
    pay.refresh_from_db()
    assert (pay.identity["name"], pay.identity["row"]) == ("Settle", "${customer} 12.00 EUR Settle")
    document = selectors.scenario_document(scenario=scenario)
    filled = document.resolve({"customer": "Bob"}, env={}).identity(document.steps[2].identity)
    assert filled is not None and filled.row == "Bob 12.00 EUR Settle"


def test_a_heal_a_replay_found_before_its_value_was_made_a_parameter_keeps_it(
    owner: Any, client: Client
) -> None:
    """The replay began with "Ada" typed as it is; the value was made a parameter while
    it ran; its confident heal, found in Ada's row, is written with the parameter."""
    scenario = scenario_services.scenario_import(owner=owner, data=settle("Ada"))
    assert client.post(url(scenario, "steps/1/param"), {"name": "customer"}).status_code == 302
    outcome = {"index": 2, "action": "click", "status": "passed", "strategy": "role_name",
               "score": 0.9, "changes": ["name: 'Pay' → 'Settle'"], "heal": "confident",
               "healed": RENAMED}  # fmt: skip
    heal = scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome)
    assert heal is not None and heal.status == IdentityHeal.Status.APPLIED
    pay = ScenarioStep.objects.get(scenario=scenario, index=2)
    assert (pay.identity["name"], pay.identity["row"]) == ("Settle", "${customer} 12.00 EUR Settle")


def test_a_step_changed_in_another_tab_is_not_written_over(
    scenario: Scenario, client: Client
) -> None:
    """Two tabs show the scenario; the first changes step 1, then the second (shown
    before) saves step 1's values: once it put its own back over the first's (a parameter
    made there was gone from the step, a check still using it).  Now it is refused,
    saying why, and the step stays as the first tab left it."""
    step = ScenarioStep.objects.get(scenario=scenario, index=1)
    shown = step.version  # what both tabs hold
    assert f'name="step_version" value="{shown}"' in page_of(client.get(url(scenario)))
    first = {"step_id": step.pk, "step_version": shown, "step1-value": "grace@example.org"}
    assert client.post(url(scenario, "steps/1/values"), first).status_code == 302
    stale = {"step_id": step.pk, "step_version": shown, "step1-value": "ada@example.org"}
    refused = client.post(url(scenario, "steps/1/values"), stale, follow=True)
    assert "Step 1 changed since this page was shown" in refused.content.decode()
    step.refresh_from_db()
    assert step.args["value"] == "grace@example.org"
    # The page shown now saves as ever.
    fresh = {"step_id": step.pk, "step_version": step.version, "step1-value": "ada@example.org"}
    assert client.post(url(scenario, "steps/1/values"), fresh).status_code == 302
    step.refresh_from_db()
    assert step.args["value"] == "ada@example.org"


def test_a_parameter_its_batch_at_work_or_schedule_gives_is_not_renamed_under_them(
    scenario: Scenario, client: Client, owner: Any
) -> None:
    """``${email}`` renamed ``${mail}`` while a batch's rows still to run give ``email``:
    each later row failed (no such parameter), and the schedule's next firing would
    have.  The edit is refused, naming them; stopped or turned off, it goes."""
    from dashboard.jobs import schedules
    from dashboard.jobs import services as job_services
    from dashboard.models import Batch, Schedule

    rows = [{"email": f"p{i}@example.org"} for i in range(3)]
    batch = job_services.batch_create(owner=owner, scenario=scenario, rows=rows,
                                      base_url="", concurrency=1)  # fmt: skip
    step = ScenarioStep.objects.get(scenario=scenario, index=1)
    rename = {"step_id": step.pk, "step1-value": "${mail}"}
    refused = client.post(url(scenario, "steps/1/values"), rename)
    assert refused.status_code == 400
    said = refused.content.decode()
    assert f"batch {batch.pk} is at work: its row 1 gives the parameter" in said, said
    assert "which it would no longer have" in said
    step.refresh_from_db()
    assert step.args["value"] == "${email}"
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.STOPPED)
    checked = schedules.check_schedule(scenario=scenario, cron="0 7 * * *", timezone="UTC",
                                       params={"email": "grace@example.org"})  # fmt: skip
    schedule = schedules.save(Schedule(owner=owner, scenario=scenario), **checked)
    said = client.post(url(scenario, "steps/1/values"), rename).content.decode()
    assert f"schedule {schedule.pk} (0 7 * * *) gives the parameter" in said, said
    schedules.save(schedule, enabled=False)
    assert client.post(url(scenario, "steps/1/values"), rename).status_code == 302
    step.refresh_from_db()
    assert step.args["value"] == "${mail}"


def test_a_replays_values_are_kept_as_typed_spaces_and_all() -> None:
    """A value with spaces around it (a padded code, a field's exact content) replays as
    given, as a batch row's does; one of spaces only is a value too."""
    document = Document.from_dict({
        "version": 1, "name": "Pad", "params": {"code": {}, "note": {"default": " X-1 "}},
        "steps": [{"action": "navigate", "args": {"url": "http://shop.test/${code}${note}"}}],
    })  # fmt: skip
    form = ReplayForm({"base_url": "", "param_code": "  padded  ", "param_note": " X-1 "},
                      document=document)  # fmt: skip
    assert form.is_valid(), form.errors
    assert form.params() == {"code": "  padded  ", "note": " X-1 "}
    spaces = ReplayForm({"param_code": "   ", "param_note": ""}, document=document)
    assert spaces.is_valid(), spaces.errors
    assert spaces.params()["code"] == "   "


def test_where_a_step_led_is_kept_through_the_api_and_changed_on_the_page(
    owner: Any, client: Client
) -> None:
    api = Client(headers={"Authorization": f"Bearer {api_token_create(owner=owner, name='s')[1]}"})
    data = shop()
    data["steps"][4]["led_to"] = f"{BASE}/orders/12/"  # the sign-in's save led there
    data["steps"][3].update(url=f"{BASE}/login.html", led_to=f"{BASE}/login.html")  # stayed
    made = api.post("/api/scenarios", data, content_type="application/json")
    assert made.status_code == 201, made.content
    scenario = Scenario.objects.get(pk=made.json()["id"])
    exported = api.get(f"/api/scenarios/{scenario.pk}").json()
    led = [s.get("led_to", "") for s in exported["steps"]]
    assert led == ["", "", "", f"{BASE}/login.html", f"{BASE}/orders/12/", "", ""]
    page = page_of(client.get(url(scenario)))
    assert f"led to <code>{BASE}/orders/12/</code>" in page
    assert page.count("led to <code>") == 1  # a step that stayed where it was says nothing
    assert f'name="step4-led_to" value="{BASE}/orders/12/"' in page
    assert 'name="step0-led_to"' not in page  # a navigate goes where its address says
    assert f"where_it_led(page, sent, url('{BASE}/orders/12/')" in page_of(
        client.get(url(scenario, "export.py"))
    )
    # Changed on the page (the new place is right): its args stay as they were.
    edit = url(scenario, "steps/4/values")
    assert client.post(edit, {"step4-led_to": f"{BASE}/orders/"}).status_code == 302
    step = ScenarioStep.objects.get(scenario=scenario, index=4)
    assert (step.led_to, step.args) == (f"{BASE}/orders/", {})
    exported = Document.from_dict(json.loads(client.get(url(scenario, "export.json")).content))
    assert exported.steps[4].led_to == f"{BASE}/orders/"
    # Refused as a navigate's address is; emptied, the step is judged so no more.
    before = stored(scenario)
    refused = client.post(edit, {"step4-led_to": "orders list"})
    assert refused.status_code == 400 and "Enter an http:// or https:// address" in page_of(refused)
    assert stored(scenario) == before
    assert client.post(edit, {"step4-led_to": ""}).status_code == 302
    assert ScenarioStep.objects.get(scenario=scenario, index=4).led_to == ""


def test_a_value_edited_to_another_parameter_takes_the_steps_that_used_it_along(
    owner: Any, client: Client
) -> None:
    """``${email}`` is typed, and the page's welcome is checked for it (and a button
    found in it, a change to which replay proposed): the person edits the typed value to
    ``${mail}``, and the check, the button and the proposal follow, told on the page
    (they kept ``${email}``, its default Ada's: a batch of mails checked Ada's welcome);
    ``${mail}`` takes the default ``${email}`` had.
    Edited to a plain address then, it is refused, naming them, and nothing changes."""
    data = shop()
    data["steps"][6]["args"] = {"text": "Signed in as ${email}"}
    data["steps"][4]["identity"] = {**SIGN_IN, "section": "Welcome ${email}"}
    scenario = scenario_services.scenario_import(owner=owner, data=data)
    step = ScenarioStep.objects.get(scenario=scenario, index=1)
    sign_in = ScenarioStep.objects.get(scenario=scenario, index=4)
    proposed = {**SIGN_IN, "name": "Sign in now", "section": "Welcome ${email}"}
    heal = IdentityHeal.objects.create(
        step=sign_in, status=IdentityHeal.Status.PROPOSED, changes=["name"], after=proposed
    )
    response = client.post(url(scenario, "steps/1/values"),
                           {"step_id": step.pk, "step1-value": "${mail}"}, follow=True)  # fmt: skip
    assert (
        "Step 1 changed, and so did the steps and checks that used its value: step 4: "
        in page_of(response)
    )
    checked = ScenarioStep.objects.get(scenario=scenario, index=6)
    assert checked.args == {"text": "Signed in as ${mail}"}
    sign_in.refresh_from_db()
    heal.refresh_from_db()  # a change proposed with the parameter, approved as it now is
    assert sign_in.identity["section"] == heal.after["section"] == "Welcome ${mail}"
    scenario.refresh_from_db()
    # email is used no more; mail is declared as it was: a replay given none types Ada's.
    assert scenario.params == {"mail": {"default": "ada@example.org"}}
    before = stored(scenario)
    refused = client.post(url(scenario, "steps/1/values"),
                          {"step_id": step.pk, "step1-value": "grace@example.org"})  # fmt: skip
    assert refused.status_code == 400
    assert "step 1 typed ${mail}, and step 4 (click), step 6 (wait_for) use it" in page_of(refused)
    assert stored(scenario) == before
