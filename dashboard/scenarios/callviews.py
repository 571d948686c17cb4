"""The scenario page's settings and calls: its login scenario, a step that calls another
scenario (automation.recording.calls), and deleting it (refused while others call it)."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from automation.errors import ScenarioInvalid
from dashboard.jobs import batches
from dashboard.scenarios import call_services, services
from dashboard.scenarios.detail import detail_page  # the page the form is on
from dashboard.scenarios.forms import CallForm, call_choices
from dashboard.scenarios.pages import back as _back
from dashboard.scenarios.pages import owned as _owned

__all__ = ["scenario_call_new", "scenario_delete", "scenario_login"]


@login_required
@require_POST
def scenario_call_new(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Add a step that calls another of the owner's scenarios."""
    scenario = _owned(request, scenario_id)
    form = CallForm(request.POST, choices=call_choices(scenario))
    if not form.is_valid():  # the page again, the form open with what was typed and why
        return detail_page(request, scenario, bound={"call": form}, status=400)
    try:
        # One change: a call that can't go where it was asked (a replay of the scenario
        # is live) is not left added at the end.
        with transaction.atomic():
            index = call_services.scenario_call_add(
                scenario=scenario, callee_id=form.cleaned_data["callee"],
                params=form.cleaned_data["params"],
            )  # fmt: skip
            position = form.cleaned_data["position"]
            if position is not None and position < index:
                services.scenario_step_move(scenario=scenario, index=index, to=position)
                index = position
    except ScenarioInvalid as exc:
        form.add_error(None, f"The call was not added: {exc}")
        return detail_page(request, scenario, bound={"call": form}, status=400)
    messages.success(request, f"Step {index} calls another scenario now.")
    return _back(scenario, index)


@login_required
@require_POST
def scenario_login(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Choose the scenario that signs in again when a replay meets a sign-in page."""
    scenario = _owned(request, scenario_id)
    raw = str(request.POST.get("login_scenario", "")).strip()
    try:
        call_services.login_set(scenario=scenario, login_id=int(raw) if raw else None)
    except (ValueError, ScenarioInvalid) as exc:
        messages.error(request, f"The login scenario was not set: {exc}")
    else:
        messages.success(request, "Login scenario saved." if raw else "No login scenario.")
    return _back(scenario)


@login_required
@require_POST
async def scenario_delete(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Delete the scenario, unless another scenario calls it or signs in with it; its
    batches' replays still at work stop with it."""
    deleted = await sync_to_async(_delete)(request, scenario_id)
    if isinstance(deleted, HttpResponse):  # refused: its page says why
        return deleted
    await batches.scenario_deleted(deleted, await request.auser())
    return redirect("scenario_list")


def _delete(request: HttpRequest, scenario_id: int) -> list[int] | HttpResponse:
    scenario = _owned(request, scenario_id)
    try:
        at_work = services.scenario_delete(scenario=scenario)
    except ScenarioInvalid as exc:
        messages.error(request, f"Not deleted: {exc}")
        return _back(scenario)
    messages.success(request, f"Scenario {scenario.name!r} deleted.")
    return at_work
