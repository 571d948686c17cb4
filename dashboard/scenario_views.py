"""Scenario pages: save a run as a scenario, import and export it, review healed identities,
and start a replay (which then runs like any run, on its run page)."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from automation.errors import ScenarioInvalid
from automation.recording.export import to_pytest
from automation.recording.scenario import SECRET_ENV_PREFIX
from automation.recording.scenario import Scenario as Document
from dashboard import selectors, services
from dashboard.forms import ImportScenarioForm, ReplayForm
from dashboard.models import IdentityHeal, Scenario
from dashboard.runner import runner


@login_required
def scenario_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request, ImportScenarioForm())


def _list_page(
    request: HttpRequest, form: ImportScenarioForm, *, status: int = 200
) -> HttpResponse:
    scenarios = selectors.scenario_list(user=request.user)[:200]
    return render(request, "scenarios/list.html", {"scenarios": scenarios, "form": form},
                  status=status)  # fmt: skip


@login_required
@require_POST
def scenario_import(request: HttpRequest) -> HttpResponse:
    form = ImportScenarioForm(request.POST, request.FILES)
    if not form.is_valid():
        return _list_page(request, form, status=400)
    try:
        scenario = services.scenario_import(owner=request.user, data=form.cleaned_data["data"])
    except ScenarioInvalid as exc:
        form.add_error("file", str(exc))
        return _list_page(request, form, status=400)
    return redirect("scenario_detail", scenario_id=scenario.pk)


@login_required
@require_POST
def run_save_scenario(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_get(user=request.user, id=run_id)
    try:
        scenario = services.scenario_from_run(
            owner=request.user, run=run, name=request.POST.get("name", "")
        )
    except ScenarioInvalid as exc:
        messages.error(request, str(exc))
        return redirect("run_detail", run_id=run.pk)
    return redirect("scenario_detail", scenario_id=scenario.pk)


@login_required
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = selectors.scenario_get(user=request.user, id=scenario_id)
    document = selectors.scenario_document(scenario=scenario)
    return _detail_page(request, scenario, document, ReplayForm(document=document))


def _detail_page(
    request: HttpRequest,
    scenario: Scenario,
    document: Document,
    form: ReplayForm,
    *,
    status: int = 200,
) -> HttpResponse:
    _params, secrets = document.placeholders()
    heals = selectors.scenario_heals(scenario_id=scenario.pk)
    context = {
        # Steps whose typed value can become a parameter or a secret.
        "param_steps": {i for i, s in enumerate(document.steps) if s.typed_value() is not None},
        "scenario": scenario,
        "steps": scenario.steps.all(),
        "form": form,
        "secrets": [(name, SECRET_ENV_PREFIX + name) for name in sorted(secrets)],
        "proposed": heals.filter(status=IdentityHeal.Status.PROPOSED),
        "history": heals.exclude(status=IdentityHeal.Status.PROPOSED)[:50],
        "runs": scenario.runs.order_by("-created_at")[:20],
        "is_owner": scenario.owner_id == request.user.pk,
    }
    return render(request, "scenarios/detail.html", context, status=status)


@login_required
def scenario_export(request: HttpRequest, scenario_id: int, format: str) -> HttpResponse:
    if format not in ("json", "py"):
        raise Http404("export as .json or .py")
    scenario = selectors.scenario_get(user=request.user, id=scenario_id)
    document = selectors.scenario_document(scenario=scenario)
    if format == "json":
        body = json.dumps(document.to_dict(), indent=2, ensure_ascii=False) + "\n"
        response = HttpResponse(body, content_type="application/json")
        name = f"scenario-{scenario.pk}.json"
    else:
        response = HttpResponse(to_pytest(document), content_type="text/x-python")
        name = f"test_scenario_{scenario.pk}.py"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_POST
async def scenario_replay(request: HttpRequest, scenario_id: int) -> HttpResponse:
    user = await request.auser()
    if not user.is_authenticated:
        return redirect_to_login(request.path)
    scenario = await sync_to_async(selectors.scenario_get)(user=user, id=scenario_id)
    document = await sync_to_async(selectors.scenario_document)(scenario=scenario)
    form = ReplayForm(request.POST, document=document)
    # Checking the base URL reads the URL rules: sync-only.
    if not await sync_to_async(form.is_valid)():
        return await sync_to_async(_detail_page)(request, scenario, document, form, status=400)
    run = await sync_to_async(services.replay_run_create)(
        owner=user, scenario=scenario, base_url=form.cleaned_data["base_url"],
        params=form.params(),
    )  # fmt: skip
    await runner.start(run.pk)
    return redirect("run_detail", run_id=run.pk)


@login_required
@require_POST
def scenario_step_param(request: HttpRequest, scenario_id: int, index: int) -> HttpResponse:
    """Make a step's typed value a parameter (its value the default) or a secret."""
    scenario = selectors.scenario_get(user=request.user, id=scenario_id)
    if scenario.owner_id != request.user.pk:
        raise Http404("no such scenario of yours")
    try:
        services.scenario_step_make_param(
            scenario=scenario,
            index=index,
            name=request.POST.get("name", "").strip(),
            secret=bool(request.POST.get("secret")),
        )
    except ScenarioInvalid as exc:
        messages.error(request, str(exc))
    return redirect("scenario_detail", scenario_id=scenario.pk)


@login_required
@require_POST
def heal_decide(request: HttpRequest, heal_id: int) -> HttpResponse:
    heal = IdentityHeal.objects.select_related("step__scenario").filter(pk=heal_id).first()
    scenario = heal.step.scenario if heal else None
    if heal is None or scenario is None or scenario.owner_id != request.user.pk:
        return HttpResponse("no such change of yours", status=404)
    try:
        services.heal_decide(heal_id=heal.pk, approve="approve" in request.POST, user=request.user)
    except ScenarioInvalid as exc:
        messages.error(request, str(exc))
    return redirect("scenario_detail", scenario_id=scenario.pk)
