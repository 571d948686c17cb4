"""Which variables an LLM profile may read its key from (automation/llm/keys.py)."""

from __future__ import annotations

import pytest

from automation.errors import LLMError
from automation.llm.keys import api_key_from_env, key_env_refusal

SECRET_VALUE = "the-shop-password-never-sent"

REFUSED = [
    "TABWRIGHT_SECRET_SHOP_PW",  # a ${SECRET:…} value
    "TABWRIGHT_METRICS_TOKEN",
    "TABWRIGHT_SECRET_KEY",
    "TABWRIGHT_LLM_API_KEY_ENV",
    "SECRET_KEY",
    "DJANGO_SECRET_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "DATABASE_URL",
    "PATH",
    "HOME",
]
ALLOWED = ["TABWRIGHT_LLM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GROQ_API_KEY"]


@pytest.mark.parametrize("name", REFUSED)
def test_the_rule_refuses_tabwrights_own_and_non_key_variables(name: str) -> None:
    assert key_env_refusal(name)
    with pytest.raises(LLMError, match=f"may not read its API key from {name}"):
        api_key_from_env(name, environ={name: SECRET_VALUE})


@pytest.mark.parametrize("name", ALLOWED)
def test_the_rule_allows_api_key_names_and_the_documented_default(name: str) -> None:
    assert key_env_refusal(name) == ""
    assert api_key_from_env(name, environ={name: "k"}) == "k"


def test_an_operator_list_replaces_the_pattern_but_never_allows_tabwrights_own() -> None:
    allowed = ("HF_TOKEN", "TABWRIGHT_SECRET_X")
    assert key_env_refusal("HF_TOKEN", allowed=allowed) == ""
    assert "not among" in key_env_refusal("OPENAI_API_KEY", allowed=allowed)
    assert "Tabwright's own" in key_env_refusal("TABWRIGHT_SECRET_X", allowed=allowed)
    assert key_env_refusal("TABWRIGHT_LLM_API_KEY", allowed=allowed) == ""
