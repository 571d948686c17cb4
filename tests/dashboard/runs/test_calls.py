"""Replays of scenarios that call a stored sign-in: the called scenario's steps run in
the caller's replay and show as its run's steps, each marked as the call's; a change
healed in the called scenario is written to it once, and a second caller finds the
element as healed; exported and imported by another person, the caller brings the called
scenario, as healed, and replays."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from dashboard.models import IdentityHeal, Run, ScenarioStep, SecretGrant, Step
from dashboard.scenarios import selectors
from dashboard.scenarios import services as scenario_services
from tests.automation.recording.test_totp_replay import sign_in
from tests.backoffice import USER, BackOffice
from tests.dashboard.conftest import Runs
from tests.dashboard.runs.test_signins import _grant, replayed

VERIFY = 5  # the sign-in's "Verify" click


def caller(url: str, name: str) -> dict[str, Any]:
    return {"version": 1, "name": name, "base_url": url, "steps": [
        {"action": "call", "args": {"scenario": "Sign in", "params": {}}},
        {"action": "navigate", "args": {"url": f"{url}/orders"}},
        {"action": "expect", "args": {"kind": "text_visible", "text": f"Signed in as {USER}"}},
    ]}  # fmt: skip


def _store(owner: Any, url: str) -> tuple[Any, Any, Any]:
    login = sign_in(url).to_dict()
    # Recorded on an older release: the button had an id it lost since.
    login["steps"][VERIFY]["identity"]["selectors"] = ["#verify-old"]
    stored = scenario_services.scenario_import(owner=owner, data=login)
    first = scenario_services.scenario_import(owner=owner, data=caller(url, "Orders"))
    second = scenario_services.scenario_import(owner=owner, data=caller(url, "Totals"))
    return stored, first, second


@pytest.mark.django_db(transaction=True)
async def test_a_heal_in_the_called_scenario_holds_for_every_caller_and_its_export(
    runs: Runs, owner: Any, stranger: Any, office: BackOffice
) -> None:
    await sync_to_async(_grant)(owner)
    login, first, second = await sync_to_async(_store)(owner, office.url)

    run = await replayed(runs, owner, first, office.url, None)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    rows = await sync_to_async(list)(Step.objects.filter(run=run).order_by("index"))
    assert [s.index for s in rows] == list(range(11))  # the call's steps are the run's too
    assert [s.by for s in rows].count("call") == 8 and rows[0].action == "call"
    heals = await sync_to_async(list)(IdentityHeal.objects.select_related("step"))
    # Written to the called scenario's own steps (its fields were stored with less than
    # replay finds of them, its button with an id it lost), none to the callers'.
    assert {h.step.scenario_id for h in heals} == {login.pk}
    assert VERIFY in {h.step.index for h in heals}
    assert {h.status for h in heals} == {IdentityHeal.Status.APPLIED}
    verify = await ScenarioStep.objects.aget(scenario=login, index=VERIFY)
    assert "#verify-old" not in verify.identity["selectors"]
    assert verify.last_run_id == run.pk and verify.last_status == "passed"
    own = await ScenarioStep.objects.aget(scenario=first, index=1)  # not a callee's index
    assert own.last_run_id == run.pk and own.action == "navigate"

    again = await replayed(runs, owner, second, office.url, None)
    assert again.status == Run.Status.SUCCEEDED, again.status_reason
    assert await IdentityHeal.objects.acount() == len(heals)  # nothing more to heal
    events = await sync_to_async(list)(
        again.events.filter(type="replay.step").values_list("data", flat=True)
    )
    called = [e for e in events if e.get("scenario") == "Sign in"]
    assert len(called) == 8 and not any(e["heal"] for e in called)
    assert office.sign_ins == 2

    # Exported as a file and imported by another person, it brings the sign-in it calls.
    document = await sync_to_async(selectors.scenario_document)(scenario=second)
    for grant in await sync_to_async(list)(SecretGrant.objects.all()):
        await grant.users.aadd(stranger)  # the sign-in's secrets, granted to them too
    theirs = await sync_to_async(scenario_services.scenario_import)(
        owner=stranger, data=json.loads(json.dumps(document.to_dict()))
    )
    imported = await sync_to_async(selectors.scenario_callees)(scenario=theirs)
    assert list(imported) == ["Sign in"] and imported["Sign in"].owner_id == stranger.pk
    elsewhere = await replayed(runs, stranger, theirs, office.url, None)
    assert elsewhere.status == Run.Status.SUCCEEDED, elsewhere.status_reason
    assert await IdentityHeal.objects.acount() == len(heals)  # it came as healed
    steps = await sync_to_async(list)(Step.objects.filter(run=elsewhere).order_by("index"))
    assert [s.by for s in steps].count("call") == 8 and office.sign_ins == 3
    verify = await ScenarioStep.objects.aget(scenario=imported["Sign in"], index=VERIFY)
    assert verify.last_run_id == elsewhere.pk and verify.last_status == "passed"
