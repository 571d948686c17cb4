"""Reads of scenarios.  Every query that depends on who is asking goes through here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import (
    Count,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.shortcuts import get_object_or_404

from automation.limits import cut_text
from automation.recording import scenario as fmt
from automation.recording.export import to_pytest
from automation.recording.handlers import Handler
from automation.secrets import Secrets
from dashboard.models import (
    IdentityHeal,
    Run,
    Scenario,
    ScenarioCall,
    ScenarioStep,
    SecretGrant,
)


def _visible_scenarios(*, user: AbstractBaseUser) -> QuerySet[Scenario]:
    scenarios = Scenario.objects.all()
    return scenarios if user.is_staff else scenarios.filter(owner=user)


def scenario_list(*, user: AbstractBaseUser, q: str = "") -> QuerySet[Scenario]:
    """The scenarios ``user`` may see, those whose name, description or base URL contain
    ``q`` (any case) when it is given; each with its step count and its latest replay."""
    scenarios = _visible_scenarios(user=user)
    q = q.strip()
    if "\x00" in q:  # none holds one (refused in each), and SQLite's LIKE ends at a NUL
        scenarios = scenarios.none()  # (it matched every scenario; PostgreSQL refuses it)
    elif q:
        scenarios = scenarios.filter(
            Q(name__icontains=q) | Q(description__icontains=q) | Q(base_url__icontains=q)
        )
    latest = Run.objects.filter(scenario=OuterRef("pk"), kind=Run.Kind.REPLAY).order_by(
        "-created_at", "-pk"
    )
    return scenarios.annotate(
        step_count=Count("steps"),
        last_replay_id=Subquery(latest.values("pk")[:1]),
        last_replay_status=Subquery(latest.values("status")[:1]),
    ).select_related("owner")


def scenario_get(*, user: AbstractBaseUser, id: int) -> Scenario:
    """The scenario if ``user`` may see it, else Http404."""
    return get_object_or_404(_visible_scenarios(user=user), pk=id)


def scenario_document(*, scenario: Scenario) -> fmt.Scenario:
    """The stored scenario in its versioned format (what export writes and replay runs):
    with the scenarios its call steps call, as stored now, and its login scenario (by
    name, and in ``callees`` with the scenarios it calls, so that a file brings it)."""
    data = scenario_data(scenario=scenario)
    callees = scenario_callees(scenario=scenario, login=True)
    if callees:
        data["callees"] = {name: scenario_data(scenario=s) for name, s in callees.items()}
    if scenario.login_scenario_id is not None:
        login = Scenario.objects.filter(pk=scenario.login_scenario_id).first()
        data["login_scenario"] = login.name if login is not None else ""
    return fmt.Scenario.from_dict(data)


@dataclass(frozen=True)
class ReplayKeeps:
    """What a scenario saved from a run keeps of the scenario the run replayed, beside
    its steps (nothing, for a run that replayed none: an agent's, a conversation, an MCP
    session).  A replay's recorded steps are its scenario's own, but not what the
    scenario brought to the replay: the handlers that cleared a cookie wall record no
    step, and signing in again records only the login scenario's (left out, as a called
    scenario's are).  Saved without them, a scenario stopped for a person at the first
    cover its original cleared by itself, and no longer signed in again."""

    handlers: tuple[Handler, ...] = ()
    login_scenario: str = ""  # its name: the saver's own scenario of that name
    # What of it is not kept, and why, for the new scenario's description ("" when all is).
    left_out: str = ""

    def onto(self, document: fmt.Scenario) -> fmt.Scenario:
        """``document`` (the scenario saved from the run's steps) with these handlers and
        this login scenario, and what is not kept said after its description."""
        description = "\n\n".join(p for p in (document.description, self.left_out) if p)
        return replace(document, handlers=self.handlers, login_scenario=self.login_scenario,
                       description=description)  # fmt: skip


def replay_keeps(*, run: Run, owner: AbstractBaseUser) -> ReplayKeeps:
    """The handlers and login scenario of the scenario ``run`` replayed, as it is stored now
    (a handler kept from that very replay's live view included), for a scenario ``owner``
    saves from the run.  A login scenario is found by name among its owner's scenarios:
    one that is not ``owner``'s (a staff member saving another's replay) is left out, as
    is all when the replayed scenario was deleted since, each said in ``left_out``."""
    if run.kind != Run.Kind.REPLAY:
        return ReplayKeeps()
    replayed = Scenario.objects.filter(pk=run.scenario_id).first() if run.scenario_id else None
    if replayed is None:
        return ReplayKeeps(
            left_out="The scenario this run replayed was deleted since: its interruption "
            "handlers and login scenario, if it had any, are not kept."
        )
    # Read as a replay reads them (typed: HandlerInvalid names a handler that can't be).
    document = scenario_document(scenario=replayed)
    login = document.login_scenario
    if login and replayed.owner_id != owner.pk:
        return ReplayKeeps(
            handlers=document.handlers,
            left_out=f"Its login scenario {cut_text(login, 80)!r} is another person's "
            "(of the scenario this run replayed): not kept; choose one of yours on the "
            "scenario's page.",
        )
    return ReplayKeeps(handlers=document.handlers, login_scenario=login)


def secrets_granted(*, owner: AbstractBaseUser, document: fmt.Scenario) -> None:
    """SecretNotGranted naming the first secret the scenario, a scenario it calls or its
    login scenario types that ``owner`` was not granted: each replay of it by them would
    fail at once saying so (a batch's every row, a schedule's every firing).  Reads the
    database."""
    names = set(document.placeholders()[1])
    for callee in document.callees.values():
        names |= callee.placeholders()[1]
    Secrets(allowed=SecretGrant.objects.names_for(owner)).require(names)


def scenario_callees(*, scenario: Scenario, login: bool = False) -> dict[str, Scenario]:
    """The scenarios ``scenario`` calls, and those they call, by name (its call steps
    name them: dashboard.scenarios.services keeps the links when steps are saved); with
    ``login``, its login scenario and those that one calls too."""
    first = Scenario.objects.filter(pk=scenario.login_scenario_id).first() if login else None
    found: dict[str, Scenario] = {}
    for callee in _reached(scenario, first):
        found.setdefault(callee.name, callee)
    return found


def scenario_brought_clash(
    *, scenario: Scenario, login: Scenario | None
) -> tuple[Scenario, Scenario] | None:
    """Two scenarios of one name among those a file of ``scenario`` brings (those it
    calls, ``login`` as its login scenario, and those that one calls), or None."""
    found: dict[str, Scenario] = {}
    for callee in _reached(scenario, login):
        if found.setdefault(callee.name, callee).pk != callee.pk:
            return found[callee.name], callee
    return None


def _reached(scenario: Scenario, first: Scenario | None) -> Iterator[Scenario]:
    """Each scenario ``scenario`` calls, and those they call, and ``first`` (after those
    it calls itself) and those that one calls; each once, never ``scenario``."""
    seen, todo = {scenario.pk}, [scenario.pk]
    while todo:
        links = ScenarioCall.objects.filter(caller_id__in=todo).select_related("callee")
        callees = [link.callee for link in links]
        if first is not None:
            callees.append(first)
            first = None
        todo = []
        for callee in callees:
            if callee.pk not in seen:
                seen.add(callee.pk)
                todo.append(callee.pk)
                yield callee


def scenario_callee_ids(*, scenario_id: int) -> dict[str, int]:
    """The ids of the scenarios the scenario calls, and those they call, by name."""
    scenario = Scenario.objects.filter(pk=scenario_id).first()
    if scenario is None:
        return {}
    return {name: s.pk for name, s in scenario_callees(scenario=scenario).items()}


def scenario_callers(*, scenario: Scenario) -> QuerySet[Scenario]:
    """The scenarios with a call step that calls ``scenario``."""
    return Scenario.objects.filter(calls__callee=scenario).order_by("name", "pk")


def scenario_signs_in_for(*, scenario: Scenario) -> QuerySet[Scenario]:
    """The scenarios whose login scenario is ``scenario``."""
    return Scenario.objects.filter(login_scenario=scenario).order_by("name", "pk")


def scenario_users(*, scenario: Scenario) -> dict[int, str]:
    """The scenarios whose replays may replay ``scenario``'s steps: those that call it or
    sign in with it, and those that call or sign in with one of them, by id, each with how
    it comes to ("calls it", "signs in with 'Sign in', which calls it")."""
    how: dict[int, str] = {}
    todo = [(scenario.pk, "it")]
    while todo:
        reached, told = todo.pop(0)
        users = [
            *(("calls", pk, name) for pk, name in
              Scenario.objects.filter(calls__callee_id=reached).values_list("pk", "name")),
            *(("signs in with", pk, name) for pk, name in
              Scenario.objects.filter(login_scenario_id=reached).values_list("pk", "name")),
        ]  # fmt: skip
        for verb, pk, name in users:
            if pk != scenario.pk and pk not in how:
                how[pk] = f"{verb} {told}"
                todo.append((pk, f"{name!r}, which {how[pk]}"))
    return how


def scenario_data(*, scenario: Scenario) -> dict[str, Any]:
    """The stored scenario as the JSON its format reads, not yet checked: edits change
    this and check the result by reading it (``fmt.Scenario.from_dict``)."""
    return {
        "format": fmt.FORMAT,
        "version": fmt.SCENARIO_VERSION,
        "name": scenario.name,
        "description": scenario.description,
        "base_url": scenario.base_url,
        "params": scenario.params,
        "steps": list(scenario.steps.order_by("index").values(*_SCENARIO_STEP_FIELDS)),
        "handlers": scenario.handlers,
    }


_SCENARIO_STEP_FIELDS = (
    "action", "args", "identity", "role", "name", "selector", "url", "note", "intent", "led_to",
    "sent",
)  # fmt: skip


def scenario_heals(*, scenario_id: int) -> QuerySet[IdentityHeal]:
    """The scenario's heals in the order they happened (oldest first)."""
    heals = IdentityHeal.objects.filter(step__scenario_id=scenario_id).select_related("step")
    return heals.order_by("created_at", "pk")


def scenario_pending_steps(*, scenario_id: int) -> set[int]:
    """The steps (by index) for whose element a replay proposed a change that waits for
    approval."""
    proposed = scenario_heals(scenario_id=scenario_id).filter(status=IdentityHeal.Status.PROPOSED)
    return set(proposed.values_list("step__index", flat=True))


def scenario_pytest(*, scenario: Scenario, document: fmt.Scenario) -> str:
    """The stored scenario (``document``: as :func:`scenario_document` reads it) as a
    pytest module, telling the steps of it and of the scenarios it calls whose changes
    wait for approval; ScenarioInvalid for a step no safe code can be written for."""
    callees = {s.pk: name for name, s in scenario_callees(scenario=scenario).items()}
    proposed = IdentityHeal.objects.filter(
        step__scenario_id__in=callees, status=IdentityHeal.Status.PROPOSED
    ).values_list("step__scenario_id", "step__index")
    callees_pending: dict[str, set[int]] = {}
    for scenario_id, index in proposed:
        callees_pending.setdefault(callees[scenario_id], set()).add(index)
    pending = scenario_pending_steps(scenario_id=scenario.pk)
    return to_pytest(document, pending=pending, callees_pending=callees_pending)


def scenario_heal_history(*, scenario_id: int, limit: int = 50) -> list[IdentityHeal]:
    """The latest ``limit`` decided heals (applied or rejected), oldest first, in the order
    of the time the page shows for each: when it was decided (a proposal approved later
    than a confident heal was applied comes after it)."""
    decided = scenario_heals(scenario_id=scenario_id).exclude(status=IdentityHeal.Status.PROPOSED)
    latest = decided.order_by(F("decided_at").desc(nulls_last=True), "-created_at", "-pk")
    return list(reversed(latest[:limit]))


def scenario_last_replay(*, scenario_id: int) -> Run | None:
    """The scenario's latest replay run (whoever may see the scenario sees its replays)."""
    runs = Run.objects.filter(scenario_id=scenario_id, kind=Run.Kind.REPLAY)
    return runs.order_by("-created_at", "-pk").first()


def scenario_replay_report(*, scenario: Scenario, run: Run) -> dict[str, list[ScenarioStep]]:
    """How each step did in ``run``, by outcome: passed, healed (its identity was changed
    at once or on approval), proposed (a change waits or was rejected), failed,
    needs_person, skipped, not_run; steps the run never reached are "not_reached"."""
    heals = dict(
        IdentityHeal.objects.filter(run=run, step__scenario=scenario).values_list(
            "step_id", "status"
        )
    )
    report: dict[str, list[ScenarioStep]] = {}
    for step in scenario.steps.order_by("index"):
        report.setdefault(_replay_outcome(step, run.pk, heals.get(step.pk)), []).append(step)
    return report


def _replay_outcome(step: ScenarioStep, run_id: int, heal: str | None) -> str:
    if step.last_run_id != run_id or not step.last_status:
        return "not_reached"
    if step.last_status != "passed" or heal is None:
        return step.last_status
    return "healed" if heal == IdentityHeal.Status.APPLIED else "proposed"


def scenario_health(*, scenario: Scenario, count: int = 20) -> list[dict[str, Any]]:
    """The scenario's last ``count`` replays, oldest first, each as the health strip shows
    it: passed, healed (passed with an element found again another way), failed,
    needs_person, stopped, or still queued / running."""
    runs = (
        Run.objects.filter(scenario=scenario, kind=Run.Kind.REPLAY)
        .annotate(heal_count=Count("heals"))
        .order_by("-created_at", "-pk")[:count]
    )
    strip = []
    for run in reversed(list(runs)):
        if run.status == Run.Status.SUCCEEDED:
            state = "healed" if run.heal_count else "passed"
        elif run.status == Run.Status.PAUSED:
            state = "needs_person"
        else:
            state = run.status
        strip.append({"run_id": run.pk, "state": state, "at": run.created_at,
                      "reason": run.status_reason})  # fmt: skip
    return strip


def scenario_choices(*, user: AbstractBaseUser) -> QuerySet[Scenario]:
    """The scenarios ``user`` may see, by name: what the run history can filter by."""
    return _visible_scenarios(user=user).order_by("name", "pk")
