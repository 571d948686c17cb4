"""A script has the run page's commands through the JSON API: it messages a conversation
(while it waits, with its tab open, and after its tab was closed), pauses, resumes and
replies, stops a stretch, closes the tab, and saves the conversation as a scenario; each
refusal is a code the docs list."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async

from dashboard.api.common import API_CODES
from dashboard.models import LLMProfile, Run, Scenario
from dashboard.runs.runner import RunManager, runner
from dashboard.runs.selectors import run_requests
from tests.dashboard.api.test_api import api, finished, refused, token_of
from tests.dashboard.conftest import Runs
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

NAME_TASK = "type Ada Lovelace into Name"
SIGN_UP = "type ada@example.org into Email\nclick Sign up\nwait for Welcome, Ada Lovelace!"
NEVER = "wait for Text that never appears"


@pytest.fixture
def keep_tabs(settings: Any) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "SESSION_IDLE_S": 60}


async def test_a_script_talks_to_a_conversation_and_saves_it_as_a_scenario(
    worker: RunManager, runs: Runs, owner: Any, stranger: Any, fixture_url: str, keep_tabs: None
) -> None:
    client = api(await sync_to_async(token_of)(owner))
    made = await client.post("/api/runs", {
        "task": NAME_TASK, "start_url": f"{fixture_url}/demo/form.html", "planner": "rules",
    })  # fmt: skip
    run_id = made.json()["id"]
    runs.started.append(run_id)
    first = await finished(client, run_id)
    assert first["status"] == "succeeded", first
    assert runner.is_live(run_id) and not runner.is_working(run_id)  # its tab waits

    # Nothing is at work: a stop is refused with a listed code, and the tab stays.
    answer = refused(await client.post(f"/api/runs/{run_id}/stop"), 409, "refused")
    assert "nothing is working now" in answer["message"] and "refused" in API_CODES
    # Nor does a reply, with no pause to answer (it started a new request, "skip").
    answer = refused(await client.post(f"/api/runs/{run_id}/reply", {"text": "skip"}), 409,
                     "refused")  # fmt: skip
    assert "nothing waits for a reply" in answer["message"]
    refused(await client.post(f"/api/runs/{run_id}/pause"), 409, "refused")
    refused(await client.post(f"/api/runs/{run_id}/messages", {"text": ""}), 400, "invalid")
    other = api(await sync_to_async(token_of)(stranger))
    refused(await other.post(f"/api/runs/{run_id}/messages", {"text": "hi"}), 404, "not_found")

    # A message while it waits: its work goes on in the same tab.
    said = await client.post(f"/api/runs/{run_id}/messages", {"text": NEVER})
    assert said.status_code == 200, said.content

    async def working() -> bool:
        return runner.is_working(run_id)

    await eventually(working, what="the second stretch works")
    paused = await client.post(f"/api/runs/{run_id}/pause")
    assert paused.status_code == 200, paused.content

    async def is_paused() -> bool:
        run = await sync_to_async(Run.objects.get)(pk=run_id)
        return run.status == Run.Status.PAUSED

    await eventually(is_paused, what="the run pauses")
    # Saved now, it would hold the steps so far and none of the checks its end proposes.
    answer = refused(await client.post(f"/api/runs/{run_id}/scenario", {}), 409, "refused")
    assert answer["message"].startswith("the run is still at work (paused)"), answer
    resumed = await client.post(f"/api/runs/{run_id}/resume")
    assert resumed.status_code == 200, resumed.content
    stopped = await client.post(f"/api/runs/{run_id}/stop")
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped", stopped.content
    assert runner.is_live(run_id)  # the stretch ended, not the conversation

    # The person closes the tab; a message then restores the page and goes on.
    closed = await client.post(f"/api/runs/{run_id}/close")
    assert closed.status_code == 200, closed.content
    assert not runner.is_live(run_id)
    assert (await sync_to_async(Run.objects.get)(pk=run_id)).session == Run.Session.CLOSED
    # As daphne serves it, on a request's thread (dashboard.lib.requestthreads): the run
    # it restores outlives the request, its database calls served after the request ends.
    with ThreadPoolExecutor(max_workers=1) as thread:
        async with ThreadSensitiveContext(executor=thread):
            again = await client.post(f"/api/runs/{run_id}/messages", {"text": SIGN_UP})
    assert again.status_code == 200, again.content

    async def signed_up() -> bool:
        run = await sync_to_async(Run.objects.get)(pk=run_id)
        return run.status == Run.Status.SUCCEEDED and not runner.is_working(run_id)

    await eventually(signed_up, what="the restored conversation signs up")
    done = (await client.get(f"/api/runs/{run_id}")).json()
    assert [s["action"] for s in done["steps"] if s["ok"]][-3:] == ["type", "click", "wait_for"]

    # Saved as a scenario, with the checks its save page would tick.
    proposals = (await client.get(f"/api/runs/{run_id}/proposals")).json()
    refused(await other.post(f"/api/runs/{run_id}/scenario", {}), 404, "not_found")
    bad = await client.post(f"/api/runs/{run_id}/scenario", {"checks": [len(proposals)]})
    refused(bad, 400, "invalid")
    saved = await client.post(f"/api/runs/{run_id}/scenario", {"name": "Ada signs up"})
    assert saved.status_code == 201, saved.content
    scenario = await sync_to_async(Scenario.objects.get)(pk=saved.json()["id"])
    assert scenario.name == "Ada signs up" and scenario.owner_id == owner.pk
    actions = await sync_to_async(list)(scenario.steps.values_list("action", flat=True))
    assert "click" in actions and actions[0] == "navigate"
    picked = sum(1 for p in proposals if p["picked"])
    assert actions.count("expect") >= picked

    # Its last request alone, with the checks its save page would tick of that request
    # (the picked ones of the others were refused as "not saved"); a request it does not
    # have is refused naming the field, however large its number.
    last = len(
        await sync_to_async(run_requests)(run=await sync_to_async(Run.objects.get)(pk=run_id))
    )
    alone = await client.post(
        f"/api/runs/{run_id}/scenario", {"name": "Ada signs up alone", "stretches": [last]}
    )
    assert alone.status_code == 201, alone.content
    scenario = await sync_to_async(Scenario.objects.get)(pk=alone.json()["id"])
    values = await sync_to_async(list)(scenario.steps.values_list("action", "args"))
    assert [a for a, _ in values if a != "expect"][-3:] == ["type", "click", "wait_for"]
    assert not any("Ada Lovelace" == args.get("text") for _, args in values), values
    # It goes first to the page its request began on (a replay starts on a blank tab).
    first = await sync_to_async(scenario.steps.exclude(action="expect").first)()
    assert first.action == "navigate" and first.args["url"] == first.url, values
    assert scenario.base_url and first.url.startswith(scenario.base_url), scenario.base_url
    for wrong in (last + 1, 0, 2**63):
        answer = refused(
            await client.post(f"/api/runs/{run_id}/scenario", {"stretches": [wrong]}),
            400,
            "invalid",
        )
        assert (
            "stretches" in answer["fields"]
            and f"no request {wrong} in this run" in (answer["message"])
        )


async def test_a_run_that_ended_takes_no_command_and_an_unknown_profile_lists_the_others(
    runs: Runs, owner: Any
) -> None:
    await sync_to_async(LLMProfile.objects.create)(name="house model", model="m", base_url="")
    client = api(await sync_to_async(token_of)(owner))
    wrong = await client.post("/api/runs", {"task": "t", "llm_profile": "nobody's"})
    answer = refused(wrong, 400, "invalid")
    assert "'house model'" in answer["hint"], answer
    made = (await client.post("/api/runs", {"task": "click OK", "planner": "rules"})).json()
    await client.post(f"/api/runs/{made['id']}/stop")  # queued: stopped at once
    for command in ("pause", "resume", "close"):
        refused(await client.post(f"/api/runs/{made['id']}/{command}"), 409, "not_live")
    refused(await client.post(f"/api/runs/{made['id']}/reply", {"text": "skip"}), 409, "not_live")
    # A number of rounds out of range is a bad value, named as a wrong type is (it was 409
    # "refused", as for a command that does not apply now), whatever the run's state.
    for rounds in (0, -1, 10**20, "3"):
        answer = refused(
            await client.post(f"/api/runs/{made['id']}/extend", {"rounds": rounds}), 400, "invalid"
        )
        assert "rounds" in answer["fields"], answer
