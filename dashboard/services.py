"""Writes.  Small keyword-only functions named <entity>_<verb>; views and the runner call these."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from automation.agent.output import check_schema
from automation.browser.identity import ElementIdentity
from automation.errors import ActionInvalid, ScenarioInvalid
from automation.limits import MAX_FIELD_CHARS, cut_text, fit
from automation.recording import scenario as fmt
from automation.recording.fromrun import from_run_steps
from automation.recording.replay import StepOutcome
from dashboard import selectors
from dashboard.models import (
    ApiToken,
    Batch,
    BatchRow,
    IdentityHeal,
    LLMProfile,
    Run,
    RunEvent,
    Scenario,
    ScenarioStep,
    Step,
)


def run_create(
    *,
    owner: AbstractBaseUser,
    task: str,
    start_url: str,
    planner: str = "",
    llm_profile: LLMProfile | None = None,
    output_schema: dict[str, Any] | None = None,
) -> Run:
    """``planner`` empty and no profile: the runner picks (the default profile, else the
    settings).  ``output_schema``: checked here too (OutputInvalid), whoever calls."""
    if output_schema is not None:
        output_schema = check_schema(output_schema)
    return Run.objects.create(
        owner=owner,
        task=task,
        start_url=start_url,
        planner=planner,
        llm_profile=llm_profile,
        output_schema=output_schema,
    )


def run_create_mcp(*, owner: AbstractBaseUser, client: str) -> Run:
    """The run an MCP session over HTTP is (dashboard.mcp), queued for a worker to open
    its tab; ``client`` names the MCP client (from its initialize), for the run's title."""
    return Run.objects.create(
        owner=owner, kind=Run.Kind.MCP, task=f"MCP session: {client}"[:200], planner="mcp"
    )


def run_set_planner(*, run_id: int, planner: str, llm_profile: LLMProfile | None) -> None:
    """What the run uses, once the runner has picked it."""
    Run.objects.filter(pk=run_id).update(planner=planner, llm_profile=llm_profile)


def run_usage_add(*, run_id: int, usage: Mapping[str, object]) -> None:
    """Add one LLM round's token counts to the run's totals, in the database (F()), so
    concurrent writers can't lose a round."""
    prompt = _token_count(usage.get("prompt_tokens"))
    completion = _token_count(usage.get("completion_tokens"))
    if prompt or completion:
        Run.objects.filter(pk=run_id).update(
            prompt_tokens=F("prompt_tokens") + prompt,
            completion_tokens=F("completion_tokens") + completion,
        )


def _token_count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def run_set_status(
    *, run_id: int, status: str, reason: str = "", summary: str = "", output: Any = None
) -> None:
    """``output``: the data a run ended in (the engine checked it against the run's schema
    and its size)."""
    fields: dict[str, Any] = {"status": status, "status_reason": cut_text(reason, MAX_FIELD_CHARS)}
    if summary:
        fields["summary"] = cut_text(summary, MAX_FIELD_CHARS)
    if output is not None:
        fields["output"] = output
    # A conversation's next stretch starts the clock again.
    fields["finished_at"] = timezone.now() if status in Run.FINAL else None
    Run.objects.filter(pk=run_id).update(**fields)


def run_set_session(*, run_id: int, session: str, reason: str = "") -> None:
    """A conversation's browser session opened, or closed (and why)."""
    Run.objects.filter(pk=run_id).update(
        session=session, session_reason=cut_text(reason, MAX_FIELD_CHARS)
    )


def run_event_append(*, run_id: int, seq: int, type: str, data: dict[str, Any]) -> RunEvent:
    """A stored event is sent to the run page as one message: it is kept within its limit."""
    return RunEvent.objects.create(run_id=run_id, seq=seq, type=type, data=fit(data))


def step_record(*, run_id: int, data: dict[str, Any]) -> Step:
    fields = {k: data[k] for k in _STEP_FIELDS if k in data and data[k] is not None}
    fields = fit(fields)  # the step list and the scenario made from it read these whole
    for name in ("name", "selector", "url"):
        if isinstance(fields.get(name), str):
            fields[name] = cut_text(fields[name], MAX_FIELD_CHARS)
    with transaction.atomic():
        step, _ = Step.objects.update_or_create(run_id=run_id, index=data["index"], defaults=fields)
    return step


def step_attach_screenshot(*, run_id: int, index: int, path: str) -> None:
    Step.objects.filter(run_id=run_id, index=index).update(screenshot=path)


def llm_profile_save(*, profile: LLMProfile) -> LLMProfile:
    """Save a (validated) profile; saved as the default, it clears the others."""
    with transaction.atomic():
        if profile.is_default:
            LLMProfile.objects.filter(is_default=True).exclude(pk=profile.pk).update(
                is_default=False
            )
        profile.save()
    return profile


# -- leases: which process drives a run, and whether it still does --------------------

LIVE_STATUSES = (Run.Status.PENDING, Run.Status.RUNNING, Run.Status.PAUSED)
LOST_RUN = "lost: the server process that drove it stopped answering"
LOST_SESSION = "the server process that held its tab stopped answering"


def run_hold(*, run_id: int, holder: str, lease_s: int) -> None:
    """``holder`` drives the run from now, vouching for it ``lease_s`` seconds."""
    Run.objects.filter(pk=run_id).update(
        holder=holder, lease_until=timezone.now() + timedelta(seconds=lease_s)
    )


def runs_renew(*, run_ids: Sequence[int], holder: str, lease_s: int) -> set[int]:
    """Renew ``holder``'s leases on ``run_ids``; returns those renewed.  A run missing from
    the answer was declared lost meanwhile (its lease ran out): its holder must stop it."""
    held = Run.objects.filter(pk__in=run_ids, holder=holder, lease_until__isnull=False)
    renewed = set(held.values_list("pk", flat=True))
    Run.objects.filter(pk__in=renewed).update(
        lease_until=timezone.now() + timedelta(seconds=lease_s)
    )
    return renewed


def run_let_go(*, run_id: int, holder: str) -> None:
    """The run's session is over: nobody vouches for it any more, and nobody needs to."""
    Run.objects.filter(pk=run_id, holder=holder).update(lease_until=None)


def runs_sweep_lost() -> list[tuple[int, list[dict[str, Any]]]]:
    """Runs whose lease ran out: their process is gone.  A live run ends failed (lost), a
    conversation's open tab is closed; each says so in an event appended to its own (its
    steps and events kept).  Returns the events per run, to relay to open pages.  Two
    processes sweeping at once: the rows are locked, the second finds them done."""
    swept: list[tuple[int, list[dict[str, Any]]]] = []
    if not Run.objects.filter(lease_until__lt=timezone.now()).exists():
        return swept  # the usual case, without taking the write lock
    with transaction.atomic():
        expired = Run.objects.select_for_update().filter(lease_until__lt=timezone.now())
        for run in expired:
            events: list[dict[str, Any]] = []
            if run.status in LIVE_STATUSES:
                run.status, run.status_reason = Run.Status.FAILED, LOST_RUN
                run.finished_at = timezone.now()
                events.append({"type": "run.finished", "status": "failed", "reason": LOST_RUN,
                               "summary": "", "output": None})  # fmt: skip
            if run.session == Run.Session.OPEN:
                run.session, run.session_reason = Run.Session.CLOSED, LOST_SESSION
                events.append({"type": "session.closed", "reason": LOST_SESSION})
            run.lease_until = None
            run.save(update_fields=["status", "status_reason", "finished_at", "session",
                                    "session_reason", "lease_until"])  # fmt: skip
            swept.append((run.pk, run_events_add(run_id=run.pk, events=events)))
    return swept


def run_events_add(*, run_id: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events said of a run by no runner of it (a sweep, a stop or a message while it has
    none): numbered after its last, in its latest stretch, stored; returned to relay.
    Call it inside the transaction that changed the run."""
    seq = selectors.run_last_seq(run_id=run_id)
    stretch = selectors.run_stretch_count(run_id=run_id) or 1
    for event in events:
        seq += 1
        event.update(seq=seq, stretch=stretch)
        run_event_append(run_id=run_id, seq=seq, type=event["type"], data=event)
    return events


# -- the queue: runs wait queued until a worker with room claims one -------------------

STOPPED_QUEUED = "stopped before it started"


def run_claim(*, holder: str, lease_s: int, run_id: int | None = None) -> int | None:
    """Claim a queued run for ``holder`` (the oldest, or ``run_id``): it is ``pending``
    from now, held by ``holder``.  One conditional UPDATE per try, so of two workers
    claiming at once exactly one gets each run.  None: nothing (left) to claim."""
    queued = Run.objects.filter(status=Run.Status.QUEUED)
    if run_id is not None:
        queued = queued.filter(pk=run_id)
    lease_until = timezone.now() + timedelta(seconds=lease_s) if lease_s else None
    for pk in queued.order_by("created_at", "pk").values_list("pk", flat=True)[:20]:
        taken = Run.objects.filter(pk=pk, status=Run.Status.QUEUED).update(
            status=Run.Status.PENDING, holder=holder, lease_until=lease_until
        )
        if taken:
            return pk
    return None


def run_fail_unstarted(*, run_id: int, holder: str, reason: str) -> dict[str, Any] | None:
    """``holder`` claimed the run but could not start it: it ends failed with ``reason``
    now (not later as lost, when its lease would run out).  Its run.finished event (to
    relay), or None when the run is not ``holder``'s pending run."""
    with transaction.atomic():
        failed = Run.objects.filter(pk=run_id, holder=holder, status=Run.Status.PENDING).update(
            status=Run.Status.FAILED, status_reason=reason, finished_at=timezone.now(),
            lease_until=None,
        )  # fmt: skip
        if not failed:
            return None
        event = {"type": "run.finished", "status": "failed", "reason": reason,
                 "summary": "", "output": None}  # fmt: skip
        return run_events_add(run_id=run_id, events=[event])[0]


def run_stop_queued(*, run_id: int) -> dict[str, Any] | None:
    """Stop a run that no worker has claimed yet; its run.finished event (to relay), or
    None when it is not queued (any more)."""
    with transaction.atomic():
        stopped = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
            status=Run.Status.STOPPED, status_reason=STOPPED_QUEUED, finished_at=timezone.now()
        )
        if not stopped:
            return None
        event = {"type": "run.finished", "status": "stopped", "reason": STOPPED_QUEUED,
                 "summary": "", "output": None}  # fmt: skip
        return run_events_add(run_id=run_id, events=[event])[0]


def run_take_queued_message(*, run_id: int) -> None:
    """The worker that claimed a requeued conversation has its message."""
    Run.objects.filter(pk=run_id).update(queued_message="")


def run_requeue(*, run_id: int, text: str) -> dict[str, Any] | None:
    """A message to a closed conversation through a process that is not a worker, or is a
    full one: the conversation waits queued, and the worker that claims it restores the
    page and goes on with ``text`` (a message sent before then joins it).  Returns the
    ``user.message`` event (stored; to relay), or None when the run is not such a
    conversation now (a worker holds it, or it is no conversation)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.kind != Run.Kind.AGENT:
            return None
        if run.status == Run.Status.QUEUED and run.queued_message:
            run.queued_message = f"{run.queued_message}\n{text}"
        elif run.is_final and run.lease_until is None:
            run.status, run.status_reason, run.queued_message = Run.Status.QUEUED, "", text
        else:
            return None
        run.save(update_fields=["status", "status_reason", "queued_message"])
        return run_events_add(run_id=run_id, events=[{"type": "user.message", "text": text}])[0]


def runs_mark_unheld(*, older_than_s: int) -> int:
    """Live runs (and open tabs) that no process holds a lease on and that are older than
    ``older_than_s``: interrupted (see dashboard.startup.close_lost_runs)."""
    before = timezone.now() - timedelta(seconds=older_than_s)
    return _mark_interrupted(Run.objects.filter(lease_until__isnull=True, created_at__lt=before))


def runs_mark_interrupted() -> int:
    """At start-up: runs that were live when the server stopped can't continue; say so.
    The sessions they held are gone too (a message restores a conversation's page)."""
    return _mark_interrupted(Run.objects.all())


def _mark_interrupted(runs: QuerySet[Run]) -> int:
    """Of ``runs``, the live ones end failed (interrupted) and the open tabs are marked
    closed; returns how many runs were live."""
    runs.filter(session=Run.Session.OPEN).update(
        session=Run.Session.CLOSED, session_reason="the server stopped"
    )
    return runs.filter(status__in=LIVE_STATUSES).update(
        status=Run.Status.FAILED,
        status_reason="interrupted: the server stopped while the run was live",
        finished_at=timezone.now(),
    )


# -- scenarios -------------------------------------------------------------------------


def scenario_save(
    *, owner: AbstractBaseUser, document: fmt.Scenario, source_run: Run | None = None
) -> Scenario:
    """Store a whole scenario (already read and checked), in one transaction."""
    with transaction.atomic():
        scenario = Scenario.objects.create(
            owner=owner,
            name=document.name[:200],
            description=document.description,
            base_url=document.base_url,
            params=document.params,
            source_run=source_run,
        )
        ScenarioStep.objects.bulk_create(
            ScenarioStep(scenario=scenario, index=i, **_step_fields(step))
            for i, step in enumerate(document.steps)
        )
    return scenario


def scenario_import(*, owner: AbstractBaseUser, data: object) -> Scenario:
    """A scenario from its JSON form; ScenarioInvalid (and nothing stored) if it can't be read."""
    return scenario_save(owner=owner, document=fmt.Scenario.from_dict(data))


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
    the scenario's description."""
    rows = selectors.run_step_rows(run=run, stretches=stretches)
    proposals = selectors.run_proposed_checks(run=run)
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
    document = from_run_steps(rows, name=name.strip() or run.title, keep=keep, placed_checks=placed)
    if not any(not s.is_check for s in document.steps):
        raise ScenarioInvalid("the run has no step that can be replayed")
    return scenario_save(owner=owner, document=document, source_run=run)


def scenario_check_add(
    *, scenario: Scenario, args: Mapping[str, Any], like_step: int | None = None
) -> None:
    """Add an expect check at the end: of the page, or (``like_step``) of the element of
    that step, found by its identity.  Refused whole (ScenarioInvalid) if it can't be read."""
    with transaction.atomic():
        data = selectors.scenario_data(scenario=_locked(scenario))
        _check_no_live_replay(scenario)
        check: dict[str, Any] = {"action": fmt.EXPECT, "args": dict(args)}
        if like_step is not None:
            _check_index(data, like_step)
            source = data["steps"][like_step]
            if not source.get("identity"):
                raise ScenarioInvalid(f"step {like_step} has no element to check")
            check["identity"] = source["identity"]
        data["steps"].append(check)
        document = fmt.Scenario.from_dict(data)
        ScenarioStep.objects.create(
            scenario=scenario, index=len(document.steps) - 1,
            **_step_fields(document.steps[-1]),
        )  # fmt: skip
        _keep_used_params(scenario, document)


def scenario_step_make_param(
    *, scenario: Scenario, index: int, name: str, secret: bool = False
) -> None:
    """Turn a step's typed value into ``${name}`` (its value the default) or a secret."""
    document = selectors.scenario_document(scenario=scenario).with_param(index, name, secret=secret)
    with transaction.atomic():
        ScenarioStep.objects.filter(scenario=scenario, index=index).update(
            args=document.steps[index].args
        )
        _touch(scenario.pk, params=document.params)


# Edits of a stored scenario.  Each reads the scenario again under a lock, checks the edited
# whole by reading it in the scenario format (ScenarioInvalid, and nothing is written, when
# it can't be read), writes it, and drops the parameters no step uses any more.

# Steps move out of the way to indexes past this while a reorder renumbers them: the unique
# (scenario, index) constraint is checked row by row, so no two may ever share an index.
_REORDER_OFFSET = 1_000_000


def scenario_rename(*, scenario: Scenario, name: str, description: str = "") -> None:
    name = name.strip()
    if not name:
        raise ScenarioInvalid("a scenario needs a name")
    if len(name) > 200:
        raise ScenarioInvalid(f"the name is {len(name)} characters long (at most 200)")
    with transaction.atomic():
        locked = _locked(scenario)
        fmt.Scenario.from_dict({**selectors.scenario_data(scenario=locked), "name": name,
                                "description": description})  # fmt: skip
        locked.name, locked.description = name, description
        locked.save(update_fields=["name", "description", "updated_at"])


def scenario_step_update(
    *, scenario: Scenario, index: int, args: Mapping[str, Any]
) -> fmt.ScenarioStep:
    """Give step ``index`` new args (its values: a fill's value, a navigate's url...)."""
    with transaction.atomic():
        data = selectors.scenario_data(scenario=_locked(scenario))
        _check_index(data, index)
        data["steps"][index] = {**data["steps"][index], "args": dict(args)}
        document = fmt.Scenario.from_dict(data)
        step = document.steps[index]
        ScenarioStep.objects.filter(scenario=scenario, index=index).update(args=step.args)
        _keep_used_params(scenario, document)
    return step


def scenario_step_move(*, scenario: Scenario, index: int, to: int) -> None:
    """Move step ``index`` to position ``to``; the steps between shift by one.  A step
    keeps its own row, so its heal history and latest replay go with it."""
    with transaction.atomic():
        data = selectors.scenario_data(scenario=_locked(scenario))
        _check_index(data, index)
        _check_no_live_replay(scenario)
        if not 0 <= to < len(data["steps"]):
            raise ScenarioInvalid(f"step {index} can't move to position {to}", index=index)
        order = list(scenario.steps.order_by("index").values_list("pk", flat=True))
        order.insert(to, order.pop(index))
        _renumber(scenario, order)
        _touch(scenario.pk)


def scenario_step_delete(*, scenario: Scenario, index: int) -> None:
    """Delete step ``index`` (and its heal history); the steps after it move up."""
    with transaction.atomic():
        data = selectors.scenario_data(scenario=_locked(scenario))
        _check_index(data, index)
        _check_no_live_replay(scenario)
        if len(data["steps"]) == 1:
            raise ScenarioInvalid("a scenario keeps at least one step", index=index)
        del data["steps"][index]
        document = fmt.Scenario.from_dict(data)
        order = list(scenario.steps.order_by("index").values_list("pk", flat=True))
        ScenarioStep.objects.filter(pk=order.pop(index)).delete()
        _renumber(scenario, order)
        _keep_used_params(scenario, document)


def scenario_param_set_default(*, scenario: Scenario, name: str, default: str | None) -> None:
    """Set (None: remove, so replay asks for it) the default value of parameter ``name``."""
    with transaction.atomic():
        data = selectors.scenario_data(scenario=_locked(scenario))
        used = fmt.Scenario.from_dict(data).placeholders()[0]
        params = dict(data["params"])
        if name not in used and name not in params:
            raise ScenarioInvalid(f"no parameter {name!r} in this scenario")
        spec = {k: v for k, v in (params.get(name) or {}).items() if k != "default"}
        params[name] = spec if default is None else {**spec, "default": default}
        document = fmt.Scenario.from_dict({**data, "params": params})
        _touch(scenario.pk, params=document.params)


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


def _check_no_live_replay(scenario: Scenario) -> None:
    """A live replay reports its steps by index: renumbering them under it would put its
    outcomes and heals on other steps."""
    # A queued replay reads the scenario when it starts: edits before then are its own.
    live = Run.objects.filter(
        scenario=scenario, kind=Run.Kind.REPLAY, status__in=LIVE_STATUSES
    ).first()
    if live is not None:
        raise ScenarioInvalid(
            f"run {live.pk} is replaying this scenario: stop it or let it finish before "
            "moving or deleting steps"
        )


def _renumber(scenario: Scenario, order: list[int]) -> None:
    """Give the steps (by pk, in ``order``) the indexes 0, 1, ...: the steps that move go
    past the offset first, so no index is ever held twice."""
    current = dict(scenario.steps.values_list("pk", "index"))
    moving = {pk: i for i, pk in enumerate(order) if current[pk] != i}
    ScenarioStep.objects.filter(pk__in=moving).update(index=F("index") + _REORDER_OFFSET)
    for pk, index in moving.items():
        ScenarioStep.objects.filter(pk=pk).update(index=index)


def _keep_used_params(scenario: Scenario, document: fmt.Scenario) -> None:
    used = document.placeholders()[0]
    params = {name: spec for name, spec in document.params.items() if name in used}
    _touch(scenario.pk, params=params)


def _touch(scenario_id: int, **fields: Any) -> None:
    """Write ``fields`` of the scenario (if any) and mark it changed now."""
    Scenario.objects.filter(pk=scenario_id).update(**fields, updated_at=timezone.now())


def replay_run_create(
    *, owner: AbstractBaseUser, scenario: Scenario, base_url: str, params: dict[str, str],
    batch_row: BatchRow | None = None,
) -> Run:  # fmt: skip
    return Run.objects.create(
        owner=owner,
        kind=Run.Kind.REPLAY,
        scenario=scenario,
        params=params,
        task=f"replay: {scenario.name}",
        start_url=base_url,
        planner="replay",
        batch_row=batch_row,
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
    *, scenario_id: int, outcome: StepOutcome | dict[str, Any], run_id: int | None = None
) -> IdentityHeal | None:
    """Keep what a replay found changed in a step: written to the step at once when the
    replay was confident, else proposed for a person to approve.  History either way.
    Replays running side by side (a batch) find the same change: the first one's record
    stands for all (None when the step knows the element so already, else the proposal
    waiting with the same element, written now if this replay was confident)."""
    data = outcome.to_dict() if isinstance(outcome, StepOutcome) else outcome
    if not data.get("healed") or data.get("heal") not in ("confident", "proposed"):
        return None
    with transaction.atomic():
        step = (
            ScenarioStep.objects.select_for_update()
            .filter(scenario_id=scenario_id, index=data["index"])
            .first()
        )
        if step is None:  # the scenario was edited since
            return None
        if _same_element(step.identity, data["healed"]):
            return None
        for waiting in step.heals.filter(status=IdentityHeal.Status.PROPOSED):
            if _same_element(waiting.after, data["healed"]):
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
            after=data["healed"],
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
    heal.before = step.identity
    step.identity = _confirmed(step.identity, heal.after)
    step.save(update_fields=["identity"])
    heal.status = IdentityHeal.Status.APPLIED
    heal.decided_by = user  # type: ignore[assignment]
    heal.decided_at = timezone.now()
    heal.save(update_fields=["before", "status", "decided_by", "decided_at"])
    _touch(step.scenario_id)


def _same_element(known: Any, found: Any) -> bool:
    """Whether a stored identity already says all a replay found (replay's own measure of
    a change: ElementIdentity.changes, its place and look included)."""
    if not known or not found:
        return False
    try:
        return not ElementIdentity.from_dict(known).changes(ElementIdentity.from_dict(found))
    except ActionInvalid:
        return False


def _confirmed(before: Any, after: dict[str, Any]) -> dict[str, Any]:
    now = ElementIdentity.from_dict(after)
    if not before:
        return now.to_dict()
    try:
        return ElementIdentity.from_dict(before).confirmed_as(now).to_dict()
    except ActionInvalid:
        return now.to_dict()  # an identity that can't be read any more is not kept


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
    }


_STEP_FIELDS = ("action", "args", "ref", "role", "name", "selector", "identity", "url", "ok",
                "error", "duration_ms", "by", "stretch")  # fmt: skip


# -- API tokens: a person's key to the JSON API (dashboard/api.py) ---------------------

TOKEN_PREFIX = "tw_"
TOKEN_USE_WRITE_S = 60  # last_used_at is written at most this often per token


def api_token_create(*, owner: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token of ``owner``'s; returns it and the token itself, which is shown once
    and never kept (only its SHA-256)."""
    name = name.strip()
    if not name:
        raise ActionInvalid("name the token (what it is for)")
    if len(name) > 100:
        raise ActionInvalid("a token's name is at most 100 characters")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        owner=owner, name=name, prefix=secret[:10], digest=_token_digest(secret)
    )
    return token, secret


def api_token_revoke(*, owner: AbstractBaseUser, token_id: int) -> bool:
    """Delete one of ``owner``'s tokens: it stops working at once.  False if none."""
    deleted, _ = ApiToken.objects.filter(pk=token_id, owner=owner).delete()
    return bool(deleted)


def api_token_user(*, secret: str) -> AbstractBaseUser | None:
    """The active person ``secret`` is a token of, noting its use; None for anything else."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    token = (
        ApiToken.objects.select_related("owner")
        .filter(digest=_token_digest(secret), owner__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(
        seconds=TOKEN_USE_WRITE_S
    ):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.owner


def _token_digest(secret: str) -> str:
    # A token is 256 random bits: a fast hash is enough (nothing to guess or brute-force).
    return hashlib.sha256(secret.encode()).hexdigest()


# -- batches: a scenario replayed once per row of values --------------------------------

MAX_BATCH_CONCURRENCY = 20
ACTIVE_RUN = (Run.Status.QUEUED, Run.Status.PENDING, Run.Status.RUNNING)


def batch_create(
    *, owner: AbstractBaseUser, scenario: Scenario, rows: Sequence[Mapping[str, str]],
    base_url: str, concurrency: int, source: str = "",
) -> Batch:  # fmt: skip
    """A running batch of ``rows`` (already read and checked: dashboard.batchfile); its
    first rows start with :func:`batch_advance`."""
    if isinstance(concurrency, bool) or not 1 <= concurrency <= MAX_BATCH_CONCURRENCY:
        raise ActionInvalid(f"concurrency is 1 to {MAX_BATCH_CONCURRENCY} rows at once")
    if not rows:
        raise ActionInvalid("a batch has at least one row")
    with transaction.atomic():
        batch = Batch.objects.create(owner=owner, scenario=scenario, base_url=base_url,
                                     concurrency=concurrency, source=source[:200])  # fmt: skip
        BatchRow.objects.bulk_create(
            BatchRow(batch=batch, index=number, params=dict(values))
            for number, values in enumerate(rows, start=1)
        )
    return batch


def batch_advance(*, batch_id: int) -> list[int]:
    """Start the batch's next rows (a queued replay each) while fewer than its concurrency
    are queued or at work — a row waiting for a person does not count, so it holds up no
    other — and mark the batch done once every row's replay has ended.  Returns the runs
    made.  Safe to call from any process at any time (the batch row is locked)."""
    made: list[int] = []
    with transaction.atomic():
        batch = Batch.objects.select_for_update().filter(pk=batch_id).first()
        if batch is None or batch.status != Batch.Status.RUNNING:
            return made
        active = batch.rows.filter(run__status__in=ACTIVE_RUN).count()
        waiting = batch.rows.filter(run__isnull=True).order_by("index")
        for row in waiting[: max(0, batch.concurrency - active)]:
            run = replay_run_create(owner=batch.owner, scenario=batch.scenario,
                                    base_url=batch.base_url, params=row.params,
                                    batch_row=row)  # fmt: skip
            row.run, row.attempts = run, row.attempts + 1
            row.save(update_fields=["run", "attempts"])
            made.append(run.pk)
        unfinished = batch.rows.filter(Q(run__isnull=True) | ~Q(run__status__in=Run.FINAL)).exists()
        if not unfinished:
            batch.status, batch.finished_at = Batch.Status.DONE, timezone.now()
            batch.save(update_fields=["status", "finished_at"])
    return made


def batches_running() -> list[int]:
    return list(Batch.objects.filter(status=Batch.Status.RUNNING).values_list("pk", flat=True))


def batch_stop(*, batch: Batch) -> list[int]:
    """No more rows start; returns the batch's replays still queued or live, for the
    caller to stop (rows never started are reported skipped)."""
    with transaction.atomic():
        Batch.objects.filter(pk=batch.pk, status=Batch.Status.RUNNING).update(
            status=Batch.Status.STOPPED, finished_at=timezone.now()
        )
        return list(
            batch.rows.filter(run__status__in=(*ACTIVE_RUN, Run.Status.PAUSED)).values_list(
                "run_id", flat=True
            )
        )


def batch_retry_failed(*, batch: Batch) -> int:
    """The rows whose replay failed or was stopped, and those never started, wait for a
    new replay (their earlier ones are kept); the batch runs again.  Returns how many
    rows wait now."""
    with transaction.atomic():
        locked = Batch.objects.select_for_update().get(pk=batch.pk)
        locked.rows.filter(run__status__in=(Run.Status.FAILED, Run.Status.STOPPED)).update(run=None)
        waiting = locked.rows.filter(run__isnull=True).count()
        if waiting:
            locked.status, locked.finished_at = Batch.Status.RUNNING, None
            locked.save(update_fields=["status", "finished_at"])
    return waiting
