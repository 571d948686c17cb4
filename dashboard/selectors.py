"""Reads.  Every query that depends on who is asking goes through here."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.shortcuts import get_object_or_404

from automation.errors import ScenarioInvalid
from automation.recording import scenario as fmt
from automation.recording.propose import Proposal
from dashboard.models import (
    Batch,
    IdentityHeal,
    LLMProfile,
    Run,
    RunEvent,
    Scenario,
    ScenarioStep,
    Step,
    UrlRule,
)


def _visible_runs(*, user: AbstractBaseUser) -> QuerySet[Run]:
    runs = Run.objects.all()
    return runs if user.is_staff else runs.filter(owner=user)


def run_list(
    *,
    user: AbstractBaseUser,
    owner: AbstractBaseUser | None = None,
    scenario: Scenario | None = None,
    status: str = "",
    kind: str = "",
    created_from: date | None = None,
    created_to: date | None = None,
) -> QuerySet[Run]:
    """The runs ``user`` may see, newest first, narrowed by the filters given (dates are
    whole days, both ends included); each with its step count, duration and token total."""
    runs = _visible_runs(user=user)
    filters = {
        "owner": owner,
        "scenario": scenario,
        "status": status,
        "kind": kind,
        "created_at__date__gte": created_from,
        "created_at__date__lte": created_to,
    }
    runs = runs.filter(**{key: value for key, value in filters.items() if value})
    duration = ExpressionWrapper(F("finished_at") - F("created_at"), output_field=DurationField())
    return (
        runs.annotate(
            step_count=Count("steps"),
            duration=duration,
            total_tokens=F("prompt_tokens") + F("completion_tokens"),
        )
        .select_related("owner", "scenario")
        .order_by("-created_at", "-pk")
    )


def scenario_choices(*, user: AbstractBaseUser) -> QuerySet[Scenario]:
    """The scenarios ``user`` may see, by name: what the run history can filter by."""
    return _visible_scenarios(user=user).order_by("name", "pk")


def run_owner_choices() -> QuerySet[AbstractBaseUser]:
    """The people who have runs: what a staff member can filter the history by."""
    return get_user_model().objects.filter(runs__isnull=False).distinct().order_by("username")


def run_get(*, user: AbstractBaseUser, id: int) -> Run:
    """The run if ``user`` may see it, else Http404 (never reveal that it exists)."""
    return get_object_or_404(_visible_runs(user=user).select_related("llm_profile"), pk=id)


def run_can_view(*, user: AbstractBaseUser, id: int) -> bool:
    return user.is_authenticated and _visible_runs(user=user).filter(pk=id).exists()


def run_events(*, run_id: int, after_seq: int = 0) -> list[dict]:
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")
    return [{**row.data, "seq": row.seq} for row in rows]


def run_step_rows(*, run: Run, stretches: Collection[int] = ()) -> list[dict[str, Any]]:
    """The run's recorded steps as the scenario format's plan reads them (with the
    conversation's stretch each belongs to); ``stretches``: only those, else all."""
    fields = ("index", "action", "args", "ref", "role", "name", "selector", "identity", "url",
              "ok", "error", "duration_ms", "by", "stretch")  # fmt: skip
    steps = run.steps.order_by("index")
    if stretches:
        steps = steps.filter(stretch__in=stretches)
    return list(steps.values(*fields))


def run_proposed_checks(*, run: Run) -> list[tuple[int, Proposal]]:
    """The checks the run proposed when each stretch of its work ended (its
    ``checks.proposed`` events, in order), each with its stretch; a stored proposal that
    can no longer be read is left out."""
    proposals = []
    events = run.events.filter(type="checks.proposed").order_by("seq")
    for data in events.values_list("data", flat=True):
        stretch = data.get("stretch", 1)
        for check in data.get("checks", []):
            try:
                proposals.append((stretch if isinstance(stretch, int) else 1,
                                  Proposal.from_dict(check)))  # fmt: skip
            except (ScenarioInvalid, KeyError, TypeError):
                continue
    return proposals


def run_requests(*, run: Run) -> list[str]:
    """What the person asked for each stretch of the conversation, in order."""
    events = run.events.filter(type="run.started").order_by("seq")
    return [str(data.get("task", "")) for data in events.values_list("data", flat=True)]


@dataclass(frozen=True)
class Conversation:
    """What a conversation's stored events say of it so far: each stretch's request and
    how it ended, the last round's number and the next step's index."""

    requests: list[str]  # the first message, then each later one, in order
    endings: list[str]  # per finished stretch: "succeeded: <summary>", "failed: <reason>"
    last_round: int
    next_step: int


def run_conversation(*, run_id: int) -> Conversation:
    requests: list[str] = []
    endings: list[str] = []
    events = RunEvent.objects.filter(run_id=run_id, type__in=["run.started", "run.finished"])
    for type_, data in events.order_by("seq").values_list("type", "data"):
        if type_ == "run.started":
            requests.append(str(data.get("task", "")))
        else:
            status, why = data.get("status", ""), data.get("summary") or data.get("reason") or ""
            endings.append(f"{status}: {why}" if why else str(status))
    rounds = RunEvent.objects.filter(run_id=run_id, type__in=["llm.waiting", "llm.message"])
    last = rounds.order_by("-seq").values_list("data", flat=True).first() or {}
    round_ = last.get("round") if isinstance(last.get("round"), int) else 0
    top = Step.objects.filter(run_id=run_id).order_by("-index").values_list("index", flat=True)
    last_step = top.first()
    next_step = 0 if last_step is None else last_step + 1
    return Conversation(requests, endings, round_, next_step)


def run_stretch_count(*, run_id: int) -> int:
    return RunEvent.objects.filter(run_id=run_id, type="run.started").count()


def run_queue_positions(*, limit: int = 500) -> list[tuple[int, int]]:
    """The queued runs, oldest first, with their place in the queue (1: next)."""
    queued = Run.objects.filter(status=Run.Status.QUEUED).order_by("created_at", "pk")
    return [(pk, place) for place, pk in enumerate(queued.values_list("pk", flat=True)[:limit], 1)]


def run_queue_position(*, run: Run) -> int:
    """``run``'s place in the queue (1: next), 0 when it is not queued."""
    if run.status != Run.Status.QUEUED:
        return 0
    ahead = Run.objects.filter(status=Run.Status.QUEUED).filter(
        Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, pk__lt=run.pk)
    )
    return ahead.count() + 1


def run_holder(*, run_id: int, other_than: str) -> str:
    """The channel of the worker that holds the run now (dashboard.worker), when that is
    another than ``other_than``; "" when no worker vouches for it (or it is ours)."""
    holder = (
        Run.objects.filter(pk=run_id, lease_until__isnull=False)
        .values_list("holder", flat=True)
        .first()
    )
    return holder if holder and "!" in holder and holder != other_than else ""


def run_last_seq(*, run_id: int) -> int:
    last = RunEvent.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True)
    return last.first() or 0


def _visible_scenarios(*, user: AbstractBaseUser) -> QuerySet[Scenario]:
    scenarios = Scenario.objects.all()
    return scenarios if user.is_staff else scenarios.filter(owner=user)


def scenario_list(*, user: AbstractBaseUser, q: str = "") -> QuerySet[Scenario]:
    """The scenarios ``user`` may see, those whose name, description or base URL contain
    ``q`` (any case) when it is given; each with its step count and its latest replay."""
    scenarios = _visible_scenarios(user=user)
    q = q.strip()
    if q:
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
    """The stored scenario in its versioned format (what export writes and replay runs)."""
    return fmt.Scenario.from_dict(scenario_data(scenario=scenario))


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
    }


_SCENARIO_STEP_FIELDS = ("action", "args", "identity", "role", "name", "selector", "url", "note")


def scenario_heals(*, scenario_id: int) -> QuerySet[IdentityHeal]:
    """The scenario's heals in the order they happened (oldest first)."""
    heals = IdentityHeal.objects.filter(step__scenario_id=scenario_id).select_related("step")
    return heals.order_by("created_at", "pk")


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


def llm_profile_list() -> QuerySet[LLMProfile]:
    return LLMProfile.objects.order_by("-is_default", "name")


def llm_profile_default() -> LLMProfile | None:
    return LLMProfile.objects.filter(is_default=True).first()


def url_rule_domains() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The enabled URL rules' domains: (allowed, blocked).  A database not migrated yet
    has no rules (a scenario file replayed on a fresh checkout)."""
    if UrlRule._meta.db_table not in connection.introspection.table_names():
        return (), ()
    rules = UrlRule.objects.filter(enabled=True).values_list("kind", "domain")
    allowed = tuple(d for kind, d in rules if kind == UrlRule.Kind.ALLOW)
    return allowed, tuple(d for kind, d in rules if kind == UrlRule.Kind.BLOCK)


# -- batches ---------------------------------------------------------------------------

# What a batch's row is, from its latest replay (none yet: "queued", or "skipped" once
# the batch stopped).
ROW_STATUS = {
    Run.Status.QUEUED: "queued", Run.Status.PENDING: "running", Run.Status.RUNNING: "running",
    Run.Status.PAUSED: "needs_person", Run.Status.SUCCEEDED: "passed",
    Run.Status.FAILED: "failed", Run.Status.STOPPED: "stopped",
}  # fmt: skip
ROW_STATUSES = ("queued", "running", "needs_person", "passed", "failed", "stopped", "skipped")


def scenario_param_defaults(*, document: fmt.Scenario) -> dict[str, str | None]:
    """Each parameter a replay of ``document`` takes, with its default (None: none)."""
    names = document.placeholders()[0] | set(document.params)
    return {name: (document.params.get(name) or {}).get("default") for name in sorted(names)}


def batch_get(*, user: AbstractBaseUser, id: int) -> Batch:
    """The batch if ``user`` may see it (its owner, or staff), else Http404."""
    batches = Batch.objects.select_related("scenario", "owner")
    if not user.is_staff:
        batches = batches.filter(owner=user)
    return get_object_or_404(batches, pk=id)


def batch_list(*, user: AbstractBaseUser, scenario: Scenario | None = None) -> QuerySet[Batch]:
    batches = Batch.objects.select_related("scenario")
    if not user.is_staff:
        batches = batches.filter(owner=user)
    return batches.filter(scenario=scenario) if scenario is not None else batches


def batch_rows(*, batch: Batch) -> list[dict[str, Any]]:
    """Each row with its status (ROW_STATUSES), its latest run (id, status, reason,
    output, duration in seconds) and how many times it ran."""
    rows = []
    for row in batch.rows.select_related("run").order_by("index"):
        run = row.run
        if run is None:
            status = "skipped" if batch.status == Batch.Status.STOPPED else "queued"
        else:
            status = ROW_STATUS[Run.Status(run.status)]
        seconds = None
        if run is not None and run.finished_at is not None:
            seconds = round((run.finished_at - run.created_at).total_seconds(), 1)
        rows.append({
            "index": row.index, "params": row.params, "status": status,
            "attempts": row.attempts, "run_id": run.pk if run else None,
            "reason": run.status_reason if run else "", "output": run.output if run else None,
            "seconds": seconds,
        })  # fmt: skip
    return rows


def batch_progress(*, batch: Batch, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts of the rows by status, how many are done, and the time left (seconds, from
    the rows done so far and the concurrency; None until one is done)."""
    counts = {status: 0 for status in ROW_STATUSES}
    for row in rows:
        counts[row["status"]] += 1
    finished = [row["seconds"] for row in rows if row["seconds"] is not None]
    done = counts["passed"] + counts["failed"] + counts["stopped"] + counts["skipped"]
    left = None
    waiting = counts["queued"] + counts["running"]
    if batch.status == Batch.Status.RUNNING and finished and waiting:
        average = sum(finished) / len(finished)
        left = round(average * waiting / max(1, batch.concurrency))
    return {"total": len(rows), "done": done, "counts": counts, "seconds_left": left}


def batch_state(*, batch: Batch) -> dict[str, Any]:
    """What the batch page draws (and the API answers): the batch, its progress, its rows."""
    rows = batch_rows(batch=batch)
    return {
        "id": batch.pk, "scenario_id": batch.scenario_id, "scenario": batch.scenario.name,
        "status": batch.status, "base_url": batch.base_url, "concurrency": batch.concurrency,
        "source": batch.source, "created_at": batch.created_at.isoformat(),
        "finished_at": batch.finished_at.isoformat() if batch.finished_at else None,
        "progress": batch_progress(batch=batch, rows=rows), "rows": rows,
    }  # fmt: skip


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
