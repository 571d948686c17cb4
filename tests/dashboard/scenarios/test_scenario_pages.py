"""A long scenario's page shows its steps a page at a time: a 2,000-step scenario (well
under the import limit) rendered 21.8 MB of HTML, 3 s of CPU in a request thread, while
other people's requests waited.  Every link to a step (a check, a parameter's use, the
latest replay's report, a step just changed) leads to the page of steps that shows it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from dashboard.models import Scenario
from dashboard.scenarios import services as scenario_services
from dashboard.scenarios.pages import STEPS_PER_PAGE

pytestmark = pytest.mark.django_db

BASE = "http://shop.test/app"
COUNT = 2 * STEPS_PER_PAGE + 50


def long_scenario(owner: Any) -> Scenario:
    """A navigate, then clicks (each with a long identity) and checks in turn."""
    steps: list[dict[str, Any]] = [{"action": "navigate", "args": {"url": f"{BASE}/"}}]
    for index in range(1, COUNT):
        if index % 2:
            identity = {"role": "button", "name": f"Approve {index}", "tag": "button",
                        "row": f"Order {index} " * 20}  # fmt: skip
            steps.append({"action": "click", "args": {}, "identity": identity})
        else:
            steps.append({"action": "expect", "args": {"kind": "text_visible",
                                                       "text": f"Approved {index}"}})  # fmt: skip
    data = {"format": "tabwright.scenario", "version": 1, "name": "Approve the orders",
            "base_url": BASE, "steps": steps}  # fmt: skip
    return scenario_services.scenario_import(owner=owner, data=data)


def shown_steps(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'data-testid="step-(\d+)"', html)]


def test_a_long_scenario_s_page_shows_its_steps_a_page_at_a_time(owner: Any) -> None:
    scenario = long_scenario(owner)
    client = Client()
    client.force_login(owner)
    page = f"/scenarios/{scenario.pk}/"
    first = client.get(page).content.decode()
    assert shown_steps(first) == list(range(STEPS_PER_PAGE))
    assert 'data-testid="steps-pages"' in first and 'href="?steps=2#steps"' in first
    # Every check is listed, each linked to the page that shows it.
    assert 'href="#step-2"' in first
    assert f'href="?steps=3#step-{COUNT - 2}"' in first
    last = client.get(page, {"steps": 3}).content.decode()
    assert shown_steps(last) == list(range(2 * STEPS_PER_PAGE, COUNT))
    assert f'start="{2 * STEPS_PER_PAGE}"' in last and 'href="?steps=1#step-2"' in last
    # A page number out of range shows the last page; one that is no number, the first.
    assert shown_steps(client.get(page, {"steps": 99}).content.decode()) == shown_steps(last)
    assert shown_steps(client.get(page, {"steps": "x"}).content.decode()) == shown_steps(first)
    # The page of a step just moved is where the person is sent back to.
    index = STEPS_PER_PAGE + 1
    step = scenario.steps.get(index=index)
    moved = client.post(f"{page}steps/{index}/move", {"step_id": step.pk, "direction": "down"})
    assert moved["Location"] == f"{page}?steps=2#step-{index + 1}"


def test_a_short_scenario_s_page_has_no_pages_of_steps(owner: Any) -> None:
    steps = [{"action": "navigate", "args": {"url": f"{BASE}/"}},
             {"action": "expect", "args": {"kind": "text_visible", "text": "Shop"}}]  # fmt: skip
    data = {"format": "tabwright.scenario", "version": 1, "name": "Open the shop",
            "base_url": BASE, "steps": steps}  # fmt: skip
    scenario = scenario_services.scenario_import(owner=owner, data=data)
    client = Client()
    client.force_login(owner)
    html = client.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert shown_steps(html) == [0, 1] and 'data-testid="steps-pages"' not in html
    assert 'href="#step-1"' in html
