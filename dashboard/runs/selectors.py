"""Reads of runs (and of the LLM profiles and URL rules they run with).  Every query
that depends on who is asking goes through here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import (
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Window,
)
from django.db.models.functions import RowNumber
from django.shortcuts import get_object_or_404

from automation.errors import ScenarioInvalid
from automation.recording.fromrun import typed_passwords
from automation.recording.passwords import PasswordMark, TypedPasswords, marks_of
from automation.recording.propose import Proposal
from dashboard.models import (
    LLMProfile,
    Run,
    RunEvent,
    Scenario,
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
    hide_empty_mcp: bool = False,
) -> QuerySet[Run]:
    """The runs ``user`` may see, newest first, narrowed by the filters given (dates are
    whole days, both ends included); each with its step count, duration and token total.
    ``hide_empty_mcp``: without the MCP sessions that ended having made no step (a client
    that connected and left), which would crowd out the rest."""
    runs = _visible_runs(user=user)
    if hide_empty_mcp:
        no_steps = ~Exists(Step.objects.filter(run=OuterRef("pk")))
        runs = runs.exclude(Q(kind=Run.Kind.MCP, status__in=Run.FINAL) & no_steps)
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


def run_owner_choices() -> QuerySet[AbstractBaseUser]:
    """The people who have runs: what a staff member can filter the history by."""
    return get_user_model().objects.filter(runs__isnull=False).distinct().order_by("username")


def run_get(*, user: AbstractBaseUser, id: int) -> Run:
    """The run if ``user`` may see it, else Http404 (never reveal that it exists)."""
    return get_object_or_404(_visible_runs(user=user).select_related("llm_profile"), pk=id)


def run_can_view(*, user: AbstractBaseUser, id: int) -> bool:
    return user.is_authenticated and _visible_runs(user=user).filter(pk=id).exists()


def run_events(*, run_id: int, after_seq: int = 0, limit: int | None = None) -> list[dict]:
    """The run's events after ``after_seq``, in order (the first ``limit`` of them)."""
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")
    if limit is not None:
        rows = rows[:limit]
    return [{**row.data, "seq": row.seq} for row in rows]


def run_events_iter(
    *, run_id: int, after_seq: int, limit: int, chunk: int
) -> Iterator[dict[str, Any]]:
    """The run's first ``limit`` events after ``after_seq``, in order, fetched ``chunk``
    rows at a time as they are taken: a reader that stops early (and closes it) has not
    read the rest."""
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")
    for row in rows[:limit].iterator(chunk_size=chunk):
        yield {**row.data, "seq": row.seq}


def run_step_rows(*, run: Run, stretches: Collection[int] = ()) -> list[dict[str, Any]]:
    """The run's recorded steps as the scenario format's plan reads them (with the
    conversation's stretch each belongs to); ``stretches``: only those, else all."""
    fields = ("index", "action", "args", "ref", "role", "name", "selector", "identity", "url",
              "led_to", "sent", "ok", "error", "duration_ms", "by", "stretch",
              "dialogs")  # fmt: skip
    steps = run.steps.order_by("index")
    if stretches:
        steps = steps.filter(stretch__in=stretches)
    return list(steps.values(*fields))


def run_typed_passwords(
    *, run: Run, rows: Sequence[Mapping[str, Any]] | None = None
) -> TypedPasswords:
    """The passwords the run typed: those it masked as it ran (their marks), and those
    its steps (``rows``: all of them, read when not given) typed as they are."""
    marks = []
    for data in run.password_marks if isinstance(run.password_marks, list) else ():
        try:
            marks.append(PasswordMark.from_dict(data))
        except (KeyError, TypeError, ValueError):
            continue  # a mark that can't be read finds nothing
    typed = typed_passwords(run_step_rows(run=run) if rows is None else rows)
    return TypedPasswords((*marks, *marks_of(typed)))


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


# The queue's order is worked out over each person's oldest queued runs, this many (and
# this many in all); past them, a run's place is counted as first come, first served.
QUEUE_PER_PERSON = 100
QUEUE_WINDOW = 2_000


def run_queue(*, limit: int | None = None) -> list[int]:
    """The queued runs in the order workers claim them: each person's in the order they
    came, the people taken in turn, a person with runs at work already waiting behind
    those with fewer.  (First come, first served let one person's burst of runs, a
    script's hundred, keep everyone else's first run waiting behind all of them.)"""
    held = Counter(Run.objects.filter(status__in=Run.LIVE).values_list("owner_id", flat=True))
    nth = Window(RowNumber(), partition_by=[F("owner_id")],
                 order_by=[F("created_at").asc(), F("pk").asc()])  # fmt: skip
    queued = (
        Run.objects.filter(status=Run.Status.QUEUED)
        .annotate(nth=nth)
        .filter(nth__lte=QUEUE_PER_PERSON)
        .order_by("created_at", "pk")
        .values_list("pk", "owner_id", "nth")
    )
    window = queued[: limit or QUEUE_WINDOW]
    turns = [(held[owner_id] + int(n), order, pk)  # the owner's turn, then first come
             for order, (pk, owner_id, n) in enumerate(window)]  # fmt: skip
    return [pk for _turn, _order, pk in sorted(turns)]


def run_queue_positions(*, limit: int | None = None) -> list[tuple[int, int]]:
    """The queued runs in the order they are claimed, with their place (1: next)."""
    return [(pk, place) for place, pk in enumerate(run_queue(limit=limit), 1)]


def run_queue_position(*, run: Run) -> int:
    """``run``'s place in the queue (1: next), 0 when it is not queued."""
    if run.status != Run.Status.QUEUED:
        return 0
    order = run_queue()
    if run.pk in order:
        return order.index(run.pk) + 1
    ahead = Run.objects.filter(status=Run.Status.QUEUED).filter(
        Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, pk__lt=run.pk)
    )
    return ahead.count() + 1


def run_status(*, run_id: int) -> str | None:
    """The run's status now; None when there is no such run."""
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


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
