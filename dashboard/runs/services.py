"""Writes of runs: a run, its events and steps, its lease, its place in the queue; and
the LLM profiles runs plan with.  Small keyword-only functions named <entity>_<verb>."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from automation.agent.output import check_schema
from automation.limits import MAX_FIELD_CHARS, cut_text, fit
from automation.recording.passwords import PasswordMark, marks_of
from dashboard.models import (
    LLMProfile,
    Run,
    RunEvent,
    SigninProfile,
    Step,
)
from dashboard.runs import selectors


def run_create(
    *,
    owner: AbstractBaseUser,
    task: str,
    start_url: str,
    planner: str = "",
    llm_profile: LLMProfile | None = None,
    output_schema: dict[str, Any] | None = None,
    signin_profile: SigninProfile | None = None,
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
        signin_profile=signin_profile,
        signin_profile_name=signin_profile.name if signin_profile else "",
    )


def run_create_mcp(
    *, owner: AbstractBaseUser, client: str, signin_profile: SigninProfile | None = None
) -> Run:
    """The run an MCP session over HTTP is (dashboard.api.mcp), queued for a worker to open
    its tab; ``client`` names the MCP client (from its initialize), for the run's title."""
    return Run.objects.create(
        owner=owner,
        kind=Run.Kind.MCP,
        task=f"MCP session: {client}"[:200],
        planner="mcp",
        signin_profile=signin_profile,
        signin_profile_name=signin_profile.name if signin_profile else "",
    )


def run_set_planner(*, run_id: int, planner: str, llm_profile: LLMProfile | None) -> None:
    """What the run uses, once the runner has picked it."""
    Run.objects.filter(pk=run_id).update(planner=planner, llm_profile=llm_profile)


MAX_TOKEN_COUNT = 10**12  # past any model's count: what a server says past it is not kept


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


def run_passwords_mark(*, run_id: int, values: Sequence[str]) -> None:
    """Keep a mark of each password the run typed literally (not one it keeps already):
    what tells it in the person's words when the run is saved as a scenario."""
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            return
        kept = [PasswordMark.from_dict(mark) for mark in run.password_marks]
        new = [v for v in values if not any(mark.matches(v) for mark in kept)]
        added = [mark.to_dict() for mark in marks_of(new)]
        if added:
            Run.objects.filter(pk=run_id).update(password_marks=[*run.password_marks, *added])


def _token_count(value: object) -> int:
    """A count of tokens a model server reported, as the database can keep it (a server
    may report anything: a negative, a float, an integer past SQLite's 64 bits)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0
    return int(min(max(0, value), MAX_TOKEN_COUNT))


def run_set_status(
    *,
    run_id: int,
    status: str,
    reason: str = "",
    summary: str = "",
    output: Any = None,
    holder: str | None = None,
) -> bool:
    """``output``: the data a run ended in (the engine checked it against the run's schema
    and its size).  ``holder``: only while this worker holds the run (False when it does
    not: it was queued again for another, runs_sweep_lost)."""
    fields: dict[str, Any] = {"status": status, "status_reason": cut_text(reason, MAX_FIELD_CHARS)}
    if summary:
        fields["summary"] = cut_text(summary, MAX_FIELD_CHARS)
    if output is not None:
        fields["output"] = output
    # The message that queued a conversation is taken once its work starts (a worker lost
    # before then leaves the run queued again with it: runs_sweep_lost).
    fields["queued_message"] = ""
    # A conversation's next stretch starts the clock again.
    fields["finished_at"] = timezone.now() if status in Run.FINAL else None
    runs = Run.objects.filter(pk=run_id)
    if holder is not None:
        runs = runs.filter(holder=holder)
    return bool(runs.update(**fields))


def run_set_session(*, run_id: int, session: str, reason: str = "") -> None:
    """A conversation's browser session opened, or closed (and why)."""
    Run.objects.filter(pk=run_id).update(
        session=session, session_reason=cut_text(reason, MAX_FIELD_CHARS)
    )


def run_event_append(*, run_id: int, seq: int, type: str, data: dict[str, Any]) -> RunEvent:
    """A stored event is sent to the run page as one message: it is kept within its limit."""
    return RunEvent.objects.create(run_id=run_id, seq=seq, type=type, data=fit(data))


def run_set_status_with_event(
    *, run_id: int, holder: str | None, status: dict[str, Any], seq: int, type: str,
    data: dict[str, Any],
) -> bool:  # fmt: skip
    """The event that sets a run's ``status`` (run_set_status's arguments) and the status,
    written in one transaction: neither when ``holder`` no longer holds the run (False)."""
    with transaction.atomic():
        if not run_set_status(run_id=run_id, holder=holder, **status):
            return False
        run_event_append(run_id=run_id, seq=seq, type=type, data=data)
    return True


_STEP_FIELDS = ("action", "args", "ref", "role", "name", "selector", "identity", "url", "led_to",
                "sent", "ok", "error", "duration_ms", "by", "stretch", "dialogs")  # fmt: skip


def step_record(*, run_id: int, data: dict[str, Any]) -> Step:
    fields = {k: data[k] for k in _STEP_FIELDS if k in data and data[k] is not None}
    # The step list and the scenario made from it read these whole; what can't be made
    # to fit is left out (fit's give-up is a marker, no field of a step).
    fields = {k: v for k, v in fit(fields).items() if k in _STEP_FIELDS}
    for name in ("name", "selector", "url", "led_to", "sent"):
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

LOST_RUN = "lost: the server process that drove it stopped answering"
LOST_SESSION = "the server process that held its tab stopped answering"
REQUEUED = "its worker stopped answering before the run started: back in the queue"


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
    """Runs whose lease ran out: their process is gone.  A run it had claimed but not
    started (still ``pending``: no step taken, nothing done in a browser — the status
    leaves ``pending`` when its work starts) goes back to the queue for another worker; any
    other live run ends failed (lost), and a conversation's open tab is closed.  Each says
    so in an event appended to its own (its steps and events kept).  Returns the events
    per run, to relay to open pages (a ``run.requeued`` one: wake the workers).  Two
    processes sweeping at once: the rows are locked, the second finds them done."""
    swept: list[tuple[int, list[dict[str, Any]]]] = []
    if not Run.objects.filter(lease_until__lt=timezone.now()).exists():
        return swept  # the usual case, without taking the write lock
    with transaction.atomic():
        expired = Run.objects.select_for_update().filter(lease_until__lt=timezone.now())
        for run in expired:
            events: list[dict[str, Any]] = []
            if run.status == Run.Status.PENDING:
                events.append(_requeue_unstarted(run))
            elif run.status in Run.LIVE:
                run.status, run.status_reason = Run.Status.FAILED, LOST_RUN
                run.finished_at = timezone.now()
                events.append({"type": "run.finished", "status": "failed", "reason": LOST_RUN,
                               "summary": "", "output": None})  # fmt: skip
            if run.session == Run.Session.OPEN:
                run.session, run.session_reason = Run.Session.CLOSED, LOST_SESSION
                events.append({"type": "session.closed", "reason": LOST_SESSION})
            run.lease_until = None
            run.save(update_fields=["status", "status_reason", "finished_at", "session",
                                    "session_reason", "lease_until", "holder"])  # fmt: skip
            swept.append((run.pk, run_events_add(run_id=run.pk, events=events)))
    return swept


def _requeue_unstarted(run: Run) -> dict[str, Any]:
    """``run`` (locked, saved by the caller) back in the queue: nothing of it ran.  A
    conversation keeps the message that queued it (``queued_message``), and its tab,
    opened for the work that never started, is as before: none yet, or closed."""
    worker = run.worker_name
    run.status, run.status_reason, run.holder = Run.Status.QUEUED, REQUEUED, ""
    if run.session == Run.Session.OPEN:
        earlier = selectors.run_stretch_count(run_id=run.pk)
        run.session = Run.Session.CLOSED if earlier else Run.Session.NONE
    return {"type": "run.requeued", "reason": REQUEUED, "worker": worker,
            "session": run.session}  # fmt: skip


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


STOPPED_BY = "stopped by "  # how the reason of a stop that says by whom begins


def stopped_by(user: Any) -> str:
    """Why a run ``user`` stopped ended, as its page, its schedule and its alerts say it."""
    return f"{STOPPED_BY}{user.get_username()}"


def run_claim(*, holder: str, lease_s: int, run_id: int | None = None) -> int | None:
    """Claim a queued run for ``holder`` (the next in the queue's order,
    :func:`~dashboard.runs.selectors.run_queue`, or ``run_id``): it is ``pending`` from
    now, held by ``holder``.  One conditional UPDATE per try, so of two workers claiming
    at once exactly one gets each run.  None: nothing (left) to claim."""
    lease_until = timezone.now() + timedelta(seconds=lease_s) if lease_s else None
    order = [run_id] if run_id is not None else selectors.run_queue()
    for pk in order[:20]:
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


def run_stop_queued(
    *, run_id: int, reason: str = STOPPED_QUEUED, status: str = Run.Status.STOPPED
) -> dict[str, Any] | None:
    """Stop a run that no worker has claimed yet, saying why (``reason``; ``status``
    failed: it could not start as asked); its run.finished event (to relay), or None when
    it is not queued (any more)."""
    reason = cut_text(reason, MAX_FIELD_CHARS)
    with transaction.atomic():
        stopped = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
            status=status, status_reason=reason, finished_at=timezone.now()
        )
        if not stopped:
            return None
        event = {"type": "run.finished", "status": str(status), "reason": reason,
                 "summary": "", "output": None}  # fmt: skip
        return run_events_add(run_id=run_id, events=[event])[0]


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
    """Of ``runs``, those claimed but not started (``pending``: nothing of them ran) go
    back to the queue, but an MCP session's (its client went with the server); the other
    live ones end failed (interrupted), and the open tabs are marked closed; returns how
    many runs were live."""
    requeued = 0
    with transaction.atomic():
        unstarted = runs.select_for_update().filter(status=Run.Status.PENDING)
        for run in unstarted.exclude(kind=Run.Kind.MCP):
            event = _requeue_unstarted(run)
            run.lease_until = None
            run.save(update_fields=["status", "status_reason", "holder", "session",
                                    "lease_until"])  # fmt: skip
            run_events_add(run_id=run.pk, events=[event])
            requeued += 1
    runs.filter(session=Run.Session.OPEN).update(
        session=Run.Session.CLOSED, session_reason="the server stopped"
    )
    return requeued + runs.filter(status__in=Run.LIVE).update(
        status=Run.Status.FAILED,
        status_reason="interrupted: the server stopped while the run was live",
        finished_at=timezone.now(),
    )
