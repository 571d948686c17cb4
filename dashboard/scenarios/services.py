"""Writes of scenarios: saving, importing, editing, replays made, identities healed,
the scenarios they call.  Small keyword-only functions named <entity>_<verb>."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from automation.browser.identity import ElementIdentity
from automation.errors import ActionInvalid, ScenarioInvalid
from automation.limits import cut_text
from automation.recording import scenario as fmt
from automation.recording.fromrun import from_run_steps
from automation.recording.params import carry, used_in
from automation.recording.replay import StepOutcome
from dashboard.models import (
    BatchRow,
    IdentityHeal,
    LLMProfile,
    Run,
    Scenario,
    ScenarioStep,
    signin_fields,
)
from dashboard.runs import selectors as run_selectors
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios.call_services import (
    ScenarioCalled,
    callee_existing,
    callees_in_order,
    calls_link,
    login_set,
)
from dashboard.scenarios.edit_services import (
    check_callers,
    check_jobs,
    check_no_live_replay,
    keep_used_params,
    touch,
)

# -- scenarios -------------------------------------------------------------------------


def scenario_save(
    *,
    owner: AbstractBaseUser,
    document: fmt.Scenario,
    source_run: Run | None = None,
    callees: Mapping[str, Scenario] | None = None,
) -> Scenario:
    """Store a whole scenario (already read and checked), in one transaction; its call
    steps call the scenarios ``callees`` names (an import's), else the owner's of their
    names."""
    with transaction.atomic():
        # One save of a person's at a time: two would both find the same name free.
        get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
        scenario = Scenario.objects.create(
            owner=owner,
            name=_name_free(owner_id=owner.pk, name=document.name),
            description=document.description,
            base_url=document.base_url,
            params=document.params,
            source_run=source_run,
            handlers=[h.to_dict() for h in document.handlers],
        )
        ScenarioStep.objects.bulk_create(
            ScenarioStep(scenario=scenario, index=i, **_step_fields(step))
            for i, step in enumerate(document.steps)
        )
        calls_link(scenario=scenario, document=document, chosen=callees)
        if document.login_scenario:
            login_set(scenario=scenario, name=document.login_scenario, chosen=callees)
    return scenario


def _name_free(*, owner_id: int, name: str) -> str:
    """``name``, or when the owner has a scenario of that name already (a file imported
    twice, a run saved again), the first of "name (2)", "name (3)"... they have not: a
    call finds its scenario by name, and each of a person's has its own."""
    most = Scenario._meta.get_field("name").max_length or 200
    name = name[:most]
    taken = set(
        Scenario.objects.filter(owner_id=owner_id, name__startswith=name[: most - 12])
        .values_list("name", flat=True)
    )  # fmt: skip
    number = 1
    free = name
    while free in taken:
        number += 1
        suffix = f" ({number})"
        free = name[: most - len(suffix)] + suffix
    return free


def scenario_import(*, owner: AbstractBaseUser, data: object) -> Scenario:
    """A scenario from its JSON form; ScenarioInvalid (and nothing stored) if it can't be
    read.  The scenarios it calls and its login scenario, that the file brings
    (``callees``), are stored too, as the owner's, unless the owner has each already (same
    name, same steps): CalleeClash when the owner's scenario of that name is another."""
    document = fmt.Scenario.from_dict(data)
    _check_fits(document, "the scenario")
    for name, callee in document.callees.items():
        _check_fits(callee, f"callee {cut_text(name, 40)!r}")
    with transaction.atomic():
        # One import of a person's at a time: two would both store a callee they lack.
        get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
        chosen: dict[str, Scenario] = {}
        for name, callee in callees_in_order(document):
            existing = callee_existing(owner_id=owner.pk, callee=callee, chosen=chosen)
            chosen[name] = existing or scenario_save(owner=owner, document=callee, callees=chosen)
        return scenario_save(owner=owner, document=document, callees=chosen)


def _check_fits(document: fmt.Scenario, what: str) -> None:
    """ScenarioInvalid when the scenario has no step (its replay would succeed having done
    and checked nothing, as would its batches, schedules and callers: a scenario keeps at
    least one step, as saving a run and deleting steps hold it to), or when its name or
    base URL is longer than its column: cut, the name would be another one (calls and
    sign-ins find a scenario by its name), the address another place (and a database that
    checks lengths refuses it untyped)."""
    if not document.steps:
        raise ScenarioInvalid(f"{what} has no steps: a scenario keeps at least one step")
    for field in ("name", "base_url"):
        most, value = Scenario._meta.get_field(field).max_length, getattr(document, field)
        if most is not None and len(value) > most:
            raise ScenarioInvalid(f"{what}: its {field} is {len(value)} characters long "
                                  f"(at most {most})")  # fmt: skip


class RunAtWork(ScenarioInvalid):
    """A run is saved as a scenario once it has ended (a conversation: its request's work
    has), with the checks its end proposed."""


def scenario_from_run(
    *,
    owner: AbstractBaseUser,
    run: Run,
    name: str = "",
    keep: Sequence[int] = (),
    checks: Sequence[int] = (),
    stretches: Sequence[int] = (),
) -> Scenario:
    """Save a run's recorded steps as a scenario ("save as scenario"): the steps that ran
    and can be replayed, the failed ones in ``keep`` (the person saw their effect), and
    the proposed checks in ``checks`` (their positions in the run's proposals), each
    placed where its stretch of the conversation ended.  ``stretches``: only the steps and
    checks of these stretches (empty: all).  Every step left out is listed, with why, in
    the scenario's description.  A replay's keeps its scenario's handlers and login
    scenario (``scenario_selectors.replay_keeps``).  No password the run typed is kept:
    not in ``name`` (refused; none given, the run's title with it masked), nor in what
    its steps do."""
    if not run.is_final:  # what it did so far, and none of the checks its end proposes
        raise RunAtWork(
            f"the run is still at work ({run.status}): it is saved once it has ended",
            hint="wait for it to end, or stop it, then save it",
        )
    every = run_selectors.run_step_rows(run=run)  # a password typed in any stretch counts
    typed = run_selectors.run_typed_passwords(run=run, rows=every)
    name = name.strip() or typed.mask(run.title)
    typed.check_name(name)
    rows = run_selectors.run_step_rows(run=run, stretches=stretches) if stretches else every
    proposals = run_selectors.run_proposed_checks(run=run)
    unknown = [i for i in checks if not 0 <= i < len(proposals)]
    if unknown:
        raise ScenarioInvalid(f"no proposed check {unknown[0]} for this run")
    placed = []
    for i in checks:
        stretch, proposal = proposals[i]
        if stretches and stretch not in stretches:
            raise ScenarioInvalid(
                f"proposed check {i} ({proposal.check.describe()}) is of request {stretch}, "
                "which is not saved"
            )
        # Right after the last step of its stretch (or of the stretches before it).
        after = max((row["index"] for row in rows if row["stretch"] <= stretch), default=-1)
        placed.append((after, proposal.check))
    words = typed.found_in([run.task, *run_selectors.run_requests(run=run)])
    document = from_run_steps(rows, name=name, keep=keep, placed_checks=placed, passwords=words)
    document = replace(document, description=typed.mask(document.description),
                       params={**_params_run_with(document, run), **document.params})  # fmt: skip
    if not any(not s.is_check for s in document.steps):
        raise ScenarioInvalid("the run has no step that can be replayed")
    # A replay's steps, saved, need what its scenario brought to clear covers and sign in.
    document = scenario_selectors.replay_keeps(run=run, owner=owner).onto(document)
    return scenario_save(owner=owner, document=document, source_run=run)


def _params_run_with(document: fmt.Scenario, run: Run) -> dict[str, dict[str, Any]]:
    """The parameters a scenario saved from ``run`` declares: those its steps use (a
    replay's steps keep the placeholders they ran with), each with the value it had in
    that run as its default (a saved replay replays as it ran; one without a default
    would refuse to replay without a value)."""
    given = run.params if isinstance(run.params, dict) else {}
    return {
        name: {"default": str(given[name])} if name in given else {}
        for name in sorted(document.placeholders()[0])
    }


def scenario_check_add(
    *, scenario: Scenario, args: Mapping[str, Any], like_step_id: int | None = None
) -> None:
    """Add an expect check at the end: of the page, or (``like_step_id``) of the element
    of that step (by its id: the step a page showed, wherever it moved since), found by its
    identity.  Refused whole (ScenarioInvalid) if it can't be read, or that step is gone."""
    with transaction.atomic():
        data = scenario_selectors.scenario_data(scenario=_locked(scenario))
        check_no_live_replay(scenario)
        check: dict[str, Any] = {"action": fmt.EXPECT, "args": dict(args)}
        if like_step_id is not None:
            source = scenario.steps.filter(pk=like_step_id).first()
            if source is None:
                raise ScenarioInvalid("the step whose element it checks was deleted since")
            if not source.identity:
                raise ScenarioInvalid(f"step {source.index} has no element to check")
            check["identity"] = source.identity
        data["steps"].append(check)
        document = fmt.Scenario.from_dict(data)
        ScenarioStep.objects.create(
            scenario=scenario, index=len(document.steps) - 1,
            **_step_fields(document.steps[-1]),
        )  # fmt: skip
        keep_used_params(scenario, document)


def scenario_step_make_param(
    *, scenario: Scenario, index: int, name: str, secret: bool = False
) -> list[tuple[int, fmt.ScenarioStep]]:
    """Turn a step's typed value into ``${name}`` (its value the default) or a secret.
    A parameter is carried into the later steps and checks that depend on the value
    (their elements' identities, the texts their checks expect, where they ran and led):
    returns those steps
    (index, step as it is now), for the person to see what changed."""
    with transaction.atomic():
        before = scenario_selectors.scenario_document(scenario=_locked(scenario))
        document = before.with_param(index, name, secret=secret)
        changed = _steps_written(scenario, before, document, index)
        touch(scenario.pk, params=document.params)
        # Proposals found with the value, shown and approved as the step now is.
        for heal in IdentityHeal.objects.select_related("step__scenario").filter(
            step__scenario=scenario, status=IdentityHeal.Status.PROPOSED
        ):
            carried = _with_placeholders(heal.after, heal.step)
            if carried != heal.after:
                IdentityHeal.objects.filter(pk=heal.pk).update(after=carried)
    return changed


# Edits of a stored scenario.  Each reads the scenario again under a lock, checks the edited
# whole by reading it in the scenario format (ScenarioInvalid, and nothing is written, when
# it can't be read), writes it, and drops the parameters no step uses any more.

# Steps move out of the way to indexes past this while a reorder renumbers them: the unique
# (scenario, index) constraint is checked row by row, so no two may ever share an index.
_REORDER_OFFSET = 1_000_000


def scenario_step_update(
    *, scenario: Scenario, index: int, args: Mapping[str, Any], led_to: str | None = None,
    sent: str | None = None,
) -> list[tuple[int, fmt.ScenarioStep]]:  # fmt: skip
    """Give step ``index`` new args (its values: a fill's value, a navigate's url...) and,
    unless None, where it leads (its ``led_to``: "" judges it no more by where it led) and
    the write it sends (its ``sent``: "" judges it no more by it).  ScenarioInvalid when
    what it is given can't be read (nothing changed).
    A step that types another parameter instead of one later steps used takes them along
    (:meth:`automation.recording.scenario.Scenario.following`): returns those steps
    (index, step as it is now), for the person to see what changed."""
    with transaction.atomic():
        data = scenario_selectors.scenario_data(scenario=_locked(scenario))
        _check_index(data, index)
        was = data["steps"][index].get("args", {})
        data["steps"][index] = {**data["steps"][index], "args": dict(args)}
        if led_to is not None:
            data["steps"][index]["led_to"] = led_to
        if sent is not None:
            data["steps"][index]["sent"] = sent
        edited = fmt.Scenario.from_dict(data)
        document, renamed = edited.following(index, was, led_to=led_to is None)
        calls_link(scenario=scenario, document=document)
        changed = _steps_written(scenario, edited, document, index, edited_too=True)
        keep_used_params(scenario, document)
        # Proposals found with the parameter, approved as the steps now are.
        for heal in IdentityHeal.objects.filter(
            step__scenario=scenario, status=IdentityHeal.Status.PROPOSED
        ):
            after = heal.after
            for name, new in renamed.items():
                after = fmt.renamed_in(after, name, new)
            if after != heal.after:
                IdentityHeal.objects.filter(pk=heal.pk).update(after=after)
    return changed


def scenario_step_move(*, scenario: Scenario, index: int, to: int) -> None:
    """Move step ``index`` to position ``to``; the steps between shift by one.  A step
    keeps its own row, so its heal history and latest replay go with it."""
    with transaction.atomic():
        data = scenario_selectors.scenario_data(scenario=_locked(scenario))
        _check_index(data, index)
        check_no_live_replay(scenario)
        if not 0 <= to < len(data["steps"]):
            raise ScenarioInvalid(f"step {index} can't move to position {to}", index=index)
        order = list(scenario.steps.order_by("index").values_list("pk", flat=True))
        order.insert(to, order.pop(index))
        _renumber(scenario, order)
        touch(scenario.pk)


def scenario_step_delete(*, scenario: Scenario, index: int) -> None:
    """Delete step ``index`` (and its heal history); the steps after it move up."""
    with transaction.atomic():
        data = scenario_selectors.scenario_data(scenario=_locked(scenario))
        _check_index(data, index)
        check_no_live_replay(scenario)
        if len(data["steps"]) == 1:
            raise ScenarioInvalid("a scenario keeps at least one step", index=index)
        del data["steps"][index]
        document = fmt.Scenario.from_dict(data)
        calls_link(scenario=scenario, document=document)
        order = list(scenario.steps.order_by("index").values_list("pk", flat=True))
        ScenarioStep.objects.filter(pk=order.pop(index)).delete()
        _renumber(scenario, order)
        keep_used_params(scenario, document)


def scenario_param_set_default(*, scenario: Scenario, name: str, default: str | None) -> None:
    """Set (None: remove, so replay asks for it) the default value of parameter ``name``."""
    with transaction.atomic():
        data = scenario_selectors.scenario_data(scenario=_locked(scenario))
        used = fmt.Scenario.from_dict(data).placeholders()[0]
        params = dict(data["params"])
        if name not in used and name not in params:
            raise ScenarioInvalid(f"no parameter {name!r} in this scenario")
        spec = {k: v for k, v in (params.get(name) or {}).items() if k != "default"}
        params[name] = spec if default is None else {**spec, "default": default}
        document = fmt.Scenario.from_dict({**data, "params": params})
        check_jobs(scenario, document)
        touch(scenario.pk, params=document.params)
        check_callers(scenario)


def _locked(scenario: Scenario) -> Scenario:
    """The scenario as stored now; concurrent edits of it wait for this transaction."""
    return Scenario.objects.select_for_update().get(pk=scenario.pk)


def _check_index(data: Mapping[str, Any], index: int) -> None:
    count = len(data["steps"])
    if not 0 <= index < count:
        raise ScenarioInvalid(
            f"no step {index} in this scenario (it has {count} steps, 0 to {count - 1})",
            index=index,
        )


def _renumber(scenario: Scenario, order: list[int]) -> None:
    """Give the steps (by pk, in ``order``) the indexes 0, 1, ...: the steps that move go
    past the offset first, so no index is ever held twice."""
    current = dict(scenario.steps.values_list("pk", "index"))
    moving = {pk: i for i, pk in enumerate(order) if current[pk] != i}
    ScenarioStep.objects.filter(pk__in=moving).update(index=F("index") + _REORDER_OFFSET)
    for pk, index in moving.items():
        ScenarioStep.objects.filter(pk=pk).update(index=index)


def replay_run_create(
    *, owner: AbstractBaseUser, scenario: Scenario, base_url: str, params: dict[str, str],
    batch_row: BatchRow | None = None, signin_profile_id: int | None = None,
    llm_profile_id: int | None = None, unattended: bool = False,
) -> Run:  # fmt: skip
    """A queued replay; ``signin_profile_id``: the sign-in profile its tab starts with
    (checked for its owner when it starts: dashboard.runs.signins); ``llm_profile_id``: the
    model that may reach a step's intent when its recorded element is gone; ``unattended``
    (a batch's row is): nobody watches it, so it waits for a person only so long."""
    heal_model = LLMProfile.objects.filter(pk=llm_profile_id).first() if llm_profile_id else None
    return Run.objects.create(
        **signin_fields(signin_profile_id),
        llm_profile=heal_model,
        llm_profile_name=heal_model.name if heal_model else "",
        owner=owner,
        kind=Run.Kind.REPLAY,
        scenario=scenario,
        params=params,
        task=f"replay: {scenario.name}",
        start_url=base_url,
        planner="replay",
        batch_row=batch_row,
        unattended=unattended or batch_row is not None,
    )


def scenario_step_replayed(
    *, scenario_id: int, outcome: StepOutcome | dict[str, Any], run_id: int | None = None
) -> None:
    """Keep on the step how the latest replay did: status, strategy, score."""
    data = outcome.to_dict() if isinstance(outcome, StepOutcome) else outcome
    score = data.get("score")
    ScenarioStep.objects.filter(scenario_id=scenario_id, index=data["index"]).update(
        last_status=str(data.get("status", ""))[:20],
        last_strategy=str(data.get("strategy") or "")[:20],
        last_score=float(score) if isinstance(score, int | float) else None,
        last_run_id=run_id,
        last_replayed_at=timezone.now(),
    )


def heal_record(
    *, scenario_id: int, outcome: StepOutcome | dict[str, Any], run_id: int | None = None,
    succeeded: bool = True,
) -> IdentityHeal | None:  # fmt: skip
    """Keep what a replay found changed in a step: written to the step at once when the
    replay was confident, else proposed for a person to approve.  History either way.
    From a replay that did not succeed (``succeeded`` false), only proposed: it may have
    gone wrong before it failed (on another customer's row, whose name begins with the one
    given), and what it found there is no change of the app's to write unasked.
    Replays running side by side (a batch) find the same change: the first one's record
    stands for all (None when the step knows the element so already, else the proposal
    waiting with the same element, written now if this replay was confident)."""
    data = outcome.to_dict() if isinstance(outcome, StepOutcome) else outcome
    if not data.get("healed") or data.get("heal") not in ("confident", "proposed"):
        return None
    if not succeeded:
        data = {**data, "heal": "proposed"}
    with transaction.atomic():
        step = (
            ScenarioStep.objects.select_for_update()
            .filter(scenario_id=scenario_id, index=data["index"])
            .first()
        )
        if step is None:  # the scenario was edited since
            return None
        healed = _with_placeholders(data["healed"], step)
        if _same_element(step.identity, healed):
            return None
        for waiting in step.heals.filter(status=IdentityHeal.Status.PROPOSED):
            if _same_element(waiting.after, healed):
                if data["heal"] == "confident":  # sure now: what waited is written
                    _apply(waiting, step, user=None)
                return waiting
        heal = IdentityHeal.objects.create(
            step=step,
            run_id=run_id,
            status=IdentityHeal.Status.PROPOSED,
            strategy=data.get("strategy", ""),
            score=data.get("score"),
            changes=data.get("changes", []),
            before=step.identity,
            after=healed,
        )
        if data["heal"] == "confident":
            _apply(heal, step, user=None)
    return heal


def heal_decide(*, heal_id: int, approve: bool, user: AbstractBaseUser) -> IdentityHeal:
    """A person approves (the identity is written to the step) or rejects a proposed heal."""
    with transaction.atomic():
        heal = IdentityHeal.objects.select_for_update().select_related("step").get(pk=heal_id)
        if heal.status != IdentityHeal.Status.PROPOSED:
            raise ScenarioInvalid(f"this change was already {heal.status}")
        if approve:
            _apply(heal, heal.step, user=user)
        else:
            heal.status = IdentityHeal.Status.REJECTED
            heal.decided_by = user  # type: ignore[assignment]
            heal.decided_at = timezone.now()
            heal.save(update_fields=["status", "decided_by", "decided_at"])
    return heal


def _apply(heal: IdentityHeal, step: ScenarioStep, *, user: AbstractBaseUser | None) -> None:
    """Write the heal to the step: the element as found now, the identities it was known
    by before kept as its variants (replay finds it by any of them)."""
    heal.before, heal.after = step.identity, _with_placeholders(heal.after, step)
    step.identity = _confirmed(step.identity, heal.after)
    step.save(update_fields=["identity"])
    heal.status = IdentityHeal.Status.APPLIED
    heal.decided_by = user  # type: ignore[assignment]
    heal.decided_at = timezone.now()
    heal.save(update_fields=["before", "after", "status", "decided_by", "decided_at"])
    touch(step.scenario_id)


def _with_placeholders(found: Any, step: ScenarioStep) -> Any:
    """``found`` (an element a replay found, as its identity) with each parameter the
    step's identity uses written back where the parameter's default stands, as making the
    parameter carried it into the step.  A heal found before the value was made a
    parameter (proposed then, or by a replay begun before) spells the value out: written
    so, every later value would find the first one's element."""
    if not step.identity or not found:
        return found
    declared = step.scenario.params or {}
    try:
        stored, now = ElementIdentity.from_dict(step.identity), ElementIdentity.from_dict(found)
    except ActionInvalid:
        return found
    for name in sorted(used_in(stored, declared) - used_in(now, declared)):
        default = declared[name].get("default") if isinstance(declared[name], dict) else None
        if isinstance(default, str):
            now = carry(now, default, name)
    return now.to_dict()


def _same_element(known: Any, found: Any) -> bool:
    """Whether a stored identity already says all a replay found
    (ElementIdentity.says_all_of)."""
    if not known or not found:
        return False
    try:
        before, now = ElementIdentity.from_dict(known), ElementIdentity.from_dict(found)
    except ActionInvalid:
        return False
    return before.says_all_of(now)


def _confirmed(before: Any, after: dict[str, Any]) -> dict[str, Any]:
    now = ElementIdentity.from_dict(after)
    if not before:
        return now.to_dict()
    try:
        return ElementIdentity.from_dict(before).confirmed_as(now).to_dict()
    except ActionInvalid:
        return now.to_dict()  # an identity that can't be read any more is not kept


def _steps_written(
    scenario: Scenario, before: fmt.Scenario, document: fmt.Scenario, index: int, *,
    edited_too: bool = False,
) -> list[tuple[int, fmt.ScenarioStep]]:  # fmt: skip
    """Write the steps of ``document`` that differ from ``before`` (their values, element,
    addresses; step ``index`` whatever it is, ``edited_too``): the others that changed
    with step ``index``, as (index, step as it is now)."""
    changed = []
    for i, (old, new) in enumerate(zip(before.steps, document.steps, strict=True)):
        if old == new and not (edited_too and i == index):
            continue
        fields = _step_fields(new)
        ScenarioStep.objects.filter(scenario=scenario, index=i).update(
            args=fields["args"], identity=fields["identity"], url=fields["url"],
            led_to=fields["led_to"], sent=fields["sent"],
        )  # fmt: skip
        if i != index:
            changed.append((i, new))
    return changed


def _step_fields(step: fmt.ScenarioStep) -> dict[str, Any]:
    return {
        "action": step.action,
        "args": step.args,
        "identity": step.identity.to_dict() if step.identity else None,
        "role": step.role,
        "name": step.name,
        "selector": step.selector,
        "url": step.url,
        "note": step.note,
        "intent": step.intent,
        "led_to": step.led_to,
        "sent": step.sent,
    }


def scenario_delete(*, scenario: Scenario) -> list[int]:
    """Delete the scenario (its steps, heals, batches and schedules go with it; its runs
    stay); ScenarioCalled when another scenario calls it or signs in with it.  Returns
    its batches' replays still queued, at work or waiting for a person, for the caller
    to stop (dashboard.jobs.batches.stop_replays): no batch page is left to stop them."""
    with transaction.atomic():
        callers = list(scenario_selectors.scenario_callers(scenario=scenario))
        users = list(scenario_selectors.scenario_signs_in_for(scenario=scenario))
        if callers or users:
            said = []
            if callers:
                said.append("is called by " + ", ".join(f"{c.name!r} ({c.pk})" for c in callers))
            if users:
                said.append("is the login scenario of "
                            + ", ".join(f"{u.name!r} ({u.pk})" for u in users))  # fmt: skip
            raise ScenarioCalled(
                f"{scenario.name!r} {' and '.join(said)}",
                callers=[f"{c.name!r} ({c.pk})" for c in [*callers, *users]],
                hint="delete their call steps, or choose another login scenario for them, first",
            )  # fmt: skip
        at_work = list(
            Run.objects.filter(batch_row__batch__scenario=scenario)
            .exclude(status__in=Run.FINAL)
            .values_list("pk", flat=True)
        )
        scenario.delete()
    return at_work
