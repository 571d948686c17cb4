"""Scenarios in the dashboard: a run saved as a scenario, replayed on a changed release with
its identities healed (and a history), a replay that pauses for a person, import and export,
approving or rejecting a proposed change, and who may see what."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient, Client

from automation.budget import Budget
from automation.errors import ActionInvalid
from automation.events import RunPaused
from automation.recording.scenario import Scenario as Document
from dashboard.models import IdentityHeal, Run, Scenario, ScenarioStep, SecretGrant
from dashboard.runs import services as run_services
from dashboard.scenarios import services as scenario_services
from tests.dashboard.conftest import Runs, ended
from tests.dashboard.runs.test_liveview import centre_of, run_tab

# Rollback transactions, but for the async tests: their database work runs in another
# thread (sync_to_async), which must see the rows.
pytestmark = pytest.mark.django_db

PASSWORD = "correct horse 42"
SIGN_IN = """type ada@example.org into Email
type "correct horse 42" into Password
click Sign in
wait for Signed in as"""

BUTTON = {"role": "button", "name": "Delete account", "tag": "button",
          "selectors": ["#delete-account"]}  # fmt: skip


def scenario_json(base: str, **extra: Any) -> dict[str, Any]:
    """A scenario whose second step's button does not exist on the page."""
    return {
        "format": "tabwright.scenario", "version": 1, "name": "Close the account",
        "base_url": base,
        "steps": [
            {"action": "navigate", "args": {"url": f"{base}/replay/v1/login.html"}},
            {"action": "click", "args": {}, "identity": BUTTON},
            {"action": "fill", "args": {"value": "${email}"},
             "identity": {"role": "textbox", "name": "Email", "tag": "input", "type": "email"}},
        ],
        "params": {"email": {"default": "ada@example.org"}},
        **extra,
    }  # fmt: skip


async def finished(runs: Runs, run_id: int) -> Run:
    await runs.manager.wait(run_id)
    return await sync_to_async(Run.objects.get)(pk=run_id)


@pytest.mark.django_db(transaction=True)
async def test_a_run_saved_as_a_scenario_replays_on_a_new_release_and_heals(
    runs: Runs, worker: Any, owner: Any, fixture_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_PASSWORD", PASSWORD)
    # Secrets belong to someone: an admin granted this one to the owner.
    await sync_to_async(lambda: SecretGrant.objects.create(name="PASSWORD").users.add(owner))()
    run = await runs.start(
        await runs.create(
            owner=owner, task=SIGN_IN, start_url=f"{fixture_url}/replay/v1/login.html"
        )
    )
    run = await finished(runs, run.pk)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    client = AsyncClient()
    await client.aforce_login(owner)
    response = await client.post(f"/runs/{run.pk}/save", {"name": "Sign in"})
    scenario = await sync_to_async(Scenario.objects.get)(owner=owner)
    assert response.status_code == 302 and response["Location"] == f"/scenarios/{scenario.pk}/"
    steps = await sync_to_async(list)(scenario.steps.order_by("index"))
    assert [s.action for s in steps][:1] == ["navigate"] and scenario.name == "Sign in"
    password = next(s for s in steps if s.identity and s.identity["type"] == "password")
    assert PASSWORD not in json.dumps(password.args) and "${SECRET:PASSWORD}" in json.dumps(
        password.args
    )
    # Recorded on v1; replayed on v2, where ids, wrappers and the button's words changed.
    assert scenario.base_url == f"{fixture_url}/replay/v1"
    page = await client.get(f"/scenarios/{scenario.pk}/")
    assert page.status_code == 200 and "TABWRIGHT_SECRET_PASSWORD" in page.content.decode()
    response = await client.post(
        f"/scenarios/{scenario.pk}/replay", {"base_url": f"{fixture_url}/replay/v2"}
    )
    replay = await sync_to_async(Run.objects.get)(kind=Run.Kind.REPLAY)
    assert response["Location"] == f"/runs/{replay.pk}/"
    await runs.claimed(replay.pk)  # by the worker
    replay = await finished(runs, replay.pk)
    assert replay.status == Run.Status.SUCCEEDED, replay.status_reason
    assert replay.scenario_id == scenario.pk
    heals = await sync_to_async(list)(
        IdentityHeal.objects.filter(run=replay).select_related("step")
    )
    assert heals, "v2 renamed ids: some identity must have been healed"
    applied = [h for h in heals if h.status == IdentityHeal.Status.APPLIED]
    for heal in applied:
        step = await sync_to_async(ScenarioStep.objects.get)(pk=heal.step_id)
        assert {**step.identity, "variants": []} == heal.after != heal.before
        # The identity it had before is kept as a variant (an older release).
        assert step.identity["variants"][0]["id"] == heal.before["id"]
    email = next(h for h in applied if h.after["name"] == "Email")
    assert email.after["id"] == "login-email" and email.before["id"] == "email"
    stored = await sync_to_async(list)(replay.steps.order_by("index").values_list("ok", flat=True))
    assert stored and all(stored)
    events = await sync_to_async(list)(replay.events.values_list("type", flat=True))
    assert "replay.step" in events and PASSWORD not in json.dumps(
        await sync_to_async(list)(replay.events.values_list("data", flat=True))
    )


@pytest.mark.django_db(transaction=True)
async def test_a_replay_that_needs_a_person_pauses_until_told_to_skip(
    runs: Runs, owner: Any, fixture_url: str
) -> None:
    scenario = await sync_to_async(scenario_services.scenario_import)(
        owner=owner, data=scenario_json(fixture_url)
    )
    run = await sync_to_async(scenario_services.replay_run_create)(
        owner=owner, scenario=scenario, base_url="", params={"email": "grace@example.org"}
    )
    await runs.start(run)
    for _ in range(100):
        run = await sync_to_async(Run.objects.get)(pk=run.pk)
        if run.status == Run.Status.PAUSED:
            break
        await asyncio.sleep(0.1)
    assert run.status == Run.Status.PAUSED and run.status_reason.startswith("needs_person")
    assert "Delete account" in run.status_reason
    # "Check this" is no tool of a replay's pause: a check made there would be dropped
    # with the step's rescue (it answered ok, and was never kept).  The page has no such
    # button, and the command is refused saying why.
    heading = await centre_of(run_tab(run.pk), "h1")  # what a check would have been of
    with pytest.raises(ActionInvalid, match="a replay's checks are its scenario's"):
        await runs.manager.person_input(run.pk, {"kind": "check", **heading},
                                        budget=Budget(10_000))  # fmt: skip
    page = Client()
    await sync_to_async(page.force_login)(owner)
    shown = (await sync_to_async(page.get)(f"/runs/{run.pk}/")).content.decode()
    assert 'id="live-hint"' in shown and 'id="check-this"' not in shown
    # A reply it can't act on is refused, saying what it takes (it was taken as "retry").
    with pytest.raises(ValueError, match='a paused replay takes "retry"'):
        await runs.manager.command(run.pk, "reply", "hello")
    await runs.manager.command(run.pk, "reply", "skip")
    run = await finished(runs, run.pk)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    types = await sync_to_async(list)(run.events.values_list("type", flat=True))
    assert RunPaused.type in types
    replayed = await sync_to_async(list)(
        run.events.filter(type="replay.step").values_list("data", flat=True)
    )
    assert [e["status"] for e in replayed] == ["passed", "needs_person", "skipped", "passed"]


@pytest.mark.django_db(transaction=True)
async def test_a_replay_that_fails_writes_none_of_what_it_found_changed(
    runs: Runs, owner: Any, fixture_url: str
) -> None:
    """A replay on a new release finds the Email field changed (its id) and then fails a
    later check: what it found is proposed for a person, not written into the step (a
    replay that failed may have gone wrong before it did: on another customer's row whose
    name begins with the one given, whose words it would have written in)."""
    email = {"role": "textbox", "name": "Email", "tag": "input", "type": "email", "id": "email",
             "name_attr": "email", "selectors": ["#email"]}  # fmt: skip
    data = {**scenario_json(fixture_url), "base_url": f"{fixture_url}/replay/v1", "steps": [
        {"action": "navigate", "args": {"url": f"{fixture_url}/replay/v1/login.html"}},
        {"action": "fill", "args": {"value": "${email}"}, "identity": email},
        {"action": "expect", "args": {"kind": "text_visible", "text": "Signed in as Ada"}},
    ]}  # fmt: skip
    scenario = await sync_to_async(scenario_services.scenario_import)(owner=owner, data=data)
    run = await sync_to_async(scenario_services.replay_run_create)(
        owner=owner, scenario=scenario, base_url=f"{fixture_url}/replay/v2", params={}
    )
    await runs.start(run)
    run = await finished(runs, run.pk)
    assert run.status == Run.Status.FAILED and "Signed in as Ada" in run.status_reason, (
        run.status_reason
    )
    heals = await sync_to_async(list)(IdentityHeal.objects.filter(run=run))
    assert [h.after["id"] for h in heals] == ["login-email"], heals
    assert heals[0].status == IdentityHeal.Status.PROPOSED
    step = await sync_to_async(ScenarioStep.objects.get)(scenario=scenario, index=1)
    assert step.identity["id"] == "email" and not step.identity.get("variants")


@pytest.mark.django_db
def test_import_refuses_a_bad_file_whole_and_export_gives_it_back(
    owner: Any, stranger: Any, fixture_url: str
) -> None:
    client = Client()
    client.force_login(owner)
    for content, message in [
        (b"{not json", "not a JSON file"),
        (json.dumps(scenario_json(fixture_url, version=2)).encode(), "newer than this Tabwright"),
        (json.dumps({**scenario_json(fixture_url), "steps": [{"action": "fly"}]}).encode(),
         "unknown step type"),
        # PostgreSQL keeps no NUL: a typed text holding one is refused, as the forms do.
        (json.dumps(scenario_json(fixture_url, params={"email": {"default": "ada\x00"}})
                    ).encode(), "NUL character, U+0000 (in &#x27;params&#x27;)"),
    ]:  # fmt: skip
        upload = SimpleUploadedFile("s.json", content, content_type="application/json")
        response = client.post("/scenarios/import", {"file": upload})
        assert response.status_code == 400 and message in response.content.decode()
    assert not Scenario.objects.exists() and not ScenarioStep.objects.exists()
    upload = SimpleUploadedFile("s.json", json.dumps(scenario_json(fixture_url)).encode())
    response = client.post("/scenarios/import", {"file": upload})
    scenario = Scenario.objects.get()
    assert response["Location"] == f"/scenarios/{scenario.pk}/" and scenario.steps.count() == 3
    exported = client.get(f"/scenarios/{scenario.pk}/export.json")
    assert Document.from_dict(json.loads(exported.content)) == Document.from_dict(
        scenario_json(fixture_url)
    )
    code = client.get(f"/scenarios/{scenario.pk}/export.py").content.decode()
    assert "get_by_role('button', name='Delete account', exact=True).click()" in code
    assert "os.environ.get('TABWRIGHT_PARAM_email', 'ada@example.org')" in code
    assert client.get(f"/scenarios/{scenario.pk}/export.exe").status_code == 404
    other = Client()
    other.force_login(stranger)
    assert other.get(f"/scenarios/{scenario.pk}/").status_code == 404
    assert other.get(f"/scenarios/{scenario.pk}/export.json").status_code == 404
    assert "Close the account" not in other.get("/scenarios/").content.decode()


@pytest.mark.django_db
def test_a_proposed_change_is_written_only_when_approved(owner: Any, fixture_url: str) -> None:
    scenario = scenario_services.scenario_import(owner=owner, data=scenario_json(fixture_url))
    renamed = {**BUTTON, "name": "Close account"}
    outcome = {"index": 1, "heal": "proposed", "healed": renamed, "strategy": "similarity",
               "score": 0.71, "changes": ["name: 'Delete account' -> 'Close account'"]}  # fmt: skip
    proposed = scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome)
    assert proposed is not None and proposed.status == IdentityHeal.Status.PROPOSED
    step = ScenarioStep.objects.get(scenario=scenario, index=1)
    assert step.identity["name"] == "Delete account"  # not written yet
    client = Client()
    client.force_login(owner)
    assert "Changes to approve" in client.get(f"/scenarios/{scenario.pk}/").content.decode()
    client.post(f"/heals/{proposed.pk}/decide", {"approve": "1"})
    step.refresh_from_db()
    proposed.refresh_from_db()
    assert step.identity["name"] == "Close account" and proposed.status == "applied"
    assert proposed.before["name"] == "Delete account" and proposed.decided_by == owner
    # What it was known as is kept: replay finds it on the older release too.
    assert [v["name"] for v in step.identity["variants"]] == ["Delete account"]
    response = client.post(f"/heals/{proposed.pk}/decide", {"reject": "1"}, follow=True)
    assert "already applied" in response.content.decode()
    rejected = scenario_services.heal_record(
        scenario_id=scenario.pk, outcome={**outcome, "healed": BUTTON}
    )
    assert rejected is not None
    client.post(f"/heals/{rejected.pk}/decide", {"reject": "1"})
    step.refresh_from_db()
    rejected.refresh_from_db()
    assert rejected.status == "rejected" and step.identity["name"] == "Close account"
    confident = scenario_services.heal_record(
        scenario_id=scenario.pk, outcome={**outcome, "heal": "confident", "healed": BUTTON}
    )
    step.refresh_from_db()
    assert confident is not None and confident.status == "applied"
    assert step.identity["name"] == "Delete account" and confident.decided_by is None
    assert [v["name"] for v in step.identity["variants"]] == ["Close account"]  # no repeats


@pytest.mark.django_db
def test_replays_side_by_side_record_one_heal_for_the_same_change(
    owner: Any, fixture_url: str
) -> None:
    """Two replays of a batch find the same renamed button: one proposal to approve, and
    when confident, one applied change (the second replay finds the step knows it)."""
    scenario = scenario_services.scenario_import(owner=owner, data=scenario_json(fixture_url))
    renamed = {**BUTTON, "name": "Close account", "captured_at": "2026-11-26T10:00:00Z"}
    outcome = {"index": 1, "heal": "proposed", "healed": renamed, "strategy": "similarity",
               "score": 0.71, "changes": ["name: 'Delete account' -> 'Close account'"]}  # fmt: skip
    first = scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome)
    seen_later = {**renamed, "captured_at": "2026-11-26T10:00:02Z", "box": [10, 20, 80, 30]}
    second = scenario_services.heal_record(
        scenario_id=scenario.pk, outcome={**outcome, "healed": seen_later}
    )
    assert first is not None and second == first
    # Another change: a proposal of its own.
    other = {**renamed, "name": "Remove account", "box": [10, 20, 80, 30]}
    assert scenario_services.heal_record(
        scenario_id=scenario.pk, outcome={**outcome, "healed": other}
    ) not in (None, first)
    assert IdentityHeal.objects.filter(status="proposed").count() == 2
    confident = {**outcome, "heal": "confident"}
    applied = scenario_services.heal_record(
        scenario_id=scenario.pk, outcome={**confident, "healed": other}
    )
    assert applied is not None and applied.status == "applied"  # what waited, written now
    assert applied.pk != first.pk and IdentityHeal.objects.filter(status="applied").count() == 1
    again = scenario_services.heal_record(
        scenario_id=scenario.pk, outcome={**confident, "healed": other}
    )
    assert again is None  # the step knows the element so already
    # Only moved on the page: still a change to keep (replay finds it by its place too).
    moved = {**other, "box": [300, 400, 80, 30]}
    placed = scenario_services.heal_record(
        scenario_id=scenario.pk, outcome={**confident, "healed": moved}
    )
    assert placed is not None and placed.status == "applied"
    assert (
        scenario_services.heal_record(
            scenario_id=scenario.pk, outcome={**confident, "healed": moved}
        )
        is None
    )
    assert IdentityHeal.objects.filter(status="applied").count() == 2


@pytest.mark.django_db
def test_a_run_without_replayable_steps_is_not_saved(owner: Any) -> None:
    run = run_services.run_create(owner=owner, task="look around", start_url="", planner="rules")
    ended(run)
    run_services.step_record(run_id=run.pk, data={"index": 0, "action": "read_page", "args": {}})
    client = Client()
    client.force_login(owner)
    response = client.post(f"/runs/{run.pk}/save", {"name": "x"}, follow=True)
    assert "no step that can be replayed" in response.content.decode()
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_a_step_the_person_did_while_paused_is_kept_and_saved_with_the_run(owner: Any) -> None:
    run = run_services.run_create(owner=owner, task="sign in", start_url="", planner="rules")
    ended(run)
    nav = {"index": 0, "action": "navigate", "args": {"url": "http://shop.test/login.html"}}
    run_services.step_record(run_id=run.pk, data=nav)
    identity = {"role": "button", "name": "Sign in", "tag": "button", "selectors": ["#go"]}
    run_services.step_record(
        run_id=run.pk,
        data={"index": 1, "action": "click", "args": {}, "identity": identity, "by": "person"},
    )
    assert [s.by for s in run.steps.order_by("index")] == ["agent", "person"]
    scenario = scenario_services.scenario_from_run(owner=owner, run=run, name="Sign in")
    assert [s.action for s in scenario.steps.order_by("index")] == ["navigate", "click"]


@pytest.mark.django_db
def test_a_typed_value_becomes_a_parameter_or_a_secret_from_the_scenario_page(
    owner: Any, stranger: Any, fixture_url: str
) -> None:
    data = scenario_json(fixture_url)
    data["steps"][2]["args"] = {"value": "ada@example.org"}
    data["steps"].append({**data["steps"][2], "args": {"value": "hunter2"}})
    data["params"] = {}
    scenario = scenario_services.scenario_import(owner=owner, data=data)
    client = Client()
    client.force_login(owner)
    page = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert page.count("Make parameter") == 2
    client.post(f"/scenarios/{scenario.pk}/steps/2/param", {"name": "email"})
    client.post(f"/scenarios/{scenario.pk}/steps/3/param", {"name": "SHOP_PW", "secret": "1"})
    scenario.refresh_from_db()
    steps = {s.index: s for s in scenario.steps.all()}
    assert steps[2].args == {"value": "${email}"} and steps[3].args == {
        "value": "${SECRET:SHOP_PW}"
    }
    assert scenario.params == {"email": {"default": "ada@example.org"}}
    assert "hunter2" not in json.dumps([s.args for s in steps.values()]) + json.dumps(
        scenario.params
    )
    response = client.post(f"/scenarios/{scenario.pk}/steps/2/param", {"name": "x"}, follow=True)
    assert "already takes its value from" in response.content.decode()
    response = client.post(f"/scenarios/{scenario.pk}/steps/1/param", {"name": "x"}, follow=True)
    assert "has no value to replace" in response.content.decode()
    other = Client()
    other.force_login(stranger)
    assert other.post(f"/scenarios/{scenario.pk}/steps/2/param", {"name": "y"}).status_code == 404


@pytest.mark.django_db
def test_a_parameter_made_on_the_page_follows_the_value_into_where_later_steps_led(
    owner: Any,
) -> None:
    """Not stored: a batch row with another value failed "led to ?q=Echo, not ?q=Delta"."""
    box = {"role": "textbox", "name": "Search", "tag": "input"}
    data = {
        "format": "tabwright.scenario", "version": 1, "name": "Ship", "base_url": "",
        "steps": [
            {"action": "fill", "args": {"value": "Delta"}, "identity": box},
            {"action": "click", "args": {}, "url": "http://bo.test/orders/?q=Delta",
             "led_to": "http://bo.test/orders/?q=Delta", "identity": BUTTON},
        ],
    }  # fmt: skip
    scenario = scenario_services.scenario_import(owner=owner, data=data)
    client = Client()
    client.force_login(owner)
    client.post(f"/scenarios/{scenario.pk}/steps/0/param", {"name": "customer"})
    step = scenario.steps.get(index=1)
    assert step.url == step.led_to == "http://bo.test/orders/?q=${customer}"


@pytest.mark.django_db
def test_a_parameter_follows_the_value_into_later_steps_and_checks_and_says_which(
    owner: Any,
) -> None:
    box = {"role": "checkbox", "name": "", "tag": "input", "type": "checkbox",
           "row": "Buy milk", "selectors": ["li:nth-of-type(1) > input"]}  # fmt: skip
    data = {
        "format": "tabwright.scenario", "version": 1, "name": "Milk", "base_url": "",
        "steps": [
            {"action": "fill", "args": {"value": "Buy milk", "submit": True},
             "identity": {"role": "textbox", "name": "New todo", "tag": "input"}},
            {"action": "check", "args": {}, "identity": box},
            {"action": "expect", "args": {"kind": "rows", "text": "Buy milk", "count": 1}},
            {"action": "expect", "args": {"kind": "text_visible", "text": "1 item left"}},
        ],
    }  # fmt: skip
    scenario = scenario_services.scenario_import(owner=owner, data=data)
    client = Client()
    client.force_login(owner)
    page = client.post(
        f"/scenarios/{scenario.pk}/steps/0/param", {"name": "item"}, follow=True
    ).content.decode()
    assert (
        "Step 0 takes its value from ${item} now, and so do the steps and checks that used "
        "it: step 1: tick the checkbox in row &#x27;${item}&#x27;; step 2: expect 1 row(s) "
        "show &#x27;${item}&#x27;."
    ) in page
    steps = {s.index: s for s in scenario.steps.all()}
    assert steps[1].identity["row"] == "${item}"
    assert steps[2].args == {"kind": "rows", "text": "${item}", "count": 1}
    assert steps[3].args == {"kind": "text_visible", "text": "1 item left"}
    # The page says which steps use it, and each step says what it does to which element.
    assert "used by" in page and 'href="#step-1">step 1</a>' in page
    assert '<strong class="step-action">tick</strong>' in page
    assert "the checkbox in row “${item}”" in page
    scenario.refresh_from_db()
    assert scenario.params == {"item": {"default": "Buy milk"}}
