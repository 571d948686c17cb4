"""Schedules on a scenario's page: make one, run it now, turn it off and on, delete it."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from dashboard.jobs import alerts, cron, schedules
from dashboard.jobs.forms import ScheduleForm
from dashboard.models import Schedule
from dashboard.scenarios import selectors
from dashboard.scenarios.detail import detail_page  # the page the form is on


@login_required
@require_POST
def schedule_new(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = selectors.scenario_get(user=request.user, id=scenario_id)
    if scenario.owner_id != request.user.pk:
        raise Http404("no such scenario of yours")
    document = selectors.scenario_document(scenario=scenario)
    form = ScheduleForm(request.POST, request.FILES, scenario=scenario, document=document,
                        user=request.user)  # fmt: skip
    if not form.is_valid():
        return detail_page(request, scenario, bound={"schedule": form}, status=400)
    schedule = schedules.save(Schedule(owner=request.user, scenario=scenario),
                              origin=alerts.request_origin(request), **form.checked)  # fmt: skip
    messages.success(request, f"Scheduled: {cron.describe(schedule.cron)} ({schedule.timezone}).")
    return redirect(f"/scenarios/{scenario.pk}/#schedules")


def _own(request: HttpRequest, schedule_id: int) -> Schedule:
    return get_object_or_404(Schedule, pk=schedule_id, owner=request.user)


@login_required
@require_POST
def schedule_toggle(request: HttpRequest, schedule_id: int) -> HttpResponse:
    """Turn it on or off, as the form says (not a flip: a second press, or the button of
    a page shown before, leaves it as the person asked)."""
    schedule = _own(request, schedule_id)
    wanted = request.POST.get("enabled")
    if wanted not in ("0", "1"):
        messages.error(request, "Not changed: say whether to turn it on (1) or off (0).")
    elif (wanted == "1") == schedule.enabled:
        messages.info(request, f"The schedule is {'on' if schedule.enabled else 'off'} already.")
    else:
        try:  # turned on, it fires with what it holds: checked again (its scenario may
            # have renamed a parameter since, its cron be one refused since, its sign-in
            # profile be deleted since)
            if wanted == "1":
                schedules.check_schedule(scenario=schedule.scenario,
                                         **schedules.stored_fields(schedule))  # fmt: skip
                schedules.check_signin(schedule)
        except schedules.ScheduleInvalid as exc:
            hint = f"; {exc.hint}" if exc.hint else ""
            messages.error(request, f"Not turned on: {exc.message}{hint}.")
        else:
            schedules.save(schedule, enabled=wanted == "1")  # its next time from now
    return redirect(f"/scenarios/{schedule.scenario_id}/#schedules")


@login_required
@require_POST
def schedule_run_now(request: HttpRequest, schedule_id: int) -> HttpResponse:
    """Fire it now, as at one of its times (dashboard.jobs.schedules.run_now)."""
    schedule = _own(request, schedule_id)
    before = schedule.firings.count()
    try:
        schedules.run_now(schedule)
    except schedules.ScheduleOff as exc:
        messages.error(request, f"Not run: {exc.message}; {exc.hint}.")
    else:
        async_to_sync(schedules.ring_due)()
        messages.success(request, "Firing now: its run shows under the schedule in a moment.")
        # The page shows the firing once a worker made it (scenario.js asks until then).
        where = f"/scenarios/{schedule.scenario_id}/?fired={schedule.pk}&before={before}"
        return redirect(f"{where}#schedules")
    return redirect(f"/scenarios/{schedule.scenario_id}/#schedules")


@login_required
def schedule_fired_json(request: HttpRequest, schedule_id: int) -> JsonResponse:
    """How many times the schedule fired (the scenario page waits for one after Run now)."""
    schedule = _own(request, schedule_id)
    return JsonResponse({"fired": schedule.firings.count()})


@login_required
@require_POST
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = _own(request, schedule_id)
    schedule.delete()
    return redirect(f"/scenarios/{schedule.scenario_id}/#schedules")
