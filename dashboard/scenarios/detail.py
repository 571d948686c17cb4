"""The scenario page as it is shown: its steps a page at a time (each with its identity,
the values it types and how the latest replay did), its checks, parameters, schedules,
batches, handlers and healed identities, and every form on it, those of a refused POST
showing what was typed and why not.  The views that change a scenario show it again
through :func:`detail_page`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from automation.recording.params import used_in
from automation.recording.scenario import SECRET_ENV_PREFIX
from automation.recording.scenario import Scenario as Document
from automation.wording import curly_quoted
from dashboard.jobs import cron, schedules
from dashboard.jobs import selectors as job_selectors
from dashboard.jobs.forms import BatchForm, ScheduleForm
from dashboard.models import IdentityHeal, Run, Scenario, ScenarioStep, Schedule
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios.forms import (
    CallForm,
    CheckForm,
    ParamDefaultForm,
    ReplayForm,
    ScenarioEditForm,
    StepValuesForm,
    call_choices,
)
from dashboard.scenarios.handlers import handler_rows
from dashboard.scenarios.pages import STEPS_PER_PAGE, steps_page_of

__all__ = ["detail_page", "element_steps"]


def detail_page(
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
        "check_form": bound.get("check") or CheckForm(element_steps=element_steps(steps, document)),
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


def element_steps(steps: list[ScenarioStep], document: Document) -> list[tuple[int, str]]:
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
