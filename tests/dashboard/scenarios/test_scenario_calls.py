"""Stored scenarios that call scenarios: a call step links its callee (stored once, its
steps filled into the caller's document), a callee that is not there or a cycle is
refused at save with a typed error (JSON errors in the API), a renamed callee is renamed
in its callers (by the service, the scenario page and the admin), one that others call is
not deleted; an imported file brings the scenarios it calls, or calls the importer's own
when they are the same, and is refused when one of theirs of that name is another; the
login scenario set through the API and the scenario file; the page adds a call step."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.test import Client

from automation.errors import CallCycle, CallMissing, ParamMissing, ScenarioInvalid
from automation.recording.calls import check_calls
from dashboard.accounts.services import api_token_create
from dashboard.models import IdentityHeal, Run, Scenario, ScenarioCall
from dashboard.scenarios import call_services, selectors
from dashboard.scenarios import services as scenario_services

pytestmark = pytest.mark.django_db

BASE = "http://shop.test"
USER_FIELD = {"role": "textbox", "name": "User", "tag": "input", "selectors": ["#user"]}


def sign_in(name: str = "Sign in") -> dict[str, Any]:
    return {"version": 1, "name": name, "base_url": BASE, "steps": [
        {"action": "navigate", "args": {"url": f"{BASE}/login"}},
        {"action": "fill", "args": {"value": "${user}"}, "identity": USER_FIELD}]}  # fmt: skip


def orders(*, callee: str = "Sign in", **top: Any) -> dict[str, Any]:
    return {"version": 1, "name": "Orders", "base_url": BASE,
            "params": {"who": {"default": "ada"}}, "steps": [
                {"action": "call", "args": {"scenario": callee, "params": {"user": "${who}"}}},
                {"action": "navigate", "args": {"url": f"{BASE}/orders"}}], **top}  # fmt: skip


def api(client: Client, owner: Any, method: str, path: str, body: Any = None) -> Any:
    _, token = api_token_create(owner=owner, name="t")
    return getattr(client, method)(f"/api{path}", body, content_type="application/json",
                                   headers={"Authorization": f"Bearer {token}"})  # fmt: skip


def test_a_call_links_its_callee_once_and_the_caller_s_document_carries_it(owner: Any) -> None:
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    caller = scenario_services.scenario_import(owner=owner, data=orders())
    other = scenario_services.scenario_import(owner=owner, data={**orders(), "name": "Other"})
    assert set(ScenarioCall.objects.values_list("caller_id", "callee_id")) == {
        (caller.pk, login.pk), (other.pk, login.pk)
    }  # fmt: skip
    document = selectors.scenario_document(scenario=caller)
    assert list(document.callees) == ["Sign in"]
    assert document.callees["Sign in"].steps[1].args == {"value": "${user}"}
    assert document.to_dict()["callees"]["Sign in"]["name"] == "Sign in"
    # Renamed, it is renamed where it is called.
    call_services.scenario_rename(scenario=login, name="Log in")
    for scenario in (caller, other):
        steps = selectors.scenario_document(scenario=scenario).steps
        assert steps[0].args["scenario"] == "Log in"
    # The call step deleted, the link goes (the callee stays).
    scenario_services.scenario_step_delete(scenario=other, index=0)
    assert not ScenarioCall.objects.filter(caller=other).exists()


def open_login() -> dict[str, Any]:
    return {"version": 1, "name": "Open login", "base_url": BASE, "steps": [
        {"action": "navigate", "args": {"url": f"{BASE}/login"}}]}  # fmt: skip


def calling_sign_in() -> dict[str, Any]:
    """ "Sign in" that calls "Open login" first."""
    login = sign_in()
    login["steps"][0] = {"action": "call", "args": {"scenario": "Open login", "params": {}}}
    return login


def test_an_exported_caller_brings_its_callees_to_whoever_imports_it(
    client: Client, owner: Any, stranger: Any
) -> None:
    for data in (open_login(), calling_sign_in(), orders()):
        api(client, owner, "post", "/scenarios", data)
    exported = api(client, owner, "get", f"/scenarios/{Scenario.objects.get(name='Orders').pk}")
    file = exported.json()
    assert sorted(file["callees"]) == ["Open login", "Sign in"]

    first = api(client, stranger, "post", "/scenarios", file)
    assert first.status_code == 201, first.json()
    theirs = Scenario.objects.filter(owner=stranger)
    assert sorted(theirs.values_list("name", flat=True)) == ["Open login", "Orders", "Sign in"]
    caller = theirs.get(name="Orders")
    links = {(c.caller.name, c.callee.name, c.callee.owner_id)
             for c in ScenarioCall.objects.filter(caller__owner=stranger)}  # fmt: skip
    assert links == {("Orders", "Sign in", stranger.pk), ("Sign in", "Open login", stranger.pk)}
    again = selectors.scenario_document(scenario=caller).to_dict()
    assert again == file  # the same scenario on either side, callees and all
    # Imported again (by them, or by its owner), it calls the scenarios they have, under
    # a name of its own.
    for person in (stranger, owner):
        assert api(client, person, "post", "/scenarios", file).json()["name"] == "Orders (2)"
        mine = Scenario.objects.filter(owner=person)
        assert mine.filter(name="Sign in").count() == mine.filter(name="Open login").count() == 1
        assert {c.callee.name for c in ScenarioCall.objects.filter(caller__in=mine)} == {
            "Sign in", "Open login"
        }  # fmt: skip


def test_a_callee_whose_element_was_captured_at_another_time_is_the_same_one(
    client: Client, owner: Any, stranger: Any
) -> None:
    """Two people import one file and each replays it: each replay captures the callee's
    element, at its own time.  The owner's export of it, imported by the other, calls the
    other's own copy; it was refused as another scenario (callee_clash) for that time
    alone."""
    for data in (sign_in(), orders()):
        scenario_services.scenario_import(owner=owner, data=data)
    file = selectors.scenario_document(scenario=Scenario.objects.get(name="Orders")).to_dict()
    captured = file["callees"]["Sign in"]["steps"][1]["identity"]["captured_at"]
    theirs = json.loads(json.dumps(file["callees"]["Sign in"]))
    theirs["steps"][1]["identity"]["captured_at"] = "2031-01-02T03:04:05+00:00"
    assert theirs["steps"][1]["identity"]["captured_at"] != captured
    mine = scenario_services.scenario_import(owner=stranger, data=theirs)
    imported = api(client, stranger, "post", "/scenarios", file)
    assert imported.status_code == 201, imported.json()
    caller = Scenario.objects.get(pk=imported.json()["id"])
    assert [c.callee_id for c in ScenarioCall.objects.filter(caller=caller)] == [mine.pk]
    assert Scenario.objects.filter(owner=stranger, name="Sign in").count() == 1


def test_a_callee_named_as_another_of_the_importer_s_is_refused_naming_both(
    client: Client, owner: Any, stranger: Any
) -> None:
    for data in (open_login(), calling_sign_in(), orders()):
        scenario_services.scenario_import(owner=owner, data=data)
    file = selectors.scenario_document(scenario=Scenario.objects.get(name="Orders")).to_dict()
    theirs = scenario_services.scenario_import(owner=stranger, data=open_login())
    scenario_services.scenario_step_update(
        scenario=theirs, index=0, args={"url": f"{BASE}/sign-in"}
    )  # their own "Open login", which opens another page
    before = Scenario.objects.count()

    refused = api(client, stranger, "post", "/scenarios", file)
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "callee_clash"
    assert error["message"] == (
        f"the file calls 'Open login', and your scenario 'Open login' ({theirs.pk}) is "
        "another: their steps (from step 0) differ"
    )
    assert "rename yours" in error["hint"]
    assert Scenario.objects.count() == before  # nothing of the file stored
    # On the import page, it says so by the file field.
    client.force_login(stranger)
    upload = SimpleUploadedFile("orders.json", json.dumps(file).encode(), "application/json")
    page = client.post("/scenarios/import", {"file": upload})
    assert page.status_code == 400 and "is another: their steps" in page.content.decode()
    assert "the scenarios it calls and its login scenario come with it" in page.content.decode()
    assert Scenario.objects.count() == before
    # Renamed, theirs stays theirs, and the file brings its own.
    call_services.scenario_rename(scenario=theirs, name="Open sign-in")
    assert api(client, stranger, "post", "/scenarios", file).status_code == 201
    assert Scenario.objects.filter(owner=stranger, name="Open login").count() == 1


def test_a_callee_found_by_role_and_name_alone_is_the_same_after_a_replay_learned_it(
    client: Client, owner: Any
) -> None:
    """A file's callee written before identities (role, name, selector): a replay adds the
    identity of the element it found by them, and importing the file again still calls
    it; once a heal found the element under another name, the file's is another."""
    old_form = sign_in()
    old_form["steps"][1] = {"action": "fill", "args": {"value": "${user}"}, "role": "textbox",
                            "name": "User", "selector": "#user"}  # fmt: skip
    file = {**orders(), "callees": {"Sign in": old_form}}
    assert api(client, owner, "post", "/scenarios", file).status_code == 201
    callee = Scenario.objects.get(owner=owner, name="Sign in")

    def replay_found(identity: dict[str, Any]) -> None:
        outcome = {"index": 1, "status": "passed", "strategy": "selector", "heal": "confident",
                   "healed": identity}  # fmt: skip
        assert scenario_services.heal_record(scenario_id=callee.pk, outcome=outcome)

    replay_found({**USER_FIELD, "id": "user", "box": [10, 20, 200, 24]})
    again = api(client, owner, "post", "/scenarios", file)
    assert again.status_code == 201, again.json()
    assert Scenario.objects.filter(owner=owner, name="Sign in").count() == 1

    replay_found({**USER_FIELD, "name": "User name", "selectors": ["#username"]})
    refused = api(client, owner, "post", "/scenarios", file)
    assert refused.status_code == 409
    assert refused.json()["error"]["message"].endswith("their steps (from step 1) differ")


def _admin_form(page: Any) -> dict[str, Any]:
    """The admin change form's fields (and its inlines') as they are, to post back."""
    forms = [page.context["adminform"].form]
    data: dict[str, Any] = {}
    for inline in page.context["inline_admin_formsets"]:
        forms += [inline.formset.management_form, *inline.formset.forms]
    for form in forms:
        for name in form.fields:
            value = form[name].value()
            data[form.add_prefix(name)] = "" if value is None else value
    return data


def test_each_way_of_renaming_a_called_scenario_keeps_its_callers_calling_it(
    client: Client, admin_client: Client, owner: Any
) -> None:
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    callers = [scenario_services.scenario_import(owner=owner, data={**orders(), "name": name})
               for name in ("Orders", "Totals")]  # fmt: skip

    def called_as() -> set[str]:
        names = set()
        for caller in callers:
            document = selectors.scenario_document(scenario=caller)
            check_calls(document)  # as replay does before its first step: the callee is there
            names.add(document.steps[0].args["scenario"])
        return names

    client.force_login(owner)  # the scenario page
    edited = client.post(f"/scenarios/{login.pk}/edit", {"name": "Log in", "description": "d"})
    assert edited.status_code == 302 and called_as() == {"Log in"}

    change = f"/admin/dashboard/scenario/{login.pk}/change/"  # the admin's change form
    form = _admin_form(admin_client.get(change))
    assert form["name"] == "Log in" and form["steps-TOTAL_FORMS"] == 2
    saved = admin_client.post(change, {**form, "name": "  Sign on ", "description": "e"})
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    login.refresh_from_db()
    assert (login.name, login.description) == ("Sign on", "e") and called_as() == {"Sign on"}
    refused = admin_client.post(change, {**form, "name": "Sign\non"})
    assert refused.status_code == 200 and "or a line break" in refused.content.decode()
    assert Scenario.objects.get(pk=login.pk).name == "Sign on"

    # The callers' own edits still find it by the name their steps say now.
    scenario_services.scenario_step_update(
        scenario=callers[0], index=0, args={"scenario": "Sign on", "params": {"user": "x"}}
    )
    assert ScenarioCall.objects.filter(caller=callers[0], callee=login).exists()


def test_the_pytest_export_tells_a_called_scenario_s_change_that_waits_for_approval(
    client: Client, owner: Any
) -> None:
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    caller = scenario_services.scenario_import(owner=owner, data=orders())
    user = login.steps.get(index=1)
    IdentityHeal.objects.create(step=user, status=IdentityHeal.Status.PROPOSED,
                                changes=["name: 'User' → 'Login'"],
                                after={**USER_FIELD, "name": "Login"})  # fmt: skip
    client.force_login(owner)
    code = client.get(f"/scenarios/{caller.pk}/export.py").content.decode()
    called, test = code.split("def call_sign_in(", 1)[1].split("def test_orders(", 1)
    note = "which waits for approval on the scenario's page"
    assert note in called.split("# step 1: ", 1)[1] and note not in called.split("# step 1")[0]
    assert note not in test and "'Login'" not in code  # a proposal is not the scenario yet
    # The command writes the same file.
    out = io.StringIO()
    call_command("scenario_export", str(caller.pk), "--format", "pytest", stdout=out)
    assert out.getvalue() == code


def test_a_person_deleted_takes_their_scenarios_that_call_each_other(owner: Any) -> None:
    scenario_services.scenario_import(owner=owner, data=sign_in())
    scenario_services.scenario_import(owner=owner, data=orders())
    owner.delete()  # the calls between them keep none of them
    assert not Scenario.objects.exists() and not ScenarioCall.objects.exists()


def test_the_admin_does_not_delete_a_called_scenario_either(owner: Any, admin_client: Any) -> None:
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    scenario_services.scenario_import(owner=owner, data=orders())
    url = f"/admin/dashboard/scenario/{login.pk}/delete/"
    page = admin_client.post(url, {"post": "yes"}).content.decode()
    assert "would require deleting the following protected related objects" in page
    assert Scenario.objects.filter(pk=login.pk).exists()


def test_saving_a_replay_run_keeps_the_call_step_not_the_steps_it_ran() -> None:
    from automation.recording.fromrun import plan

    rows = [
        {"index": 0, "action": "call", "args": {"scenario": "Sign in", "params": {}}},
        {"index": 1, "action": "navigate", "args": {"url": f"{BASE}/login"}, "by": "call"},
    ]
    planned = plan(rows)
    assert [p.kept for p in planned] == [True, False]
    assert planned[1].reason == "a step of a scenario it called"


def test_a_missing_callee_and_a_cycle_are_refused_at_save(owner: Any) -> None:
    with pytest.raises(CallMissing, match="no scenario of yours is named 'Sign in'"):
        scenario_services.scenario_import(owner=owner, data=orders())
    assert not Scenario.objects.exists()  # nothing of it stored
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    caller = scenario_services.scenario_import(owner=owner, data=orders())
    with pytest.raises(CallCycle, match="'Orders' calls 'Sign in'"):
        call_services.scenario_call_add(scenario=login, callee_id=caller.pk,
                                            params={"who": "x"})  # fmt: skip
    with pytest.raises(CallCycle, match="can't call itself"):
        call_services.scenario_call_add(scenario=caller, callee_id=caller.pk, params={})
    assert login.steps.count() == 2 and caller.steps.count() == 2


def test_an_edit_of_a_called_scenario_that_its_callers_can_t_follow_is_refused(
    owner: Any,
) -> None:
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    scenario_services.scenario_import(owner=owner, data=orders())
    with pytest.raises(ScenarioInvalid, match=r"'Orders' calls it: .*no parameter user"):
        scenario_services.scenario_step_delete(scenario=login, index=1)  # the ${user} step
    assert login.steps.count() == 2
    scenario_services.scenario_param_set_default(scenario=login, name="user", default="ada")
    scenario_services.scenario_step_update(scenario=Scenario.objects.get(name="Orders"),
                                           index=0, args={"scenario": "Sign in"})  # fmt: skip
    with pytest.raises(ParamMissing, match=r"'Orders' calls it: .* no value for user"):
        scenario_services.scenario_param_set_default(scenario=login, name="user", default=None)
    assert Scenario.objects.get(pk=login.pk).params == {"user": {"default": "ada"}}


def test_the_api_says_why_in_json_and_refuses_to_delete_a_called_scenario(
    client: Client, owner: Any
) -> None:
    missing = api(client, owner, "post", "/scenarios", orders())
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == "call_missing"
    login = api(client, owner, "post", "/scenarios", sign_in()).json()["id"]
    unknown = api(client, owner, "post", "/scenarios", orders() | {"steps": [
        {"action": "call", "args": {"scenario": "Sign in", "params": {"user": "x", "pw": "y"}}}
    ]})  # fmt: skip
    assert unknown.status_code == 400
    assert "'Sign in' has no parameter pw" in unknown.json()["error"]["message"]
    caller = api(client, owner, "post", "/scenarios", orders()).json()["id"]
    exported = api(client, owner, "get", f"/scenarios/{caller}").json()
    assert (
        exported["steps"][0]["args"]["scenario"] == "Sign in" and "Sign in" in exported["callees"]
    )

    refused = api(client, owner, "delete", f"/scenarios/{login}")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "scenario_called" and f"'Orders' ({caller})" in error["message"]
    assert api(client, owner, "delete", f"/scenarios/{caller}").status_code == 204
    assert api(client, owner, "delete", f"/scenarios/{login}").status_code == 204


def test_the_login_scenario_is_set_through_the_api_and_the_file(client: Client, owner: Any) -> None:
    api(client, owner, "post", "/scenarios", sign_in())
    plain = api(client, owner, "post", "/scenarios", sign_in("Plain")).json()["id"]
    answer = api(client, owner, "put", f"/scenarios/{plain}/login", {"login_scenario": "Sign in"})
    assert answer.status_code == 200 and answer.json()["login_scenario"] == "Sign in"
    stored = Scenario.objects.get(pk=plain)
    assert stored.login_scenario is not None and stored.login_scenario.name == "Sign in"
    unknown = api(client, owner, "put", f"/scenarios/{plain}/login", {"login_scenario": "Nope"})
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "call_missing"
    cleared = api(client, owner, "put", f"/scenarios/{plain}/login", {"login_scenario": ""})
    assert "login_scenario" not in cleared.json()
    # A file names it, and its export says it again.
    data = api(client, owner, "post", "/scenarios", orders(login_scenario="Sign in")).json()
    exported = api(client, owner, "get", f"/scenarios/{data['id']}").json()
    assert exported["login_scenario"] == "Sign in"


def test_a_login_scenario_that_would_call_its_scenario_is_refused_either_way(
    client: Client, owner: Any
) -> None:
    """A scenario signs in again with one that calls it: signing in would replay it, and
    it would sign in again.  It was kept, and the replay then blamed a scenario "not
    there"; it is refused as a cycle of calls, whichever of the two is set first."""
    api(client, owner, "post", "/scenarios", sign_in())
    api(client, owner, "post", "/scenarios", orders())  # "Orders" calls "Sign in"
    login = Scenario.objects.get(name="Sign in")
    answer = api(client, owner, "put", f"/scenarios/{login.pk}/login", {"login_scenario": "Orders"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "call_cycle"
    assert answer.json()["error"]["message"] == (
        "the login scenario 'Orders' calls 'Sign in' (through 'Sign in'): a cycle of calls"
    )
    assert Scenario.objects.get(pk=login.pk).login_scenario is None
    # Set first, then the call that closes the circle: refused on the page.
    plain = scenario_services.scenario_import(owner=owner, data=sign_in("Plain"))
    answer = api(
        client, owner, "put", f"/scenarios/{plain.pk}/login", {"login_scenario": "Sign in"}
    )
    assert answer.status_code == 200
    client.force_login(owner)
    steps = list(login.steps.values_list("action", flat=True))
    call = {"callee": plain.pk, "params": "user = ada", "position": "0"}
    refused = client.post(f"/scenarios/{login.pk}/calls", call)
    assert refused.status_code == 400
    assert ("&#x27;Plain&#x27; signs in again with &#x27;Sign in&#x27;, which would call it"
            in refused.content.decode())  # fmt: skip
    assert list(login.steps.values_list("action", flat=True)) == steps  # no call added


def test_the_page_adds_a_call_and_says_who_calls_a_scenario(client: Client, owner: Any) -> None:
    client.force_login(owner)
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    plain = scenario_services.scenario_import(owner=owner, data=sign_in("Plain"))
    form = {"callee": login.pk, "params": "user = ${user}", "position": "0"}
    added = client.post(f"/scenarios/{plain.pk}/calls", form)
    assert added.status_code == 302 and added.url.endswith("#step-0")
    steps = selectors.scenario_document(scenario=plain).steps
    assert steps[0].args == {"scenario": "Sign in", "params": {"user": "${user}"}}
    step = plain.steps.get(index=0)
    changed = client.post(f"/scenarios/{plain.pk}/steps/0/values",
                          {"step_id": step.pk, "step0-params": "user=grace"})  # fmt: skip
    assert changed.status_code == 302
    assert selectors.scenario_document(scenario=plain).steps[0].args["params"] == {"user": "grace"}
    wrong = client.post(f"/scenarios/{plain.pk}/steps/0/values",
                        {"step_id": step.pk, "step0-params": "pw=x"})  # fmt: skip
    assert wrong.status_code == 400 and "no parameter pw" in wrong.content.decode()
    page = client.get(f"/scenarios/{login.pk}/").content.decode()
    assert 'data-testid="callers"' in page and ">Plain</a>" in page
    refused = client.post(f"/scenarios/{login.pk}/delete", follow=True).content.decode()
    assert "Not deleted: &#x27;Sign in&#x27; is called by &#x27;Plain&#x27;" in refused
    # Refused: the page again, the form open with what was typed, saying why.
    bad = client.post(f"/scenarios/{plain.pk}/calls", {"callee": login.pk, "params": "user"})
    assert bad.status_code == 400
    said = bad.content.decode()
    assert "write name=value" in said and 'data-testid="add-call" open' in said
    assert "\nuser</textarea>" in said  # what was typed, kept
    # While a replay of it is live, a call asked at step 0 is not added (once it was said
    # not added, and there it was, at the end).
    live = Run.objects.create(owner=owner, scenario=plain, kind=Run.Kind.REPLAY, task="r",
                              status=Run.Status.RUNNING)  # fmt: skip
    before = selectors.scenario_document(scenario=plain).steps
    refused = client.post(f"/scenarios/{plain.pk}/calls", form).content.decode()
    assert f"The call was not added: run {live.pk} is replaying this scenario" in refused
    assert selectors.scenario_document(scenario=plain).steps == before


# -- the login scenario travels and is kept as a called one is --------------------------


def signed_orders() -> dict[str, Any]:
    """ "Orders" that no step signs in for: its login scenario does when the page asks."""
    return {"version": 1, "name": "Orders", "base_url": BASE, "login_scenario": "Sign in",
            "steps": [{"action": "navigate", "args": {"url": f"{BASE}/orders"}}]}  # fmt: skip


def test_an_export_brings_its_login_scenario_to_whoever_imports_it(
    client: Client, owner: Any, stranger: Any, django_user_model: Any, tmp_path: Any
) -> None:
    for data in (open_login(), calling_sign_in(), signed_orders()):
        scenario_services.scenario_import(owner=owner, data=data)
    mine = Scenario.objects.get(owner=owner, name="Orders")
    file = api(client, owner, "get", f"/scenarios/{mine.pk}").json()
    assert file["login_scenario"] == "Sign in" and file["steps"] == signed_orders()["steps"]
    assert list(file["callees"]) == ["Sign in", "Open login"]  # what it calls, then the login's

    def login_of(person: Any) -> tuple[int, str, int, list[str]]:
        login = Scenario.objects.filter(owner=person, name="Orders").latest("pk").login_scenario
        assert login is not None
        calls = [c.callee.name for c in ScenarioCall.objects.filter(caller=login)]
        return login.pk, login.name, login.owner_id, calls

    # Through the API, then the page: stored as theirs, then their own called again.
    answer = api(client, stranger, "post", "/scenarios", file)
    assert answer.status_code == 201, answer.json()
    first = login_of(stranger)
    assert first[1:] == ("Sign in", stranger.pk, ["Open login"])
    theirs = Scenario.objects.get(owner=stranger, name="Orders")
    assert selectors.scenario_document(scenario=theirs).to_dict() == file
    client.force_login(stranger)
    upload = SimpleUploadedFile("orders.json", json.dumps(file).encode(), "application/json")
    assert client.post("/scenarios/import", {"file": upload}).status_code == 302
    assert login_of(stranger) == first
    assert Scenario.objects.filter(owner=stranger).count() == 4  # two Orders, one of each
    # The pytest file writes a function for its login scenario (and those it calls), run
    # only to sign in again.
    code = client.get(f"/scenarios/{theirs.pk}/export.py").content.decode()
    assert "def call_sign_in(" in code and "def call_open_login(" in code
    # It signs in with the test's user (its ${user}, no default: checked first).
    given = "call_sign_in(page, {'user': os.environ['TABWRIGHT_PARAM_user']})"
    assert "def test_orders(" in code and code.count(given) == 1
    assert "    check_params(['user'])\n" in code
    compile(code, "test_orders.py", "exec")

    # Through the command, by a third person.
    tess = django_user_model.objects.create_user("tess")
    path = tmp_path / "orders.json"
    path.write_text(json.dumps(file))
    call_command("scenario_import", str(path), "--owner", "tess", stdout=io.StringIO())
    assert login_of(tess)[1:] == ("Sign in", tess.pk, ["Open login"])

    # One whose "Sign in" is another is refused, naming it; nothing of the file stored.
    una = django_user_model.objects.create_user("una")
    own = scenario_services.scenario_import(owner=una, data=sign_in())
    refused = api(client, una, "post", "/scenarios", file)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "callee_clash"
    assert f"your scenario 'Sign in' ({own.pk}) is another" in refused.json()["error"]["message"]
    assert list(Scenario.objects.filter(owner=una)) == [own]


def test_a_login_scenario_is_kept_while_a_scenario_signs_in_with_it(
    client: Client, admin_client: Client, owner: Any
) -> None:
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    orders = scenario_services.scenario_import(owner=owner, data=signed_orders())
    call_services.scenario_rename(scenario=login, name="Log in")
    document = selectors.scenario_document(scenario=orders)
    assert document.login_scenario == "Log in" and list(document.callees) == ["Log in"]

    said = rf"'Log in' is the login scenario of 'Orders' \({orders.pk}\)"
    with pytest.raises(call_services.ScenarioCalled, match=said):
        scenario_services.scenario_delete(scenario=login)
    refused = api(client, owner, "delete", f"/scenarios/{login.pk}")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "scenario_called"
    client.force_login(owner)
    page = client.get(f"/scenarios/{login.pk}/").content.decode()
    assert 'data-testid="signs-in-for"' in page and ">Orders</a>" in page
    said = client.post(f"/scenarios/{login.pk}/delete", follow=True).content.decode()
    assert "Not deleted: &#x27;Log in&#x27; is the login scenario of &#x27;Orders&#x27;" in said
    gone = admin_client.post(f"/admin/dashboard/scenario/{login.pk}/delete/", {"post": "yes"})
    assert "would require deleting the following protected related objects" in gone.content.decode()
    assert Scenario.objects.get(pk=orders.pk).login_scenario_id == login.pk

    # A login scenario of the name of a scenario it calls, but another, is refused.
    called = scenario_services.scenario_import(owner=owner, data=orders_calling("Log in"))
    twin = scenario_services.scenario_import(owner=owner, data=sign_in("Twin"))
    with pytest.raises(ScenarioInvalid, match="another scenario named 'Log in'"):
        call_services.scenario_rename(scenario=twin, name="Log in")
    with pytest.raises(IntegrityError), transaction.atomic():  # nor written past the rename
        Scenario.objects.filter(pk=twin.pk).update(name="Log in")
    call_services.login_set(scenario=called, login_id=login.pk)  # the one it calls: fine
    owner.delete()  # with their owner, they all go
    assert not Scenario.objects.exists()


def orders_calling(callee: str) -> dict[str, Any]:
    return {**orders(callee=callee), "name": "Totals"}


def test_the_admin_changes_a_call_step_and_a_login_scenario_through_the_services(
    admin_client: Client, owner: Any, stranger: Any
) -> None:
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    other = scenario_services.scenario_import(owner=owner, data=sign_in("Other sign in"))
    caller = scenario_services.scenario_import(owner=owner, data=orders())
    step = caller.steps.get(index=0)
    url = f"/admin/dashboard/scenariostep/{step.pk}/change/"
    form = _admin_form(admin_client.get(url))
    assert list(form) == ["args"]  # the rest is shown, not edited

    def args(callee: str) -> str:
        return json.dumps({"scenario": callee, "params": {"user": "${who}"}})

    refused = admin_client.post(url, {"args": args("Nope")})
    assert refused.status_code == 200
    assert "no scenario of yours is named &#x27;Nope&#x27;" in refused.content.decode()
    assert ScenarioCall.objects.get(caller=caller).callee_id == login.pk
    assert selectors.scenario_document(scenario=caller).steps[0].args["scenario"] == "Sign in"
    moved = admin_client.post(url, {"args": args("Other sign in")})
    assert moved.status_code == 302
    assert ScenarioCall.objects.get(caller=caller).callee_id == other.pk
    assert admin_client.post(f"/admin/dashboard/scenariostep/{step.pk}/delete/").status_code == 403

    # Its scenario's form: the owner stays (the page says why), the login is among theirs.
    change = f"/admin/dashboard/scenario/{other.pk}/change/"
    page = admin_client.get(change)
    assert "export it and have them import it" in page.content.decode()
    form = _admin_form(page)
    assert "owner" not in form and "params" not in form
    theirs = scenario_services.scenario_import(owner=stranger, data=sign_in())
    wrong = admin_client.post(change, {**form, "login_scenario": theirs.pk})
    assert wrong.status_code == 200 and "Select a valid choice" in wrong.content.decode()
    saved = admin_client.post(change, {**form, "owner": stranger.pk, "login_scenario": login.pk,
                                       "steps-0-args": '{"url": "x"}'})  # fmt: skip
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    other.refresh_from_db()
    assert (other.owner_id, other.login_scenario_id) == (owner.pk, login.pk)
    assert other.steps.get(index=0).args == {"url": f"{BASE}/login"}  # steps change one by one
    assert admin_client.get("/admin/dashboard/scenario/add/").status_code == 403


def open_page() -> dict[str, Any]:
    return {"version": 1, "name": "Open page", "base_url": BASE, "steps": [
        {"action": "navigate", "args": {"url": BASE + "/${where}"}}]}  # fmt: skip


def test_a_call_added_to_a_called_scenario_that_its_callers_can_t_follow_is_refused(
    owner: Any,
) -> None:
    """'Sign in' (called by 'Orders', which gives it ``user`` only) is given a call of
    'Open page' with ``where=${page}``: 'Sign in' would then need ``page``, which 'Orders'
    never gives, and each replay of 'Orders' would fail.  The call is refused, naming
    'Orders'; 'Sign in' keeps its steps and parameters.  A call that needs nothing new
    is added as ever."""
    login = scenario_services.scenario_import(owner=owner, data=sign_in())
    opener = scenario_services.scenario_import(owner=owner, data=open_page())
    scenario_services.scenario_import(owner=owner, data=orders())
    with pytest.raises(ScenarioInvalid, match=r"'Orders' calls it: .*no value for page"):
        call_services.scenario_call_add(scenario=login, callee_id=opener.pk,
                                        params={"where": "${page}"})  # fmt: skip
    assert login.steps.count() == 2
    assert not ScenarioCall.objects.filter(caller=login).exists()
    assert call_services.scenario_call_add(scenario=login, callee_id=opener.pk,
                                           params={"where": "login"}) == 2  # fmt: skip


def test_a_call_added_to_a_scheduled_scenario_needing_a_value_its_schedule_lacks_is_refused(
    owner: Any,
) -> None:
    """A schedule turned on replays 'Sign in' with ``user`` only: a call step added with
    ``${page}``, a check added with ``${other}``, and ``user``'s default taken away each
    leave a parameter its firings give no value for: each is refused, naming the
    schedule, and nothing of it is kept."""
    from dashboard.jobs import schedules
    from dashboard.models import Schedule

    login = scenario_services.scenario_import(
        owner=owner, data={**sign_in(), "params": {"user": {"default": "ada"}}}
    )
    opener = scenario_services.scenario_import(owner=owner, data=open_page())
    checked = schedules.check_schedule(scenario=login, cron="0 7 * * *", timezone="UTC",
                                       params={})  # fmt: skip
    schedule = schedules.save(Schedule(owner=owner, scenario=login), **checked)
    named = rf"schedule {schedule.pk} \(0 7 \* \* \*\) gives no value for"
    with pytest.raises(ScenarioInvalid, match=rf"{named} 'page'"):
        call_services.scenario_call_add(scenario=login, callee_id=opener.pk,
                                        params={"where": "${page}"})  # fmt: skip
    with pytest.raises(ScenarioInvalid, match=rf"{named} 'other'"):
        scenario_services.scenario_check_add(
            scenario=login, args={"kind": "text_visible", "text": "Hello ${other}"}
        )
    with pytest.raises(ScenarioInvalid, match=rf"{named} 'user'"):
        scenario_services.scenario_param_set_default(scenario=login, name="user", default=None)
    stored = Scenario.objects.get(pk=login.pk)
    assert stored.steps.count() == 2 and stored.params == {"user": {"default": "ada"}}
    schedules.save(schedule, enabled=False)  # turned off, each edit goes
    scenario_services.scenario_param_set_default(scenario=login, name="user", default=None)
    call_services.scenario_call_add(scenario=login, callee_id=opener.pk,
                                    params={"where": "${page}"})  # fmt: skip
    assert selectors.scenario_document(scenario=login).placeholders()[0] == {"user", "page"}


def test_a_scenario_saved_under_a_name_of_the_person_s_is_named_apart(
    client: Client, owner: Any
) -> None:
    """A file imported twice was stored as two scenarios of one name: calls find their
    scenario by name, and a call to it was then refused ("several scenarios of yours"),
    as was renaming either.  The second is "Sign in (2)", said on its page; a call to
    "Sign in" finds the first; the API names its copies apart too; a long name keeps to
    its column with its number."""
    file = SimpleUploadedFile("sign-in.json", json.dumps(sign_in()).encode())
    client.force_login(owner)
    first = client.post("/scenarios/import", {"file": file}, follow=True)
    assert first.status_code == 200 and "Saved as" not in first.content.decode()
    file.seek(0)
    again = client.post("/scenarios/import", {"file": file}, follow=True).content.decode()
    assert "Saved as “Sign in (2)”: you have a scenario named “Sign in” already." in again
    names = sorted(Scenario.objects.filter(owner=owner).values_list("name", flat=True))
    assert names == ["Sign in", "Sign in (2)"]
    caller = scenario_services.scenario_import(owner=owner, data=orders())
    link = ScenarioCall.objects.get(caller=caller)
    assert link.callee.name == "Sign in"
    answer = api(client, owner, "post", "/scenarios", sign_in())
    assert answer.status_code == 201 and answer.json()["name"] == "Sign in (3)", answer.json()
    long = "N" * 200
    for _ in range(2):
        scenario_services.scenario_import(owner=owner, data=sign_in(long))
    kept = Scenario.objects.filter(owner=owner, name__startswith="NNN")
    assert {s.name for s in kept} == {long, long[:196] + " (2)"}
