"""What the scenario pages share: the scenario a request may change, the way back to its
page, and where on it a step is (its steps are shown a page at a time)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.urls import reverse

from dashboard.models import Scenario
from dashboard.scenarios import selectors as scenario_selectors

__all__ = ["STEPS_PER_PAGE", "back", "owned", "step_anchor", "steps_page_of"]

STEPS_PER_PAGE = 100  # a scenario's steps shown at once (a 2,000-step page is 20 MB of HTML)


def steps_page_of(index: int) -> int:
    """The page of the scenario's steps (1 first) that shows step ``index``."""
    return index // STEPS_PER_PAGE + 1


def step_anchor(index: int, here: int = 1) -> str:
    """Where step ``index`` is on the scenario's page, seen from its page of steps
    ``here``: its anchor, and that page's number where it is on another."""
    page = steps_page_of(index)
    return f"#step-{index}" if page == here else f"?steps={page}#step-{index}"


def owned(request: HttpRequest, scenario_id: int) -> Scenario:
    """The scenario if it is the user's: staff may see others' scenarios, not change them."""
    scenario = scenario_selectors.scenario_get(user=request.user, id=scenario_id)
    if scenario.owner_id != request.user.pk:
        raise Http404("no such scenario of yours")
    return scenario


def back(scenario: Scenario, index: int | None = None) -> HttpResponseRedirect:
    """To the scenario's page (at step ``index``)."""
    url = reverse("scenario_detail", args=[scenario.pk])
    return HttpResponseRedirect(url + (step_anchor(index) if index is not None else ""))
