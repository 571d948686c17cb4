"""Scenario pages: save a run as a scenario, import and export it, search them, edit one
(rename, reorder, delete and change steps, parameters), review how its latest replay did
and the identities it healed, and start a replay (which then runs like any run, on its run
page).  Anyone who may see a scenario sees these pages; only its owner changes it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from automation.errors import ScenarioInvalid
from automation.recording import fromrun
from automation.recording.params import used_in
from automation.recording.scenario import SECRET_ENV_PREFIX
from automation.recording.scenario import Scenario as Document
from automation.wording import curly_quoted
from dashboard.jobs import cron, schedules
from dashboard.jobs import selectors as job_selectors
from dashboard.jobs.forms import BatchForm, ScheduleForm
from dashboard.models import IdentityHeal, Run, Scenario, ScenarioStep, Schedule
from dashboard.runs import selectors as run_selectors
from dashboard.runs.doorbell import wake
from dashboard.scenarios import call_services, services
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios.forms import (
    CallForm,
    CheckForm,
    ImportScenarioForm,
    ParamDefaultForm,
    ReplayForm,
    SaveScenarioForm,
    ScenarioEditForm,
    StepValuesForm,
    call_choices,
)
from dashboard.scenarios.handlers import handler_rows
from dashboard.scenarios.pages import STEPS_PER_PAGE, steps_page_of
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
    }
    return render(request, "runs/save.html", context, status=400 if data is not None else 200)


@login_required
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = scenario_selectors.scenario_get(user=request.user, id=scenario_id)
    return _detail_page(request, scenario)


def _detail_page(
    request: HttpRequest,
    scenario: Scenario,
    *,
    bound: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The scenario page; ``bound`` holds the forms of a refused POST (keyed "replay",
    "edit", "step:<index>", "param:<name>", "call"; "handler": the words of a new handler) so
    they show what was typed and why not."""
    bound = bound or {}
    document = scenario_selectors.scenario_document(scenario=scenario)
    is_owner = scenario.owner_id == request.user.pk
    params, secrets = document.placeholders()
    heals = scenario_selectors.scenario_heals(scenario_id=scenario.pk)
    last_replay = scenario_selectors.scenario_last_replay(scenario_id=scenario.pk)
    steps = list(scenario.steps.order_by("index"))
    report = _report(scenario, last_replay)
    outcomes = {step.pk: key for key, _label, rows in report for step in rows}
    # A page of steps at a time (``?steps=``, else the page of a step a refused form was
    # sent for): each step's rows, forms and identity are HTML of their own.
    asked = request.GET.get("steps") or _bound_page(bound)
    shown = Paginator(steps, STEPS_PER_PAGE).get_page(asked)
    rows = [_step_row(step, document, bound, outcomes, is_owner=is_owner) for step in shown]
    choices = call_choices(scenario)
    scenario_schedules = scenario.schedules.select_related("llm_profile").order_by("pk")
    context = {
        "scenario": scenario,
        "is_owner": is_owner,
        "check_form": bound.get("check")
        or CheckForm(element_steps=_element_steps(steps, document)),
        "checks": _check_rows(steps, document),
        "steps_page": shown,
        "form": bound.get("replay") or ReplayForm(document=document, user=request.user),
        "edit_form": bound.get("edit")
        or ScenarioEditForm(initial={"name": scenario.name, "description": scenario.description}),
        "rows": rows,
        "params": _param_rows(document, params, bound),
        "secrets": [(name, SECRET_ENV_PREFIX + name) for name in sorted(secrets)],
        "last_replay": last_replay,
        "report": report,
        "proposed": heals.filter(status=IdentityHeal.Status.PROPOSED),
        "history": scenario_selectors.scenario_heal_history(scenario_id=scenario.pk),
        "runs": scenario.runs.order_by("-created_at")[:20],
        "login_choices": choices,
        "call_form": bound.get("call") or CallForm(choices=choices),
        "callers": scenario_selectors.scenario_callers(scenario=scenario),
        "signs_in_for": scenario_selectors.scenario_signs_in_for(scenario=scenario),
        "batch_form": bound.get("batch") or BatchForm(document=document, user=request.user),
        "batches": job_selectors.batch_list(user=request.user, scenario=scenario)[:10],
        "schedule_form": bound.get("schedule")
        or ScheduleForm(scenario=scenario, document=document, user=request.user),
        "schedules": [_schedule_row(s) for s in scenario_schedules],
        "timezones": cron.timezone_choices(),
        "health": scenario_selectors.scenario_health(scenario=scenario),
        "handlers": handler_rows(document=document),
        "handler_typed": bound.get("handler"),  # a refused new handler's words
    }
    return render(request, "scenarios/detail.html", context, status=status)


def _element_steps(steps: list[ScenarioStep], document: Document) -> list[tuple[int, str]]:
    """The steps whose element a check may be of, by id (a page shown before a step moved
    in another tab still means that step), as the page names them."""
    return [
        (step.pk, f"step {i}: {s.describe()}")
        for i, (step, s) in enumerate(zip(steps, document.steps, strict=True))
        if s.identity is not None and not s.is_check
    ]


def _schedule_row(schedule: Schedule) -> dict[str, Any]:
    """A schedule as its scenario's page shows it: when in words, its next times, its
    latest firings with their alerts' deliveries (the outbox)."""
    firings = schedule.firings.select_related("run", "batch").prefetch_related("deliveries")
    return {
        "schedule": schedule,
        "words": cron.describe(schedule.cron),
        "upcoming": schedules.upcoming(schedule),
        "pending": job_selectors.schedule_pending_alerts(schedule=schedule),
        "fired": schedule.firings.count(),  # the page looks again after "Run now"
        "firings": [
            {"firing": firing, "deliveries": [job_selectors.delivery_state(delivery=d)
                                              for d in firing.deliveries.all()]}
            for firing in firings[:5]
        ],
    }  # fmt: skip


def _bound_page(bound: dict[str, Any]) -> int:
    """The page of steps that shows the step a refused form was sent for (else the first)."""
    for key in bound:
        if key.startswith("step:"):
            return steps_page_of(int(key.removeprefix("step:")))
    return 1


@dataclass(frozen=True)
class CheckRow:
    """A check in the list of the outcome's checks: its step, and what it expects."""

    step: ScenarioStep
    target: str


def _check_rows(steps: list[ScenarioStep], document: Document) -> list[CheckRow]:
    return [CheckRow(step, document.steps[step.index].words(quote=curly_quoted).target)
            for step in steps if step.action == "expect"]  # fmt: skip


@dataclass(frozen=True)
class StepRow:
    """One step as the page shows it: what it acts on, told readably, and its forms."""

    step: ScenarioStep
    verb: str  # its action in words (automation.wording): tick or untick a box; expect
    target: str
    args: list[tuple[str, str]]
    facts: list[tuple[str, str]]
    identity_json: str
    # Where it led when recorded, when the replay judges it by that and it went elsewhere
    # than the page it was done on (on every step, it would say "stayed here" again).
    led_to: str
    typed_value: bool  # its typed value can become a parameter or a secret
    values: StepValuesForm | None  # for the owner
    is_first: bool
    is_last: bool
    # How the latest replay did (healed and proposed told apart from passed); for a step
    # that replay did not reach, how the replay that last reached it did.
    outcome: str


def _step_row(
    step: ScenarioStep,
    document: Document,
    bound: dict[str, Any],
    outcomes: dict[int, str],
    *,
    is_owner: bool,
) -> StepRow:
    identity = step.identity or {}
    form = bound.get(f"step:{step.index}")
    if form is None and is_owner:
        form = StepValuesForm(step=step)
    document_step = document.steps[step.index]
    # Its action, and what it acts on or expects, as a person names it: a box with no
    # name of its own by its row.
    words = document_step.words(quote=curly_quoted)
    return StepRow(
        step=step,
        verb=words.verb,
        target=words.target,
        args=[(k, v if isinstance(v, str) else json.dumps(v)) for k, v in step.args.items()],
        facts=_facts(step, identity),
        identity_json=json.dumps(identity, indent=2, ensure_ascii=False) if identity else "",
        led_to=step.led_to
        if document_step.judged_where_it_led and step.led_to.rstrip("/") != step.url.rstrip("/")
        else "",
        typed_value=document.steps[step.index].typed_value() is not None,
        values=form,
        is_first=step.index == 0,
        is_last=step.index == len(document.steps) - 1,
        outcome=_outcome(outcomes.get(step.pk, ""), step.last_status),
    )


def _outcome(latest: str, last_status: str) -> str:
    return last_status if latest in ("", "not_reached") else latest


def _facts(step: ScenarioStep, identity: dict[str, Any]) -> list[tuple[str, str]]:
    """The other ways replay can find the element, the most telling first."""
    test_ids = identity.get("test_ids") or {}
    tag = identity.get("tag", "")
    if tag and identity.get("type"):
        tag = f"{tag} type={identity['type']}"
    selectors_ = list(identity.get("selectors") or ([step.selector] if step.selector else []))
    facts = [
        ("test id", ", ".join(f"{k}={v}" for k, v in test_ids.items())),
        ("label", identity.get("aria_label", "")),
        ("placeholder", identity.get("placeholder", "")),
        ("name", identity.get("name_attr", "")),
        ("id", identity.get("id", "")),
        ("tag", tag),
        ("in row", identity.get("row", "")),
        ("under", identity.get("section", "")),
        ("selectors", "  ·  ".join(selectors_)),
        ("also known as", _variants(identity)),
    ]
    return [(label, str(value)) for label, value in facts if value]


def _variants(identity: dict[str, Any]) -> str:
    """The identities the element was confirmed in before (earlier releases), briefly."""
    told = []
    for variant in identity.get("variants") or ():
        role, name = variant.get("role", ""), variant.get("name", "")
        where = variant.get("id") or (variant.get("selectors") or [""])[0]
        told.append(f"{role} “{name}”" + (f" ({where})" if where else ""))
    return "; ".join(told)


def _param_rows(
    document: Document, used: set[str], bound: dict[str, Any]
) -> list[tuple[str, ParamDefaultForm, list[int]]]:
    """Each parameter with its default's form and the steps that use it."""
    rows = []
    for name in sorted(used | set(document.params)):
        default = (document.params.get(name) or {}).get("default")
        form = bound.get(f"param:{name}") or ParamDefaultForm(
            initial={"default": default}, prefix=f"param-{name}"
        )
        token = "${" + name + "}"
        steps = [
            i for i, s in enumerate(document.steps)
            if token in json.dumps(s.args) or name in used_in(s.identity, document.params)
        ]  # fmt: skip
        rows.append((name, form, steps))
    return rows


# The outcomes of a replay step, in the order the report lists them.
OUTCOMES = (
    ("passed", "passed"),
    ("healed", "healed"),
    ("proposed", "change proposed"),
    ("failed", "failed"),
    ("needs_person", "needed a person"),
    ("skipped", "skipped"),
    ("not_run", "not run"),
    ("not_reached", "not reached"),
)


def _report(scenario: Scenario, run: Run | None) -> list[tuple[str, str, list[ScenarioStep]]]:
    """The latest replay's count of steps by outcome (the five main ones always shown)."""
    if run is None:
        return []
    by_outcome = scenario_selectors.scenario_replay_report(scenario=scenario, run=run)
    main = {"passed", "healed", "proposed", "failed", "needs_person"}
    return [
        (key, label, by_outcome.get(key, []))
        for key, label in OUTCOMES
        if key in main or by_outcome.get(key)
    ]


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
        return await sync_to_async(_detail_page)(
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
    return _detail_page(request, scenario, bound={"edit": form}, status=400)


@login_required
@require_POST
def scenario_check_add(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Add a check of the scenario's outcome (of the page, or of a step's element)."""
    scenario = _owned(request, scenario_id)
    document = scenario_selectors.scenario_document(scenario=scenario)
    steps = list(scenario.steps.order_by("index"))
    form = CheckForm(request.POST, element_steps=_element_steps(steps, document))
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
    return _detail_page(request, scenario, bound={"check": form}, status=400)


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
                scenario=scenario, index=index, args=form.args(), led_to=form.led_to()
            )
        except ScenarioInvalid as exc:
            form.add_error(None, str(exc))
        else:
            told = "; ".join(f"step {i}: {later.describe()}" for i, later in changed)
            messages.success(request, f"Step {index} changed, and so did the steps and "
                             f"checks that used its value: {told}." if told
                             else f"Step {index} changed.")  # fmt: skip
            return _back(scenario, index)
    return _detail_page(request, scenario, bound={f"step:{index}": form}, status=400)


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
    return _detail_page(request, scenario, bound={f"param:{name}": form}, status=400)


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
