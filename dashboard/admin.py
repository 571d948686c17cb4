from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from automation.secrets import SECRET_NAME_RE
from dashboard.models import (
    ENV_NAME_RE,
    ApiToken,
    Batch,
    BatchRow,
    Delivery,
    IdentityHeal,
    LLMProfile,
    Run,
    RunEvent,
    Scenario,
    ScenarioStep,
    Schedule,
    ScheduleFiring,
    SecretGrant,
    Step,
    UrlRule,
)
from dashboard.runs import services


def pretty_json(value: Any) -> str:
    """JSON indented in a <pre>, for reading a stored document rather than editing it."""
    if value in (None, "", {}, []):
        return "—"
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return format_html('<pre class="json">{}</pre>', text)


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ("index", "stretch", "action", "role", "name", "selector", "ok", "by", "duration_ms")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # steps are what a run did: recorded, never typed in


class EnvNameInput(forms.TextInput):
    """Shows a value only if it is a variable name: a key pasted by mistake and refused is
    not sent back to the browser."""

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, str) and value and not ENV_NAME_RE.match(value):
            return None
        return super().format_value(value)


class LLMProfileForm(forms.ModelForm):
    class Meta:
        model = LLMProfile
        fields = "__all__"
        widgets = {"api_key_env": EnvNameInput(attrs={"autocomplete": "off"})}


@admin.register(LLMProfile)
class LLMProfileAdmin(admin.ModelAdmin):
    form = LLMProfileForm
    list_display = ("name", "provider", "model", "base_url", "api_key_env", "key_set",
                    "is_default")  # fmt: skip
    list_filter = ("provider", "is_default")
    search_fields = ("name", "model", "base_url")
    readonly_fields = ("created_at", "updated_at")

    @admin.display(description="key set on server", boolean=True)
    def key_set(self, obj: LLMProfile) -> bool | None:
        return obj.key_is_set

    def save_model(self, request: HttpRequest, obj: LLMProfile, form: Any, change: bool) -> None:
        services.llm_profile_save(profile=obj)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "task_short", "kind", "owner", "status", "session", "planner",
                    "llm_profile", "tokens", "created_at", "finished_at")  # fmt: skip
    list_filter = ("status", "kind", "session", "planner", "llm_profile", "owner", "created_at")
    search_fields = ("=id", "task", "start_url", "status_reason", "owner__username")
    date_hierarchy = "created_at"
    list_select_related = ("owner", "llm_profile")
    raw_id_fields = ("scenario",)
    readonly_fields = ("created_at",)
    inlines = [StepInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.display(description="task")
    def task_short(self, obj: Run) -> str:
        return obj.task[:80]

    @admin.display(description="LLM tokens")
    def tokens(self, obj: Run) -> int:
        return obj.prompt_tokens + obj.completion_tokens


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ("run", "index", "stretch", "action", "role", "name", "selector", "ok", "by",
                    "duration_ms")  # fmt: skip
    list_filter = ("action", "ok", "by")
    search_fields = ("=run__id", "name", "selector", "url")
    list_select_related = ("run",)
    raw_id_fields = ("run",)


@admin.register(RunEvent)
class RunEventAdmin(admin.ModelAdmin):
    """The event log, to read: events are what a run emitted and are never edited."""

    list_display = ("run", "seq", "type", "created_at")
    list_filter = ("type", "created_at")
    search_fields = ("=run__id", "type")
    date_hierarchy = "created_at"
    list_select_related = ("run",)
    fields = ("run", "seq", "type", "created_at", "data_pretty")
    readonly_fields = fields

    @admin.display(description="data")
    def data_pretty(self, obj: RunEvent) -> str:
        return pretty_json(obj.data)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ScenarioStepInline(admin.TabularInline):
    model = ScenarioStep
    extra = 0
    fields = ("index", "action", "args", "role", "name", "selector", "url", "last_status",
              "last_strategy", "last_score")  # fmt: skip
    readonly_fields = ("last_status", "last_strategy", "last_score")


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "base_url", "step_count", "updated_at")
    list_filter = ("owner", "updated_at")
    search_fields = ("=id", "name", "description", "base_url", "owner__username")
    date_hierarchy = "updated_at"
    list_select_related = ("owner",)
    raw_id_fields = ("source_run",)
    inlines = [ScenarioStepInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Scenario]:
        return super().get_queryset(request).annotate(step_count=Count("steps"))

    @admin.display(description="steps", ordering="step_count")
    def step_count(self, obj: Scenario) -> int:
        return obj.step_count


@admin.register(ScenarioStep)
class ScenarioStepAdmin(admin.ModelAdmin):
    list_display = ("scenario", "index", "action", "role", "name", "last_status",
                    "last_strategy", "last_score", "last_replayed_at")  # fmt: skip
    list_filter = ("action", "last_status", "last_strategy")
    search_fields = ("=scenario__id", "scenario__name", "name", "selector", "url")
    list_select_related = ("scenario",)
    raw_id_fields = ("scenario", "last_run")
    readonly_fields = ("identity_pretty", "last_status", "last_strategy", "last_score",
                       "last_run", "last_replayed_at")  # fmt: skip

    @admin.display(description="identity (as recorded or healed)")
    def identity_pretty(self, obj: ScenarioStep) -> str:
        return pretty_json(obj.identity)


@admin.register(IdentityHeal)
class IdentityHealAdmin(admin.ModelAdmin):
    list_display = ("id", "step", "status", "strategy", "score", "run", "created_at", "decided_by")
    list_filter = ("status", "strategy", "created_at")
    search_fields = ("=id", "=run__id", "step__scenario__name", "strategy")
    date_hierarchy = "created_at"
    list_select_related = ("step", "run", "decided_by")
    readonly_fields = ("step", "run", "strategy", "score", "changes", "before_pretty",
                       "after_pretty", "created_at")  # fmt: skip
    exclude = ("before", "after")

    @admin.display(description="before")
    def before_pretty(self, obj: IdentityHeal) -> str:
        return pretty_json(obj.before)

    @admin.display(description="after")
    def after_pretty(self, obj: IdentityHeal) -> str:
        return pretty_json(obj.after)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a heal is what a replay found; people approve or reject it


@admin.register(UrlRule)
class UrlRuleAdmin(admin.ModelAdmin):
    list_display = ("domain", "kind", "enabled", "note", "created_at")
    list_editable = ("enabled",)
    list_filter = ("kind", "enabled")
    search_fields = ("domain", "note")
    readonly_fields = ("created_at",)


class SecretNameInput(forms.TextInput):
    """Shows a value only if it is a secret's name: a value pasted by mistake and refused
    is not sent back to the browser."""

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, str) and value and not SECRET_NAME_RE.fullmatch(value):
            return None
        return super().format_value(value)


class SecretGrantForm(forms.ModelForm):
    class Meta:
        model = SecretGrant
        fields = "__all__"
        widgets = {"name": SecretNameInput(attrs={"autocomplete": "off"})}


@admin.register(SecretGrant)
class SecretGrantAdmin(admin.ModelAdmin):
    """Who may use which ``${SECRET:NAME}``; the values stay in the server's environment."""

    form = SecretGrantForm
    list_display = ("name", "env_name", "is_set", "note", "created_at")
    search_fields = ("name", "note")
    filter_horizontal = ("users", "groups")
    readonly_fields = ("created_at",)

    @admin.display(boolean=True, description="set on the server")
    def is_set(self, obj: SecretGrant) -> bool:
        return obj.is_set

    @admin.display(description="environment variable")
    def env_name(self, obj: SecretGrant) -> str:
        return obj.env_name


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens by name, owner, when made and last used; never the token (only a hash is
    kept) and never made here: a person makes their own on the API tokens page."""

    list_display = ("name", "owner", "prefix", "created_at", "last_used_at")
    list_filter = ("owner",)
    search_fields = ("name", "owner__username", "prefix")
    fields = ("name", "owner", "prefix", "created_at", "last_used_at")
    readonly_fields = ("owner", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class BatchRowInline(admin.TabularInline):
    model = BatchRow
    fields = ("index", "params", "run", "attempts")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    """Batches with their rows (made on a scenario's page or through the API)."""

    list_display = ("id", "scenario", "owner", "status", "concurrency", "created_at", "finished_at")
    list_filter = ("status",)
    search_fields = ("scenario__name", "owner__username", "source")
    readonly_fields = ("owner", "scenario", "source", "created_at", "finished_at")
    inlines = [BatchRowInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class ScheduleFiringInline(admin.TabularInline):
    model = ScheduleFiring
    fields = ("due_at", "fired_at", "run", "batch", "missed", "outcome", "error", "alerted_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-due_at",)


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    """Schedules with their firings; made on a scenario's page or through the API."""

    list_display = ("id", "scenario", "owner", "cron", "timezone", "enabled", "next_fire_at")
    list_filter = ("enabled", "timezone")
    search_fields = ("scenario__name", "owner__username", "cron")
    readonly_fields = ("owner", "scenario", "next_fire_at", "webhook_secret", "created_at")
    inlines = [ScheduleFiringInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """The alerts' outbox: every webhook and e-mail, how it went, the log of each try."""

    list_display = ("id", "kind", "to", "status", "attempts", "next_attempt_at", "created_at",
                    "sent_at")  # fmt: skip
    list_filter = ("status", "kind")
    search_fields = ("to",)
    readonly_fields = ("firing", "kind", "to", "payload", "status", "attempts",
                       "next_attempt_at", "last_error", "log", "created_at",
                       "sent_at")  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
