"""A scenario's interruption handlers in the dashboard: written, changed and removed on
the scenario page, in its export and import, read and replaced through the API, and kept
from a replay's proposal ("handle this from now on").  A handler that can't be used is
refused with a typed error (handler_invalid) and nothing changes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from dashboard.models import Run, RunEvent, Scenario
from dashboard.scenarios import services as scenario_services
from dashboard.scenarios.handlers import scenario_handlers_set
from tests.dashboard.api.test_api import api, refused, token_of

pytestmark = pytest.mark.django_db

GOT_IT = {"action": "click", "args": {}, "identity": {"role": "button", "name": "Got it"}}
WHATS_NEW = {"name": "What's new", "when": {"role": "dialog", "name": "What's new"},
             "steps": [GOT_IT]}  # fmt: skip
WORDS = {"name": "What's new", "role": "dialog", "looks_name": "What's new",
         "clear_role": "button", "clear_name": "Got it"}  # fmt: skip


def orders(owner: Any) -> Scenario:
    return scenario_services.scenario_import(owner=owner, data={
        "version": 1, "name": "Orders", "base_url": "http://bo.test",
        "steps": [{"action": "navigate", "args": {"url": "http://bo.test/orders"}}],
    })  # fmt: skip


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_handlers_are_written_changed_and_removed_on_the_scenario_page(
    owner: Any, stranger: Any
) -> None:
    scenario = orders(owner)
    page = logged_in(owner)
    url = f"/scenarios/{scenario.pk}/"
    assert "No handlers" in page.get(url).content.decode()

    shown = page.post(f"{url}handlers", WORDS, follow=True).content.decode()
    assert "Handler &#x27;What&#x27;s new&#x27; saved." in shown
    assert "when dialog &#x27;What&#x27;s new&#x27; covers a step" in shown
    assert "click button &#x27;Got it&#x27;" in shown
    scenario.refresh_from_db()
    assert scenario.handlers == [{"name": "What's new",
                                  "when": scenario.handlers[0]["when"], "steps": [
        {"action": "click", "args": {}, "identity": scenario.handlers[0]["steps"][0]["identity"]}
    ]}]  # fmt: skip
    assert scenario.handlers[0]["when"]["role"] == "dialog"

    # Changed: another name and another button, in its place.
    changed = {**WORDS, "name": "Release notes", "clear_name": "Close", "replaces": "What's new"}
    page.post(f"{url}handlers", changed)
    scenario.refresh_from_db()
    assert [h["name"] for h in scenario.handlers] == ["Release notes"]
    assert scenario.handlers[0]["steps"][0]["identity"]["name"] == "Close"

    # A role off the list is refused, naming the handler; nothing changes, and the form
    # is shown again, open, with what was typed (once it came back empty and closed).
    refused = page.post(f"{url}handlers", {**WORDS, "role": "popup", "clear_name": "Accept all"})
    assert refused.status_code == 400
    bad = refused.content.decode()
    assert "The handler was not saved: handler 1 (&quot;What&#x27;s new&quot;): when: " in bad
    assert '<details class="add-handler" open>' in bad
    for typed in ('name="role" required value="popup"', 'value="Accept all"',
                  'name="looks_name" required placeholder="What\'s new" '
                  'value="What&#x27;s new"'):  # fmt: skip
        assert typed in bad, typed
    scenario.refresh_from_db()
    assert [h["name"] for h in scenario.handlers] == ["Release notes"]

    # Only the owner changes them.
    assert logged_in(stranger).post(f"{url}handlers", WORDS).status_code == 404
    page.post(f"{url}handlers/remove", {"name": "Release notes"})
    scenario.refresh_from_db()
    assert scenario.handlers == []
    gone = page.post(f"{url}handlers/remove", {"name": "Nope"}, follow=True).content.decode()
    assert "The handler was not removed: the scenario has no handler named" in gone


def test_a_change_from_a_page_shown_before_another_tab_changed_the_handler_is_refused(
    owner: Any,
) -> None:
    """Two tabs show the handler; one changes it: the other's "Change" would put back
    what it showed (and undo the first).  It is refused, saying so, and nothing changes."""
    scenario = orders(owner)
    scenario_handlers_set(scenario=scenario, handlers=[WHATS_NEW])
    page = logged_in(owner)
    url = f"/scenarios/{scenario.pk}/"
    shown = re.findall(r'name="shown" value="([0-9a-f]+)"', page.get(url).content.decode())
    assert len(shown) == 1  # the one handler's "Change" form
    first = {**WORDS, "clear_name": "Close", "replaces": "What's new", "shown": shown[0]}
    said = page.post(f"{url}handlers", first, follow=True).content.decode()
    assert "Handler &#x27;What&#x27;s new&#x27; saved." in said
    stale = {**WORDS, "clear_name": "Dismiss", "replaces": "What's new", "shown": shown[0]}
    said = page.post(f"{url}handlers", stale, follow=True).content.decode()
    assert "changed since this page was shown (in another tab?)" in said
    scenario.refresh_from_db()
    assert [h["steps"][0]["identity"]["name"] for h in scenario.handlers] == ["Close"]
    # Shown again, the page's form carries the handler as it is now: that change is saved.
    again = re.findall(r'name="shown" value="([0-9a-f]+)"', page.get(url).content.decode())
    said = page.post(f"{url}handlers", {**stale, "shown": again[0]}, follow=True)
    assert "Handler &#x27;What&#x27;s new&#x27; saved." in said.content.decode()
    scenario.refresh_from_db()
    assert [h["steps"][0]["identity"]["name"] for h in scenario.handlers] == ["Dismiss"]


def test_handlers_travel_in_the_export_and_the_import(owner: Any) -> None:
    scenario = orders(owner)
    scenario_handlers_set(scenario=scenario, handlers=[WHATS_NEW])
    exported = json.loads(logged_in(owner).get(f"/scenarios/{scenario.pk}/export.json").content)
    assert exported["handlers"][0]["name"] == "What's new"
    again = scenario_services.scenario_import(owner=owner, data=exported)
    assert again.handlers == scenario.handlers


@pytest.mark.django_db(transaction=True)
async def test_the_api_reads_and_replaces_them_and_refuses_a_bad_one(
    owner: Any, stranger: Any
) -> None:
    scenario = await sync_to_async(orders)(owner)
    path = f"/api/scenarios/{scenario.pk}/handlers"
    mine = api(await sync_to_async(token_of)(owner))
    assert (await mine.get(path)).json() == []
    put = await mine.client.put(path, {"handlers": [WHATS_NEW]}, content_type="application/json",
                                headers=mine.headers)  # fmt: skip
    assert put.status_code == 200 and put.json()[0]["name"] == "What's new"
    assert (await mine.get(path)).json()[0]["steps"][0]["identity"]["name"] == "Got it"

    bad = {**WHATS_NEW, "steps": [{"action": "navigate", "args": {"url": "http://x.test"}}]}
    answer = await mine.client.put(path, {"handlers": [bad]}, content_type="application/json",
                                   headers=mine.headers)  # fmt: skip
    error = refused(answer, 400, "handler_invalid")
    assert "step 0 (navigate) can't clear an interruption" in error["message"]
    assert (await mine.get(path)).json()[0]["name"] == "What's new"  # unchanged

    theirs = api(await sync_to_async(token_of)(stranger))
    refused(await theirs.get(path), 404, "not_found")


def proposed_replay(owner: Any, scenario: Scenario) -> Run:
    run = scenario_services.replay_run_create(owner=owner, scenario=scenario,
                                              base_url="http://bo.test", params={})  # fmt: skip
    RunEvent.objects.create(run=run, seq=7, type="replay.handler_proposed", data={
        "type": "replay.handler_proposed", "index": 1, "name": "What's new",
        "when": {"role": "dialog", "name": "What's new", "tag": "div"}, "steps": [GOT_IT],
    })  # fmt: skip
    return run


def test_a_proposal_is_kept_from_the_run_page(owner: Any, stranger: Any) -> None:
    scenario = orders(owner)
    run = proposed_replay(owner, scenario)
    page = logged_in(owner)
    shown = page.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="handler-keep" data-kept="[]"' in shown  # the page offers to keep it

    assert logged_in(stranger).post(f"/runs/{run.pk}/handlers", {"seq": 7}).status_code == 404
    wrong = page.post(f"/runs/{run.pk}/handlers", {"seq": 3}, follow=True).content.decode()
    assert "The handler was not kept: run" in wrong and "proposed no handler at event 3" in wrong

    kept = page.post(f"/runs/{run.pk}/handlers", {"seq": 7}, follow=True).content.decode()
    assert "Handler &#x27;What&#x27;s new&#x27; kept: replays of this scenario handle it" in kept
    assert 'data-kept="[&quot;What&#x27;s new&quot;]"' in kept
    scenario.refresh_from_db()
    assert scenario.handlers[0]["when"] == {**scenario.handlers[0]["when"], "role": "dialog",
                                            "name": "What's new", "tag": "div"}  # fmt: skip


@pytest.mark.django_db(transaction=True)
async def test_the_api_lists_and_keeps_proposals(owner: Any) -> None:
    scenario = await sync_to_async(orders)(owner)
    run = await sync_to_async(proposed_replay)(owner, scenario)
    mine = api(await sync_to_async(token_of)(owner))
    listed = (await mine.get(f"/api/runs/{run.pk}/handlers")).json()
    assert listed == [{"seq": 7, "index": 1, "name": "What's new",
                       "steps": ["click button 'Got it'"], "kept": False}]  # fmt: skip
    refused(await mine.post(f"/api/runs/{run.pk}/handlers", {"seq": 8}), 400, "handler_invalid")
    kept = await mine.post(f"/api/runs/{run.pk}/handlers", {"seq": 7, "name": "Release notes"})
    assert kept.status_code == 201 and kept.json()["name"] == "Release notes"
    assert (await mine.get(f"/api/runs/{run.pk}/handlers")).json()[0]["kept"] is False
    assert [h["name"] for h in (await mine.get(f"/api/scenarios/{scenario.pk}/handlers")).json()] \
        == ["Release notes"]  # fmt: skip
