"""Reads.  Every query that depends on who is asking goes through here."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404

from dashboard.models import Run, RunEvent


def _visible_runs(*, user: AbstractBaseUser) -> QuerySet[Run]:
    runs = Run.objects.all()
    return runs if user.is_staff else runs.filter(owner=user)


def run_list(*, user: AbstractBaseUser) -> QuerySet[Run]:
    return _visible_runs(user=user).annotate(step_count=Count("steps")).select_related("owner")


def run_get(*, user: AbstractBaseUser, id: int) -> Run:
    """The run if ``user`` may see it, else Http404 (never reveal that it exists)."""
    return get_object_or_404(_visible_runs(user=user), pk=id)


def run_can_view(*, user: AbstractBaseUser, id: int) -> bool:
    return user.is_authenticated and _visible_runs(user=user).filter(pk=id).exists()


def run_events(*, run_id: int, after_seq: int = 0) -> list[dict]:
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")
    return [{**row.data, "seq": row.seq} for row in rows]


def run_last_seq(*, run_id: int) -> int:
    last = RunEvent.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True)
    return last.first() or 0
