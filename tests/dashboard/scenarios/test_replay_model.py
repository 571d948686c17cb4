"""A replay with a model for changed pages: when a recorded element is gone and nothing
else leads there, the LLM profile chosen for the replay reaches the step's intent, and the
dashboard shows what it did as a change for a person to confirm; a model that can't be used
is refused before anything runs, on the page and in the API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, Client

from dashboard.accounts import services as account_services
from dashboard.models import IdentityHeal, LLMProfile, Run, Scenario, ScenarioStep
from dashboard.scenarios import services as scenario_services
from tests.dashboard.conftest import Runs
from tests.fakellm import ScriptedLLMServer

pytestmark = pytest.mark.django_db


def moved_scenario(base: str) -> dict[str, Any]:
    """Add a customer from the list's link; the link has no recorded target (a scenario
    stored before links kept one), so only the step's words say where it led."""
    return {
        "format": "tabwright.scenario", "version": 1, "name": "Add a customer",
        "base_url": f"{base}/replay/moved/v1",
        "steps": [
            {"action": "navigate", "args": {"url": f"{base}/replay/moved/v1/index.html"}},
            {"action": "click", "args": {},
             "identity": {"role": "link", "name": "Add customer", "tag": "a"},
             "intent": "open the form to add a customer"},
            {"action": "fill", "args": {"value": "Grace Hopper"},
             "identity": {"role": "textbox", "name": "Name", "tag": "input"}},
        ],
    }  # fmt: skip


def act(**fields: object) -> str:
    return f"<action>{json.dumps(fields)}</action>"


def healer(llm: ScriptedLLMServer, **more: Any) -> LLMProfile:
    return LLMProfile.objects.create(
        name="healer", provider="openai", base_url=llm.base_url, model="m", **more
    )


@pytest.mark.django_db(transaction=True)
async def test_the_replay_s_model_reaches_a_moved_form_and_the_change_waits_for_a_person(
    runs: Runs, worker: Any, owner: Any, fixture_url: str, llm_server: ScriptedLLMServer
) -> None:
    profile = await sync_to_async(healer)(llm_server)
    scenario = await sync_to_async(scenario_services.scenario_import)(
        owner=owner, data=moved_scenario(fixture_url)
    )
    llm_server.script(
        act(action="navigate", url=f"{fixture_url}/replay/moved/v2/new.html")
        + act(action="done", summary="opened the form to add a customer")
    )
    client = AsyncClient()
    await client.aforce_login(owner)
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


def test_a_model_whose_key_is_not_set_is_refused_before_the_replay(
    owner: Any, fixture_url: str, llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TABWRIGHT_TEST_UNSET_KEY", raising=False)
    profile = healer(llm_server, api_key_env="TABWRIGHT_TEST_UNSET_KEY")
    scenario = scenario_services.scenario_import(owner=owner, data=moved_scenario(fixture_url))
    client = Client()
    client.force_login(owner)
    page = client.post(f"/scenarios/{scenario.pk}/replay", {"llm_profile": str(profile.pk)})
    assert page.status_code == 400
    assert "healer can&#x27;t heal replays" in page.content.decode()
    assert not Run.objects.exists()
    # Through the API: the same refusal, and an unknown name lists the profiles there are.
    secret = account_services.api_token_create(owner=owner, name="a script")[1]
    api = Client(headers={"Authorization": f"Bearer {secret}"})
    url = f"/api/scenarios/{scenario.pk}/replays"
    refused = api.post(url, {"llm_profile": "healer"}, content_type="application/json")
    assert refused.status_code == 400
    assert "can't heal replays" in refused.json()["error"]["fields"]["llm_profile"]
    unknown = api.post(url, {"llm_profile": "nobody"}, content_type="application/json")
    assert unknown.status_code == 400 and "'healer'" in unknown.json()["error"]["hint"]
    assert not Run.objects.exists()
    assert Scenario.objects.count() == 1
