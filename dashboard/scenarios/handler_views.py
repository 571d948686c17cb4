"""The pages' side of interruption handlers (dashboard.scenarios.handlers): written,
changed and removed on the scenario page; kept from a replay's proposal on the run page
("handle this from now on")."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from automation.errors import ScenarioInvalid
from dashboard.models import Scenario
from dashboard.runs import selectors as run_selectors
from dashboard.scenarios import handlers
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios.detail import detail_page  # the page the form is on

_WORDS = ("name", "role", "looks_name", "clear_role", "clear_name")


@login_required
@require_POST
def scenario_handler_save(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Add a handler written in words, or change the one named ``replaces``."""
    scenario = _owned(request, scenario_id)
    words = {key: str(request.POST.get(key, ""))[:2_000] for key in _WORDS}
    replaces = str(request.POST.get("replaces", ""))
    shown = str(request.POST.get("shown", ""))[:100]
    try:
        handler = handlers.scenario_handler_save(
            scenario=scenario, handler=handlers.handler_from_words(**words), replaces=replaces,
            shown=shown,
        )  # fmt: skip
    except ScenarioInvalid as exc:
        if replaces:  # a change of a listed one: said above the list
            messages.error(request, f"The handler was not saved: {exc}")
            return _back(scenario)
        # A new one: the page again, its form open with what was typed and why not.
        typed = {**words, "error": f"The handler was not saved: {exc}"}
        return detail_page(request, scenario, bound={"handler": typed}, status=400)
    messages.success(request, f"Handler '{handler.name}' saved.")
    return _back(scenario)


@login_required
@require_POST
def scenario_handler_remove(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _owned(request, scenario_id)
    name = str(request.POST.get("name", ""))

    def remove() -> str:
        handlers.scenario_handler_remove(scenario=scenario, name=name)
        return f"Handler '{name}' removed."

    return _done(request, scenario, remove, "The handler was not removed")


@login_required
@require_POST
def run_handler_learn(request: HttpRequest, run_id: int) -> HttpResponse:
    """Keep the handler the run's replay proposed on its scenario."""
    run = run_selectors.run_get(user=request.user, id=run_id)
    back = HttpResponseRedirect(reverse("run_detail", args=[run.pk]))
    scenario = Scenario.objects.filter(pk=run.scenario_id).only("owner_id").first()
    if (
        run.owner_id != request.user.pk
        or scenario is None
        or (scenario.owner_id != request.user.pk)
    ):
        messages.error(request, "Only the owner of the run's scenario can keep its handlers.")
        return back
    try:
        seq = int(str(request.POST.get("seq", "")))
        _, handler = handlers.scenario_handler_learn(
            run=run, seq=seq, name=str(request.POST.get("name", ""))[:200]
        )
    except ValueError:
        messages.error(request, "No such proposal.")
    except ScenarioInvalid as exc:
        messages.error(request, f"The handler was not kept: {exc}")
    else:
        messages.success(request, f"Handler '{handler.name}' kept: replays of this scenario "
                         "handle it from now on.")  # fmt: skip
    return back


def _owned(request: HttpRequest, scenario_id: int) -> Scenario:
    scenario = scenario_selectors.scenario_get(user=request.user, id=scenario_id)
    if scenario.owner_id != request.user.pk:
        raise Http404("no such scenario of yours")
    return scenario


def _done(
    request: HttpRequest, scenario: Scenario, work: Callable[[], str], refused: str
) -> HttpResponse:
    """Do ``work``; the page says what it did, or why it was refused."""
    try:
        said = work()
    except ScenarioInvalid as exc:
        messages.error(request, f"{refused}: {exc}")
    else:
        messages.success(request, said)
    return _back(scenario)


def _back(scenario: Scenario) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("scenario_detail", args=[scenario.pk]) + "#handlers")
