"""Reads.  Every query that depends on who is asking goes through here."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404

from automation.recording import scenario as fmt
from dashboard.models import IdentityHeal, LLMProfile, Run, RunEvent, Scenario, UrlRule


def _visible_runs(*, user: AbstractBaseUser) -> QuerySet[Run]:
    runs = Run.objects.all()
    return runs if user.is_staff else runs.filter(owner=user)


def run_list(*, user: AbstractBaseUser) -> QuerySet[Run]:
    return _visible_runs(user=user).annotate(step_count=Count("steps")).select_related("owner")


def run_get(*, user: AbstractBaseUser, id: int) -> Run:
    """The run if ``user`` may see it, else Http404 (never reveal that it exists)."""
    return get_object_or_404(_visible_runs(user=user).select_related("llm_profile"), pk=id)


def run_can_view(*, user: AbstractBaseUser, id: int) -> bool:
    return user.is_authenticated and _visible_runs(user=user).filter(pk=id).exists()


def run_events(*, run_id: int, after_seq: int = 0) -> list[dict]:
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")
    return [{**row.data, "seq": row.seq} for row in rows]


def run_last_seq(*, run_id: int) -> int:
    last = RunEvent.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True)
    return last.first() or 0


def _visible_scenarios(*, user: AbstractBaseUser) -> QuerySet[Scenario]:
    scenarios = Scenario.objects.all()
    return scenarios if user.is_staff else scenarios.filter(owner=user)


def scenario_list(*, user: AbstractBaseUser) -> QuerySet[Scenario]:
    return _visible_scenarios(user=user).annotate(step_count=Count("steps")).select_related("owner")


def scenario_get(*, user: AbstractBaseUser, id: int) -> Scenario:
    """The scenario if ``user`` may see it, else Http404."""
    return get_object_or_404(_visible_scenarios(user=user), pk=id)


def scenario_document(*, scenario: Scenario) -> fmt.Scenario:
    """The stored scenario in its versioned format (what export writes and replay runs)."""
    return fmt.Scenario.from_dict(
        {
            "format": fmt.FORMAT,
            "version": fmt.SCENARIO_VERSION,
            "name": scenario.name,
            "description": scenario.description,
            "base_url": scenario.base_url,
            "params": scenario.params,
            "steps": list(scenario.steps.order_by("index").values(*_SCENARIO_STEP_FIELDS)),
        }
    )


_SCENARIO_STEP_FIELDS = ("action", "args", "identity", "role", "name", "selector", "url", "note")


def scenario_heals(*, scenario_id: int) -> QuerySet[IdentityHeal]:
    return IdentityHeal.objects.filter(step__scenario_id=scenario_id).select_related("step")


def llm_profile_list() -> QuerySet[LLMProfile]:
    return LLMProfile.objects.order_by("-is_default", "name")


def llm_profile_default() -> LLMProfile | None:
    return LLMProfile.objects.filter(is_default=True).first()


def url_rule_domains() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The enabled URL rules' domains: (allowed, blocked)."""
    rules = UrlRule.objects.filter(enabled=True).values_list("kind", "domain")
    allowed = tuple(d for kind, d in rules if kind == UrlRule.Kind.ALLOW)
    return allowed, tuple(d for kind, d in rules if kind == UrlRule.Kind.BLOCK)
