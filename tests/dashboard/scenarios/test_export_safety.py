"""A scenario imported through the dashboard is checked as any scenario file is (a role off
the ARIA list is refused, naming the step and the field, and nothing is stored), what is
accepted exports to a safe module, and an export no safe code can be written for is refused
with a message instead of a server error."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from dashboard.models import Scenario, ScenarioStep
from dashboard.scenarios import services
from tests.automation.recording.test_export_safety import (
    BREAK,
    EVIL_ROLE,
    INJECT,
    assert_safe_module,
)

pytestmark = pytest.mark.django_db


def document(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"format": "tabwright.scenario", "version": 1, "name": "Hostile",
            "base_url": "http://shop.test", "steps": list(steps), **top}  # fmt: skip


def click(**identity: Any) -> dict[str, Any]:
    return {"action": "click", "args": {}, "identity": {"tag": "button", **identity}}


def test_an_uploaded_role_off_the_list_is_refused_naming_the_step(owner: Any) -> None:
    client = Client()
    client.force_login(owner)
    data = document({"action": "navigate", "args": {"url": "http://shop.test/"}},
                    click(role=EVIL_ROLE, name="Save", selectors=["#save"]))  # fmt: skip
    upload = SimpleUploadedFile("s.json", json.dumps(data).encode())
    response = client.post("/scenarios/import", {"file": upload})
    page = response.content.decode()
    assert response.status_code == 400
    assert "step 1: element identity: role" in page and "is not an ARIA role" in page
    assert not Scenario.objects.exists() and not ScenarioStep.objects.exists()


def test_an_accepted_hostile_scenario_exports_to_a_safe_module(owner: Any) -> None:
    data = document(
        click(role="button", name="Say \"hi\" it's \\" + INJECT, selectors=["#a" + INJECT]),
        {"action": "fill", "args": {"value": BREAK},
         "identity": {"role": "textbox", "name": "x", "tag": "input"}},
        name='"""; import os; """', base_url='http://x/"""; import os #',
    )  # fmt: skip
    scenario = services.scenario_import(owner=owner, data=data)
    client = Client()
    client.force_login(owner)
    assert_safe_module(client.get(f"/scenarios/{scenario.pk}/export.py").content.decode())
    out = StringIO()
    call_command("scenario_export", str(scenario.pk), "--format", "pytest", stdout=out)
    assert_safe_module(out.getvalue())


def test_an_export_no_safe_code_can_be_written_for_is_refused_with_a_message(
    owner: Any,
) -> None:
    """A clickable <div> recorded with nothing Playwright can find it by."""
    scenario = services.scenario_import(owner=owner, data=document(click(role="clickable")))
    client = Client()
    client.force_login(owner)
    response = client.get(f"/scenarios/{scenario.pk}/export.py", follow=True)
    assert response.redirect_chain[0][0] == f"/scenarios/{scenario.pk}/#step-0"
    assert "The pytest export was refused: step 0 can&#x27;t be exported" in (
        response.content.decode()
    )
    with pytest.raises(CommandError, match="the pytest export was refused: step 0"):
        call_command("scenario_export", str(scenario.pk), "--format", "pytest", stdout=StringIO())
