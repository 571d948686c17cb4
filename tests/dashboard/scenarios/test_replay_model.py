"""A replay with a model for changed pages: when a recorded element is gone and nothing
else leads there, the LLM profile chosen for the replay (or for a batch's rows, or a
schedule's firings) reaches the step's intent, and the dashboard shows what it did as a
change for a person to confirm; a model that can't be used is refused before anything runs,
on the pages and in the API, and one deleted since fails what would have used it."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient, Client
from django.utils import timezone

from automation.errors import LLMError
from dashboard.accounts import services as account_services
from dashboard.engineconf import heal_planner_for_run
from dashboard.jobs import schedules
from dashboard.jobs import services as job_services
from dashboard.models import (
    Batch,
    IdentityHeal,
    LLMProfile,
    Run,
    Scenario,
    ScenarioStep,
    Schedule,
)
from dashboard.runs import services as run_services
from dashboard.scenarios import services as scenario_services
from tests.dashboard.conftest import Runs
from tests.dashboard.jobs.test_batches import until_batch
from tests.fakellm import ScriptedLLMServer

pytestmark = pytest.mark.django_db


def moved_scenario(base: str, *, name: str = "Grace Hopper") -> dict[str, Any]:
    """Add a customer (``name``: typed, or a parameter) from the list's link; the link has
    no recorded target (a scenario stored before links kept one), so only the step's words
    say where it led."""
    return {
        "format": "tabwright.scenario", "version": 1, "name": "Add a customer",
        "base_url": f"{base}/replay/moved/v1",
        "steps": [
            {"action": "navigate", "args": {"url": f"{base}/replay/moved/v1/index.html"}},
            {"action": "click", "args": {},
             "identity": {"role": "link", "name": "Add customer", "tag": "a"},
             "intent": "open the form to add a customer"},
            {"action": "fill", "args": {"value": name},
             "identity": {"role": "textbox", "name": "Name", "tag": "input"}},
        ],
    }  # fmt: skip


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


def healer(base_url: str, **more: Any) -> LLMProfile:
    return LLMProfile.objects.create(
        name="healer", provider="openai", base_url=base_url, model="m", **more
    )


async def ready_to_heal(
    owner: Any, fixture_url: str, llm: ScriptedLLMServer, *, name: str = "Grace Hopper",
    heals: int = 1,
) -> tuple[LLMProfile, Scenario, AsyncClient]:  # fmt: skip
    """The healer profile, the moved scenario, ``heals`` answers of the model that open the
    moved form, and the owner's client."""
    profile = await sync_to_async(healer)(llm.base_url)
    scenario = await sync_to_async(scenario_services.scenario_import)(
        owner=owner, data=moved_scenario(fixture_url, name=name)
    )
    heal = act(action="navigate", url=f"{fixture_url}/replay/moved/v2/new.html") + act(
        action="done", summary="opened the form to add a customer"
    )
    llm.script(*[heal] * heals)
    client = AsyncClient()
    await client.aforce_login(owner)
    return profile, scenario, client


@pytest.mark.django_db(transaction=True)
async def test_the_replay_s_model_reaches_a_moved_form_and_the_change_waits_for_a_person(
    runs: Runs, worker: Any, owner: Any, fixture_url: str, llm_server: ScriptedLLMServer
) -> None:
    profile, scenario, client = await ready_to_heal(owner, fixture_url, llm_server)
    response = await client.post(f"/scenarios/{scenario.pk}/replay", {
        "base_url": f"{fixture_url}/replay/moved/v2", "llm_profile": str(profile.pk),
    })  # fmt: skip
    replay = await sync_to_async(Run.objects.get)(kind=Run.Kind.REPLAY)
    assert response["Location"] == f"/runs/{replay.pk}/"
    await runs.claimed(replay.pk)
    await runs.manager.wait(replay.pk)
    replay = await sync_to_async(Run.objects.get)(pk=replay.pk)
    assert replay.status == Run.Status.SUCCEEDED, replay.status_reason
    outcomes = await sync_to_async(list)(
        replay.events.filter(type="replay.step").values_list("data", flat=True)
    )
    click = next(o for o in outcomes if o["index"] == 1)
    assert click["strategy"] == "agent", click
    assert any("needs a person's confirmation" in change for change in click["changes"])
    # The model was told the step's intent, and never the scenario's typed value.
    sent = json.dumps(llm_server.requests[0]["messages"])
    assert "open the form to add a customer" in sent and "Grace Hopper" not in sent
    # The scenario's step says how the latest replay reached it; nothing it did is written
    # to the step unasked.
    step = await sync_to_async(ScenarioStep.objects.get)(scenario=scenario, index=1)
    assert step.last_strategy == "agent" and step.identity["name"] == "Add customer"
    applied = IdentityHeal.objects.filter(
        run=replay, step__index=1, status=IdentityHeal.Status.APPLIED
    )
    assert not await applied.aexists()
    page = await client.get(f"/runs/{replay.pk}/")
    assert 'data-testid="heal-model">healer<' in page.content.decode()
    # The model only went to an address: that is said in words in the step's changes (the
    # run page draws them) and proposed on the scenario page as where the link leads, on
    # the address the scenario was recorded on.
    went = f"went to {fixture_url}/replay/moved/v2/new.html"
    assert went in click["changes"][0], click["changes"]
    proposed = await IdentityHeal.objects.aget(
        run=replay, step__index=1, status=IdentityHeal.Status.PROPOSED
    )
    assert proposed.after["target"] == f"{fixture_url}/replay/moved/v1/new.html"
    assert proposed.after["name"] == "Add customer"
    shown = (await client.get(f"/scenarios/{scenario.pk}/")).content.decode()
    assert "reached by the model for changed pages" in shown and went in shown
    # Approved, the step knows where its link leads: a replay goes there directly.
    await client.post(f"/heals/{proposed.pk}/decide", {"approve": "1"})
    step = await ScenarioStep.objects.aget(pk=step.pk)
    assert step.identity["target"] == f"{fixture_url}/replay/moved/v1/new.html"


@pytest.mark.django_db(transaction=True)
async def test_a_batch_s_rows_and_a_schedule_s_firing_reach_the_moved_form_with_their_model(
    runs: Runs, worker: Any, owner: Any, fixture_url: str, llm_server: ScriptedLLMServer
) -> None:
    profile, scenario, client = await ready_to_heal(
        owner,
        fixture_url,
        llm_server,
        name="${name}",
        heals=3,  # two rows, one firing
    )
    moved = f"{fixture_url}/replay/moved/v2"
    made = await client.post(f"/scenarios/{scenario.pk}/batches", {
        "file": rows_file("Mary Jackson", "Dorothy Vaughan"), "base_url": moved,
        "concurrency": 2, "llm_profile": str(profile.pk),
    })  # fmt: skip
    batch = await Batch.objects.aget()
    assert made["Location"] == f"/batches/{batch.pk}/"
    # A schedule made on the scenario's page, fired at once (not at its time), while the
    # batch's rows run.
    scheduled = await client.post(f"/scenarios/{scenario.pk}/schedules", {
        "cron": "0 7 * * 1-5", "timezone": "UTC", "concurrency": 2, "base_url": moved,
        "param_name": "Katherine Johnson", "llm_profile": str(profile.pk),
    })  # fmt: skip
    assert scheduled.status_code == 302
    await Schedule.objects.aupdate(next_fire_at=timezone.now())
    fired = await schedules.fire_due()
    assert len(fired) == 1 and fired[0].run_id is not None
    state = await until_batch(batch.pk, {"done"})
    assert [row["status"] for row in state["rows"]] == ["passed", "passed"], state["rows"]
    assert state["llm_profile"] == "healer"
    await runs.claimed(fired[0].run_id)
    await runs.manager.wait(fired[0].run_id)

    replays = [run async for run in Run.objects.filter(kind=Run.Kind.REPLAY).order_by("pk")]
    assert len(replays) == 3
    for replay in replays:
        assert replay.status == Run.Status.SUCCEEDED, replay.status_reason
        assert replay.llm_profile_id == profile.pk
        outcomes = [data async for data in replay.events.filter(type="replay.step")
                    .values_list("data", flat=True)]  # fmt: skip
        click = next(o for o in outcomes if o["index"] == 1)
        assert click["strategy"] == "agent", click
        assert any("needs a person's confirmation" in change for change in click["changes"])
    assert sorted(run.params["name"] for run in replays) == [
        "Dorothy Vaughan", "Katherine Johnson", "Mary Jackson"
    ]  # fmt: skip
    sent = json.dumps([request["messages"] for request in llm_server.requests])
    assert len(llm_server.requests) == 3 and "open the form to add a customer" in sent
    assert not any(name in sent for name in ("Jackson", "Vaughan", "Katherine"))
    batch_page = (await client.get(f"/batches/{batch.pk}/")).content.decode()
    assert 'data-testid="heal-model">healer<' in batch_page
    scenario_page = (await client.get(f"/scenarios/{scenario.pk}/")).content.decode()
    assert 'data-testid="heal-model">healer<' in scenario_page


# Where no test here goes: a scenario's address and a model's endpoint nothing answers at.
NOWHERE = "http://127.0.0.1:9"


def rows_file(*names: str) -> SimpleUploadedFile:
    text = "name\n" + "".join(f"{name}\n" for name in names)
    return SimpleUploadedFile("people.csv", text.encode(), content_type="text/csv")


def api_client(owner: Any) -> Client:
    secret = account_services.api_token_create(owner=owner, name="a script")[1]
    return Client(headers={"Authorization": f"Bearer {secret}"})


def test_a_model_whose_key_is_not_set_is_refused_before_a_replay_a_batch_or_a_schedule(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HEALER_TEST_API_KEY", raising=False)
    profile = healer(f"{NOWHERE}/v1", api_key_env="HEALER_TEST_API_KEY")
    data = moved_scenario(NOWHERE, name="${name}")
    scenario = scenario_services.scenario_import(owner=owner, data=data)
    client = Client()
    client.force_login(owner)
    why = "healer can&#x27;t heal replays: its key variable HEALER_TEST_API_KEY is not set"
    for path, form in [
        ("replay", {"param_name": "Ada"}),
        ("batches", {"file": rows_file("Ada", "Grace"), "concurrency": 2}),
        ("schedules", {"cron": "0 7 * * 1-5", "timezone": "UTC", "concurrency": 2,
                       "param_name": "Ada"}),
    ]:  # fmt: skip
        page = client.post(f"/scenarios/{scenario.pk}/{path}",
                           {**form, "llm_profile": str(profile.pk)})  # fmt: skip
        assert page.status_code == 400, path
        assert why in page.content.decode(), path  # the form's error, beside its field
    # Through the API: the same refusal naming the field, and an unknown name lists the
    # profiles there are.
    api = api_client(owner)
    for path, body in [
        ("replays", {"params": {"name": "Ada"}}),
        ("batches", {"rows": [{"name": "Ada"}, {"name": "Grace"}]}),
        ("schedules", {"cron": "0 7 * * 1-5", "params": {"name": "Ada"}}),
    ]:
        url = f"/api/scenarios/{scenario.pk}/{path}"
        refused = api.post(url, {**body, "llm_profile": "healer"}, content_type="application/json")
        assert refused.status_code == 400, (path, refused.content)
        assert (
            "key variable HEALER_TEST_API_KEY is not set"
            in (refused.json()["error"]["fields"]["llm_profile"])
        ), path
        unknown = api.post(url, {**body, "llm_profile": "nobody"}, content_type="application/json")
        assert unknown.status_code == 400, path
        assert "'healer'" in unknown.json()["error"]["hint"], path
        assert unknown.json()["error"]["fields"] == {"llm_profile": "no such profile"}
    # A schedule made without a model can't be given this one later either.
    made = api.post(f"/api/scenarios/{scenario.pk}/schedules",
                    {"cron": "0 7 * * 1-5", "params": {"name": "Ada"}},
                    content_type="application/json")  # fmt: skip
    assert made.status_code == 201 and made.json()["llm_profile"] == ""
    patched = api.patch(f"/api/schedules/{made.json()['id']}", {"llm_profile": "healer"},
                        content_type="application/json")  # fmt: skip
    assert "llm_profile" in patched.json()["error"]["fields"]
    assert Schedule.objects.get().llm_profile_name == ""
    assert not Run.objects.exists() and not Batch.objects.exists()
    assert Scenario.objects.count() == 1


def test_a_model_deleted_since_fails_the_firing_and_the_rows_saying_so(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = healer(f"{NOWHERE}/v1")
    scenario = scenario_services.scenario_import(
        owner=owner, data=moved_scenario(NOWHERE, name="${name}")
    )
    api = api_client(owner)
    made = api.post(f"/api/scenarios/{scenario.pk}/schedules",
                    {"cron": "*/10 * * * *", "params": {"name": "Ada"}, "llm_profile": "healer"},
                    content_type="application/json")  # fmt: skip
    assert made.status_code == 201 and made.json()["llm_profile"] == "healer"
    started = api.post(f"/api/scenarios/{scenario.pk}/batches",
                       {"rows": [{"name": "Ada"}, {"name": "Grace"}], "concurrency": 1,
                        "llm_profile": "healer"}, content_type="application/json")  # fmt: skip
    assert started.status_code == 201 and started.json()["llm_profile"] == "healer"
    batch = Batch.objects.get()
    first = Run.objects.get(batch_row__batch=batch)  # one at a time: the first row's
    assert first.llm_profile_id == profile.pk
    client = Client()
    client.force_login(owner)
    shown = client.get(f"/batches/{batch.pk}/").content.decode()
    assert 'data-testid="heal-model">healer<' in shown

    profile.delete()
    gone = "the model for changed pages 'healer' was deleted: choose another one, or none"
    schedule = Schedule.objects.get()
    firing = schedules.fire(schedule.pk, schedule.next_fire_at + timedelta(seconds=1))
    assert firing is not None and firing.run is None
    assert (firing.outcome, firing.error) == ("failed", f"could not start: {gone}")
    # The first row's replay, queued with it, fails saying so when a worker starts it.
    first.refresh_from_db()
    with pytest.raises(LLMError, match=re.escape(gone)):
        heal_planner_for_run(first)
    shown = client.get(f"/runs/{first.pk}/").content.decode()
    assert 'data-testid="heal-model">healer (deleted)<' in shown
    # The batch's next row fails saying so, rather than replay without the model.
    run_services.run_set_status(run_id=first.pk, status=Run.Status.SUCCEEDED)
    job_services.batch_advance(batch_id=batch.pk)
    state = api.get(f"/api/batches/{batch.pk}").json()
    assert state["status"] == "done" and state["llm_profile"] == "healer (deleted)"
    assert [(row["status"], row["reason"]) for row in state["rows"]] == [
        ("passed", ""),
        ("failed", f"could not start: {gone}"),
    ]
    shown = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert 'data-testid="heal-model">healer (deleted)<' in shown

    # A model whose key was set when the schedule was given it, and is not any more; a
    # schedule's model is changed (and taken away) with the rest of it.
    monkeypatch.setenv("HEALER_TEST_API_KEY", "sk-test")
    keyed = healer(f"{NOWHERE}/v1", api_key_env="HEALER_TEST_API_KEY")
    url = f"/api/schedules/{schedule.pk}"
    patched = api.patch(url, {"llm_profile": keyed.name}, content_type="application/json")
    assert patched.json()["llm_profile"] == "healer"
    again = Schedule.objects.create(owner=owner, scenario=scenario, cron="*/10 * * * *",
                                    params={"name": "Ada"}, next_fire_at=timezone.now(),
                                    llm_profile=keyed, llm_profile_name=keyed.name)  # fmt: skip
    monkeypatch.delenv("HEALER_TEST_API_KEY")
    firing = schedules.fire(again.pk, timezone.now())
    assert firing is not None and firing.error == (
        "could not start: healer can't heal replays: its key variable HEALER_TEST_API_KEY is "
        "not set on this server"
    )
    cleared = api.patch(url, {"llm_profile": ""}, content_type="application/json")
    assert cleared.json()["llm_profile"] == ""
    assert Run.objects.count() == 2  # the rows' runs; no firing replayed


def test_where_an_agent_went_is_proposed_once_as_the_link_s_target(owner: Any) -> None:
    scenario = scenario_services.scenario_import(owner=owner, data=moved_scenario(NOWHERE))
    step = ScenarioStep.objects.get(scenario=scenario, index=1)
    went = f"{NOWHERE}/replay/moved/v1/new.html"
    outcome = {"index": 1, "status": "passed", "strategy": "agent", "heal": "proposed",
               "healed": {**step.identity, "target": went},
               "changes": [f"done by the agent (open the form): went to {went}"]}  # fmt: skip
    heal = scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome)
    assert heal is not None and heal.status == IdentityHeal.Status.PROPOSED
    # A batch's other rows find the same: the proposal waiting stands for them.
    assert scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome) == heal
    scenario_services.heal_decide(heal_id=heal.pk, approve=True, user=owner)
    step.refresh_from_db()
    assert step.identity["target"] == went and step.identity["name"] == "Add customer"
    # Known now: the same finding proposes nothing more.
    assert scenario_services.heal_record(scenario_id=scenario.pk, outcome=outcome) is None
    assert IdentityHeal.objects.count() == 1
