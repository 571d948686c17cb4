"""What the scenario pages share: the scenario a request may change, and the way back
to its page."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.urls import reverse

from dashboard.models import Scenario
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.templatetags.steps import steps_page_of

__all__ = ["back", "owned"]


def owned(request: HttpRequest, scenario_id: int) -> Scenario:
    """The scenario if it is the user's: staff may see others' scenarios, not change them."""
    scenario = scenario_selectors.scenario_get(user=request.user, id=scenario_id)
    if scenario.owner_id != request.user.pk:
        raise Http404("no such scenario of yours")
    return scenario


def back(scenario: Scenario, index: int | None = None) -> HttpResponseRedirect:
    """To the scenario's page (at step ``index``)."""
    url = reverse("scenario_detail", args=[scenario.pk])
    if index is None:
        return HttpResponseRedirect(url)
    page = steps_page_of(index)  # (the first page of its steps is the page itself)
    return HttpResponseRedirect(f"{url}{f'?steps={page}' if page > 1 else ''}#step-{index}")
