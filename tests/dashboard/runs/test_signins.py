"""Sign-in profiles: a run's signed-in state saved under a name, encrypted at rest, usable
by its owner and those granted it; a replay started with it skips the sign-in, and one
whose profile expired, can't be read or isn't granted fails saying so.  The back office
signs in with a password and a one-time code (${TOTP:…}) that appear nowhere after."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet
from django.test import AsyncClient

from dashboard.models import Run, RunEvent, Scenario, SecretGrant, SigninProfile, Step
from dashboard.runs.runner import runner
from dashboard.runs.signins import (
    SigninRefused,
    signin_open,
    signin_save,
    signin_save_again,
    signin_state_for_run,
)
from dashboard.scenarios import services as scenario_services
from tests.backoffice import PASSWORD, SEED, USER, BackOffice, sign_in_task
from tests.dashboard.conftest import Runs

pytestmark = pytest.mark.django_db

STATE = {
    "cookies": [{"name": "bo_session", "value": "tok-5ecret-cookie", "domain": "127.0.0.1",
                 "path": "/", "expires": -1, "httpOnly": True, "secure": False,
                 "sameSite": "Lax"}],
    "origins": [{"origin": "http://127.0.0.1:9", "localStorage": [
        {"name": "bo.token", "value": "ls-5ecret-token"}]}],
}  # fmt: skip


def _profile(owner: Any, state: dict[str, Any] | None = None) -> SigninProfile:
    return signin_save(owner_id=owner.pk, name="back office", state=state or STATE,
                       site="http://127.0.0.1:9")  # fmt: skip


def test_a_profile_deleted_while_a_run_signs_in_again_stays_deleted(
    owner: Any, stranger: Any
) -> None:
    """A run that signs in again saves its profile again, only while it is there: one its
    owner deleted meanwhile (to end the saved session) was made again by name."""
    profile = _profile(owner)
    fresh = {"cookies": [], "origins": []}
    assert not signin_save_again(profile_id=profile.pk, owner_id=stranger.pk, state=fresh)
    assert signin_save_again(profile_id=profile.pk, owner_id=owner.pk, state=fresh)
    assert signin_open(SigninProfile.objects.get(pk=profile.pk)) == fresh
    SigninProfile.objects.filter(pk=profile.pk).delete()
    assert not signin_save_again(profile_id=profile.pk, owner_id=owner.pk, state=STATE)
    assert not SigninProfile.objects.exists()


def test_a_profile_is_encrypted_at_rest_and_read_back_whole(owner: Any) -> None:
    profile = _profile(owner)
    raw = bytes(SigninProfile.objects.get(pk=profile.pk).state)
    assert b"5ecret" not in raw and b"bo_session" not in raw
    assert signin_open(profile) == STATE
    assert (profile.cookies, profile.origins) == (1, 1)
    again = _profile(owner, {"cookies": [], "origins": []})  # saved over, by name
    assert again.pk == profile.pk and signin_open(again) == {"cookies": [], "origins": []}


def test_a_profile_saved_under_another_key_fails_saying_so(owner: Any, settings: Any) -> None:
    profile = _profile(owner)
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PROFILE_KEYS": (Fernet.generate_key().decode(),)}
    with pytest.raises(SigninRefused, match="'back office' can't be read with this server's"):
        signin_open(profile)
    old = Fernet.generate_key().decode()
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PROFILE_KEYS": (old,)}
    profile = _profile(owner)
    rotated = (Fernet.generate_key().decode(), old)  # a new key first, the old kept
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PROFILE_KEYS": rotated}
    assert signin_open(profile) == STATE


def test_only_its_owner_and_those_granted_start_runs_with_it(owner: Any, stranger: Any) -> None:
    from django.contrib.auth.models import Group

    profile = _profile(owner)
    run = Run.objects.create(owner=stranger, task="x", signin_profile=profile)
    with pytest.raises(SigninRefused, match="not granted"):
        signin_state_for_run(run)
    team = Group.objects.create(name="back office")
    stranger.groups.add(team)
    profile.groups.add(team)
    assert signin_state_for_run(run) == (STATE, "back office")


def test_a_profile_whose_cookies_all_ended_has_expired(owner: Any) -> None:
    ended = {**STATE, "cookies": [{**STATE["cookies"][0], "expires": 1_000_000}]}
    run = Run.objects.create(owner=owner, task="x", signin_profile=_profile(owner, ended))
    with pytest.raises(SigninRefused, match="has expired") as info:
        signin_state_for_run(run)
    assert "Save sign-in" in info.value.hint


def test_the_api_refuses_a_profile_it_does_not_know(owner: Any, client: Any) -> None:
    from dashboard.accounts.services import api_token_create

    _, token = api_token_create(owner=owner, name="t")
    answer = client.post("/api/runs", {"task": "go to /x", "planner": "rules",
                                       "signin_profile": "nope"},
                         content_type="application/json",
                         headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert answer.status_code == 400
    assert answer.json()["error"]["fields"] == {"signin_profile": "no such profile"}


# -- in a real browser, against the back office -----------------------------------------


def orders(url: str) -> dict[str, Any]:
    return {"version": 1, "name": "Orders", "base_url": url, "steps": [
        {"action": "navigate", "args": {"url": f"{url}/orders"}},
        {"action": "expect", "args": {"kind": "text_visible", "text": f"Signed in as {USER}"}},
    ]}  # fmt: skip


async def ended(run_id: int) -> Run:
    async with asyncio.timeout(120):  # a bound on a hang only: it ends when the run does
        while True:
            run = await sync_to_async(Run.objects.get)(pk=run_id)
            if run.status in Run.FINAL:
                return run
            await asyncio.sleep(0.1)


async def paused(run_id: int) -> None:
    async with asyncio.timeout(120):  # a bound on a hang only
        while True:
            run = await sync_to_async(Run.objects.get)(pk=run_id)
            if run.status == Run.Status.PAUSED:
                return
            assert run.status not in Run.FINAL, run.status_reason
            await asyncio.sleep(0.1)


async def replayed(runs: Runs, owner: Any, scenario: Any, url: str, profile: int | None) -> Run:
    """A replay of ``scenario`` by ``owner`` with the sign-in profile ``profile``, ended."""
    run = await sync_to_async(scenario_services.replay_run_create)(
        owner=owner, scenario=scenario, base_url=url, params={}, signin_profile_id=profile
    )
    return await ended((await runs.start(run)).pk)


def _grant(owner: Any) -> None:
    for name in ("BO", "BO_PASSWORD"):
        SecretGrant.objects.create(name=name).users.set([owner])


@pytest.mark.django_db(transaction=True)
async def test_a_saved_sign_in_lets_a_replay_skip_the_login_until_it_expires(
    runs: Runs, owner: Any, office: BackOffice
) -> None:
    await sync_to_async(_grant)(owner)
    run = await runs.start(await runs.create(owner=owner, task=sign_in_task(office.url)))
    await paused(run.pk)
    assert office.sign_ins == 1
    client = AsyncClient()
    await client.aforce_login(owner)
    page = await client.post(f"/runs/{run.pk}/signin", {"name": "back office"}, follow=True)
    assert "Sign-in saved as &#x27;back office&#x27;" in page.content.decode()
    await runner.command(run.pk, "stop")
    await runner.wait(run.pk)
    profile = await SigninProfile.objects.aget(owner=owner, name="back office")
    assert profile.site == office.url and profile.cookies >= 1

    scenario = await sync_to_async(scenario_services.scenario_import)(
        owner=owner, data=orders(office.url)
    )
    replay = await client.post(f"/scenarios/{scenario.pk}/replay",
                               {"base_url": office.url, "signin_profile": profile.pk})  # fmt: skip
    assert replay.status_code == 302
    first = await Run.objects.filter(kind=Run.Kind.REPLAY).alatest("pk")
    assert first.signin_profile_id == profile.pk
    first = await ended((await runs.start(first)).pk)
    assert first.status == Run.Status.SUCCEEDED, first.status_reason
    assert office.sign_ins == 1  # no sign-in again: the profile's session was used

    # Without the profile, the same replay meets the sign-in page and says so.
    plain = await replayed(runs, owner, scenario, office.url, None)
    assert plain.status == Run.Status.FAILED
    assert "the page asks to sign in: start the replay with a sign-in profile" in (
        plain.status_reason
    )

    # The site ended the session: the profile's replay fails, naming it and what to do.
    office.expire_sessions()
    late = await replayed(runs, owner, scenario, office.url, profile.pk)
    assert late.status == Run.Status.FAILED
    assert "the sign-in profile 'back office' has expired" in late.status_reason
    assert "Save sign-in" in late.status_reason

    # The code and the password typed appear in no step, event or status.
    stored = json.dumps(await sync_to_async(lambda: [
        list(Step.objects.values()), list(RunEvent.objects.values_list("data", flat=True)),
        list(Run.objects.values("status_reason", "summary", "task")),
    ])(), default=str)  # fmt: skip
    assert office.codes and office.codes[0] not in stored
    assert PASSWORD not in stored and SEED not in stored and "${TOTP:BO}" in stored


@pytest.mark.django_db(transaction=True)
async def test_a_run_with_a_profile_it_may_not_use_fails_before_any_page(
    runs: Runs, owner: Any, stranger: Any, office: BackOffice
) -> None:
    profile = await sync_to_async(_profile)(owner)
    scenario = await sync_to_async(scenario_services.scenario_import)(
        owner=stranger, data=orders(office.url)
    )
    run = await replayed(runs, stranger, scenario, office.url, profile.pk)
    assert run.status == Run.Status.FAILED and "not granted" in run.status_reason
    assert office.sign_ins == 0


def test_batch_rows_and_schedule_firings_start_with_their_profile(owner: Any) -> None:
    from django.utils import timezone

    from dashboard.jobs import schedules
    from dashboard.jobs import services as job_services
    from dashboard.models import Schedule

    profile = _profile(owner)
    document = {**orders("http://127.0.0.1:9"), "params": {"who": {"default": "ada"}}}
    scenario = scenario_services.scenario_import(owner=owner, data=document)
    batch = job_services.batch_create(owner=owner, scenario=scenario, rows=[{"who": "a"}],
                                      base_url="", concurrency=1,
                                      signin_profile_id=profile.pk)  # fmt: skip
    made = job_services.batch_advance(batch_id=batch.pk)
    assert [Run.objects.get(pk=pk).signin_profile_id for pk in made] == [profile.pk]
    schedule = schedules.save(Schedule(owner=owner, scenario=scenario), cron="* * * * *",
                              timezone="UTC", signin_profile_id=profile.pk)  # fmt: skip
    firing = schedules.fire(schedule.pk, timezone.now() + timezone.timedelta(minutes=2))
    assert firing is not None and firing.run is not None
    assert firing.run.signin_profile_id == profile.pk


def test_a_replay_that_signs_in_itself_is_not_told_to_use_a_profile() -> None:
    from automation.recording.scenario import Scenario as Document
    from dashboard.runs.live import _signed_out_hint

    plain = Document.from_dict(orders("http://127.0.0.1:9"))
    signs_in = Document.from_dict({**orders("http://127.0.0.1:9"), "steps": [
        {"action": "fill", "args": {"value": "${SECRET:BO_PASSWORD}"},
         "identity": {"tag": "input", "selectors": ["#pw"]}},
    ]})  # fmt: skip
    assert "start the replay with a sign-in profile" in _signed_out_hint(plain, None)
    assert _signed_out_hint(signs_in, None) == ""
    assert "'shop' has expired" in _signed_out_hint(signs_in, ({}, "shop"))
    calls = Document.from_dict({**orders("http://127.0.0.1:9"), "callees": {
        "Orders": signs_in.to_dict()}, "name": "Calls", "steps": [
            {"action": "call", "args": {"scenario": "Orders"}}]})  # fmt: skip
    assert _signed_out_hint(calls, None) == ""  # the scenario it calls signs in
    brings = Document.from_dict({**plain.to_dict(), "login_scenario": "Orders", "callees": {
        "Orders": signs_in.to_dict()}, "name": "Brings"})  # fmt: skip
    assert "start the replay with a sign-in profile" in _signed_out_hint(brings, None)


@pytest.mark.django_db(transaction=True)
async def test_a_replay_meeting_the_sign_in_page_runs_its_login_scenario_and_saves_it(
    runs: Runs, owner: Any, stranger: Any, office: BackOffice
) -> None:
    """The login scenario chosen on the scenario's page travels with its export: another
    person imports the file (the import page), and their replay that meets the sign-in
    page signs in with the login scenario the file brought, stored as theirs."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.automation.recording.test_totp_replay import sign_in

    await sync_to_async(_grant)(stranger)
    login = await sync_to_async(scenario_services.scenario_import)(
        owner=owner, data=sign_in(office.url).to_dict()
    )
    mine = await sync_to_async(scenario_services.scenario_import)(
        owner=owner, data=orders(office.url)
    )
    client = AsyncClient()
    await client.aforce_login(owner)
    chosen = await client.post(f"/scenarios/{mine.pk}/login", {"login_scenario": login.pk})
    assert chosen.status_code == 302
    file = json.loads((await client.get(f"/scenarios/{mine.pk}/export.json")).content)
    assert file["login_scenario"] == "Sign in" and list(file["callees"]) == ["Sign in"]

    await client.aforce_login(stranger)
    upload = SimpleUploadedFile("orders.json", json.dumps(file).encode(), "application/json")
    imported = await client.post("/scenarios/import", {"file": upload})
    assert imported.status_code == 302, imported.content.decode()
    scenario = await Scenario.objects.select_related("login_scenario").aget(
        owner=stranger, name="Orders"
    )
    assert scenario.login_scenario is not None
    assert (scenario.login_scenario.name, scenario.login_scenario.owner_id) == (
        "Sign in", stranger.pk
    )  # fmt: skip
    profile = await sync_to_async(_profile)(stranger)  # a session the site never made

    run = await replayed(runs, stranger, scenario, office.url, profile.pk)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    assert office.sign_ins == 1
    notes = [e["text"] for e in await sync_to_async(list)(
        run.events.filter(type="observation").values_list("data", flat=True)
    )]  # fmt: skip
    assert notes == ["signed in again with the login scenario 'Sign in'; the sign-in profile "
                     "'back office' was saved again"]  # fmt: skip

    again = await replayed(runs, stranger, scenario, office.url, profile.pk)
    assert again.status == Run.Status.SUCCEEDED, again.status_reason
    assert office.sign_ins == 1  # the profile saved again signs in by itself
