"""Writes.  Small keyword-only functions named <entity>_<verb>; views and the runner call these."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from dashboard.models import Run, RunEvent, Step


def run_create(*, owner: AbstractBaseUser, task: str, start_url: str, planner: str) -> Run:
    return Run.objects.create(owner=owner, task=task, start_url=start_url, planner=planner)


def run_set_status(*, run_id: int, status: str, reason: str = "", summary: str = "") -> None:
    fields: dict[str, Any] = {"status": status, "status_reason": reason}
    if summary:
        fields["summary"] = summary
    if status in Run.FINAL:
        fields["finished_at"] = timezone.now()
    Run.objects.filter(pk=run_id).update(**fields)


def run_event_append(*, run_id: int, seq: int, type: str, data: dict[str, Any]) -> RunEvent:
    return RunEvent.objects.create(run_id=run_id, seq=seq, type=type, data=data)


def step_record(*, run_id: int, data: dict[str, Any]) -> Step:
    fields = {k: data[k] for k in _STEP_FIELDS if k in data and data[k] is not None}
    with transaction.atomic():
        step, _ = Step.objects.update_or_create(run_id=run_id, index=data["index"], defaults=fields)
    return step


def step_attach_screenshot(*, run_id: int, index: int, path: str) -> None:
    Step.objects.filter(run_id=run_id, index=index).update(screenshot=path)


def runs_mark_interrupted() -> int:
    """At start-up: runs that were live when the server stopped can't continue; say so."""
    return Run.objects.filter(
        status__in=[Run.Status.PENDING, Run.Status.RUNNING, Run.Status.PAUSED]
    ).update(
        status=Run.Status.FAILED,
        status_reason="interrupted: the server stopped while the run was live",
        finished_at=timezone.now(),
    )


_STEP_FIELDS = ("action", "args", "ref", "role", "name", "selector", "identity", "url", "ok",
                "error", "duration_ms")  # fmt: skip
