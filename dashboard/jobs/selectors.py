"""Reads of batches and of the alerts' outbox.  Every query that depends on who is asking
goes through here."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Min, QuerySet
from django.shortcuts import get_object_or_404

from dashboard.models import (
    Batch,
    Delivery,
    Run,
    Scenario,
    Schedule,
)

# -- batches ---------------------------------------------------------------------------

# What a batch's row is, from its latest replay (none yet: "queued", or "skipped" once
# the batch stopped).
ROW_STATUS = {
    Run.Status.QUEUED: "queued", Run.Status.PENDING: "running", Run.Status.RUNNING: "running",
    Run.Status.PAUSED: "needs_person", Run.Status.SUCCEEDED: "passed",
    Run.Status.FAILED: "failed", Run.Status.STOPPED: "stopped",
}  # fmt: skip
ROW_STATUSES = ("queued", "running", "needs_person", "passed", "failed", "stopped", "skipped")


def batch_get(*, user: AbstractBaseUser, id: int) -> Batch:
    """The batch if ``user`` may see it (its owner, or staff), else Http404."""
    batches = Batch.objects.select_related("scenario", "owner", "llm_profile")
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
        "source": batch.source, "llm_profile": batch.heal_model_label,
        "created_at": batch.created_at.isoformat(),
        "finished_at": batch.finished_at.isoformat() if batch.finished_at else None,
        "progress": batch_progress(batch=batch, rows=rows), "rows": rows,
    }  # fmt: skip


# -- the alerts' outbox ----------------------------------------------------------------


def delivery_state(*, delivery: Delivery) -> dict[str, Any]:
    """A delivery of an alert as the schedule's page and the API show it: where to, how it
    went (pending with its next try, sent, or failed), its tries and the last error."""
    pending = delivery.status == Delivery.Status.PENDING
    return {
        "id": delivery.pk, "kind": delivery.kind, "to": delivery.to, "status": delivery.status,
        "attempts": delivery.attempts, "last_error": delivery.last_error,
        "next_attempt_at": delivery.next_attempt_at if pending else None,
        "sent_at": delivery.sent_at, "created_at": delivery.created_at, "log": delivery.log,
    }  # fmt: skip


def pending_deliveries(*, schedule: Schedule) -> QuerySet[Delivery]:
    """The alerts of the schedule's firings not sent yet (nor given up)."""
    return Delivery.objects.filter(firing__schedule=schedule, status=Delivery.Status.PENDING)


def schedule_pending_alerts(*, schedule: Schedule) -> dict[str, Any]:
    """The alerts of the schedule's firings still to send, over all its firings (the page
    and the API list only the latest): how many, and when the next try is (None: none).
    A schedule turned off still sends them; a deleted one takes them with it."""
    got = pending_deliveries(schedule=schedule).aggregate(
        count=Count("pk"), next_attempt_at=Min("next_attempt_at")
    )
    return {"count": got["count"], "next_attempt_at": got["next_attempt_at"]}
