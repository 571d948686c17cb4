"""What the run page and the new-run form need from the server: the task field that follows
the planner, profiles whose key can't be read, the model's waits and retries stamped and
relayed, and healed steps listed in the order they happened."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from automation.events import LLMMessage, LLMRetry, LLMToken, LLMWaiting, RunStarted
from automation.secrets import RedactingSink, Secrets
from dashboard.models import IdentityHeal, LLMProfile, Run, Scenario
from dashboard.runs import services as run_services
from dashboard.runs.forms import TASK_PLACEHOLDERS
from dashboard.runs.sink import DashboardSink
from dashboard.runs.views import DEMO_TASK, DEMO_TASK_LLM
from dashboard.scenarios import services as scenario_services
from tests.dashboard.conftest import OpenSocket
from tests.dashboard.sockets import ANSWER_S
from tests.dashboard.test_views import initial_events, logged_in

UNSET_KEY = "TEST_RUN_PAGE_UNSET_API_KEY"
SET_KEY = "TEST_RUN_PAGE_SET_API_KEY"


def profile(name: str, **fields: Any) -> LLMProfile:
    values: dict[str, Any] = {"base_url": "http://127.0.0.1:11434/v1", "model": "m", **fields}
    return run_services.llm_profile_save(profile=LLMProfile(name=name, **values))


def task_area(html: str) -> str:
    match = re.search(r'<textarea name="task"[^>]*>', html)
    assert match, "no task field on the page"
    return match.group(0)


def hint(html: str, kind: str) -> str:
    match = re.search(rf'<p class="hint" id="task-hint-{kind}"[^>]*>', html)
    assert match, f"no {kind} hint on the page"
    return match.group(0)


def placeholder(area: str) -> str:
    match = re.search(r'placeholder="([^"]*)"', area)
    assert match, area
    return match.group(1).replace("&#x27;", "'").replace("&quot;", '"')


def option(html: str, value: str) -> str:
    match = re.search(rf'<option value="{re.escape(value)}"[^>]*>([^<]*)</option>', html)
    assert match, f"no option {value}"
    return match.group(1)


# -- the new-run form follows the planner --------------------------------------------------


@pytest.mark.django_db
def test_the_rule_planner_asks_for_commands(owner: Any, settings: Any) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PLANNER": "rules"}
    html = logged_in(owner).get("/").content.decode()
    area = task_area(html)
    assert "One command per line" in placeholder(area)
    assert 'aria-describedby="task-hint-rules"' in area
    assert " hidden" not in hint(html, "rules") and " hidden" in hint(html, "llm")
    # Both texts ride along, for the page to swap when the choice changes.
    assert "data-placeholder-llm=" in area and "data-placeholder-rules=" in area


@pytest.mark.django_db
def test_a_default_llm_profile_asks_for_the_task_in_plain_words(owner: Any) -> None:
    profile("claude", provider="anthropic", is_default=True)
    html = logged_in(owner).get("/").content.decode()
    area = task_area(html)
    assert placeholder(area) == TASK_PLACEHOLDERS["llm"]
    assert "go to" not in placeholder(area) and "In plain words" in placeholder(area)
    assert 'aria-describedby="task-hint-llm"' in area
    assert " hidden" in hint(html, "rules") and " hidden" not in hint(html, "llm")


@pytest.mark.django_db
def test_a_refused_form_keeps_the_placeholder_of_the_planner_chosen(owner: Any) -> None:
    profile("local", is_default=True)
    response = logged_in(owner).post("/runs/new", {"task": "", "planner": "rules"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "One command per line" in placeholder(task_area(html))
    assert " hidden" not in hint(html, "rules")


@pytest.mark.django_db
def test_the_demo_task_is_written_for_the_planner_preselected(owner: Any, settings: Any) -> None:
    settings.DEBUG = True
    client = logged_in(owner)
    assert client.get("/").context["form"].initial["task"] == DEMO_TASK
    profile("local", is_default=True)
    response = client.get("/")
    assert response.context["form"].initial["task"] == DEMO_TASK_LLM
    area = task_area(response.content.decode())
    assert "data-demo-rules=" in area and "data-demo-llm=" in area


# -- profiles whose key can't be read ------------------------------------------------------


@pytest.mark.django_db
def test_a_profile_whose_key_variable_is_unset_says_so_in_the_choice(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(UNSET_KEY, raising=False)
    monkeypatch.setenv(SET_KEY, "sk-set")
    keyless = profile("keyless", api_key_env=UNSET_KEY)
    keyed = profile("keyed", api_key_env=SET_KEY)
    local = profile("local")  # sends no key at all
    refused = profile("old row")
    # A row stored before the rule on key variables (the model's validation refuses it now).
    LLMProfile.objects.filter(pk=refused.pk).update(api_key_env="AWS_SECRET_ACCESS_KEY")

    html = logged_in(owner).get("/").content.decode()
    assert option(html, f"profile:{keyless.pk}") == (
        f"keyless (OpenAI-compatible · m) — key variable {UNSET_KEY} is not set"
    )
    assert option(html, f"profile:{keyed.pk}") == "keyed (OpenAI-compatible · m)"
    assert option(html, f"profile:{local.pk}") == "local (OpenAI-compatible · m)"
    assert option(html, f"profile:{refused.pk}").endswith(
        "— key variable AWS_SECRET_ACCESS_KEY may not be used"
    )
    assert "sk-set" not in html


@pytest.mark.django_db
def test_a_run_is_not_started_with_a_profile_whose_key_is_unset(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(UNSET_KEY, raising=False)
    keyless = profile("keyless", api_key_env=UNSET_KEY)
    response = logged_in(owner).post(
        "/runs/new", {"task": "Sign up as Ada", "planner": f"profile:{keyless.pk}"}
    )
    assert response.status_code == 400
    errors = response.context["form"].errors["planner"]
    assert errors == [
        f"keyless can't start a run: its key variable {UNSET_KEY} is not set on this "
        "server. Choose another planner, or ask an admin to fix the profile."
    ]
    assert not Run.objects.exists()
    # What the person typed stays, with the placeholder of the planner they chose.
    html = response.content.decode()
    assert "Sign up as Ada" in html and "In plain words" in placeholder(task_area(html))


# -- the model's waits, retries and answers: stamped, stored, relayed ---------------------


@pytest.mark.django_db(transaction=True)
async def test_waits_retries_and_answers_are_stamped_and_stored_through_the_runs_exit(
    owner: Any,
) -> None:
    run = await sync_to_async(run_services.run_create)(owner=owner, task="t", start_url="")
    # The runner's own exit: the run's secrets, then the DashboardSink.
    secrets = Secrets(allowed=None)
    secrets.remember("PASSWORD", "hunter2-secret")
    sink = RedactingSink(DashboardSink(run.pk, 0), secrets)
    before_ms = int(time.time() * 1000)
    await sink.emit(RunStarted("t", "", "openai"))
    await sink.emit(LLMWaiting(1, 1))
    await sink.emit(LLMToken(1, "I will"))
    await sink.emit(LLMRetry(1, 1, 3, 1300, "HTTP 500 hunter2-secret", discarded_chars=6))
    await sink.emit(LLMWaiting(1, 2))
    usage = {"prompt_tokens": 120, "completion_tokens": 9}
    await sink.emit(LLMMessage(1, '<action>{"action": "click", "ref": "e5"}</action>', usage))
    after_ms = int(time.time() * 1000)

    events = await sync_to_async(lambda: initial_events(run_page(owner, run.pk)))()
    kinds = [e["type"] for e in events]
    assert kinds == ["run.started", "llm.waiting", "llm.retry", "llm.waiting", "llm.message"]
    waiting, retry, again, message = events[1:]
    assert (waiting["round"], waiting["attempt"], again["attempt"]) == (1, 1, 2)
    assert retry == {
        "type": "llm.retry", "round": 1, "retry": 1, "retries": 3, "wait_ms": 1300,
        "reason": "HTTP 500 ${SECRET:PASSWORD}", "discarded_chars": 6,
        "at_ms": retry["at_ms"], "seq": 3, "stretch": 1,
    }  # fmt: skip
    stamps = [e["at_ms"] for e in events[1:]]
    assert before_ms <= stamps[0] <= stamps[1] <= stamps[2] <= stamps[3] <= after_ms
    assert "at_ms" not in events[0]  # only the model's turn is timed
    assert message["usage"] == usage
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.prompt_tokens, stored.completion_tokens) == (120, 9)


def run_page(owner: Any, run_id: int) -> str:
    return logged_in(owner).get(f"/runs/{run_id}/").content.decode()


@pytest.mark.django_db
def test_the_run_page_carries_the_servers_clock(owner: Any) -> None:
    run = run_services.run_create(owner=owner, task="t", start_url="", planner="rules")
    before_ms = int(time.time() * 1000)
    html = run_page(owner, run.pk)
    now_ms = int(re.search(r'data-now-ms="(\d+)"', html).group(1))
    assert before_ms <= now_ms <= int(time.time() * 1000)


@pytest.mark.django_db(transaction=True)
async def test_a_page_hears_the_wait_and_the_retry_live_with_their_stamps(
    owner: Any, open_socket: OpenSocket
) -> None:
    run = await sync_to_async(run_services.run_create)(owner=owner, task="t", start_url="")
    comm, connected, _ = await open_socket(run.pk, owner)
    assert connected
    assert (await comm.receive_json_from(timeout=ANSWER_S))["type"] == "state"
    sink = DashboardSink(run.pk, 0)
    await sink.emit(LLMWaiting(1, 1))
    await sink.emit(LLMRetry(1, 1, 4, 1300, "HTTP 500"))
    waiting = await comm.receive_json_from(timeout=ANSWER_S)
    retry = await comm.receive_json_from(timeout=ANSWER_S)
    assert (waiting["type"], waiting["seq"], waiting["attempt"]) == ("llm.waiting", 1, 1)
    assert (retry["type"], retry["seq"], retry["retries"]) == ("llm.retry", 2, 4)
    assert waiting["at_ms"] <= retry["at_ms"]


# -- healed steps in the order they happened ------------------------------------------------


@pytest.mark.django_db
def test_healed_steps_are_listed_in_the_order_they_were_decided(owner: Any) -> None:
    scenario = scenario_services.scenario_import(
        owner=owner,
        data={
            "format": "tabwright.scenario", "version": 1, "name": "Heals",
            "base_url": "http://shop.test",
            "steps": [
                {"action": "navigate", "args": {"url": "http://shop.test/a"}},
                *[{"action": "click", "args": {}, "identity": {"role": "button", "name": n}}
                  for n in ("One", "Two", "Three")],
            ],
        },
    )  # fmt: skip
    steps = {s.index: s for s in Scenario.objects.get(pk=scenario.pk).steps.all()}
    start = timezone.now() - timedelta(hours=3)
    # (step, created, decided): step 3's proposal came first but was approved last.
    for index, created_min, decided_min, status in [
        (3, 0, 90, IdentityHeal.Status.APPLIED),
        (1, 10, 10, IdentityHeal.Status.APPLIED),
        (2, 20, 20, IdentityHeal.Status.REJECTED),
        (1, 30, None, IdentityHeal.Status.PROPOSED),
    ]:
        heal = IdentityHeal.objects.create(
            step=steps[index], status=status, changes=[f"change of step {index}"], after={}
        )
        decided = start + timedelta(minutes=decided_min) if decided_min is not None else None
        IdentityHeal.objects.filter(pk=heal.pk).update(
            created_at=start + timedelta(minutes=created_min), decided_at=decided
        )

    html = logged_in(owner).get(f"/scenarios/{scenario.pk}/").content.decode()
    healed = html.split("<h2>Healed</h2>", 1)[1].split("</ul>", 1)[0]
    listed = re.findall(r"<li>Step (\d+): (\w+)", healed)
    assert listed == [("1", "applied"), ("2", "rejected"), ("3", "applied")]
    assert "change of step 1" in html.split("<h2>Changes to approve</h2>", 1)[1]
