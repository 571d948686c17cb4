"""Scenario pages: save a run as a scenario, import and export it, search them, edit one
(rename, reorder, delete and change steps, parameters), review how its latest replay did
and the identities it healed, and start a replay (which then runs like any run, on its run
page).  Anyone who may see a scenario sees these pages; only its owner changes it."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from automation.errors import ScenarioInvalid
from automation.recording import fromrun
from automation.wording import curly_quoted
from dashboard.models import IdentityHeal, Scenario, ScenarioStep
from dashboard.runs import selectors as run_selectors
from dashboard.runs.doorbell import wake
from dashboard.scenarios import call_services, services
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios.detail import detail_page, element_steps
from dashboard.scenarios.forms import (
    CheckForm,
    ImportScenarioForm,
    ParamDefaultForm,
    ReplayForm,
    SaveScenarioForm,
    ScenarioEditForm,
    StepValuesForm,
)
from dashboard.scenarios.pages import back as _back
from dashboard.scenarios.pages import owned as _owned


@login_required
def scenario_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request, ImportScenarioForm())


def _list_page(
    request: HttpRequest, form: ImportScenarioForm, *, status: int = 200
) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:200]
    scenarios = scenario_selectors.scenario_list(user=request.user, q=query)[:200]
    context = {"scenarios": scenarios, "form": form, "q": query}
    return render(request, "scenarios/list.html", context, status=status)


@login_required
@require_POST
def scenario_import(request: HttpRequest) -> HttpResponse:
    form = ImportScenarioForm(request.POST, request.FILES)
    if not form.is_valid():
        return _list_page(request, form, status=400)
    data = form.cleaned_data["data"]
    try:
        scenario = services.scenario_import(owner=request.user, data=data)
    except ScenarioInvalid as exc:
        form.add_error("file", str(exc))
        return _list_page(request, form, status=400)
    _told_if_renamed(request, scenario, data["name"])
    return redirect("scenario_detail", scenario_id=scenario.pk)


def _told_if_renamed(request: HttpRequest, scenario: Scenario, name: str) -> None:
    """Said on the scenario's page when it was saved under another name than ``name``
    (one of the person's scenarios has it: each has its own, as calls find them by it)."""
    if scenario.name != name:
        messages.info(
            request,
            f"Saved as {curly_quoted(scenario.name)}: you have a scenario named "
            f"{curly_quoted(name)} already.",
        )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def run_save_scenario(request: HttpRequest, run_id: int) -> HttpResponse:
    """Save a run as a scenario: the page lists every step it keeps and every step it
    leaves out with why (a failed step whose element is known can be kept), and the
    checks proposed when each stretch of its work ended, the telling ones ticked.  A
    conversation can leave out the work of some of its messages."""
    run = run_selectors.run_get(user=request.user, id=run_id)
    if run.owner_id != request.user.pk:
        raise Http404("no such run of yours")
    rows = run_selectors.run_step_rows(run=run)
    requests = run_selectors.run_requests(run=run)
    typed = run_selectors.run_typed_passwords(run=run, rows=rows)
    plan = fromrun.plan(rows, passwords=typed.found_in([run.task, *requests]))
    pairs = run_selectors.run_proposed_checks(run=run)
    data = request.POST if request.method == "POST" else None
    # What the scenario would hold: the person's words with the passwords masked.
    title = typed.mask(run.title)
    form = SaveScenarioForm(data, initial={"name": title}, plan=plan, typed=typed,
                            proposals=[p for _, p in pairs], requests=requests)  # fmt: skip
    if data is not None and form.is_valid():
        stretches = form.cleaned_data.get("stretches")
        if stretches is not None and not stretches:
            form.add_error("stretches", "Pick the work of at least one request.")
        else:
            try:
                scenario = services.scenario_from_run(
                    owner=request.user, run=run, name=form.cleaned_data["name"],
                    keep=form.cleaned_data["keep"], checks=form.cleaned_data["checks"],
                    stretches=stretches or (),
                )  # fmt: skip
            except ScenarioInvalid as exc:
                form.add_error(None, str(exc))
            else:
                asked = form.cleaned_data["name"].strip() or title
                _told_if_renamed(request, scenario, asked[:200])
                return redirect("scenario_detail", scenario_id=scenario.pk)
    boxes = {int(box.data["value"]): box for box in form["keep"]}
    stretch_of = {row["index"]: row["stretch"] for row in rows}
    conversation = len(requests) > 1
    context = {
        "run": run,
        "title": title,
        "task": typed.mask(run.task),
        "form": form,
        "conversation": conversation,
        "kept": [(p, stretch_of.get(p.index, 1)) for p in plan if p.kept],
        "left_out": [
            (p, boxes.get(p.index), stretch_of.get(p.index, 1)) for p in plan if not p.kept
        ],
        "proposals": [
            (box, proposal, stretch)
            for box, (stretch, proposal) in zip(form["checks"], pairs, strict=True)
        ],
        # A replay's: the handlers and login scenario of the scenario it replayed, kept too.
        "replayed": scenario_selectors.replay_keeps(run=run, owner=request.user),
    }
    return render(request, "runs/save.html", context, status=400 if data is not None else 200)


@login_required
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = scenario_selectors.scenario_get(user=request.user, id=scenario_id)
    return detail_page(request, scenario)


@login_required
def scenario_export(request: HttpRequest, scenario_id: int, format: str) -> HttpResponse:
    if format not in ("json", "py"):
        raise Http404("export as .json or .py")
    scenario = scenario_selectors.scenario_get(user=request.user, id=scenario_id)
    document = scenario_selectors.scenario_document(scenario=scenario)
    if format == "json":
        body = json.dumps(document.to_dict(), indent=2, ensure_ascii=False) + "\n"
        response = HttpResponse(body, content_type="application/json")
        name = f"scenario-{scenario.pk}.json"
    else:
        try:
            code = scenario_selectors.scenario_pytest(scenario=scenario, document=document)
        except ScenarioInvalid as exc:  # a step no safe code can be written for
            messages.error(request, f"The pytest export was refused: {exc}")
            return _back(scenario, exc.index)
        response = HttpResponse(code, content_type="text/x-python")
        name = f"test_scenario_{scenario.pk}.py"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_POST
async def scenario_replay(request: HttpRequest, scenario_id: int) -> HttpResponse:
    user = await request.auser()
    if not user.is_authenticated:
        return redirect_to_login(request.path)
    scenario = await sync_to_async(scenario_selectors.scenario_get)(user=user, id=scenario_id)
    document = await sync_to_async(scenario_selectors.scenario_document)(scenario=scenario)
    form = ReplayForm(request.POST, document=document, user=user)
    # Checking the base URL reads the URL rules: sync-only.
    if not await sync_to_async(form.is_valid)():
        return await sync_to_async(detail_page)(
            request, scenario, bound={"replay": form}, status=400
        )
    run = await sync_to_async(services.replay_run_create)(
        owner=user, scenario=scenario, base_url=form.cleaned_data["base_url"],
        params=form.params(), signin_profile_id=form.signin_profile_id(),
        llm_profile_id=form.llm_profile_id(),
    )  # fmt: skip
    await wake()  # a worker claims it (dashboard/worker.py)
    return redirect("run_detail", run_id=run.pk)


@login_required
@require_POST
def scenario_step_param(request: HttpRequest, scenario_id: int, index: int) -> HttpResponse:
    """Make a step's typed value a parameter (its value the default) or a secret."""
    scenario = _owned(request, scenario_id)
    if _step_at(request, scenario, index) is None:
        return _back(scenario)
    name = request.POST.get("name", "").strip()
    try:
        changed = services.scenario_step_make_param(
            scenario=scenario, index=index, name=name, secret=bool(request.POST.get("secret"))
        )
    except ScenarioInvalid as exc:
        messages.error(request, str(exc))
        return _back(scenario, index)
    told = [f"step {i}: {step.describe()}" for i, step in changed]
    took = f"${{SECRET:{name}}}" if request.POST.get("secret") else f"${{{name}}}"
    if told:
        messages.success(
            request,
            f"Step {index} takes its value from {took} now, and so do the steps and "
            f"checks that used it: {'; '.join(told)}.",
        )
    else:
        messages.success(request, f"Step {index} takes its value from {took} now.")
    return _back(scenario, index)


@login_required
@require_POST
def scenario_edit(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Rename the scenario and change its description: only what the person changed on
    the page (``shown-<field>``: what it showed), so that a page shown before another tab
    renamed it does not name it back; a field changed in both is refused, as typed."""
    scenario = _owned(request, scenario_id)
    form = ScenarioEditForm(request.POST)
    if form.is_valid():
        fields = ("name", "description")
        shown = {f: str(request.POST[f"shown-{f}"]) for f in fields if f"shown-{f}" in request.POST}
        changed = {
            f: form.cleaned_data[f] for f in fields
            if f not in shown or not call_services.same_text(form.cleaned_data[f], shown[f])
        }  # fmt: skip
        try:
            call_services.scenario_rename(scenario=scenario, shown=shown, **changed)
        except call_services.SettingsChanged as exc:
            form.add_error(exc.field, str(exc))
        except ScenarioInvalid as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, "Name and description saved.")
            return _back(scenario)
    return detail_page(request, scenario, bound={"edit": form}, status=400)


@login_required
@require_POST
def scenario_check_add(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Add a check of the scenario's outcome (of the page, or of a step's element)."""
    scenario = _owned(request, scenario_id)
    document = scenario_selectors.scenario_document(scenario=scenario)
    steps = list(scenario.steps.order_by("index"))
    form = CheckForm(request.POST, element_steps=element_steps(steps, document))
    if form.is_valid():
        try:
            services.scenario_check_add(
                scenario=scenario, args=form.args(), like_step_id=form.like_step()
            )
        except ScenarioInvalid as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Check added: a replay now passes only if it holds.")
            return _back(scenario, len(document.steps))
    return detail_page(request, scenario, bound={"check": form}, status=400)


@login_required
@require_POST
def scenario_step_values(request: HttpRequest, scenario_id: int, index: int) -> HttpResponse:
    """Change a step's values (its args); refused whole when the step can't be read."""
    scenario = _owned(request, scenario_id)
    step = _step_at(request, scenario, index)
    if step is None:
        return _back(scenario)
    form = StepValuesForm(request.POST, step=step)
    if form.is_valid():
        try:
            changed = services.scenario_step_update(
                scenario=scenario, index=index, args=form.args(), led_to=form.led_to(),
                sent=form.sent(),
            )  # fmt: skip
        except ScenarioInvalid as exc:
            form.add_error(None, str(exc))
        else:
            told = "; ".join(f"step {i}: {later.describe()}" for i, later in changed)
            messages.success(request, f"Step {index} changed, and so did the steps and "
                             f"checks that used its value: {told}." if told
                             else f"Step {index} changed.")  # fmt: skip
            return _back(scenario, index)
    return detail_page(request, scenario, bound={f"step:{index}": form}, status=400)


@login_required
@require_POST
def scenario_step_move(request: HttpRequest, scenario_id: int, index: int) -> HttpResponse:
    scenario = _owned(request, scenario_id)
    step = _step_at(request, scenario, index)
    direction = request.POST.get("direction")
    if step is None:
        return _back(scenario)
    if direction not in ("up", "down"):
        messages.error(request, "Move a step up or down.")
        return _back(scenario, index)
    to = index - 1 if direction == "up" else index + 1
    if not 0 <= to < scenario.steps.count():
        messages.error(request, f"Step {index} is already the {'first' if to < 0 else 'last'}.")
        return _back(scenario, index)
    try:
        services.scenario_step_move(scenario=scenario, index=index, to=to)
    except ScenarioInvalid as exc:
        messages.error(request, str(exc))
        return _back(scenario, index)
    messages.success(request, f"Step {index} moved {direction}: it is step {to} now.")
    return _back(scenario, to)


@login_required
@require_POST
def scenario_step_delete(request: HttpRequest, scenario_id: int, index: int) -> HttpResponse:
    scenario = _owned(request, scenario_id)
    step = _step_at(request, scenario, index)
    if step is None:
        return _back(scenario)
    told = scenario_selectors.scenario_document(scenario=scenario).steps[index].describe()
    try:
        services.scenario_step_delete(scenario=scenario, index=index)
    except ScenarioInvalid as exc:
        messages.error(request, str(exc))
        return _back(scenario, index)
    messages.success(request, f"Step {index} ({told}) deleted.")
    return _back(scenario, max(index - 1, 0))


@login_required
@require_POST
def scenario_param_default(request: HttpRequest, scenario_id: int, name: str) -> HttpResponse:
    scenario = _owned(request, scenario_id)
    form = ParamDefaultForm(request.POST, prefix=f"param-{name}")
    if form.is_valid():
        default = form.cleaned_data["default"]
        try:
            services.scenario_param_set_default(
                scenario=scenario, name=name, default=default if default != "" else None
            )
        except ScenarioInvalid as exc:
            messages.error(request, str(exc))
            return _back(scenario)
        messages.success(request, f"Parameter {name} saved.")
        return _back(scenario)
    return detail_page(request, scenario, bound={f"param:{name}": form}, status=400)


def _step_at(request: HttpRequest, scenario: Scenario, index: int) -> ScenarioStep | None:
    """Step ``index``, if it is still the step the page showed (the form's ``step_id``):
    else a message says why nothing was changed."""
    step = scenario.steps.filter(index=index).first()
    shown = request.POST.get("step_id", "")
    if step is None:
        count = scenario.steps.count()
        messages.error(request, f"No step {index} in this scenario (it has {count} steps).")
    elif shown and shown != str(step.pk):
        messages.error(
            request,
            f"The scenario changed since this page was shown: step {index} is another step "
            "now. Nothing was changed; look again and retry.",
        )
        return None
    elif request.POST.get("step_version", step.version) != step.version:
        # A page shown before another tab changed the step: saved, its values would undo
        # that change (a parameter made there, gone again).
        messages.error(
            request,
            f"Step {index} changed since this page was shown (in another tab?). Nothing "
            "was changed; look again and retry.",
        )
        return None
    return step


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
