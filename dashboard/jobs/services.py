"""Writes of batches.  Small keyword-only functions named <entity>_<verb>."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from automation.errors import ActionInvalid, ScenarioInvalid
from automation.recording.takes import replay_takes
from dashboard.engineconf import heal_model_refusal
from dashboard.models import (
    Batch,
    BatchRow,
    LLMProfile,
    Run,
    Scenario,
    signin_fields,
    signin_refusal,
)
from dashboard.runs.services import run_stop_queued
from dashboard.scenarios import selectors as scenario_selectors
from dashboard.scenarios.edit_services import params_misfit
from dashboard.scenarios.services import replay_run_create

# -- batches: a scenario replayed once per row of values --------------------------------

MAX_BATCH_CONCURRENCY = 20
ACTIVE_RUN = (Run.Status.QUEUED, Run.Status.PENDING, Run.Status.RUNNING)


def batch_create(
    *, owner: AbstractBaseUser, scenario: Scenario, rows: Sequence[Mapping[str, str]],
    base_url: str, concurrency: int, source: str = "", signin_profile_id: int | None = None,
    llm_profile: LLMProfile | None = None,
) -> Batch:  # fmt: skip
    """A running batch of ``rows`` (already read and checked: dashboard.jobs.batchfile); its
    first rows start with :func:`batch_advance`.  ``llm_profile``: the model for changed
    pages of every row's replay (checked by the caller: dashboard.runs.forms)."""
    if isinstance(concurrency, bool) or not 1 <= concurrency <= MAX_BATCH_CONCURRENCY:
        raise ActionInvalid(f"concurrency is 1 to {MAX_BATCH_CONCURRENCY} rows at once")
    if not rows:
        raise ActionInvalid("a batch has at least one row")
    with transaction.atomic():
        batch = Batch.objects.create(owner=owner, scenario=scenario, base_url=base_url,
                                     concurrency=concurrency, source=source[:200],
                                     **signin_fields(signin_profile_id),
                                     **heal_model_fields(llm_profile))  # fmt: skip
        BatchRow.objects.bulk_create(
            BatchRow(batch=batch, index=number, params=dict(values))
            for number, values in enumerate(rows, start=1)
        )
    return batch


def batch_advance(*, batch_id: int) -> list[int]:
    """Start the batch's next rows (a queued replay each) while fewer than its concurrency
    are queued or at work — rows waiting for a person do not count, up to as many as its
    concurrency, so they hold up no other; past that each does (a paused replay holds a
    worker's slot: a batch of rows that all wait would fill every worker, and everyone
    else's runs would queue behind them) — and mark the batch done once every row's replay
    has ended.  Returns the runs made.  Safe to call from any process at any time (the
    batch row is locked)."""
    made: list[int] = []
    with transaction.atomic():
        batch = Batch.objects.select_for_update().filter(pk=batch_id).first()
        if batch is None or batch.status != Batch.Status.RUNNING:
            return made
        active = batch.rows.filter(run__status__in=ACTIVE_RUN).count()
        waiting_for_person = batch.rows.filter(run__status=Run.Status.PAUSED).count()
        active += max(0, waiting_for_person - batch.concurrency)
        waiting = batch.rows.filter(run__isnull=True).order_by("index")
        # The model or the sign-in profile chosen for its replays, deleted (or the model's
        # key gone) since: each row fails saying so rather than replay without it.
        refusal = heal_model_refusal(batch.llm_profile, batch.llm_profile_name) or (
            signin_refusal(batch)
        )
        for row in waiting if refusal else waiting[: max(0, batch.concurrency - active)]:
            run = replay_run_create(owner=batch.owner, scenario=batch.scenario,
                                    base_url=batch.base_url, params=row.params,
                                    batch_row=row, signin_profile_id=batch.signin_profile_id,
                                    llm_profile_id=batch.llm_profile_id)  # fmt: skip
            row.run, row.attempts = run, row.attempts + 1
            row.save(update_fields=["run", "attempts"])
            if refusal:
                run_stop_queued(run_id=run.pk, reason=f"could not start: {refusal}",
                                status=Run.Status.FAILED)  # fmt: skip
            else:
                made.append(run.pk)
        unfinished = batch.rows.filter(Q(run__isnull=True) | ~Q(run__status__in=Run.FINAL)).exists()
        if not unfinished:
            batch.status, batch.finished_at = Batch.Status.DONE, timezone.now()
            batch.save(update_fields=["status", "finished_at"])
    return made


def heal_model_fields(profile: LLMProfile | None) -> dict[str, object]:
    """A batch's or a schedule's fields for the model for changed pages ``profile``."""
    return {"llm_profile": profile, "llm_profile_name": profile.name if profile else ""}


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
    rows wait now.  Their values are checked against the scenario as it is now (it may
    have been edited since the batch was done): a row that gives a parameter it no longer
    has, or none for one it needs, refuses the retry (ScenarioInvalid, naming the row and
    the parameter), as starting a batch of such rows is refused; so does a sign-in profile
    chosen for it and deleted since."""
    with transaction.atomic():
        locked = Batch.objects.select_for_update().select_related("scenario").get(pk=batch.pk)
        again = locked.rows.filter(
            Q(run__isnull=True) | Q(run__status__in=(Run.Status.FAILED, Run.Status.STOPPED))
        )
        if refusal := signin_refusal(locked):  # each row would fail so, at once
            raise ScenarioInvalid(
                refusal, hint="start a new batch with another sign-in profile, or none"
            )
        document = scenario_selectors.scenario_document(scenario=locked.scenario)
        takes = replay_takes(document)
        for index, values in again.order_by("index").values_list("index", "params"):
            why = params_misfit(values if isinstance(values, dict) else {}, takes, after=False)
            if why:
                raise ScenarioInvalid(
                    f"row {index} {why}: the scenario changed since the batch ran",
                    hint="start a new batch with rows that fit the scenario as it is now",
                )
        locked.rows.filter(run__status__in=(Run.Status.FAILED, Run.Status.STOPPED)).update(run=None)
        waiting = locked.rows.filter(run__isnull=True).count()
        if waiting:
            locked.status, locked.finished_at = Batch.Status.RUNNING, None
            locked.save(update_fields=["status", "finished_at"])
    return waiting
