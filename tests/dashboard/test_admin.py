"""The admin: every model's list (searched and filtered) and change page; what the
dashboard recorded (runs, steps, events, batches, firings) read-only, deleted only when
nothing still works on it; URL rules that the new-run form obeys as soon as they are
saved, and that its refusals link to."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from dashboard.models import (
    Batch,
    BatchRow,
    IdentityHeal,
    LLMProfile,
    Run,
    RunEvent,
    Scenario,
    ScenarioStep,
    Schedule,
    ScheduleFiring,
    Step,
    UrlRule,
)
from dashboard.runs import services, views

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(staff: Any) -> Client:
    """A staff member (not a superuser) with every permission of the dashboard's models."""
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="dashboard"))
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def world(owner: Any) -> dict[str, Any]:
    """One row of every model, each findable by a word of its own."""
    run = services.run_create(owner=owner, task="findme order export", start_url="",
                              planner="rules")  # fmt: skip
    services.run_set_status(run_id=run.pk, status="succeeded", reason="all steps done")
    step = services.step_record(
        run_id=run.pk, data={"index": 0, "action": "click", "role": "button", "name": "Export"}
    )
    event = services.run_event_append(
        run_id=run.pk, seq=1, type="run.started", data={"type": "run.started", "task": "findme"}
    )
    scenario = Scenario.objects.create(
        owner=owner, name="findme scenario", base_url="https://x.test"
    )
    scenario_step = ScenarioStep.objects.create(
        scenario=scenario, index=0, action="click", role="button", name="Export",
        last_status="passed", last_strategy="role_name", last_score=1.0,
    )  # fmt: skip
    heal = IdentityHeal.objects.create(
        step=scenario_step, run=run, status=IdentityHeal.Status.PROPOSED, strategy="aria_label",
        score=0.8, before={"role": "button", "name": "Export"}, after={"name": "Export all"},
    )  # fmt: skip
    profile = LLMProfile.objects.create(name="findme profile", model="m-1")
    rule = UrlRule.objects.create(domain="findme.example", kind=UrlRule.Kind.BLOCK)
    return {
        "run": run, "step": step, "runevent": event, "scenario": scenario,
        "scenariostep": scenario_step, "identityheal": heal, "llmprofile": profile,
        "urlrule": rule,
    }  # fmt: skip


# model name -> (a search, a filter parameter that keeps the fixture's row)
CHANGELISTS = {
    "run": ("q=findme", "status__exact=succeeded&kind__exact=agent"),
    "step": ("q=Export", "ok__exact=1&action=click"),
    "runevent": ("q=run.started", "type=run.started"),
    "scenario": ("q=findme", f"updated_at__year={timezone.now().year}"),
    "scenariostep": ("q=findme", "last_status=passed"),
    "identityheal": ("q=findme", "status__exact=proposed"),
    "llmprofile": ("q=findme", "provider__exact=openai"),
    "urlrule": ("q=findme", "kind__exact=block&enabled__exact=1"),
}


def test_every_changelist_searches_and_filters(staff_client: Client, world: dict[str, Any]) -> None:
    for model, (search, filters) in CHANGELISTS.items():
        for query in ("", search, filters, f"{search}&{filters}"):
            url = f"/admin/dashboard/{model}/?{query}"
            response = staff_client.get(url)
            # An unknown filter parameter would redirect to ?e=1 instead.
            assert response.status_code == 200, url
            assert response.context["cl"].result_count == 1, url


def test_a_search_by_run_id_finds_its_events_and_steps(
    staff_client: Client, world: dict[str, Any], owner: Any
) -> None:
    other = services.run_create(owner=owner, task="other", start_url="", planner="rules")
    services.run_event_append(run_id=other.pk, seq=1, type="run.started", data={})
    run_id = world["run"].pk
    for model in ("runevent", "step", "run"):
        response = staff_client.get(f"/admin/dashboard/{model}/?q={run_id}")
        assert response.status_code == 200
        assert response.context["cl"].result_count == 1, model


def test_every_change_page_opens(staff_client: Client, world: dict[str, Any]) -> None:
    for model, obj in world.items():
        url = f"/admin/dashboard/{model}/{obj.pk}/change/"
        assert staff_client.get(url).status_code == 200, url


def test_events_are_shown_pretty_and_cannot_be_edited(
    staff_client: Client, world: dict[str, Any]
) -> None:
    event = world["runevent"]
    page = staff_client.get(f"/admin/dashboard/runevent/{event.pk}/change/").content.decode()
    assert '<pre class="json">{\n  &quot;task&quot;: &quot;findme&quot;' in page
    assert 'name="_save"' not in page  # view only
    assert staff_client.get("/admin/dashboard/runevent/add/").status_code == 403
    response = staff_client.post(
        f"/admin/dashboard/runevent/{event.pk}/change/",
        {"run": event.run_id, "seq": 9, "type": "forged", "data": "{}"},
    )
    assert response.status_code == 403
    event.refresh_from_db()
    assert (event.seq, event.type) == (1, "run.started")


def test_the_admin_is_closed_to_people_who_are_not_staff(owner: Any) -> None:
    client = Client()
    client.force_login(owner)
    for model in CHANGELISTS:
        response = client.get(f"/admin/dashboard/{model}/")
        assert response.status_code == 302, model
        assert response["Location"].startswith("/admin/login/")


# -- URL rules ----------------------------------------------------------------------------


def add_rule(client: Client, domain: str, kind: str) -> Any:
    return client.post(
        "/admin/dashboard/urlrule/add/",
        {"domain": domain, "kind": kind, "enabled": "on", "note": ""},
    )


def new_run(client: Client, url: str) -> Any:
    return client.post("/runs/new", {"start_url": url, "task": "look", "planner": "rules"})


@pytest.mark.parametrize("domain", ["not a domain", "http://evil.example/", "evil..example", ""])
def test_the_admin_refuses_a_rule_with_a_bad_domain(staff_client: Client, domain: str) -> None:
    response = add_rule(staff_client, domain, "block")
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["domain"]
    assert not UrlRule.objects.exists()


def test_the_admin_stores_a_rule_normalized(staff_client: Client) -> None:
    response = add_rule(staff_client, " *.Evil.Example. ", "block")
    assert response.status_code == 302
    assert UrlRule.objects.get().domain == "evil.example"
    again = add_rule(staff_client, "EVIL.example", "block")
    assert again.status_code == 200  # the same rule twice
    assert UrlRule.objects.count() == 1


def test_a_block_rule_from_the_admin_refuses_new_runs_on_that_domain(
    staff_client: Client, owner: Any
) -> None:
    person = Client()
    person.force_login(owner)
    assert add_rule(staff_client, "evil.example", "block").status_code == 302
    response = new_run(person, "https://shop.evil.example/cart")
    assert response.status_code == 400
    assert "shop.evil.example is on the blocked list" in response.content.decode()
    assert not Run.objects.exists()

    rule = UrlRule.objects.get()
    staff_client.post(
        f"/admin/dashboard/urlrule/{rule.pk}/change/",
        {"domain": "evil.example", "kind": "block", "note": "off for now"},  # enabled unticked
    )
    assert not UrlRule.objects.get().enabled
    assert new_run(person, "https://shop.evil.example/cart").status_code == 302


def test_an_allow_rule_from_the_admin_limits_runs_to_its_domain(
    staff_client: Client, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    woken: list[str] = []

    async def wake() -> None:  # the form is under test, not the worker
        woken.append("wake")

    monkeypatch.setattr(views, "wake", wake)
    person = Client()
    person.force_login(owner)
    assert add_rule(staff_client, "good.example", "allow").status_code == 302

    response = new_run(person, "https://other.example/")
    assert response.status_code == 400
    assert "other.example is not on the allowed list" in response.content.decode()
    assert new_run(person, "https://app.good.example/start").status_code == 302
    assert [r.start_url for r in Run.objects.all()] == ["https://app.good.example/start"]
    assert Run.objects.get().status == Run.Status.QUEUED and woken == ["wake"]  # once


def test_a_block_rule_wins_over_an_allow_rule(staff_client: Client, owner: Any) -> None:
    person = Client()
    person.force_login(owner)
    add_rule(staff_client, "good.example", "allow")
    add_rule(staff_client, "admin.good.example", "block")
    response = new_run(person, "https://admin.good.example/")
    assert response.status_code == 400
    assert "is on the blocked list" in response.content.decode()


def test_changelist_queries_do_not_grow_with_rows(
    staff_client: Client, world: dict[str, Any], owner: Any, django_assert_max_num_queries: Any
) -> None:
    for i in range(1, 6):
        run = services.run_create(owner=owner, task=f"more {i}", start_url="", planner="rules")
        services.step_record(run_id=run.pk, data={"index": 0, "action": "click"})
        services.run_event_append(run_id=run.pk, seq=1, type="run.started", data={})
    for model in ("run", "step", "runevent", "scenariostep", "identityheal", "scenario"):
        with django_assert_max_num_queries(12):
            assert staff_client.get(f"/admin/dashboard/{model}/").status_code == 200


# -- URL rules people get right -------------------------------------------------------------


def test_a_new_url_rule_is_an_allow_rule_and_says_that_host_port_works(
    staff_client: Client,
) -> None:
    page = staff_client.get("/admin/dashboard/urlrule/add/")
    assert page.context["adminform"].form.initial["kind"] == "allow"
    html = page.content.decode()
    assert '<option value="allow" selected>' in html
    assert "host:port for that port only, e.g. intranet.example:8443 or 127.0.0.1:8000" in html
    # A link may still ask for a block rule.
    block = staff_client.get("/admin/dashboard/urlrule/add/?kind=block&domain=x.example")
    assert block.context["adminform"].form.initial == {"kind": "block", "domain": "x.example"}


def test_a_refused_address_links_to_the_rule_that_allows_it(
    staff_client: Client, owner: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new-run form's refusal of a private address points to the URL rules page (which
    applies at once), with the rule filled in, not to variables that need a restart."""
    settings.TABWRIGHT = {**settings.TABWRIGHT, "BLOCK_PRIVATE_ADDRESSES": True}

    async def wake() -> None:
        pass

    monkeypatch.setattr(views, "wake", wake)
    person = Client()
    person.force_login(owner)
    refused = new_run(person, "http://127.0.0.1:8000/app/")
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "127.0.0.1 is a loopback address. An admin can allow it" in html
    link = "/admin/dashboard/urlrule/add/?kind=allow&amp;domain=127.0.0.1%3A8000"
    assert (
        "An admin can allow it with an Allow rule for <code>127.0.0.1:8000</code> on the "
        f'<a href="{link}">URL rules</a> page'
    ) in html
    assert "TABWRIGHT_" not in html

    # The admin follows the link, saves the rule as it is filled in, and the run starts.
    form = staff_client.get(link.replace("&amp;", "&")).context["adminform"].form
    assert form.initial == {"kind": "allow", "domain": "127.0.0.1:8000"}
    assert add_rule(staff_client, form.initial["domain"], form.initial["kind"]).status_code == 302
    assert new_run(person, "http://127.0.0.1:8000/app/").status_code == 302


def test_a_url_on_the_blocked_list_links_to_the_block_rules(
    staff_client: Client, owner: Any
) -> None:
    add_rule(staff_client, "evil.example", "block")
    person = Client()
    person.force_login(owner)
    html = new_run(person, "https://evil.example/").content.decode()
    assert (
        'An admin can turn that rule off on the <a href="/admin/dashboard/urlrule/'
        '?kind__exact=block">URL rules</a> page.'
    ) in html


# -- records are read, not written -----------------------------------------------------------


def ended_run(owner: Any, task: str = "ended") -> Run:
    run = services.run_create(owner=owner, task=task, start_url="", planner="rules")
    services.run_set_status(run_id=run.pk, status="succeeded")
    services.step_record(run_id=run.pk, data={"index": 0, "action": "click"})
    services.run_event_append(run_id=run.pk, seq=1, type="run.started", data={})
    return Run.objects.get(pk=run.pk)


def test_runs_steps_and_events_are_never_added_or_edited_here(
    staff_client: Client, owner: Any
) -> None:
    run = ended_run(owner)
    step, event = run.steps.get(), run.events.get()
    for model in ("run", "step", "runevent", "batch"):
        assert staff_client.get(f"/admin/dashboard/{model}/add/").status_code == 403, model
        assert (
            f'href="/admin/dashboard/{model}/add/"'
            not in staff_client.get(f"/admin/dashboard/{model}/").content.decode()
        )
    forged = {"status": "running", "holder": "me:1:1", "prompt_tokens": 9, "task": "x",
              "kind": "agent", "owner": owner.pk, "output": "{}"}  # fmt: skip
    for url, data in [
        (f"/admin/dashboard/run/{run.pk}/change/", forged),
        (f"/admin/dashboard/step/{step.pk}/change/", {"run": run.pk, "index": 5, "action": "x"}),
        (f"/admin/dashboard/runevent/{event.pk}/change/", {"seq": 9, "type": "forged"}),
    ]:
        page = staff_client.get(url)
        assert page.status_code == 200 and 'name="_save"' not in page.content.decode(), url
        assert staff_client.post(url, data).status_code == 403, url
    run.refresh_from_db()
    assert (run.status, run.holder, run.prompt_tokens) == ("succeeded", "", 0)
    assert run.steps.get().action == "click" and run.events.get().type == "run.started"
    # The run's page shows its steps: none to add, change or remove.
    assert not_writable(staff_client.get(f"/admin/dashboard/run/{run.pk}/change/"))


def not_writable(page: Any) -> bool:
    """The change page's inlines (rows shown with their parent) take no edits."""
    inlines = page.context["inline_admin_formsets"]
    return bool(inlines) and not any(
        i.has_add_permission or i.has_change_permission or i.has_delete_permission for i in inlines
    )


def post(client: Client, url: str, data: dict[str, Any] | None = None) -> int:
    return client.post(url, data or {"post": "yes"}).status_code


def test_an_ended_run_is_deleted_with_its_steps_and_events(
    staff_client: Client, owner: Any
) -> None:
    run = ended_run(owner)
    confirm = staff_client.get(f"/admin/dashboard/run/{run.pk}/delete/")
    assert confirm.status_code == 200 and confirm.context["perms_lacking"] == set()
    gone = staff_client.post(f"/admin/dashboard/run/{run.pk}/delete/", {"post": "yes"})
    assert gone.status_code == 302
    assert not Run.objects.exists() and not Step.objects.exists()
    assert not RunEvent.objects.exists()


def test_a_run_at_work_is_not_deleted_alone_or_among_others(
    staff_client: Client, owner: Any
) -> None:
    done = ended_run(owner, "done")
    live = services.run_create(owner=owner, task="live", start_url="", planner="rules")
    services.run_set_status(run_id=live.pk, status="paused")
    kept = ended_run(owner, "tab open")
    services.run_set_session(run_id=kept.pk, session="open")
    for run in (live, kept):
        assert staff_client.get(f"/admin/dashboard/run/{run.pk}/delete/").status_code == 403
        assert post(staff_client, f"/admin/dashboard/run/{run.pk}/delete/") == 403
    picked = {"action": "delete_selected", "_selected_action": [done.pk, live.pk, kept.pk]}
    page = staff_client.post("/admin/dashboard/run/", {**picked, "post": "yes"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "Cannot delete" in html and "still paused; stop it first" in html
    assert "its tab is still open; close it first" in html
    assert Run.objects.count() == 3  # none of them, the ended one included


def test_the_current_run_of_a_running_batch_row_is_kept(staff_client: Client, owner: Any) -> None:
    run = ended_run(owner)
    scenario = Scenario.objects.create(owner=owner, name="s")
    batch = Batch.objects.create(owner=owner, scenario=scenario)
    BatchRow.objects.create(batch=batch, index=1, run=run, attempts=1)
    assert staff_client.get(f"/admin/dashboard/run/{run.pk}/delete/").status_code == 403
    assert staff_client.get(f"/admin/dashboard/batch/{batch.pk}/delete/").status_code == 403
    page = staff_client.get(f"/admin/dashboard/batch/{batch.pk}/change/")
    assert 'name="_save"' not in page.content.decode() and not_writable(page)
    edit = {"status": "done", "concurrency": 9}
    assert post(staff_client, f"/admin/dashboard/batch/{batch.pk}/change/", edit) == 403

    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.DONE)
    assert post(staff_client, f"/admin/dashboard/batch/{batch.pk}/delete/") == 302
    assert not BatchRow.objects.exists() and Run.objects.filter(pk=run.pk).exists()
    assert post(staff_client, f"/admin/dashboard/run/{run.pk}/delete/") == 302


def test_a_step_or_event_is_never_deleted_alone(staff_client: Client, owner: Any) -> None:
    run = ended_run(owner)
    for model, obj in (("step", run.steps.get()), ("runevent", run.events.get())):
        assert staff_client.get(f"/admin/dashboard/{model}/{obj.pk}/delete/").status_code == 403
        listing = staff_client.get(f"/admin/dashboard/{model}/")
        assert listing.context["action_form"] is None  # no action at all: no bulk delete
        chosen = {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"}
        staff_client.post(f"/admin/dashboard/{model}/", chosen)
    assert run.steps.exists() and run.events.exists()


def test_a_schedules_firings_are_shown_not_written(staff_client: Client, owner: Any) -> None:
    scenario = Scenario.objects.create(owner=owner, name="s")
    schedule = Schedule.objects.create(owner=owner, scenario=scenario, cron="0 7 * * *")
    ScheduleFiring.objects.create(schedule=schedule, due_at=timezone.now(), outcome="ok")
    assert not_writable(staff_client.get(f"/admin/dashboard/schedule/{schedule.pk}/change/"))


# -- an LLM profile's test -----------------------------------------------------------------


def test_a_profile_is_tested_before_any_run_with_one_tiny_request(
    staff_client: Client, llm_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakellm import Reply

    monkeypatch.setenv("TESTPROFILE_API_KEY", "sk-test-profile-key")
    good = LLMProfile.objects.create(
        name="scripted", base_url=llm_server.base_url, model="test-model",
        api_key_env="TESTPROFILE_API_KEY",
    )  # fmt: skip
    down = LLMProfile.objects.create(name="down", base_url="http://127.0.0.1:9/v1", model="m")
    keyless = LLMProfile.objects.create(
        name="keyless", base_url=llm_server.base_url, model="m", api_key_env="UNSETPROFILE_API_KEY"
    )
    llm_server.script("OK", Reply(status=401, text="bad key"))
    url = "/admin/dashboard/llmprofile/"

    def test(*profiles: LLMProfile) -> list[str]:
        answer = staff_client.post(url, {
            "action": "test_profiles", "_selected_action": [p.pk for p in profiles],
        }, follow=True)  # fmt: skip
        assert answer.status_code == 200
        return [str(m) for m in answer.context["messages"]]

    [said] = test(good)
    assert said.startswith("scripted: test-model answered in ") and said.endswith(": 'OK'"), said
    assert len(llm_server.requests) == 1  # one tiny request, with the profile's key
    assert llm_server.headers[0]["authorization"] == "Bearer sk-test-profile-key"
    assert "OK" in str(llm_server.requests[0]["messages"])
    [refused] = test(good)
    assert refused.startswith("scripted: failed: ") and "401" in refused, refused
    assert len(llm_server.requests) == 2  # not retried
    failed = test(down, keyless)
    assert failed[0].startswith("down: failed: ") and "127.0.0.1:9" in failed[0], failed
    assert failed[1].startswith("keyless: failed: ") and "UNSETPROFILE_API_KEY" in failed[1]
    assert len(llm_server.requests) == 2  # a profile without its key sends nothing
