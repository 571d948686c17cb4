"""An LLM profile's key variable can't name Tabwright's own variables or another secret of
the server: refused when the profile is saved, and again when a run reads the key (a row
stored before the rule never sends TABWRIGHT_SECRET_* anywhere)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError

from automation.errors import LLMError
from dashboard.engineconf import make_planner
from dashboard.models import LLMProfile, Run
from tests.automation.llm.test_llm_keys import REFUSED
from tests.dashboard.conftest import Runs
from tests.dashboard.test_llm_profiles import staff_client
from tests.fakellm import FAKE_MODEL, ScriptedLLMServer

SECRET_VALUE = "the-shop-password-never-sent"


@pytest.mark.django_db
@pytest.mark.parametrize("name", REFUSED)
def test_a_profile_naming_such_a_variable_is_not_saved(name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        LLMProfile(name="p", model="m", api_key_env=name).full_clean()
    [error] = caught.value.error_dict["api_key_env"]
    assert error.code == "key_env_refused" and name in error.message


@pytest.mark.django_db
def test_the_settings_list_is_used_by_the_validation(settings: Any) -> None:
    settings.TABWRIGHT = {**settings.TABWRIGHT, "LLM_KEY_VARIABLES": ("HF_TOKEN",)}
    LLMProfile(name="p", model="m", api_key_env="HF_TOKEN").full_clean()
    with pytest.raises(ValidationError, match="not among"):
        LLMProfile(name="p", model="m", api_key_env="OPENAI_API_KEY").full_clean()


@pytest.mark.django_db
def test_the_admin_refuses_a_secret_variable_with_a_message(django_user_model: Any) -> None:
    form = {
        "name": "exfil", "provider": "openai", "base_url": "https://attacker.example/v1",
        "model": "gpt-x", "api_key_env": "TABWRIGHT_SECRET_SHOP_PW", "temperature": "0",
        "native_tools": "auto",
    }  # fmt: skip
    response = staff_client(django_user_model).post("/admin/dashboard/llmprofile/add/", form)
    assert response.status_code == 200
    assert "one of Tabwright&#x27;s own variables" in response.content.decode()
    assert not LLMProfile.objects.exists()


@pytest.mark.django_db
def test_a_stored_row_from_before_the_rule_is_refused_when_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_SHOP_PW", SECRET_VALUE)
    # Saved without validation, as rows from before the rule were.
    legacy = LLMProfile.objects.create(
        name="legacy", model="m", base_url="http://127.0.0.1:9/v1",
        api_key_env="TABWRIGHT_SECRET_SHOP_PW",
    )  # fmt: skip
    assert legacy.key_is_set is False  # the admin list doesn't tell it is set either
    with pytest.raises(LLMError) as caught:
        make_planner(profile=legacy)
    assert "TABWRIGHT_SECRET_SHOP_PW" in str(caught.value)
    assert SECRET_VALUE not in str(caught.value)


@pytest.mark.django_db(transaction=True)
async def test_a_run_with_such_a_profile_fails_and_sends_nothing(
    runs: Runs, owner: Any, llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABWRIGHT_SECRET_SHOP_PW", SECRET_VALUE)
    legacy = await LLMProfile.objects.acreate(
        name="legacy", model=FAKE_MODEL, base_url=llm_server.base_url,
        api_key_env="TABWRIGHT_SECRET_SHOP_PW", is_default=True,
    )  # fmt: skip
    run = await runs.create(owner=owner, task="look", planner="")
    await runs.start(run)
    await runs.manager.wait(run.pk)
    run = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert run.status == Run.Status.FAILED and run.llm_profile_id == legacy.pk
    assert "may not read its API key from TABWRIGHT_SECRET_SHOP_PW" in run.status_reason
    assert llm_server.requests == [] and llm_server.headers == []
    assert SECRET_VALUE not in run.status_reason
