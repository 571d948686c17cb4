"""A scenario file whose replay would refuse or misread a value is refused at every door
it comes in by, the Import page and the API alike, naming the step and the field, and
nothing is stored: they read it in the one place the format is read
(automation.recording.scenario)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dashboard.models import Scenario, ScenarioStep
from tests.dashboard.api.test_api import refused, token_of

pytestmark = pytest.mark.django_db

FIELD = {"role": "textbox", "name": "Search", "tag": "input", "selectors": ["#q"]}
NAVIGATE = {"action": "navigate", "args": {"url": "http://shop.test/"}}


def document(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"format": "tabwright.scenario", "version": 1, "name": "Search",
            "base_url": "http://shop.test", "steps": [NAVIGATE, *steps], **top}  # fmt: skip


# What each file was read as before: a wait of 3 billion years, a negative pause between
# keys, a base URL replay can't open, a navigation to the page "5".
BAD = {
    "a wait of 1e20 ms": (
        document({"action": "wait_for", "args": {"time_ms": 10**20}}),
        "step 1: wait_for: time_ms must be a whole number from 1 to 60000",
    ),
    "a negative key delay": (
        document({"action": "type", "args": {"text": "shoes", "delay_ms": -5}, "identity": FIELD}),
        "step 1: type: delay_ms must be a whole number from 0 to 1000, not -5",
    ),
    "a javascript: base URL": (
        document(base_url="javascript:1"),
        "base_url: refused URL 'javascript:1': javascript: is not allowed",
    ),
    "a number for a URL": (
        document({"action": "navigate", "args": {"url": 5}}),
        "step 1: navigate: 'url' must be str, not int",
    ),
    # A name checked with re.match(r"^…$") passed with a newline at its end ("$" matches
    # before it), stored as a parameter no ${x} can name.
    "a parameter name ending in a newline": (
        document(params={"x\n": {}}),
        "params: 'x\\n' is not a parameter name",
    ),
    "a call's parameter name ending in a newline": (
        document(
            {"action": "call", "args": {"scenario": "Open", "params": {"page\n": "a"}}},
            callees={"Open": document(name="Open", params={"page": {}})},
        ),
        "step 1: call params: 'page\\n' is not a parameter name",
    ),
    "a callee's parameter name ending in a newline": (
        document(
            {"action": "call", "args": {"scenario": "Open", "params": {"page": "a"}}},
            callees={"Open": document(name="Open", params={"page\n": {}})},
        ),
        "callee 'Open': params: 'page\\n' is not a parameter name",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_the_import_page_refuses_it_naming_the_step_and_field(owner: Any, case: str) -> None:
    data, message = BAD[case]
    client = Client()
    client.force_login(owner)
    upload = SimpleUploadedFile("search.json", json.dumps(data).encode())
    answer = client.post("/scenarios/import", {"file": upload})
    assert answer.status_code == 400
    assert message.replace("'", "&#x27;") in answer.content.decode()
    assert not Scenario.objects.exists() and not ScenarioStep.objects.exists()


@pytest.mark.parametrize("case", list(BAD))
def test_the_api_refuses_it_naming_the_step_and_field(owner: Any, case: str) -> None:
    data, message = BAD[case]
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    answer = client.post("/api/scenarios", data, content_type="application/json")
    error = refused(answer, 400, "scenario_invalid")
    assert error["message"].startswith(message), error
    assert not Scenario.objects.exists()


def test_the_same_file_within_bounds_is_imported(owner: Any) -> None:
    """The bounds themselves, and an http base URL, are taken."""
    client = Client()
    client.force_login(owner)
    data = document({"action": "wait_for", "args": {"time_ms": 60_000}},
                    {"action": "type", "args": {"text": "shoes", "delay_ms": 0},
                     "identity": FIELD},
                    {"action": "navigate", "args": {"url": "http://shop.test/5"}})  # fmt: skip
    upload = SimpleUploadedFile("search.json", json.dumps(data).encode())
    assert client.post("/scenarios/import", {"file": upload}).status_code == 302
    assert Scenario.objects.get().steps.count() == 4


def test_the_same_names_without_the_newline_are_imported(owner: Any) -> None:
    client = Client(headers={"Authorization": f"Bearer {token_of(owner)}"})
    data = document({"action": "call", "args": {"scenario": "Open", "params": {"page": "${x}"}}},
                    params={"x": {"default": "a"}},
                    callees={"Open": document(name="Open", params={"page": {}})})  # fmt: skip
    assert client.post("/api/scenarios", data, content_type="application/json").status_code == 201
    assert Scenario.objects.get(name="Search").params == {"x": {"default": "a"}}
