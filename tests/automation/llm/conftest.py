"""Fixtures of the model clients' tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from automation.llm.openai import OpenAICompatPlanner
from tests.fakellm import ScriptedLLMServer


@pytest.fixture
async def planner(llm_server: ScriptedLLMServer) -> AsyncIterator[OpenAICompatPlanner]:
    # No retries: these tests are about one exchange; tests/automation/llm/test_llm_retry.py
    # covers retrying.
    p = OpenAICompatPlanner(base_url=llm_server.base_url, model="test-model", retries=0)
    yield p
    await p.aclose()
