"""LLM profiles: validation, the one default, the admin, how a run's planner is chosen, and
the token usage a run adds up."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.test import AsyncClient, Client

from automation.errors import LLMError
from automation.events import LLMMessage, RunStarted
from automation.llm.anthropic import AnthropicPlanner
from automation.llm.openai import OpenAICompatPlanner
from automation.llm.rules import RulePlanner
from dashboard.engineconf import browser_config, make_planner, planner_choice
from dashboard.models import LLMProfile, Run, RunEvent
from dashboard.runs import selectors, services
from dashboard.runs.sink import DashboardSink
from tests.dashboard.conftest import PASSWORD, Runs
from tests.fakellm import FAKE_MODEL, ScriptedLLMServer

# What a key looks like: it must never reach a page, an event or an error message.
SECRET = "sk-test-Zq8rT2uV9wX4yB7c-not-for-browsers"
KEY_ENV = "TEST_PROFILE_API_KEY"


def profile(name: str = "local", **fields: Any) -> LLMProfile:
    values: dict[str, Any] = {
        "provider": LLMProfile.Provider.OPENAI,
        "base_url": "http://127.0.0.1:11434/v1",
        "model": "llama3.1",
        **fields,
    }
    return services.llm_profile_save(profile=LLMProfile(name=name, **values))


def staff_client(django_user_model: Any) -> Client:
    """A staff member who may view and change profiles (not a superuser)."""
    user = django_user_model.objects.create_user("stan", password=PASSWORD, is_staff=True)
    codenames = ["view_llmprofile", "change_llmprofile", "add_llmprofile"]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


# -- validation ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name", ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "A_API_KEY", "TABWRIGHT_LLM_API_KEY", ""]
)
def test_variable_names_are_accepted(name: str) -> None:
    LLMProfile(name="p", model="m", api_key_env=name).full_clean()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("openai_api_key", "invalid_env_name"),
        ("1KEY", "invalid_env_name"),
        ("MY KEY", "invalid_env_name"),
        ("OPENAI_API_KEY\n", "invalid_env_name"),  # "$" of re.match matched before the "\n"
        ("MY-KEY", "looks_like_key"),
        (SECRET, "looks_like_key"),
        ("sk-ant-api03-abcdefghijklmnop", "looks_like_key"),
        ("SK_LIVE_0123456789", "looks_like_key"),
        ("AKIAIOSFODNN7EXAMPLE", "looks_like_key"),
        ("A1B2C3D4E5F6G7H8I9J0K1L2M3", "looks_like_key"),
        ("Abc123Def456", "looks_like_key"),
    ],
)
def test_bad_names_and_keys_are_refused_without_repeating_them(value: str, code: str) -> None:
    with pytest.raises(ValidationError) as caught:
        LLMProfile(name="p", model="m", api_key_env=value).full_clean()
    errors = caught.value.error_dict["api_key_env"]
    assert [e.code for e in errors] == [code]
    assert value not in str(caught.value.messages)


@pytest.mark.django_db
def test_base_url_must_be_http_and_temperature_in_range() -> None:
    with pytest.raises(ValidationError) as caught:
        LLMProfile(name="p", model="m", base_url="ftp://x", temperature=3).full_clean()
    assert set(caught.value.error_dict) == {"base_url"}  # clean() stops at the first
    with pytest.raises(ValidationError) as caught:
        LLMProfile(name="p", model="m", temperature=3).full_clean()
    assert set(caught.value.error_dict) == {"temperature"}
    ok = LLMProfile(name="p", model="m", base_url=" http://ollama:11434/v1 ")
    ok.full_clean()
    assert ok.base_url == "http://ollama:11434/v1"


# -- one default --------------------------------------------------------------------------


@pytest.mark.django_db
def test_saving_a_default_clears_the_other() -> None:
    first = profile("first", is_default=True)
    second = profile("second", is_default=True)
    first.refresh_from_db()
    assert (first.is_default, second.is_default) == (False, True)
    assert selectors.llm_profile_default() == second
    second.is_default = False
    services.llm_profile_save(profile=second)
    assert selectors.llm_profile_default() is None
    # Written around the service, the database still refuses a second default.
    profile("third", is_default=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        LLMProfile.objects.create(name="fourth", model="m", is_default=True)


# -- admin --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_changelist_shows_whether_the_key_is_set_never_the_key(
    django_user_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv("TEST_UNSET_API_KEY", raising=False)
    profile("with key", api_key_env=KEY_ENV, model="claude-x", provider="anthropic")
    profile("without key", api_key_env="TEST_UNSET_API_KEY")
    client = staff_client(django_user_model)

    html = client.get("/admin/dashboard/llmprofile/").content.decode()
    assert "with key" in html and "without key" in html
    assert "Key set on server" in html
    assert 'alt="True"' in html and 'alt="False"' in html
    assert KEY_ENV in html
    assert SECRET not in html
    for query, shown, hidden in [
        ("?q=claude", "with key", "without key"),
        ("?provider__exact=openai", "without key", "with key"),
    ]:
        page = client.get(f"/admin/dashboard/llmprofile/{query}").content.decode()
        assert shown in page and f">{hidden}<" not in page, query
    change = client.get(f"/admin/dashboard/llmprofile/{LLMProfile.objects.first().pk}/change/")
    assert change.status_code == 200 and SECRET not in change.content.decode()


@pytest.mark.django_db
def test_admin_refuses_a_pasted_key_and_does_not_send_it_back(django_user_model: Any) -> None:
    client = staff_client(django_user_model)
    form = {
        "name": "pasted",
        "provider": "openai",
        "base_url": "",
        "model": "gpt-x",
        "api_key_env": SECRET,
        "temperature": "0",
        "native_tools": "auto",
    }
    response = client.post("/admin/dashboard/llmprofile/add/", form)
    assert response.status_code == 200
    html = response.content.decode()
    assert "looks like an API key" in html
    assert SECRET not in html
    assert not LLMProfile.objects.exists()


@pytest.mark.django_db
def test_admin_saves_a_new_default_and_clears_the_old(django_user_model: Any) -> None:
    old = profile("old", is_default=True)
    form = {
        "name": "new",
        "provider": "anthropic",
        "base_url": "",
        "model": "claude-x",
        "api_key_env": "ANTHROPIC_API_KEY",
        "temperature": "0.2",
        "max_tokens": "2048",
        "native_tools": "on",
        "is_default": "on",
    }
    response = staff_client(django_user_model).post("/admin/dashboard/llmprofile/add/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    old.refresh_from_db()
    assert not old.is_default
    new = LLMProfile.objects.get(name="new")
    assert (new.is_default, new.max_tokens, new.native_tools_option) == (True, 2048, True)
    assert new.endpoint == "https://api.anthropic.com"


# -- choosing the planner -----------------------------------------------------------------


@pytest.fixture
def llm_settings(settings: Any) -> Any:
    settings.TABWRIGHT = {
        **settings.TABWRIGHT,
        "PLANNER": "openai",
        "LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "LLM_MODEL": "settings-model",
        "LLM_API_KEY_ENV": "TABWRIGHT_TEST_SETTINGS_KEY",
    }
    return settings


@pytest.mark.django_db
def test_make_planner_picks_the_profile_then_the_default_then_the_settings(
    llm_settings: Any,
) -> None:
    chosen = profile("chosen", model="chosen-model", base_url="http://127.0.0.1:1/v1")
    # No default yet: a run that chose nothing gets the settings' planner.
    planner = make_planner()
    assert isinstance(planner, OpenAICompatPlanner)
    assert (planner.model, planner.base_url) == ("settings-model", "http://127.0.0.1:9/v1")

    default = profile("default", model="default-model", is_default=True)
    planner = make_planner()
    assert isinstance(planner, OpenAICompatPlanner) and planner.model == "default-model"
    assert planner_choice() == ("openai", default)

    planner = make_planner(profile=chosen)
    assert isinstance(planner, OpenAICompatPlanner)
    assert (planner.model, planner.base_url) == ("chosen-model", "http://127.0.0.1:1/v1")
    # The rule planner chosen in the form stays the rule planner, default or not.
    assert isinstance(make_planner("rules"), RulePlanner)
    assert planner_choice(kind="rules") == ("rules", None)


@pytest.mark.django_db
def test_the_rule_planner_stays_the_offline_default(settings: Any) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PLANNER": "rules"}
    assert isinstance(make_planner(), RulePlanner)
    with pytest.raises(LLMError, match="unknown planner 'gpt-9'"):
        make_planner("gpt-9")


@pytest.mark.django_db
def test_a_profile_without_its_key_variable_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    missing = profile("needs key", api_key_env=KEY_ENV)
    with pytest.raises(LLMError) as caught:
        make_planner(profile=missing)
    assert KEY_ENV in str(caught.value) and "'needs key'" in str(caught.value)
    assert "not set" in str(caught.value)
    monkeypatch.setenv(KEY_ENV, SECRET)
    planner = make_planner(profile=missing)
    assert SECRET not in repr(planner)


@pytest.mark.django_db
def test_profile_options_reach_the_planner_when_it_takes_them(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "LLM_RETRIES": 5}
    seen: dict[str, Any] = {}

    class Recording:
        name = "openai"

        def __init__(
            self,
            *,
            base_url: str,
            model: str,
            api_key: str = "",
            temperature: float = 0.0,
            max_tokens: int | None = None,
            native_tools: bool | None = None,
            retries: int = 3,
        ) -> None:
            seen.update(locals())

    monkeypatch.setattr("automation.llm.openai.OpenAICompatPlanner", Recording)
    tuned = profile("tuned", base_url="", temperature=0.4, max_tokens=900, native_tools="off")
    make_planner(profile=tuned)
    assert seen["base_url"] == "https://api.openai.com/v1"
    assert (seen["temperature"], seen["max_tokens"]) == (0.4, 900)
    assert (seen["native_tools"], seen["retries"]) == (False, 5)
    assert seen["api_key"] == ""  # no variable named: no key sent


@pytest.mark.django_db
def test_anthropic_from_a_profile_or_the_settings(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    claude = profile(
        "claude", provider="anthropic", base_url="", model="claude-x", api_key_env=KEY_ENV
    )
    settings.TABWRIGHT = {**settings.TABWRIGHT, "PLANNER": "anthropic", "LLM_MODEL": "claude-y"}
    assert isinstance(make_planner(profile=claude), AnthropicPlanner)
    assert isinstance(make_planner(), AnthropicPlanner)


@pytest.mark.django_db
def test_shell_commands_reach_the_browser_config(settings: Any) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "SHELL_COMMANDS": ("ls", "git")}
    assert browser_config().shell_commands == ("ls", "git")


# -- token usage --------------------------------------------------------------------------


@pytest.mark.django_db
def test_usage_adds_up_and_ignores_junk(owner: Any) -> None:
    run = services.run_create(owner=owner, task="t", start_url="")
    for usage in (
        {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        {"prompt_tokens": 50, "completion_tokens": 5},
        {},
        {"prompt_tokens": "9", "completion_tokens": -3},
    ):
        services.run_usage_add(run_id=run.pk, usage=usage)
    run.refresh_from_db()
    assert (run.prompt_tokens, run.completion_tokens) == (150, 25)


@pytest.mark.django_db(transaction=True)
async def test_the_sink_adds_each_rounds_usage_and_keeps_it_in_the_event(owner: Any) -> None:
    run = await sync_to_async(services.run_create)(owner=owner, task="t", start_url="")
    sink = DashboardSink(run.pk, 0)
    await sink.emit(RunStarted("t", "", "openai"))
    rounds = [(1, 300, 40), (2, 350, 12), (3, 0, 0)]
    for n, prompt, completion in rounds:
        usage = {"prompt_tokens": prompt, "completion_tokens": completion} if prompt else {}
        await sink.emit(LLMMessage(n, f"round {n}", usage))
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.prompt_tokens, stored.completion_tokens) == (650, 52)
    events = await sync_to_async(selectors.run_events)(run_id=run.pk)
    usages = [e["usage"] for e in events if e["type"] == "llm.message"]
    assert usages == [
        {"prompt_tokens": 300, "completion_tokens": 40},
        {"prompt_tokens": 350, "completion_tokens": 12},
        {},
    ]


# -- the new-run form and the run page ----------------------------------------------------


@pytest.mark.django_db
def test_the_form_offers_the_profiles_with_the_default_selected(owner: Any) -> None:
    client = Client()
    client.force_login(owner)
    plain = client.get("/").content.decode()
    assert '<option value="openai"' in plain and "Rule planner (offline)" not in plain

    local = profile("local")
    claude = profile("claude", provider="anthropic", model="claude-x", is_default=True)
    page = client.get("/").content.decode()
    assert f'<option value="profile:{claude.pk}" selected>claude (Anthropic · claude-x)' in page
    assert f'<option value="profile:{local.pk}">local (OpenAI-compatible · llama3.1)' in page
    assert '<option value="rules">Rule planner (offline)</option>' in page
    assert '<option value="openai"' not in page


@pytest.mark.django_db
def test_the_rule_planner_choice_stores_no_profile(owner: Any) -> None:
    from dashboard.runs.views import _run_from_form

    profile("default", is_default=True)
    form, run = _run_from_form({"task": "click OK", "planner": "rules"}, owner)
    assert run is not None, form.errors
    assert (run.planner, run.llm_profile) == ("rules", None)
    form, run = _run_from_form({"task": "click OK", "planner": "profile:999999"}, owner)
    assert run is None and "planner" in form.errors


@pytest.mark.django_db(transaction=True)
async def test_a_run_started_from_the_form_uses_the_chosen_profile_and_counts_tokens(
    runs: Runs,
    worker: Any,
    owner: Any,
    fixture_url: str,
    llm_server: ScriptedLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    await sync_to_async(profile)("default", model="never-asked", is_default=True)
    chosen = await sync_to_async(profile)(
        "scripted", base_url=llm_server.base_url, model=FAKE_MODEL, api_key_env=KEY_ENV
    )
    llm_server.script(
        '<action>{"action": "wait_for", "text": "Sign up"}</action>',
        '<action>{"action": "done", "summary": "the form is there"}</action>',
    )
    client = AsyncClient()
    await client.aforce_login(owner)
    response = await client.post(
        "/runs/new",
        {
            "start_url": f"{fixture_url}/demo/form.html",
            "task": "Check the sign-up form.",
            "planner": f"profile:{chosen.pk}",
        },
    )
    run = await sync_to_async(Run.objects.get)(owner=owner)
    assert response.status_code == 302
    await runs.claimed(run.pk)  # by the worker the form's wake-up rang
    await runs.manager.wait(run.pk)

    run = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    assert (run.llm_profile_id, run.planner) == (chosen.pk, "openai")
    assert [r["model"] for r in llm_server.requests] == [FAKE_MODEL, FAKE_MODEL]
    assert llm_server.headers[0]["authorization"] == f"Bearer {SECRET}"
    rows = await sync_to_async(list)(RunEvent.objects.filter(run_id=run.pk, type="llm.message"))
    assert len(rows) == 2
    assert run.prompt_tokens == sum(r.data["usage"]["prompt_tokens"] for r in rows) > 0
    assert run.completion_tokens == sum(r.data["usage"]["completion_tokens"] for r in rows) > 0
    all_events = await sync_to_async(list)(RunEvent.objects.filter(run_id=run.pk))
    assert all(SECRET not in str(e.data) for e in all_events)

    page = (await client.get(f"/runs/{run.pk}/")).content.decode()
    assert '<span id="planner" data-testid="planner">scripted</span>' in page
    assert f'<span id="prompt-tokens">{run.prompt_tokens}</span> prompt' in page
    assert f'<span id="completion-tokens">{run.completion_tokens}</span> completion' in page
    assert SECRET not in page


@pytest.mark.django_db(transaction=True)
async def test_a_run_whose_profile_key_is_missing_fails_naming_the_variable(
    runs: Runs, owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    await sync_to_async(profile)("keyless", api_key_env=KEY_ENV, is_default=True)
    run = await runs.create(owner=owner, task="look", planner="")  # the server picks
    await runs.start(run)
    await runs.manager.wait(run.pk)
    run = await sync_to_async(Run.objects.select_related("llm_profile").get)(pk=run.pk)
    assert run.status == Run.Status.FAILED
    assert KEY_ENV in run.status_reason and "not set" in run.status_reason
    assert run.llm_profile is not None and run.llm_profile.name == "keyless"
    assert run.planner_label == "keyless"
